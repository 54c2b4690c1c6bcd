package parallel

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/match"
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
	if len(c.pass.AllFiles) == 0 {
		return ""
	}
	dir := filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name())
	root, modPath := match.ModuleOf(dir)
	g := &watchScan{fset: token.NewFileSet(), root: root, modPath: modPath, seen: map[string]bool{}}
	if at := g.dir(dir, true); at != "" {
		w = "may leave goroutines running, and the package's tests look at every goroutine of the process (" + at + "): made parallel, the test would run after every sequential test, a last leak check included, so goroutines it leaves would escape that check (the rule does not tell which tests start goroutines, so it makes none of the package's tests parallel)"
	}
	return w
}

// watchScan reads directories for code that looks at every goroutine.
type watchScan struct {
	fset          *token.FileSet
	root, modPath string
	seen          map[string]bool
}

// dir returns where a Go file of d (test files too when tests) looks at
// the goroutines of the process, or "", following the module's packages
// it imports.
func (g *watchScan) dir(d string, tests bool) string {
	if g.seen[d] || len(g.seen) > 500 {
		return ""
	}
	g.seen[d] = true
	entries, err := os.ReadDir(d)
	if err != nil {
		return ""
	}
	var next []string
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" || !tests && strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(g.fset, filepath.Join(d, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			// Unreadable: it may hold anything.
			return filepath.Join(d, e.Name()) + ", a file the rule cannot parse, which may do so"
		}
		if at := g.file(f, strings.HasSuffix(e.Name(), "_test.go")); at != "" {
			return at
		}
		for _, path := range match.ImportNames(f) {
			if sub, ok := match.ModuleDir(g.root, g.modPath, path); ok {
				next = append(next, sub)
			}
		}
	}
	sort.Strings(next)
	for _, sub := range next {
		if at := g.dir(sub, false); at != "" {
			return at
		}
	}
	return ""
}

// inModule reports whether path is a package of the module.
func (g *watchScan) inModule(path string) bool {
	return g.modPath != "" && (path == g.modPath || strings.HasPrefix(path, g.modPath+"/"))
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

// file returns where f looks at the goroutines of the process, or "".
func (g *watchScan) file(f *ast.File, test bool) string {
	imports := match.ImportNames(f)
	for name, path := range imports {
		switch {
		case path == "net/http/pprof":
			return g.where(f, "imports net/http/pprof, whose handlers dump every goroutine", f.Package)
		case strings.Contains(strings.ToLower(path[strings.LastIndexByte(path, '/')+1:]), "leak") && !g.inModule(path):
			// goleak, leaktest: a leak checker the rule cannot read.
			return g.where(f, "imports "+path, f.Package)
		case name == "." && (watchers[path] != nil || test && testWatchers[path] != nil):
			return g.where(f, "dot-imports "+path, f.Package)
		}
	}
	at := ""
	ast.Inspect(f, func(n ast.Node) bool {
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
			at = g.where(f, x.Name+"."+fn, call.Pos())
		}
		return true
	})
	return at
}

// where says what at file f's pos: "runtime.Stack at pool_test.go:41",
// with the path from the module's root for another package.
func (g *watchScan) where(f *ast.File, what string, pos token.Pos) string {
	if f == nil || !pos.IsValid() {
		return what
	}
	p := g.fset.Position(pos)
	name := p.Filename
	if rel, err := filepath.Rel(g.root, name); g.root != "" && err == nil {
		name = filepath.ToSlash(rel)
	}
	return fmt.Sprintf("%s at %s:%d", what, name, p.Line)
}
