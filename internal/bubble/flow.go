package bubble

import (
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// Tests often name the body they run in a bubble before running it: a
// local function (body := func(t *testing.T) {...}; synctestRun(t, body))
// or a table's field ({name: "x", run: func(t *testing.T) {...}}, then
// synctestRun(t, tc.run) in the subtest). Such literals are on virtual
// time already, as much as one written in the call is: a wrap would put a
// bubble around a bubble (synctest.Test panics there), and the saving its
// finding claims is not there to have.

// bubbleVar returns the variable or field arg names when arg, an argument
// a call runs in a bubble, is one (body, tc.run), and its identifier.
func bubbleVar(info *types.Info, arg ast.Expr) (*types.Var, *ast.Ident) {
	var id *ast.Ident
	switch arg := ast.Unparen(arg).(type) {
	case *ast.Ident:
		id = arg
	case *ast.SelectorExpr:
		id = arg.Sel
	default:
		return nil, nil
	}
	v, ok := info.Uses[id].(*types.Var)
	if !ok || v.Pkg() == nil || v.Parent() == v.Pkg().Scope() {
		return nil, nil // a package-level variable: any code may set it
	}
	return v, id
}

// flows returns the function literals stored in vars, variables and
// fields that some bubble runs, for those read nowhere else: runs holds
// the identifiers of the reads that are arguments a bubble runs. A
// variable or field read anywhere else (called directly, passed to t.Run,
// copied) is dropped: its literals may run outside a bubble.
func flows(files []*ast.File, info *types.Info, vars map[*types.Var]bool, runs map[*ast.Ident]bool) []*ast.FuncLit {
	if len(vars) == 0 {
		return nil
	}
	var lits []*ast.FuncLit
	stores := map[*types.Var][]ast.Expr{} // the values assigned to each
	writes := map[*ast.Ident]bool{}       // identifiers that store, not read
	store := func(id *ast.Ident, v types.Object, value ast.Expr) {
		if w, ok := v.(*types.Var); ok && vars[w] {
			writes[id] = true
			stores[w] = append(stores[w], value)
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) != len(n.Rhs) {
					return true
				}
				for i, lhs := range n.Lhs {
					switch lhs := ast.Unparen(lhs).(type) {
					case *ast.Ident:
						store(lhs, info.ObjectOf(lhs), n.Rhs[i])
					case *ast.SelectorExpr:
						store(lhs.Sel, info.Uses[lhs.Sel], n.Rhs[i])
					}
				}
			case *ast.ValueSpec:
				if len(n.Names) == len(n.Values) {
					for i, name := range n.Names {
						store(name, info.Defs[name], n.Values[i])
					}
				}
			case *ast.CompositeLit:
				st, ok := info.TypeOf(n).Underlying().(*types.Struct)
				if !ok {
					return true
				}
				for i, elt := range n.Elts {
					if kv, ok := elt.(*ast.KeyValueExpr); ok {
						if key, ok := kv.Key.(*ast.Ident); ok {
							store(key, info.Uses[key], kv.Value)
						}
					} else if i < st.NumFields() && vars[st.Field(i)] {
						stores[st.Field(i)] = append(stores[st.Field(i)], elt)
					}
				}
			}
			return true
		})
	}
	// Have: every store. A read that is not a bubble's argument drops
	// the variable.
	for id, obj := range info.Uses {
		if v, ok := obj.(*types.Var); ok && vars[v] && !runs[id] && !writes[id] {
			delete(vars, v)
		}
	}
	for v := range vars {
		for _, value := range stores[v] {
			if lit, ok := ast.Unparen(value).(*ast.FuncLit); ok {
				lits = append(lits, lit)
			}
		}
	}
	return lits
}

// varHelpers returns the package-level variables initialised with a
// function literal that runs one of its function parameters in a bubble
// (var synctestRun = func(t *testing.T, f func(*testing.T)) {
// synctest.Test(t, f) }), each with the indexes of those parameters: a
// helper the effect summaries, which are of declared functions, do not
// describe. A call of such a variable runs the literals at those
// arguments in a bubble.
func varHelpers(files []*ast.File, info *types.Info) map[*types.Var][]int {
	out := map[*types.Var][]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok || len(vs.Names) != len(vs.Values) {
					continue
				}
				for i, name := range vs.Names {
					lit, ok := ast.Unparen(vs.Values[i]).(*ast.FuncLit)
					v, isVar := info.Defs[name].(*types.Var)
					if !ok || !isVar {
						continue
					}
					if run := litBubbleParams(info, lit); len(run) > 0 {
						out[v] = run
					}
				}
			}
		}
	}
	return out
}

// litBubbleParams returns the indexes of lit's parameters that its body
// hands, as they are, to synctest.Test or synctest.Run.
func litBubbleParams(info *types.Info, lit *ast.FuncLit) []int {
	params := map[types.Object]int{}
	i := 0
	for _, field := range lit.Type.Params.List {
		for _, name := range field.Names {
			params[info.Defs[name]] = i
			i++
		}
		if len(field.Names) == 0 {
			i++
		}
	}
	var run []int
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || !match.IsPkgFunc(info, call, "testing/synctest", "Test", "Run") {
			return true
		}
		for _, arg := range call.Args {
			if id, ok := ast.Unparen(arg).(*ast.Ident); ok {
				if p, ok := params[info.Uses[id]]; ok {
					run = append(run, p)
				}
			}
		}
		return true
	})
	return run
}
