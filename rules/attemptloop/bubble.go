package attemptloop

import (
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// bubbles finds the functions a synctest bubble runs: the func literals
// and declared functions given to synctest.Test or synctest.Run, and
// those given to a function of the package that runs its parameter in a
// bubble (func inBubble(t *testing.T, f func(*testing.T)) {
// synctest.Test(t, f) }, or a literal that calls f), however deep such
// wrappers nest.
type bubbles struct {
	info  *types.Info
	funcs map[ast.Node]bool            // *ast.FuncLit and *ast.FuncDecl run in a bubble
	wraps map[*types.Func]map[int]bool // the parameters a function runs in a bubble
}

func newBubbles(info *types.Info, files []*ast.File) *bubbles {
	b := &bubbles{info: info, funcs: map[ast.Node]bool{}, wraps: map[*types.Func]map[int]bool{}}
	decls := map[*types.Func]*ast.FuncDecl{}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := info.Defs[fd.Name].(*types.Func); ok {
					decls[fn] = fd
				}
			}
		}
	}
	// Until nothing changes: a wrapper found may make another one.
	for changed := true; changed; {
		changed = false
		mark := func(n ast.Node) {
			if !b.funcs[n] {
				b.funcs[n], changed = true, true
			}
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				for i, arg := range call.Args {
					if !b.runsArg(call, i) {
						continue
					}
					switch arg := ast.Unparen(arg).(type) {
					case *ast.FuncLit:
						mark(arg)
					case *ast.Ident:
						switch obj := info.Uses[arg].(type) {
						case *types.Func:
							if fd := decls[obj]; fd != nil {
								mark(fd)
							}
						case *types.Var:
							b.param(decls, obj, &changed)
						}
					}
				}
				return true
			})
		}
		// A parameter called in a bubble's literal runs in the bubble.
		for n := range b.funcs {
			lit, ok := n.(*ast.FuncLit)
			if !ok {
				continue
			}
			ast.Inspect(lit.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
						if v, ok := info.Uses[id].(*types.Var); ok {
							b.param(decls, v, &changed)
						}
					}
				}
				return true
			})
		}
	}
	return b
}

// runsArg reports whether call runs its i-th argument in a bubble.
func (b *bubbles) runsArg(call *ast.CallExpr, i int) bool {
	if match.IsPkgFunc(b.info, call, "testing/synctest", "Test", "Run") {
		return true
	}
	fn := match.Callee(b.info, call)
	return fn != nil && b.wraps[fn.Origin()][i]
}

// param records that v, if it is a parameter of a declared function, runs
// in a bubble: that function wraps its argument in one.
func (b *bubbles) param(decls map[*types.Func]*ast.FuncDecl, v *types.Var, changed *bool) {
	for fn, fd := range decls {
		if fd.Pos() > v.Pos() || v.Pos() >= fd.End() {
			continue
		}
		params := fn.Type().(*types.Signature).Params()
		for i := range params.Len() {
			if params.At(i) == v && !b.wraps[fn][i] {
				if b.wraps[fn] == nil {
					b.wraps[fn] = map[int]bool{}
				}
				b.wraps[fn][i] = true
				*changed = true
			}
		}
	}
}

// encloses reports whether one of the functions on stack runs in a bubble.
func (b *bubbles) encloses(stack []ast.Node) bool {
	for _, n := range stack {
		if b.funcs[n] {
			return true
		}
	}
	return false
}
