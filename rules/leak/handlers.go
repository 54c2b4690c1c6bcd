package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// The standard library's servers are no standard ends when they wait for
// the code that serves their requests: httptest.Server.Close blocks until
// every outstanding request has completed, and http.Server.Shutdown until
// every connection is idle, that is, until the handlers return. The
// handlers are the package's code, and the rule reads one implementation
// of it: under a bug that wedges a handler (a blocking query whose wait
// is never armed) the added cleanup waits for ever, and the test that
// failed at its check hangs to its timeout instead; under a bug that makes
// a handler slow (one that ignores the client going away), a subtest's
// cleanup now waits for it before the enclosing test's code after t.Run,
// which in the original saw the handler still running. Running the tests
// on the correct code cannot show either (no mutant wedges a handler), so
// such a server is not fixed. A handler that is the standard library's
// (http.NotFoundHandler) or the test's own, reaching no code under test
// and waiting for nothing, ends the same in every implementation.

// handlersChecked is the Checked entry of a fix that ends a server: the
// hazard excluded.
const handlersChecked = "its handlers are the standard library's or the test's own and wait for nothing, so %s waits for no code under test"

// runsHandlers says why ending s at cleanup waits for the package's
// handlers, naming the handler and its line; or "".
func (c *checker) runsHandlers(s *site) string {
	var handler ast.Expr
	switch {
	case match.IsNamed(s.v.Type(), "net/http/httptest", "Server") && s.lc.method == "Close":
		if !match.IsPkgFunc(c.info, s.call, "net/http/httptest", "NewServer", "NewTLSServer", "NewUnstartedServer") || len(s.call.Args) != 1 {
			return fmt.Sprintf("%s.Close waits for the requests the server serves, and the rule cannot see which handler serves them: %s", s.v.Name(), handlersKeep)
		}
		handler = s.call.Args[0]
	case match.IsNamed(s.v.Type(), "net/http", "Server") && s.lc.method == "Shutdown":
		return fmt.Sprintf("%s.Shutdown waits for the requests the server serves, whose handlers the rule does not follow: %s", s.v.Name(), handlersKeep)
	default:
		return ""
	}
	// A later assignment of the handler (srv.Config.Handler = h) serves
	// instead.
	var set string
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && set == "" {
			for _, l := range a.Lhs {
				if sel, ok := ast.Unparen(l).(*ast.SelectorExpr); ok && sel.Sel.Name == "Handler" && match.Root(c.info, sel) == s.v {
					set = c.lineOf(a)
				}
			}
		}
		return set == ""
	})
	if set != "" {
		return fmt.Sprintf("%s.Close waits for the requests the server serves, and the test sets its handler at %s, which the rule does not follow: %s", s.v.Name(), set, handlersKeep)
	}
	what := c.ownHandler(handler, map[*types.Func]bool{}, 0)
	if what == "" {
		if client := c.codeClient(s); client != "" {
			return fmt.Sprintf("%s.Close waits for the requests the server serves, and %s; %s", s.v.Name(), client, handlersKeep)
		}
		return ""
	}
	why := fmt.Sprintf("%s.Close waits for the requests the server serves, and %s: a bug that wedges a handler would hang the cleanup to the test's timeout instead of failing at its check", s.v.Name(), what)
	if after := c.codeAfterSubtest(s); after != "" {
		why += fmt.Sprintf(", and one that makes a handler slow would have it finish when the subtest ends, before %s, which in the original saw it still running", after)
	} else if reg := c.registeredBefore(s); reg != "" {
		why += fmt.Sprintf(", and one that makes a handler slow would have it finish before the checks registered earlier (%s), which in the original saw it still running", reg)
	}
	return why + "; " + handlersKeep
}

// handlersKeep is the end of the handler hazard's reasons.
const handlersKeep = "end the server by hand where the test is done with it, with a bounded wait"

// ownHandler says how the handler h may run code under test or wait
// ("its handler st.Handler() at kv_test.go:13 is code under test"), or
// "" when it is the standard library's, or the test's own and waits for
// nothing.
func (c *checker) ownHandler(h ast.Expr, seen map[*types.Func]bool, depth int) string {
	h = ast.Unparen(h)
	at := c.lineOf(h)
	if id, ok := h.(*ast.Ident); ok && id.Name == "nil" {
		if _, ok := c.info.Uses[id].(*types.Nil); ok {
			return fmt.Sprintf("its handler is http.DefaultServeMux (nil at %s), where any package may register handlers", at)
		}
	}
	switch x := h.(type) {
	case *ast.FuncLit:
		return c.handlerBody(x.Body, c.paramObjs(x.Type), at, seen, depth)
	case *ast.CallExpr:
		if tv, ok := c.info.Types[x.Fun]; ok && tv.IsType() && len(x.Args) == 1 {
			return c.ownHandler(x.Args[0], seen, depth) // http.HandlerFunc(f)
		}
		fn := match.Callee(c.info, x)
		if fn == nil || fn.Pkg() == nil || !c.isStd(fn.Pkg()) {
			return fmt.Sprintf("its handler %s at %s is code under test", types.ExprString(h), at)
		}
		// A standard constructor (http.NotFoundHandler, http.StripPrefix)
		// serves with what it is given.
		for _, a := range x.Args {
			if handlerLike(c.info.TypeOf(a)) {
				if why := c.ownHandler(a, seen, depth); why != "" {
					return why
				}
			}
		}
		return ""
	case *ast.Ident, *ast.SelectorExpr:
		if fn, ok := c.info.Uses[identOfExpr(x)].(*types.Func); ok {
			fd := c.decls[fn.Origin()]
			if fd == nil || fd.Body == nil || !strings.HasSuffix(c.pass.Fset.Position(fd.Pos()).Filename, "_test.go") {
				return fmt.Sprintf("its handler %s at %s is code under test", types.ExprString(h), at)
			}
			if seen[fn.Origin()] {
				return ""
			}
			seen[fn.Origin()] = true
			return c.handlerBody(fd.Body, c.paramObjs(fd.Type), at, seen, depth)
		}
	}
	return fmt.Sprintf("its handler %s at %s may be code under test (the rule does not follow it)", types.ExprString(h), at)
}

// handlerBody says how a handler of the test's own (body, with its
// parameters params) may run code under test or wait, or "". The standard
// library's calls do not wait, but a sleep, a WaitGroup's or Cond's Wait
// and an interface method of anything but the handler's own writer and
// request (which may hold code under test); a function of the test files
// is followed.
func (c *checker) handlerBody(body *ast.BlockStmt, params map[types.Object]bool, at string, seen map[*types.Func]bool, depth int) string {
	if depth > maxKeepDepth {
		return fmt.Sprintf("its handler at %s calls deeper than the rule follows", at)
	}
	// Code under test first: it names the hazard best.
	out := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && out == "" {
			if e := c.underTest(call, map[*types.Func]bool{}); e != nil {
				out = fmt.Sprintf("its handler at %s calls %s at %s, code under test", at, types.ExprString(e), c.lineOf(call))
			}
		}
		return out == ""
	})
	if out != "" {
		return out
	}
	waits := func(what string, n ast.Node) string {
		return fmt.Sprintf("its handler at %s waits (%s at %s), for what a bug may never give", at, what, c.lineOf(n))
	}
	ast.Inspect(body, func(n ast.Node) bool {
		if out != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.SendStmt:
			out = waits("a send on "+types.ExprString(n.Chan), n)
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				out = waits("a receive from "+types.ExprString(n.X), n)
			}
		case *ast.SelectStmt:
			out = waits("a select", n)
		case *ast.RangeStmt:
			if _, ok := types.Unalias(c.info.TypeOf(n.X)).Underlying().(*types.Chan); ok {
				out = waits("a range over "+types.ExprString(n.X), n)
			}
		case *ast.CallExpr:
			if tv, ok := c.info.Types[n.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
				return true
			}
			fn := match.Callee(c.info, n)
			if fn == nil || fn.Pkg() == nil {
				out = waits("a call of the function value "+types.ExprString(n.Fun), n)
				return false
			}
			if r := fn.Type().(*types.Signature).Recv(); r != nil && types.IsInterface(r.Type()) {
				if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
					if v := match.Root(c.info, sel.X); v != nil && params[v] {
						return true // w.Write, r.Body.Close: the handler's own request
					}
				}
				out = waits("the interface method "+types.ExprString(n.Fun), n)
				return false
			}
			if c.isStd(fn.Pkg()) {
				switch {
				case fn.Pkg().Path() == "time" && fn.Name() == "Sleep",
					fn.Pkg().Path() == "sync" && fn.Name() == "Wait":
					out = waits(types.ExprString(n.Fun), n)
				}
				return out == ""
			}
			fd := c.decls[fn.Origin()]
			if fd == nil || fd.Body == nil {
				out = waits(types.ExprString(n.Fun)+", out of sight", n)
				return false
			}
			if !seen[fn.Origin()] {
				seen[fn.Origin()] = true
				out = c.handlerBody(fd.Body, nil, at, seen, depth+1)
			}
		}
		return out == ""
	})
	return out
}

// paramObjs returns the parameters of a function type, as objects.
func (c *checker) paramObjs(ft *ast.FuncType) map[types.Object]bool {
	out := map[types.Object]bool{}
	if ft.Params == nil {
		return out
	}
	for _, f := range ft.Params.List {
		for _, n := range f.Names {
			if o := c.info.Defs[n]; o != nil {
				out[o] = true
			}
		}
	}
	return out
}

// handlerLike reports whether a value of type t may serve requests: a
// function or an interface (http.Handler).
func handlerLike(t types.Type) bool {
	if t == nil {
		return false
	}
	switch t.Underlying().(type) {
	case *types.Signature, *types.Interface:
		return true
	}
	return false
}

// identOfExpr returns the identifier e names (x or pkg.x).
func identOfExpr(e ast.Expr) *ast.Ident {
	switch x := e.(type) {
	case *ast.Ident:
		return x
	case *ast.SelectorExpr:
		return x.Sel
	}
	return nil
}

// lineOf is n's file:line.
func (c *checker) lineOf(n ast.Node) string {
	p := c.pass.Fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// codeClient says how the code under test may hold a request to the
// server s open when the test ends: the test hands it the server (its
// URL, its client, its listener) and the code starts goroutines, by
// its effect summary (a log shipper streaming one long
// POST to srv.URL until its own Close, which the test never calls: red
// team batch 21, streamship). Close then waits for that request for
// ever. "" when no such call is seen.
func (c *checker) codeClient(s *site) string {
	call, fn, _, what := c.handedToStarter(map[types.Object]bool{s.v: true})
	if call == nil {
		return ""
	}
	return fmt.Sprintf("the test hands the server to %s at %s, which %s: a request the code keeps open (a stream, a long poll) would hold the cleanup until the test's timeout", match.PkgFuncName(fn), c.lineOf(call), what)
}

// handedToStarter finds a call in the test of a function of the module
// that the test hands one of objs (in an argument) and whose effect
// summary starts goroutines: the call, the function, the name handed,
// and what the function does ("starts a goroutine that never ends").
// A call that returns when its work is done holds nothing; one that
// starts goroutines may hold what it was handed after the test.
func (c *checker) handedToStarter(objs map[types.Object]bool) (*ast.CallExpr, *types.Func, string, string) {
	var (
		found      *ast.CallExpr
		foundFn    *types.Func
		name, what string
	)
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found != nil {
			return found == nil
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
			return true
		}
		handed := ""
		for _, a := range call.Args {
			ast.Inspect(a, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok && objs[c.info.Uses[id]] {
					handed = id.Name
				}
				return handed == ""
			})
		}
		sum := c.pass.Effects.Of(fn)
		if handed == "" || sum == nil {
			return true
		}
		for _, e := range sum.Effects {
			if e.Kind == effect.GoroutineForever || e.Kind == effect.GoroutineEnds {
				found, foundFn, name = call, fn, handed
				what = strings.TrimPrefix(e.Why(), match.PkgFuncName(fn)+", which ")
				return false
			}
		}
		return true
	})
	return found, foundFn, name, what
}
