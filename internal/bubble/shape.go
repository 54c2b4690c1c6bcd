package bubble

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A test's shape can make its wrap wrong whatever the code does:
//
//   - a skip inside the bubble makes the test pass, not skip:
//     synctest.Test runs the body with a T of its own, and a skip ends
//     that T only (go1.25's testing). A skip at the top of the test stays
//     outside the wrap (leadingSkips); one further down, on a condition
//     that reads testing.Short(), the clock or the environment, blocks
//     the wrap (a condition on the clock would also read the virtual one);
//   - a test whose only output about time is the durations it logs
//     measures the real clock: in a bubble every duration is 0;
//   - testing.Benchmark in a test measures real time too.

// leadingSkips counts the statements at the head of list that skip the
// test and do nothing else: if cond { t.Skip(...) } (t.Log calls
// allowed), with no else. A wrap keeps them outside the bubble, where
// they skip the test as before.
func (a *Analysis) leadingSkips(list []ast.Stmt) int {
	n := 0
	for _, st := range list {
		ifs, ok := st.(*ast.IfStmt)
		if !ok || ifs.Else != nil || !a.onlySkips(ifs.Body) {
			break
		}
		n++
	}
	return n
}

// onlySkips reports whether body calls a testing Skip method and nothing
// but Skip and Log methods.
func (a *Analysis) onlySkips(body *ast.BlockStmt) bool {
	skips := false
	for _, st := range body.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			return false
		}
		call, ok := es.X.(*ast.CallExpr)
		switch {
		case !ok:
			return false
		case match.IsMethod(a.info, call, "testing", "Skip", "Skipf", "SkipNow"):
			skips = true
		case match.IsMethod(a.info, call, "testing", "Log", "Logf"):
		default:
			return false
		}
	}
	return skips
}

// shapeBlockers blocks the wrap of t for a skip whose condition reads
// testing.Short(), the clock or the environment inside the bubble, for
// durations only logged, and for testing.Benchmark.
func (a *Analysis) shapeBlockers(t *Target) {
	body := &ast.BlockStmt{List: t.body.List[t.lead:]}
	var skip, bench string
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok && (a.subtests[lit] != nil || a.bubbles[lit]) {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch {
		case skip == "" && match.IsMethod(a.info, call, "testing", "Skip", "Skipf", "SkipNow"):
			for i := len(stack) - 1; i > 0; i-- {
				ifs, ok := stack[i-1].(*ast.IfStmt)
				if !ok || stack[i] != ifs.Body {
					continue
				}
				if what := a.skipReads(ifs.Cond); what != "" {
					virtual := ""
					if strings.HasPrefix(what, "the clock") {
						virtual = ", and its condition would read the virtual clock"
					}
					skip = fmt.Sprintf("the test skips itself (%s) on a condition that reads %s: inside a synctest bubble a skip makes the test pass instead (synctest.Test's T is its own)%s; only a skip at the top of the test stays outside the wrap", a.pos(types.ExprString(call.Fun), call), what, virtual)
					break
				}
			}
		case bench == "" && match.IsPkgFunc(a.info, call, "testing", "Benchmark"):
			bench = fmt.Sprintf("the test runs testing.Benchmark (%s), which measures real time: in a synctest bubble every measurement is 0", a.pos("testing.Benchmark", call))
		}
		return true
	})
	if skip != "" {
		t.blocked.add(nil, skip)
	}
	if bench != "" {
		t.blocked.add(nil, bench)
	}
	if logged := a.onlyLogged(body); logged != "" {
		t.blocked.add(nil, fmt.Sprintf("the test's only use of the durations it measures is to log them (%s): in a synctest bubble every measured duration is 0, so the real sleeps are the point of the measurement", logged))
	}
}

// pos names what a node is and where: "t.Skip at x_test.go:12".
func (a *Analysis) pos(what string, n ast.Node) string {
	return (&clockScan{a: a}).at(what, n)
}

// skipReads says what cond reads of testing.Short(), the clock or the
// environment ("testing.Short()"), directly or through the package's
// functions it calls, or "".
func (a *Analysis) skipReads(cond ast.Expr) string {
	seen := map[*ast.FuncDecl]bool{}
	var reads func(root ast.Node) string
	reads = func(root ast.Node) string {
		found := ""
		ast.Inspect(root, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found != "" {
				return found == ""
			}
			switch fn := match.Callee(a.info, call); {
			case fn == nil:
			case match.IsPkgFunc(a.info, call, "testing", "Short"):
				found = "testing.Short()"
			case match.IsPkgFunc(a.info, call, "time", "Now", "Since", "Until"):
				found = "the clock (" + match.PkgFuncName(fn) + ")"
			case match.IsPkgFunc(a.info, call, "os", "Getenv", "LookupEnv", "Environ"), match.IsPkgFunc(a.info, call, "syscall", "Getenv"):
				found = "the environment (" + match.PkgFuncName(fn) + ")"
			case fn.Pkg() == a.pass.Pkg:
				if decl := a.decls[fn.Origin()]; decl != nil && decl.Body != nil && !seen[decl] {
					seen[decl] = true
					if r := reads(decl.Body); r != "" {
						found = r + " in " + decl.Name.Name
					}
				}
			}
			return found == ""
		})
		return found
	}
	return reads(cond)
}

// onlyLogged returns where body logs a duration it measured (time.Since,
// time.Until, Time.Sub, or a variable set to one) when that is all it
// does with every duration it measures; else "".
func (a *Analysis) onlyLogged(body *ast.BlockStmt) string {
	measured := map[types.Object]bool{}
	isMeasure := func(e ast.Expr) bool {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		return ok && (match.IsPkgFunc(a.info, call, "time", "Since", "Until") || match.IsMethod(a.info, call, "time", "Sub"))
	}
	// The variables set to a measure, and the defining identifiers, which
	// are no use.
	defs := map[*ast.Ident]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != len(as.Rhs) {
			return true
		}
		for i, r := range as.Rhs {
			if id, ok := as.Lhs[i].(*ast.Ident); ok && isMeasure(r) {
				if obj := a.info.ObjectOf(id); obj != nil {
					measured[obj] = true
					defs[id] = true
				}
			}
		}
		return true
	})
	logged, other := "", false
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		if other {
			return false
		}
		var is bool
		switch n := n.(type) {
		case *ast.Ident:
			is = measured[a.info.Uses[n]] && !defs[n]
		case *ast.CallExpr:
			is = isMeasure(n) && !a.measureDefined(n, stack, measured)
		}
		if !is {
			return true
		}
		for i := len(stack) - 1; i >= 0; i-- {
			if call, ok := stack[i].(*ast.CallExpr); ok && match.IsMethod(a.info, call, "testing", "Log", "Logf") {
				if logged == "" {
					logged = a.pos(types.ExprString(call.Fun), call)
				}
				return false
			}
		}
		other = true
		return false
	})
	if other {
		return ""
	}
	return logged
}

// measureDefined reports whether the measure call is the value a
// measured variable is set to (elapsed := time.Since(start)), which is
// no use of a duration by itself.
func (a *Analysis) measureDefined(call *ast.CallExpr, stack []ast.Node, measured map[types.Object]bool) bool {
	if len(stack) == 0 {
		return false
	}
	as, ok := stack[len(stack)-1].(*ast.AssignStmt)
	if !ok || len(as.Lhs) != len(as.Rhs) {
		return false
	}
	for i, r := range as.Rhs {
		if r == ast.Expr(call) {
			id, ok := as.Lhs[i].(*ast.Ident)
			return ok && measured[a.info.ObjectOf(id)]
		}
	}
	return false
}
