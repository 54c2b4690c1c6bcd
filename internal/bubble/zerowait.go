package bubble

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"

	"github.com/unflake/unflake/internal/match"
)

// zeroWait makes the test unproven when loop, in the test or a function
// of the package, waits for a duration it computes (the time the missing
// fraction of a token takes, a deadline's remainder) and is not a counted
// loop: on a bubble's exact clock the computation can give exactly 0
// where real time never does (a float refill after a sleep of 1/3s
// truncated to 333333333ns is 0.999999999 tokens, and the wait for the
// rest rounds to 0ns), and time.Sleep(0) does not move the virtual clock,
// so the loop never ends. The real clock's overshoot hides it, and the
// bug variants of such arithmetic are endless; running tells (a hang
// deterministically fails), so unproven, not blocked. It is the spin
// hazard (a loop that waits for the clock without blocking) for a loop
// whose only wait may be none.
func (w *walker) zeroWait(loop *ast.ForStmt, where string) {
	info := w.a.info
	if _, counted := forTrips(info, loop); counted {
		return
	}
	var found ast.Node
	ast.Inspect(loop.Body, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // not the loop's own wait
		case *ast.CallExpr:
			if arg := waitDuration(info, n, "Sleep", "After", "NewTimer", "AfterFunc"); arg != nil && computed(info, arg, loop.Body, map[types.Object]bool{}) {
				found = n
			}
		}
		return true
	})
	if found == nil {
		return
	}
	p := w.a.pass.Fset.Position(found.Pos())
	w.unproveAs(clockKey(checkedZeroWait), fmt.Sprintf("the test waits in a loop for a duration the code computes (%s at %s:%d%s), which may be exactly 0 on a synctest bubble's exact clock (a float or a remainder that lands on the boundary): a wait of 0 does not move the virtual clock, so the loop would never end",
		types.ExprString(found.(*ast.CallExpr)), filepath.Base(p.Filename), p.Line, where))
}

// computed reports whether the duration e is computed by arithmetic that
// can give 0 or less on an exact clock: a subtraction, a division or a
// remainder, a conversion from a float, elapsed time (time.Since,
// time.Until, Sub), or a call of math; a local variable counts as what
// scope assigns to it.
func computed(info *types.Info, e ast.Expr, scope ast.Node, seen map[types.Object]bool) bool {
	if _, ok := match.ConstInt(info, e); ok {
		return false
	}
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.BinaryExpr:
			if n.Op == token.SUB || n.Op == token.QUO || n.Op == token.REM {
				found = true
			}
		case *ast.CallExpr:
			if tv, ok := info.Types[n.Fun]; ok && tv.IsType() && len(n.Args) == 1 {
				if b, ok := info.TypeOf(n.Args[0]).Underlying().(*types.Basic); ok && b.Info()&types.IsFloat != 0 {
					found = true
				}
				return true
			}
			if match.IsPkgFunc(info, n, "time", "Since", "Until") || match.IsMethod(info, n, "time", "Sub") {
				found = true
			}
			if fn := match.Callee(info, n); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "math" {
				found = true
			}
		case *ast.Ident:
			v, ok := info.Uses[n].(*types.Var)
			if !ok || seen[v] || v.IsField() || v.Parent() == nil || v.Pkg() == nil || v.Parent() == v.Pkg().Scope() {
				return true
			}
			seen[v] = true
			ast.Inspect(scope, func(m ast.Node) bool {
				as, ok := m.(*ast.AssignStmt)
				if !ok || found {
					return !found
				}
				for i, l := range as.Lhs {
					if id, ok := l.(*ast.Ident); ok && info.ObjectOf(id) == v {
						if len(as.Rhs) == len(as.Lhs) && computed(info, as.Rhs[i], scope, seen) || as.Tok == token.SUB_ASSIGN || as.Tok == token.QUO_ASSIGN || as.Tok == token.REM_ASSIGN {
							found = true
						}
					}
				}
				return true
			})
		}
		return true
	})
	return found
}

// waitDuration returns the duration call waits for or arms a timer with:
// the argument of one of the time package's funcs (Sleep, After, ...) or
// of a Timer's or Ticker's Reset, or nil.
func waitDuration(info *types.Info, call *ast.CallExpr, funcs ...string) ast.Expr {
	switch {
	case match.IsPkgFunc(info, call, "time", funcs...) && len(call.Args) > 0:
		return call.Args[0]
	case match.IsMethod(info, call, "time", "Reset") && len(call.Args) == 1:
		return call.Args[0]
	}
	return nil
}
