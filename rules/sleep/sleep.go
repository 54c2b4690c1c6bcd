package sleep

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/types"
	"strings"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/bubble"
	"github.com/unflake/unflake/internal/handover"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule finds tests that wait on the real clock and runs them on the
// virtual clock of a synctest bubble, or advances a fake clock instead.
var Rule = &rule.Rule{
	Name:      "sleep",
	Doc:       doc,
	Default:   true,
	Prefilter: prefilter,
	// A bubble ends only when every goroutine in it has: leak's
	// cleanups and joins are what let many tests end.
	Companions: []string{"leak"},
	// leak runs first: a test that ends what it starts is one a bubble
	// can hold, and under --verify both fixes are tried together.
	After:    []string{"leak"},
	Run:      run,
	Flags:    rule.Flags("sleep", minSaving),
	Requires: []*rule.Analysis{bubble.Scan, handover.Analysis},
}

// prefilter: a file that sleeps names Sleep or After.
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, "Sleep", "After")
}

// A site is a wait on the real clock: a time.Sleep(d) or <-time.After(d)
// statement.
type site struct {
	stmt  *ast.ExprStmt
	call  *ast.CallExpr // the time.Sleep or time.After call, or the sleep helper's
	dur   ast.Expr      // the duration the call is given
	after bool
	// helper is set when call is a sleep helper's (testutil.Sleep(d),
	// bubble.SleepHelper): only a bubble makes it virtual.
	helper bool
	file   *ast.File
	decl   *ast.FuncDecl // the top-level function holding it, or nil
	stack  []ast.Node    // enclosing nodes, outermost first
}

// analysis is the sleep rule's view of a package: the shared bubble
// analysis and the pass it reports to.
type analysis struct {
	*bubble.Analysis
	pass     *rule.Pass
	info     *types.Info
	handover *handover.Finder
	pipes    pipeState // the pair helpers given in-memory connections (pipe.go)
}

func run(pass *rule.Pass) error {
	a := &analysis{Analysis: bubble.New(pass), pass: pass, info: pass.TypesInfo, pipes: pipeState{helpers: map[*ast.FuncDecl]bool{}, servers: map[*bubble.Server]bool{}}}
	sites := a.sites()
	if len(sites) == 0 {
		return nil
	}
	a.Analyze()
	a.handover = handover.Of(pass)
	wrapped := map[*bubble.Target]bool{} // targets already wrapped by an applied fix
	for _, s := range sites {
		a.report(s, wrapped)
	}
	return nil
}

// sites returns the waits in the editable test files, outside synctest
// bubbles.
func (a *analysis) sites() []*site {
	var out []*site
	for _, f := range a.pass.Files {
		if !a.Editable(f) {
			continue
		}
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok && a.InBubble(lit) {
				a.resolved(lit.Body)
				return false // already on the virtual clock
			}
			stmt, ok := n.(*ast.ExprStmt)
			if !ok {
				return true
			}
			call, after := bubble.Wait(a.info, stmt)
			var dur ast.Expr
			helper := false
			if call != nil {
				dur = call.Args[0]
			} else if call, dur = a.SleepHelper(stmt); call != nil {
				helper = true
			}
			if call == nil || match.PollWait(a.info, stmt, stack) {
				return true // not a wait, or a poll's own (waitfor's fix)
			}
			s := &site{stmt: stmt, call: call, dur: dur, after: after, helper: helper, file: f, stack: append([]ast.Node(nil), stack...)}
			if len(stack) > 1 {
				s.decl, _ = stack[1].(*ast.FuncDecl)
			}
			out = append(out, s)
			return true
		})
	}
	return out
}

// resolved tells the engine that the waits in a bubble's function body
// are on the virtual clock: a finding made on one before another rule's
// fix moved it into the bubble was fixed by that fix.
func (a *analysis) resolved(body *ast.BlockStmt) {
	ast.Inspect(body, func(n ast.Node) bool {
		if stmt, ok := n.(*ast.ExprStmt); ok {
			call, _ := bubble.Wait(a.info, stmt)
			if call == nil {
				call, _ = a.SleepHelper(stmt)
			}
			if call != nil {
				a.pass.Report(rule.Diagnostic{Pos: stmt.Pos(), End: stmt.End(), Resolved: "the wait is now on a bubble's virtual clock"})
			}
		}
		return true
	})
}

// report reports the wait s with its fix or the reason it has none.
func (a *analysis) report(s *site, wrapped map[*bubble.Target]bool) {
	var reach, own []*bubble.Target
	for _, t := range a.Targets() {
		if t.Reaches(s.stmt) {
			reach = append(reach, t)
			if t.Body().Pos() <= s.stmt.Pos() && s.stmt.End() <= t.Body().End() {
				own = append(own, t)
			}
		}
	}
	if len(own) > 0 {
		// The wait is in a test's own body (a test method a suite runs
		// as a subtest, say): wrapping that body is enough, whatever
		// calls it.
		reach = own[len(own)-1:]
	}
	if len(reach) == 0 {
		if a.Bubbled(s.stmt) {
			if s.decl != nil && a.InBubble(s.decl) {
				// The body of synctest.Test(t, testX), which no test
				// calls outside the bubble.
				a.pass.Report(rule.Diagnostic{Pos: s.stmt.Pos(), End: s.stmt.End(), Resolved: "the wait is now on a bubble's virtual clock"})
			}
			return // a helper only bubbles call
		}
		if s.decl == nil || notTest(s.decl.Name.Name) {
			return // in a benchmark, an example, TestMain: not a test's wait
		}
	}
	// Have: a wait on the real clock in a test or a helper tests call.
	d := rule.Diagnostic{Pos: s.stmt.Pos(), End: s.stmt.End(), Message: a.message(s)}
	if v, ok := match.ConstDuration(a.info, s.dur); ok && v > 0 {
		d.Saving = v
	}
	if len(reach) == 0 {
		d.NotFixed = "no test calls it statically, so the rule cannot tell which test to run on a virtual clock"
		a.pass.Report(d)
		return
	}

	// Have: the tests that reach the wait. One that says it keeps real
	// time, or a comment next to the wait that does, keeps the wait:
	// neither a bubble nor a fake clock's advance.
	if why := a.keepsTime(s, reach); why != "" {
		d.NotFixed = why
		a.pass.Report(d)
		return
	}

	spawn := ""
	for _, t := range reach {
		if spawn == "" {
			spawn = t.Spawn()
		}
	}
	// Every reason, not only the first: a finding says all that stands
	// between it and a fix (raising the go line alone may unlock nothing).
	blocks, unproves := a.Blockers(reach, func(t *bubble.Target, why string) string { return a.inTarget(s, t, why) })
	blocked, unproven := first(blocks), first(unproves)
	if blocked == "" {
		// A bubble is possible: is it worth the re-indented test?
		var small string
		if reach, small = a.worthWrapping(reach); small != "" {
			blocks, blocked = []string{small}, small
		}
	}
	// Have: whether the tests reaching s can run in a bubble. Prefer a
	// bubble, proven or not, to an advance of a fake clock: in a bubble
	// the sleep still lets the other goroutines run before time moves,
	// and the fake clock stays where it was, so the test sees what it
	// saw. An advance does neither (see clockFix) and is never proven.
	if blocked == "" && unproven == "" {
		d.Fix = a.wrapFix(s, reach, wrapped)
		a.pass.Report(d)
		return
	}
	// blockers lists all the reasons, the first said as reason says it.
	blockers := func(reason string) []string {
		all := append(append([]string{}, blocks...), unproves...)
		return append([]string{reason}, all[1:]...)
	}
	switch clock, why, waiters := a.clockFix(s, spawn); {
	case blocked == "":
		d.Fix = a.wrapFix(s, reach, wrapped)
		h := &rule.Hypothesis{Reason: unproven}
		if waiters {
			h.Reason += "; " + why
			if clock != nil {
				// Should the bubble fail, verification tries the
				// wait for waiters next.
				h.Alternatives = append([]*rule.Fix{clock}, clock.Hypothesis.Alternatives...)
				clock.Hypothesis.Alternatives = nil
			}
		}
		d.Fix.Hypothesis = h
		d.Blockers = blockers(h.Reason)
		if pairs, servers := pipesOf(reach); len(pairs)+len(servers) > 0 {
			if why := a.withPipes(d.Fix, pairs, servers); why != "" {
				d.Fix, d.NotFixed = nil, unproven+"; "+why
				d.Blockers = blockers(d.NotFixed)
			}
		}
	case clock != nil:
		if waiters {
			for _, f := range append([]*rule.Fix{clock}, clock.Hypothesis.Alternatives...) {
				f.Hypothesis.Reason += "; and no synctest bubble: " + blocked
			}
			d.Blockers = blockers(clock.Hypothesis.Reason)
		}
		d.Fix = clock
	case why != "":
		d.NotFixed = why + "; and no synctest bubble: " + blocked
		d.Blockers = blockers(d.NotFixed)
	default:
		d.NotFixed = blocked
		d.Blockers = blockers(d.NotFixed)
	}
	a.pass.Report(d)
}

// keepsTime says why the wait s stays on the real clock: a comment next
// to it, or a test in reach (its name or comments), says it exercises
// the wall clock (package intent); or "".
func (a *analysis) keepsTime(s *site, reach []*bubble.Target) string {
	const by = "a virtual or fake clock"
	if said, ok := intent.Of(intent.Clock, nil, intent.Comments(a.pass.Fset, s.file, s.stmt)); ok {
		return said.Reason("the sleep", by)
	}
	for _, t := range reach {
		if said, ok := t.Says(intent.Clock); ok {
			who := "the test"
			if len(reach) > 1 {
				who = t.Name()
			}
			return said.Reason(who, by)
		}
	}
	return ""
}

// first is the first reason of list, or "".
func first(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}

// inTarget qualifies a reason by the test it is about when the wait is
// not in that test's own body.
func (a *analysis) inTarget(s *site, t *bubble.Target, why string) string {
	if t.Fn().Pos() <= s.stmt.Pos() && s.stmt.End() <= t.Fn().End() {
		return why
	}
	return why + " (" + t.Name() + " calls it)"
}

// notTest reports whether a top-level function named name is not a test.
func notTest(name string) bool {
	for _, p := range []string{"Benchmark", "Example", "Fuzz"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "TestMain"
}

func (a *analysis) message(s *site) string {
	arg := s.dur
	text := types.ExprString(arg)
	if v, ok := match.ConstDuration(a.info, arg); ok {
		text = match.FormatDuration(v)
	}
	if s.helper {
		return fmt.Sprintf("%s waits on the real clock (it sleeps for %s, scaled as its body says)", types.ExprString(s.call), text)
	}
	if s.after {
		return fmt.Sprintf("<-time.After(%s) waits on the real clock", text)
	}
	return fmt.Sprintf("time.Sleep(%s) waits on the real clock", text)
}

// wrapFix runs every test in reach in a synctest bubble. Several waits
// share the wrap of a test: whichever fix the engine applies first wraps
// it, the others find it done.
func (a *analysis) wrapFix(s *site, reach []*bubble.Target, wrapped map[*bubble.Target]bool) *rule.Fix {
	msg := "run the test in a synctest bubble (virtual time)"
	switch t := reach[0]; {
	case len(reach) > 1:
		msg = "run the tests that call it in synctest bubbles (virtual time)"
	case s.stmt.Pos() < t.Fn().Pos() || t.Fn().End() < s.stmt.End():
		msg = "run the test that calls it in a synctest bubble (virtual time)"
	}
	return &rule.Fix{
		Message: msg,
		Changes: []rule.Change{{Kind: rule.Clock, WorkUnseen: true, What: "the test runs in a synctest bubble: its clock is virtual, starts at 2000-01-01 UTC, stands still between statements, and sleeps end on their deadlines: the test's own one nanosecond past (as real sleeps end a little late), the code's exactly; work that is slow because it computes takes no virtual time, so a check that bounds the code's work in real time sees none of it",
			Checked: bubble.ClockChecked(reach)}},
		Apply: func() error {
			for _, t := range reach {
				if !wrapped[t] {
					wrapped[t] = true
					if err := a.Wrap(t); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
}

// movesClock returns the name of a method of the fake clock v that moves
// or waits on it (Advance, Add, Step, Set, BlockUntil...) called in body,
// or "".
func (a *analysis) movesClock(body *ast.BlockStmt, v *types.Var) string {
	moved := ""
	ownWait := a.waitsForWaiters(body, v)
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || moved != "" {
			return moved == ""
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && a.info.Uses[id] == v {
			if ownWait[call] {
				return true // unflake's own wait for waiters, not the test moving the clock
			}
			switch name := sel.Sel.Name; name {
			case "Advance", "Add", "Step", "Set", "SetTime", "Sleep", "BlockUntil", "BlockUntilContext", "WaitForAllTimers":
				moved = name
			}
		}
		return true
	})
	return moved
}

// A fakeClock is a fake clock type of a known library and the method that
// moves it forward.
type fakeClock struct {
	path, typ, advance string
	why                string // why the rule does not use it, if it does not

	// cure is how the test waits for goroutines to reach the clock's
	// timers with this library, a format taking the clock's name.
	cure string
}

var fakeClocks = []fakeClock{
	{path: clockworkPath, typ: "FakeClock", advance: "Advance",
		cure: "clockwork's %s.BlockUntilContext(ctx, n), n the number of goroutines that wait on the clock"},
	{path: "github.com/benbjohnson/clock", typ: "Mock", advance: "Add",
		cure: "a signal from the goroutine, a channel the test receives from (%s, a benbjohnson/clock Mock, has no wait for waiters)"},
	{path: "k8s.io/utils/clock/testing", typ: "FakeClock", advance: "Step",
		cure: "a deadline poll on %s.HasWaiters()"},
	{path: "github.com/coder/quartz", typ: "Mock",
		why:  "the test drives a quartz Mock clock, whose Advance must be waited on with a context; the rule leaves it",
		cure: "a quartz trap (trap := %s.Trap().NewTimer(), then trap.MustWait(ctx).MustRelease(ctx))"},
}

// clockFix rewrites the wait s into an advance of a fake clock in scope
// that the test passed to the code under test before s. The fix is never
// proven: a real sleep also lets other goroutines run, an advance does
// not; and it is not offered at all in a test seen to start a goroutine
// (spawn names where). It returns the reason when there is such a clock
// it cannot use, and whether that reason is the cure for a sleep that
// waits for goroutines to reach the clock's timers (worth adding to a
// bubble's reason). For that sleep, it may also return the cure itself
// as a fix for verification to try (waitersFix), with the reason.
func (a *analysis) clockFix(s *site, spawn string) (fix *rule.Fix, why string, waiters bool) {
	if s.helper {
		return nil, "", false // the sleep is in the helper's body: only a bubble reaches it
	}
	if s.decl == nil || s.decl.Body == nil || !a.importsClock() {
		return nil, "", false
	}
	scope := a.pass.Pkg.Scope().Innermost(s.stmt.Pos())
	if scope == nil {
		return nil, "", false
	}
	var found []*types.Var
	var clock fakeClock
	ast.Inspect(s.decl.Body, func(n ast.Node) bool {
		if n == nil || n.Pos() >= s.stmt.Pos() {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || call.End() > s.stmt.Pos() {
			return true
		}
		for _, arg := range call.Args {
			ast.Inspect(arg, func(n ast.Node) bool {
				if _, ok := n.(*ast.FuncLit); ok {
					return false
				}
				id, ok := n.(*ast.Ident)
				if !ok {
					return true
				}
				v, ok := a.info.Uses[id].(*types.Var)
				if !ok || v.IsField() {
					return true
				}
				c, ok := clockOf(v.Type())
				if !ok {
					return true
				}
				if _, obj := scope.LookupParent(v.Name(), s.stmt.Pos()); obj != v {
					return true
				}
				for _, w := range found {
					if w == v {
						return true
					}
				}
				found, clock = append(found, v), c
				return true
			})
		}
		return true
	})
	switch {
	case len(found) == 0:
		return nil, "", false
	case len(found) > 1:
		return nil, "the test drives several fake clocks; the rule cannot tell which one the wait is for", false
	case clock.why != "":
		return nil, clock.why + "; for a sleep that waits for a goroutine to reach the clock's timers, the cure is " + fmt.Sprintf(clock.cure, found[0].Name()), false
	}
	v := found[0]
	if h := a.handover.Enclosing(s.stack); h.Kind != handover.Own {
		// A sleep in a handler or a job the test gives the code under
		// test simulates that code's work: an advance would change
		// what the code does, not what the test waits for.
		if h.Kind == handover.Handed {
			return nil, fmt.Sprintf("the sleep is in a function the test hands to the code under test (%s): it is that code's behaviour, not a wait of the test, so the rule does not replace it", h.To), false
		}
		return nil, fmt.Sprintf("the rule cannot tell whether the function holding the sleep is the test's own code or code it hands over (%s), so it does not replace the sleep", h.To), false
	}
	if obj, _, _ := types.LookupFieldOrMethod(v.Type(), true, v.Pkg(), clock.advance); obj == nil {
		return nil, "", false
	}
	// Have: one fake clock, passed to the code under test, in scope.
	if moved := a.movesClock(s.decl.Body, v); moved != "" {
		// The test moves the fake clock itself: the real sleep is more
		// likely waiting for a goroutine to reach one of its timers than
		// standing in for an advance, and advancing by the sleep as well
		// would shift every timer the test reasons about.
		why := fmt.Sprintf("the test moves the fake clock itself (%s.%s); if the sleep waits for a goroutine to reach a timer, the library's wait for waiters is the cure: %s", v.Name(), moved, fmt.Sprintf(clock.cure, v.Name()))
		return a.waitersFix(s, v, why), why, true
	}
	if spawn != "" {
		// The test starts a goroutine: the sleep most likely lets it
		// run (a scheduler's start-up run), which an advance does not.
		// A gocron test whose 10ms sleep became an advance failed 13
		// of 30 runs, and passed the 3 runs of a verification.
		return nil, fmt.Sprintf("the test starts a goroutine (%s), which the sleep lets run and an advance of the fake clock would not; if the sleep waits for it to reach the clock's timers, wait with %s", spawn, fmt.Sprintf(clock.cure, v.Name())), false
	}
	var d time.Duration
	if c, ok := match.ConstDuration(a.info, s.dur); ok {
		d = c
	}
	text := types.ExprString(s.dur)
	if d > 0 {
		text = match.FormatDuration(d)
	}
	return &rule.Fix{
		Message: fmt.Sprintf("advance the fake clock instead (%s.%s(%s))", v.Name(), clock.advance, text),
		Changes: []rule.Change{{Kind: rule.Clock, What: "the fake clock moves by the sleep's duration at once; no real time passes"}},
		// A test that passes with the real sleep passes while the fake
		// clock stands still: the sleep only gave other goroutines
		// time to run (a start-up run that records the clock's time).
		// The advance takes that time away and moves the clock the
		// code reads. Only running the test can tell it still passes.
		Hypothesis: rule.Unproven(fmt.Sprintf("a real sleep also lets other goroutines run and an advance of the fake clock does not; if the sleep gives a goroutine time to run (a start-up run, reaching a timer), wait for it instead with %s", fmt.Sprintf(clock.cure, v.Name()))),
		Apply: func() error {
			stmt := a.pass.Dst(s.stmt).(*dst.ExprStmt)
			sel := &dst.SelectorExpr{X: dst.NewIdent(v.Name()), Sel: dst.NewIdent(clock.advance)}
			switch x := stmt.X.(type) {
			case *dst.CallExpr:
				x.Fun = sel
			case *dst.UnaryExpr:
				call := x.X.(*dst.CallExpr)
				stmt.X = &dst.CallExpr{Fun: sel, Args: call.Args}
			}
			return nil
		},
	}, "", false
}

// importsClock reports whether the package imports a fake clock library,
// so that a package without one costs clockFix nothing.
func (a *analysis) importsClock() bool {
	for _, p := range a.pass.Pkg.Imports() {
		for _, c := range fakeClocks {
			if p.Path() == c.path {
				return true
			}
		}
	}
	return false
}

// clockOf returns the fake clock library of t.
func clockOf(t types.Type) (fakeClock, bool) {
	for _, c := range fakeClocks {
		if match.IsNamed(t, c.path, c.typ) {
			return c, true
		}
	}
	return fakeClock{}, false
}
