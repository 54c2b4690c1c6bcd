package spawn

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// A ref is one mention of a variable.
type ref struct {
	id    *ast.Ident
	write bool // the mention may change the variable
	whole bool // the mention assigns the whole variable (x = ..., x := ...)
	def   bool // the mention declares it
}

// refs lists the mentions of local and package-level variables (not
// fields) in nodes, in source order.
func refs(info *types.Info, nodes ...ast.Node) map[*types.Var][]ref {
	writes := map[*ast.Ident]bool{}
	wholes := map[*ast.Ident]bool{}
	root := func(e ast.Expr, whole bool) {
		for {
			switch x := ast.Unparen(e).(type) {
			case *ast.Ident:
				writes[x] = true
				if whole {
					wholes[x] = true
				}
				return
			case *ast.SelectorExpr:
				if _, ok := info.Selections[x]; !ok {
					writes[x.Sel] = true // pkg.V
					return
				}
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.StarExpr:
				e = x.X
			default:
				return
			}
			whole = false
		}
	}
	for _, n := range nodes {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					root(l, n.Tok == token.ASSIGN || n.Tok == token.DEFINE)
				}
			case *ast.IncDecStmt:
				root(n.X, false)
			case *ast.RangeStmt:
				if n.Key != nil {
					root(n.Key, true)
				}
				if n.Value != nil {
					root(n.Value, true)
				}
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					root(n.X, false)
				}
			case *ast.SelectorExpr:
				if sel, ok := info.Selections[n]; ok && sel.Kind() == types.MethodVal {
					if _, ptr := sel.Obj().Type().(*types.Signature).Recv().Type().(*types.Pointer); ptr {
						if _, isPtr := types.Unalias(info.TypeOf(n.X)).(*types.Pointer); !isPtr {
							root(n.X, false) // x.M() with M on *T takes x's address
						}
					}
				}
			}
			return true
		})
	}
	out := map[*types.Var][]ref{}
	for _, n := range nodes {
		ast.Inspect(n, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			v, ok := info.ObjectOf(id).(*types.Var)
			if !ok || v.IsField() {
				return true
			}
			_, def := info.Defs[id]
			out[v] = append(out[v], ref{id: id, write: writes[id] || def, whole: wholes[id] || def, def: def})
			return true
		})
	}
	return out
}

// written reports whether any of rs may change the variable.
func written(rs []ref) bool {
	for _, r := range rs {
		if r.write {
			return true
		}
	}
	return false
}

// setsFirst reports whether the first mention assigns the whole variable,
// so the code never reads a value it did not set itself.
func setsFirst(rs []ref) bool {
	return len(rs) > 0 && rs[0].whole
}

// declaredIn reports whether v is declared within node.
func declaredIn(v *types.Var, n ast.Node) bool {
	return n.Pos() <= v.Pos() && v.Pos() < n.End()
}

// ignored reports whether sharing v between children is harmless: the
// test's *testing.T, a context, the process's standard output streams.
func ignored(v *types.Var) bool {
	t := v.Type()
	if match.IsNamed(t, "testing", "T", "B", "TB", "F") || match.IsNamed(t, "context", "Context") {
		return true
	}
	if v.Pkg() != nil && v.Pkg().Path() == "os" && (v.Name() == "Stdout" || v.Name() == "Stderr" || v.Name() == "Args") {
		return true
	}
	return false
}
