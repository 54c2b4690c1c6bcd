package testscope

import (
	_ "embed"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule scopes process-wide state a test changes to the test.
var Rule = &rule.Rule{
	Name:      "testscope",
	Doc:       doc,
	Default:   true,
	Flags:     rule.Flags("testscope", scopeGlobals),
	Prefilter: prefilter,
	Run:       run,
	Requires:  []*rule.Analysis{match.Decls},
}

// scopeGlobals is --scope-globals. A write to a package-level variable
// looks like any other assignment, so looking for them means
// type-checking every package with tests: opt-in, to keep the default run
// fast on big repositories.
var scopeGlobals = rule.BoolOption("scope-globals", false, "testscope: also restore the package-level variables tests change (reads every test file: slower on big repositories)")

// assignRE matches a line that assigns to a plain or qualified name: a
// write to a package-level variable looks like any other assignment, so
// the prefilter cannot be sharper without missing one.
var assignRE = regexp.MustCompile(`(?m)^\s*[A-Za-z_][A-Za-z0-9_.]*(\s*,\s*[A-Za-z_][A-Za-z0-9_.]*)*\s*=[^=]`)

func prefilter(src []byte, opts rule.Values) bool {
	return rule.ContainsAny(src, "Setenv", "Unsetenv", "MkdirTemp", "TempDir", "Chdir", "WithCancel") || scopeGlobals.Of(opts) && assignRE.Match(src)
}

func run(pass *rule.Pass) error {
	c := &checker{
		pass:  pass,
		info:  pass.TypesInfo,
		decls: match.DeclsOf(pass),
		memo:  map[*types.Func][]envWrite{},
	}
	c.parallelCallers, c.mayBeParallel = c.helpersCalledInParallel()
	for _, f := range pass.Files {
		if !strings.HasSuffix(pass.Fset.File(f.Pos()).Name(), "_test.go") || ast.IsGenerated(f) {
			continue
		}
		c.file = f
		c.version = pass.FileVersion(f)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Name.Name == "TestMain" {
				continue
			}
			t := c.testParam(fd.Type)
			if t == nil {
				continue // not a test nor a helper: no t to scope the change to
			}
			c.fd = fd
			c.taken = map[string]bool{}
			sc := &scope{body: fd.Body, t: t, test: match.IsTestFunc(c.info, fd)}
			if !sc.test {
				fn, _ := c.info.Defs[fd.Name].(*types.Func)
				sc.helperParallel = fn != nil && c.parallelCallers[fn]
				if fn != nil {
					sc.helperMaybe = c.mayBeParallel[fn]
				}
			}
			c.checkScope(sc)
		}
	}
	return nil
}

// checker checks the tests of one package.
type checker struct {
	// listsTemp caches codeListsTemp: nil until it is asked.
	listsTemp *string
	pass      *rule.Pass
	info      *types.Info
	decls     map[*types.Func]*ast.FuncDecl
	memo      map[*types.Func][]envWrite

	// parallelCallers: helpers a function that calls t.Parallel reaches
	// through calls.
	parallelCallers map[*types.Func]bool
	// mayBeParallel: why a helper may be reached by a call the rule
	// cannot follow (a function value), so perhaps from a parallel test.
	mayBeParallel map[*types.Func]string

	file    *ast.File
	version string
	fd      *ast.FuncDecl
	taken   map[string]bool // names the fixes in fd declared

	// reach: the package functions each root reaches (reachable).
	reach map[ast.Node]map[*types.Func]bool
	// background are the goroutines init and TestMain start (later.go), once known.
	background *[]reader
	// leftOut: the files the typed build leaves out (leftOutReader).
	leftOut *leftOut
	// modEnv: the module's packages, read for environment reads (modenv.go).
	modEnv *modEnv
}

// A scope is a test, subtest or helper: a function with a t.
type scope struct {
	body           *ast.BlockStmt
	t              *types.Var
	test           bool // a test, benchmark, fuzz target or t.Run subtest, not a helper
	parallel       bool // it calls t.Parallel
	helperParallel bool // a helper some caller of which runs in parallel
	// helperMaybe says why a helper may run in a parallel test, when the
	// rule cannot tell (it is used as a function value).
	helperMaybe string
	parent      *scope
	// run is the t.Run call of a subtest, whose name goes into the
	// subtest's t.Name() and so into its t.TempDir path.
	run *ast.CallExpr
}

// inParallel reports whether sc or a test enclosing it runs in parallel.
func (sc *scope) inParallel() bool {
	for s := sc; s != nil; s = s.parent {
		if s.parallel || s.helperParallel {
			return true
		}
	}
	return false
}

// maybeParallel says why sc may run in a parallel test although the rule
// cannot see it does, or "".
func (sc *scope) maybeParallel() string {
	for s := sc; s != nil; s = s.parent {
		if s.helperMaybe != "" {
			return s.helperMaybe
		}
	}
	return ""
}

// A site is a statement of a scope, with the block or clause holding it.
type site struct {
	stmt   ast.Stmt
	parent ast.Node
}

// testParam returns the *testing.T, B, F or testing.TB parameter of typ.
func (c *checker) testParam(typ *ast.FuncType) *types.Var {
	if typ == nil || typ.Params == nil {
		return nil
	}
	for _, p := range typ.Params.List {
		if !match.IsNamed(c.info.TypeOf(p.Type), "testing", "T", "B", "F", "TB") {
			continue
		}
		for _, n := range p.Names {
			if v, ok := c.info.Defs[n].(*types.Var); ok && n.Name != "_" {
				return v
			}
		}
	}
	return nil
}

// checkScope checks the statements of sc and then its subtests.
func (c *checker) checkScope(sc *scope) {
	var sites []site
	var subs []*scope
	match.WithStack(sc.body, func(n ast.Node, stack []ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			if t := c.subtestParam(n, stack); t != nil {
				subs = append(subs, &scope{body: n.Body, t: t, test: true, parent: sc, run: stack[len(stack)-1].(*ast.CallExpr)})
			}
			if t := c.bubbleParam(n, stack); t != nil {
				// The test's own body, moved into a bubble (by hand or by
				// the sleep rule): its t is the test's, scoped to the
				// bubble, and its cleanups run before synctest.Test
				// returns.
				subs = append(subs, &scope{body: n.Body, t: t, test: sc.test, helperParallel: sc.helperParallel, helperMaybe: sc.helperMaybe, parent: sc})
			}
			return false // statements of other closures run at another time
		case *ast.CallExpr:
			if c.isTCall(n, sc.t, "Parallel") {
				sc.parallel = true
			}
		case ast.Stmt:
			if len(stack) > 0 && match.StmtList(stack[len(stack)-1]) != nil {
				sites = append(sites, site{n, stack[len(stack)-1]})
			}
		}
		return true
	})
	c.env(sc, sites)
	c.tempDirs(sc, sites)
	c.chdirs(sc, sites)
	c.contexts(sc, sites)
	if scopeGlobals.Get(c.pass) {
		c.vars(sc, sites)
	}
	for _, sub := range subs {
		c.checkScope(sub)
	}
}

// subtestParam returns the t of lit when lit is the function of a t.Run
// call, or nil.
func (c *checker) subtestParam(lit *ast.FuncLit, stack []ast.Node) *types.Var {
	if len(stack) == 0 {
		return nil
	}
	call, ok := stack[len(stack)-1].(*ast.CallExpr)
	if !ok || len(call.Args) != 2 || ast.Unparen(call.Args[1]) != lit || !match.IsMethod(c.info, call, "testing", "Run") {
		return nil
	}
	return c.testParam(lit.Type)
}

// bubbleParam returns the t of lit when lit is the function of a
// synctest.Test(t, lit) call, or nil.
func (c *checker) bubbleParam(lit *ast.FuncLit, stack []ast.Node) *types.Var {
	if len(stack) == 0 {
		return nil
	}
	call, ok := stack[len(stack)-1].(*ast.CallExpr)
	if !ok || len(call.Args) != 2 || ast.Unparen(call.Args[1]) != lit || !match.IsPkgFunc(c.info, call, "testing/synctest", "Test") {
		return nil
	}
	return c.testParam(lit.Type)
}

// isTCall reports whether call is t.name(...) on the variable t.
func (c *checker) isTCall(call *ast.CallExpr, t *types.Var, name string) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name || !match.IsMethod(c.info, call, "testing", name) {
		return false
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	return ok && c.info.Uses[id] == types.Object(t)
}

// helpersCalledInParallel returns the package functions a function that
// calls t.Parallel (or a parallel subtest's) reaches through calls, directly
// or through other helpers: t.Setenv in such a helper would panic. It also
// returns, for the functions that may be reached by a call the rule cannot
// follow, why: a function used as a value (stored in a table, a struct
// field, passed as an argument) may be called from anywhere, a parallel
// subtest included (`tc.setup(t)` after `t.Parallel()`), and so may what
// it calls.
func (c *checker) helpersCalledInParallel() (map[*types.Func]bool, map[*types.Func]string) {
	calls := map[*types.Func][]*types.Func{}
	var roots []*types.Func
	escaped := map[*types.Func]string{}
	for fn, fd := range c.decls {
		if fd.Body == nil {
			continue
		}
		parallel := false
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if match.IsMethod(c.info, call, "testing", "Parallel") {
					parallel = true
				}
				if callee := match.Callee(c.info, call); callee != nil && c.decls[callee.Origin()] != nil {
					calls[fn] = append(calls[fn], callee.Origin())
				}
			}
			return true
		})
		if parallel {
			roots = append(roots, fn)
		}
	}
	for _, f := range c.pass.AllFiles {
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			fn, ok := c.info.Uses[id].(*types.Func)
			if !ok || c.decls[fn.Origin()] == nil || escaped[fn.Origin()] != "" || calledAt(id, stack) {
				return true
			}
			pos := c.pass.Fset.Position(id.Pos())
			escaped[fn.Origin()] = fmt.Sprintf("%s is used as a function value (%s:%d), so a test that runs in parallel may call it", id.Name, filepath.Base(pos.Filename), pos.Line)
			return true
		})
	}
	// Have: the direct calls between package functions, the functions
	// that call t.Parallel, and those used as values.
	inParallel := map[*types.Func]bool{}
	var reach func(fn *types.Func)
	reach = func(fn *types.Func) {
		for _, callee := range calls[fn] {
			if !inParallel[callee] {
				inParallel[callee] = true
				reach(callee)
			}
		}
	}
	for _, fn := range roots {
		reach(fn)
	}
	maybe := map[*types.Func]string{}
	var spread func(fn *types.Func, why string)
	spread = func(fn *types.Func, why string) {
		for _, callee := range calls[fn] {
			if maybe[callee] == "" && escaped[callee] == "" {
				maybe[callee] = why
				spread(callee, why)
			}
		}
	}
	for fn, why := range escaped {
		maybe[fn] = why
	}
	for fn, why := range escaped {
		spread(fn, why)
	}
	return inParallel, maybe
}

// calledAt reports whether id, with its enclosing nodes in stack, names
// the function a call calls (f(x), x.f(y)), not a value of it.
func calledAt(id *ast.Ident, stack []ast.Node) bool {
	var e ast.Node = id
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr:
			e = p
			continue
		case *ast.SelectorExpr:
			if p.Sel == id {
				e = p
				continue
			}
			return false
		case *ast.IndexExpr, *ast.IndexListExpr:
			// An instantiation f[T] of a generic function.
			if x, ok := p.(*ast.IndexExpr); ok && x.X != e {
				return false
			}
			if x, ok := p.(*ast.IndexListExpr); ok && x.X != e {
				return false
			}
			e = p
			continue
		case *ast.CallExpr:
			return p.Fun == e
		case *ast.FuncDecl:
			return p.Name == id // the declaration itself
		}
		return false
	}
	return false
}

// atLeast reports whether the file's go version is at least v.
func (c *checker) atLeast(v string) bool {
	return c.pass.FileUsesGo(c.file, v)
}

// tooOld is the reason a fix needing go version v is not made.
func (c *checker) tooOld(api, v string) string {
	have := c.version
	if have == "" {
		have = "unknown"
	}
	return fmt.Sprintf("%s needs %s; the file's go version is %s", api, v, have)
}

// resolves reports whether name, used at pos, refers to obj.
func (c *checker) resolves(name string, pos token.Pos, obj types.Object) bool {
	s := c.pass.Pkg.Scope().Innermost(pos)
	if s == nil {
		return false
	}
	_, found := s.LookupParent(name, pos)
	return found == obj
}

// tCall builds t.name(args...).
func tCall(t, name string, args ...dst.Expr) *dst.CallExpr {
	return &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(t), Sel: dst.NewIdent(name)}, Args: args}
}

// deleteStmts removes stmts from their parent's statement list.
func (c *checker) deleteStmts(parent ast.Node, stmts ...ast.Stmt) error {
	for _, s := range stmts {
		if !match.DeleteStmt(c.pass.Dst(parent), c.pass.Dst(s).(dst.Stmt)) {
			return errNotInParent
		}
	}
	return nil
}

// errNotInParent is a broken invariant of a fix: a statement it edits is
// not where the analysis found it.
var errNotInParent = errors.New("a statement not in its parent's list")

// replaceStmt puts repl in the place of old in parent's statement list.
func (c *checker) replaceStmt(parent ast.Node, old ast.Stmt, repl dst.Stmt) error {
	list := match.DstStmtList(c.pass.Dst(parent))
	o := c.pass.Dst(old)
	for i, s := range *list {
		if s == o {
			(*list)[i] = repl
			return nil
		}
	}
	return errNotInParent
}

// insertBefore inserts stmts before at in parent's statement list.
func (c *checker) insertBefore(parent ast.Node, at ast.Stmt, stmts ...dst.Stmt) error {
	list := match.DstStmtList(c.pass.Dst(parent))
	a := c.pass.Dst(at)
	for i, s := range *list {
		if s == a {
			for _, st := range stmts {
				st.Decorations().Before = dst.NewLine
			}
			*list = append((*list)[:i:i], append(stmts, (*list)[i:]...)...)
			return nil
		}
	}
	return errNotInParent
}

// deletes lists stmts with the comments next to them, which go with them.
func (c *checker) deletes(parent ast.Node, stmts ...ast.Stmt) []ast.Node {
	var out []ast.Node
	for _, s := range stmts {
		out = append(out, s)
		out = append(out, match.AdjacentComments(c.file, parent, s)...)
	}
	return out
}

// restoreCall returns the call a deferred or cleanup statement makes:
// defer f(x), defer func() { f(x) }(), t.Cleanup(func() { f(x) }), where
// the statement in the literal may also be `_ = f(x)` or
// `if err := f(x); err != nil { ... }`.
func (c *checker) restoreCall(st ast.Stmt) *ast.CallExpr {
	var lit *ast.FuncLit
	switch st := st.(type) {
	case *ast.DeferStmt:
		if l, ok := ast.Unparen(st.Call.Fun).(*ast.FuncLit); ok {
			if len(st.Call.Args) != 0 {
				return nil
			}
			lit = l
		} else {
			return st.Call
		}
	case *ast.ExprStmt:
		call, ok := ast.Unparen(st.X).(*ast.CallExpr)
		if !ok || len(call.Args) != 1 || !match.IsMethod(c.info, call, "testing", "Cleanup") {
			return nil
		}
		lit, _ = ast.Unparen(call.Args[0]).(*ast.FuncLit)
	}
	if lit == nil || len(lit.Body.List) != 1 || lit.Type.Params.NumFields() != 0 {
		return nil
	}
	return callOfStmt(lit.Body.List[0])
}

// callOfStmt returns the call of f(x), _ = f(x) or
// if err := f(x); err != nil { ... }.
func callOfStmt(st ast.Stmt) *ast.CallExpr {
	switch st := st.(type) {
	case *ast.ExprStmt:
		call, _ := ast.Unparen(st.X).(*ast.CallExpr)
		return call
	case *ast.AssignStmt:
		if len(st.Lhs) == 1 && len(st.Rhs) == 1 && isBlank(st.Lhs[0]) {
			call, _ := ast.Unparen(st.Rhs[0]).(*ast.CallExpr)
			return call
		}
	case *ast.IfStmt:
		if st.Else != nil {
			return nil
		}
		if a, ok := st.Init.(*ast.AssignStmt); ok && len(a.Lhs) == 1 && len(a.Rhs) == 1 {
			call, _ := ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
			return call
		}
	}
	return nil
}

func isBlank(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && id.Name == "_"
}

// errIf returns the variable err of `if err := call; err != nil { ... }`
// when stmt is that statement for call, without an else.
func (c *checker) errIf(stmt ast.Stmt, call *ast.CallExpr) *types.Var {
	is, ok := stmt.(*ast.IfStmt)
	if !ok || is.Else != nil {
		return nil
	}
	a, ok := is.Init.(*ast.AssignStmt)
	if !ok || a.Tok != token.DEFINE || len(a.Lhs) != 1 || len(a.Rhs) != 1 || ast.Unparen(a.Rhs[0]) != call {
		return nil
	}
	id, ok := a.Lhs[0].(*ast.Ident)
	if !ok {
		return nil
	}
	v, _ := c.info.Defs[id].(*types.Var)
	if v == nil || !c.isNilCheck(is.Cond, v) {
		return nil
	}
	return v
}

// isNilCheck reports whether cond is v != nil.
func (c *checker) isNilCheck(cond ast.Expr, v *types.Var) bool {
	b, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok || b.Op != token.NEQ {
		return false
	}
	x, ok := ast.Unparen(b.X).(*ast.Ident)
	y, ok2 := ast.Unparen(b.Y).(*ast.Ident)
	return ok && ok2 && c.info.Uses[x] == types.Object(v) && y.Name == "nil"
}

// errCheck reports whether stmt is `if err != nil { ... }`, no init, no
// else, for v.
func (c *checker) errCheck(stmt ast.Stmt, v *types.Var) bool {
	is, ok := stmt.(*ast.IfStmt)
	return ok && is.Init == nil && is.Else == nil && c.isNilCheck(is.Cond, v)
}

// reads reports whether root reads v outside the nodes in skip (an
// identifier on the left of = is a write, not a read).
func (c *checker) reads(root ast.Node, v *types.Var, skip []ast.Node) bool {
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		if found || n == nil {
			return false
		}
		for _, s := range skip {
			if n == s {
				return false
			}
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.ASSIGN {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); !ok || c.info.Uses[id] != types.Object(v) {
						ast.Inspect(l, func(m ast.Node) bool {
							if id, ok := m.(*ast.Ident); ok && c.info.Uses[id] == types.Object(v) {
								found = true
							}
							return !found
						})
					}
				}
				for _, r := range n.Rhs {
					if c.reads(r, v, skip) {
						found = true
					}
				}
				return false
			}
		case *ast.Ident:
			if c.info.Uses[n] == types.Object(v) {
				found = true
			}
		}
		return !found
	})
	return found
}

// defined returns the variable id declares, or nil.
func (c *checker) defined(e ast.Expr) *types.Var {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return nil
	}
	v, _ := c.info.Defs[id].(*types.Var)
	return v
}

// used returns the variable id refers to, or nil.
func (c *checker) used(e ast.Expr) *types.Var {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return nil
	}
	v, _ := c.info.Uses[id].(*types.Var)
	return v
}

// capture is a statement that saved a value a restore puts back:
// old := os.Getenv(k), old, ok := os.LookupEnv(k), wd, err := os.Getwd().
type capture struct {
	stmt  *ast.AssignStmt
	check ast.Stmt // the if err != nil after it, or nil
}

// findCapture returns the statement before index `before` of list that
// defines v with a call that ok accepts.
func (c *checker) findCapture(list []ast.Stmt, before int, v *types.Var, ok func(*ast.CallExpr) bool) *capture {
	for i := 0; i < before && i < len(list); i++ {
		a, isA := list[i].(*ast.AssignStmt)
		if !isA || a.Tok != token.DEFINE || len(a.Rhs) != 1 || len(a.Lhs) == 0 || c.defined(a.Lhs[0]) != v {
			continue
		}
		call, isCall := ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
		if !isCall || !ok(call) {
			return nil
		}
		cp := &capture{stmt: a}
		if len(a.Lhs) == 2 {
			// err may be declared here or earlier (wd, err := os.Getwd()
			// after dir, err := os.MkdirTemp(...)): the check tests this
			// call's error either way, and goes with the capture; left
			// alone it would read an err another fix may remove.
			e := c.defined(a.Lhs[1])
			if e == nil {
				e = c.used(a.Lhs[1])
			}
			if e != nil && types.Identical(e.Type(), types.Universe.Lookup("error").Type()) && i+1 < len(list) && c.errCheck(list[i+1], e) {
				cp.check = list[i+1]
			}
		}
		return cp
	}
	return nil
}

// removable returns the statements of cp to delete once skip is gone: all
// of them when nothing else reads what it defines, none when the saved
// value is still read; ok is false when only part of it is still needed.
func (c *checker) removable(cp *capture, skip ...ast.Node) ([]ast.Stmt, bool) {
	skip = append(skip, cp.stmt)
	if cp.check != nil {
		skip = append(skip, cp.check)
	}
	var readVars []int
	for i, l := range cp.stmt.Lhs {
		if v := c.defined(l); v != nil && c.reads(c.fd.Body, v, skip) {
			readVars = append(readVars, i)
		}
	}
	switch {
	case len(readVars) == 0:
		if cp.check != nil {
			return []ast.Stmt{cp.stmt, cp.check}, true
		}
		return []ast.Stmt{cp.stmt}, true
	case readVars[0] == 0:
		return nil, true // the saved value is read elsewhere: keep the capture
	}
	return nil, false
}
