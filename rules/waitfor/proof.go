package waitfor

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/handover"
	"github.com/unflake/unflake/internal/match"
)

// provenChange reports whether the checks provably wait for a change: each
// one fails in the state the test starts from. That holds when what a
// check reads is a local variable (a bool or integer, or a sync/atomic
// Bool or integer read with Load) that starts at its zero value or a
// constant, and that only function literals running apart from the test
// write: goroutines, and callbacks handed to the code under test. A check
// that fails on the start value cannot be a check that nothing happens;
// a poll on it waits for the write. The test must not read the variable
// before the wait: a check before it may have seen the change come, and
// the one after it then guards that no more comes.
func (p *poll) provenChange() bool {
	fd := p.enclosingFunc()
	if fd == nil {
		return false
	}
	pr := &prover{p: p, root: fd, start: map[*types.Var]constant.Value{}}
	for _, ck := range p.group.checks {
		var fails constant.Value
		switch {
		case ck.fails != nil && ck.init == nil:
			fails = pr.eval(ck.fails)
		case ck.assert != nil && (ck.fn.Name() == "True" || ck.fn.Name() == "False") && len(ck.args) > 0:
			v := pr.eval(ck.args[0])
			if v != nil && v.Kind() == constant.Bool {
				fails = constant.MakeBool(constant.BoolVal(v) == (ck.fn.Name() == "False"))
			}
		}
		if fails == nil || fails.Kind() != constant.Bool || !constant.BoolVal(fails) {
			return false
		}
	}
	// Every group statement between the wait and the checks is a define;
	// defines do not write the variables (they declare new ones).
	return len(pr.start) > 0
}

// enclosingFunc returns the function declaration or literal the wait is
// directly in.
func (p *poll) enclosingFunc() ast.Node {
	for k := len(p.stack) - 1; k >= 0; k-- {
		switch n := p.stack[k].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return n
		}
	}
	return nil
}

// A prover evaluates check conditions in the state the test starts from.
type prover struct {
	p     *poll
	root  ast.Node // the function the wait is in
	start map[*types.Var]constant.Value
}

// eval returns the constant value of e in the start state, or nil.
func (pr *prover) eval(e ast.Expr) constant.Value {
	info := pr.p.c.info
	if tv, ok := info.Types[e]; ok && tv.Value != nil {
		return tv.Value
	}
	if v, loaded := readVar(info, e); v != nil {
		if !loaded && !isBasicState(v.Type()) {
			return nil
		}
		return pr.startOf(v)
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		if x.Op != token.NOT {
			return nil
		}
		if v := pr.eval(x.X); v != nil && v.Kind() == constant.Bool {
			return constant.MakeBool(!constant.BoolVal(v))
		}
	case *ast.BinaryExpr:
		a, b := pr.eval(x.X), pr.eval(x.Y)
		if a == nil || b == nil {
			return nil
		}
		switch x.Op {
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
			if a.Kind() != b.Kind() && !(isNumeric(a) && isNumeric(b)) {
				return nil
			}
			return constant.MakeBool(constant.Compare(a, x.Op, b))
		case token.LAND, token.LOR:
			if a.Kind() != constant.Bool || b.Kind() != constant.Bool {
				return nil
			}
			if x.Op == token.LAND {
				return constant.MakeBool(constant.BoolVal(a) && constant.BoolVal(b))
			}
			return constant.MakeBool(constant.BoolVal(a) || constant.BoolVal(b))
		}
	}
	return nil
}

func isNumeric(v constant.Value) bool {
	return v.Kind() == constant.Int || v.Kind() == constant.Float
}

// isBasicState reports whether t is a bool or an integer type.
func isBasicState(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&(types.IsBoolean|types.IsInteger) != 0
}

// isAtomicState reports whether t is one of sync/atomic's Bool and
// integer types.
func isAtomicState(t types.Type) bool {
	return match.IsNamed(t, "sync/atomic", "Bool", "Int32", "Int64", "Uint32", "Uint64")
}

// startOf returns the value v starts with, if v is a local of the
// function the wait is in, declared with its zero value or a constant,
// and written only by function literals that run apart from the test;
// else nil.
func (pr *prover) startOf(v *types.Var) constant.Value {
	if s, ok := pr.start[v]; ok {
		return s
	}
	pr.start[v] = nil
	if match.IsPackageLevel(v) || v.Pos() < pr.root.Pos() || v.Pos() >= pr.root.End() {
		return nil
	}
	info := pr.p.c.info
	var start constant.Value
	writes, ok := 0, true
	match.WithStack(pr.root, func(n ast.Node, stack []ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.Ident:
			// Read by the test before the wait (an earlier check that
			// the first join came): the state at the wait is not where
			// it started, and a check that fails at the start may pass
			// already, guarding that nothing more happens.
			if info.Uses[n] == v && n.Pos() < pr.p.wait.stmt.Pos() && !inLiteral(stack) {
				ok = false
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if info.Defs[name] != v {
					continue
				}
				start = pr.initial(v, n.Values, i)
				if start == nil {
					ok = false
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				id, isID := ast.Unparen(l).(*ast.Ident)
				if !isID {
					continue
				}
				if info.Defs[id] == v {
					start = pr.initial(v, n.Rhs, i)
					if start == nil {
						ok = false
					}
				} else if info.Uses[id] == v {
					writes++
					ok = ok && pr.apart(stack)
				}
			}
		case *ast.IncDecStmt:
			if id, isID := ast.Unparen(n.X).(*ast.Ident); isID && info.Uses[id] == v {
				writes++
				ok = ok && pr.apart(stack)
			}
		case *ast.UnaryExpr:
			if id, isID := ast.Unparen(n.X).(*ast.Ident); isID && n.Op == token.AND && info.Uses[id] == v {
				ok = false // its address escapes
			}
		case *ast.SelectorExpr:
			if id, isID := ast.Unparen(n.X).(*ast.Ident); isID && info.Uses[id] == v {
				switch n.Sel.Name {
				case "Load":
				case "Store", "Add", "Swap", "CompareAndSwap", "And", "Or":
					writes++
					ok = ok && pr.apart(stack)
				default:
					ok = false
				}
			}
		}
		return ok
	})
	if !ok || writes == 0 || start == nil {
		return nil
	}
	pr.start[v] = start
	return start
}

// initial returns the start value of v declared with values (nil: its zero
// value) at index i, or nil when it is not a constant.
func (pr *prover) initial(v *types.Var, values []ast.Expr, i int) constant.Value {
	if len(values) == 0 {
		if isAtomicState(v.Type()) {
			if match.IsNamed(v.Type(), "sync/atomic", "Bool") {
				return constant.MakeBool(false)
			}
			return constant.MakeInt64(0)
		}
		if b, ok := v.Type().Underlying().(*types.Basic); ok && b.Info()&types.IsBoolean != 0 {
			return constant.MakeBool(false)
		}
		return constant.MakeInt64(0)
	}
	if len(values) != 1 && i < len(values) || len(values) == 1 && i == 0 {
		if tv, ok := pr.p.c.info.Types[values[i]]; ok && tv.Value != nil {
			return tv.Value
		}
	}
	return nil
}

// apart reports whether a write, enclosed by stack, is in a function
// literal that runs apart from the test: a goroutine, or a literal handed
// to the code under test.
func (pr *prover) apart(stack []ast.Node) bool {
	if match.InGoroutine(pr.p.c.info, stack) {
		return true
	}
	for k := len(stack) - 1; k >= 1; k-- {
		if lit, ok := stack[k].(*ast.FuncLit); ok {
			return pr.p.c.hands.Lit(lit, stack[:k]).Kind == handover.Handed && !pr.mayRunBefore(lit)
		}
	}
	return false // in the test's own flow
}

// mayRunBefore reports whether the handed literal lit may run on the
// test's goroutine before the wait: a call the test makes from the one
// that hands lit over up to the wait may invoke it synchronously (s.Fire()
// calling its subscribers). Then the state at the wait may already be the
// changed one, and the check after it may guard that no more comes: the
// start state proves nothing about the wait.
func (pr *prover) mayRunBefore(lit *ast.FuncLit) bool {
	wait := pr.p.wait.stmt.Pos()
	may := false
	ast.Inspect(pr.root, func(n ast.Node) bool {
		if may {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			// Code the test hands over or runs later; one it runs
			// itself (t.Run's body) is reached through the call that
			// takes it, which counts as invoking anything.
			return n == pr.root
		case *ast.DeferStmt, *ast.GoStmt:
			return false // not before the wait, or not on the test's goroutine
		case *ast.CallExpr:
			if n.End() > lit.Pos() && n.Pos() < wait && pr.p.c.mayCallBack(n, 0) {
				may = true
			}
		}
		return true
	})
	return may
}

// mayCallBack reports whether call may invoke, on the calling goroutine,
// a function value it did not make: a call of a function value or
// through an interface, a standard function given a function, or code
// the rule cannot see (unless its effect summary is pure).
func (c *checker) mayCallBack(call *ast.CallExpr, depth int) bool {
	if tv, ok := c.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
		return false
	}
	fn := match.Callee(c.info, call)
	if fn == nil {
		return true // a function value
	}
	sig := fn.Type().(*types.Signature)
	if recv := sig.Recv(); recv != nil && types.IsInterface(recv.Type()) {
		// A standard interface (s.ln.Addr() of a net.Listener) may hold
		// one of the package's types: then a method of that name in the
		// package is what may run.
		if fn.Pkg() == nil || !match.IsStd(fn.Pkg().Path()) || depth >= maxBodyDepth {
			return true
		}
		iface, _ := recv.Type().Underlying().(*types.Interface)
		for m, fd := range c.decls {
			msig := m.Type().(*types.Signature)
			if fd.Recv == nil || m.Name() != fn.Name() || fd.Body == nil || iface == nil {
				continue
			}
			t := msig.Recv().Type()
			if p, ok := t.(*types.Pointer); ok {
				t = p.Elem()
			}
			if (types.Implements(t, iface) || types.Implements(types.NewPointer(t), iface)) && c.bodyMayCallBack(fd.Body, depth+1) {
				return true
			}
		}
		return false
	}
	if fn.Pkg() != nil && match.IsStd(fn.Pkg().Path()) {
		for _, a := range call.Args {
			if t := c.info.TypeOf(a); t != nil {
				if _, isFunc := t.Underlying().(*types.Signature); isFunc {
					return true
				}
			}
		}
		return false
	}
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil {
		return !c.pass.Effects.Of(fn).Pure()
	}
	if depth >= maxBodyDepth {
		return true
	}
	return c.bodyMayCallBack(fd.Body, depth+1)
}

// bodyMayCallBack reports whether running body may invoke, on the calling
// goroutine, a function value it did not make (see mayCallBack).
func (c *checker) bodyMayCallBack(body *ast.BlockStmt, depth int) bool {
	may := false
	ast.Inspect(body, func(n ast.Node) bool {
		if may {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit, *ast.GoStmt:
			return false // made here, or run apart
		case *ast.CallExpr:
			may = c.mayCallBack(n, depth)
		}
		return !may
	})
	return may
}

// inLiteral reports whether a node enclosed by stack is in a function
// literal.
func inLiteral(stack []ast.Node) bool {
	for _, n := range stack {
		if _, ok := n.(*ast.FuncLit); ok {
			return true
		}
	}
	return false
}
