package readiness

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/handover"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule replaces the sleep between starting a child and signalling it with
// a handshake.
var Rule = &rule.Rule{
	Name:      "readiness",
	Doc:       doc,
	Default:   true,
	Prefilter: prefilter,
	Run:       run,
	Requires:  []*rule.Analysis{handover.Analysis, match.Decls},
}

// prefilter: the rule matches only cmd.Process.Signal and cmd.Process.Kill
// written out, so the file holds these bytes.
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, "Process.Signal", "Process.Kill")
}

// envVar tells the child which file descriptor carries the readiness line.
const envVar = "UNFLAKE_READY_FD"

// maxDepth bounds how deep the search for signal.Notify follows calls of
// package functions from the helper test.
const maxDepth = 4

func run(pass *rule.Pass) error {
	c := &checker{
		pass:     pass,
		info:     pass.TypesInfo,
		decls:    match.DeclsOf(pass),
		inserted: map[dst.Stmt]bool{},
		hands:    handover.Of(pass),
	}
	for _, f := range pass.Files {
		if !strings.HasSuffix(pass.Fset.File(f.Pos()).Name(), "_test.go") || ast.IsGenerated(f) {
			continue
		}
		c.file = f
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			c.fn = fd
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if list := match.StmtList(n); list != nil {
					c.block(n, list)
				}
				return true
			})
		}
	}
	return nil
}

// checker checks the functions of one package.
type checker struct {
	pass  *rule.Pass
	info  *types.Info
	decls map[*types.Func]*ast.FuncDecl
	file  *ast.File
	fn    *ast.FuncDecl

	// inserted holds the readiness statements written into helpers, so a
	// helper shared by several tests gets one.
	inserted map[dst.Stmt]bool

	hands *handover.Finder

	saidPkg *intent.Package // what the tests say, made on first use (said)

	initWhy *string // the package initialisation's work that outlives it (initWork), read once
	// envCopyWhy is the package initialisation's copy of the environment
	// (initWork(true), envcopy.go), read once.
	envCopyWhy *string

	tests   []*ast.FuncDecl            // testFuncs, read once
	helpers map[string][]*ast.FuncDecl // -test.run pattern -> test functions it matches
}

// A site is a Start, sleep, Signal sequence in one statement list.
type site struct {
	cmd    *types.Var
	owner  ast.Node // the block or clause
	list   []ast.Stmt
	start  int // index of the statement that starts the child
	after  int // index of the last statement of the start and its error check
	sleep  int // index of the sleep
	signal *ast.CallExpr
}

// block finds the sites of one statement list.
func (c *checker) block(owner ast.Node, list []ast.Stmt) {
	for i, st := range list {
		cmd, errV := c.startOf(st)
		if cmd == nil {
			continue
		}
		s := &site{cmd: cmd, owner: owner, list: list, start: i, after: i, sleep: -1}
		if errV != nil && i+1 < len(list) && mentionsVar(c.info, list[i+1], errV) {
			if _, ok := list[i+1].(*ast.IfStmt); ok {
				s.after = i + 1
			}
		}
		for j := i + 1; j < len(list) && s.signal == nil; j++ {
			sig := c.signalIn(list[j], cmd)
			switch {
			case sig != nil && s.sleep < 0:
				j = len(list) // signalled without a sleep: nothing to guess
			case sig != nil:
				s.signal = sig
				if c.waits(list[s.start+1:j], cmd) {
					s.signal = nil
				}
				j = len(list)
			case s.sleep < 0 && j > s.after && c.isSleep(list[j]):
				s.sleep = j
			}
		}
		if s.signal != nil {
			c.report(s)
		}
	}
}

// startOf returns the *exec.Cmd variable whose Start st calls (cmd.Start(),
// err := cmd.Start(), if err := cmd.Start(); ..., require.NoError(t,
// cmd.Start())) and the error variable it assigns, if any.
func (c *checker) startOf(st ast.Stmt) (*types.Var, *types.Var) {
	var call ast.Expr
	var lhs []ast.Expr
	switch st := st.(type) {
	case *ast.ExprStmt:
		call = st.X
	case *ast.AssignStmt:
		if len(st.Rhs) == 1 {
			call, lhs = st.Rhs[0], st.Lhs
		}
	case *ast.IfStmt:
		if a, ok := st.Init.(*ast.AssignStmt); ok && len(a.Rhs) == 1 {
			call = a.Rhs[0]
		}
	}
	if call == nil {
		return nil, nil
	}
	var cmd *types.Var
	ast.Inspect(call, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || cmd != nil {
			return false
		}
		if ce, ok := n.(*ast.CallExpr); ok && match.IsMethod(c.info, ce, "os/exec", "Start") {
			cmd = c.cmdVar(ce.Fun)
		}
		return true
	})
	if cmd == nil {
		return nil, nil
	}
	var errV *types.Var
	if len(lhs) == 1 {
		if id, ok := lhs[0].(*ast.Ident); ok {
			errV, _ = c.info.ObjectOf(id).(*types.Var)
		}
	}
	return cmd, errV
}

// cmdVar returns v for the method selector v.M where v is a variable of
// type *exec.Cmd, or nil.
func (c *checker) cmdVar(fun ast.Expr) *types.Var {
	sel, ok := ast.Unparen(fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return nil
	}
	v, _ := c.info.Uses[id].(*types.Var)
	if v == nil || !match.IsNamed(v.Type(), "os/exec", "Cmd") {
		return nil
	}
	return v
}

// signalIn returns the cmd.Process.Signal(...) or cmd.Process.Kill() call
// in st, outside function literals, or nil.
func (c *checker) signalIn(st ast.Stmt, cmd *types.Var) *ast.CallExpr {
	var found *ast.CallExpr
	ast.Inspect(st, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || found != nil {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || !match.IsMethod(c.info, call, "os", "Signal", "Kill") {
			return true
		}
		sel := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		proc, ok := ast.Unparen(sel.X).(*ast.SelectorExpr)
		if !ok || proc.Sel.Name != "Process" {
			return true
		}
		if id, ok := ast.Unparen(proc.X).(*ast.Ident); ok && c.info.Uses[id] == types.Object(cmd) {
			found = call
		}
		return true
	})
	return found
}

// isSleep reports whether st is a time.Sleep statement.
func (c *checker) isSleep(st ast.Stmt) bool {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := ast.Unparen(es.X).(*ast.CallExpr)
	return ok && match.IsPkgFunc(c.info, call, "time", "Sleep")
}

// waits reports whether stmts, between the start and the signal, may wait
// for the child: they read what it writes (a pipe, a buffer or file given
// as its output, or anything built from one), receive from a channel, or
// select.
func (c *checker) waits(stmts []ast.Stmt, cmd *types.Var) bool {
	readers := c.readers(cmd)
	for _, st := range stmts {
		found := false
		ast.Inspect(st, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.UnaryExpr:
				found = found || n.Op == token.ARROW
			case *ast.SelectStmt:
				found = true
			case *ast.RangeStmt:
				if _, ok := c.info.TypeOf(n.X).Underlying().(*types.Chan); ok {
					found = true
				}
			case *ast.Ident:
				if v, ok := c.info.Uses[n].(*types.Var); ok && readers[v] {
					found = true
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// readers returns the variables of the function through which the test
// may read what the child writes.
func (c *checker) readers(cmd *types.Var) map[*types.Var]bool {
	out := map[*types.Var]bool{}
	type pair struct{ r, w *types.Var }
	var pipes []pair
	varOf := func(e ast.Expr) *types.Var {
		if id, ok := ast.Unparen(e).(*ast.Ident); ok {
			v, _ := c.info.ObjectOf(id).(*types.Var)
			return v
		}
		return nil
	}
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok {
			return true
		}
		if len(a.Rhs) == 1 {
			if call, ok := ast.Unparen(a.Rhs[0]).(*ast.CallExpr); ok && len(a.Lhs) >= 2 {
				switch {
				case match.IsMethod(c.info, call, "os/exec", "StdoutPipe", "StderrPipe"):
					if v := varOf(a.Lhs[0]); v != nil {
						out[v] = true
					}
				case match.IsPkgFunc(c.info, call, "os", "Pipe"), match.IsPkgFunc(c.info, call, "io", "Pipe"):
					pipes = append(pipes, pair{varOf(a.Lhs[0]), varOf(a.Lhs[1])})
				}
			}
		}
		return true
	})
	// cmd.Stdout = x, cmd.Stderr = x, cmd.ExtraFiles = ...: every variable
	// the right-hand side names may receive the child's output, inside
	// calls too: cmd.Stdout = io.MultiWriter(&buf, os.Stderr).
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok {
			return true
		}
		for i, l := range a.Lhs {
			sel, ok := ast.Unparen(l).(*ast.SelectorExpr)
			if !ok {
				continue
			}
			if id, ok := ast.Unparen(sel.X).(*ast.Ident); !ok || c.info.Uses[id] != types.Object(cmd) {
				continue
			}
			rhs := a.Rhs[min(i, len(a.Rhs)-1)]
			ast.Inspect(rhs, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok {
					if v, ok := c.info.Uses[id].(*types.Var); ok && v != cmd {
						out[v] = true
					}
				}
				return true
			})
		}
		return true
	})
	for _, p := range pipes {
		if p.w != nil && out[p.w] && p.r != nil {
			out[p.r] = true
		}
	}
	// Anything built from a reader reads too: bufio.NewScanner(stdout).
	for changed := true; changed; {
		changed = false
		ast.Inspect(c.fn.Body, func(n ast.Node) bool {
			a, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			uses := false
			for _, r := range a.Rhs {
				ast.Inspect(r, func(m ast.Node) bool {
					if id, ok := m.(*ast.Ident); ok {
						if v, ok := c.info.Uses[id].(*types.Var); ok && out[v] {
							uses = true
						}
					}
					return !uses
				})
			}
			if !uses {
				return true
			}
			for _, l := range a.Lhs {
				if v := varOf(l); v != nil && v != cmd && !out[v] {
					out[v] = true
					changed = true
				}
			}
			return true
		})
	}
	return out
}

// mentionsVar reports whether n mentions v.
func mentionsVar(info *types.Info, n ast.Node, v *types.Var) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if id, ok := m.(*ast.Ident); ok && info.Uses[id] == types.Object(v) {
			found = true
		}
		return !found
	})
	return found
}

// report reports a site, with the handshake when the child is this test
// binary's helper and the rewrite is safe.
func (c *checker) report(s *site) {
	sleep := s.list[s.sleep]
	d := rule.Diagnostic{
		Pos:     sleep.Pos(),
		End:     sleep.End(),
		Message: fmt.Sprintf("the test sleeps before signalling %s, guessing how fast the child installs its signal handler", s.cmd.Name()),
	}
	fix, why := c.plan(s)
	if fix == nil {
		d.NotFixed = why
	} else {
		d.Fix = fix
	}
	c.pass.Report(d)
}

// handshakeWords is the cure in words, for the sites the rule cannot
// rewrite.
const handshakeWords = "have the child write a line (on a pipe passed in ExtraFiles, or on stdout) right after signal.Notify, and wait for that line instead of sleeping"

// productionChange says why the rule leaves a child whose handler is
// installed outside the test files, and shows the change to make there,
// before and after: once the child writes the line, the rule rewrites
// the test's side on its next run.
func (c *checker) productionChange(n *notify) string {
	name := "a file"
	if n.file != nil {
		name = filepath.Base(c.pass.Fset.File(n.file.Pos()).Name())
	}
	notify := types.ExprString(n.stmt.(*ast.ExprStmt).X)
	after := notify + `; if fd, err := strconv.Atoi(os.Getenv("` + envVar + `")); err == nil { os.Unsetenv("` + envVar + `"); f := os.NewFile(uintptr(fd), "ready"); f.Write([]byte("ready\n")); f.Close() }`
	return fmt.Sprintf("the child installs its handler in %s, which is not a test file unflake may edit; change it there, before: `%s` after: `%s`; then unflake rewrites the test to pass the pipe and wait for the line instead of sleeping", name, notify, after)
}

// plan checks that the site can be rewritten and returns the fix, or why not.
func (c *checker) plan(s *site) (*rule.Fix, string) {
	if !c.pass.FileUsesGo(c.file, "go1.10") {
		return nil, "the handshake needs os.File.SetReadDeadline (go1.10), newer than the file's go version"
	}
	create, why := c.creation(s.cmd)
	if create == nil {
		return nil, why + "; " + handshakeWords
	}
	helper, why := c.helperOf(create)
	if helper == nil {
		return nil, why + "; " + handshakeWords
	}
	// A sleep that is the window of a time bound the test states or
	// measures is no guess: no handshake may replace it.
	if why := c.timingHazard(s, helper); why != "" {
		return nil, why
	}
	n, why := c.findNotify(helper.Body, 0, map[*ast.FuncDecl]bool{helper: true})
	if n == nil {
		if why == "" {
			why = fmt.Sprintf("the helper %s never calls signal.Notify", helper.Name.Name)
		}
		return nil, why + "; " + handshakeWords
	}
	if !c.editable(n.file) {
		// The handler is installed by code under test, whose every
		// implementation runs in the window the sleep gave.
		if why := c.windowEarly(s, helper, n); why != "" {
			return nil, why
		}
	}
	if !c.editable(n.file) && !c.childHasHandshake(n) {
		a := c.anchor(helper, n)
		if a == nil {
			return nil, c.productionChange(n)
		}
		n = a // the line goes after the helper's call that installs the handler
	}
	switch h := c.handedAt(s.list[s.sleep]); h.Kind {
	case handover.Handed:
		// A function the test gives to the code under test runs when
		// that code decides: its sleep is that code's behaviour.
		return nil, fmt.Sprintf("the sleep is in a function the test hands to the code under test (%s): it is that code's behaviour, not a wait of the test, so the rule does not replace it", h.To)
	case handover.Unknown:
		return nil, fmt.Sprintf("the rule cannot tell whether the function holding the sleep is the test's own code or code it hands over (%s), so it does not replace the sleep; %s", h.To, handshakeWords)
	}
	t, why := c.testParamAt(s.list[s.start])
	if t == "" {
		return nil, why
	}
	for _, pkg := range []string{"os", "strconv"} {
		if !c.pkgNameFree(n.stmt.Pos(), pkg) {
			return nil, fmt.Sprintf("the name %s does not mean package %s where the child calls signal.Notify", pkg, pkg)
		}
	}
	for _, pkg := range []string{"os", "strconv", "bufio", "time"} {
		if !c.pkgNameFree(s.list[s.start].Pos(), pkg) {
			return nil, fmt.Sprintf("the name %s does not mean package %s where the test starts the child", pkg, pkg)
		}
	}
	if why := c.notifyHazard(s, helper); why != "" {
		return nil, why
	}
	if why := c.otherChild(s); why != "" {
		return nil, why
	}
	if why := c.producerHazard(s); why != "" {
		return nil, why
	}
	why, checked := c.syncHazard(s, helper, n)
	if why != "" {
		return nil, why
	}
	sp, why := c.startup(helper, n)
	if why != "" {
		return nil, why
	}
	if why := c.timedHazard(s, helper, sp); why != "" {
		return nil, why
	}
	if why := c.otherBuilds(helper.Name.Name); why != "" {
		return nil, why
	}
	if why := c.processHazard(sp); why != "" {
		return nil, why
	}
	if why := c.envCopyHazard(sp); why != "" {
		return nil, why
	}
	why, window := c.windowHazard(s, helper, sp)
	if why != "" {
		return nil, why
	}
	inits := windowUnchecked
	if window != windowUnchecked {
		if why := c.initHazard(s); why != "" {
			return nil, why
		}
		if why := c.ageHazard(s, helper.Name.Name); why != "" {
			return nil, why
		}
		inits = initChecked + "; " + ageChecked
	}
	if why := c.burstHazard(s); why != "" {
		return nil, why
	}
	if why := c.pwdHazard(s); why != "" {
		return nil, why
	}
	fix := c.fix(s, n, t)
	fix.Changes[0].Checked = []string{checked, notifyChecked, timingChecked, startupChecked, timedChecked, otherBuildsChecked, burstChecked, processChecked, envCopyChecked, producerChecked, pwdChecked, window}
	if inits != window {
		fix.Changes[0].Checked = append(fix.Changes[0].Checked, inits)
	}
	return fix, ""
}

// creation returns the exec.Command or exec.CommandContext call that
// makes cmd, a local variable assigned once in the function, or why there
// is none.
func (c *checker) creation(cmd *types.Var) (*ast.CallExpr, string) {
	var calls []ast.Expr
	assigned := 0
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, ok := ast.Unparen(l).(*ast.Ident); ok && c.info.ObjectOf(id) == types.Object(cmd) {
					assigned++
					if len(n.Rhs) == len(n.Lhs) {
						calls = append(calls, n.Rhs[i])
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if c.info.Defs[id] == types.Object(cmd) && len(n.Values) == len(n.Names) {
					assigned++
					calls = append(calls, n.Values[i])
				}
			}
		}
		return true
	})
	if assigned != 1 || len(calls) != 1 {
		return nil, fmt.Sprintf("%s is not made once by exec.Command in the test", cmd.Name())
	}
	call, ok := ast.Unparen(calls[0]).(*ast.CallExpr)
	if !ok || !match.IsPkgFunc(c.info, call, "os/exec", "Command", "CommandContext") {
		return nil, fmt.Sprintf("%s is not made by exec.Command in the test", cmd.Name())
	}
	return call, ""
}

// helperOf returns the helper test a command runs: the command is
// os.Args[0] with a -test.run pattern matching exactly one test of the
// package.
func (c *checker) helperOf(call *ast.CallExpr) (*ast.FuncDecl, string) {
	args := call.Args
	if match.IsPkgFunc(c.info, call, "os/exec", "CommandContext") {
		args = args[1:]
	}
	if len(args) == 0 || !c.isArgs0(args[0]) {
		return nil, "the child is not this test binary started as os.Args[0]"
	}
	if call.Ellipsis.IsValid() {
		return nil, "the child's arguments are a slice the rule cannot read"
	}
	pattern, found := "", false
	for i, a := range args[1:] {
		s, ok := match.ConstString(c.info, a)
		if !ok {
			continue
		}
		for _, flag := range []string{"-test.run", "--test.run"} {
			switch {
			case strings.HasPrefix(s, flag+"="):
				pattern, found = strings.TrimPrefix(s, flag+"="), true
			case s == flag && i+2 < len(args):
				pattern, found = match.ConstString(c.info, args[i+2])
			}
		}
	}
	if !found {
		return nil, "the child runs the test binary without a constant -test.run naming its helper test"
	}
	re, err := regexp.Compile(pattern)
	if err != nil || strings.Contains(pattern, "/") {
		return nil, fmt.Sprintf("the child's -test.run pattern %q does not name one test function", pattern)
	}
	helpers, ok := c.helpers[pattern]
	if !ok {
		// Once per pattern, not once per site: a big test file's
		// thousands of tests often start one helper.
		for _, fd := range c.testFuncs() {
			if re.MatchString(fd.Name.Name) {
				helpers = append(helpers, fd)
			}
		}
		if c.helpers == nil {
			c.helpers = map[string][]*ast.FuncDecl{}
		}
		c.helpers[pattern] = helpers
	}
	if len(helpers) != 1 {
		return nil, fmt.Sprintf("the child's -test.run pattern %q matches %d test functions of the package, not one", pattern, len(helpers))
	}
	return helpers[0], ""
}

// isArgs0 reports whether e is os.Args[0].
func (c *checker) isArgs0(e ast.Expr) bool {
	ix, ok := ast.Unparen(e).(*ast.IndexExpr)
	if !ok {
		return false
	}
	if n, ok := match.ConstInt(c.info, ix.Index); !ok || n != 0 {
		return false
	}
	var id *ast.Ident
	switch x := ast.Unparen(ix.X).(type) {
	case *ast.SelectorExpr:
		id = x.Sel
	case *ast.Ident:
		id = x
	}
	v, ok := c.info.Uses[id].(*types.Var)
	return ok && v.Pkg() != nil && v.Pkg().Path() == "os" && v.Name() == "Args"
}

// testFuncs returns the package's test functions with a body, in the
// order of its files and declarations; read once.
func (c *checker) testFuncs() []*ast.FuncDecl {
	if c.tests == nil {
		c.tests = []*ast.FuncDecl{}
		for _, f := range c.pass.AllFiles {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil && c.isTestFunc(fd) {
					c.tests = append(c.tests, fd)
				}
			}
		}
	}
	return c.tests
}

// isTestFunc reports whether fd is func TestX(t *testing.T).
func (c *checker) isTestFunc(fd *ast.FuncDecl) bool {
	if fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Type.Params == nil || len(fd.Type.Params.List) != 1 {
		return false
	}
	rest := strings.TrimPrefix(fd.Name.Name, "Test")
	if rest != "" && rest[0] >= 'a' && rest[0] <= 'z' {
		return false
	}
	return match.IsNamed(c.info.TypeOf(fd.Type.Params.List[0].Type), "testing", "T")
}

// A notify is the first signal.Notify statement the helper reaches.
type notify struct {
	stmt  ast.Stmt // the signal.Notify statement, or a call that installs it (see anchor)
	owner ast.Node // its block or clause
	file  *ast.File
}

// findNotify returns the first signal.Notify statement in body, in source
// order, following the package functions it calls; or why it cannot be
// used.
func (c *checker) findNotify(body *ast.BlockStmt, depth int, seen map[*ast.FuncDecl]bool) (*notify, string) {
	var out *notify
	var why string
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		if out != nil || why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // runs when called, maybe never
		case *ast.CallExpr:
			if match.IsPkgFunc(c.info, n, "os/signal", "Notify") {
				if len(stack) < 2 {
					why = "signal.Notify is not a statement of its own"
					return false
				}
				es, ok := stack[len(stack)-1].(*ast.ExprStmt)
				if !ok || match.StmtList(stack[len(stack)-2]) == nil {
					why = "signal.Notify is not a statement of its own"
					return false
				}
				out = &notify{stmt: es, owner: stack[len(stack)-2], file: c.fileOf(es)}
				return false
			}
			fn := match.Callee(c.info, n)
			if fn == nil || depth >= maxDepth {
				return true
			}
			fd := c.decls[fn.Origin()]
			if fd == nil || fd.Body == nil || seen[fd] {
				return true
			}
			seen[fd] = true
			out, why = c.findNotify(fd.Body, depth+1, seen)
			return out == nil && why == ""
		}
		return true
	})
	return out, why
}

// fileOf returns the file of the package holding n.
func (c *checker) fileOf(n ast.Node) *ast.File {
	for _, f := range c.pass.AllFiles {
		if f.FileStart <= n.Pos() && n.End() <= f.FileEnd {
			return f
		}
	}
	return nil
}

// editable reports whether f is a test file unflake may rewrite.
func (c *checker) editable(f *ast.File) bool {
	if f == nil || !strings.HasSuffix(c.pass.Fset.File(f.Pos()).Name(), "_test.go") || ast.IsGenerated(f) {
		return false
	}
	for _, g := range c.pass.Files {
		if g == f {
			return true
		}
	}
	return false
}

// testParamAt returns the name of the *testing.T (B, F, TB) of the
// innermost function around st, or why there is none.
func (c *checker) testParamAt(st ast.Stmt) (string, string) {
	typ := c.fn.Type
	inGo := false
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		if n.Pos() > st.Pos() || n.End() < st.End() {
			return false
		}
		if lit, ok := n.(*ast.FuncLit); ok {
			typ = lit.Type
			inGo = false
			if len(stack) >= 2 {
				_, inGo = stack[len(stack)-2].(*ast.GoStmt)
			}
		}
		return true
	})
	if inGo {
		return "", "the child is started in a goroutine, where t.Fatal cannot stop the test"
	}
	for _, p := range typ.Params.List {
		if !match.IsNamed(c.info.TypeOf(p.Type), "testing", "T", "B", "F", "TB") {
			continue
		}
		for _, n := range p.Names {
			if n.Name != "_" {
				return n.Name, ""
			}
		}
	}
	return "", "the function that starts the child has no *testing.T to fail when the child never gets ready"
}

// handedAt says whether st is in a function literal the test hands to
// the code under test.
func (c *checker) handedAt(st ast.Stmt) handover.Verdict {
	var at []ast.Node
	match.WithStack(c.file, func(n ast.Node, stack []ast.Node) bool {
		if at != nil || n.Pos() > st.Pos() || n.End() < st.End() {
			return false
		}
		if n == st {
			at = append([]ast.Node(nil), stack...)
			return false
		}
		return true
	})
	return c.hands.Enclosing(at)
}

// pkgNameFree reports whether name, at pos, means nothing or the package
// of that import path.
func (c *checker) pkgNameFree(pos token.Pos, name string) bool {
	scope := c.pass.Pkg.Scope().Innermost(pos)
	if scope == nil {
		return true
	}
	_, obj := scope.LookupParent(name, pos)
	switch obj := obj.(type) {
	case nil:
		return true
	case *types.PkgName:
		return obj.Imported().Path() == name
	}
	return false
}
