package parallel

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
)

// The goroutines, the heap and the other counters of the process are
// state every test shares. A package's last, sequential test (or TestMain
// after m.Run) may check that they came back to what they were before the
// tests: goleak's VerifyNone, runtime.NumGoroutine, the stacks of every
// goroutine, HeapAlloc after runtime.GC, a runtime/metrics sample, a
// /proc/self read. A test made parallel pauses at t.Parallel until every
// sequential test has ended, that check included: what it leaves behind (a
// worker a bug's Stop never ends, a buffer a bug keeps) appears after the
// check, so a leak the original catches escapes; and its goroutine, paused
// at t.Parallel while the check runs, is counted by it, so correct code
// fails. Which tests leave something behind the rule cannot tell (the
// standard library and dependencies start goroutines and allocate too),
// so in such a package it makes no test parallel.
//
// An observer need not be called by name: it may sit in a table of gauges
// (map[string]func() int{"goroutines": runtime.NumGoroutine}) or a struct
// of function values (probes.stacks = runtime.Stack) and be called through
// it. So the rule counts every reference to the packages that observe the
// process, not only calls, and for runtime and runtime/debug, which most
// code imports for harmless reasons, it lists what is harmless (observers
// not listed count), so an observer it has not heard of counts.

// processWatch returns, as a phrase completing "the test ...", why no test
// of the package may be made parallel because its test binary observes
// state of the whole process, or "". It reads every Go file of the
// package's directory (any build, the package and its external tests,
// TestMain included) and, transitively, the non-test files of the
// module's packages they import.
func (c *checker) processWatch() string {
	if c.watch != nil {
		return *c.watch
	}
	w := ""
	c.watch = &w
	m := modsrc.Reach(c.pass.Fset, c.pass.AllFiles)
	at := ""
	if m.Broken != "" {
		// Unread: it may hold anything.
		at = m.Broken + ", which the rule cannot read, may do so"
	}
	for _, p := range m.Packages {
		for _, f := range p.Files {
			if at != "" {
				break
			}
			if f.Syntax == nil {
				// Unreadable: it may hold anything.
				at = m.Rel(f.Path) + ", a file the rule cannot parse, which may do so"
			} else {
				at = observerIn(m, f, strings.HasSuffix(f.Path, "_test.go"))
			}
		}
	}
	if at != "" {
		w = "may leave goroutines running or memory held, and the package's test binary observes state of the whole process (" + at + "): made parallel, the test would run after every sequential test, a last check of the process's goroutines or heap included, so what it leaves would escape that check, and its goroutine, paused at t.Parallel while the check runs, would be counted by it (the rule does not tell which tests leave something behind, so it makes none of the package's tests parallel)"
	}
	return w
}

// harmless are, for the packages most code imports for other reasons, the
// names that observe nothing of the process that other tests change: the
// platform, the caller's own frames, the current goroutine's own scheduling.
// Any other name of these packages counts as an observer, so one the rule
// has not heard of (or a new one) keeps the tests sequential.
var harmless = map[string][]string{
	"runtime": {
		"GOOS", "GOARCH", "Compiler", "Version", "NumCPU",
		"Caller", "Callers", "CallersFrames", "Frame", "Frames", "FuncForPC", "Func",
		"Gosched", "Goexit", "KeepAlive", "LockOSThread", "UnlockOSThread",
		"Error", "TypeAssertionError",
	},
	"runtime/debug": {"ReadBuildInfo", "ParseBuildInfo", "BuildInfo", "BuildSetting", "Module"},
}

// harmlessOutsideTests print the current goroutine's stack: in code under
// test they are the usual recovery logging; in a test file they are
// counted (a test that prints stacks looks at goroutines).
var harmlessOutsideTests = map[string][]string{
	"runtime/debug": {"Stack", "PrintStack"},
}

// observers are the packages whose every use observes the process: its
// profiles, metrics, published counters, or an HTTP handler that dumps
// them.
var observers = []string{"runtime/metrics", "runtime/pprof", "runtime/trace", "expvar", "net/http/pprof"}

// rusage are the functions, by package path, that read the resource usage
// of the whole process.
var rusage = map[string][]string{
	"syscall":                  {"Getrusage"},
	"golang.org/x/sys/unix":    {"Getrusage"},
	"golang.org/x/sys/windows": {"GetProcessMemoryInfo"},
}

// observerIn returns where f, a file of m, observes state of the whole
// process, or "".
func observerIn(m *modsrc.Module, f *modsrc.File, test bool) string {
	imports := f.Imports
	where := func(what string, pos token.Pos) string { return what + " at " + m.Where(pos) }
	inModule := func(path string) bool { return m.Path != "" && (path == m.Path || strings.HasPrefix(path, m.Path+"/")) }
	for _, spec := range f.Syntax.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue
		}
		switch {
		case oneOf(path, observers):
			return where("imports "+path, spec.Pos())
		case strings.Contains(strings.ToLower(path[strings.LastIndexByte(path, '/')+1:]), "leak") && !inModule(path):
			// goleak, leaktest: a leak checker the rule cannot read.
			return where("imports "+path, spec.Pos())
		case test && !match.IsStd(path) && !inModule(path) && !trustedHelper(path):
			// A test helper library of another module (a leak check
			// whose name does not say so): the rule does not read it.
			return where("imports "+path+", a package of another module that the rule does not read, which may check the process", spec.Pos())
		case spec.Name != nil && spec.Name.Name == "." && (harmless[path] != nil || rusage[path] != nil):
			// Its names are used bare: the rule cannot tell which.
			return where("dot-imports "+path, spec.Pos())
		}
	}
	at := ""
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		if at != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.BasicLit:
			// /proc/self/status, /proc/self/fd: the process's own
			// memory, threads and open files, as the kernel counts them.
			if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && (underDir(s, "/proc") || underDir(s, "/dev/fd")) {
				at = where("reads "+s, n.Pos())
			}
		case *ast.CallExpr:
			// runtime.Stack(buf, false) is the current goroutine's stack
			// only: not a reference to walk into.
			if isOwnStack(n, imports) {
				for _, a := range n.Args {
					ast.Inspect(a, visit)
				}
				return false
			}
		case *ast.SelectorExpr:
			// A reference, called or not: a function value called later
			// through a table or a field observes just the same.
			x, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			path, name := imports[x.Name], n.Sel.Name
			switch {
			case harmless[path] != nil:
				if !oneOf(name, harmless[path]) && (test || !oneOf(name, harmlessOutsideTests[path])) {
					at = where(x.Name+"."+name, n.Pos())
				}
			case oneOf(name, rusage[path]):
				at = where(x.Name+"."+name, n.Pos())
			}
		}
		return true
	}
	ast.Inspect(f.Syntax, visit)
	return at
}

// underDir reports whether path is dir or a path inside it.
func underDir(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// trustedHelper reports whether path, imported by a test file, is a
// package of the assertion libraries the rule trusts to observe nothing
// of the process: testify and go-cmp.
func trustedHelper(path string) bool {
	for _, mod := range []string{"github.com/stretchr/testify", "github.com/google/go-cmp"} {
		if underDir(path, mod) {
			return true
		}
	}
	return false
}

// isOwnStack reports whether call is runtime.Stack(buf, false), which
// reads the current goroutine's stack only.
func isOwnStack(call *ast.CallExpr, imports map[string]string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Stack" || len(call.Args) != 2 {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || imports[x.Name] != "runtime" {
		return false
	}
	b, ok := call.Args[1].(*ast.Ident)
	return ok && b.Name == "false"
}
