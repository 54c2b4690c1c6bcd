package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
	"github.com/unflake/unflake/rule/effect"
)

// httptest.Server.Close does more than end the server: it also calls
// CloseIdleConnections on http.DefaultTransport, the pool of idle
// keep-alive connections that every client of the process with no
// Transport of its own shares (http.Get, http.DefaultClient, an
// http.Client{}). The original, which left the server open, never dropped
// that pool. Dropping it changes nothing a test can see unless a
// connection in it leads to a server that is still serving after the
// Close: then the next request to that server through the default
// transport dials again where the original reused its connection, and a
// check of keep-alive reuse (the connections a server accepted, counted
// through ConnState or its listener) fails on correct code, or passes a
// bug that never reuses. A server outlives the Close when the test binary
// keeps it across tests (made in TestMain, an init function, a
// package-level variable's initialiser or a sync.Once, or stored in a
// package-level variable), when the enclosing test made it and goes on
// after the subtest that closes, or when it belongs to another test that
// runs in parallel with the closing one; the servers are found from the
// syntax of every file the tests may run (helpers and the module's
// fixture packages followed) and from the effect summaries of other
// modules' functions that listen. A Close of the package's own (a
// fixture's) that closes an httptest.Server drops the pool the same way.
// Then the close is not fixed:
// whether anything counts connections the rule cannot tell (a
// ConnState hook, a counting listener, the code under test's own server,
// httptrace), and running the tests on correct code cannot show a bug the
// drop hides. Without such a server the pool holds only connections to
// servers that are already gone, and the close stays proven.

// poolChecked is the Checked entry of a fix that closes an httptest
// server: the hazard excluded.
const poolChecked = "no server of the test binary outlives the test (made in TestMain, init, a package-level variable or a sync.Once, the enclosing test's, a parallel test's), so the idle connections of http.DefaultTransport that Close also drops lead to no server a later request reaches"

// dropsSharedPool says why closing s, an httptest server, changes what
// other code of the test binary sees through http.DefaultTransport's idle
// connections, naming the server that outlives the close; or "".
func (c *checker) dropsSharedPool(s *site) string {
	what := s.v.Name() + ".Close"
	switch {
	case match.IsNamed(s.v.Type(), "net/http/httptest", "Server"):
		if s.lc.method != "Close" {
			return ""
		}
	case s.lc.fn != nil:
		// A Close of the package's (a fixture's) that closes an httptest
		// server drops the pool all the same.
		at := c.closesTestServer(s.lc.fn, map[*types.Func]bool{}, 0)
		if at == "" {
			return ""
		}
		what = fmt.Sprintf("%s.%s closes an httptest.Server (%s), whose Close", s.v.Name(), s.lc.method, at)
	default:
		return ""
	}
	live := c.outlivingServer(s)
	if live == "" {
		return ""
	}
	return fmt.Sprintf("%s also closes the idle connections of http.DefaultTransport, which every client of the test binary without a Transport of its own shares (http.Get, http.DefaultClient), and %s: a later request to it through the default transport would dial again where the original, that left %s open, reused the pooled connection, so a check of keep-alive reuse or of the connections a server accepted would fail on correct code, or pass a bug that never reuses; end it by hand where no later request counts connections", what, live, s.v.Name())
}

// outlivingServer names a server that outlives the test of s: one the
// test binary keeps across tests, the enclosing test's, or a parallel
// test's; or "".
func (c *checker) outlivingServer(s *site) string {
	if live := c.longLivedServer(); live != "" {
		return live
	}
	if live := c.enclosingServer(s); live != "" {
		return live
	}
	return c.parallelServer()
}

// closesTestServer returns where fn, a function of the package, closes an
// httptest.Server, directly or through the package's functions it calls
// ("httptest.Server.Close at fixture_test.go:20"), or "".
func (c *checker) closesTestServer(fn *types.Func, seen map[*types.Func]bool, depth int) string {
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || seen[fn.Origin()] || depth > maxServerDepth {
		return ""
	}
	seen[fn.Origin()] = true
	at := ""
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if at != "" {
			return false
		}
		// An identifier of a function or method: a call, or a method
		// value handed on (defer, t.Cleanup).
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		callee, ok := c.info.Uses[id].(*types.Func)
		if !ok {
			return true
		}
		if callee.Name() == "Close" && callee.Pkg() != nil && callee.Pkg().Path() == "net/http/httptest" {
			at = "httptest.Server.Close at " + c.lineOf(id)
			return false
		}
		if callee.Pkg() == c.pass.Pkg {
			at = c.closesTestServer(callee, seen, depth+1)
		}
		return at == ""
	})
	return at
}

// longLivedServer returns which server of the test binary outlives every
// test ("the server made by httptest.NewServer at client_test.go:25, in
// TestMain, serves across tests"), or "" (once per package). It reads, from
// their syntax, every file of the package's directory (every build, the
// external test package too) and the non-test files of the module's
// packages they import.
func (c *checker) longLivedServer() string {
	if c.pool != nil {
		return *c.pool
	}
	at := c.findLongLived()
	c.pool = &at
	return at
}

func (c *checker) findLongLived() string {
	m := c.moduleSrc()
	for i, p := range m.Packages {
		funcs := funcsOf(p)
		for _, f := range p.Files {
			if f.Syntax == nil {
				return fmt.Sprintf("%s does not parse (%v) and may keep a server across tests", m.Rel(f.Path), f.Err)
			}
			sc := &serverScan{m: m, funcs: funcs}
			test := strings.HasSuffix(f.Path, "_test.go")
			vars := pkgVars(p, f)
			for _, d := range f.Syntax.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Body == nil {
						continue
					}
					if d.Recv == nil && (d.Name.Name == "init" || d.Name.Name == "TestMain" && test && i == 0) {
						if at := sc.in(d.Body, f, 0); at != "" {
							return fmt.Sprintf("the server made by %s, in %s, serves across tests", at, d.Name.Name)
						}
					}
					if at := sc.storedOrOnce(d, f, vars); at != "" {
						return at
					}
				case *ast.GenDecl:
					if d.Tok != token.VAR {
						continue
					}
					for _, spec := range d.Specs {
						for _, v := range spec.(*ast.ValueSpec).Values {
							if at := sc.in(v, f, 0); at != "" {
								return fmt.Sprintf("the server made by %s, in a package-level variable's initialiser, serves across tests", at)
							}
						}
					}
				}
			}
		}
	}
	if m.Broken != "" {
		return "the rule cannot read " + m.Broken + ", which may keep a server across tests"
	}
	return c.summaryServer()
}

// listenNames are the standard functions that start to serve, as the last
// call of an effect summary's chain shows them.
var listenNames = map[string]bool{
	"Listen": true, "ListenTCP": true, "ListenUnix": true,
	"NewServer": true, "NewTLSServer": true, "NewUnstartedServer": true,
	"ListenAndServe": true, "ListenAndServeTLS": true,
}

// summaryServer returns, for the typed build, a call in the package's
// initialisation, TestMain, a function a sync.Once runs or a value stored
// in a package-level variable, of a function of another module whose
// effect summary starts a server ("fakes.Start at main_test.go:12, which
// listens (fakes.Start → net.Listen)"); or "". The syntax scan does not
// follow such calls: their bodies are not in the module.
func (c *checker) summaryServer() string {
	out := ""
	check := func(root ast.Node, where string) {
		ast.Inspect(root, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || out != "" {
				return out == ""
			}
			fn := match.Callee(c.info, call)
			if fn == nil || fn.Pkg() == nil || c.isStd(fn.Pkg()) {
				return true
			}
			if w := c.summaryListens(fn); w != "" {
				out = fmt.Sprintf("the server %s starts at %s, %s, serves across tests (%s)", types.ExprString(call.Fun), c.lineOf(call), where, w)
			}
			return out == ""
		})
	}
	for _, f := range c.pass.Files {
		imports := match.ImportNames(f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				if d.Recv == nil && (d.Name.Name == "init" || d.Name.Name == "TestMain") {
					check(d.Body, "in "+d.Name.Name)
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.CallExpr:
						if lit := onceLit(n, imports); lit != nil {
							check(lit.Body, "in a function run once")
						}
					case *ast.AssignStmt:
						for i, l := range n.Lhs {
							if v := match.Root(c.info, l); v != nil && match.IsPackageLevel(v) && n.Tok == token.ASSIGN && len(n.Rhs) == len(n.Lhs) {
								check(n.Rhs[i], "stored in the package-level "+v.Name())
							}
						}
					}
					return out == ""
				})
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					check(d, "in a package-level variable's initialiser")
				}
			}
			if out != "" {
				return out
			}
		}
	}
	return out
}

// onceLit returns the function literal call hands to a sync.Once (Do,
// sync.OnceFunc, OnceValue, OnceValues), by syntax and the file's imports,
// or nil.
func onceLit(call *ast.CallExpr, imports map[string]string) *ast.FuncLit {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || len(call.Args) == 0 {
		return nil
	}
	once := sel.Sel.Name == "Do"
	if x, ok := sel.X.(*ast.Ident); ok && imports[x.Name] == "sync" {
		once = strings.HasPrefix(sel.Sel.Name, "Once")
	}
	lit, ok := call.Args[len(call.Args)-1].(*ast.FuncLit)
	if !ok || !once {
		return nil
	}
	return lit
}

// moduleSrc reads the package's files and the module's packages they
// reach (once per package; filelock.go reads the same).
func (c *checker) moduleSrc() *modsrc.Module {
	if c.src == nil {
		c.src = modsrc.Reach(c.pass.Fset, c.pass.AllFiles)
	}
	return c.src
}

// enclosingServer returns, for s made in a subtest that the enclosing
// test's code follows, a server the enclosing test made outside the
// subtest ("the server made by httptest.NewServer at x_test.go:12, the
// enclosing test's, serves the test's code after t.Run at line 30"), or "".
func (c *checker) enclosingServer(s *site) string {
	after := c.codeAfterSubtest(s)
	if after == "" {
		return ""
	}
	lit := c.subtestLit(s)
	if lit == nil {
		return ""
	}
	at := c.serverIn(c.fn.Body, lit, map[*types.Func]bool{}, 0)
	if at == "" {
		return ""
	}
	return fmt.Sprintf("the server made by %s, the enclosing test's, still serves %s", at, after)
}

// serverIn returns where n, outside skip, starts a server, directly
// (httptest.NewServer, net.Listen, a Serve), through a function of the
// package it calls (a helper newServer(t)), or through a function of
// another package whose effect summary listens ("httptest.NewServer at
// x_test.go:12"); or "".
func (c *checker) serverIn(n, skip ast.Node, seen map[*types.Func]bool, depth int) string {
	at := ""
	ast.Inspect(n, func(n ast.Node) bool {
		if at != "" || n == skip && skip != nil {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		file := c.file
		for _, f := range c.pass.Files {
			if f.FileStart <= call.Pos() && call.Pos() < f.FileEnd {
				file = f
			}
		}
		if what := serverCall(call, match.ImportNames(file)); what != "" {
			at = fmt.Sprintf("%s at %s", what, c.lineOf(call))
			return false
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil || c.isStd(fn.Pkg()) || seen[fn.Origin()] || depth >= maxServerDepth {
			return true
		}
		seen[fn.Origin()] = true
		if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil {
			if w := c.serverIn(fd.Body, nil, seen, depth+1); w != "" {
				at = w
			}
			return at == ""
		}
		if w := c.summaryListens(fn); w != "" {
			at = fmt.Sprintf("%s at %s (%s)", types.ExprString(call.Fun), c.lineOf(call), w)
		}
		return at == ""
	})
	return at
}

// summaryListens returns the chain by which fn, of another package, starts
// a server, from its effect summary ("fakes.Start → net.Listen, which uses
// the real network"), or "".
func (c *checker) summaryListens(fn *types.Func) string {
	sum := c.pass.Effects.Of(fn.Origin())
	if sum == nil {
		return ""
	}
	for _, e := range sum.Effects {
		if e.Kind != effect.Network || len(e.Via) == 0 {
			continue
		}
		last := e.Via[len(e.Via)-1]
		if listenNames[last[strings.LastIndexByte(last, '.')+1:]] {
			return e.Why()
		}
	}
	return ""
}

// subtestLit returns the function literal of the innermost t.Run that
// holds s, or nil.
func (c *checker) subtestLit(s *site) *ast.FuncLit {
	var out *ast.FuncLit
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		if n.Pos() > s.stmt.Pos() || n.End() < s.stmt.End() {
			return false
		}
		if l, ok := n.(*ast.FuncLit); ok && len(stack) > 0 {
			if call, ok := stack[len(stack)-1].(*ast.CallExpr); ok {
				if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" && len(call.Args) == 2 && call.Args[1] == ast.Expr(l) {
					out = l
				}
			}
		}
		return true
	})
	return out
}

// parallelServer returns, when the test calls Parallel, a server that a
// parallel test of the package makes (it may be serving while the cleanup
// runs), or "". The closing test's own other servers count: its parallel
// subtests run together.
func (c *checker) parallelServer() string {
	if !callsParallel(c.fn.Body) {
		return ""
	}
	self := c.pass.Fset.Position(c.fn.Pos())
	m := c.moduleSrc()
	if len(m.Packages) == 0 {
		return ""
	}
	p := m.Packages[0]
	funcs := funcsOf(p)
	for _, f := range p.Files {
		if f.Syntax == nil || !strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		for _, d := range f.Syntax.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || !callsParallel(fd.Body) {
				continue
			}
			var servers []string
			sc := &serverScan{m: m, funcs: funcs, all: &servers}
			sc.in(fd.Body, f, 0)
			own := filepath.Base(f.Path) == filepath.Base(self.Filename) && fd.Name.Name == c.fn.Name.Name
			switch {
			case own && len(servers) > 1:
				// The server the fix closes is one of its own; another
				// may serve a parallel subtest.
				return fmt.Sprintf("the test makes servers besides it (%s), which its parallel subtests may be using when the cleanup runs", strings.Join(servers, ", "))
			case !own && len(servers) > 0:
				return fmt.Sprintf("the server made by %s, in %s, a test that runs in parallel, may be serving when the cleanup runs", servers[0], fd.Name.Name)
			}
		}
	}
	return ""
}

// callsParallel reports whether body calls a Parallel method (t.Parallel).
func callsParallel(body ast.Node) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 0 {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Parallel" {
				found = true
			}
		}
		return !found
	})
	return found
}

// serverCall names what call starts to serve (httptest.NewServer,
// net.Listen, http.ListenAndServe, a Serve method), by its syntax and
// the file's imports (name -> path); or "".
func serverCall(call *ast.CallExpr, imports map[string]string) string {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	name := sel.Sel.Name
	if x, ok := sel.X.(*ast.Ident); ok {
		if path, ok := imports[x.Name]; ok {
			switch {
			case path == "net/http/httptest" && (name == "NewServer" || name == "NewTLSServer" || name == "NewUnstartedServer"),
				path == "net" && (name == "Listen" || name == "ListenTCP" || name == "ListenUnix"),
				path == "net/http" && serveMethods[name]:
				return x.Name + "." + name
			}
			return ""
		}
	}
	if serveMethods[name] {
		return selString(sel) // a method: srv.ListenAndServe()
	}
	return ""
}

// serveMethods are the functions and methods of net/http (and their
// likes: a server's own Serve) that serve on a listener.
var serveMethods = map[string]bool{"ListenAndServe": true, "ListenAndServeTLS": true, "Serve": true, "ServeTLS": true}

// selString prints a selector expression.
func selString(sel *ast.SelectorExpr) string {
	var b strings.Builder
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		switch x := e.(type) {
		case *ast.Ident:
			b.WriteString(x.Name)
		case *ast.SelectorExpr:
			walk(x.X)
			b.WriteString("." + x.Sel.Name)
		default:
			b.WriteString("…")
		}
	}
	walk(sel)
	return b.String()
}

// A serverScan finds, from syntax, the servers code starts, following the
// calls of the package's own functions by name.
type serverScan struct {
	m     *modsrc.Module
	funcs map[string]fileFunc
	seen  map[string]bool
	// all, when set, collects every server found instead of stopping at
	// the first.
	all *[]string
	// byPath memoizes imported.
	byPath map[string]map[string]fileFunc
}

// imported returns the functions of the module's package at import path
// path, or nil when the module holds no such package.
func (sc *serverScan) imported(path string) map[string]fileFunc {
	if sc.byPath == nil {
		sc.byPath = map[string]map[string]fileFunc{}
	}
	if fs, ok := sc.byPath[path]; ok {
		return fs
	}
	var fs map[string]fileFunc
	for _, p := range sc.m.Packages {
		if p.ImportPath == path {
			fs = funcsOf(p)
		}
	}
	sc.byPath[path] = fs
	return fs
}

// A fileFunc is a function declaration and the file that holds it.
type fileFunc struct {
	decl *ast.FuncDecl
	file *modsrc.File
}

// maxServerDepth bounds the calls a serverScan follows.
const maxServerDepth = 4

// in returns where n (in file f) starts a server, directly or through the
// package's functions it calls ("httptest.NewServer at client_test.go:25"),
// or "".
func (sc *serverScan) in(n ast.Node, f *modsrc.File, depth int) string {
	if sc.seen == nil {
		sc.seen = map[string]bool{}
	}
	at := ""
	ast.Inspect(n, func(n ast.Node) bool {
		if at != "" && sc.all == nil {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if what := serverCall(call, f.Imports); what != "" {
			where := fmt.Sprintf("%s at %s", what, sc.m.Where(call.Pos()))
			if sc.all != nil {
				*sc.all = append(*sc.all, where)
			}
			if at == "" {
				at = where
			}
			return true
		}
		if depth >= maxServerDepth {
			return true
		}
		// The package's own functions, and those of the module's packages
		// it imports (a fixture package's StartServer).
		key, ff, ok := "", fileFunc{}, false
		switch fun := ast.Unparen(call.Fun).(type) {
		case *ast.Ident:
			key = fun.Name
			ff, ok = sc.funcs[key]
		case *ast.SelectorExpr:
			if x, isID := fun.X.(*ast.Ident); isID {
				if path, imported := f.Imports[x.Name]; imported {
					key = path + "." + fun.Sel.Name
					ff, ok = sc.imported(path)[fun.Sel.Name]
				}
			}
		}
		if ok && !sc.seen[key] {
			sc.seen[key] = true
			if w := sc.in(ff.decl.Body, ff.file, depth+1); w != "" && at == "" {
				at = w
			}
		}
		return true
	})
	return at
}

// storedOrOnce returns, for a function declaration fd of file f, a server
// it keeps across tests: one made in a function literal a sync.Once (or
// OnceFunc, OnceValue, a Do method) runs, or assigned to a package-level
// variable (vars); or "".
func (sc *serverScan) storedOrOnce(fd *ast.FuncDecl, f *modsrc.File, vars map[string]bool) string {
	locals := localNames(fd)
	out := ""
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if out != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			if lit := onceLit(n, f.Imports); lit != nil {
				if at := sc.in(lit.Body, f, 0); at != "" {
					out = fmt.Sprintf("the server made by %s, in a function %s runs once, serves across tests", at, selString(ast.Unparen(n.Fun).(*ast.SelectorExpr)))
				}
			}
		case *ast.AssignStmt:
			if n.Tok != token.ASSIGN {
				return true
			}
			for _, l := range n.Lhs {
				root := l
				for {
					if s, ok := root.(*ast.SelectorExpr); ok {
						root = s.X
						continue
					}
					break
				}
				id, ok := root.(*ast.Ident)
				if !ok || !vars[id.Name] || locals[id.Name] {
					continue
				}
				for _, r := range n.Rhs {
					if at := sc.in(r, f, 0); at != "" {
						out = fmt.Sprintf("the server made by %s, stored in the package-level %s, serves across tests", at, id.Name)
					}
				}
			}
		}
		return out == ""
	})
	return out
}

// funcsOf maps the names of p's package functions (no methods) to their
// declarations. Files of the package and of its external test package
// share a directory; a name both declare maps to either, which is enough
// to find a server.
func funcsOf(p *modsrc.Package) map[string]fileFunc {
	out := map[string]fileFunc{}
	for _, f := range p.Files {
		if f.Syntax == nil {
			continue
		}
		for _, d := range f.Syntax.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Body != nil {
				out[fd.Name.Name] = fileFunc{fd, f}
			}
		}
	}
	return out
}

// pkgVars returns the names of the package-level variables of f's package
// (by its package clause) in p.
func pkgVars(p *modsrc.Package, f *modsrc.File) map[string]bool {
	out := map[string]bool{}
	for _, g := range p.Files {
		if g.Syntax == nil || g.Syntax.Name.Name != f.Syntax.Name.Name {
			continue
		}
		for _, d := range g.Syntax.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, spec := range gd.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	return out
}

// localNames returns the names fd declares: its parameters and results,
// and every variable its body declares (which may shadow a package-level
// one).
func localNames(fd *ast.FuncDecl) map[string]bool {
	out := map[string]bool{}
	add := func(fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, f := range fl.List {
			for _, n := range f.Names {
				out[n.Name] = true
			}
		}
	}
	add(fd.Recv)
	add(fd.Type.Params)
	add(fd.Type.Results)
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						out[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				out[id.Name] = true
			}
		case *ast.FuncLit:
			add(n.Type.Params)
			add(n.Type.Results)
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						out[id.Name] = true
					}
				}
			}
		}
		return true
	})
	return out
}
