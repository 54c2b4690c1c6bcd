package parallel

import (
	"go/ast"
	"go/token"
	"strings"

	"github.com/unflake/unflake/internal/modsrc"
)

// Goroutines are process-wide state. A package's last, sequential test
// may check that no goroutine outlived the tests before it (goleak's
// VerifyNone or VerifyTestMain, runtime.NumGoroutine, runtime.Stack of
// every goroutine, pprof's goroutine profile). A test made parallel pauses
// until every sequential test has ended, that check included, so the
// goroutines it leaves running appear after the check: a leak the original
// catches escapes. Which tests start goroutines, directly or through code
// they call, the rule cannot tell in general (the standard library and
// dependencies start them too), so in such a package it makes no test
// parallel.

// goroutineWatch returns, as a phrase completing "the test ...", why no
// test of the package may be made parallel because its tests look at the
// goroutines of the whole process, or "". It reads every Go file of the
// package's directory (any build, the package and its external tests,
// TestMain included) and, transitively, the non-test files of the
// module's packages they import.
func (c *checker) goroutineWatch() string {
	if c.watch != nil {
		return *c.watch
	}
	w := ""
	c.watch = &w
	m := modsrc.Reach(c.pass.Fset, c.pass.AllFiles)
	for _, p := range m.Packages {
		for _, f := range p.Files {
			at := ""
			if f.Syntax == nil {
				// Unreadable: it may hold anything.
				at = m.Rel(f.Path) + ", a file the rule cannot parse, which may do so"
			} else {
				at = watchIn(m, f, strings.HasSuffix(f.Path, "_test.go"))
			}
			if at != "" {
				w = "may leave goroutines running, and the package's tests look at every goroutine of the process (" + at + "): made parallel, the test would run after every sequential test, a last leak check included, so goroutines it leaves would escape that check (the rule does not tell which tests start goroutines, so it makes none of the package's tests parallel)"
				return w
			}
		}
	}
	return w
}

// watchers are the functions, by package path, that read the goroutines
// of the whole process (a count, their stacks, a profile of them).
var watchers = map[string][]string{
	"runtime":         {"NumGoroutine", "Stack", "GoroutineProfile"},
	"runtime/pprof":   {"Lookup", "Profiles"},
	"runtime/metrics": {"Read"},
}

// testWatchers look at stacks too; in a test file they are counted (a
// test that prints them looks at goroutines), in code under test they are
// the usual recovery logging of the current goroutine.
var testWatchers = map[string][]string{
	"runtime/debug": {"Stack", "PrintStack"},
}

// watchIn returns where f, a file of m, looks at the goroutines of the
// process, or "".
func watchIn(m *modsrc.Module, f *modsrc.File, test bool) string {
	imports := f.Imports
	where := func(what string, pos token.Pos) string { return what + " at " + m.Where(pos) }
	inModule := func(path string) bool { return m.Path != "" && (path == m.Path || strings.HasPrefix(path, m.Path+"/")) }
	for name, path := range imports {
		switch {
		case path == "net/http/pprof":
			return where("imports net/http/pprof, whose handlers dump every goroutine", f.Syntax.Package)
		case strings.Contains(strings.ToLower(path[strings.LastIndexByte(path, '/')+1:]), "leak") && !inModule(path):
			// goleak, leaktest: a leak checker the rule cannot read.
			return where("imports "+path, f.Syntax.Package)
		case name == "." && (watchers[path] != nil || test && testWatchers[path] != nil):
			return where("dot-imports "+path, f.Syntax.Package)
		}
	}
	at := ""
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		if at != "" {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		path := imports[x.Name]
		names := watchers[path]
		if test {
			names = append(names, testWatchers[path]...)
		}
		for _, fn := range names {
			if sel.Sel.Name != fn {
				continue
			}
			if path == "runtime" && fn == "Stack" && len(call.Args) == 2 {
				if b, ok := call.Args[1].(*ast.Ident); ok && b.Name == "false" {
					continue // the current goroutine's stack only
				}
			}
			at = where(x.Name+"."+fn, call.Pos())
		}
		return true
	})
	return at
}
