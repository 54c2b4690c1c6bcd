package parallel

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"

	"github.com/unflake/unflake/internal/match"
)

// A function value kept in a package-level variable may keep state of its
// own that no package-level variable names: a closure over a counter (an
// id generator, a memo table), a method value bound to a cache
// (`var enabled = (&rules{}).enabled`). Every test that calls it, directly
// or through a local copy (`gen := defaultIDs; gen()`, which the analysis
// cannot follow), shares that state, and the first call of the process
// may behave unlike the others (a cache primed by a sequential test). So
// such a variable counts as written by the package's code: a test that
// reads it stays in order.

// funcState records in s the package-level variables of the package whose
// value holds a function value that may keep state: set, by their
// declaration or by init or TestMain, to something other than a
// top-level function, a function literal declared at package level
// (which can capture only package-level variables, judged as such) or
// nil.
func (c *checker) funcState(s *shared) {
	note := func(v *types.Var, val ast.Expr, inFunc bool) {
		if v == nil || !match.IsPackageLevel(v) || v.Pkg() != c.pass.Pkg || s.vars[v] != "" || !holdsFunc(v.Type(), map[types.Type]bool{}) || c.stateless(val, inFunc) {
			return
		}
		s.vars[v] = "holds a function value that may keep state of its own (set at " + c.pos(val) + "): every call may change it"
	}
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						v, _ := c.info.Defs[name].(*types.Var)
						switch {
						case len(vs.Values) == len(vs.Names):
							note(v, vs.Values[i], false)
						case len(vs.Values) == 1:
							note(v, vs.Values[0], false) // v1, v2 = f(): a call
						}
					}
				}
			case *ast.FuncDecl:
				if d.Body == nil || !setup(d) {
					continue
				}
				// What init and TestMain store is what every test sees;
				// the scan counts the writes of any other function.
				ast.Inspect(d.Body, func(n ast.Node) bool {
					as, ok := n.(*ast.AssignStmt)
					if !ok {
						return true
					}
					for i, l := range as.Lhs {
						id, ok := ast.Unparen(l).(*ast.Ident)
						if !ok {
							continue
						}
						v, _ := c.info.Uses[id].(*types.Var)
						switch {
						case len(as.Rhs) == len(as.Lhs):
							note(v, as.Rhs[i], true)
						case len(as.Rhs) == 1:
							note(v, as.Rhs[0], true)
						}
					}
					return true
				})
			}
		}
	}
}

// stateless reports whether the value e, stored in a package-level
// variable, holds no function value with state of its own. inFunc says e
// is inside a function body, where a function literal may capture locals.
func (c *checker) stateless(e ast.Expr, inFunc bool) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		switch c.info.Uses[e].(type) {
		case *types.Func, *types.Nil, *types.Const, *types.TypeName:
			return true
		case *types.Var:
			return !holdsFunc(c.info.TypeOf(e), map[types.Type]bool{})
		}
		return false
	case *ast.BasicLit:
		return true
	case *ast.FuncLit:
		return !inFunc
	case *ast.SelectorExpr:
		if sel, ok := c.info.Selections[e]; ok {
			// A method expression (T.m) binds nothing; a method value
			// (x.m) binds x; a field is whatever it holds.
			return sel.Kind() == types.MethodExpr || sel.Kind() == types.FieldVal && !holdsFunc(sel.Type(), map[types.Type]bool{})
		}
		return c.stateless(e.Sel, inFunc) // pkg.F, pkg.V
	case *ast.UnaryExpr:
		return e.Op == token.AND && c.stateless(e.X, inFunc)
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			if !c.stateless(el, inFunc) {
				return false
			}
		}
		return true
	}
	// A call, a conversion, an index: what it returns may be a closure.
	t := c.info.TypeOf(e)
	return t != nil && !holdsFunc(t, map[types.Type]bool{})
}

// holdsFunc reports whether a value of type t may hold a function value:
// a function, or a struct, array, slice, map, pointer or channel of one.
// An interface may hold anything, a function's closure included.
func holdsFunc(t types.Type, seen map[types.Type]bool) bool {
	if t == nil || seen[t] {
		return false
	}
	seen[t] = true
	switch u := types.Unalias(t).Underlying().(type) {
	case *types.Signature:
		return true
	case *types.Struct:
		for i := range u.NumFields() {
			if holdsFunc(u.Field(i).Type(), seen) {
				return true
			}
		}
	case *types.Array:
		return holdsFunc(u.Elem(), seen)
	case *types.Slice:
		return holdsFunc(u.Elem(), seen)
	case *types.Map:
		return holdsFunc(u.Key(), seen) || holdsFunc(u.Elem(), seen)
	case *types.Pointer:
		return holdsFunc(u.Elem(), seen)
	case *types.Chan:
		return holdsFunc(u.Elem(), seen)
	}
	return false
}

// pos is the file:line of n, the file's base name only.
func (c *checker) pos(n ast.Node) string {
	p := c.pass.Fset.Position(n.Pos())
	return filepath.Base(p.Filename) + ":" + strconv.Itoa(p.Line)
}
