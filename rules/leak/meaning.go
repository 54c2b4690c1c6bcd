package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// What a cleanup changes in a test's meaning beyond "the value ends":
//
//   - its error: a cleanup that reports the lifecycle method's error adds a
//     check the original never made. It means a failure only when the
//     cleanup is the value's only end and nothing put an error in it:
//     a value the package closes itself (a keeper goroutine at its ttl, an
//     iterator that runs out) returns "already closed", and one that keeps
//     the first failure (bufio.Writer, a shipper after an outage the test
//     provoked) returns it again. Then the error is dropped (errDropped);
//   - who else uses it: a value a package function returns from a
//     package-level variable (Default()) belongs to the process, and
//     closing it breaks the next test that uses it (shared);
//   - the order: a cleanup runs before the cleanups registered earlier
//     (LIFO), such as a mock's expectation check its constructor
//     registered with t. A Close that flushes, reports once more or calls
//     the mock changes what that check sees: it fails correct code (one
//     write too many) or satisfies an expectation the bug left unmet
//     (observedLater);
//   - what it waits for: httptest.Server.Close waits for the requests it
//     serves, and a handler that streams until the client goes away never
//     ends while the test holds its response open (waitsForRequests).

// errDropped says why the cleanup must drop the lifecycle method's error
// rather than report it, or "" when reporting it is sound: the cleanup is
// the value's only end and the test provoked no error from it.
func (c *checker) errDropped(s *site) string {
	if s.lc.result != "error" {
		return ""
	}
	m := s.lc.method
	if !c.visible(s.lc.fn) {
		if !isStdType(s.v.Type()) {
			// An iterator closes itself when it runs out; a body out of
			// sight may do anything of the kind.
			return fmt.Sprintf("the analysis cannot see whether %s ends %s itself (an iterator that runs out) or reports an earlier failure", typeString(s.v.Type()), s.v.Name())
		}
		// Standard library values do not end themselves.
		return c.provoked(s)
	}
	if pos := c.otherCall(s.lc.fn); pos.IsValid() {
		p := c.pass.Fset.Position(pos)
		return fmt.Sprintf("the package calls %s too (%s:%d), so it may have ended %s already and a second %s may return an error", m, baseName(p.Filename), p.Line, s.v.Name(), m)
	}
	if ev := c.sticky(s.lc.fn, map[*types.Func]bool{}, 0); ev != "" {
		return fmt.Sprintf("%s returns an earlier failure (%s)", m, ev)
	}
	return c.provoked(s)
}

// typeString names t for a reason: *kv.Iter.
func typeString(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string { return p.Name() })
}

// sticky returns the code by which the method fn returns an error its
// receiver kept (return s.err), directly or through a method of the
// receiver it returns (return s.flush()), or "".
func (c *checker) sticky(fn *types.Func, seen map[*types.Func]bool, depth int) string {
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || seen[fn.Origin()] || depth > maxKeepDepth || fd.Recv == nil || len(fd.Recv.List) != 1 || len(fd.Recv.List[0].Names) != 1 {
		return ""
	}
	seen[fn.Origin()] = true
	recv, _ := c.info.Defs[fd.Recv.List[0].Names[0]].(*types.Var)
	if recv == nil {
		return ""
	}
	for _, r := range results(fd.Body) {
		if t := c.info.TypeOf(r); t == nil || !types.Implements(t, errorType()) {
			continue
		}
		if call, ok := r.(*ast.CallExpr); ok {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
				if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && c.info.Uses[id] == types.Object(recv) {
					if g, ok := c.info.Uses[sel.Sel].(*types.Func); ok {
						if ev := c.sticky(g, seen, depth+1); ev != "" {
							return ev
						}
					}
				}
			}
		}
		// return s.err, errors.Join(s.errs...), fmt.Errorf("close: %w", s.err)
		out := ""
		ast.Inspect(r, func(m ast.Node) bool {
			sel, ok := m.(*ast.SelectorExpr)
			if !ok || out != "" || match.Root(c.info, sel) != recv {
				return out == ""
			}
			if t := c.info.TypeOf(sel); t != nil && keepsErrors(t) {
				out = "return " + short(r)
			}
			return out == ""
		})
		if out != "" {
			return out
		}
	}
	return ""
}

// keepsErrors reports whether a field of type t holds errors: error,
// []error, or a type that implements error.
func keepsErrors(t types.Type) bool {
	if sl, ok := t.Underlying().(*types.Slice); ok {
		t = sl.Elem()
	}
	return types.Implements(t, errorType())
}

// provoked says why an error from the value's lifecycle method would be
// one the test provoked, or "": the test expects an error from one of the
// value's methods (errors.Is(s.Flush(), ErrX), if err == nil { t.Fatal }),
// and a value that keeps its first failure returns it again on Close.
func (c *checker) provoked(s *site) string {
	out := ""
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || out != "" || len(stack) == 0 {
			return out == ""
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok || match.Root(c.info, sel.X) != s.v || call.Pos() < s.stmt.End() {
			return true
		}
		sig, ok := c.info.TypeOf(call.Fun).(*types.Signature)
		if !ok || sig.Results().Len() == 0 || !types.Identical(sig.Results().At(sig.Results().Len()-1).Type(), types.Universe.Lookup("error").Type()) {
			return true
		}
		if c.expectsError(stack[len(stack)-1], call) {
			out = fmt.Sprintf("the test expects an error from %s, which %s may report again", types.ExprString(call.Fun), s.lc.method)
			return false
		}
		// err := s.Flush(); if !errors.Is(err, ErrX) ...
		if as, ok := stack[len(stack)-1].(*ast.AssignStmt); ok && len(as.Rhs) == 1 {
			if id, ok := as.Lhs[len(as.Lhs)-1].(*ast.Ident); ok {
				if v, ok := c.info.ObjectOf(id).(*types.Var); ok && c.errExpected(v) {
					out = fmt.Sprintf("the test expects an error from %s, which %s may report again", types.ExprString(call.Fun), s.lc.method)
				}
			}
		}
		return out == ""
	})
	return out
}

// expectsError reports whether parent uses the error e the way a test
// that expects one does: errors.Is(e, X), errors.As, e == X (X not nil),
// e == nil, assert.Error(t, e), require.ErrorIs(t, e, X).
func (c *checker) expectsError(parent ast.Node, e ast.Expr) bool {
	switch p := parent.(type) {
	case *ast.CallExpr:
		if match.IsPkgFunc(c.info, p, "errors", "Is", "As") {
			return true
		}
		if fn := match.Callee(c.info, p); fn != nil && fn.Pkg() != nil && match.IsAssertion(fn.Pkg().Path(), fn.Name()) {
			return strings.HasPrefix(fn.Name(), "Error") || strings.HasPrefix(fn.Name(), "EqualError") || strings.HasPrefix(fn.Name(), "Equal")
		}
	case *ast.BinaryExpr:
		if p.Op == token.EQL {
			return true // e == nil: the test fails when there is none
		}
		if p.Op == token.NEQ {
			other := p.Y
			if ast.Unparen(p.Y) == e {
				other = p.X
			}
			id, ok := ast.Unparen(other).(*ast.Ident)
			return !ok || id.Name != "nil"
		}
	}
	return false
}

// errExpected reports whether the test uses the error variable v the way
// a test that expects an error does (expectsError).
func (c *checker) errExpected(v *types.Var) bool {
	found := false
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && len(stack) > 0 && c.info.Uses[id] == types.Object(v) && c.expectsError(stack[len(stack)-1], id) {
			found = true
		}
		return !found
	})
	return found
}

// shared says why the value is not the test's to end, or "": it comes
// from a package function that returns what a package-level variable
// holds (Default(), a get-or-create cache), or from a method of such a
// value that returns what it holds. Other tests use it after this one, and
// closing it breaks them, whether or not a second end is harmless.
func (c *checker) shared(s *site) string {
	if v := match.Root(c.info, s.call.Fun); v != nil && match.IsPackageLevel(v) {
		if _, ok := v.Type().Underlying().(*types.Signature); ok {
			// var Default = sync.OnceValue(func() *Pool { ... })
			return fmt.Sprintf("%s is a function kept in a package-level variable (sync.OnceValue and the like), which may return the same value to every test, and %s breaks the next", types.ExprString(s.call.Fun), endGerund(s.lc.method, s.v.Name()))
		}
	}
	fn := match.Callee(c.info, s.call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return ""
	}
	if !c.visible(fn) {
		// A body out of sight: a name that says it hands out the
		// process's instance is taken at its word.
		if fn.Type().(*types.Signature).Recv() == nil && sharedName(fn.Name()) {
			return fmt.Sprintf("%s is named like an accessor of a value the package shares (the analysis cannot see its body): other tests may use it after this one, and %s breaks them", calleeName(c.info, s.call), endGerund(s.lc.method, s.v.Name()))
		}
		return ""
	}
	name := calleeName(c.info, s.call)
	if fn.Type().(*types.Signature).Recv() == nil {
		if ev := c.held(fn, map[*types.Func]bool{}, 0, nil); ev != "" {
			return fmt.Sprintf("%s returns a value the package keeps and shares (%s): other tests use it after this one, and %s breaks them", name, ev, endGerund(s.lc.method, s.v.Name()))
		}
		return ""
	}
	// A method of a package-level value, or of a value a package
	// function shares, that returns what its receiver holds.
	sel, ok := ast.Unparen(s.call.Fun).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	root := match.Root(c.info, sel.X)
	if root == nil {
		return ""
	}
	global := match.IsPackageLevel(root)
	if !global {
		if def := c.defCall(root); def != nil {
			if g := match.Callee(c.info, def); g != nil && g.Pkg() != nil && c.visible(g) && g.Type().(*types.Signature).Recv() == nil && c.held(g, map[*types.Func]bool{}, 0, nil) != "" {
				global = true
			}
		}
	}
	if !global {
		return ""
	}
	fd := c.decls[fn.Origin()]
	var recv *types.Var
	if fd != nil && fd.Recv != nil && len(fd.Recv.List) == 1 && len(fd.Recv.List[0].Names) == 1 {
		recv, _ = c.info.Defs[fd.Recv.List[0].Names[0]].(*types.Var)
	}
	if ev := c.held(fn, map[*types.Func]bool{}, 0, recv); ev != "" {
		return fmt.Sprintf("%s returns what %s, a value the package shares, holds (%s): other tests use it after this one, and %s breaks them", name, types.ExprString(sel.X), ev, endGerund(s.lc.method, s.v.Name()))
	}
	return ""
}

// sharedName reports whether a package function's name says it returns
// a value the package shares: Default, DefaultClient, Global, Shared,
// Instance, Singleton.
func sharedName(name string) bool {
	for _, p := range []string{"Default", "Global", "Shared", "Instance", "Singleton"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func endGerund(method, name string) string {
	return fmt.Sprintf("calling %s.%s at cleanup", name, method)
}

// held returns the code by which fn returns what a package-level variable
// (or its receiver recv, when given) already holds: return def, c :=
// cache[name] ... return c, directly or through a function it returns.
func (c *checker) held(fn *types.Func, seen map[*types.Func]bool, depth int, recv *types.Var) string {
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || seen[fn.Origin()] || depth > maxKeepDepth {
		return ""
	}
	seen[fn.Origin()] = true
	keeper := func(e ast.Expr) bool {
		v := match.Root(c.info, e)
		return v != nil && (recv != nil && v == recv || match.IsPackageLevel(v))
	}
	// Locals that take what a keeper holds: c := cache[name], c = def.
	takes := map[*types.Var]string{}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok {
			return true
		}
		for i, l := range as.Lhs {
			id, ok := l.(*ast.Ident)
			if !ok {
				continue
			}
			v, _ := c.info.ObjectOf(id).(*types.Var)
			if v == nil || match.IsPackageLevel(v) || v == recv {
				continue
			}
			var r ast.Expr
			switch {
			case len(as.Rhs) == len(as.Lhs):
				r = as.Rhs[i]
			case len(as.Rhs) == 1 && i == 0:
				r = as.Rhs[0] // c, ok := cache[name]
			}
			if r != nil && keeper(r) {
				takes[v] = short(l) + " := " + short(r)
			}
		}
		return true
	})
	for _, e := range c.returnedValues(fd.Body) {
		switch x := e.(type) {
		case *ast.Ident:
			if v, ok := c.info.Uses[x].(*types.Var); ok && takes[v] != "" {
				return takes[v]
			}
		case *ast.CallExpr:
			if g := match.Callee(c.info, x); g != nil && g.Type().(*types.Signature).Recv() == nil {
				if ev := c.held(g, seen, depth+1, nil); ev != "" {
					return ev
				}
			}
			continue
		}
		if keeper(e) {
			return "returns " + short(e)
		}
	}
	return ""
}

// observedLater says why ending the value at cleanup may change what a
// check made after the test body sees, or "": the cleanup runs before
// the cleanups registered earlier (LIFO), and the value was given (made
// with, or handed through one of its methods) something such a cleanup
// may check: a value made by a call given the test's t (a mock whose
// constructor registers its expectation check, gomock.NewController(t))
// or by one given such a value, or a variable an earlier t.Cleanup
// function reads. A Close that flushes or reports once more then runs
// before the check: the original never ran it, so the check saw the state
// without it. Values of the standard library call no test code when they
// end; their other side, which the code under test may hold, is peerSees'.
func (c *checker) observedLater(s *site) string {
	if isStdType(s.v.Type()) {
		return ""
	}
	// watched: variables made, before the value, by a call given t (or
	// given a watched variable), and those an earlier t.Cleanup reads, in
	// the test and, for a subtest, in the tests enclosing it (their
	// cleanups run after the subtest's).
	watched := map[*types.Var]string{}
	givenWatched := func(call *ast.CallExpr) (string, bool) {
		for _, a := range call.Args {
			if match.IsNamed(c.info.TypeOf(a), "testing", "T", "B", "F", "TB") {
				return "", true
			}
			if v := match.Root(c.info, a); v != nil && watched[v] != "" {
				return watched[v], true
			}
		}
		return "", false
	}
	type making struct {
		lhs  []*ast.Ident
		call *ast.CallExpr
	}
	var makings []making
	made := func(lhs []*ast.Ident, call *ast.CallExpr) {
		via, ok := givenWatched(call)
		if !ok || via == "" && c.plainCall(call) {
			// A plain call registers no check with a t it is given,
			// but what it makes from a watched value leads to it (a
			// server made with the handler an earlier cleanup reads;
			// red team batch 34, logship).
			return
		}
		for _, id := range lhs {
			if v, ok := c.info.ObjectOf(id).(*types.Var); ok && watched[v] == "" {
				if via == "" {
					via = fmt.Sprintf("%s is given the test's t and may register a check with t.Cleanup", calleeName(c.info, call))
				}
				watched[v] = via
			}
		}
	}
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if n == nil || n.Pos() >= s.stmt.Pos() {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return within(s.stmt, n)
		case *ast.ValueSpec:
			if len(n.Values) == 1 {
				if call, ok := ast.Unparen(n.Values[0]).(*ast.CallExpr); ok {
					makings = append(makings, making{n.Names, call})
					made(n.Names, call)
				}
			}
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Cleanup" && match.IsNamed(c.info.TypeOf(sel.X), "testing", "T", "B", "F", "TB") && len(n.Args) == 1 {
				ast.Inspect(n.Args[0], func(m ast.Node) bool {
					if id, ok := m.(*ast.Ident); ok {
						if v, ok := c.info.Uses[id].(*types.Var); ok && !match.IsPackageLevel(v) && watched[v] == "" {
							watched[v] = fmt.Sprintf("a t.Cleanup registered before it reads %s", v.Name())
						}
					}
					return true
				})
			}
		case *ast.AssignStmt:
			if len(n.Rhs) != 1 {
				return true
			}
			if call, ok := ast.Unparen(n.Rhs[0]).(*ast.CallExpr); ok {
				var lhs []*ast.Ident
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						lhs = append(lhs, id)
					}
				}
				makings = append(makings, making{lhs, call})
				made(lhs, call)
			}
		}
		return true
	})
	// A value made before a cleanup came to read what it was made from
	// (the server made with the handler, then the cleanup reading the
	// handler) leads there too: follow the makings until nothing more
	// is watched.
	for n := -1; n != len(watched); {
		n = len(watched)
		for _, m := range makings {
			made(m.lhs, m.call)
		}
	}
	c.readAfterSubtest(s, watched)
	// A subtest's cleanups run when it ends, before the enclosing test's
	// code after t.Run (and before the next iteration's subtest, when
	// t.Run is in a loop): what the method writes to package-level state
	// (a default gateway's count) that code may read, though the value
	// was never handed to it.
	if after := c.codeAfterSubtest(s); after != "" && s.lc.fn != nil {
		if g := c.globalsOf(s.lc.fn, map[*types.Func]bool{}, 0); g != "" {
			return fmt.Sprintf("a cleanup's %s.%s would run when the subtest ends, before %s, and %s reaches the package-level %s, which that code may read: the original never ran it", s.v.Name(), s.lc.method, after, s.lc.method, g)
		}
	}
	// A check registered earlier may read package-level state (a default
	// transport's counters, a sink): what the method writes there runs
	// before the check too, though the value was never handed it.
	if reg := c.registeredBefore(s); reg != "" && s.lc.fn != nil {
		if g := c.globalsOf(s.lc.fn, map[*types.Func]bool{}, 0); g != "" {
			return fmt.Sprintf("a cleanup's %s.%s would run before the checks registered earlier (%s), and %s reaches the package-level %s, which such a check may read: the original never ran it", s.v.Name(), s.lc.method, reg, s.lc.method, g)
		}
	}
	if len(watched) == 0 {
		return ""
	}
	// What the value was given: the arguments of the call that made it
	// and of the calls of its methods.
	out := ""
	check := func(call *ast.CallExpr) {
		for _, a := range call.Args {
			ast.Inspect(a, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok && out == "" {
					if v, ok := c.info.Uses[id].(*types.Var); ok && watched[v] != "" {
						out = fmt.Sprintf("a cleanup's %s.%s would run before the checks made after it (cleanups registered earlier run later), and %s is given %s (%s): what %s does to it (a flush, a last call) may change what they see, and the original never ran it", s.v.Name(), s.lc.method, s.v.Name(), v.Name(), watched[v], s.lc.method)
					}
				}
				return out == ""
			})
		}
	}
	check(s.call)
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && out == "" {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.Root(c.info, sel.X) == s.v {
				check(call)
			}
		}
		return out == ""
	})
	return out
}

// plainCall reports whether call registers no cleanup though it may be
// given t: a method of the testing types (t.TempDir, whose cleanup
// removes a directory, is no check) or an assertion.
func (c *checker) plainCall(call *ast.CallExpr) bool {
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.IsNamed(c.info.TypeOf(sel.X), "testing", "T", "B", "F", "TB") {
		return true
	}
	fn := match.Callee(c.info, call)
	return fn != nil && fn.Pkg() != nil && match.IsAssertion(fn.Pkg().Path(), fn.Name())
}

// waitsForRequests says why ending an httptest.Server at cleanup may
// hang, or "": Close waits for the requests it serves, and the test
// leaves a response open (its Body never closed, or the response
// dropped), so a handler that streams until the client goes away never
// returns.
func (c *checker) waitsForRequests(s *site) string {
	if !match.IsNamed(s.v.Type(), "net/http/httptest", "Server") {
		return ""
	}
	out := ""
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || out != "" || len(stack) == 0 {
			return out == ""
		}
		sig, ok := c.info.TypeOf(call.Fun).(*types.Signature)
		if !ok || sig.Results().Len() == 0 || !match.IsNamed(sig.Results().At(0).Type(), "net/http", "Response") {
			return true
		}
		as, ok := stack[len(stack)-1].(*ast.AssignStmt)
		var v *types.Var
		if ok && len(as.Rhs) == 1 {
			if id, ok := as.Lhs[0].(*ast.Ident); ok {
				v, _ = c.info.ObjectOf(id).(*types.Var)
			}
		}
		if v == nil || !c.bodyClosed(v) {
			out = fmt.Sprintf("%s.Close waits for the requests it serves, and the response of %s is never closed: a handler that streams until the client goes away would hang the cleanup (close resp.Body first, or end the server by hand)", s.v.Name(), calleeName(c.info, call))
		}
		return out == ""
	})
	return out
}

// bodyClosed reports whether the test closes resp.Body or hands resp (or
// its Body) to other code that may close it.
func (c *checker) bodyClosed(resp *types.Var) bool {
	found := false
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || found || c.info.Uses[id] != types.Object(resp) || len(stack) == 0 {
			return !found
		}
		p := stack[len(stack)-1]
		if call, ok := p.(*ast.CallExpr); ok && !c.nonOwning(call) {
			found = true // handed to a helper: checkResp(t, resp)
		}
		sel, ok := p.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Body" || len(stack) < 2 {
			return true
		}
		switch q := stack[len(stack)-2].(type) {
		case *ast.SelectorExpr:
			if q.Sel.Name == "Close" {
				found = true
			}
		case *ast.CallExpr:
			// io.Copy(io.Discard, resp.Body) reads it to the end, but a
			// stream has none; only a function that is not a reader may
			// close it.
			if fn := match.Callee(c.info, q); fn != nil && fn.Pkg() != nil && !match.IsStd(fn.Pkg().Path()) && !c.nonOwning(q) {
				found = true
			}
		}
		return !found
	})
	return found
}

// readAfterSubtest marks, when the value is made in a subtest (a function
// literal given to t.Run), the variables of the enclosing test the
// subtest captures and the enclosing test reads after t.Run returns: the
// subtest's cleanups have run by then, so a check there sees what the
// value's end did (a batcher's flush into a sink the parent counts).
func (c *checker) readAfterSubtest(s *site, watched map[*types.Var]string) {
	var lit *ast.FuncLit
	var run *ast.CallExpr
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		if n.Pos() > s.stmt.Pos() || n.End() < s.stmt.End() {
			return false
		}
		if l, ok := n.(*ast.FuncLit); ok && len(stack) > 0 {
			if call, ok := stack[len(stack)-1].(*ast.CallExpr); ok {
				if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" && match.IsNamed(c.info.TypeOf(sel.X), "testing", "T", "B", "F", "TB") {
					lit, run = l, call
				}
			}
		}
		return true
	})
	if lit == nil {
		return
	}
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		v, ok := c.info.Uses[id].(*types.Var)
		if !ok || match.IsPackageLevel(v) || lit.Pos() <= v.Pos() && v.Pos() < lit.End() || watched[v] != "" || !c.readAfter(v, run.End()) {
			return true
		}
		watched[v] = fmt.Sprintf("the test reads %s after the subtest, whose cleanups have run by then", v.Name())
		return true
	})
}

// readAfter reports whether the test function mentions v after pos.
func (c *checker) readAfter(v *types.Var, pos token.Pos) bool {
	found := false
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Pos() > pos && c.info.Uses[id] == types.Object(v) {
			found = true
		}
		return !found
	})
	return found
}

// endWaits says why the cleanup's end of s may wait for ever, or "": a
// lifecycle method of the code under test that waits (for its goroutine
// to end, on a channel, a WaitGroup, a mutex the code holds) waits on the
// state of that code. Under a bug that wedges it (a loop stuck on a
// send, a lock never released) the cleanup would hang the test binary to
// its timeout, where the original failed at its check: a caught bug
// becomes a hang. Values of the standard library wait on their own
// state only.
func (c *checker) endWaits(s *site) string {
	if isStdType(s.v.Type()) || s.lc.fn == nil || s.lc.fn.Pkg() == nil || match.IsStd(s.lc.fn.Pkg().Path()) {
		return ""
	}
	// A lock Close takes counts: the test's own calls of the value take
	// it too, but after a bug wedges the code holding it the test fails
	// at its check (t.Fatal) and only the cleanup blocks. The standard
	// library's resources Close ends (a file, a listener) and a
	// sync.Once around it do not wait on the code under test.
	waits := false
	c.waitAt = ""
	if c.decls[s.lc.fn.Origin()] != nil {
		c.locksFree = true
		waits = c.bodyWaits(s.lc.fn, map[*types.Func]bool{}, 1)
		c.locksFree = false
	} else if sum := c.summaryOf(match.Callee(c.info, s.call)); sum != nil {
		// Another package's: its summary tells whether the method ends
		// a goroutine the constructor starts, which it may wait for. An
		// interface value's method is unproven already (cleanupFix).
		for _, e := range sum.Effects {
			if e.Kind == effect.GoroutineEnds && e.Ends == s.lc.method {
				waits = true
			}
		}
	}
	if !waits {
		return ""
	}
	at := "its goroutine, a channel, a lock it holds"
	if c.waitAt != "" {
		at = c.waitAt
	}
	return fmt.Sprintf("%s.%s may wait on the state of the code under test (%s); under a bug that wedges that code a cleanup would hang the test to its timeout instead of failing at its check: end it by hand with a bounded wait", s.v.Name(), s.lc.method, at)
}

// registeredBefore names a call before s that may register a check run at
// the test's end: a t.Cleanup, or a call given the test's t (a helper
// such as expectSent(t, 1)), or "".
func (c *checker) registeredBefore(s *site) string {
	out := ""
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if n == nil || out != "" || n.Pos() >= s.stmt.Pos() {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return within(s.stmt, n)
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Cleanup" && match.IsNamed(c.info.TypeOf(sel.X), "testing", "T", "B", "F", "TB") {
				out = fmt.Sprintf("the t.Cleanup at line %d", c.pass.Fset.Position(n.Pos()).Line)
				return false
			}
			if c.plainCall(n) {
				return true
			}
			for _, a := range n.Args {
				if match.IsNamed(c.info.TypeOf(a), "testing", "T", "B", "F", "TB") {
					out = fmt.Sprintf("%s at line %d is given the test's t and may register one with t.Cleanup", calleeName(c.info, n), c.pass.Fset.Position(n.Pos()).Line)
					return false
				}
			}
		}
		return true
	})
	return out
}

// globalsOf names a package-level variable of the code under test that fn
// (a function of the package, or one it calls) uses, or "". A function
// out of sight is not followed: the cases that matter are the package's
// own sinks.
func (c *checker) globalsOf(fn *types.Func, seen map[*types.Func]bool, depth int) string {
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || seen[fn.Origin()] || depth > maxKeepDepth {
		return ""
	}
	seen[fn.Origin()] = true
	out := ""
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if out != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.Ident:
			if v, ok := c.info.Uses[n].(*types.Var); ok && match.IsPackageLevel(v) && v.Pkg() == fn.Pkg() {
				out = v.Name()
			}
		case *ast.CallExpr:
			if f := match.Callee(c.info, n); f != nil && f.Pkg() == fn.Pkg() {
				out = c.globalsOf(f, seen, depth+1)
			}
		}
		return out == ""
	})
	return out
}

// codeAfterSubtest says what code of the enclosing test runs after the
// subtest that holds s ends ("the test's code after t.Run at line 18"),
// or "" when s is not in a subtest or nothing follows it.
func (c *checker) codeAfterSubtest(s *site) string {
	var run *ast.CallExpr
	var loop ast.Node
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		if n.Pos() > s.stmt.Pos() || n.End() < s.stmt.End() {
			return false
		}
		if l, ok := n.(*ast.FuncLit); ok && len(stack) > 0 {
			if call, ok := stack[len(stack)-1].(*ast.CallExpr); ok {
				if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" && match.IsNamed(c.info.TypeOf(sel.X), "testing", "T", "B", "F", "TB") && len(call.Args) == 2 && call.Args[1] == ast.Expr(l) {
					run, loop = call, nil
					for _, up := range stack {
						switch up.(type) {
						case *ast.ForStmt, *ast.RangeStmt:
							loop = up
						}
					}
				}
			}
		}
		return true
	})
	if run == nil {
		return ""
	}
	line := c.pass.Fset.Position(run.Pos()).Line
	if loop != nil && loop.Pos() < run.Pos() {
		return fmt.Sprintf("the next subtest of the loop (t.Run at line %d)", line)
	}
	after := false
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if _, ok := n.(ast.Stmt); ok && n.Pos() > run.End() {
			after = true
		}
		return !after
	})
	if after {
		return fmt.Sprintf("the test's code after t.Run at line %d", line)
	}
	return ""
}
