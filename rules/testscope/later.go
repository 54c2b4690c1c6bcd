package testscope

import (
	"fmt"
	"go/ast"
	"go/types"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/unflake/unflake/internal/match"
)

// What a restore changes besides the test itself. A fix that scopes a
// change to the test changes what runs after it: the tests after it see
// the state the test found (not the value it leaked, not the "" a
// `defer os.Setenv(k, old)` leaves for a variable that was unset), a
// goroutine the test leaves running sees the restore, and a restore made
// by the testing package runs after the test's parallel subtests, where a
// deferred one ran before them. Each is checked here.

// reachable returns the package functions root names (called or used as
// values), and those they name, transitively. skip is a node whose
// contents are not followed.
func (c *checker) reachable(root ast.Node, skip ast.Node) map[*types.Func]bool {
	// Every fix asks about every other test: remember each root's set.
	if skip == nil {
		if seen, ok := c.reach[root]; ok {
			return seen
		}
	}
	seen := map[*types.Func]bool{}
	if skip == nil {
		if c.reach == nil {
			c.reach = map[ast.Node]map[*types.Func]bool{}
		}
		c.reach[root] = seen
	}
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		ast.Inspect(n, func(m ast.Node) bool {
			if m == nil || (skip != nil && m == skip) {
				return false
			}
			if id, ok := m.(*ast.Ident); ok {
				if fn, ok := c.info.Uses[id].(*types.Func); ok {
					for _, fn := range c.implementations(fn.Origin()) {
						if fd := c.decls[fn]; fd != nil && fd.Body != nil && !seen[fn] {
							seen[fn] = true
							walk(fd.Body)
						}
					}
				}
			}
			return true
		})
	}
	walk(root)
	return seen
}

// implementations returns fn, or for a method of an interface every
// package method of that name: a call through the interface may run any
// of them, so the rule follows them all (a Start behind a Runner
// interface that starts the goroutine).
func (c *checker) implementations(fn *types.Func) []*types.Func {
	recv := fn.Signature().Recv()
	if recv == nil || !types.IsInterface(recv.Type()) {
		return []*types.Func{fn}
	}
	var out []*types.Func
	for m, fd := range c.decls {
		if fd.Recv != nil && m.Name() == fn.Name() {
			out = append(out, m)
		}
	}
	return out
}

// A reader is code that may run after the test: another test of the
// package, or the rest of the test around a subtest.
type reader struct {
	name string
	root ast.Node
	skip ast.Node // the subtest itself, in the rest of its test
	// background: a goroutine the package's init or TestMain starts,
	// which runs beside every test, after this one too.
	background bool
}

// laterReaders lists the code that may run after sc: every other test of
// the package (in any order: -shuffle, -count), and, for a subtest, the
// test around it.
func (c *checker) laterReaders(sc *scope) []reader {
	var out []reader
	if sc.parent != nil {
		out = append(out, reader{name: c.fd.Name.Name + " after the subtest", root: c.fd.Body, skip: sc.body})
	}
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd == c.fd || fd.Body == nil || !match.IsTestFunc(c.info, fd) {
				continue
			}
			out = append(out, reader{name: fd.Name.Name + " (" + c.line(fd) + ")", root: fd.Body})
		}
	}
	return append(out, c.backgroundReaders()...)
}

// backgroundReaders are the goroutines the package's init functions and
// TestMain start, themselves or through the functions they call: a log
// level's watcher, a shared worker. They run beside every test, and a
// later test reaches what they derive from the state (an atomic level, a
// backoff they read on each retry) by no call the reach analysis follows
// (red team batch 22, levelwatch and retryknob: a restore took away the
// leaked value the later tests relied on through them).
func (c *checker) backgroundReaders() []reader {
	if c.background != nil {
		return *c.background
	}
	var out []reader
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Recv != nil || fd.Name.Name != "init" && fd.Name.Name != "TestMain" {
				continue
			}
			bodies := []ast.Node{fd.Body}
			for fn := range c.reachable(fd.Body, nil) {
				bodies = append(bodies, c.decls[fn].Body)
			}
			for _, b := range bodies {
				ast.Inspect(b, func(n ast.Node) bool {
					if g, ok := n.(*ast.GoStmt); ok {
						out = append(out, reader{name: "a goroutine " + fd.Name.Name + " starts (" + c.line(g) + ")", root: g, background: true})
					}
					return true
				})
			}
		}
	}
	c.background = &out
	return out
}

// laterRead returns a reader that may read what reads matches, through
// the package functions it reaches, without setting it itself first (see
// setsFirst: readNode matches a read, sets a statement that sets it, save
// a statement that only saves it), or "". after says the reader runs
// after the test in the source's order (a later test, the rest of the
// test around a subtest; for a helper, any test): it relied on what the
// test leaves, and is preferred to one that runs before it (which sees
// the leak only under -count or -shuffle).
func (c *checker) laterRead(sc *scope, reads func(root, skip ast.Node) bool, readNode func(ast.Node) bool, sets func(ast.Stmt) bool, save func(*ast.BlockStmt, ast.Stmt) bool) (who string, after bool) {
	self, _ := c.info.Defs[c.fd.Name].(*types.Func)
	here := c.pass.Fset.Position(c.fd.Pos())
	for _, r := range c.laterReaders(sc) {
		if r.skip == nil && c.setsFirst(r.root, readNode, sets, save) {
			continue // it sets the state itself before it reads it
		}
		if r.skip == nil && self != nil && !sc.test && c.names(r.root, self) {
			continue // it calls the helper, whose change lasts for it
		}
		read := reads(r.root, r.skip)
		for fn := range c.reachable(r.root, r.skip) {
			if read {
				break
			}
			if fn != self && reads(c.decls[fn].Body, nil) {
				read = true
			}
		}
		if !read {
			continue
		}
		at := c.pass.Fset.Position(r.root.Pos())
		if r.background || r.skip != nil || !sc.test || at.Filename > here.Filename || at.Filename == here.Filename && at.Offset > here.Offset {
			return r.name, true
		}
		if who == "" {
			who = r.name
		}
	}
	return who, false
}

// setsFirst reports whether the test body root sets the state itself, in
// a statement of its own (sets), before any statement that may read it
// (readNode, through the package functions it reaches). A set inside a
// subtest, a function literal, a branch or a loop, or after a read, does
// not count: the read before it (another subtest of the same test, run
// first) sees what the earlier test left, and a restore would change it.
// What runs only when the test ends (a defer, a t.Cleanup) reads after
// the set, and a save the test only restores from (saved := v; later v =
// saved) reads nothing the test observes.
func (c *checker) setsFirst(root ast.Node, readNode func(ast.Node) bool, sets func(ast.Stmt) bool, save func(body *ast.BlockStmt, st ast.Stmt) bool) bool {
	body, ok := root.(*ast.BlockStmt)
	if !ok {
		return false
	}
	seen := map[*types.Func]bool{}
	var readsNow func(n ast.Node) bool
	readsNow = func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(m ast.Node) bool {
			if found || m == nil {
				return false
			}
			switch m := m.(type) {
			case *ast.DeferStmt:
				return false
			case *ast.CallExpr:
				if match.IsMethod(c.info, m, "testing", "Cleanup") {
					return false
				}
			case *ast.Ident:
				if fn, ok := c.info.Uses[m].(*types.Func); ok {
					for _, fn := range c.implementations(fn.Origin()) {
						if fd := c.decls[fn]; fd != nil && fd.Body != nil && !seen[fn] {
							seen[fn] = true
							if readsNow(fd.Body) {
								found = true
							}
						}
					}
				}
			}
			if readNode(m) {
				found = true
			}
			return !found
		})
		return found
	}
	for _, st := range body.List {
		if sets(st) {
			return true
		}
		if save != nil && save(body, st) {
			continue
		}
		if readsNow(st) {
			return false
		}
	}
	return false
}

// varSave reports whether st saves v to a local the test body only
// restores v from (saved := v ... v = saved).
func (c *checker) varSave(v *types.Var) func(body *ast.BlockStmt, st ast.Stmt) bool {
	return func(body *ast.BlockStmt, st ast.Stmt) bool {
		as, ok := st.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			return false
		}
		r, ok := ast.Unparen(as.Rhs[0]).(*ast.Ident)
		l, ok2 := as.Lhs[0].(*ast.Ident)
		if !ok || !ok2 || c.info.Uses[r] != types.Object(v) {
			return false
		}
		saved, _ := c.info.ObjectOf(l).(*types.Var)
		if saved == nil || match.IsPackageLevel(saved) {
			return false
		}
		only := true
		match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || id == l || c.info.Uses[id] != types.Object(saved) || !only {
				return only
			}
			p, ok := stack[len(stack)-1].(*ast.AssignStmt)
			if !ok || len(p.Lhs) != 1 || len(p.Rhs) != 1 || p.Rhs[0] != id {
				only = false
				return false
			}
			if lid, ok := p.Lhs[0].(*ast.Ident); !ok || c.info.Uses[lid] != types.Object(v) {
				only = false
			}
			return only
		})
		return only
	}
}

func (c *checker) readsIn(root, skip ast.Node, reads func(ast.Node) bool) bool {
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		if found || n == nil || (skip != nil && n == skip) {
			return false
		}
		found = reads(n)
		return !found
	})
	return found
}

// names reports whether root names fn.
func (c *checker) names(root ast.Node, fn *types.Func) bool {
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && c.info.Uses[id] == types.Object(fn) {
			found = true
		}
		return !found
	})
	return found
}

// envReadOf returns a matcher for code that reads the environment variable
// k (a constant key), or any variable when the key is not a constant:
// os.Getenv, os.LookupEnv, os.Environ, os.ExpandEnv; or that names code
// of another package of the module that reads it (modenv.go).
func (c *checker) envReadOf(k key) func(root, skip ast.Node) bool {
	return func(root, skip ast.Node) bool {
		return c.readsIn(root, skip, c.envRead(k)) || c.modReadsIn(root, skip, k)
	}
}

// stdEnvReaders are functions of the standard library that read
// environment variables of their own: a later test that calls
// os.UserConfigDir reads HOME as surely as one that calls os.Getenv
// (red team batch 20, daemonhome: a HOME one test unset with os.Unsetenv
// made the next test's defaults an error, and t.Setenv, which puts HOME
// back, hid that bug).
var stdEnvReaders = []struct {
	pkg, name string
	vars      []string
}{
	{"os", "UserHomeDir", []string{"HOME", "USERPROFILE", "home"}},
	{"os", "UserConfigDir", []string{"XDG_CONFIG_HOME", "HOME", "AppData", "home"}},
	{"os", "UserCacheDir", []string{"XDG_CACHE_HOME", "HOME", "LocalAppData", "home"}},
	{"os", "TempDir", []string{"TMPDIR", "TMP", "TEMP", "USERPROFILE"}},
	{"os/user", "Current", []string{"HOME", "USER"}},
	{"os/exec", "LookPath", []string{"PATH"}},
}

func (c *checker) envRead(k key) func(ast.Node) bool {
	return func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return false
		}
		if match.IsPkgFunc(c.info, call, "os", "Environ", "ExpandEnv") || match.IsPkgFunc(c.info, call, "syscall", "Environ") {
			return true
		}
		for _, r := range stdEnvReaders {
			if match.IsPkgFunc(c.info, call, r.pkg, r.name) {
				return !strings.HasPrefix(string(k), "c:") || slices.Contains(r.vars, strings.TrimPrefix(string(k), "c:"))
			}
		}
		if !(match.IsPkgFunc(c.info, call, "os", "Getenv", "LookupEnv") || match.IsPkgFunc(c.info, call, "syscall", "Getenv")) || len(call.Args) != 1 {
			return false
		}
		s, ok := match.ConstString(c.info, call.Args[0])
		return !ok || !strings.HasPrefix(string(k), "c:") || key("c:"+s) == k
	}
}

// envSetOf returns whether a statement sets k itself: os.Setenv,
// t.Setenv or os.Unsetenv with the same constant key, as a statement of
// its own (`os.Setenv(k, v)`, `_ = os.Setenv(k, v)`, `if err :=
// os.Setenv(k, v); err != nil {...}`).
func (c *checker) envSetOf(k key) func(ast.Stmt) bool {
	return func(st ast.Stmt) bool {
		if !strings.HasPrefix(string(k), "c:") {
			return false
		}
		var call *ast.CallExpr
		switch st := st.(type) {
		case *ast.ExprStmt:
			call, _ = ast.Unparen(st.X).(*ast.CallExpr)
		case *ast.AssignStmt:
			if len(st.Rhs) == 1 {
				call, _ = ast.Unparen(st.Rhs[0]).(*ast.CallExpr)
			}
		case *ast.IfStmt:
			if as, ok := st.Init.(*ast.AssignStmt); ok && len(as.Rhs) == 1 {
				call, _ = ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
			}
		}
		if call == nil || len(call.Args) == 0 {
			return false
		}
		if !(match.IsPkgFunc(c.info, call, "os", "Setenv", "Unsetenv") || match.IsMethod(c.info, call, "testing", "Setenv")) {
			return false
		}
		s, ok := match.ConstString(c.info, call.Args[0])
		return ok && key("c:"+s) == k
	}
}

// varSetOf returns whether a statement assigns v itself, as a statement
// of its own (`v = 10 * time.Millisecond`).
func (c *checker) varSetOf(v *types.Var) func(ast.Stmt) bool {
	return func(st ast.Stmt) bool {
		as, ok := st.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != len(as.Rhs) {
			return false
		}
		for _, l := range as.Lhs {
			if id, ok := ast.Unparen(l).(*ast.Ident); ok && c.info.Uses[id] == types.Object(v) {
				return !c.reads(as, v, []ast.Node{l})
			}
		}
		return false
	}
}

// varReadOf reports whether root reads the package variable v outside
// skip.
func (c *checker) varReadOf(v *types.Var) func(root, skip ast.Node) bool {
	return func(root, skip ast.Node) bool {
		var sk []ast.Node
		if skip != nil {
			sk = append(sk, skip)
		}
		return c.reads(root, v, sk)
	}
}

// goroutineRead says where the test starts a goroutine (a go statement or
// time.AfterFunc, in the test or a package function it reaches) whose code
// may read v, or "": a restore of v when the test ends races with it.
func (c *checker) goroutineRead(sc *scope, v *types.Var) string {
	roots := []ast.Node{sc.body}
	for fn := range c.reachable(sc.body, nil) {
		roots = append(roots, c.decls[fn].Body)
	}
	var why string
	for _, root := range roots {
		ast.Inspect(root, func(n ast.Node) bool {
			if why != "" {
				return false
			}
			var start ast.Node
			var text string
			switch n := n.(type) {
			case *ast.GoStmt:
				start, text = n.Call, "go "+types.ExprString(n.Call)
			case *ast.CallExpr:
				if match.IsPkgFunc(c.info, n, "time", "AfterFunc") && len(n.Args) == 2 {
					start, text = n.Args[1], types.ExprString(n)
				}
			}
			if start == nil {
				return true
			}
			read := c.varReadOf(v)
			if read(start, nil) {
				why = fmt.Sprintf("%s at %s", text, c.line(n))
				return false
			}
			for fn := range c.reachable(start, nil) {
				if read(c.decls[fn].Body, nil) {
					why = fmt.Sprintf("%s at %s", text, c.line(n))
					return false
				}
			}
			return true
		})
	}
	if why == "" {
		why = c.opaqueStart(roots, v)
	}
	return why
}

// syncCallbacks are packages whose functions run the callbacks they are
// given before returning, never in a goroutine of their own.
var syncCallbacks = map[string]bool{
	"testing": true, "sort": true, "slices": true, "maps": true, "strings": true,
	"bytes": true, "fmt": true, "errors": true, "strconv": true, "reflect": true,
}

// opaqueStart says where the test calls code the rule cannot follow that
// may start a goroutine reading v, or "": a call of a function value
// (when some goroutine of the package reads v), or a call into another
// package given a function or a value of one of the package's types
// (when the package reads v anywhere): such code may leave a goroutine
// that reads v when the cleanup restores it.
func (c *checker) opaqueStart(roots []ast.Node, v *types.Var) string {
	read := c.varReadOf(v)
	pkgReads, goReads := false, false
	for _, fd := range c.decls {
		if fd.Body == nil || !read(fd.Body, nil) {
			continue
		}
		pkgReads = true
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok && read(g.Call, nil) {
				goReads = true
			}
			return !goReads
		})
	}
	// A go statement in a function that reads v only through a call.
	if !goReads {
		for _, fd := range c.decls {
			if fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok && !goReads {
					for fn := range c.reachable(g.Call, nil) {
						if read(c.decls[fn].Body, nil) {
							goReads = true
						}
					}
				}
				return !goReads
			})
		}
	}
	if !pkgReads {
		return ""
	}
	var why string
	for _, root := range roots {
		ast.Inspect(root, func(n ast.Node) bool {
			if why != "" {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if tv, ok := c.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
				return true
			}
			if _, lit := ast.Unparen(call.Fun).(*ast.FuncLit); lit {
				return true
			}
			fn := match.Callee(c.info, call)
			switch {
			case fn == nil:
				if goReads {
					why = fmt.Sprintf("%s at %s, a call of a function value the rule cannot follow (it may start a goroutine)", types.ExprString(call.Fun), c.line(call))
				}
			case fn.Pkg() != nil && fn.Pkg() != c.pass.Pkg && !syncCallbacks[fn.Pkg().Path()]:
				for _, arg := range call.Args {
					if c.mayReach(arg) {
						why = fmt.Sprintf("%s at %s, in package %s, which the rule cannot follow and is given code of this package (it may run it in a goroutine)", types.ExprString(call.Fun), c.line(call), fn.Pkg().Path())
						break
					}
				}
			}
			return why == ""
		})
	}
	return why
}

// mayReach reports whether arg hands another package code of this
// package: a function, or a value of a type with methods declared here.
func (c *checker) mayReach(arg ast.Expr) bool {
	t := c.info.TypeOf(arg)
	if t == nil {
		return false
	}
	if _, ok := t.Underlying().(*types.Signature); ok {
		return true
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() == c.pass.Pkg && n.NumMethods() > 0 {
		return true
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() == c.pass.Pkg && types.IsInterface(t) {
		return true // may hold one of the package's types
	}
	return false
}

// parallelSubtest says where sc runs a subtest that may run in parallel
// (its function calls t.Parallel, or the rule cannot see its function), or
// "": a parallel subtest runs after the test function returns, so after
// its deferred calls and before its cleanups.
func (c *checker) parallelSubtest(sc *scope) string {
	var why string
	ast.Inspect(sc.body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 || !match.IsMethod(c.info, call, "testing", "Run") {
			return true
		}
		var body ast.Node
		switch f := ast.Unparen(call.Args[1]).(type) {
		case *ast.FuncLit:
			body = f.Body
		default:
			if fn := match.FuncOf(c.info, f); fn != nil && c.decls[fn.Origin()] != nil {
				body = c.decls[fn.Origin()].Body
			}
		}
		if body == nil || c.callsParallel(body) {
			why = "t.Run at " + c.line(call)
			return false
		}
		return true
	})
	if why == "" {
		why = c.hiddenSubtest(sc)
	}
	return why
}

// hiddenSubtest says where sc may start a subtest the rule does not see
// as a t.Run call of its own body, or "": through a function of the
// package it reaches (a helper of the test file, package code running a
// conformance suite), t.Run taken as a value, a t.Run in a goroutine, or
// a function outside the package handed a *testing.T. Each such subtest
// may call t.Parallel and run after the test function returns (red team
// batch 34, parallel subtests behind a helper).
func (c *checker) hiddenSubtest(sc *scope) string {
	// testing's Run, Parallel or Fuzz, or a method so named of an
	// interface (one a value is asserted to, tb.(interface{ Parallel() }),
	// a type parameter's constraint): the *testing.T behind it is out of
	// sight (red team batch 35, drainpar, breakerqt).
	isRun := func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		fn, ok := c.info.Uses[sel.Sel].(*types.Func)
		if !ok || fn.Name() != "Run" && fn.Name() != "Parallel" && fn.Name() != "Fuzz" {
			return false
		}
		if fn.Pkg() != nil && fn.Pkg().Path() == "testing" {
			return true
		}
		recv := fn.Signature().Recv()
		return recv != nil && types.IsInterface(recv.Type())
	}
	for fn := range c.reachable(sc.body, nil) {
		if c.readsIn(c.decls[fn].Body, nil, isRun) {
			return fmt.Sprintf("%s, which the test reaches, runs subtests or calls t.Parallel", fn.Name())
		}
	}
	why := ""
	match.WithStack(sc.body, func(n ast.Node, stack []ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if !isRun(n) {
				return true
			}
			call, ok := stack[len(stack)-1].(*ast.CallExpr)
			if !ok || call.Fun != n {
				why = "t.Run taken as a value at " + c.line(n)
				return false
			}
			if sel := c.info.Selections[n]; sel == nil || sel.Kind() != types.MethodVal || !match.IsNamed(sel.Recv(), "testing", "T", "B", "F") {
				why = "a subtest started other than by t.Run at " + c.line(n)
				return false
			}
			if n.Sel.Name == "Fuzz" && len(call.Args) == 1 {
				if lit, ok := ast.Unparen(call.Args[0]).(*ast.FuncLit); !ok || c.callsParallel(lit.Body) {
					why = "f.Fuzz at " + c.line(n) + ", whose inputs may run in parallel"
					return false
				}
			}
			for _, p := range stack {
				if _, ok := p.(*ast.GoStmt); ok {
					why = "t.Run in a goroutine at " + c.line(n)
					return false
				}
			}
		case *ast.CallExpr:
			fn := match.FuncOf(c.info, n.Fun)
			if fn != nil && (c.decls[fn.Origin()] != nil || fn.Pkg() != nil && fn.Pkg().Path() == "testing") {
				return true // read above, or testing's own
			}
			sig, ok := c.info.TypeOf(n.Fun).Underlying().(*types.Signature)
			if !ok {
				return true // a conversion
			}
			for i, a := range n.Args {
				if !match.IsNamed(c.info.TypeOf(a), "testing", "T") {
					continue
				}
				if i < sig.Params().Len() && types.IsInterface(sig.Params().At(i).Type()) && !match.HandleMay(sig.Params().At(i).Type(), "Run", "Parallel") {
					continue // an assertion library's TestingT: it cannot start a subtest
				}
				why = fmt.Sprintf("the test's *testing.T is handed to code the rule does not read at %s, which may run subtests", c.line(n))
				return false
			}
		}
		return true
	})
	return why
}

// callsParallel reports whether body, or a package function it reaches,
// calls t.Parallel.
func (c *checker) callsParallel(body ast.Node) bool {
	isPar := func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		return ok && match.IsMethod(c.info, call, "testing", "Parallel")
	}
	if c.readsIn(body, nil, isPar) {
		return true
	}
	for fn := range c.reachable(body, nil) {
		if c.readsIn(c.decls[fn].Body, nil, isPar) {
			return true
		}
	}
	return false
}

// nameHazard says why the name t.TempDir puts in its path may hold
// characters the code may read as syntax, or "": t.TempDir names its
// directory after the test (the first 64 bytes of t.Name(), keeping
// letters, digits and !#$%&()+,-.=@^_{}~), so a subtest named "issue #12"
// puts a '#' in the path, which starts a comment in a key=value file, a
// fragment in a URL, a variable in a shell line. A test function's own
// name is an identifier; a subtest's name the rule cannot read (tc.name)
// may hold anything, and so may the test of a helper when any subtest of
// the package is named that way. The test function's own name goes into
// the path first, and a Go identifier may hold any letter: a test named
// TestIndexRésumés puts an 'é' there (red team batch 19, quotepath), so
// the whole name is checked, function and subtests; for a helper, every
// test function of the package.
func (c *checker) nameHazard(sc *scope) string {
	if !sc.test {
		var why string
		for _, f := range c.pass.AllFiles {
			ast.Inspect(f, func(n ast.Node) bool {
				if why != "" {
					return false
				}
				if fd, ok := n.(*ast.FuncDecl); ok && fd.Recv == nil && isTestName(fd.Name.Name) {
					if w := c.funcNameHazard(fd); w != "" {
						why = w + "; the helper may run in that test"
					}
				}
				if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 2 && match.IsMethod(c.info, call, "testing", "Run") {
					if w := c.runNameHazard(call); w != "" {
						why = w + "; the helper may run in that subtest"
					}
				}
				return why == ""
			})
		}
		return why
	}
	if why := c.funcNameHazard(c.fd); why != "" {
		return why
	}
	for s := sc; s != nil; s = s.parent {
		if s.run == nil {
			continue // the test function, or a bubble of its body
		}
		if why := c.runNameHazard(s.run); why != "" {
			return why
		}
	}
	return ""
}

// funcNameHazard says why the name of the test function fd, the first
// element of t.Name() and so of t.TempDir's path, puts a character
// outside ASCII in the path, or "": an identifier holds only letters,
// digits and '_', but any letter or digit, and t.TempDir keeps them all.
func (c *checker) funcNameHazard(fd *ast.FuncDecl) string {
	for _, r := range fd.Name.Name {
		if r >= utf8.RuneSelf {
			return fmt.Sprintf("the test's name %s (%s) puts %q into t.TempDir's path, a character outside ASCII that code accepting only portable paths refuses or quotes (git's core.quotePath)", fd.Name.Name, c.line(fd.Name), r)
		}
	}
	return ""
}

// isTestName reports whether name is a test, benchmark or fuzz target's
// by its prefix, as the go command requires; read from the syntax, so
// that files of other builds count too.
func isTestName(name string) bool {
	for _, p := range []string{"Test", "Benchmark", "Fuzz"} {
		if rest, ok := strings.CutPrefix(name, p); ok && (rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z')) {
			return true
		}
	}
	return false
}

// runNameHazard says why the name of the t.Run call may put characters
// other than ASCII letters, digits, '-', '.' and '_' in a path, or "".
func (c *checker) runNameHazard(call *ast.CallExpr) string {
	names, ok := c.constNames(call.Args[0])
	if !ok {
		return fmt.Sprintf("the subtest's name (%s, t.Run at %s) goes into t.TempDir's path and may hold characters such as # $ %% & = that code reading the path as text treats as syntax", types.ExprString(call.Args[0]), c.line(call))
	}
	if why := c.uniqueNameHazard(call, names); why != "" {
		return why
	}
	for _, s := range names {
		for _, r := range s {
			if strings.ContainsRune("!#$%&()+,=@^{}~", r) {
				return fmt.Sprintf("the subtest's name %q (t.Run at %s) puts %q into t.TempDir's path, which code reading the path as text may treat as syntax", s, c.line(call), r)
			}
			// t.TempDir keeps every letter and digit, not only ASCII
			// ones: "français" puts a 'ç' in the path, which code that
			// accepts only portable paths refuses (red team batch 18,
			// portablepath).
			if r >= utf8.RuneSelf {
				return fmt.Sprintf("the subtest's name %q (t.Run at %s) puts %q into t.TempDir's path, a character outside ASCII that code accepting only portable paths refuses", s, c.line(call), r)
			}
		}
	}
	return ""
}

// uniqueNameHazard says why the testing package may append "#NN" to the
// name of the t.Run call, whose values are names, or "": it makes each
// subtest's name unique under its parent, so a name that comes twice (a
// table's two rows named alike, "a b" beside "a_b" once spaces become
// underscores, a constant name run in a loop or by another t.Run of the
// same function) gets "#01", and an empty one "#00"; the '#' goes into
// t.TempDir's path, where a URL built from it loses the rest as a
// fragment (red team batch 24, dupname).
func (c *checker) uniqueNameHazard(call *ast.CallExpr, names []string) string {
	hazard := func(what string) string {
		return fmt.Sprintf("the subtest's name (t.Run at %s) %s, so the testing package appends \"#NN\" to make it unique, which puts '#' into t.TempDir's path, where code reading the path as text may treat it as syntax (a URL's fragment)", c.line(call), what)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" {
			return hazard("may be empty")
		}
		u := strings.ReplaceAll(n, " ", "_")
		if seen[u] {
			return hazard(fmt.Sprintf("may be %q twice", n))
		}
		seen[u] = true
	}
	fd := c.declOf(call)
	if fd == nil || fd.Body == nil {
		return ""
	}
	// Loops around the call: the range statement over the names' own
	// list is one, when the name is read from it.
	loops, fromList := 0, len(names) > 1 || !isConst(c, call.Args[0])
	var stack []ast.Node
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		if n == ast.Node(call) {
			for _, a := range stack {
				switch a.(type) {
				case *ast.ForStmt, *ast.RangeStmt:
					loops++
				}
			}
		}
		stack = append(stack, n)
		return true
	})
	if fromList {
		loops--
	}
	if loops > 0 {
		return hazard("is run more than once, in a loop")
	}
	var twin *ast.CallExpr
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		other, ok := n.(*ast.CallExpr)
		if !ok || other == call || twin != nil || len(other.Args) != 2 || !match.IsMethod(c.info, other, "testing", "Run") {
			return twin == nil
		}
		if more, ok := c.constNames(other.Args[0]); ok {
			for _, m := range more {
				if seen[strings.ReplaceAll(m, " ", "_")] {
					twin = other
				}
			}
		}
		return twin == nil
	})
	if twin != nil {
		return hazard(fmt.Sprintf("is also the name of the t.Run at %s", c.line(twin)))
	}
	return ""
}

// isConst reports whether e is a constant string.
func isConst(c *checker, e ast.Expr) bool {
	_, ok := match.ConstString(c.info, e)
	return ok
}

// declOf returns the function declaration, of the package's files, that
// holds n, or nil.
func (c *checker) declOf(n ast.Node) *ast.FuncDecl {
	for _, f := range c.pass.AllFiles {
		if f.Pos() > n.Pos() || n.End() > f.End() {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Pos() <= n.Pos() && n.End() <= fd.End() {
				return fd
			}
		}
	}
	return nil
}

// constNames returns every value a subtest's name can take, when the rule
// can read them all: a constant, the range variable over a literal list of
// constants, or a field of the range variable over a literal list of
// struct literals (tc.name); the list may be a local variable that is
// only assigned where it is declared.
func (c *checker) constNames(e ast.Expr) ([]string, bool) {
	if s, ok := match.ConstString(c.info, e); ok {
		return []string{s}, true
	}
	field, base := "", e
	if sel, ok := ast.Unparen(e).(*ast.SelectorExpr); ok {
		field, base = sel.Sel.Name, sel.X
	}
	v := c.used(base)
	if v == nil {
		return nil, false
	}
	lit := c.rangeLiteral(v)
	if lit == nil {
		return nil, false
	}
	var out []string
	for _, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			el = kv.Value
		}
		if field != "" {
			if el = c.fieldOf(el, field); el == nil {
				return nil, false
			}
		}
		s, ok := match.ConstString(c.info, el)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// rangeLiteral returns the literal list the range statement that declares
// v as its value ranges over (directly or through a local variable
// assigned only where declared), or nil.
func (c *checker) rangeLiteral(v *types.Var) *ast.CompositeLit {
	var x ast.Expr
	ast.Inspect(c.fd.Body, func(n ast.Node) bool {
		if rs, ok := n.(*ast.RangeStmt); ok && rs.Value != nil && c.defined(rs.Value) == v {
			x = rs.X
		}
		return x == nil
	})
	if x == nil {
		return nil
	}
	if lit, ok := ast.Unparen(x).(*ast.CompositeLit); ok {
		return lit
	}
	list := c.used(x)
	if list == nil || match.IsPackageLevel(list) {
		return nil
	}
	var lit *ast.CompositeLit
	writes := 0
	ast.Inspect(c.fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if c.defined(l) == list && n.Tok.String() == ":=" && len(n.Rhs) == len(n.Lhs) {
					lit, _ = ast.Unparen(n.Rhs[i]).(*ast.CompositeLit)
				} else if c.used(l) == list || match.Root(c.info, l) == list {
					writes++
				}
			}
		case *ast.UnaryExpr:
			if c.used(n.X) == list {
				writes++ // &list
			}
		case *ast.CallExpr:
			for _, a := range n.Args {
				if c.used(a) == list && match.IsBuiltin(c.info, n.Fun, "append", "copy") {
					writes++
				}
			}
		}
		return true
	})
	if writes > 0 {
		return nil
	}
	return lit
}

// fieldOf returns the value of field in the struct literal el (or &el),
// or nil.
func (c *checker) fieldOf(el ast.Expr, field string) ast.Expr {
	if u, ok := ast.Unparen(el).(*ast.UnaryExpr); ok {
		el = u.X
	}
	lit, ok := ast.Unparen(el).(*ast.CompositeLit)
	if !ok {
		return nil
	}
	st, ok := c.info.TypeOf(lit).Underlying().(*types.Struct)
	if !ok {
		return nil
	}
	for i, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == field {
				return kv.Value
			}
			continue
		}
		if i < st.NumFields() && st.Field(i).Name() == field {
			return e
		}
	}
	return nil
}

// modeHazard says where the test, or a package function it gives the
// directory (or something built from it), reads a file's mode, or "":
// t.TempDir's directory is made with mode 0777 less the umask (0755 under
// the usual 022), where os.MkdirTemp's is 0700, so code that refuses a
// directory others can read (as ssh and gpg agents do) refuses it on
// correct code. How it turns out depends on the umask of the machine that
// runs the tests.
func (c *checker) modeHazard(body *ast.BlockStmt, dir *types.Var) string {
	under := c.derived(body, dir)
	mentions := func(n ast.Node) bool { return c.usesAny(n, under) }
	var why string
	ast.Inspect(body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || !mentions(call) {
			return true
		}
		if at := c.readsMode(call); at != "" {
			why = fmt.Sprintf("%s at %s", types.ExprString(call.Fun), c.line(call))
			return false
		}
		if fn := match.Callee(c.info, call); fn != nil && c.decls[fn.Origin()] != nil {
			fd := c.decls[fn.Origin()]
			roots := []ast.Node{fd.Body}
			for g := range c.reachable(fd.Body, nil) {
				roots = append(roots, c.decls[g].Body)
			}
			for _, r := range roots {
				ast.Inspect(r, func(m ast.Node) bool {
					if why != "" {
						return false
					}
					if inner, ok := m.(*ast.CallExpr); ok {
						if at := c.readsMode(inner); at != "" {
							why = fmt.Sprintf("the test gives it to %s at %s, which reads a mode (%s at %s)", types.ExprString(call.Fun), c.line(call), at, c.line(inner))
						}
					}
					return why == ""
				})
			}
		}
		return why == ""
	})
	return why
}

// readsMode names the call when it reads permission bits: a Mode or Perm
// method of io/fs (after a stat), or an access check. A stat alone (does
// the file exist?) does not see the mode.
func (c *checker) readsMode(call *ast.CallExpr) string {
	switch {
	case match.IsMethod(c.info, call, "io/fs", "Mode", "Perm"),
		match.IsPkgFunc(c.info, call, "syscall", "Stat", "Lstat", "Access"),
		match.IsPkgFunc(c.info, call, "golang.org/x/sys/unix", "Stat", "Lstat", "Access", "Faccessat"):
		return types.ExprString(call.Fun)
	}
	return ""
}
