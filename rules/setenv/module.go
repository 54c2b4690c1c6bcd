package setenv

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

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
}

// moduleSets returns, for the clear of name in the test fd, a write of
// the module that may set name outside fd, or nil. Writes of the empty
// string do not count: they empty the variable, as the clear does.
func (c *checker) moduleSets(fd *ast.FuncDecl, name string) *moduleWrite {
	if c.module == nil {
		c.module = c.readModule()
	}
	for i := range c.module {
		w := &c.module[i]
		if w.at.IsValid() && fd.Pos() <= w.at && w.at < fd.End() {
			continue // the test's own writes: keep judges them
		}
		if w.any || w.name == name {
			return w
		}
	}
	return nil
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
		ast.Inspect(d, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
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
				w.call = "os.Unsetenv"
			case match.IsPkgFunc(c.info, call, "os", "Clearenv") || match.IsPkgFunc(c.info, call, "syscall", "Clearenv"):
				w.call, w.any = "os.Clearenv", true
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
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return true
		}
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
		case "Clearenv":
			w.any = true
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

// setElsewhere says why removing the clear of name in fd is unproven:
// code of the module sets name (or a variable it cannot name), so the
// clear may shield the test from a value left behind. "" when none does.
func (c *checker) setElsewhere(fd *ast.FuncDecl, name string) string {
	w := c.moduleSets(fd, name)
	if w == nil {
		return ""
	}
	where := fmt.Sprintf("%s:%d", c.relPath(w.pos.Filename), w.pos.Line)
	what := fmt.Sprintf("sets %s", name)
	if w.any {
		what = "sets a variable the analysis cannot name"
	}
	return fmt.Sprintf("%s %s (%s): a test that ran before may leave it set, and the clear shields this one from it", where, what, w.call)
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
