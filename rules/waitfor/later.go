package waitfor

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/handover"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// A monotone poll ends the sleep's window at the first instant its checks
// hold. That keeps those checks' power, but the window also served the
// statements after them: a later check of state the code may still change
// (n != 1 after a check that n >= 1, a DeepEqual, a len, a "not") ran
// after the whole window, and saw what came late in it (a redelivery, a
// count going past its value); after the poll it runs as soon as the
// first event came, and misses it. An action that stops the code (Close,
// Stop, a cancel) before such a check makes it worse: what the window
// would have let happen never does. A later check as monotone as the
// poll's depends on the window as much, unless the poll waited for it:
// a state still rising when the poll ends (a job that has started, not
// finished) had the whole window to get there, and a Stop between may
// keep it from ever getting there (implies). So a monotone poll is kept
// only when nothing after it depends on the time that passed. A poll
// keeping the rest of the window for them would gain nothing over the
// sleep.

// laterWhy says which statement after the group depends on the time the
// sleep let pass (naming its line), or "".
func (p *poll) laterWhy() string {
	g := p.group
	c := g.c
	end := g.stmts[len(g.stmts)-1].End()
	// A wait in a loop of the function: the loop's statements before the
	// wait run again after the poll too.
	var loop ast.Node
	for _, n := range p.stack {
		switch n.(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			if loop == nil && n.Pos() > g.fn.Pos() && n.End() <= g.fn.End() {
				loop = n
			}
		}
	}
	waitPos := p.wait.stmt.Pos()
	inGroup := func(s ast.Stmt) bool { return s.Pos() >= waitPos && s.End() <= end }
	var stopper ast.Stmt
	found := ""
	rising := false // found is a monotone check the window gave time
	match.WithStack(g.fn, func(n ast.Node, stack []ast.Node) bool {
		if found != "" {
			return false
		}
		s, ok := n.(ast.Stmt)
		if !ok || inGroup(s) {
			return true
		}
		if to := c.handedLit(stack); to != "" {
			// A check in a callback the test hands to the code under
			// test (a handler that fails on a duplicate) runs whenever
			// the code calls it, all along the window: every event the
			// window let come was checked, a late duplicate too. Any
			// check there, or any call that fails the test, needs the
			// whole window, however monotone.
			if c.checkOf(s) != nil || c.failsHere(s) {
				found = fmt.Sprintf("the check at %s (%s) in the function literal handed to %s runs whenever the code under test calls it, and the window fed it every event that came in it", c.line(s), c.short(s), to)
				return false
			}
			return true
		}
		later := s.Pos() >= end || loop != nil && s.Pos() >= loop.Pos() && s.End() <= loop.End() || c.runsLast(stack)
		if !later {
			return true
		}
		if sel, ok := s.(*ast.SelectStmt); ok {
			if r := c.nonBlockingReceive(sel); r != nil {
				found = fmt.Sprintf("the select at %s receives (%s) with a default and fails the test on what came: it reads, at one instant, what the code under test has sent so far, which the window let pile up", c.line(s), types.ExprString(r))
				return false
			}
		}
		if ck := c.checkOf(s); ck != nil {
			lg := &group{c: c, wait: g.wait, fn: g.fn, stmts: []ast.Stmt{s}, checks: []*check{ck}}
			if !lg.readsSince(waitPos) || lg.errOnly() {
				return false
			}
			if lg.monotoneCheck(ck) {
				if g.implies(lg, ck) {
					return false
				}
				found = fmt.Sprintf("the check at %s (%s) after the poll's checks waits for a state still rising that the poll does not wait for (monotone, but not implied by the poll's checks)", c.line(s), c.short(s))
				rising = true
				return false
			}
			if lg.errShaped() {
				found = fmt.Sprintf("the check at %s (%s) after the poll's checks reads an error the code under test returns or sends, which may report what the window let happen (a delivery it let fail)", c.line(s), c.short(s))
				return false
			}
			found = fmt.Sprintf("the check at %s (%s) after the poll's checks reads state the code may still change and is not monotone", c.line(s), c.short(s))
			return false
		}
		if es, ok := s.(*ast.ExprStmt); ok {
			if call, ok := ast.Unparen(es.X).(*ast.CallExpr); ok {
				if h := c.checkingHelper(call); h != "" {
					found = fmt.Sprintf("the helper %s(...) at %s after the poll's checks is handed the test and checks what may still change", h, c.line(s))
					return false
				}
				if stopper == nil && stops(types.ExprString(call.Fun)) {
					stopper = s
				}
			}
		}
		return true
	})
	if found == "" {
		if why := p.restWhy(); why != "" {
			return why + ": the sleep's window held it back too, and a poll that ends at the first instant its checks hold would end the window sooner and miss what comes later in it (a duplicate, a redelivery); a poll keeping the rest of the window would gain nothing over the sleep"
		}
		return c.sharedWrite(g.fn, waitPos)
	}
	also := ""
	if stopper != nil {
		also = fmt.Sprintf(" (and %s at %s, which stops the code, would run before what the window let happen)", c.short(stopper), c.line(stopper))
	}
	miss := "miss what comes later in the window (a duplicate, a count going past its value)"
	if rising {
		miss = "check the state before the window's time let it come (a job still running when the test stops the code)"
	}
	return fmt.Sprintf("%s%s: the sleep's window held it back too, and a poll that ends at the first instant its checks hold would run it sooner and %s; a poll keeping the rest of the window would gain nothing over the sleep", found, also, miss)
}

// implies reports whether the poll's checks, once they hold, make the
// later monotone check ck (of the group lg) hold too: every level it
// waits for is one the poll waits for, at the same or a higher mark
// (got >= 1 after the poll waited for got >= 1). Such a check passes
// wherever it runs after the poll, since a level reached stays (and a
// goroutine's check, which runs when it runs, sees the same state at the
// same instant with the sleep or the poll). Any other monotone check
// waits for a state the poll did not: still rising when the poll ends
// (a job's "finished" when the poll waited for "started"), it had the
// whole window to get there after the sleep, and an action between (a
// Stop that does not wait for running jobs) may keep it from ever
// getting there (red team batch 18, cronstop).
func (g *group) implies(lg *group, ck *check) bool {
	want, ok := lg.levels(ck)
	if !ok {
		return false
	}
	var have []level
	for _, gk := range g.checks {
		ls, ok := g.levels(gk)
		if !ok {
			return false
		}
		have = append(have, ls...)
	}
	for _, w := range want {
		met := false
		for _, h := range have {
			if h.v == w.v && h.min >= w.min {
				met = true
			}
		}
		if !met {
			return false
		}
	}
	return true
}

// runsLast reports whether the node under stack runs when the test ends,
// or all along: in a deferred function, one t.Cleanup registers, or a
// goroutine the test starts (a watcher whose checks the window gave time).
func (c *checker) runsLast(stack []ast.Node) bool {
	for _, n := range stack {
		switch n := n.(type) {
		case *ast.DeferStmt, *ast.GoStmt:
			return true
		case *ast.CallExpr:
			if match.IsMethod(c.info, n, "testing", "Cleanup") {
				return true
			}
		}
	}
	return false
}

// handedLit says where the innermost function literal around the node
// under stack goes when the test hands it to the code under test, or
// could (handover.Unknown), or "" when every literal around it is the
// test's own (t.Run's body, a goroutine it starts, a func it calls).
func (c *checker) handedLit(stack []ast.Node) string {
	for k := len(stack) - 1; k > 0; k-- {
		lit, ok := stack[k].(*ast.FuncLit)
		if !ok {
			continue
		}
		if v := c.hands.Lit(lit, stack[:k]); v.Kind != handover.Own {
			if v.To == "" {
				return "the code under test"
			}
			return v.To
		}
	}
	return ""
}

// failsHere reports whether the statement is a call that fails the test
// (t.Error, t.Fatal and the like).
func (c *checker) failsHere(s ast.Stmt) bool {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := ast.Unparen(es.X).(*ast.CallExpr)
	return ok && match.IsMethod(c.info, call, "testing", failingMethods...)
}

// readsSince reports whether the group's check reads state, or a local
// that may have changed since the position pos: one assigned after it,
// written by a function literal (a callback the code runs), or whose
// address is taken.
func (g *group) readsSince(pos token.Pos) bool {
	if g.readsState() {
		return true
	}
	info := g.c.info
	vars := map[*types.Var]bool{}
	for _, e := range g.exprs() {
		ast.Inspect(e, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if v, ok := info.Uses[id].(*types.Var); ok {
					vars[v] = true
				}
			}
			return true
		})
	}
	if len(vars) == 0 {
		return false
	}
	for v := range vars {
		// A channel or a map the test handed to the code changes under
		// it without an assignment: len(dead) after the poll reads what
		// the code sent since (red team batch 20, deadletter2: a message
		// dead-lettered after the poll's first delivery).
		switch v.Type().Underlying().(type) {
		case *types.Chan, *types.Map:
			return true
		case *types.Slice, *types.Array:
			// A slice (or an array sliced) the test hands to a call
			// shares its elements with the code: counts[1] after the
			// poll reads what the code copied in since (red team batch
			// 21, histslice).
			if g.handed(v) {
				return true
			}
		}
	}
	moved := false
	match.WithStack(g.fn, func(n ast.Node, stack []ast.Node) bool {
		if moved {
			return false
		}
		writes := func(e ast.Expr) {
			id, ok := ast.Unparen(e).(*ast.Ident)
			if !ok {
				return
			}
			v, _ := info.ObjectOf(id).(*types.Var)
			if v == nil || !vars[v] {
				return
			}
			if id.Pos() >= pos || g.inLiteral(stack) {
				moved = true
			}
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				writes(l)
			}
		case *ast.IncDecStmt:
			writes(n.X)
		case *ast.RangeStmt:
			if n.Key != nil {
				writes(n.Key)
			}
			if n.Value != nil {
				writes(n.Value)
			}
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				if id, ok := ast.Unparen(n.X).(*ast.Ident); ok {
					if v, ok := info.Uses[id].(*types.Var); ok && vars[v] {
						moved = true
					}
				}
			}
		}
		return !moved
	})
	return moved
}

// errOnly reports whether the group's check only compares errors with nil
// (if err != nil, require.NoError) and each error is the result of a
// later action outside the code under test (os.Remove, a standard
// library call): not a state the window let change. An error the code
// under test returns (if err := h.Close(); err != nil), or one received
// from a channel, may report what the window let happen (a delivery the
// collector rejected as a duplicate): it reads the code's state.
func (g *group) errOnly() bool {
	errs, ok := g.checkedErrs()
	if !ok {
		return false
	}
	for _, e := range errs {
		if e == nil || g.errFromCode(e, 0) {
			return false
		}
	}
	return true
}

// errShaped reports whether the group's checks only compare errors with
// nil, wherever the errors come from.
func (g *group) errShaped() bool {
	_, ok := g.checkedErrs()
	return ok
}

// checkedErrs returns the error each of the group's checks compares with
// nil (if err != nil) or asserts (require.NoError(t, err); nil for an
// assertion given no argument), and false when a check is of another
// shape.
func (g *group) checkedErrs() ([]ast.Expr, bool) {
	info := g.c.info
	isErr := func(e ast.Expr) bool {
		t := info.TypeOf(e)
		return t != nil && types.Identical(t, types.Universe.Lookup("error").Type())
	}
	var errs []ast.Expr
	for _, ck := range g.checks {
		switch {
		case ck.fails != nil:
			b, ok := ast.Unparen(ck.fails).(*ast.BinaryExpr)
			if !ok || b.Op != token.NEQ && b.Op != token.EQL {
				return nil, false
			}
			switch {
			case isErr(b.X) && info.Types[b.Y].IsNil():
				errs = append(errs, b.X)
			case isErr(b.Y) && info.Types[b.X].IsNil():
				errs = append(errs, b.Y)
			default:
				return nil, false
			}
		default:
			switch strings.TrimSuffix(ck.fn.Name(), "f") {
			case "NoError", "Error":
			default:
				return nil, false
			}
			var e ast.Expr
			if len(ck.args) > 0 {
				e = ck.args[0]
			}
			errs = append(errs, e)
		}
	}
	return errs, true
}

// errFromCode reports whether the error e may come from the code under
// test: a call of a function outside the standard library, of a function
// value or an interface method (whose implementation may be the code's),
// a receive, or a variable some such expression assigns, or one the
// function does not define alone (a closure's, a package's, a field).
func (g *group) errFromCode(e ast.Expr, depth int) bool {
	info := g.c.info
	if depth > 8 {
		return true
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		if tv, ok := info.Types[x.Fun]; ok && tv.IsType() {
			return len(x.Args) == 1 && g.errFromCode(x.Args[0], depth+1)
		}
		fn := match.Callee(info, x)
		if fn == nil || fn.Pkg() == nil || !match.IsStd(fn.Pkg().Path()) {
			return true
		}
		if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil && types.IsInterface(sig.Recv().Type()) {
			return true
		}
		return false
	case *ast.Ident:
		if info.Types[x].IsNil() {
			return false
		}
		v, ok := info.ObjectOf(x).(*types.Var)
		if !ok {
			return true
		}
		if match.IsPackageLevel(v) {
			return true
		}
		from, found := false, false
		ast.Inspect(g.fn, func(n ast.Node) bool {
			if from {
				return false
			}
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					id, ok := ast.Unparen(l).(*ast.Ident)
					if !ok || info.ObjectOf(id) != v {
						continue
					}
					found = true
					switch {
					case len(n.Rhs) == len(n.Lhs):
						from = g.errFromCode(n.Rhs[i], depth+1)
					case len(n.Rhs) == 1:
						from = g.errFromCode(n.Rhs[0], depth+1)
					default:
						from = true
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if info.ObjectOf(id) != v {
						continue
					}
					found = true
					switch {
					case len(n.Values) == len(n.Names):
						from = g.errFromCode(n.Values[i], depth+1)
					case len(n.Values) == 1:
						from = g.errFromCode(n.Values[0], depth+1)
					}
				}
			case *ast.UnaryExpr:
				if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op == token.AND && info.ObjectOf(id) == v {
					from = true // written through a pointer: by anyone
				}
			case *ast.RangeStmt:
				for _, l := range []ast.Expr{n.Key, n.Value} {
					if id, ok := l.(*ast.Ident); ok && info.ObjectOf(id) == v {
						from = true
					}
				}
			}
			return !from
		})
		return from || !found
	}
	return true
}

// nonBlockingReceive returns the receive of a select with a default
// (select { case err := <-errs: t.Fatal(err); default: }) when a clause
// that receives fails the test or checks: a look, at one instant, at
// what the code (or a callback it runs) has sent so far, or nil.
func (c *checker) nonBlockingReceive(s *ast.SelectStmt) ast.Expr {
	hasDefault := false
	var recv ast.Expr
	for _, cl := range s.Body.List {
		cc, ok := cl.(*ast.CommClause)
		if !ok {
			continue
		}
		if cc.Comm == nil {
			hasDefault = true
			continue
		}
		if _, ok := cc.Comm.(*ast.SendStmt); ok {
			continue
		}
		checks := false
		for _, b := range cc.Body {
			ast.Inspect(b, func(n ast.Node) bool {
				if st, ok := n.(ast.Stmt); ok && (c.checkOf(st) != nil || c.failsHere(st)) {
					checks = true
				}
				return !checks
			})
		}
		if checks && recv == nil {
			switch comm := cc.Comm.(type) {
			case *ast.ExprStmt:
				recv = comm.X
			case *ast.AssignStmt:
				recv = comm.Rhs[0]
			}
		}
	}
	if !hasDefault {
		return nil
	}
	return recv
}

// checkingHelper returns the name of the test files' function call calls,
// when it is handed the testing value and checks something, or "".
func (c *checker) checkingHelper(call *ast.CallExpr) string {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() != c.pass.Pkg {
		return ""
	}
	handed := false
	for _, a := range call.Args {
		if t := c.info.TypeOf(a); t != nil && (match.IsNamed(t, "testing", "T") || match.IsNamed(t, "testing", "TB") || match.IsNamed(t, "testing", "B")) {
			handed = true
		}
	}
	fd := c.decls[fn.Origin()]
	if !handed || fd == nil || fd.Body == nil {
		return ""
	}
	checks := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if s, ok := n.(ast.Stmt); ok && c.checkOf(s) != nil {
			checks = true
		}
		return !checks
	})
	if !checks {
		return ""
	}
	return fn.Name()
}

// stops reports whether a call's name says it stops or cancels the code.
func stops(name string) bool {
	n := strings.ToLower(name[strings.LastIndex(name, ".")+1:])
	for _, w := range []string{"close", "stop", "shutdown", "cancel", "halt", "quit"} {
		if strings.HasPrefix(n, w) {
			return true
		}
	}
	return false
}

// line renders a node's position as file:line.
func (c *checker) line(n ast.Node) string {
	p := c.pass.Fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// short renders a statement for a reason: a check as its condition or
// call, another as its text, cut to one line.
func (c *checker) short(s ast.Stmt) string {
	var e ast.Node = s
	if ifs, ok := s.(*ast.IfStmt); ok {
		e = ifs.Cond
	}
	if es, ok := s.(*ast.ExprStmt); ok {
		e = es.X
	}
	text := ""
	if x, ok := e.(ast.Expr); ok {
		text = types.ExprString(x)
	} else {
		text = fmt.Sprintf("%T", s)
	}
	if len(text) > 60 {
		text = text[:57] + "..."
	}
	return text
}

// inLiteral reports whether stack, under the group's function, holds a
// function literal (a callback the code may run at any time).
func (g *group) inLiteral(stack []ast.Node) bool {
	for _, n := range stack {
		if lit, ok := n.(*ast.FuncLit); ok && ast.Node(lit) != g.fn {
			return true
		}
	}
	return false
}

// sharedWrite names an effect on state that outlives the test by the
// code the test calls before the wait (by its effect summary, goroutines
// and timers it starts included), or "". Such state outlives the test:
// what the code does to it in the rest of the window (a breaker tripped
// by a delivery that times out after it was accepted; a line spooled to
// a file in a directory the package's tests share) is seen by the tests
// after this one, and a poll that ends the window at the first event,
// followed by the test's end, which stops the code, keeps that from
// happening at all (red team batch 16, webhooktrip; batch 17,
// spoolreplay). Package-level variables are one such state; anything
// outside the process's memory is another (the file system, the network,
// processes, the environment and working directory, signal handlers,
// system calls and C code, whose state the rule cannot follow), and so
// is a package-level channel, timer or wait group. Which part of the
// code may still run in the window is not told apart: any such effect
// of the code the test starts counts.
func (c *checker) sharedWrite(fn ast.Node, before token.Pos) string {
	found := ""
	ast.Inspect(fn, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || call.Pos() >= before {
			return true
		}
		callee := match.Callee(c.info, call)
		if callee == nil || callee.Pkg() == nil || match.IsStd(callee.Pkg().Path()) {
			return true
		}
		sum := c.pass.Effects.Of(callee)
		if sum == nil {
			return true
		}
		for _, e := range sum.Effects {
			if what := outlives[e.Kind]; what != "" {
				found = c.outlivesWhy(call, what, e)
				return false
			}
			if e.Kind == effect.GoroutineEnds || e.Kind == effect.GoroutineForever || e.Kind == effect.Timer {
				if at := c.goroutineCounter(); at != "" {
					found = c.outlivesWhy(call, "starts goroutines or timers (the package's tests measure the whole process: "+at+")", e)
					return false
				}
			}
		}
		if sum.Files != nil {
			found = c.outlivesWhy(call, "writes the file system", *sum.Files)
			return false
		}
		return true
	})
	return found
}

// goroutineCounter names where the package's tests measure the whole
// process: its goroutines (runtime.NumGoroutine, runtime.Stack of all of
// them, a goroutine profile, go.uber.org/goleak) or its heap
// (runtime.ReadMemStats, runtime/metrics, testing.AllocsPerRun: a spill
// buffer a bug's late timer allocates, red team batch 21, shipheap), or
// "". There the goroutines
// the code starts are state that outlives the test: a later test, or
// TestMain after the run, counts them, and a goroutine a bug leaves
// blocked late in the sleep's window is never started when a poll ends
// the test, and the code with it, at the first event (red team batch
// 20, replicaleak).
func (c *checker) goroutineCounter() string {
	if c.counter != nil {
		return *c.counter
	}
	at := ""
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || at != "" {
				return at == ""
			}
			fn := match.Callee(c.info, call)
			if fn == nil || fn.Pkg() == nil {
				return true
			}
			name := ""
			switch path := fn.Pkg().Path(); {
			case path == "runtime" && (fn.Name() == "NumGoroutine" || fn.Name() == "Stack" || fn.Name() == "GoroutineProfile" || fn.Name() == "ReadMemStats"):
				name = "runtime." + fn.Name()
			case path == "runtime/pprof" && fn.Name() == "Lookup":
				name = "pprof.Lookup"
			case path == "runtime/metrics" && fn.Name() == "Read":
				name = "metrics.Read"
			case path == "testing" && fn.Name() == "AllocsPerRun":
				name = "testing.AllocsPerRun"
			case path == "go.uber.org/goleak" || strings.HasSuffix(path, "/goleak"):
				name = "goleak." + fn.Name()
			}
			if name != "" {
				at = name + " at " + c.line(call)
			}
			return at == ""
		})
	}
	c.counter = &at
	return at
}

// outlives says, for each kind of effect on state that outlives the
// test, what the code does.
var outlives = map[effect.Kind]string{
	effect.WritesGlobal: "writes package-level state",
	effect.SharedSync:   "uses a package-level channel, timer or wait group",
	effect.Network:      "uses the network (a peer or server may outlive the test)",
	effect.Process:      "runs or signals a process",
	effect.WritesEnv:    "writes the process environment",
	effect.WritesWd:     "changes the working directory",
	effect.Signal:       "handles process signals",
	effect.Syscall:      "makes system calls",
	effect.Cgo:          "calls C code",
}

// outlivesWhy is sharedWrite's reason: the call, what its code does and
// how (e).
func (c *checker) outlivesWhy(call *ast.CallExpr, what string, e effect.Effect) string {
	return fmt.Sprintf("the code the test calls at %s %s, which outlives the test (%s): what the code does to it in the rest of the sleep's window, later tests see, and a poll that ends at the first instant its checks hold ends the test, which stops the code, before that happens", c.line(call), what, e.Why())
}

// handed reports whether the group's function hands v, a local slice or
// array, to a call other than a builtin's: as an argument, or sliced
// (arr[:], s[i:]).
func (g *group) handed(v *types.Var) bool {
	info := g.c.info
	found := false
	ast.Inspect(g.fn, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
			if _, builtin := info.Uses[id].(*types.Builtin); builtin {
				return true
			}
		}
		for _, a := range call.Args {
			a = ast.Unparen(a)
			if se, ok := a.(*ast.SliceExpr); ok {
				a = ast.Unparen(se.X)
			}
			if id, ok := a.(*ast.Ident); ok && info.Uses[id] == types.Object(v) {
				found = true
			}
		}
		return !found
	})
	return found
}
