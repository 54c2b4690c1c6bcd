package effects

import (
	"go/ast"
	"go/types"
	"slices"

	"github.com/unflake/unflake/internal/match"
)

// A test helper may run the function it is given in a synctest bubble
// (func bubble(t *testing.T, f func(*testing.T)) { synctest.Test(t, f) }),
// directly, inside a literal it runs there (synctest.Test(t, func(t
// *testing.T) { setUp(t); f(t) })), or by handing it on to another such
// helper. Summary.Bubbles lists those parameters, so a rule knows that a
// function literal passed there runs on the bubble's virtual clock.

// bubbleCall is a call, in a scanned function, of callee with the
// function's parameters params run by the callee's argument arg.
type bubbleCall struct {
	callee *types.Func
	arg    int
	params []int
}

// bubbles records what the body of fn, with signature sig, does with its
// function parameters: runs them in a bubble (synctest.Test, synctest.Run)
// or hands them to a function that may (bubbleCalls, decided from its
// summary).
func (s *summariser) bubbles(sc *scan, sig *types.Signature, body ast.Node) {
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && match.IsPkgFunc(s.info, call, "testing/synctest", "Test", "Run") {
			sc.runsBubble = true
		}
		return !sc.runsBubble
	})
	params := map[*types.Var]int{}
	for i := 0; i < sig.Params().Len(); i++ {
		p := sig.Params().At(i)
		if _, ok := p.Type().Underlying().(*types.Signature); ok {
			params[p] = i
		}
	}
	if len(params) == 0 {
		return
	}
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := match.Callee(s.info, call)
		if fn == nil {
			return true
		}
		inBubble := match.IsPkgFunc(s.info, call, "testing/synctest", "Test", "Run")
		for i, arg := range call.Args {
			run := runsParams(s.info, params, arg)
			if len(run) == 0 {
				continue
			}
			if inBubble {
				for _, p := range run {
					if !slices.Contains(sc.bubbleParams, p) {
						sc.bubbleParams = append(sc.bubbleParams, p)
					}
				}
				continue
			}
			sc.bubbleCalls = append(sc.bubbleCalls, bubbleCall{callee: fn.Origin(), arg: i, params: run})
		}
		return true
	})
}

// runsParams returns the indexes of the parameters (of params) that
// calling arg runs: arg itself, or those a function literal calls.
func runsParams(info *types.Info, params map[*types.Var]int, arg ast.Expr) []int {
	switch arg := ast.Unparen(arg).(type) {
	case *ast.Ident:
		if v, ok := info.Uses[arg].(*types.Var); ok {
			if i, ok := params[v]; ok {
				return []int{i}
			}
		}
	case *ast.FuncLit:
		var run []int
		ast.Inspect(arg.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				return false // on a goroutine of its own, which may outlive the call
			case *ast.CallExpr:
				if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok {
					if v, ok := info.Uses[id].(*types.Var); ok {
						if i, ok := params[v]; ok && !slices.Contains(run, i) {
							run = append(run, i)
						}
					}
				}
			}
			return true
		})
		return run
	}
	return nil
}

// BubbleArgs returns the arguments of call that the called function runs
// in a synctest bubble, as src's summary of it says: those at its
// Bubbles, and call's own when it is synctest.Test or synctest.Run.
func BubbleArgs(info *types.Info, src Source, call *ast.CallExpr) []ast.Expr {
	if match.IsPkgFunc(info, call, "testing/synctest", "Test", "Run") {
		return call.Args
	}
	fn := match.Callee(info, call)
	if fn == nil || call.Ellipsis.IsValid() {
		return nil
	}
	sum := src.Of(fn)
	if sum == nil {
		return nil
	}
	var out []ast.Expr
	for _, i := range sum.Bubbles {
		if i < len(call.Args) {
			out = append(out, call.Args[i])
		}
	}
	return out
}
