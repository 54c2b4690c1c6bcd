package leak

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A mutex of the test's own is taken for short sections, and a joined
// goroutine that locks it does not wait on the code under test. Unless
// the test itself leaves it locked: a section that locks it without a
// deferred unlock and fails inside (t.Fatalf under the lock, a helper
// given t, a return, a call of code under test that may panic) ends the
// test with the mutex held, since FailNow's runtime.Goexit runs deferred
// calls only. The goroutine then blocks on the mutex, and a join at
// cleanup waits for it for ever: the original failed at its check, the
// rewritten test hangs to its timeout. So a goroutine that locks a mutex
// of the test's (directly or through the test files' helpers) is joined
// only when every section of the test files that locks the same mutex is
// released on every way out: a deferred unlock right after the lock, or
// an unlock later in the same block with nothing between that may leave
// it (a failure, a return, a branch, a call of code under test, an index
// that may be out of range). A mutex handed on to other code (its
// address taken, passed) may be held anywhere.

// heldAcrossStop says why the goroutine lit may block on a mutex the test
// leaves locked when it fails, or "".
func (c *checker) heldAcrossStop(lit *ast.FuncLit) string {
	for _, lock := range c.locksIn(lit.Body, map[*types.Func]bool{}, 0) {
		key := c.lockKey(lock)
		if key == nil {
			continue // sharedLock judges what the rule cannot trace
		}
		if why := c.leftLocked(key); why != "" {
			mu := types.ExprString(ast.Unparen(lock.Fun).(*ast.SelectorExpr).X)
			return fmt.Sprintf("the goroutine locks %s at %s, and %s: a failure there ends the test with it locked (FailNow runs deferred calls only), the goroutine blocks on it, and a join at cleanup would then wait for ever where the original failed at its check: unlock it with defer, or end the goroutine with a bounded wait by hand", mu, c.lineOf(lock), why)
		}
	}
	return ""
}

// locksIn returns the Lock and RLock calls of sync mutexes in body and in
// the test files' functions it calls.
func (c *checker) locksIn(body ast.Node, seen map[*types.Func]bool, depth int) []*ast.CallExpr {
	var out []*ast.CallExpr
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if isLockCall(c.info, call, "Lock", "RLock") {
			out = append(out, call)
			return true
		}
		fn := match.Callee(c.info, call)
		if fn == nil || seen[fn.Origin()] || depth >= maxKeepDepth {
			return true
		}
		if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil && c.inTestFile(fd) {
			seen[fn.Origin()] = true
			out = append(out, c.locksIn(fd.Body, seen, depth+1)...)
		}
		return true
	})
	return out
}

// isLockCall reports whether call is one of the named methods of
// sync.Mutex or sync.RWMutex (promoted or not).
func isLockCall(info *types.Info, call *ast.CallExpr, names ...string) bool {
	fn := match.Callee(info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "sync" {
		return false
	}
	for _, n := range names {
		if fn.Name() == n {
			_, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			return ok
		}
	}
	return false
}

// lockKey names the mutex a Lock call (or Unlock) takes: the variable
// holding it, the field (s.mu, any value of the test's type), or, for a
// mutex the receiver's type embeds, that type; nil when the rule cannot
// tell.
func (c *checker) lockKey(call *ast.CallExpr) types.Object {
	sel := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if t := c.info.TypeOf(sel.X); t != nil && !isSyncLock(t) {
		return namedObj(t)
	}
	switch x := ast.Unparen(sel.X).(type) {
	case *ast.Ident:
		return c.info.Uses[x]
	case *ast.SelectorExpr:
		return c.info.Uses[x.Sel]
	case *ast.StarExpr:
		if id, ok := ast.Unparen(x.X).(*ast.Ident); ok {
			return c.info.Uses[id]
		}
	}
	return nil
}

// leftLocked says how the test files may leave the mutex key locked when
// a test fails ("the test holds mu across t.Fatalf at stream_test.go:36,
// locked at line 33 without a deferred unlock"), or "".
func (c *checker) leftLocked(key types.Object) string {
	out := ""
	for _, f := range c.pass.Files {
		if !strings.HasSuffix(c.pass.Fset.File(f.Pos()).Name(), "_test.go") {
			continue
		}
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			if out != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.Ident:
				// A variable holding the mutex handed on to other code:
				// anything may hold it.
				if _, ok := key.(*types.Var); ok && c.info.Uses[n] == key && !lockReceiver(c.info, n, stack) {
					out = fmt.Sprintf("the test hands %s on at %s, where it may be held across a failure", n.Name, c.lineOf(n))
				}
			case *ast.CallExpr:
				if isLockCall(c.info, n, "Lock", "RLock") && c.lockKey(n) == key {
					out = c.section(n, stack)
				}
			}
			return out == ""
		})
	}
	return out
}

// lockReceiver reports whether id, with the path stack to it, is (the
// last name of) the receiver of a mutex method call: mu.Lock(),
// s.mu.Unlock(), or a selector on through it (s.mu where id is mu).
func lockReceiver(info *types.Info, id *ast.Ident, stack []ast.Node) bool {
	var e ast.Expr = id
	for i := len(stack) - 1; i >= 0; i-- {
		switch up := stack[i].(type) {
		case *ast.SelectorExpr:
			if up.Sel == id {
				e = up
				continue
			}
			if up.X != e {
				return false
			}
			if i > 0 {
				if call, ok := stack[i-1].(*ast.CallExpr); ok && call.Fun == ast.Expr(up) {
					return isLockCall(info, call, "Lock", "RLock", "Unlock", "RUnlock", "TryLock", "TryRLock")
				}
			}
			return false
		case *ast.ParenExpr:
			e = up
		default:
			return false
		}
	}
	return false
}

// section says how the section lock opens may end with the mutex held,
// or "": released at once by a deferred unlock, or by an unlock later in
// the same statement list with nothing between that may leave it.
func (c *checker) section(lock *ast.CallExpr, stack []ast.Node) string {
	key := c.lockKey(lock)
	mu := types.ExprString(ast.Unparen(lock.Fun).(*ast.SelectorExpr).X)
	where := fmt.Sprintf("locked at %s", c.lineOf(lock))
	if len(stack) < 2 {
		return fmt.Sprintf("the test may leave %s locked (%s)", mu, where)
	}
	st, ok := stack[len(stack)-1].(*ast.ExprStmt)
	if !ok {
		return fmt.Sprintf("the test may leave %s locked (%s, not as a statement of its own)", mu, where)
	}
	var list []ast.Stmt
	switch b := stack[len(stack)-2].(type) {
	case *ast.BlockStmt:
		list = b.List
	case *ast.CaseClause:
		list = b.Body
	case *ast.CommClause:
		list = b.Body
	}
	i := 0
	for i < len(list) && list[i] != ast.Stmt(st) {
		i++
	}
	if i == len(list) {
		return fmt.Sprintf("the test may leave %s locked (%s)", mu, where)
	}
	unlocks := func(call *ast.CallExpr) bool {
		return isLockCall(c.info, call, "Unlock", "RUnlock") && c.lockKey(call) == key
	}
	if i+1 < len(list) {
		if d, ok := list[i+1].(*ast.DeferStmt); ok && unlocks(d.Call) {
			return ""
		}
	}
	for _, next := range list[i+1:] {
		if es, ok := next.(*ast.ExprStmt); ok {
			if call, ok := ast.Unparen(es.X).(*ast.CallExpr); ok && unlocks(call) {
				return ""
			}
		}
		if stop := c.mayLeave(next); stop != "" {
			return fmt.Sprintf("the test holds %s across %s (%s without a deferred unlock)", mu, stop, where)
		}
	}
	return fmt.Sprintf("the test may leave %s locked (%s, with no unlock after it in the same block)", mu, where)
}

// mayLeave names what in st may leave the statement list without running
// the statements after it (a FailNow, a helper given t, a return, a
// branch, a panic, a call of code under test or of a function value that
// may panic, an index that may be out of range), with its line; or "".
func (c *checker) mayLeave(st ast.Stmt) string {
	out := ""
	ast.Inspect(st, func(n ast.Node) bool {
		if out != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // runs when called, and a call of it is judged below
		case *ast.ReturnStmt:
			out = "a return at " + c.lineOf(n)
		case *ast.BranchStmt:
			out = fmt.Sprintf("a %s at %s", n.Tok, c.lineOf(n))
		case *ast.IndexExpr:
			if t := c.info.TypeOf(n.X); t != nil {
				if _, isMap := t.Underlying().(*types.Map); !isMap {
					out = "an index that may be out of range at " + c.lineOf(n)
				}
			}
		case *ast.CallExpr:
			if why := c.callMayLeave(n); why != "" {
				out = why + " at " + c.lineOf(n)
			}
		}
		return out == ""
	})
	return out
}

// callMayLeave names call when it may not return to its caller, or "".
func (c *checker) callMayLeave(call *ast.CallExpr) string {
	if tv, ok := c.info.Types[call.Fun]; ok && tv.IsType() {
		return "" // a conversion
	}
	name := types.ExprString(call.Fun)
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if _, builtin := c.info.Uses[id].(*types.Builtin); builtin {
			if id.Name == "panic" {
				return "panic"
			}
			return ""
		}
	}
	for _, a := range call.Args {
		if match.IsNamed(c.info.TypeOf(a), "testing", "T", "B", "F", "TB") {
			return name + ", given the test's t"
		}
	}
	fn := match.Callee(c.info, call)
	if fn == nil {
		return name + ", a function value"
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig != nil && sig.Recv() != nil && types.IsInterface(sig.Recv().Type()) {
		return name + ", an interface method"
	}
	if fn.Pkg() == nil {
		return ""
	}
	switch path := fn.Pkg().Path(); {
	case path == "testing":
		switch fn.Name() {
		case "Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow":
			return name
		}
		return ""
	case path == "runtime" && fn.Name() == "Goexit",
		path == "os" && fn.Name() == "Exit",
		path == "log" && (strings.HasPrefix(fn.Name(), "Fatal") || strings.HasPrefix(fn.Name(), "Panic")):
		return name
	case match.IsStd(path):
		return ""
	}
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || !c.inTestFile(fd) {
		return name + ", code under test that may panic"
	}
	return "" // the test files' own helper, given no t
}

// inTestFile reports whether n is in a _test.go file.
func (c *checker) inTestFile(n ast.Node) bool {
	return strings.HasSuffix(c.pass.Fset.Position(n.Pos()).Filename, "_test.go")
}
