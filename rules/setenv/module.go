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
	"unicode"
	"unicode/utf8"

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
	// reads marks a read of the variable (os.Getenv, os.LookupEnv; any
	// variable for os.Environ, os.ExpandEnv or a name the analysis cannot
	// tell), not a write.
	reads bool
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
	return setterOf(c.module, name, func(w *moduleWrite) bool {
		return w.at.IsValid() && fd.Pos() <= w.at && w.at < fd.End() // the test's own writes: keep judges them
	})
}

// setterOf returns, of ws, a write that may set name (one that may unset
// it first), skipping reads and the writes skip says, or nil.
func setterOf(ws []moduleWrite, name string, skip func(*moduleWrite) bool) *moduleWrite {
	var found *moduleWrite
	for i := range ws {
		w := &ws[i]
		if w.reads || !w.any && w.name != name || skip != nil && skip(w) {
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

// moduleReads returns a read of name (or of a variable the analysis
// cannot name) by code of the module, the clear's own test included, or
// nil.
func (c *checker) moduleReads(name string) *moduleWrite {
	if c.module == nil {
		c.module = c.readModule()
	}
	for i := range c.module {
		if w := &c.module[i]; w.reads && (w.any || w.name == name) {
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
		out = append(out, hiddenWrites(c.pass.Fset, f, true)...)
	}
	if len(c.pass.AllFiles) == 0 {
		return out
	}
	dir := filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name())
	root := moduleRoot(dir)
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
		// Another package's tests run in another test binary: their
		// reads are not this package's code reading the variable (their
		// writes still count, as the seal's distrust of the module does).
		otherTests := strings.HasSuffix(path, "_test.go") && filepath.Dir(path) != dir
		for _, w := range fileWrites(path) {
			if !(w.reads && otherTests) {
				out = append(out, w)
			}
		}
		return nil
	})
	return out
}

// ownWrites returns the writes of one of the package's files. Of its
// TestMain, only the function literals it leaves behind count (a helper
// kept in a package variable, a goroutine, a callback): tests may call
// them, and what they write is not the seal's. TestMain's own statements
// before m.Run are the seal's to evaluate; after it no test runs, unless
// TestMain runs the tests again, when the seal evaluates all of them
// (sealer.rounds).
func (c *checker) ownWrites(f *ast.File) []moduleWrite {
	var out []moduleWrite
	sealers := c.sealers()
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" {
			if fd.Body != nil {
				for _, lit := range escapingLits(fd.Body) {
					c.nodeWrites(lit, func(w moduleWrite) { out = append(out, w) })
				}
			}
			continue
		}
		// The reads of a helper TestMain calls are the seal's ("clear
		// only what is set"): they test the variable to seal it.
		sealer := false
		if fd, ok := d.(*ast.FuncDecl); ok {
			if fn, ok := c.info.Defs[fd.Name].(*types.Func); ok {
				sealer = sealers[fn]
			}
		}
		c.nodeWrites(d, func(w moduleWrite) {
			if !(w.reads && sealer) {
				out = append(out, w)
			}
		})
	}
	return out
}

// escapingLits returns the function literals of body that may run after
// it returns or while the tests run: all but those it calls in place
// (func() { ... }(), defer func() { ... }(); not go func() { ... }()),
// whose own literals are looked at instead.
func escapingLits(body *ast.BlockStmt) []*ast.FuncLit {
	var out []*ast.FuncLit
	inPlace := map[*ast.FuncLit]bool{}
	goes := map[*ast.CallExpr]bool{} // go func() { ... }() runs beside the tests
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			goes[n.Call] = true
		case *ast.CallExpr:
			if lit, ok := ast.Unparen(n.Fun).(*ast.FuncLit); ok && !goes[n] {
				inPlace[lit] = true
			}
		case *ast.FuncLit:
			if !inPlace[n] {
				out = append(out, n)
				return false // its inner literals are part of it
			}
		}
		return true
	})
	return out
}

// nodeWrites passes keep the environment writes and reads in root, from
// its types: calls of os's and syscall's functions however they are
// named (os.Setenv, goos.Setenv, a dot-imported Setenv), those functions
// taken as values, and functions of other packages that may write the
// environment.
func (c *checker) nodeWrites(root ast.Node, keep func(moduleWrite)) {
	c.outlivingSetenvs(root, keep)
	c.strayHandleSetenvs(root, keep)
	called := map[*ast.Ident]bool{}
	ast.Inspect(root, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			// A function value, or code of another package.
			if fn, ok := c.info.Uses[id].(*types.Func); ok && !called[id] {
				if p := fn.Pkg(); p != nil && (p.Path() == "os" || p.Path() == "syscall") && envReads[fn.Name()] {
					// os.Getenv as a value (os.Expand(s, os.Getenv)):
					// it reads a variable the analysis cannot name.
					keep(moduleWrite{pos: c.pass.Fset.Position(id.Pos()), at: id.Pos(), call: p.Path() + "." + fn.Name(), any: true, reads: true})
					return true
				}
				if what := c.foreignWrite(fn, true); what != "" {
					keep(moduleWrite{
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
		// os's environment functions called, not taken as values:
		// os.Setenv, or Setenv of a dot-imported os. (Another package's
		// function called still counts as code that may write.)
		if id := calleeIdent(call); id != nil && isEnvCall(c.info, call) {
			called[id] = true
		}
		w := moduleWrite{pos: c.pass.Fset.Position(call.Pos()), at: call.Pos()}
		switch {
		case match.IsPkgFunc(c.info, call, "os", "Getenv", "LookupEnv") || match.IsPkgFunc(c.info, call, "syscall", "Getenv"):
			w.call, w.reads = readCall(c.info, call), true
		case match.IsPkgFunc(c.info, call, "os", "Environ", "ExpandEnv") || match.IsPkgFunc(c.info, call, "syscall", "Environ"):
			w.call, w.reads, w.any = readCall(c.info, call), true, true
		case match.IsPkgFunc(c.info, call, "os", "Setenv") || match.IsPkgFunc(c.info, call, "syscall", "Setenv"):
			if len(call.Args) == 2 {
				// An empty value writes nothing the seal does not, in
				// every build: a constant empty here may be "1" under
				// -race (race_on.go, race_off.go: red team batch 30,
				// racebuildval, racebuildpkg).
				if v, ok := match.ConstString(c.info, call.Args[1]); ok && v == "" && c.constBuilds(call.Args[1]) == "" {
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
		keep(w)
		return true
	})
}

// outlivingSetenvs passes keep the t.Setenv calls in root that may run
// after their test has ended, which then restores nothing: those in a
// function literal that is neither called in place nor a subtest's body
// (a callback handed to the code under test, OnReload(func(p string) {
// t.Setenv(X, p) })), on a test handle no such literal is given as a
// parameter (one it captures). A later test's run of the callback leaks the value
// into the tests after it (red team batch 28, hookleak).
func (c *checker) outlivingSetenvs(root ast.Node, keep func(moduleWrite)) {
	inPlace := map[*ast.FuncLit]bool{}
	ast.Inspect(root, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if lit, ok := ast.Unparen(call.Fun).(*ast.FuncLit); ok {
			inPlace[lit] = true
		}
		if match.IsMethod(c.info, call, "testing", "Run") && len(call.Args) == 2 {
			if lit, ok := ast.Unparen(call.Args[1]).(*ast.FuncLit); ok {
				inPlace[lit] = true
			}
		}
		return true
	})
	var lits []*ast.FuncLit // the escaping literals around the node
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			if !inPlace[n] {
				lits = append(lits, n)
				ast.Inspect(n.Body, visit)
				lits = lits[:len(lits)-1]
				return false
			}
		case *ast.CallExpr:
			if len(lits) == 0 || len(n.Args) != 2 || !match.IsMethod(c.info, n, "testing", "Setenv") {
				return true
			}
			sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr)
			if !ok {
				return true
			}
			recv := match.Root(c.info, sel.X)
			if recv == nil {
				return true
			}
			for _, lit := range lits {
				if p := lit.Type.Params; p != nil && p.Pos() <= recv.Pos() && recv.Pos() < p.End() {
					return true // the handle the literal is given: restored by the test that calls it
				}
			}
			w := moduleWrite{pos: c.pass.Fset.Position(n.Pos()), at: n.Pos(), call: "t.Setenv in a function literal that may run after its test ends, when nothing restores it"}
			if name, ok := match.ConstString(c.info, n.Args[0]); ok {
				w.name = name
			} else {
				w.any = true
			}
			keep(w)
		}
		return true
	}
	ast.Inspect(root, visit)
}

// strayHandleSetenvs passes keep the t.Setenv and t.Chdir calls in root
// whose receiver is not a parameter of the function they are in: a T kept
// in a fixture built once (sync.Once), a package-level variable or a
// struct field may be that of a test that has ended, whose cleanups, the
// restore among them, have run, so the write lasts for the rest of the
// process (red team batch 35, staletcache and tzsegment).
func (c *checker) strayHandleSetenvs(root ast.Node, keep func(moduleWrite)) {
	match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || !match.IsMethod(c.info, call, "testing", "Setenv", "Chdir") {
			return true
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return true
		}
		// The handle a test, a benchmark, a fuzz target or a subtest's
		// literal is given by the testing package is the running one. A
		// helper's parameter may be handed any T: &testing.T{} from
		// TestMain, one a fixture kept (red team batch 36, mainfaket,
		// lazyfaket); its restore may never run.
		// The handle the testing package gives a test, a benchmark, a
		// fuzz target or a subtest's literal is the running one. A
		// helper's parameter may be handed any T: &testing.T{} from
		// TestMain, one a fixture kept (red team batch 36, mainfaket,
		// lazyfaket); its restore may never run.
		if c.runningHandle(stack, c.handleOf(call)) || c.helperHandle(stack, sel.X) {
			return true // the running function's own handle
		}
		w := moduleWrite{pos: c.pass.Fset.Position(call.Pos()), at: call.Pos(), call: "t." + sel.Sel.Name + " on a testing handle that is not the one the testing package gave a test, benchmark or subtest (a helper's parameter, a T kept in a fixture or a variable), whose test may have ended or never run, when nothing restores it"}
		switch {
		case sel.Sel.Name == "Chdir":
			w.name = "PWD"
		case len(call.Args) == 2:
			if name, ok := match.ConstString(c.info, call.Args[0]); ok {
				w.name = name
			} else {
				w.any = true
			}
		default:
			w.any = true
		}
		keep(w)
		return true
	})
}

// envReads are the functions of os and syscall that read the
// environment by a name, or all of it.
var envReads = map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true}

// readCall names the read call ("os.Getenv").
func readCall(info *types.Info, call *ast.CallExpr) string {
	fn := match.Callee(info, call)
	return fn.Pkg().Path() + "." + fn.Name()
}

// isEnvCall reports whether call calls a function of os or syscall that
// writes or reads the environment.
func isEnvCall(info *types.Info, call *ast.CallExpr) bool {
	fn := match.Callee(info, call)
	if fn == nil || fn.Pkg() == nil || fn.Type().(*types.Signature).Recv() != nil {
		return false
	}
	p := fn.Pkg().Path()
	return (p == "os" || p == "syscall") && (envFuncs[fn.Name()] || envReads[fn.Name()])
}

// calleeIdent returns the identifier naming the function call calls (F
// of pkg.F, or F itself), or nil.
func calleeIdent(call *ast.CallExpr) *ast.Ident {
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return fun
	case *ast.SelectorExpr:
		return fun.Sel
	}
	return nil
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

// localNames returns the names f declares inside its functions:
// receivers, parameters and results (of declarations and literals),
// variables and constants declared in a body, := and range variables.
func localNames(f *ast.File) map[string]bool {
	out := map[string]bool{}
	fields := func(l *ast.FieldList) {
		if l == nil {
			return
		}
		for _, fl := range l.List {
			for _, id := range fl.Names {
				out[id.Name] = true
			}
		}
	}
	idents := func(es ...ast.Expr) {
		for _, e := range es {
			if id, ok := e.(*ast.Ident); ok {
				out[id.Name] = true
			}
		}
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		fields(fd.Recv)
		ast.Inspect(fd, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncType:
				fields(n.Params)
				fields(n.Results)
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					idents(n.Lhs...)
				}
			case *ast.RangeStmt:
				if n.Tok == token.DEFINE {
					idents(n.Key, n.Value)
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					out[id.Name] = true
				}
			}
			return true
		})
	}
	return out
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
	if err != nil || !bytes.Contains(src, []byte("env")) && !bytes.Contains(src, []byte("Environ")) &&
		!bytes.Contains(src, []byte(`"C"`)) && !bytes.Contains(src, []byte("go:linkname")) {
		return nil // no Setenv, Unsetenv, Clearenv, Getenv, LookupEnv, ExpandEnv or Environ, no cgo, no linkname
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return nil
	}
	out := hiddenWrites(fset, f, false)
	pkgs := map[string]string{} // local name -> "os" or "syscall"
	dot := ""                   // "os" or "syscall" when the file dot-imports it
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "os" && p != "syscall" {
			continue
		}
		name := p
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == "." {
			dot = p
			continue
		}
		pkgs[name] = p
	}
	if len(pkgs) == 0 && dot == "" {
		return out
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
	// A constant a function's own name shadows (a parameter, a loop
	// variable, a local: for _, key := range keys { os.Setenv(key, v) }
	// beside const key = "X") is not the constant there, and the syntax
	// alone cannot tell which use is which: such a name is one the
	// analysis cannot name (red team batch 24, shadowkey and hookstage).
	for name := range localNames(f) {
		delete(consts, name)
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
	// envFunc returns "os.Setenv" when e names an environment function
	// of os or syscall: pkg.F of an import, or F of a dot import (a
	// local of the same name counts too: the syntax cannot tell them
	// apart, and counting it only keeps more clears).
	envFunc := func(e ast.Expr) (string, bool) {
		switch e := ast.Unparen(e).(type) {
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && pkgs[x.Name] != "" && (envFuncs[e.Sel.Name] || envReads[e.Sel.Name]) {
				return pkgs[x.Name] + "." + e.Sel.Name, true
			}
		case *ast.Ident:
			if dot != "" && (envFuncs[e.Name] || envReads[e.Name]) {
				return dot + "." + e.Name, true
			}
		}
		return "", false
	}
	called := map[ast.Expr]bool{}
	sels := map[*ast.Ident]bool{} // x.Setenv's Setenv: not a dot import's
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			sels[sel.Sel] = true
		}
		if id, ok := n.(*ast.Ident); ok && sels[id] {
			return true
		}
		if e, ok := n.(ast.Expr); ok && called[e] {
			return false // judged as the call
		}
		if e, ok := n.(ast.Expr); ok {
			if _, isCall := n.(*ast.CallExpr); !isCall {
				// os.Setenv taken as a function value: any variable.
				if call, ok := envFunc(e); ok {
					name := call[strings.IndexByte(call, '.')+1:]
					if envFuncs[name] {
						out = append(out, moduleWrite{pos: fset.Position(e.Pos()), call: call, any: true, unsets: name != "Setenv", what: "takes " + call + " as a function value, which may write any variable"})
					} else {
						out = append(out, moduleWrite{pos: fset.Position(e.Pos()), call: call, any: true, reads: true})
					}
					return false
				}
				return true
			}
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn, ok := envFunc(call.Fun)
		if !ok {
			return true
		}
		called[call.Fun], called[ast.Unparen(call.Fun)] = true, true
		w := moduleWrite{pos: fset.Position(call.Pos()), call: fn}
		switch fn[strings.IndexByte(fn, '.')+1:] {
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
		case "Getenv", "LookupEnv":
			w.reads = true
		case "Environ", "ExpandEnv":
			w.reads, w.any = true, true
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

// hiddenWrites returns the writes of the file f that no call names: its
// cgo (C code may call setenv, unsetenv or clearenv), and a function
// linked by name to the runtime's or syscall's environment code
// (//go:linkname setenv syscall.runtimeSetenv). Either may write or
// unset any variable. own is set for the pass's files, whose positions
// are the pass's.
func hiddenWrites(fset *token.FileSet, f *ast.File, own bool) []moduleWrite {
	var out []moduleWrite
	at := func(p token.Pos) token.Pos {
		if own {
			return p // in the pass's file set
		}
		return token.NoPos
	}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "C" {
			out = append(out, moduleWrite{pos: fset.Position(imp.Pos()), at: at(imp.Pos()), call: "cgo", any: true, unsets: true,
				what: "uses cgo, whose C code may write the environment where the analysis cannot read it"})
		}
	}
	for _, cg := range f.Comments {
		for _, cm := range cg.List {
			fields := strings.Fields(cm.Text)
			if len(fields) == 3 && fields[0] == "//go:linkname" && strings.Contains(strings.ToLower(fields[2]), "env") {
				out = append(out, moduleWrite{pos: fset.Position(cm.Pos()), at: at(cm.Pos()), call: "go:linkname", any: true, unsets: true,
					what: "links " + fields[1] + " to " + fields[2] + " by name (go:linkname), which may write any variable"})
			}
		}
	}
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

// elsewhere says why the clear of name in fd must stay because of code
// of the module outside fd's own writes (keep judges those), or "".
//
// The clear's t.Setenv empties the variable and restores it when the
// test ends; TestMain's seal only empties it once, before the first test.
// So the clear also undoes every write the code makes to the variable
// while the test runs, which nothing else does once it is gone: a value
// written then (an export "for child processes", a default written back)
// leaks into the tests after it, and into the next run of the same test
// under -count, and may hide a bug there (a default that never applies
// passes on the leaked default). Correct code that writes the variable
// shows the leak; buggy code may write where correct code does not. Code
// that reads the variable is where such a write would be (it is the code
// that deals with it), so the clear stays when code of the module reads
// or writes the variable, or reads or writes one it cannot name. Running
// the tests on the correct code cannot show a write only a bug makes, so
// this blocks the removal rather than making it unproven.
func (c *checker) elsewhere(fd *ast.FuncDecl, name string) string {
	const restore = "the clear's t.Setenv restores the variable when the test ends, which TestMain's one-time seal does not"
	if w := c.moduleSets(fd, name); w != nil {
		where := fmt.Sprintf("%s:%d", c.relPath(w.pos.Filename), w.pos.Line)
		if w.unsets {
			what := fmt.Sprintf("unsets %s (%s)", name, w.call)
			switch {
			case w.what != "":
				what = w.what
			case w.any:
				what = fmt.Sprintf("clears the environment or unsets a variable the analysis cannot name (%s)", w.call)
			}
			return fmt.Sprintf("%s %s: a later test may see %s unset, not empty as the clear leaves it, and code that tells them apart (os.LookupEnv, os.Environ) would pass there where the clear's test fails; running the tests cannot show it", where, what, name)
		}
		what := fmt.Sprintf("sets %s (%s)", name, w.call)
		switch {
		case w.what != "":
			what = w.what
		case w.any:
			what = fmt.Sprintf("sets a variable the analysis cannot name (%s)", w.call)
		}
		return fmt.Sprintf("%s %s: a test that ran before may leave it set, and %s; without it a leaked value could hide a bug", where, what, restore)
	}
	if w := c.depSets(name); w != nil {
		return c.depReason(w, name)
	}
	if r := c.moduleReads(name); r != nil {
		where := fmt.Sprintf("%s:%d", c.relPath(r.pos.Filename), r.pos.Line)
		what := fmt.Sprintf("reads %s (%s)", name, r.call)
		if r.any {
			what = fmt.Sprintf("reads a variable the analysis cannot name (%s)", r.call)
		}
		return fmt.Sprintf("%s %s: code that reads the variable may also write it (an export, a default written back), and %s, so without it such a write would leak into the tests after this one (and its next run) and could hide a bug there", where, what, restore)
	}
	if r := c.depReads(name); r != nil {
		return c.depReadReason(r, name)
	}
	return ""
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
	c.initGraph()
	if c.graph.path == "" {
		return false
	}
	return c.graph.selfContained(pkgPath, map[string]bool{})
}

// initGraph reads the module's root and path, once.
func (c *checker) initGraph() {
	if c.graph == nil {
		c.graph = &modGraph{closed: map[string]bool{}}
		if len(c.pass.AllFiles) > 0 {
			root := moduleRoot(filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name()))
			if data, err := os.ReadFile(filepath.Join(root, "go.mod")); root != "" && err == nil {
				c.graph.root, c.graph.path = root, modfile.ModulePath(data)
			}
		}
	}
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

// sealers returns the package functions the package's TestMain calls
// (its seal's helpers), other than tests.
func (c *checker) sealers() map[*types.Func]bool {
	out := map[*types.Func]bool{}
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Name.Name != "TestMain" || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg && c.decls[fn.Origin()] != nil && !strings.HasPrefix(fn.Name(), "Test") {
						out[fn.Origin()] = true
					}
				}
				return true
			})
		}
	}
	return out
}

// runBody reports whether lit is the function parent, a call, runs as a
// subtest or a fuzz target's body (t.Run, b.Run, f.Fuzz).
func (c *checker) runBody(parent ast.Node, lit *ast.FuncLit) bool {
	call, ok := parent.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 || ast.Unparen(call.Args[len(call.Args)-1]) != ast.Expr(lit) {
		return false
	}
	return match.IsMethod(c.info, call, "testing", "Run", "Fuzz")
}

// isTestName reports whether name is that of a function go test runs
// with a handle of its own.
func isTestName(name string) bool {
	for _, p := range []string{"Test", "Benchmark", "Fuzz"} {
		if rest, ok := strings.CutPrefix(name, p); ok && name != "TestMain" {
			if rest == "" {
				return true
			}
			r, _ := utf8.DecodeRuneInString(rest)
			return !unicode.IsLower(r)
		}
	}
	return false
}

// helperOfRunning reports whether recv is a parameter of fd, a helper
// every call of which (in the package's typed files) hands that parameter
// the running handle of a test, benchmark or subtest: setup(t) in
// TestX. A helper used as a value, or called from TestMain, a fixture or
// another helper, may be handed any T.
func (c *checker) helperOfRunning(fd *ast.FuncDecl, recv ast.Expr) bool {
	id, ok := ast.Unparen(recv).(*ast.Ident)
	if !ok || fd.Recv != nil {
		return false
	}
	k := -1
	i := 0
	for _, field := range fd.Type.Params.List {
		for _, n := range field.Names {
			if c.info.Defs[n] != nil && c.info.Defs[n] == c.info.Uses[id] {
				k = i
			}
			i++
		}
		if len(field.Names) == 0 {
			i++
		}
	}
	obj := c.info.Defs[fd.Name]
	if k < 0 || obj == nil {
		return false
	}
	ok, calls := true, 0
	for _, f := range c.pass.AllFiles {
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			use, isID := n.(*ast.Ident)
			if !ok || !isID || c.info.Uses[use] != obj {
				return ok
			}
			call, isCall := stack[len(stack)-1].(*ast.CallExpr)
			if !isCall || ast.Unparen(call.Fun) != ast.Expr(use) || k >= len(call.Args) {
				ok = false
				return false
			}
			arg, isArg := ast.Unparen(call.Args[k]).(*ast.Ident)
			if !isArg || !c.runningHandle(stack, c.info.Uses[arg]) {
				ok = false
			}
			calls++
			return ok
		})
	}
	return ok && calls > 0
}

// helperHandle reports whether recv is a parameter of the function
// innermost in stack, a helper every call of which hands it a running
// test's own handle (helperOfRunning).
func (c *checker) helperHandle(stack []ast.Node, recv ast.Expr) bool {
	for i := len(stack) - 1; i >= 0; i-- {
		switch f := stack[i].(type) {
		case *ast.FuncLit:
			return false
		case *ast.FuncDecl:
			return c.helperOfRunning(f, recv)
		}
	}
	return false
}

// runningHandle reports whether v is the parameter of the function
// innermost in stack, when that function is a test, benchmark or fuzz
// target, or a subtest's literal.
func (c *checker) runningHandle(stack []ast.Node, v types.Object) bool {
	if v == nil {
		return false
	}
	for i := len(stack) - 1; i >= 0; i-- {
		var params *ast.FieldList
		switch f := stack[i].(type) {
		case *ast.FuncLit:
			if i == 0 || !c.runBody(stack[i-1], f) {
				return false
			}
			params = f.Type.Params
		case *ast.FuncDecl:
			if f.Recv != nil || !isTestName(f.Name.Name) {
				return false
			}
			params = f.Type.Params
		default:
			continue
		}
		return params.Pos() <= v.Pos() && v.Pos() < params.End()
	}
	return false
}
