package setenv

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
)

// The module scan (module.go) reads the module's own code. A dependency
// the test binary links (a dotenv loader, a config library) is code the
// scan does not read, and a call of it is judged by its effect summary
// only where the package's own code makes it: an external test package
// (package x_test) that calls dotenv.Load, an init of the dependency, a
// callback it runs, a method fmt calls on its value, all write behind the
// rule's back, and a variable they export stays for the tests after (and
// this test's next run under -count). So the rule reads every package
// outside the standard library and the module that the test binary links
// (the package's imports, its tests' and its external tests', all the
// way down) for the calls that write the environment: a write of the
// clear's variable, of a name it cannot evaluate, or code it cannot read
// (cgo, a package the load did not list) keeps the clear. A run of the
// tests cannot show it (the leak meets a later test, or the next round
// of -count), so the clear is not fixed rather than made unproven.

// depWrites returns the environment writes and reads of the packages
// outside the standard library and the module that the test binary
// links, read on first need.
func (c *checker) depWrites() []moduleWrite {
	if c.deps != nil {
		return c.deps
	}
	c.deps = []moduleWrite{}
	var roots []string
	for _, p := range c.pass.Pkg.Imports() {
		roots = append(roots, p.Path())
	}
	if ls, ok := effects.Listed(c.pass.Effects, c.pass.Pkg.Path()+"_test"); ok {
		roots = append(roots, ls.Imports...)
	}
	// Every test file of the directory is in the binary, whichever of
	// its packages (p, p_test) the pass is; and every file of the
	// directory is in some build of it (go test -race, another GOOS, a
	// tag), whose imports the load of this build does not list.
	roots = append(roots, c.ownDirImports()...)
	seen := map[string]bool{c.pass.Pkg.Path(): true}
	for len(roots) > 0 {
		p := roots[0]
		roots = roots[1:]
		if seen[p] || p == "C" || p == "unsafe" || match.IsStd(p) {
			continue
		}
		seen[p] = true
		ls, listed := effects.Listed(c.pass.Effects, p)
		if listed && ls.Std {
			continue
		}
		if c.ofModule(p) {
			// The module scan reads its code; its imports may be
			// dependencies.
			if listed {
				// Its files of other builds link what they import
				// in those builds.
				roots = append(roots, ls.Imports...)
				roots = append(roots, c.buildImports(p)...)
			} else {
				roots = append(roots, c.dirImports(p)...)
			}
			continue
		}
		if !listed {
			c.deps = append(c.deps, moduleWrite{any: true, unsets: true, call: p,
				what: fmt.Sprintf("%s, a package the test binary links, is code the analysis cannot read (the load did not list it: a build it does not type, go test -race or another GOOS or tag, may link it)", p)})
			continue
		}
		for _, f := range ls.Files {
			if filepath.Ext(f) != ".go" {
				c.deps = append(c.deps, moduleWrite{any: true, unsets: true, call: p,
					what: fmt.Sprintf("%s, a package the test binary links, uses cgo, whose C code may write the environment where the analysis cannot read it", p)})
				break
			}
			for _, w := range fileWrites(f) {
				w.call = p + ": " + w.call
				c.deps = append(c.deps, w)
			}
		}
		roots = append(roots, ls.Imports...)
		// The dependency's files of other builds (share_race.go under
		// go test -race, another GOOS, a tag) are linked in those
		// builds: read them too, with what they import (red team batch
		// 37, depracefile).
		if len(ls.Files) > 0 {
			dir := filepath.Dir(ls.Files[0])
			listedFiles := map[string]bool{}
			for _, f := range ls.Files {
				listedFiles[f] = true
			}
			others, _ := filepath.Glob(filepath.Join(dir, "*.go"))
			for _, f := range others {
				if listedFiles[f] || strings.HasSuffix(f, "_test.go") {
					continue
				}
				for _, w := range fileWrites(f) {
					w.call = p + ": " + w.call
					c.deps = append(c.deps, w)
				}
			}
			roots = append(roots, importsIn(dir, func(name string) bool { return !strings.HasSuffix(name, "_test.go") })...)
		}
	}
	return c.deps
}

// depSets returns a write of name (or of any variable) by a dependency
// the test binary links, one that may unset it first, or nil.
func (c *checker) depSets(name string) *moduleWrite {
	return setterOf(c.depWrites(), name, nil)
}

// depReads returns a read of name (or of a variable the analysis cannot
// name) by a dependency the test binary links, or nil.
func (c *checker) depReads(name string) *moduleWrite {
	ws := c.depWrites()
	for i := range ws {
		if w := &ws[i]; w.reads && (w.any || w.name == name) {
			return w
		}
	}
	return nil
}

// depReadReason says why the dependency read r keeps the clear of name:
// the module's code may read the variable through it (dotenv.Expand),
// and code that reads a variable is where a write of it would be, which
// a bug may add (see elsewhere).
func (c *checker) depReadReason(r *moduleWrite, name string) string {
	pkg, call, _ := strings.Cut(r.call, ": ")
	what := fmt.Sprintf("reads %s (%s at %s:%d)", name, call, c.depPath(r.pos.Filename), r.pos.Line)
	if r.any {
		what = fmt.Sprintf("reads a variable the analysis cannot name (%s at %s:%d)", call, c.depPath(r.pos.Filename), r.pos.Line)
	}
	return fmt.Sprintf("%s, a dependency the test binary links, %s: code of the module that reads the variable through it may also write it (an export, a default written back), and the clear's t.Setenv restores the variable when the test ends, which TestMain's one-time seal does not, so without it such a write would leak into the tests after this one (and its next run) and could hide a bug there", pkg, what)
}

// depReason says why the dependency write w keeps the clear of name.
func (c *checker) depReason(w *moduleWrite, name string) string {
	if w.what != "" {
		return fmt.Sprintf("%s: a test that ran before this one (or its previous run under -count) may leave %s changed, and the clear's t.Setenv restores it when the test ends, which TestMain's one-time seal does not; running the tests once cannot show it", w.what, name)
	}
	pkg, call, _ := strings.Cut(w.call, ": ")
	where := fmt.Sprintf("%s:%d", c.depPath(w.pos.Filename), w.pos.Line)
	what := fmt.Sprintf("sets %s (%s at %s)", name, call, where)
	switch {
	case w.unsets && w.any:
		what = fmt.Sprintf("clears the environment or unsets a variable the analysis cannot name (%s at %s)", call, where)
	case w.unsets:
		what = fmt.Sprintf("unsets %s (%s at %s)", name, call, where)
	case w.any:
		what = fmt.Sprintf("sets a variable the analysis cannot name (%s at %s)", call, where)
	}
	return fmt.Sprintf("%s, a dependency the test binary links, %s, and never restores it as t.Setenv would: a test that ran before this one (or its previous run under -count) may leave %s changed, and the clear's t.Setenv restores it when the test ends, which TestMain's one-time seal does not; running the tests once cannot show it", pkg, what, name)
}

// depPath names a dependency's file: relative to the package's directory
// when it is inside the module (a replace => ./dotenv), else by its
// directory's last element and its name.
func (c *checker) depPath(path string) string {
	if rel := c.relPath(path); !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
		return rel
	}
	return filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path)))
}

// ofModule reports whether the package at pkgPath is one of the module's
// own, which the module scan reads: under the module's path, not in a
// nested module, testdata or vendor.
func (c *checker) ofModule(pkgPath string) bool {
	c.initGraph()
	g := c.graph
	if g.path == "" {
		return false
	}
	rel, ok := strings.CutPrefix(pkgPath, g.path)
	if !ok || rel != "" && rel[0] != '/' {
		return false
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == "testdata" || elem == "vendor" || strings.HasPrefix(elem, "_") || strings.HasPrefix(elem, ".") {
			return false
		}
	}
	dir := filepath.Join(g.root, filepath.FromSlash(rel))
	for d := dir; d != g.root && strings.HasPrefix(d, g.root); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return false
		}
	}
	return true
}

// dirImports returns the imports of the module package pkgPath's files,
// tests included, read from their syntax.
func (c *checker) dirImports(pkgPath string) []string {
	rel := strings.TrimPrefix(pkgPath, c.graph.path)
	return importsIn(filepath.Join(c.graph.root, filepath.FromSlash(rel)), func(string) bool { return true })
}

// buildImports returns the imports of the module package pkgPath's
// non-test files, of every build, read from their syntax.
func (c *checker) buildImports(pkgPath string) []string {
	rel := strings.TrimPrefix(pkgPath, c.graph.path)
	return importsIn(filepath.Join(c.graph.root, filepath.FromSlash(rel)), func(name string) bool { return !strings.HasSuffix(name, "_test.go") })
}

// ownDirImports returns the imports of the Go files of the package's
// directory, of every build: its own, its tests' and its external
// tests' (package x_test), read from their syntax.
func (c *checker) ownDirImports() []string {
	if len(c.pass.AllFiles) == 0 {
		return nil
	}
	dir := filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name())
	return importsIn(dir, func(string) bool { return true })
}

// importsIn returns the imports of the Go files in dir that keep accepts.
func importsIn(dir string, keep func(name string) bool) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" || !keep(e.Name()) {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, imp := range f.Imports {
			if p, err := strconv.Unquote(imp.Path.Value); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}
