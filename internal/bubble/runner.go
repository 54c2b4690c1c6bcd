package bubble

import (
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// A Runner tells which function arguments a call runs in a synctest
// bubble: synctest.Test's and synctest.Run's, and those a helper of the
// module runs there (func bubble(t *testing.T, f func(*testing.T)) {
// synctest.Test(t, f) }), as its effect summary says. Code in such a
// function is on virtual time already. Rules that only need this, not
// the whole analysis, make their own.
type Runner struct {
	info  *types.Info
	src   effect.Source
	reach map[*types.Package]bool // memoises reachesSynctest
}

// NewRunner returns a Runner over a package's types, asking src for the
// summaries of the helpers it calls.
func NewRunner(info *types.Info, src effect.Source) *Runner {
	return &Runner{info: info, src: src, reach: map[*types.Package]bool{}}
}

// Args returns the arguments of call that it runs in a bubble, or nil.
func (r *Runner) Args(call *ast.CallExpr) []ast.Expr {
	if !r.mayBubble(call) {
		return nil
	}
	return effects.BubbleArgs(r.info, r.src, call)
}

// Runs reports whether call runs arg, one of its arguments, in a bubble.
func (r *Runner) Runs(call *ast.CallExpr, arg ast.Expr) bool {
	for _, a := range r.Args(call) {
		if ast.Unparen(a) == ast.Unparen(arg) {
			return true
		}
	}
	return false
}

// mayBubble reports whether call may run a function it is given in a
// synctest bubble: synctest.Test or synctest.Run, or a function of the
// module given a function literal, a declared function or a variable or
// field holding one (a test helper) whose package reaches
// testing/synctest. The standard library's other
// functions (t.Run) do not, and are not asked, nor are calls given no
// function: asking for the summary of a handler registration would load
// its package.
func (r *Runner) mayBubble(call *ast.CallExpr) bool {
	if match.IsPkgFunc(r.info, call, "testing/synctest", "Test", "Run") {
		return true
	}
	fn := match.Callee(r.info, call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return false
	}
	if !r.reachesSynctest(fn.Pkg(), map[*types.Package]bool{}) {
		return false
	}
	params := fn.Type().(*types.Signature).Params()
	for i, arg := range call.Args {
		if i >= params.Len() || !takesTest(params.At(i).Type()) {
			continue
		}
		switch arg := ast.Unparen(arg).(type) {
		case *ast.FuncLit:
			return true
		case *ast.Ident:
			// A declared function, or a variable holding a literal
			// (see flows).
			switch r.info.Uses[arg].(type) {
			case *types.Func, *types.Var:
				return true
			}
		case *ast.SelectorExpr:
			if _, ok := r.info.Uses[arg.Sel].(*types.Var); ok {
				return true // a table's field (tc.run)
			}
		}
	}
	return false
}

// reachesSynctest reports whether pkg imports testing/synctest, directly
// or through the packages it imports: only then may its functions run
// one in a bubble, and only then is a summary worth asking for (it may
// load packages from source).
func (r *Runner) reachesSynctest(pkg *types.Package, seen map[*types.Package]bool) bool {
	if v, ok := r.reach[pkg]; ok {
		return v
	}
	if seen[pkg] {
		return false
	}
	seen[pkg] = true
	v := false
	for _, imp := range pkg.Imports() {
		if imp.Path() == "testing/synctest" || !match.IsStd(imp.Path()) && r.reachesSynctest(imp, seen) {
			v = true
			break
		}
	}
	r.reach[pkg] = v
	return v
}
