package sleep

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"time"

	"golang.org/x/tools/go/ast/astutil"

	"github.com/unflake/unflake/internal/bubble"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// minSaving is the least a wrap must save to be offered. A wrap
// re-indents a whole test into synctest.Test(t, func(t *testing.T) {...}):
// for a 10ms sleep, or one in an error branch that never runs, the
// reviewer reads a large diff for nothing.
var minSaving = rule.DurationOption("min-saving", 50*time.Millisecond,
	"wrap a test in a synctest bubble only when the sleeps it reaches save at least this much (their constant durations, a sleep in a branch saving nothing; with --from-json or --measure, the test's measured time; 0 wraps every test)")

// worthWrapping returns the targets of reach whose wrap saves at least
// minSaving, and, when there are none, the reason the site is reported
// instead.
func (a *analysis) worthWrapping(reach []*bubble.Target) ([]*bubble.Target, string) {
	least := minSaving.Get(a.pass)
	if least <= 0 {
		return reach, ""
	}
	var keep []*bubble.Target
	var most time.Duration
	branch, timed := false, false
	for _, t := range reach {
		// A measured time (go test -json) is what the test costs, waits
		// on the code's own timers included, which the estimate of its
		// own sleeps misses: a bubble saves at most that, and about that.
		if m, ok := a.pass.Measured(t.Name()); ok {
			if m >= least {
				keep = append(keep, t)
			} else {
				most, timed = max(most, m), true
			}
			continue
		}
		d, inBranch, known := a.wrapSaving(t)
		if !known || d >= least {
			keep = append(keep, t)
			continue
		}
		most, branch = max(most, d), branch || inBranch
	}
	if len(keep) > 0 {
		return keep, ""
	}
	test := "the test"
	if len(reach) > 1 {
		test = "each test that calls it"
	}
	why := fmt.Sprintf("a synctest bubble would save ~%s", match.FormatDuration(most))
	switch {
	case timed:
		why = fmt.Sprintf("a synctest bubble would save at most %s (the test's measured time)", match.FormatDuration(most))
	case branch:
		why += " (a wait on an error path or a select's timeout, which a passing test does not reach, counts as none)"
	}
	return nil, fmt.Sprintf("%s, below --min-saving=%s: not worth re-indenting %s", why, match.FormatDuration(least), test)
}

// wrapSaving estimates what running t in a bubble saves: the sum of the
// constant durations of the waits it reaches, each times the constant
// trip count of the loops around it, none for a wait in a branch (an
// error path, a case of a switch or select), which may never run. known is
// false when a wait's duration or a loop's count is not a constant: the
// saving may be any, and the wrap is kept. inBranch says whether a wait
// counted none for being in a branch.
func (a *analysis) wrapSaving(t *bubble.Target) (d time.Duration, inBranch, known bool) {
	for _, s := range t.Sites() {
		call, _ := bubble.Wait(a.info, s)
		if call == nil || len(call.Args) != 1 {
			return 0, false, false
		}
		v, ok := match.ConstDuration(a.info, call.Args[0])
		if !ok {
			return 0, false, false
		}
		n, ok := a.runs(s)
		if !ok {
			return 0, false, false
		}
		inBranch = inBranch || n == 0
		d += time.Duration(n) * v
	}
	return d, inBranch, true
}

// runs returns how many times the statement s runs each time its function
// does, as far as a passing test goes: 0 on an error path (an if that
// fails the test or returns, or tests an error) or in a select's case (a
// timeout), else the product of the constant trip counts of the loops
// around it; ok is false for a loop of unknown count. Other branches (if
// i == 9 in a loop, a switch's case) count as taken.
func (a *analysis) runs(s ast.Stmt) (n int64, ok bool) {
	f := a.fileOf(s.Pos())
	if f == nil {
		return 0, false
	}
	path, _ := astutil.PathEnclosingInterval(f, s.Pos(), s.End())
	n = 1
	for i := 1; i < len(path); i++ {
		switch p := path[i].(type) {
		case *ast.FuncLit, *ast.FuncDecl:
			return n, true
		case *ast.IfStmt:
			if path[i-1] == p.Body && (a.failurePath(p.Body) || mentionsErr(a.info, p.Cond)) {
				return 0, true // an error path: a passing test does not take it
			}
		case *ast.CommClause:
			return 0, true // a select's timeout (case <-time.After(d)), or one of its cases
		case *ast.ForStmt:
			if path[i-1] != p.Body {
				continue
			}
			c, ok := a.forCount(p)
			if !ok {
				return 0, false
			}
			n *= c
		case *ast.RangeStmt:
			if path[i-1] != p.Body {
				continue
			}
			tv := a.info.Types[p.X]
			if tv.Value == nil || tv.Value.Kind() != constant.Int {
				return 0, false // a slice, a map, a channel: its length is not known here
			}
			c, _ := constant.Int64Val(tv.Value)
			n *= max(c, 0)
		}
	}
	return n, true
}

// forCount returns the trip count of for i := 0; i < N; i++ with N a
// constant.
func (a *analysis) forCount(loop *ast.ForStmt) (int64, bool) {
	init, ok := loop.Init.(*ast.AssignStmt)
	if !ok || len(init.Lhs) != 1 || len(init.Rhs) != 1 {
		return 0, false
	}
	start := a.info.Types[init.Rhs[0]].Value
	cond, ok := loop.Cond.(*ast.BinaryExpr)
	if !ok || start == nil || start.Kind() != constant.Int || (cond.Op != token.LSS && cond.Op != token.LEQ) {
		return 0, false
	}
	id, ok := cond.X.(*ast.Ident)
	lhs, _ := init.Lhs[0].(*ast.Ident)
	if !ok || lhs == nil || a.info.ObjectOf(id) != a.info.ObjectOf(lhs) {
		return 0, false
	}
	post, ok := loop.Post.(*ast.IncDecStmt)
	if !ok || post.Tok != token.INC {
		return 0, false
	}
	if pid, ok := post.X.(*ast.Ident); !ok || a.info.ObjectOf(pid) != a.info.ObjectOf(lhs) {
		return 0, false
	}
	end := a.info.Types[cond.Y].Value
	if end == nil || end.Kind() != constant.Int {
		return 0, false
	}
	lo, _ := constant.Int64Val(start)
	hi, _ := constant.Int64Val(end)
	if cond.Op == token.LEQ {
		hi++
	}
	return max(hi-lo, 0), true
}

// failurePath reports whether body fails the test, skips it or returns:
// the branch of a check, not the test's way.
func (a *analysis) failurePath(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			found = true
		case *ast.CallExpr:
			found = found || match.IsMethod(a.info, n, "testing", "Fatal", "Fatalf", "Error", "Errorf", "Fail", "FailNow", "Skip", "Skipf", "SkipNow") ||
				match.IsBuiltin(a.info, n.Fun, "panic") || match.IsPkgFunc(a.info, n, "log", "Fatal", "Fatalf", "Fatalln", "Panic", "Panicf", "Panicln")
		}
		return !found
	})
	return found
}

// mentionsErr reports whether cond reads a value of type error (if err
// != nil).
func mentionsErr(info *types.Info, cond ast.Expr) bool {
	found := false
	ast.Inspect(cond, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := info.Uses[id].(*types.Var); ok && types.Identical(v.Type(), types.Universe.Lookup("error").Type()) {
				found = true
			}
		}
		return !found
	})
	return found
}

// fileOf returns the package's file holding pos.
func (a *analysis) fileOf(pos token.Pos) *ast.File {
	for _, f := range a.pass.AllFiles {
		if f.FileStart <= pos && pos < f.FileEnd {
			return f
		}
	}
	return nil
}
