package leak

import (
	"fmt"
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// A standard value's end runs only the standard library's code, but some
// standard values have another side: a connection's peer reads EOF, a
// listener's queued connections are reset, a pipe's reader sees the
// writer go, a file's watcher or lock holder sees it closed, a server's
// clients lose it. The code under test may hold that other side, through
// an address, a path or a port the rule cannot trace (an address file, a
// pool given ln.Addr().String()). The added end runs before every check
// registered earlier (a t.Cleanup, a helper given t, and for a defer the
// deferred calls before it; a helper's callers' too), so such a check (a
// server's graceful drain, a pool's Close) sees a world where the other
// side hung up, which the original, that left the value open, never
// showed it: a drain that waits for idle connections passes when the
// client has gone. observedLater checks the values of the package by
// what they were given; a standard value's other side is not reached
// through its arguments, so any earlier check counts.

// stdPeerEnds are the standard types of stdSafeEnds whose end another
// party may observe, by package path and name; a nil set admits every
// type of the package. Tickers and timers end only their own channel's
// deliveries, and an os.Root a directory handle nobody waits on: they
// have another side only when other code holds a part of them, their
// channel (partSees).
var stdPeerEnds = map[string]map[string]bool{
	"os":                {"File": true},
	"net":               nil,
	"io":                {"PipeReader": true, "PipeWriter": true},
	"net/http":          {"Server": true},
	"net/http/httptest": {"Server": true},
}

// peerChecked is the Checked entry of a fix that ends a standard value
// another party may observe: the hazard excluded.
const peerChecked = "no check registered earlier (a t.Cleanup, a helper given t, a deferred call, a caller's) calls code under test that may see the %s from the other side, and no server outlives the test (made in TestMain, init, a package-level variable or a sync.Once, the enclosing test's, a parallel test's)"

// peerSees says why ending s, a standard value another party may hold the
// other side of, would change what a check registered earlier sees, or "".
func (c *checker) peerSees(s *site) string {
	if !isStdType(s.v.Type()) || !stdPeerType(s.v.Type()) {
		return ""
	}
	how, reg := c.runsLater(s)
	if reg == "" {
		// No check of this test runs after the end, but a server that
		// outlives the test may hold the other side, and later tests
		// look at it (red team batch 19, idlemember: a hub TestMain
		// serves drops the member whose connection a cleanup closed,
		// and the next test's roster no longer holds it).
		live := c.outlivingServer(s)
		if live == "" {
			if held := c.codeHoldsSide(s); held != "" {
				return fmt.Sprintf("%s.%s at the test's end would end a %s whose other side %s: ending it wakes that goroutine after the test, and it runs during the tests after this one (a notice logged through a hook a later test set, a read of state they change), which the original, that left it blocked, never let happen; end it by hand where the test is done with it", s.v.Name(), s.lc.method, c.typeName(s.v.Type()), held)
			}
			if match.IsNamed(s.v.Type(), "os", "File") {
				g := c.backgroundGoroutine()
				if g != "" {
					g += ", which runs beside every test"
				} else if g = c.codeGoroutine(); g != "" {
					g += ", which may outlive the test that starts it (a sync.Once's, a -count rerun's)"
				}
				if g != "" {
					return fmt.Sprintf("%s.%s at the test's end is an event of the file system (a close after a write), and %s, may watch the file's directory by its path (an inotify or fsnotify watcher): it would see the close during the next test, which the original, that left the file open, never showed it; end it by hand where the test is done with it", s.v.Name(), s.lc.method, g)
				}
			}
			return ""
		}
		return fmt.Sprintf("%s.%s at the test's end would end a %s whose other side may be held by a server that outlives the test (%s): what runs on it after this test (a later test, the enclosing test, a parallel one) would see %s end, which the original, that left it open, never showed it; end it by hand where the test is done with it", s.v.Name(), s.lc.method, c.typeName(s.v.Type()), live, s.v.Name())
	}
	return fmt.Sprintf("a %s's %s.%s would run before %s, and the code under test may hold the other side of %s (a server its connection, a client its listener, a reader its pipe or file, through an address or path the rule cannot trace): it would see %s end, which the original, that left it open, never showed it; end it by hand where the test is done with it", how, s.v.Name(), s.lc.method, reg, c.typeName(s.v.Type()), s.v.Name())
}

// runsLater names what may run code under test after the end the fix
// adds for s, or reg == "": for a t.Cleanup, the checks registered
// earlier (its helper's callers' too); for a defer, the deferred calls
// before it and its callers' code after the call. how is "t.Cleanup" or
// "defer".
func (c *checker) runsLater(s *site) (how, reg string) {
	typ, _, _ := c.enclosingFunc(s.stmt)
	how = "t.Cleanup"
	if c.testParam(typ) == "" {
		// A defer: the deferred calls before it run after it, and the
		// function's callers go on (and end) after it returns.
		how = "defer"
		reg = c.deferredBefore(c.fn.Body, s.stmt)
		if reg == "" {
			reg = c.callersGoOn(c.fn, true, map[*ast.FuncDecl]bool{}, 0)
		}
	} else {
		reg = earlier(c.checkBefore(c.fn.Body, s.stmt))
		if reg == "" && !topTest(c.fn) {
			reg = c.callersGoOn(c.fn, false, map[*ast.FuncDecl]bool{}, 0)
		}
	}
	return how, reg
}

// earlier phrases what checkBefore found, or "".
func earlier(check string) string {
	if check == "" {
		return ""
	}
	return "the checks registered earlier (" + check + ")"
}

// stdPeerType reports whether t is one of stdPeerEnds.
func stdPeerType(t types.Type) bool { return inTypeSet(t, stdPeerEnds) }

// deferredBefore names a deferred call of body, before at and outside the
// function literals that do not hold at, or "": a defer added at at runs
// before it.
func (c *checker) deferredBefore(body *ast.BlockStmt, at ast.Node) string {
	out := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil || out != "" || n.Pos() >= at.Pos() {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return within(at, n)
		case *ast.DeferStmt:
			out = fmt.Sprintf("the deferred %s at %s (deferred earlier)", calleeName(c.info, n.Call), c.lineOf(n))
			return false
		}
		return true
	})
	return out
}

// callersGoOn names what runs after a cleanup (or, when deferred, a
// defer) that fd, a function of the test files, registers: in each
// caller, a check registered before the call (registeredBefore's kinds),
// and, when deferred (fd returns before its caller goes on), a deferred
// call before it or any statement after it. A use of fd other than a
// call (handed on as a value) hides its callers: that counts too. The
// callers of callers are followed up to maxKeepDepth; a top-level test
// has none.
func (c *checker) callersGoOn(fd *ast.FuncDecl, deferred bool, seen map[*ast.FuncDecl]bool, depth int) string {
	if topTest(fd) || seen[fd] || depth > maxKeepDepth {
		return ""
	}
	seen[fd] = true
	return c.firstUse(fd, func(caller *ast.FuncDecl, id *ast.Ident, call *ast.CallExpr, _ []ast.Node) string {
		if call == nil {
			return fmt.Sprintf("the checks the callers of %s registered earlier (it is handed on as a value at %s)", fd.Name.Name, c.lineOf(id))
		}
		out := earlier(c.checkBefore(caller.Body, call))
		if out == "" && deferred {
			out = c.deferredBefore(caller.Body, call)
		}
		if out == "" && deferred {
			if after := stmtAfter(caller.Body, call); after != nil {
				out = fmt.Sprintf("the code after the call of %s at %s (a defer ends it when %s returns)", fd.Name.Name, c.lineOf(after), fd.Name.Name)
			}
		}
		if out == "" {
			out = c.callersGoOn(caller, deferred, seen, depth+1)
		}
		return out
	})
}

// stmtAfter returns the first statement of body that starts after at
// ends, or nil.
func stmtAfter(body *ast.BlockStmt, at ast.Node) ast.Stmt {
	var out ast.Stmt
	ast.Inspect(body, func(n ast.Node) bool {
		if out != nil {
			return false
		}
		if st, ok := n.(ast.Stmt); ok && st.Pos() > at.End() {
			out = st
			return false
		}
		return true
	})
	return out
}

// checkBefore names a check registered in body before at that may run
// code under test when the test ends, or "": a t.Cleanup whose function
// calls code outside the standard library and the test files' own
// helpers (followed), or a call given the test's t (or TB) that may
// register one: a helper of the test files whose body registers such a
// check (followed), or any function out of sight (mockery's NewMockX(t),
// gomock.NewController(t)). A cleanup that only closes standard values
// (a helper's t.Cleanup(ln.Close)) checks nothing the end may change.
func (c *checker) checkBefore(body *ast.BlockStmt, at ast.Node) string {
	return c.checkBeforeIn(body, at, map[*types.Func]bool{}, 0)
}

func (c *checker) checkBeforeIn(body *ast.BlockStmt, at ast.Node, seen map[*types.Func]bool, depth int) string {
	out := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil || out != "" || (at != nil && n.Pos() >= at.Pos()) {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			// At a point, only the literals that hold it ran before it; in
			// a helper's whole body, any literal may register (a sync.Once).
			return at == nil || within(at, n)
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Cleanup" && match.IsNamed(c.info.TypeOf(sel.X), "testing", "T", "B", "F", "TB") && len(n.Args) == 1 {
				if what := c.runsOwnCode(n.Args[0], seen, depth); what != "" {
					out = fmt.Sprintf("the t.Cleanup at %s, which calls %s", c.lineOf(n), what)
				}
				return false
			}
			if c.plainCall(n) {
				return true
			}
			for _, a := range n.Args {
				if !match.IsNamed(c.info.TypeOf(a), "testing", "T", "B", "F", "TB") {
					continue
				}
				fn := match.Callee(c.info, n)
				fd := (*ast.FuncDecl)(nil)
				if fn != nil {
					fd = c.decls[fn.Origin()]
				}
				if fd == nil || fd.Body == nil || !c.inTestFile(fd) || depth >= maxKeepDepth {
					out = fmt.Sprintf("%s at %s, which is given the test's t and may register one with t.Cleanup", calleeName(c.info, n), c.lineOf(n))
					return false
				}
				if seen[fn.Origin()] {
					return true
				}
				seen[fn.Origin()] = true
				if what := c.checkBeforeIn(fd.Body, nil, seen, depth+1); what != "" {
					out = fmt.Sprintf("%s at %s registers %s", calleeName(c.info, n), c.lineOf(n), what)
					return false
				}
				return true
			}
		}
		return true
	})
	return out
}

// runsOwnCode names a function that f, a cleanup's function, may call
// outside the standard library (code under test, a function value), or
// "": the test files' own functions are followed.
func (c *checker) runsOwnCode(f ast.Expr, seen map[*types.Func]bool, depth int) string {
	judge := func(fn *types.Func) string {
		if fn == nil {
			return "a function value"
		}
		if fn.Pkg() != nil && c.isStd(fn.Pkg()) {
			if inertStd(fn) {
				return ""
			}
			// The standard library observes the code under test too:
			// a wait for the child it runs, a signal to it, a read of
			// the log it writes (red team batch 19, cmdfifo,
			// eventfifo, accesslog).
			return match.PkgFuncName(fn)
		}
		fd := c.decls[fn.Origin()]
		if fd == nil || fd.Body == nil || !c.inTestFile(fd) || depth >= maxKeepDepth {
			return match.PkgFuncName(fn)
		}
		if seen[fn.Origin()] {
			return ""
		}
		seen[fn.Origin()] = true
		return c.runsOwnCode(&ast.FuncLit{Type: fd.Type, Body: fd.Body}, seen, depth+1)
	}
	switch x := ast.Unparen(f).(type) {
	case *ast.FuncLit:
		out := ""
		ast.Inspect(x.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && out == "" {
				if tv, ok := c.info.Types[call.Fun]; ok && tv.IsType() {
					return true // a conversion
				}
				if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
					if _, ok := c.info.Uses[id].(*types.Builtin); ok {
						return true
					}
				}
				out = judge(match.Callee(c.info, call))
			}
			return out == ""
		})
		return out
	case *ast.Ident:
		fn, _ := c.info.Uses[x].(*types.Func)
		return judge(fn)
	case *ast.SelectorExpr:
		fn, _ := c.info.Uses[x.Sel].(*types.Func)
		return judge(fn)
	}
	return "a function value"
}

// inertStd reports whether fn, a function of the standard library, is
// one an earlier cleanup may call without looking at what the code under
// test did: removing the test's own files, reporting, formatting,
// stopping its own timers and closing its own listeners, connections and
// files. Any other call of the standard library (a
// wait, a signal, a read of a file, a request) may observe the code.
func inertStd(fn *types.Func) bool {
	switch match.PkgFuncName(fn) {
	case "os.RemoveAll", "os.Remove", "os.Setenv", "os.Unsetenv", "os.Chdir",
		"testing.T.Log", "testing.T.Logf", "testing.TB.Log", "testing.TB.Logf", "testing.B.Log", "testing.B.Logf",
		"testing.T.Helper", "testing.TB.Helper", "testing.B.Helper",
		"fmt.Sprintf", "fmt.Sprint", "fmt.Errorf",
		"time.Timer.Stop", "time.Ticker.Stop":
		return true
	}
	switch fn.Pkg().Path() {
	case "strings", "strconv", "path/filepath", "path":
		return true
	case "net", "os":
		// Closing the test's own listener, connection or file ends
		// it; it waits for nothing and reads nothing back.
		return fn.Name() == "Close"
	}
	return false
}

// numberHandedOn says why ending s would free a descriptor number the
// code may still hold, or "": the test takes the value's Fd() (or its
// SyscallConn), and a number is a handle the rule cannot follow. Code
// that keeps it (a readiness fd it writes to once, a --status-fd a
// library writes status lines to for the rest of the process) writes,
// after the close, to whatever file the process opens next under that
// number: a journal the package opened once, the next test's export
// (red team batch 20, notifyfd, statusfd). The original, that left the
// file open, kept the number its own.
func (c *checker) numberHandedOn(s *site) string {
	found := ""
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found != "" {
			return found == ""
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok || len(call.Args) != 0 || sel.Sel.Name != "Fd" && sel.Sel.Name != "SyscallConn" {
			return true
		}
		if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && c.info.Uses[id] == types.Object(s.v) {
			found = fmt.Sprintf("%s at %s", types.ExprString(call), c.lineOf(call))
		}
		return true
	})
	if found == "" {
		return ""
	}
	return fmt.Sprintf("the test takes %s's descriptor number (%s), a handle the rule cannot follow: code that keeps the number would, after %s.%s at the test's end, write to whatever file the process opens next under it (a file of the package, the next test's), where the original kept the number its own; end it by hand where the code is done with the number", s.v.Name(), found, s.v.Name(), s.lc.method)
}

// codeHoldsSide says how a goroutine of the code under test may hold the
// other side of s: the test hands s, or a value made with it by the same
// call (pr of pr, pw := io.Pipe(), one end of net.Pipe), to a function of
// the module whose effect summary starts goroutines (a tailer reading
// the pipe until it closes: red team batch 22, pipetail). "" otherwise.
func (c *checker) codeHoldsSide(s *site) string {
	sides := map[types.Object]bool{s.v: true}
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 || len(as.Lhs) < 2 {
			return true
		}
		mine := false
		for _, l := range as.Lhs {
			if id, ok := l.(*ast.Ident); ok && c.info.ObjectOf(id) == types.Object(s.v) {
				mine = true
			}
		}
		if mine {
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					sides[c.info.ObjectOf(id)] = true
				}
			}
		}
		return true
	})
	call, fn, handed, what := c.handedToStarter(sides)
	if call == nil {
		return ""
	}
	return fmt.Sprintf("may be held by a goroutine of the code under test (%s is handed to %s at %s, which %s)", handed, match.PkgFuncName(fn), c.lineOf(call), what)
}

// backgroundGoroutine names a goroutine the package's init or TestMain
// starts, in its own body or in a function of the package it calls, or
// "". Such a goroutine runs beside every test: a watcher of a directory
// sees a file a test closes at its end (red team batch 23, confdwatch:
// a conf.d reloader that loads a half-written file on its close).
func (c *checker) backgroundGoroutine() string {
	decls := map[string]*ast.FuncDecl{}
	var roots []*ast.FuncDecl
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if fd.Recv == nil {
				decls[fd.Name.Name] = fd
			}
			if fd.Recv == nil && (fd.Name.Name == "init" || fd.Name.Name == "TestMain") {
				roots = append(roots, fd)
			}
		}
	}
	for _, r := range roots {
		bodies := []*ast.FuncDecl{r}
		seen := map[*ast.FuncDecl]bool{r: true}
		for i := 0; i < len(bodies) && i < 50; i++ {
			found := ""
			ast.Inspect(bodies[i].Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					if found == "" {
						found = fmt.Sprintf("a goroutine %s starts (%s)", r.Name.Name, c.lineOf(n))
					}
				case *ast.CallExpr:
					if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok {
						if fd := decls[id.Name]; fd != nil && !seen[fd] {
							seen[fd] = true
							bodies = append(bodies, fd)
						}
					}
				}
				return found == ""
			})
			if found != "" {
				return found
			}
		}
	}
	return ""
}

// codeGoroutine names a goroutine that code of the package may start and
// leave running past the test that started it, or "" (once per package):
// a go statement in any file of the package (a reloader a sync.Once
// starts in the first test that needs it, a reader of a named pipe), a
// time.AfterFunc, or a call of another package's function that starts
// one (fsnotify.NewWatcher). Such a goroutine may watch a file's
// directory by its path, and sees its close in the tests after this one,
// or in the test's own next run under -count (red team batch 27,
// confstart, confrerun, fifobatch).
func (c *checker) codeGoroutine() string {
	if c.goroutine != nil {
		return *c.goroutine
	}
	found := ""
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			if found != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.GoStmt:
				found = fmt.Sprintf("a goroutine the package starts (%s)", c.lineOf(n))
			case *ast.CallExpr:
				fn := match.Callee(c.info, n)
				if fn == nil || fn.Pkg() == nil {
					return true
				}
				if fn.Pkg().Path() == "time" && fn.Name() == "AfterFunc" {
					found = fmt.Sprintf("a function time.AfterFunc runs in a goroutine of its own (%s)", c.lineOf(n))
					return false
				}
				if match.IsStd(fn.Pkg().Path()) || fn.Pkg() == c.pass.Pkg {
					return true
				}
				if sum := c.pass.Effects.Of(fn); sum != nil {
					for _, e := range sum.Effects {
						if e.Kind == effect.GoroutineForever || e.Kind == effect.GoroutineEnds {
							found = fmt.Sprintf("a goroutine %s starts (%s)", match.PkgFuncName(fn), c.lineOf(n))
							return false
						}
					}
				}
			}
			return true
		})
		if found != "" {
			break
		}
	}
	c.goroutine = &found
	return found
}
