package readiness

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/unflake/unflake/internal/match"
)

// The init hazard. Before the helper test runs at all, the child
// initialises its packages: the init functions and package-level variable
// initialisers of the package (its test files included) and of the
// module's packages it imports. What they start outlives them and runs in
// the window the sleep gave: a goroutine (an idle mode that drops the
// shutdown hooks 300ms after start), a timer or ticker, and a clock read
// (a stop deadline computed at start-up, an uptime) whose value the code
// compares later. The sleep let it run its course before the signal; a
// readiness line cuts that window short, so a test that looks at the
// child after the signal no longer sees it: it passes the deadline
// computed at init, and the hooks dropped at 300ms. The typed pass sees
// one build; every build of the package's directory is an implementation
// the tests run against, so the rule reads every Go file of it, and of
// the packages it links but the standard library's (non-test files,
// every build: the module's, and other modules', deps.go), from their
// syntax, following calls by name into the same package, and into
// another package's functions, a few calls deep. A TestMain of the test files runs before the helper too:
// what it runs before m.Run counts as initialisation (a daemon's pusher
// started there when an environment variable is set). Running the test
// cannot tell (it passes on the build the
// rule read), so such a site is not fixed.

// initChecked is the Checked entry of a fix: the hazard excluded.
const initChecked = "no package initialisation the child runs (init functions and package-level variable initialisers of the package, in every build, of the packages it links but the standard library's, the module's and other modules', and what TestMain runs before m.Run) starts a goroutine, a timer or a deadline, or reads the clock (or runs code the rule cannot read, which might: a function without a Go body, a //go:linkname, cgo, a raw system call)"

// initHazard says why the child's package initialisation runs work in
// the window the sleep gave it, and the test looks at the child after the
// signal, naming the work and its line; or "".
func (c *checker) initHazard(s *site) string {
	look := c.looksAfter(s)
	if look == "" {
		return ""
	}
	if c.initWhy == nil {
		why := c.initWork(false)
		c.initWhy = &why
	}
	if *c.initWhy == "" {
		return ""
	}
	return fmt.Sprintf("the child's package initialisation %s, before the helper runs, and that work runs on in the window the sleep gave it; the test looks at the child after the signal (%s): the sleep let the work (or the time since the clock was read) run its course before the signal, and a readiness line would cut that window short, so the test would no longer see it, on a bug the original catches or on correct code; keep the sleep", *c.initWhy, look)
}

// A syntaxPkg is a package read from its syntax: its files in every
// build, and its functions by name (a method as ".M").
type syntaxPkg struct {
	files   []*ast.File
	funcs   map[string][]*ast.FuncDecl
	imports map[*ast.File]map[string]string // name -> import path
	// unseen holds the names whose code the syntax does not hold (a
	// function without a body, a variable linked by //go:linkname), by
	// funcs' keys, with what each is (unseen.go).
	unseen map[string]string
}

// initWork returns the first work of the child's package initialisation
// that outlives it ("starts a goroutine (go at server.go:52, in init)"),
// or, with env, the first copy it takes of the environment (envcopy.go);
// or "".
func (c *checker) initWork(env bool) string {
	if len(c.pass.AllFiles) == 0 {
		return ""
	}
	fset := token.NewFileSet()
	dir := filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name())
	root := moduleRoot(dir)
	modPath := ""
	if data, err := os.ReadFile(filepath.Join(root, "go.mod")); root != "" && err == nil {
		modPath = modfile.ModulePath(data)
	}
	// The package's directory, tests included (the child is the test
	// binary), then the packages they import but the standard library's,
	// non-test files: the module's, and other modules' (deps.go).
	deps := newDepDirs(root)
	inModule := func(path string) bool {
		return modPath != "" && (path == modPath || strings.HasPrefix(path, modPath+"/"))
	}
	read := map[string]*syntaxPkg{}
	resolve := func(path string) (*syntaxPkg, string) {
		if root == "" {
			return nil, "" // no go.mod to find it by: not followed
		}
		sub, ok := match.ModuleDir(root, modPath, path)
		if !ok {
			if sub, ok = deps.dir(path); !ok {
				return nil, fmt.Sprintf("%s is a package the rule cannot find through go.mod", path)
			}
		}
		if p := read[sub]; p != nil {
			return p, ""
		}
		p, broken := readSyntax(fset, sub, false)
		if broken != "" {
			return nil, "the rule cannot read " + broken
		}
		read[sub] = p
		return p, ""
	}
	queue := []string{dir}
	tests := map[string]bool{dir: true}
	seen := map[string]bool{dir: true}
	label := map[string]string{}
	enqueue := func(path string) string {
		sub, ok := match.ModuleDir(root, modPath, path)
		if !ok {
			if path == "C" || match.IsStd(path) && !inModule(path) || root == "" {
				// Files outside any module (syntax given in memory) have
				// no go.mod to find other modules' packages by.
				return ""
			}
			if sub, ok = deps.dir(path); !ok {
				return fmt.Sprintf("may do anything: the child links %s, a package of another module the rule cannot find through go.mod (a replace, vendor, the module cache), so it cannot read what its initialisation starts", path)
			}
			label[sub] = path
		}
		if !seen[sub] {
			seen[sub] = true
			queue = append(queue, sub)
		}
		return ""
	}
	// What the typed build links, all the way down, and what every build
	// of the files read imports.
	var linked func(p *types.Package, done map[*types.Package]bool) string
	linked = func(p *types.Package, done map[*types.Package]bool) string {
		for _, imp := range p.Imports() {
			if done[imp] {
				continue
			}
			done[imp] = true
			if why := enqueue(imp.Path()); why != "" {
				return why
			}
			if why := linked(imp, done); why != "" {
				return why
			}
		}
		return ""
	}
	if why := linked(c.pass.Pkg, map[*types.Package]bool{}); why != "" {
		return why
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		p, broken := readSyntax(fset, d, tests[d])
		if broken != "" {
			return fmt.Sprintf("may do anything: the rule cannot read %s", broken)
		}
		w := &initWalker{fset: fset, pkg: p, seen: map[*ast.FuncDecl]bool{}, pkgPath: label[d], resolve: resolve, inModule: inModule, env: env}
		if why := w.pkgInit(); why != "" {
			return why
		}
		for _, f := range p.files {
			for _, path := range p.imports[f] {
				if why := enqueue(path); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

// readSyntax parses the Go files of dir (with its tests when tests is
// set), whichever build selects them; broken names a file it cannot
// parse.
func readSyntax(fset *token.FileSet, dir string, tests bool) (*syntaxPkg, string) {
	p := &syntaxPkg{funcs: map[string][]*ast.FuncDecl{}, imports: map[*ast.File]map[string]string{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return p, dir
	}
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" || !tests && strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return p, e.Name()
		}
		// Comments only where a //go:linkname directive needs them
		// (unseen.go): most files have none.
		mode := parser.SkipObjectResolution
		if bytes.Contains(src, []byte("//go:linkname ")) {
			mode |= parser.ParseComments
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), src, mode)
		if err != nil {
			return p, e.Name()
		}
		p.files = append(p.files, f)
		p.imports[f] = match.ImportNames(f)
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				key := fd.Name.Name
				if fd.Recv != nil {
					key = "." + key
				}
				p.funcs[key] = append(p.funcs[key], fd)
			}
		}
	}
	p.unseen = unseenNames(p.files)
	return p, ""
}

// moduleRoot returns the directory of the go.mod above dir, or "".
func moduleRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// An initWalker looks for work that outlives a package's initialisation.
type initWalker struct {
	fset *token.FileSet
	pkg  *syntaxPkg
	seen map[*ast.FuncDecl]bool
	// pkgPath names a package of another module, for the reasons.
	pkgPath string
	// resolve reads the package of an import path that is not the
	// standard library's, or says why it cannot; inModule says whether a
	// path is the main module's (whose path may look standard).
	resolve  func(path string) (*syntaxPkg, string)
	inModule func(path string) bool
	// env looks for a copy of the environment (envcopy.go) instead of
	// work that outlives the initialisation.
	env bool
}

// pkgInit walks the package's init functions and package-level variable
// initialisers.
func (w *initWalker) pkgInit() string {
	for _, f := range w.pkg.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name == "init" && d.Recv == nil && d.Body != nil {
					if why := w.walk(f, d.Body, "in init at "+w.line(d)+w.of(), 0); why != "" {
						return why
					}
				}
				if w.isTestMain(d) {
					if why := w.testMain(f, d); why != "" {
						return why
					}
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, sp := range d.Specs {
					vs := sp.(*ast.ValueSpec)
					for _, v := range vs.Values {
						where := "in the initialiser of " + vs.Names[0].Name + " at " + w.line(vs) + w.of()
						if why := w.walk(f, v, where, 0); why != "" {
							return why
						}
					}
				}
			}
		}
	}
	return ""
}

// isTestMain reports whether d is the TestMain of a test file: it runs
// in the child (the test binary) before any test, the helper included.
func (w *initWalker) isTestMain(d *ast.FuncDecl) bool {
	return d.Name.Name == "TestMain" && d.Recv == nil && d.Body != nil &&
		strings.HasSuffix(w.fset.Position(d.Pos()).Filename, "_test.go")
}

// testMain walks what TestMain runs before the tests: its statements up
// to the one that calls m.Run. That statement is walked too unless it is
// the plain call (m.Run(), code := m.Run(), os.Exit(m.Run())); a TestMain
// that never calls m.Run is walked whole. What those statements start (a
// daemon's pusher, a ticker, a goroutine) runs on in the window the sleep
// gave the helper, as init's work does.
func (w *initWalker) testMain(f *ast.File, d *ast.FuncDecl) string {
	where := "in TestMain at " + w.line(d)
	var m string
	if ps := d.Type.Params.List; len(ps) == 1 && len(ps[0].Names) == 1 {
		m = ps[0].Names[0].Name
	}
	for _, st := range d.Body.List {
		if runs, plain := callsRun(st, m); runs {
			if plain {
				return ""
			}
			return w.walk(f, st, where, 0)
		}
		if why := w.walk(f, st, where, 0); why != "" {
			return why
		}
	}
	return ""
}

// callsRun reports whether st calls m.Run, and whether st is only that
// call: m.Run(), x := m.Run(), x = m.Run() or os.Exit(m.Run()).
func callsRun(st ast.Stmt, m string) (runs, plain bool) {
	isRun := func(e ast.Expr) bool {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok || len(call.Args) != 0 {
			return false
		}
		sl, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok || sl.Sel.Name != "Run" {
			return false
		}
		x, ok := ast.Unparen(sl.X).(*ast.Ident)
		return ok && x.Name == m
	}
	if m == "" || m == "_" {
		return false, false
	}
	ast.Inspect(st, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && isRun(e) {
			runs = true
		}
		return !runs
	})
	if !runs {
		return false, false
	}
	switch st := st.(type) {
	case *ast.ExprStmt:
		if isRun(st.X) {
			return true, true
		}
		if call, ok := ast.Unparen(st.X).(*ast.CallExpr); ok && len(call.Args) == 1 && isRun(call.Args[0]) {
			if sl, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sl.Sel.Name == "Exit" {
				if x, ok := sl.X.(*ast.Ident); ok && x.Name == "os" {
					return true, true
				}
			}
		}
	case *ast.AssignStmt:
		return true, len(st.Rhs) == 1 && isRun(st.Rhs[0])
	}
	return true, false
}

// timeStarts are the functions of package time that start a timer or
// read the clock; contextDeadlines those of context that set a deadline.
var (
	timeStarts       = map[string]bool{"Now": true, "Since": true, "Until": true, "After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	contextDeadlines = map[string]bool{"WithTimeout": true, "WithDeadline": true, "WithTimeoutCause": true, "WithDeadlineCause": true}
)

// walk looks in n (code of file f that runs during initialisation) for a
// goroutine, a timer, a deadline or a clock read, following calls of the
// package's functions by name; where says where n runs.
func (w *initWalker) walk(f *ast.File, n ast.Node, where string, depth int) string {
	var out string
	ast.Inspect(n, func(m ast.Node) bool {
		if out != "" {
			return false
		}
		switch m := m.(type) {
		case *ast.GoStmt:
			if !w.env {
				out = fmt.Sprintf("starts a goroutine (go at %s, %s)", w.line(m), where)
			}
		case *ast.FuncLit:
			return false // runs when called: a call in place is followed below
		case *ast.Ident:
			// A name of the package whose code the syntax does not
			// hold (nanotime linked from the runtime), called or used
			// as a value: it may read the clock (unseen.go).
			if !w.env {
				if why := w.pkg.unseenAt(m.Name, w.line(m), ", "+where); why != "" {
					out = "may read the clock (" + why + ")"
				}
			}
		case *ast.SelectorExpr:
			x, ok := m.X.(*ast.Ident)
			if !ok || w.pkg.imports[f][x.Name] == "" {
				break
			}
			// Another package's name, called (the call is followed
			// below) or used as a value: one without Go code there may
			// read the clock too.
			path := w.pkg.imports[f][x.Name]
			if !w.env && w.resolve != nil && (!match.IsStd(path) || w.inModule != nil && w.inModule(path)) {
				if q, _ := w.resolve(path); q != nil {
					if why := q.unseenAt(m.Sel.Name, w.line(m), ", "+where); why != "" {
						out = "may read the clock (" + x.Name + "." + why + ")"
					}
				}
			}
			return false // Sel is not a name of this package
		case *ast.CallExpr:
			if lit, ok := ast.Unparen(m.Fun).(*ast.FuncLit); ok {
				out = w.walk(f, lit.Body, where, depth)
				return out == ""
			}
			switch fun := ast.Unparen(m.Fun).(type) {
			case *ast.SelectorExpr:
				if x, ok := fun.X.(*ast.Ident); ok {
					path := w.pkg.imports[f][x.Name]
					// The time reads the age hazard lists, and code the
					// rule cannot read (cgo, a raw system call).
					var read string
					var sure bool
					if !w.env && path != "" && (w.inModule == nil || !w.inModule(path)) {
						read, sure = timeReadAt(x.Name, path, fun.Sel.Name, w.line(m), ", "+where)
					}
					switch {
					case w.env && envCopy(path, fun.Sel.Name, m.Args):
						out = fmt.Sprintf("takes a copy of the environment (%s.%s at %s, %s)", x.Name, fun.Sel.Name, w.line(m), where)
						return false
					case w.env && (path == "time" || path == "context"):
						return true
					case path == "time" && timeStarts[fun.Sel.Name]:
						out = fmt.Sprintf("reads the clock or starts a timer (time.%s at %s, %s)", fun.Sel.Name, w.line(m), where)
						return false
					case path == "context" && contextDeadlines[fun.Sel.Name]:
						out = fmt.Sprintf("sets a deadline (context.%s at %s, %s)", fun.Sel.Name, w.line(m), where)
						return false
					case read != "" && sure:
						out = fmt.Sprintf("reads the time (%s)", read)
						return false
					case read != "":
						out = fmt.Sprintf("may read the clock (%s)", read)
						return false
					case path != "" && match.IsStd(path) && (w.inModule == nil || !w.inModule(path)):
						return true // the standard library's
					case path != "":
						// Another package's function: its body, read
						// from that package's syntax, runs in the
						// initialisation too.
						if w.resolve == nil {
							return true
						}
						q, broken := w.resolve(path)
						if q == nil && broken == "" {
							return true
						}
						if broken != "" {
							out = fmt.Sprintf("may do anything: it calls %s.%s at %s, %s, and %s", x.Name, fun.Sel.Name, w.line(m), where, broken)
							return false
						}
						if depth >= maxDepth {
							out = fmt.Sprintf("calls %s.%s at %s, %s, deeper than the rule follows", x.Name, fun.Sel.Name, w.line(m), where)
							return false
						}
						for _, fd := range q.funcs[fun.Sel.Name] {
							if w.seen[fd] {
								continue
							}
							w.seen[fd] = true
							sub := &initWalker{fset: w.fset, pkg: q, seen: w.seen, resolve: w.resolve, inModule: w.inModule, env: w.env}
							if out = sub.walk(sub.fileOf(fd), fd.Body, where+", through "+x.Name+"."+fd.Name.Name, depth+1); out != "" {
								return false
							}
						}
						return true
					}
				}
				out = w.follow(f, "."+fun.Sel.Name, m, where, depth)
			case *ast.Ident:
				out = w.follow(f, fun.Name, m, where, depth)
			}
		}
		return out == ""
	})
	return out
}

// follow walks the bodies of the package's functions named key (a method
// as ".M", on any type) that call, in file f, may reach.
func (w *initWalker) follow(f *ast.File, key string, call *ast.CallExpr, where string, depth int) string {
	if why := w.pkg.unseenAt(key, w.line(call), ", "+where); why != "" && !w.env {
		return "may read the clock (" + why + ")" // a method without a Go body
	}
	for _, fd := range w.pkg.funcs[key] {
		if w.seen[fd] {
			continue
		}
		if depth >= maxDepth {
			return fmt.Sprintf("calls %s at %s, %s, deeper than the rule follows", strings.TrimPrefix(key, "."), w.line(call), where)
		}
		w.seen[fd] = true
		if why := w.walk(w.fileOf(fd), fd.Body, where+", through "+fd.Name.Name, depth+1); why != "" {
			return why
		}
	}
	return ""
}

// fileOf returns the file of the package holding n.
func (w *initWalker) fileOf(n ast.Node) *ast.File {
	for _, f := range w.pkg.files {
		if f.FileStart <= n.Pos() && n.End() <= f.FileEnd {
			return f
		}
	}
	return nil
}

// of says which package of another module the walker reads, or "".
func (w *initWalker) of() string {
	if w.pkgPath == "" {
		return ""
	}
	return ", of " + w.pkgPath + ", a package of another module"
}

// line is n's file:line.
func (w *initWalker) line(n ast.Node) string {
	p := w.fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}
