package leak

import (
	"fmt"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// A standard library end is proven only for values that hold no code
// under test. Many standard types are built around implementations the
// user supplies: *sql.DB's Close closes the connections of the driver the
// module registered (a driver.Conn whose Close may wait on a flusher a
// bug never starts), a gzip.Writer or tls.Conn writes to the io.Writer or
// net.Conn it wraps, an http.Server waits for its handlers. Under a bug
// that wedges that code, the added cleanup hangs the test to its timeout
// where the original failed at its check. Rather than list what runs user
// code (a list that misses the next wrapper), the rule lists the
// standard values whose end runs only the standard library's own code
// (a file, a listener or connection of package net, a ticker, a timer,
// an io.Pipe end), and leaves every other standard value unfixed. The
// servers of net/http and httptest are on the list because their
// handlers are checked on their own (runsHandlers).

// stdSafeEnds are the standard types, by package path and name, whose
// lifecycle method runs no code but the standard library's; a nil set
// admits every type of the package.
var stdSafeEnds = map[string]map[string]bool{
	"os":                {"File": true, "Root": true},
	"net":               nil,
	"time":              {"Ticker": true, "Timer": true},
	"io":                {"PipeReader": true, "PipeWriter": true},
	"net/http":          {"Server": true},
	"net/http/httptest": {"Server": true},
}

// stdSafeChecked is the Checked entry of a fix that ends a standard
// value: the hazard excluded.
const stdSafeChecked = "%s is a standard value that holds no implementation of the package's (a file, a net listener or connection, a ticker, a timer, a pipe end, a server whose handlers are checked), so its %s runs no code under test"

// stdRunsCode says why ending s, a standard library value, may run code
// under test (a driver, a wrapped writer or connection), naming the type;
// or "".
func (c *checker) stdRunsCode(s *site) string {
	t := types.Unalias(s.v.Type())
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || !c.isStd(n.Obj().Pkg()) {
		return ""
	}
	if names, ok := stdSafeEnds[n.Obj().Pkg().Path()]; ok && (names == nil || names[n.Obj().Name()]) {
		return ""
	}
	what := "what it wraps or was given"
	if match.IsNamed(n, "database/sql", n.Obj().Name()) {
		what = "the driver's connections (a driver.Conn's Close, which the package may implement)"
	}
	return fmt.Sprintf("%s.%s is the standard library's, but %s is built around implementations the user supplies and its %s runs %s: in some implementation of the code under test it may wait for what a bug never gives back, and the cleanup would hang the test to its timeout instead of failing at its check; the rule ends only standard values that hold no such code (a file, a net listener or connection, a ticker, a timer, a pipe end); end it by hand where the test is done with it, with a bounded wait", s.v.Name(), s.lc.method, c.typeName(s.v.Type()), s.lc.method, what)
}

// leafEnds are the standard types, by package path and name, whose end
// neither runs code under test, nor waits for anything (a server's Close
// waits for its handlers, a pool's for what it lent), nor is seen by a
// peer (a connection's or a pipe's close wakes the code holding the other
// side; a listener's ends the code's Accept loop). A fix that ends one
// is not a hypothesis (rule.Change.Unseen): red team batch 24 found every
// unsound ownership fix kept by fix --verify hanging in an end that
// waits, and batch 25 a connection's close waking a server the test left
// running, which then wrote into the next test (presencegrace).
//
// A file or a root is not one: its close is an event of the operating
// system that any code of the process may see without being given the
// value, and red team batches 27 to 29 found a new way in each (an
// inotify watch, polled or read by a goroutine, seeing the close after a
// write; the other end of a named pipe; a process-wide logger; a lock
// through cgo; a janitor reading /proc/self/fd; an os.Root's FS() the
// code keeps). A timer or a ticker lives in the process alone: only code
// given the value, or its channel, sees its end.
var leafEnds = map[string]map[string]bool{
	"time": {"Ticker": true, "Timer": true},
}

// leafEnd reports whether t is one of leafEnds.
func leafEnd(t types.Type) bool { return inTypeSet(t, leafEnds) }

// inTypeSet reports whether t, or what it points to, is a named type of
// set (package path → type names; a nil set of names admits every type
// of the package).
func inTypeSet(t types.Type, set map[string]map[string]bool) bool {
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	names, ok := set[n.Obj().Pkg().Path()]
	return ok && (names == nil || names[n.Obj().Name()])
}
