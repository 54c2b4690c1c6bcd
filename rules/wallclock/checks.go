package wallclock

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/bubble"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// otherCheck reports whether the test t checks something besides its
// wall-clock assertions: whether removing them leaves a test that can
// still fail on a wrong result. A check is, anywhere in the test's body
// (its literals and subtests too) or in a function of the package it calls
// with a testing value:
//
//   - a call of t.Error, t.Errorf, t.Fatal, t.Fatalf, t.Fail or t.FailNow
//     (on any testing type), other than one that only reports an error
//     (in the then branch of `if err != nil`);
//   - a testify assertion other than NoError and Error.
//
// An error check is not one: it says the code ran, not what it computed
// (a memoisation test that checks Get's error and that the second call is
// fast checks memoisation only by its speed). t.Log, t.Skip and
// assertions of other libraries are not checks either: the rule does not
// count what it cannot tell can fail on a wrong result.
func (c *checker) otherCheck(t *bubble.Target) bool {
	sites := map[ast.Node]bool{}
	for _, s := range c.sites {
		sites[s.stmt] = true
	}
	seen := map[*ast.FuncDecl]bool{}
	var checks func(root ast.Node) bool
	checks = func(root ast.Node) bool {
		found := false
		match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
			if found || sites[n] {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch {
			case match.IsMethod(c.info, call, "testing", "Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow"):
				found = !c.errorOnly(stack)
			case c.assertion(call):
				found = true
			default:
				if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg && passesTesting(c.info, call) {
					if decl := c.decls[fn.Origin()]; decl != nil && decl.Body != nil && !seen[decl] {
						seen[decl] = true
						found = checks(decl.Body)
					}
				}
			}
			return !found
		})
		return found
	}
	return checks(t.Body())
}

// errorOnly reports whether a failing call, enclosed by stack, lies in the
// then branch of an `if err != nil` (or `if err := f(); err != nil`).
func (c *checker) errorOnly(stack []ast.Node) bool {
	for i := len(stack) - 1; i > 0; i-- {
		ifs, ok := stack[i-1].(*ast.IfStmt)
		if !ok || stack[i] != ifs.Body {
			continue
		}
		b, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
		if !ok || b.Op != token.NEQ {
			return false
		}
		for _, side := range []ast.Expr{b.X, b.Y} {
			if tv, ok := c.info.Types[side]; ok && tv.Type != nil && types.Identical(tv.Type, types.Universe.Lookup("error").Type()) {
				return true
			}
		}
		return false
	}
	return false
}

// assertion reports whether call is a testify assertion that checks a
// result (not NoError or Error, which check that the code ran).
func (c *checker) assertion(call *ast.CallExpr) bool {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	p := fn.Pkg().Path()
	if !strings.HasSuffix(p, "testify/assert") && !strings.HasSuffix(p, "testify/require") {
		return false
	}
	switch strings.TrimSuffix(fn.Name(), "f") {
	case "NoError", "Error":
		return false
	}
	return true
}

// passesTesting reports whether call has an argument of a testing type
// (*testing.T, testing.TB, ...): a helper that may check.
func passesTesting(info *types.Info, call *ast.CallExpr) bool {
	for _, a := range call.Args {
		t := info.TypeOf(a)
		if p, ok := types.Unalias(t).(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "testing" {
			return true
		}
	}
	return false
}

// syncWait says how the timed region waits on another goroutine, or "":
// a channel receive or send, a select, a range over a channel, a lock of a
// sync.Mutex or sync.RWMutex, a wait on a sync.WaitGroup or sync.Cond, in
// the region or in a function of the package it calls.
func (c *checker) syncWait(region []ast.Stmt) string {
	seen := map[*ast.FuncDecl]bool{}
	var wait func(root ast.Node) string
	wait = func(root ast.Node) string {
		found := ""
		ast.Inspect(root, func(n ast.Node) bool {
			if found != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.GoStmt:
				return false // the goroutine's waits are its own
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					found = "receives from a channel (" + types.ExprString(n) + ")"
				}
			case *ast.SendStmt:
				found = "sends on a channel (" + types.ExprString(n.Chan) + ")"
			case *ast.SelectStmt:
				found = "selects on channels"
			case *ast.RangeStmt:
				if t := c.info.TypeOf(n.X); t != nil {
					if _, ok := t.Underlying().(*types.Chan); ok {
						found = "ranges over a channel (" + types.ExprString(n.X) + ")"
					}
				}
			case *ast.CallExpr:
				fn := match.Callee(c.info, n)
				switch {
				case fn == nil || fn.Pkg() == nil:
				case match.IsMethod(c.info, n, "sync", "Lock", "RLock"):
					found = "takes a lock (" + types.ExprString(n.Fun) + ")"
				case match.IsMethod(c.info, n, "sync", "Wait"):
					found = "waits on " + types.ExprString(n.Fun)
				case fn.Pkg() == c.pass.Pkg:
					if decl := c.decls[fn.Origin()]; decl != nil && decl.Body != nil && !seen[decl] {
						seen[decl] = true
						if why := wait(decl.Body); why != "" {
							found = why + " in " + fn.Name()
						}
					}
				}
			}
			return found == ""
		})
		return found
	}
	for _, st := range region {
		if why := wait(st); why != "" {
			return why
		}
	}
	return ""
}

// goroutines says what starts goroutines in the test t (a go statement,
// time.AfterFunc, or a function whose effect summary starts goroutines or
// is unknown), in its body or in the package's functions it calls, or "".
// A wait of the timed region on a channel or a lock can last only when
// another goroutine feeds or holds it.
func (c *checker) goroutines(t *bubble.Target) string {
	seen := map[*ast.FuncDecl]bool{}
	var starts func(root ast.Node) string
	starts = func(root ast.Node) string {
		found := ""
		ast.Inspect(root, func(n ast.Node) bool {
			if found != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.GoStmt:
				found = "a go statement"
			case *ast.CallExpr:
				if tv, ok := c.info.Types[n.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
					return true
				}
				fn := match.Callee(c.info, n)
				switch {
				case fn == nil || fn.Pkg() == nil:
				case match.IsPkgFunc(c.info, n, "time", "AfterFunc"):
					found = "time.AfterFunc"
				case fn.Pkg() == c.pass.Pkg:
					if decl := c.decls[fn.Origin()]; decl != nil && decl.Body != nil {
						if !seen[decl] {
							seen[decl] = true
							if why := starts(decl.Body); why != "" {
								found = why + " in " + fn.Name()
							}
						}
						return true
					}
					found = goroutineEffect(c.pass.Effects.Of(fn), fn)
				case match.IsStd(fn.Pkg().Path()), strings.HasPrefix(fn.Pkg().Path(), "testing"):
				default:
					found = goroutineEffect(c.pass.Effects.Of(fn), fn)
				}
			}
			return found == ""
		})
		return found
	}
	return starts(t.Body())
}

// goroutineEffect says how the summary s of fn starts goroutines, or "".
// An unknown summary may.
func goroutineEffect(s *effect.Summary, fn *types.Func) string {
	if s == nil {
		return match.PkgFuncName(fn) + ", whose code the analysis cannot see"
	}
	for _, e := range s.Effects {
		if e.Kind == effect.GoroutineEnds || e.Kind == effect.GoroutineForever {
			return e.Why()
		}
	}
	return ""
}
