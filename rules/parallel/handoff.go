package parallel

import (
	"go/ast"
	"go/types"
	"sort"

	"github.com/unflake/unflake/internal/match"
)

// A method is called by more than the calls the code spells out: a value
// handed to code outside the package, or turned into an interface, has
// its methods called wherever that code decides (fmt and the testing
// package call String and Error, sort calls Less and Swap, encoding/json
// calls MarshalJSON, a generic function calls its constraint's methods,
// reflection calls any exported method). A String that memoises names in
// a package-level map, or counts its calls, then writes package state in
// a test whose code only says fmt.Sprint(v). So, wherever a value whose
// type holds a named type of the package reaches such code, the rule
// takes every exported method of that type (value or pointer receiver)
// as called there, and judges it as any other call of the package.

// A handoff is a value the code hands to code that may call its methods.
type handoff struct {
	at     ast.Node     // the expression handed over
	to     string       // what it is handed to: "fmt.Sprint", "an interface"
	method *types.Func  // an exported method of a named type of the package the value holds
	typ    *types.Named // the type method belongs to
	inside string       // the type of the value handed over, when it only holds typ ("an Entry")
}

// handoffs returns the methods the code in root may have called behind
// its back: those of the package's named types held by values it passes
// to a function outside the package or converts to an interface
// (explicitly, or by assignment, return, send, a composite literal or a
// call of the package's own functions). Sorted by position, each method
// once.
func (c *checker) handoffs(root ast.Node) []handoff {
	if hs, ok := c.handoffMemo[root]; ok {
		return hs
	}
	var out []handoff
	seen := map[*types.Func]bool{}
	add := func(e ast.Expr, to string) {
		tv, ok := c.info.Types[e]
		if !ok || tv.Type == nil || tv.IsType() {
			return
		}
		for _, n := range c.heldNamed(tv.Type) {
			inside := ""
			if nt, ok := types.Unalias(tv.Type).(*types.Named); !ok || nt.Origin() != n {
				inside = types.TypeString(tv.Type, types.RelativeTo(c.pass.Pkg))
			}
			for _, m := range c.exportedMethods(n) {
				if !seen[m] {
					seen[m] = true
					out = append(out, handoff{at: e, to: to, method: m, typ: n, inside: inside})
				}
			}
		}
	}
	// toIface hands e over when the type it goes to is an interface.
	toIface := func(e ast.Expr, target types.Type) {
		if target != nil && types.IsInterface(target) {
			add(e, "an interface")
		}
	}
	var results []*types.Tuple // the result types of the enclosing functions
	outer := c.bodyResults(root)
	match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
		results = append(results[:0], outer)
		for _, s := range stack {
			switch s := s.(type) {
			case *ast.FuncLit:
				if sig, ok := c.info.TypeOf(s).(*types.Signature); ok {
					results = append(results, sig.Results())
				}
			case *ast.FuncDecl:
				if fn, ok := c.info.Defs[s.Name].(*types.Func); ok {
					results = append(results, fn.Type().(*types.Signature).Results())
				}
			}
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			c.callHandoffs(n, add, toIface)
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, r := range n.Rhs {
					toIface(r, c.info.TypeOf(n.Lhs[i]))
				}
			}
		case *ast.ValueSpec:
			if n.Type != nil {
				for _, v := range n.Values {
					toIface(v, c.info.TypeOf(n.Type))
				}
			}
		case *ast.ReturnStmt:
			if len(results) > 0 {
				if res := results[len(results)-1]; res != nil && res.Len() == len(n.Results) {
					for i, r := range n.Results {
						toIface(r, res.At(i).Type())
					}
				}
			}
		case *ast.SendStmt:
			if ch, ok := types.Unalias(c.info.TypeOf(n.Chan)).Underlying().(*types.Chan); ok {
				toIface(n.Value, ch.Elem())
			}
		case *ast.CompositeLit:
			c.litHandoffs(n, toIface)
		}
		return true
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Pos() < out[j].at.Pos() })
	if c.handoffMemo == nil {
		c.handoffMemo = map[ast.Node][]handoff{}
	}
	c.handoffMemo[root] = out
	return out
}

// bodyResults returns the result types of the function whose body is
// root, or nil when root is not a function's body.
func (c *checker) bodyResults(root ast.Node) *types.Tuple {
	for fn, fd := range c.decls {
		if fd.Body == root {
			return fn.Type().(*types.Signature).Results()
		}
	}
	return nil
}

// callHandoffs hands over the arguments of call: every argument of a
// function outside the package (or called through a value or an
// interface), and an argument going to an interface parameter of the
// package's own; an explicit conversion to an interface type.
func (c *checker) callHandoffs(call *ast.CallExpr, add func(ast.Expr, string), toIface func(ast.Expr, types.Type)) {
	tv, ok := c.info.Types[call.Fun]
	if ok && tv.IsType() {
		if len(call.Args) == 1 {
			toIface(call.Args[0], tv.Type)
		}
		return
	}
	if ok && tv.IsBuiltin() {
		// append converts its elements to the slice's element type,
		// which may be an interface; len, copy, ... call no method.
		if id, isID := ast.Unparen(call.Fun).(*ast.Ident); isID && id.Name == "append" && len(call.Args) > 1 && !call.Ellipsis.IsValid() {
			if sl, isSlice := types.Unalias(c.info.TypeOf(call.Args[0])).Underlying().(*types.Slice); isSlice {
				for _, a := range call.Args[1:] {
					toIface(a, sl.Elem())
				}
			}
		}
		return
	}
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() != c.pass.Pkg {
		to := "a function value"
		if fn != nil {
			to = match.PkgFuncName(fn)
		}
		for _, a := range call.Args {
			add(a, to)
		}
		return
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return
	}
	for i, a := range call.Args {
		var p types.Type
		switch {
		case sig.Variadic() && i >= sig.Params().Len()-1:
			last := sig.Params().At(sig.Params().Len() - 1).Type()
			if call.Ellipsis.IsValid() {
				p = last
			} else if s, ok := last.(*types.Slice); ok {
				p = s.Elem()
			}
		case i < sig.Params().Len():
			p = sig.Params().At(i).Type()
		}
		toIface(a, p)
	}
}

// litHandoffs hands over the elements of a composite literal that go to
// an interface: of a slice, array or map of interfaces, or an interface
// field of a struct.
func (c *checker) litHandoffs(lit *ast.CompositeLit, toIface func(ast.Expr, types.Type)) {
	t := c.info.TypeOf(lit)
	if t == nil {
		return
	}
	if p, ok := types.Unalias(t).Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	switch u := types.Unalias(t).Underlying().(type) {
	case *types.Slice, *types.Array:
		elem := u.(interface{ Elem() types.Type }).Elem()
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				e = kv.Value
			}
			toIface(e, elem)
		}
	case *types.Map:
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				toIface(kv.Key, u.Key())
				toIface(kv.Value, u.Elem())
			}
		}
	case *types.Struct:
		for i, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok {
					if f, ok := c.info.Uses[id].(*types.Var); ok {
						toIface(kv.Value, f.Type())
					}
				}
			} else if i < u.NumFields() {
				toIface(e, u.Field(i).Type())
			}
		}
	}
}

// heldNamed returns the named types of the package that a value of type t
// holds: t itself, what it points to, its elements, keys and fields, and
// the type arguments of an instantiated type, transitively.
func (c *checker) heldNamed(t types.Type) []*types.Named {
	var out []*types.Named
	seen := map[types.Type]bool{}
	var walk func(t types.Type)
	walk = func(t types.Type) {
		t = types.Unalias(t)
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Named:
			if obj := t.Obj(); obj.Pkg() == c.pass.Pkg {
				out = append(out, t.Origin())
			}
			for i := 0; i < t.TypeArgs().Len(); i++ {
				walk(t.TypeArgs().At(i))
			}
			if t.Obj().Pkg() == c.pass.Pkg {
				walk(t.Underlying())
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				walk(t.Field(i).Type())
			}
		}
	}
	walk(t)
	return out
}

// exportedMethods returns the exported methods declared for n (value and
// pointer receivers) that the package declares with a body: what code
// outside the package may call on a value of it.
func (c *checker) exportedMethods(n *types.Named) []*types.Func {
	var out []*types.Func
	for i := 0; i < n.NumMethods(); i++ {
		m := n.Method(i)
		if m.Exported() && c.decls[m] != nil {
			out = append(out, m)
		}
	}
	return out
}

// how says, completing "the test ...", how the method may be called:
// "hands a State to fmt.Sprint, which may call its method String".
func (h handoff) how() string {
	what := "a " + h.typ.Obj().Name()
	if h.inside != "" {
		what += " (in a value of type " + h.inside + ")"
	}
	return "hands " + what + " to " + h.to + ", which may call its method " + h.method.Name()
}
