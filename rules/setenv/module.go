package setenv

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/modfile"

	"github.com/unflake/unflake/internal/match"
)

// A clear that TestMain makes redundant at the start of the process may
// still shield the test from a write made since: code of the module that
// sets the variable (an init, a function under test, another test that
// does not restore it, a TestMain elsewhere). The rule's pass has only the
// package, so the module's other Go files are read here, syntax only, for
// calls that write the environment. Only a clear no code of the module
// sets is removed as proven.

// A moduleWrite is a call in the module that may set a variable.
type moduleWrite struct {
	pos  token.Position
	call string    // "os.Setenv", "os.Unsetenv", "os.Clearenv"
	name string    // the variable, when the call names a constant
	any  bool      // the name is not a constant, or Clearenv: any variable
	at   token.Pos // in the package's own files, else NoPos

	// unsets is set when the write may leave the variable unset
	// (Unsetenv, Clearenv, or code that may do either): a later test then
	// sees it unset, not empty as the clear leaves it, and code that tells
	// them apart (os.LookupEnv, os.Environ) passes where the clear's test
	// fails; running the tests on the correct code cannot show it, so the
	// clear is not removed at all.
	unsets bool
	// what, when not empty, says what the code does, for code the
	// analysis cannot follow by name (a function value, another module).
	what string
}

// moduleSets returns, for the clear of name in the test fd, a write of
// the module that may set name outside fd, or nil. Writes of the empty
// string do not count: they empty the variable, as the clear does.
// A write that may unset the variable comes first: it blocks the removal,
// where another makes it unproven.
func (c *checker) moduleSets(fd *ast.FuncDecl, name string) *moduleWrite {
	if c.module == nil {
		c.module = c.readModule()
	}
	var found *moduleWrite
	for i := range c.module {
		w := &c.module[i]
		if w.at.IsValid() && fd.Pos() <= w.at && w.at < fd.End() {
			continue // the test's own writes: keep judges them
		}
		if !w.any && w.name != name {
			continue
		}
		if w.unsets {
			return w
		}
		if found == nil {
			found = w
		}
	}
	return found
}

// readModule lists the environment writes of the module holding the
// package: of the package's own files from their types, of every other Go file of the module (tests included, not testdata, not
// vendor, not nested modules) from their syntax.
func (c *checker) readModule() []moduleWrite {
	out := []moduleWrite{}
	own := map[string]bool{}
	for _, f := range c.pass.AllFiles {
		name := c.pass.Fset.File(f.Pos()).Name()
		own[name] = true
		out = append(out, c.ownWrites(f)...)
	}
	if len(c.pass.AllFiles) == 0 {
		return out
	}
	root := moduleRoot(filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name()))
	if root == "" {
		return out
	}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			base := d.Name()
			if path != root && (base == "testdata" || base == "vendor" || base[0] == '.' || base[0] == '_') {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if filepath.Ext(path) != ".go" || own[path] {
			return nil
		}
		out = append(out, fileWrites(path)...)
		return nil
	})
	return out
}

// ownWrites returns the writes of one of the package's files, outside its
// TestMain: before m.Run the seal has evaluated them, after it no test
// runs.
func (c *checker) ownWrites(f *ast.File) []moduleWrite {
	var out []moduleWrite
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" {
			continue
		}
		called := map[*ast.Ident]bool{}
		ast.Inspect(d, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				// A function value, or code of another package.
				if fn, ok := c.info.Uses[id].(*types.Func); ok && !called[id] {
					if what := c.foreignWrite(fn, true); what != "" {
						out = append(out, moduleWrite{
							pos: c.pass.Fset.Position(id.Pos()), at: id.Pos(), any: true, what: what,
							// os.Setenv as a value leaves a value; anything else may unset.
							unsets: !(fn.Name() == "Setenv" && match.IsStd(fn.Pkg().Path())),
						})
					}
				}
				return true
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && (isEnvFunc(c.info, call, "Setenv") || isEnvFunc(c.info, call, "Unsetenv") || isEnvFunc(c.info, call, "Clearenv")) {
				called[sel.Sel] = true
			}
			w := moduleWrite{pos: c.pass.Fset.Position(call.Pos()), at: call.Pos()}
			switch {
			case match.IsPkgFunc(c.info, call, "os", "Setenv") || match.IsPkgFunc(c.info, call, "syscall", "Setenv"):
				if len(call.Args) == 2 {
					if v, ok := match.ConstString(c.info, call.Args[1]); ok && v == "" {
						return true
					}
				}
				w.call = "os.Setenv"
			case match.IsPkgFunc(c.info, call, "os", "Unsetenv") || match.IsPkgFunc(c.info, call, "syscall", "Unsetenv"):
				w.call, w.unsets = "os.Unsetenv", true
			case match.IsPkgFunc(c.info, call, "os", "Clearenv") || match.IsPkgFunc(c.info, call, "syscall", "Clearenv"):
				w.call, w.any, w.unsets = "os.Clearenv", true, true
			default:
				return true
			}
			if !w.any && len(call.Args) > 0 {
				w.name, ok = match.ConstString(c.info, call.Args[0])
				w.any = !ok
			}
			out = append(out, w)
			return true
		})
	}
	return out
}

// fileCache keeps the writes of the module's files across the packages
// (and runs) of one process: a module is read once per package with a
// removable clear, and most of its files never change between them.
var fileCache struct {
	sync.Mutex
	m map[string]cachedFile
}

type cachedFile struct {
	size   int64
	mod    int64
	writes []moduleWrite
}

// fileWrites returns the environment writes in the Go file at path, from
// its syntax: calls of Setenv, Unsetenv or Clearenv of the file's import
// of os or syscall. A name is known when it is a string literal or a
// constant the file declares.
func fileWrites(path string) []moduleWrite {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	fileCache.Lock()
	if cf, ok := fileCache.m[path]; ok && cf.size == st.Size() && cf.mod == st.ModTime().UnixNano() {
		fileCache.Unlock()
		return cf.writes
	}
	fileCache.Unlock()
	writes := parseWrites(path)
	fileCache.Lock()
	if fileCache.m == nil {
		fileCache.m = map[string]cachedFile{}
	}
	fileCache.m[path] = cachedFile{size: st.Size(), mod: st.ModTime().UnixNano(), writes: writes}
	fileCache.Unlock()
	return writes
}

func parseWrites(path string) []moduleWrite {
	src, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(src, []byte("Setenv")) && !bytes.Contains(src, []byte("Unsetenv")) && !bytes.Contains(src, []byte("Clearenv")) {
		return nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	pkgs := map[string]string{} // local name -> "os" or "syscall"
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "os" && p != "syscall" {
			continue
		}
		name := p
		if imp.Name != nil {
			name = imp.Name.Name
		}
		pkgs[name] = p
	}
	if len(pkgs) == 0 {
		return nil
	}
	consts := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i < len(vs.Values) {
					if s, ok := stringLit(vs.Values[i]); ok {
						consts[id.Name] = s
					}
				}
			}
		}
	}
	str := func(e ast.Expr) (string, bool) {
		if s, ok := stringLit(e); ok {
			return s, true
		}
		if id, ok := ast.Unparen(e).(*ast.Ident); ok {
			s, ok := consts[id.Name]
			return s, ok
		}
		return "", false
	}
	var out []moduleWrite
	called := map[*ast.SelectorExpr]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && !called[sel] {
			// os.Setenv taken as a function value: any variable.
			if x, ok := sel.X.(*ast.Ident); ok && pkgs[x.Name] != "" && envFuncs[sel.Sel.Name] {
				call := pkgs[x.Name] + "." + sel.Sel.Name
				out = append(out, moduleWrite{pos: fset.Position(sel.Pos()), call: call, any: true, unsets: sel.Sel.Name != "Setenv", what: "takes " + call + " as a function value, which may write any variable"})
			}
			return true
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return true
		}
		called[sel] = true
		x, ok := sel.X.(*ast.Ident)
		if !ok || pkgs[x.Name] == "" {
			return true
		}
		w := moduleWrite{pos: fset.Position(call.Pos()), call: pkgs[x.Name] + "." + sel.Sel.Name}
		switch sel.Sel.Name {
		case "Setenv":
			if len(call.Args) == 2 {
				if v, ok := str(call.Args[1]); ok && v == "" {
					return true
				}
			}
		case "Unsetenv":
			w.unsets = true
		case "Clearenv":
			w.any, w.unsets = true, true
		default:
			return true
		}
		if !w.any && len(call.Args) > 0 {
			w.name, ok = str(call.Args[0])
			w.any = !ok
		}
		out = append(out, w)
		return true
	})
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// moduleRoot returns the directory of the go.mod governing dir, or "".
func moduleRoot(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// setElsewhere says why removing the clear of name in fd is unproven, or
// (blocks) why it must not be removed: code of the module sets name (or a
// variable it cannot name), so the clear may shield the test from a value
// left behind; or it may unset it, leaving a state the clear's empty value
// differs from in a way running the tests cannot show. "" when none does.
func (c *checker) setElsewhere(fd *ast.FuncDecl, name string) (why string, blocks bool) {
	w := c.moduleSets(fd, name)
	if w == nil {
		return "", false
	}
	where := fmt.Sprintf("%s:%d", c.relPath(w.pos.Filename), w.pos.Line)
	if w.unsets {
		what := fmt.Sprintf("unsets %s (%s)", name, w.call)
		switch {
		case w.what != "":
			what = w.what
		case w.any:
			what = fmt.Sprintf("clears the environment or unsets a variable the analysis cannot name (%s)", w.call)
		}
		return fmt.Sprintf("%s %s: a later test may see %s unset, not empty as the clear leaves it, and code that tells them apart (os.LookupEnv, os.Environ) would pass there where the clear's test fails; running the tests cannot show it", where, what, name), true
	}
	what := fmt.Sprintf("sets %s (%s)", name, w.call)
	switch {
	case w.what != "":
		what = w.what
	case w.any:
		what = fmt.Sprintf("sets a variable the analysis cannot name (%s)", w.call)
	}
	return fmt.Sprintf("%s %s: a test that ran before may leave it set, and the clear shields this one from it", where, what), false
}

// relPath names path relative to the package's directory when it can.
func (c *checker) relPath(path string) string {
	if len(c.pass.AllFiles) > 0 {
		dir := filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name())
		if rel, err := filepath.Rel(dir, path); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(path)
}

// A module-local package whose imports, transitively, are all of the
// standard library or of the module itself writes the environment only
// through code the syntax scan reads and names (readModule): its effect
// summary's "writes the environment", which names no variable, adds
// nothing. A package reaching another module (a nested module, a
// dependency) may write through code the scan does not read.

// modGraph answers, from the syntax of the module's files, which of its
// packages reach only the standard library and the module.
type modGraph struct {
	root, path string
	closed     map[string]bool // by import path, once decided
}

// selfContained reports whether the package at pkgPath is of the module
// and reaches no other module's code.
func (c *checker) selfContained(pkgPath string) bool {
	if c.graph == nil {
		c.graph = &modGraph{closed: map[string]bool{}}
		if len(c.pass.AllFiles) > 0 {
			root := moduleRoot(filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name()))
			if data, err := os.ReadFile(filepath.Join(root, "go.mod")); root != "" && err == nil {
				c.graph.root, c.graph.path = root, modfile.ModulePath(data)
			}
		}
	}
	if c.graph.path == "" {
		return false
	}
	return c.graph.selfContained(pkgPath, map[string]bool{})
}

func (g *modGraph) selfContained(pkgPath string, visiting map[string]bool) bool {
	if match.IsStd(pkgPath) {
		return true
	}
	if ok, done := g.closed[pkgPath]; done {
		return ok
	}
	if visiting[pkgPath] {
		return true // a cycle: decided where it started
	}
	visiting[pkgPath] = true
	ok := g.decide(pkgPath, visiting)
	g.closed[pkgPath] = ok
	return ok
}

func (g *modGraph) decide(pkgPath string, visiting map[string]bool) bool {
	rel, ok := strings.CutPrefix(pkgPath, g.path)
	if !ok || rel != "" && rel[0] != '/' {
		return false // another module
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == "testdata" || elem == "vendor" || strings.HasPrefix(elem, "_") || strings.HasPrefix(elem, ".") {
			return false // a directory the syntax scan skips
		}
	}
	dir := filepath.Join(g.root, filepath.FromSlash(rel))
	for d := dir; d != g.root && strings.HasPrefix(d, g.root); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return false // a nested module
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		// Every build's files count; another package's tests are not
		// linked into this one's test binary.
		if e.IsDir() || filepath.Ext(name) != ".go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			return false
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "C" || p == "unsafe" || !g.selfContained(p, visiting) {
				return false
			}
		}
	}
	return true
}
