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

// No end of a value is unseen (rule.Change.Unseen), though the rule once
// called some so: a file's or a root's close (an event of the operating
// system any code of the process may see: an inotify watch, a named
// pipe's other end, a process-wide logger, a lock through cgo,
// /proc/self/fd, an os.Root's FS() the code keeps; red team batches 27
// to 29), a timer's or a ticker's stop (a helper started with go still
// looping on it when the test's cleanup runs; batch 30), a connection's,
// a listener's or a pipe's close (the code on the other side; batch 25).
// Every fix of the rule is for review.

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
