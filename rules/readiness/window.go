package readiness

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The window hazard. The sleep was a span in which the child ran on,
// unsignalled, for the sleep's whole length; the readiness line cuts it
// short at the handler's install. Whatever the child does in the part cut
// off is seen by the test after the signal, if the test looks at the
// child then (Wait's error, the exit status, the output it gave the
// child, files). The rule reads one implementation of the code under
// test, but the test must keep failing on every bug of every other: a
// function of the code under test the child runs before its steady wait
// may, in some implementation, exit on its own in the window (a start-up
// watchdog), print or write in it, or still be at work when the signal
// comes, and the original test sees that where the rewrite cannot. So
// when the child reaches any code under test before its steady wait, and
// the test looks at the child after the signal, the site is not fixed.
// A signal no handler sees (Kill, SIGKILL) also cuts off what the child's
// own helper does after the readiness point: a handled signal waits in
// the channel while the start-up goes on, a kill does not.
//
// Code under test is any function outside the standard library and the
// package's test files; the test files' functions the helper calls are
// followed. Running the test cannot tell (it passes on the correct
// code, whose start-up the rule read): not fixed, not unproven. An aimed
// mutant (a spurious exit inside the window) would reject every such fix
// the test observes anyway, which is every useful one.

// windowChecked is the Checked entry of a fix: the hazard excluded.
const (
	windowNoCode    = "the child runs no code under test before it waits for the signal"
	windowNoLook    = "the test looks at nothing of the child after the signal"
	windowChecked   = windowNoCode + " (functions outside the standard library and the test files, which some implementation may make exit, print or write in the window the sleep gave), and does nothing between its handler and its wait that the signal could beat (printing, CPU work, starting a process)"
	windowUnchecked = windowNoLook + ", so what the child does in the window the sleep gave cannot change its outcome"
)

// windowHazard says why cutting the sleep's window short changes what the
// test sees of some implementation of the child, naming the code and the
// look and their lines; or "". checked names what the rule excluded.
func (c *checker) windowHazard(s *site, helper *ast.FuncDecl, sp span) (why, checked string) {
	look := c.looksAfter(s)
	if look == "" {
		return "", windowUnchecked
	}
	var nodes, work []ast.Node
	if sp.found {
		nodes = append(nodes, sp.before...)
		ran := sp.ran
		if sp.waited && len(ran) > 0 {
			nodes = append(nodes, c.beforeSignal(sp.wait, ran[len(ran)-1].(ast.Stmt))...)
			ran = ran[:len(ran)-1]
		}
		nodes = append(nodes, ran...)
		// Whatever the child does between the readiness point and its
		// steady wait (printing, CPU work, starting a grandchild, code of
		// the test files or under test), the signal may now beat, for
		// every implementation: the sleep let it finish. A handled
		// signal that lands mid-way may end the child before the work
		// (a negative check, "nothing reported corrupt", then passes
		// blind), or find a grandchild without its own handler yet.
		// The other cases of the steady wait's select run only when
		// what feeds them (a goroutine, code under test, a timer: each
		// checked on its own) does.
		work = append(work, ran...)
		for _, st := range sp.before {
			if g, ok := st.(*ast.GoStmt); ok {
				work = append(work, g) // runs on while the parent reads the line
			}
		}
	} else {
		// The readiness point was not followed: what runs between the
		// handler and the wait is unknown.
		return fmt.Sprintf("the rule cannot follow the child from its handler to its wait, so it cannot tell that nothing of the child runs between them, and the test looks at the child after the signal (%s): %s", look, windowKeep), ""
	}
	for _, nd := range nodes {
		if sp.wait.signalWaiter(nd) {
			continue // its code runs after the signal, as in the original
		}
		if what, at := c.codeUnderTest(nd, 0, map[*ast.FuncDecl]bool{helper: true}); what != "" {
			return c.windowReason(what, at, look), ""
		}
	}
	for _, st := range work {
		if c.writesLine(st) || sp.wait.signalWaiter(st) {
			continue // the readiness line of an earlier run; a goroutine that first waits for the signal
		}
		if what, at := c.startupWork(st); what != "" {
			how := "the signal may now land before it, or mid-way"
			if c.uncatchable(s.signal) {
				how = fmt.Sprintf("the test kills the child (%s at %s), which no handler sees, so that work is cut off", types.ExprString(s.signal), c.line(s.signal))
			}
			return fmt.Sprintf("the child goes on with its start-up after installing its handler (%s at %s) before it waits for the signal, in the window the sleep gave it; %s, for any implementation, and the test looks at the child after the signal (%s): %s", what, at, how, look, windowKeep), ""
		}
	}
	return "", windowChecked
}

// windowEarly says why the window hazard holds for a child whose handler
// is installed by code under test (n is not in a test file): the helper
// calls that code to get there. Or "".
func (c *checker) windowEarly(s *site, helper *ast.FuncDecl, n *notify) string {
	look := c.looksAfter(s)
	if look == "" {
		return ""
	}
	nodes := []ast.Node{helper.Body}
	if fd := c.enclosingDecl(n.stmt); fd != nil {
		for i, st := range helper.Body.List {
			if c.reachesDecl(st, fd, 0, map[*ast.FuncDecl]bool{}) {
				nodes = nil
				for _, b := range helper.Body.List[:i+1] {
					nodes = append(nodes, b)
				}
				break
			}
		}
	}
	for _, nd := range nodes {
		if what, at := c.codeUnderTest(nd, 0, map[*ast.FuncDecl]bool{helper: true}); what != "" {
			return c.windowReason(what, at, look)
		}
	}
	return ""
}

// windowReason words the window hazard for code under test.
func (c *checker) windowReason(what, at, look string) string {
	return fmt.Sprintf("the child runs code under test before it waits for the signal (%s at %s), in the window the sleep gave it, and the test looks at the child after the signal (%s): some implementation of that code may exit on its own in the window, print or write in it, or still be at work when the signal comes, and %s", what, at, look, windowKeep)
}

// windowKeep is the end of the window hazard's reasons.
const windowKeep = "the readiness line would cut that window short, so the test would no longer see it, on a bug the original catches or on correct code; keep the sleep"

// beforeSignal returns the parts of the steady wait st that may run
// before the signal comes: none of <-c, v := <-c or wg.Wait(), the cases
// of a select other than the signal's, the whole body of a loop whose
// select has such a case, and all of any other statement (a call that
// waits inside).
func (c *checker) beforeSignal(w *walker, st ast.Stmt) []ast.Node {
	onSignal := func(cc *ast.CommClause) bool {
		_, ok := w.mentions(cc.Comm)
		return cc.Comm != nil && ok
	}
	others := func(sel *ast.SelectStmt) []ast.Node {
		var out []ast.Node
		for _, cl := range sel.Body.List {
			if cc := cl.(*ast.CommClause); !onSignal(cc) {
				out = append(out, cc)
			}
		}
		return out
	}
	switch x := st.(type) {
	case *ast.SelectStmt:
		return others(x)
	case *ast.RangeStmt:
		return nil // its body runs once a signal came
	case *ast.ForStmt:
		if len(x.Body.List) > 0 {
			if sel, ok := x.Body.List[0].(*ast.SelectStmt); ok {
				if len(others(sel)) == 0 {
					return nil
				}
				// Another case may come first and loop around.
				out := others(sel)
				for _, b := range x.Body.List[1:] {
					out = append(out, b)
				}
				return out
			}
			if w.blockingWait(x.Body.List[0]) {
				return nil
			}
		}
		return []ast.Node{x}
	case *ast.ExprStmt, *ast.AssignStmt, *ast.ReturnStmt:
		if w.blockingWait(st) {
			return nil
		}
	}
	return []ast.Node{st}
}

// codeUnderTest returns the first function of the code under test that n
// calls or names (a function outside the standard library and the
// package's test files; a call of a function value, which may be one),
// following the test files' functions a few calls deep; and where.
// Deferred calls run after the signal and are skipped.
func (c *checker) codeUnderTest(n ast.Node, depth int, seen map[*ast.FuncDecl]bool) (what, at string) {
	ast.Inspect(n, func(m ast.Node) bool {
		if what != "" {
			return false
		}
		switch m := m.(type) {
		case *ast.DeferStmt:
			return false
		case *ast.CallExpr:
			if tv, ok := c.info.Types[m.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
				return true
			}
			if _, ok := ast.Unparen(m.Fun).(*ast.FuncLit); ok {
				return true
			}
			if match.Callee(c.info, m) == nil && !c.stdValue(m.Fun) {
				what, at = "a call of the function value "+types.ExprString(m.Fun), c.line(m)
				return false
			}
		case *ast.Ident:
			fn, ok := c.info.Uses[m].(*types.Func)
			if !ok || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
				return true
			}
			fd := c.decls[fn.Origin()]
			if fd == nil || fd.Body == nil || !c.inTestFile(fd) {
				what, at = match.PkgFuncName(fn), c.line(m)
				return false
			}
			if seen[fd] {
				return true
			}
			if depth >= maxDepth {
				what, at = fd.Name.Name+", deeper than the rule follows", c.line(m)
				return false
			}
			seen[fd] = true
			if w, a := c.codeUnderTest(fd.Body, depth+1, seen); w != "" {
				what, at = w+", through "+fd.Name.Name, a
			}
			return what == ""
		}
		return true
	})
	return what, at
}

// stdValue reports whether the function value fun is a local variable
// that only results of standard functions are assigned to: the cancel of
// context.WithCancel, the stop of signal.NotifyContext.
func (c *checker) stdValue(fun ast.Expr) bool {
	id, ok := ast.Unparen(fun).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := c.info.Uses[id].(*types.Var)
	if !ok || match.IsPackageLevel(v) || v.IsField() {
		return false
	}
	f := c.fileOf(id)
	if f == nil {
		return false
	}
	std, seen := true, false
	check := func(r ast.Expr) {
		call, ok := ast.Unparen(r).(*ast.CallExpr)
		fn := (*types.Func)(nil)
		if ok {
			fn = match.Callee(c.info, call)
		}
		seen = true
		std = std && fn != nil && fn.Pkg() != nil && match.IsStd(fn.Pkg().Path())
	}
	ast.Inspect(f, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.AssignStmt:
			for i, l := range m.Lhs {
				if lid, ok := ast.Unparen(l).(*ast.Ident); ok && c.info.ObjectOf(lid) == types.Object(v) {
					switch {
					case len(m.Rhs) == 1:
						check(m.Rhs[0])
					case i < len(m.Rhs):
						check(m.Rhs[i])
					}
				}
			}
		case *ast.ValueSpec:
			for i, name := range m.Names {
				if c.info.Defs[name] == types.Object(v) {
					switch {
					case len(m.Values) == 1:
						check(m.Values[0])
					case i < len(m.Values):
						check(m.Values[i])
					default:
						std = false // declared, assigned elsewhere or nil
					}
				}
			}
		case *ast.UnaryExpr:
			if xid, ok := ast.Unparen(m.X).(*ast.Ident); ok && m.Op == token.AND && c.info.Uses[xid] == types.Object(v) {
				std = false // its address is taken
			}
		}
		return true
	})
	return std && seen
}

// inTestFile reports whether fd is declared in a _test.go file of the
// package: test code, the same for every implementation of the code under
// test.
func (c *checker) inTestFile(fd *ast.FuncDecl) bool {
	f := c.fileOf(fd)
	return f != nil && strings.HasSuffix(c.pass.Fset.File(f.Pos()).Name(), "_test.go")
}

// anyWork returns the first call or go statement in st (work of the
// child's start-up), and where; "" when st only declares or assigns.
func (c *checker) anyWork(st ast.Node) (what, at string) {
	return c.firstWork(st, nil)
}

// startupWork is anyWork without the calls that do nothing a test can
// see (context.WithCancel, signal.Notify, a WaitGroup's Add), and where.
func (c *checker) startupWork(st ast.Node) (what, at string) {
	return c.firstWork(st, func(call *ast.CallExpr) bool {
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil {
			return false
		}
		return fn.Pkg().Path() == "context" || fn.Pkg().Path() == "os/signal" || match.IsMethod(c.info, call, "sync", "Add")
	})
}

// firstWork returns the first go statement in st, or call that is not a
// conversion, a builtin or quiet (when quiet is set), and where. Deferred
// calls run later: they are not start-up work.
func (c *checker) firstWork(st ast.Node, quiet func(*ast.CallExpr) bool) (what, at string) {
	ast.Inspect(st, func(m ast.Node) bool {
		if what != "" {
			return false
		}
		switch m := m.(type) {
		case *ast.DeferStmt:
			return false
		case *ast.GoStmt:
			what, at = "a goroutine", c.line(m)
		case *ast.CallExpr:
			if tv, ok := c.info.Types[m.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
				return true
			}
			if quiet != nil && quiet(m) {
				return true
			}
			what, at = types.ExprString(m.Fun), c.line(m)
		}
		return what == ""
	})
	return what, at
}

// signalWaiter reports whether st starts a goroutine whose function first
// blocks until the signal: go func() { <-c; ... }(). Its work runs after
// the signal, as in the original.
func (w *walker) signalWaiter(st ast.Node) bool {
	g, ok := st.(*ast.GoStmt)
	if !ok || len(g.Call.Args) != 0 {
		return false
	}
	lit, ok := ast.Unparen(g.Call.Fun).(*ast.FuncLit)
	return ok && len(lit.Body.List) > 0 && w.blockingWait(lit.Body.List[0])
}

// writesLine reports whether st names UNFLAKE_READY_FD: the readiness
// line a fix (or a person) wrote.
func (c *checker) writesLine(st ast.Node) bool {
	found := false
	ast.Inspect(st, func(m ast.Node) bool {
		if e, ok := m.(ast.Expr); ok && !found {
			if v, ok := match.ConstString(c.info, e); ok && v == envVar {
				found = true
			}
		}
		return !found
	})
	return found
}

// uncatchable reports whether the signal call sends what no handler sees:
// Kill(), or Signal of os.Kill or SIGKILL.
func (c *checker) uncatchable(call *ast.CallExpr) bool {
	sel := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if sel.Sel.Name == "Kill" || len(call.Args) != 1 {
		return true
	}
	if v := c.info.Types[call.Args[0]].Value; v != nil {
		return v.String() == "9"
	}
	var id *ast.Ident
	switch x := ast.Unparen(call.Args[0]).(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	}
	obj := c.info.Uses[id]
	return obj != nil && obj.Pkg() != nil && obj.Pkg().Path() == "os" && obj.Name() == "Kill"
}

// looksAfter returns where the test looks at the child from the signal
// on ("" when it surely does not): the signal's result used, any
// statement after the signal but further signals and a Wait whose result
// is dropped, a loop around the signal, a deferred call or a cleanup of
// the function, or a function that returns to a caller that may look.
func (c *checker) looksAfter(s *site) string {
	if !c.isTestFunc(c.fn) {
		return c.fn.Name.Name + " returns to its caller, which may look at the child"
	}
	var sigStmt ast.Stmt
	for _, st := range s.list {
		if st.Pos() <= s.signal.Pos() && s.signal.End() <= st.End() {
			sigStmt = st
		}
	}
	if es, ok := sigStmt.(*ast.ExprStmt); !ok || ast.Unparen(es.X) != ast.Expr(s.signal) {
		if _, ok := sigStmt.(*ast.ExprStmt); !ok {
			return "the statement holding the signal at " + c.line(sigStmt)
		}
		return "the signal's result at " + c.line(sigStmt)
	}
	// A loop around the signal runs its body again: what comes before
	// the signal in it may look at this child.
	var loop ast.Node
	match.WithStack(c.fn.Body, func(m ast.Node, stack []ast.Node) bool {
		if loop != nil || m.Pos() > sigStmt.Pos() || m.End() < sigStmt.End() {
			return false
		}
		switch m.(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			if m != ast.Node(sigStmt) {
				loop = m
			}
		}
		return m != ast.Node(sigStmt)
	})
	if loop != nil {
		return "the loop at " + c.line(loop) + ", which runs again"
	}
	// A check between the sleep and the signal looks at what the child
	// did in the window too: the readiness line moves it from the
	// sleep's end to the handler's install, before what the child does
	// later in the window (a watch's first answer that a bug acts on:
	// red team batch 15, blockingwatch).
	if s.sleep >= 0 {
		for _, st := range s.list[s.sleep+1:] {
			if st.Pos() >= sigStmt.Pos() {
				break
			}
			return "the statement at " + c.line(st) + ", between the sleep and the signal"
		}
	}
	rest, _ := after(c.fn.Body, sigStmt)
	for _, st := range rest {
		if !c.dropsChild(st, s.cmd) {
			return "the statement at " + c.line(st)
		}
	}
	var at string
	ast.Inspect(c.fn.Body, func(m ast.Node) bool {
		if at != "" {
			return false
		}
		switch m := m.(type) {
		case *ast.DeferStmt:
			at = "a deferred call at " + c.line(m)
		case *ast.CallExpr:
			if match.IsMethod(c.info, m, "testing", "Cleanup") {
				at = "a cleanup at " + c.line(m)
			}
		}
		return at == ""
	})
	if at == "" {
		at = c.laterLook(s)
	}
	return at
}

// dropsChild reports whether st only signals cmd again or waits for it,
// dropping the result: cmd.Wait(), _ = cmd.Wait(), cmd.Process.Kill().
func (c *checker) dropsChild(st ast.Stmt, cmd *types.Var) bool {
	var x ast.Expr
	switch st := st.(type) {
	case *ast.ExprStmt:
		x = st.X
	case *ast.AssignStmt:
		if len(st.Lhs) != 1 || len(st.Rhs) != 1 || st.Tok != token.ASSIGN {
			return false
		}
		if id, ok := ast.Unparen(st.Lhs[0]).(*ast.Ident); !ok || id.Name != "_" {
			return false
		}
		x = st.Rhs[0]
	default:
		return false
	}
	call, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok {
		return false
	}
	if match.IsMethod(c.info, call, "os/exec", "Wait") {
		return c.cmdVar(call.Fun) == cmd
	}
	return c.signalIn(st, cmd) == call
}
