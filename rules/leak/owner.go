package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// A value a method of another value returns may be kept by that value: a
// pool that lists the connections it hands out and closes them all on its
// own Close (or on Put, Release), a manager that tracks its sessions. Then
// the owner ends the value too, and a cleanup of the test's own is a second
// end. When the owner is in sight (the test ends it, or made it), the rule
// leaves the value to it (endedParent); this file handles the owner out of
// sight: a package-level pool closed by TestMain, a field of a fixture.

// maxKeepDepth bounds how far keptBy follows the calls a method returns
// through (p.Get → p.get).
const maxKeepDepth = 3

// keptBy says why the cleanup of s may be a second end: the value comes
// from a method of another value that may keep it, and a second call of
// the lifecycle method is not known to be harmless. "" when the value is
// the test's alone, or a second end is safe.
func (c *checker) keptBy(s *site) string {
	sel, ok := ast.Unparen(s.call.Fun).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	selection, ok := c.info.Selections[sel]
	if !ok || selection.Kind() != types.MethodVal {
		return ""
	}
	fn, _ := selection.Obj().(*types.Func)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return "" // standard library methods do not own what they return (endedParent)
	}
	// Have: the value comes from a method of a value outside the
	// standard library.
	twice := c.unsafeTwice(s)
	if twice == "" {
		return "" // a second end is harmless
	}
	if c.idleOwner(sel.X) {
		return ""
	}
	name := types.ExprString(sel)
	var how string
	switch {
	case types.IsInterface(selection.Recv()):
		how = fmt.Sprintf("%s is called through an interface: the analysis cannot see whether its value keeps what it returns and ends it itself", name)
	case !c.visible(fn):
		how = fmt.Sprintf("the analysis cannot see whether %s keeps what it returns and ends it itself (a pool, a manager)", name)
	default:
		evidence := c.keeps(fn, map[*types.Func]bool{}, 0)
		if evidence == "" {
			return ""
		}
		how = fmt.Sprintf("%s keeps what it returns (%s), so its owner may end it too", name, evidence)
	}
	return fmt.Sprintf("%s; %s", how, twice)
}

// idleOwner reports whether the value e (a receiver, or a chain of calls
// on one: srv.Topic("t")) comes from a variable the test made and neither
// ends nor hands to other code: whatever it keeps, nothing ends it, so the
// test's cleanup is the only end.
func (c *checker) idleOwner(e ast.Expr) bool {
	for {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			break
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return false
		}
		e = sel.X
	}
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return false
	}
	v, _ := c.info.Uses[id].(*types.Var)
	if v == nil || match.IsPackageLevel(v) || c.defCall(v) == nil || c.testEnds(v) {
		return false
	}
	// Have: a local the test made and never ends. It must only be a
	// receiver: passed on, stored or captured, something else may end it.
	idle := true
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || c.info.Uses[id] != types.Object(v) || !idle {
			return idle
		}
		if len(stack) == 0 {
			idle = false
			return false
		}
		if sel, ok := stack[len(stack)-1].(*ast.SelectorExpr); !ok || sel.X != id {
			idle = false
		}
		for _, s := range stack {
			if _, ok := s.(*ast.FuncLit); ok {
				idle = false
			}
		}
		return idle
	})
	return idle
}

// keeps returns the code by which the method (or package function) fn
// keeps a value it returns: stores it in a field, map or slice of its
// receiver or in a package-level variable, sends it on a channel, hands it
// to other code, or returns what its receiver already holds. "" when it
// surely does not.
func (c *checker) keeps(fn *types.Func, seen map[*types.Func]bool, depth int) string {
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || seen[fn.Origin()] || depth > maxKeepDepth {
		return ""
	}
	seen[fn.Origin()] = true
	var recv *types.Var
	if fd.Recv != nil && len(fd.Recv.List) == 1 && len(fd.Recv.List[0].Names) == 1 {
		recv, _ = c.info.Defs[fd.Recv.List[0].Names[0]].(*types.Var)
	}
	// keeper reports whether e is rooted at what outlives the call: the
	// receiver or a package-level variable.
	keeper := func(e ast.Expr) bool {
		v := match.Root(c.info, e)
		return v != nil && (v == recv || match.IsPackageLevel(v))
	}
	for _, e := range c.returnedValues(fd.Body) {
		switch x := e.(type) {
		case *ast.CallExpr:
			if callee := match.Callee(c.info, x); callee != nil {
				if ev := c.keeps(callee, seen, depth+1); ev != "" {
					return ev
				}
			}
			continue
		case *ast.Ident:
			if v, ok := c.info.Uses[x].(*types.Var); ok && v != recv && !match.IsPackageLevel(v) {
				if ev := c.keptLocal(fd.Body, v, keeper); ev != "" {
					return ev
				}
				continue
			}
		}
		if keeper(e) {
			return "returns " + short(e)
		}
	}
	return ""
}

// keptLocal returns the code by which body keeps the value of its local
// variable v, or "".
func (c *checker) keptLocal(body *ast.BlockStmt, v *types.Var, keeper func(ast.Expr) bool) string {
	mentions := func(e ast.Node) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && c.info.Uses[id] == types.Object(v) {
				found = true
			}
			return !found
		})
		return found
	}
	out := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if out != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				var r ast.Expr
				switch {
				case len(n.Rhs) == len(n.Lhs):
					r = n.Rhs[i]
				case len(n.Rhs) == 1:
					r = n.Rhs[0]
				}
				if r == nil {
					continue
				}
				if keeper(l) && mentions(r) {
					out = short(l) + " = " + short(r) // stores it
				}
				if id, ok := l.(*ast.Ident); ok && (c.info.Defs[id] == types.Object(v) || c.info.Uses[id] == types.Object(v)) && keeper(r) {
					out = short(l) + " := " + short(r) // takes what the keeper holds
				}
			}
		case *ast.SendStmt:
			if mentions(n.Value) {
				out = "sends it on " + short(n.Chan)
			}
		case *ast.CallExpr:
			if c.nonOwning(n) {
				return true
			}
			for _, a := range n.Args {
				if mentions(a) {
					out = "hands it to " + short(n.Fun)
				}
			}
		}
		return out == ""
	})
	return out
}

// short prints e for a reason, cut to a readable length.
func short(e ast.Expr) string {
	s := types.ExprString(e)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// results returns the values body's return statements return, outside
// the function literals in it, without their parentheses.
func results(body *ast.BlockStmt) []ast.Expr {
	var out []ast.Expr
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				out = append(out, ast.Unparen(r))
			}
		}
		return true
	})
	return out
}

// returnedValues returns what body returns other than errors, with a
// leading & taken off (return &s.conns[i] hands out s.conns[i]).
func (c *checker) returnedValues(body *ast.BlockStmt) []ast.Expr {
	var out []ast.Expr
	for _, e := range results(body) {
		if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
			e = ast.Unparen(u.X)
		}
		if t := c.info.TypeOf(e); t == nil || types.Identical(t, types.Universe.Lookup("error").Type()) {
			continue
		}
		out = append(out, e)
	}
	return out
}
