package bubble

import (
	"go/ast"
	"go/token"
	"go/types"
)

// certainAt records in w.concrete, for each call x.M() in root of a
// method of an interface on a variable x that root declares and never
// assigns again, from a value of a concrete type (a composite literal,
// &T{...}, a constructor whose result type is not an interface, or a
// conversion of such a value to the interface), the method M of that
// type: the only code the call can run. A variable whose address is
// taken may change behind the walk's back and counts as unknown.
func (w *walker) certainAt(root ast.Node) {
	info := w.a.info
	writes := map[*types.Var]int{}
	def := map[*types.Var]ast.Expr{}
	written := func(e ast.Expr, n int) *types.Var {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok {
			return nil
		}
		v, _ := info.ObjectOf(id).(*types.Var)
		if v != nil {
			writes[v] += n
		}
		return v
	}
	var calls []*ast.SelectorExpr
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				v := written(l, 1)
				if v != nil && n.Tok == token.DEFINE && len(n.Lhs) == len(n.Rhs) {
					if id := ast.Unparen(l).(*ast.Ident); info.Defs[id] == v {
						def[v] = n.Rhs[i]
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				v, _ := info.Defs[id].(*types.Var)
				if v != nil && len(n.Values) == len(n.Names) {
					writes[v]++
					def[v] = n.Values[i]
				}
			}
		case *ast.RangeStmt:
			if n.Key != nil {
				written(n.Key, 2)
			}
			if n.Value != nil {
				written(n.Value, 2)
			}
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				written(n.X, 2)
			}
		case *ast.SelectorExpr:
			if sel, ok := info.Selections[n]; ok && sel.Kind() == types.MethodVal && types.IsInterface(sel.Recv()) {
				calls = append(calls, n)
			}
		}
		return true
	})
	for _, sel := range calls {
		id, ok := ast.Unparen(sel.X).(*ast.Ident)
		if !ok {
			continue
		}
		v, _ := info.Uses[id].(*types.Var)
		if v == nil || writes[v] != 1 || def[v] == nil {
			continue
		}
		t := w.concreteType(def[v])
		if t == nil {
			continue
		}
		obj, _, _ := types.LookupFieldOrMethod(t, true, w.a.pass.Pkg, sel.Sel.Name)
		m, ok := obj.(*types.Func)
		if !ok {
			continue
		}
		if r := m.Type().(*types.Signature).Recv(); r == nil || types.IsInterface(r.Type()) {
			continue // promoted from an embedded interface: still unknown
		}
		if w.concrete == nil {
			w.concrete = map[*ast.Ident]*types.Func{}
		}
		w.concrete[sel.Sel] = m
	}
}

// concreteType returns the type of the value e evaluates to when it is
// certain (e's type is not an interface, or e converts such a value to
// one), or nil.
func (w *walker) concreteType(e ast.Expr) types.Type {
	e = ast.Unparen(e)
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 {
		if tv, ok := w.a.info.Types[call.Fun]; ok && tv.IsType() {
			return w.concreteType(call.Args[0])
		}
	}
	tv, ok := w.a.info.Types[e]
	if !ok || tv.Type == nil || types.IsInterface(tv.Type) || tv.IsNil() {
		return nil
	}
	if b, ok := tv.Type.Underlying().(*types.Basic); ok && b.Kind() == types.UntypedNil {
		return nil
	}
	return tv.Type
}
