package setenv

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// maxDepth bounds how deep the seal follows calls of package functions.
const maxDepth = 4

// seal returns the variables the package's TestMain sets to "" before its
// first m.Run call, and whether the package has a TestMain.
func (c *checker) seal() (map[string]bool, bool) {
	var main *ast.FuncDecl
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" && fd.Body != nil && c.takesM(fd) {
				main = fd
			}
		}
	}
	if main == nil {
		return nil, false
	}
	s := &sealer{c: c, sealed: map[string]bool{}}
	s.stmts(main.Body.List, nil)
	return s.sealed, true
}

// takesM reports whether fd's only parameter is a *testing.M.
func (c *checker) takesM(fd *ast.FuncDecl) bool {
	ps := fd.Type.Params.List
	return len(ps) == 1 && len(ps[0].Names) <= 1 && match.IsNamed(c.info.TypeOf(ps[0].Type), "testing", "M")
}

// A binding is what the seal knows of a variable: a string, or a list of
// strings (a nil element is unknown).
type binding struct {
	s      *string
	list   []*string
	isList bool
}

// sealer evaluates TestMain's statements before m.Run.
type sealer struct {
	c      *checker
	sealed map[string]bool
	depth  int
}

// stmts evaluates list in order and reports whether it reached m.Run (then
// the statement holding it, and everything after, is not evaluated).
func (s *sealer) stmts(list []ast.Stmt, env map[*types.Var]binding) bool {
	for _, st := range list {
		if s.stmt(st, env) {
			return true
		}
	}
	return false
}

func (s *sealer) stmt(st ast.Stmt, env map[*types.Var]binding) bool {
	if s.runsTests(st) {
		return true
	}
	// Have: a statement before m.Run.
	switch st := st.(type) {
	case *ast.ExprStmt:
		if call, ok := ast.Unparen(st.X).(*ast.CallExpr); ok {
			return s.call(call, env)
		}
	case *ast.AssignStmt:
		for _, e := range st.Rhs {
			if call, ok := ast.Unparen(e).(*ast.CallExpr); ok && s.call(call, env) {
				return true
			}
		}
	case *ast.BlockStmt:
		return s.stmts(st.List, env)
	case *ast.IfStmt:
		if st.Init != nil && s.stmt(st.Init, env) {
			return true
		}
		if s.stmts(st.Body.List, env) {
			return true
		}
		if st.Else != nil {
			return s.stmt(st.Else, env)
		}
	case *ast.ForStmt:
		return s.stmts(st.Body.List, env)
	case *ast.RangeStmt:
		var v *types.Var
		if id, ok := st.Value.(*ast.Ident); ok && st.Tok == token.DEFINE {
			v, _ = s.c.info.Defs[id].(*types.Var)
		}
		list, ok := s.list(st.X, env)
		if !ok || v == nil {
			return s.stmts(st.Body.List, env) // the names are unknown
		}
		for _, e := range list {
			inner := with(env, v, binding{s: e})
			if s.stmts(st.Body.List, inner) {
				return true
			}
		}
	}
	return false
}

// runsTests reports whether st calls m.Run.
func (s *sealer) runsTests(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && match.IsMethod(s.c.info, call, "testing", "Run") {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.IsNamed(s.c.info.TypeOf(sel.X), "testing", "M") {
				found = true
			}
		}
		return !found
	})
	return found
}

// call evaluates a call before m.Run and reports whether it reached m.Run.
func (s *sealer) call(call *ast.CallExpr, env map[*types.Var]binding) bool {
	info := s.c.info
	switch {
	case match.IsPkgFunc(info, call, "os", "Setenv") && len(call.Args) == 2:
		name, ok := s.str(call.Args[0], env)
		val, vok := s.str(call.Args[1], env)
		empty := vok && *val == ""
		switch {
		case ok:
			s.sealed[*name] = empty
		case !empty:
			s.sealed = map[string]bool{} // an unknown variable gets a value: trust nothing
		}
	case match.IsPkgFunc(info, call, "os", "Unsetenv") && len(call.Args) == 1:
		// Unset is not empty: os.LookupEnv tells them apart.
		if name, ok := s.str(call.Args[0], env); ok {
			s.sealed[*name] = false
		} else {
			s.sealed = map[string]bool{}
		}
	case match.IsPkgFunc(info, call, "os", "Clearenv"):
		s.sealed = map[string]bool{}
	default:
		fn := match.Callee(info, call)
		if fn == nil {
			return false
		}
		fd := s.c.decls[fn.Origin()]
		if fd == nil || fd.Body == nil || s.depth >= maxDepth {
			return false
		}
		inner := s.bind(fd, call, env)
		s.depth++
		defer func() { s.depth-- }()
		return s.stmts(fd.Body.List, inner)
	}
	return false
}

// bind binds the parameters of fd to the arguments of call that the seal
// can evaluate.
func (s *sealer) bind(fd *ast.FuncDecl, call *ast.CallExpr, env map[*types.Var]binding) map[*types.Var]binding {
	inner := map[*types.Var]binding{}
	i := 0
	for _, field := range fd.Type.Params.List {
		_, variadic := field.Type.(*ast.Ellipsis)
		names := field.Names
		if len(names) == 0 {
			i++
			continue
		}
		for _, id := range names {
			v, _ := s.c.info.Defs[id].(*types.Var)
			switch {
			case v == nil || i >= len(call.Args) && !variadic:
			case variadic && call.Ellipsis.IsValid():
				if list, ok := s.list(call.Args[i], env); ok {
					inner[v] = binding{list: list, isList: true}
				}
			case variadic:
				var list []*string
				for _, a := range call.Args[min(i, len(call.Args)):] {
					e, _ := s.str(a, env)
					list = append(list, e)
				}
				inner[v] = binding{list: list, isList: true}
			default:
				if e, ok := s.str(call.Args[i], env); ok {
					inner[v] = binding{s: e}
				}
			}
			i++
		}
	}
	return inner
}

// str evaluates e to a string: a constant, or a variable the seal bound.
func (s *sealer) str(e ast.Expr, env map[*types.Var]binding) (*string, bool) {
	if v, ok := match.ConstString(s.c.info, e); ok {
		return &v, true
	}
	if id, ok := ast.Unparen(e).(*ast.Ident); ok {
		if v, ok := s.c.info.Uses[id].(*types.Var); ok {
			if b, ok := env[v]; ok && !b.isList && b.s != nil {
				return b.s, true
			}
		}
	}
	return nil, false
}

// list evaluates e to a list of strings: a composite literal, a list the
// seal bound, or a package-level variable initialised with a composite
// literal and never changed.
func (s *sealer) list(e ast.Expr, env map[*types.Var]binding) ([]*string, bool) {
	e = ast.Unparen(e)
	if lit, ok := e.(*ast.CompositeLit); ok {
		if _, ok := s.c.info.TypeOf(lit).Underlying().(*types.Map); ok {
			return nil, false
		}
		var out []*string
		for _, el := range lit.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			v, _ := s.str(el, env)
			out = append(out, v)
		}
		return out, true
	}
	var v *types.Var
	switch x := e.(type) {
	case *ast.Ident:
		v, _ = s.c.info.Uses[x].(*types.Var)
	case *ast.SelectorExpr:
		return nil, false
	}
	if v == nil {
		return nil, false
	}
	if b, ok := env[v]; ok && b.isList {
		return b.list, true
	}
	if !match.IsPackageLevel(v) || v.Pkg() != s.c.pass.Pkg {
		return nil, false
	}
	init := s.c.initializer(v)
	if init == nil {
		return nil, false
	}
	for _, f := range s.c.pass.AllFiles {
		if match.Modifies(s.c.info, f, []*types.Var{v}) != nil {
			return nil, false
		}
	}
	return s.list(init, nil)
}

// initializer returns the composite literal that initialises the
// package-level variable v, or nil.
func (c *checker) initializer(v *types.Var) *ast.CompositeLit {
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok || len(vs.Values) != len(vs.Names) {
					continue
				}
				for i, id := range vs.Names {
					if c.info.Defs[id] == v {
						lit, _ := ast.Unparen(vs.Values[i]).(*ast.CompositeLit)
						return lit
					}
				}
			}
		}
	}
	return nil
}

// with returns env with v bound to b.
func with(env map[*types.Var]binding, v *types.Var, b binding) map[*types.Var]binding {
	out := map[*types.Var]binding{v: b}
	for k, x := range env {
		if k != v {
			out[k] = x
		}
	}
	return out
}
