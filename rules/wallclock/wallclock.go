package wallclock

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/bubble"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule finds assertions on elapsed wall time in tests and runs the test
// on a virtual clock or removes the budget.
var Rule = &rule.Rule{
	Name:      "wallclock",
	Doc:       doc,
	Default:   true,
	Flags:     rule.Flags("wallclock", addBench),
	Prefilter: prefilter,
	// A bubble ends only when every goroutine in it has: leak's
	// cleanups and joins are what let many tests end.
	Companions: []string{"leak"},
	// sleep runs first: a test sleep wraps in a bubble keeps its
	// wall-clock assertions, exact on the virtual clock.
	After:    []string{"sleep"},
	Run:      run,
	Requires: []*rule.Analysis{bubble.Scan, match.Decls},
}

var addBench = rule.BoolOption("wallclock-bench", false, "when removing a wall-clock budget, also add a benchmark of the timed code")

// prefilter: elapsed time is measured with time.Since, Time.Sub or
// testify's WithinDuration.
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, "Since(", ".Sub(", "WithinDuration")
}

// A timing is a local variable set once from time.Now() or time.Since:
// the start of a timed region, or the elapsed time.
type timing struct {
	v      *types.Var
	decl   *ast.AssignStmt // v := time.Now() or v := time.Since(start)
	parent ast.Node        // the block holding decl
	start  *timing         // for an elapsed time, its start, or nil
	from   ast.Expr        // for an elapsed time, the start it measures from
}

// A site is an assertion on elapsed wall time.
type site struct {
	stmt   ast.Stmt // the if statement or the testify call statement
	parent ast.Node // the block holding stmt
	file   *ast.File
	budget ast.Expr
	lower  bool     // the elapsed time must be at least the budget
	start  *timing  // the start of the timed region, or nil when unknown
	from   ast.Expr // what the elapsed time is measured from, when start is nil
	via    *timing  // the elapsed-time variable the assertion reads, or nil
}

// checker holds what a run needs across sites.
type checker struct {
	pass    *rule.Pass
	info    *types.Info
	bubbles *bubble.Analysis
	timings map[*types.Var]*timing
	uses    map[*types.Var][]*ast.Ident
	removed map[ast.Node]bool                // statements deleted by applied fixes
	wrapped map[*bubble.Target]bool          // tests wrapped by applied fixes
	lowerAt map[*bubble.Target]*site         // the first lower bound of each test
	boundOf map[*bubble.Target]time.Duration // the longest constant upper bound of each test
	benched map[*ast.FuncDecl]bool           // tests that got a benchmark
	names   map[string]bool                  // package-level names, for new benchmarks
	sites   []*site                          // every assertion found
	decls   map[*types.Func]*ast.FuncDecl
}

func run(pass *rule.Pass) error {
	c := &checker{
		pass:    pass,
		info:    pass.TypesInfo,
		bubbles: bubble.New(pass),
		timings: map[*types.Var]*timing{},
		uses:    map[*types.Var][]*ast.Ident{},
		removed: map[ast.Node]bool{},
		wrapped: map[*bubble.Target]bool{},
		benched: map[*ast.FuncDecl]bool{},
		names:   map[string]bool{},
		decls:   match.DeclsOf(pass),
	}
	var sites []*site
	for _, f := range pass.Files {
		if !c.bubbles.Editable(f) {
			continue
		}
		c.findTimings(f)
	}
	for _, f := range pass.Files {
		if !c.bubbles.Editable(f) {
			continue
		}
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			if body := bubbleBody(n); body != nil && c.bubbles.InBubble(n) {
				c.resolved(body)
				return false // on the virtual clock already: the assertion is exact
			}
			if len(stack) == 0 {
				return true
			}
			if s := c.site(n); s != nil {
				s.parent, s.file = stack[len(stack)-1], f
				if len(match.StmtList(s.parent)) > 0 {
					sites = append(sites, s)
				}
			}
			return true
		})
	}
	if len(sites) == 0 {
		return nil
	}
	for id, obj := range c.info.Uses {
		if v, ok := obj.(*types.Var); ok && c.timings[v] != nil {
			c.uses[v] = append(c.uses[v], id)
		}
	}
	for _, o := range pass.Pkg.Scope().Names() {
		c.names[o] = true
	}
	c.bubbles.Analyze()
	c.sites = sites
	// A wrap puts the whole test on the virtual clock: a lower bound
	// anywhere in it makes every site's wrap as unproven as its own.
	c.lowerAt = map[*bubble.Target]*site{}
	for _, s := range sites {
		if t := c.bubbles.TargetOf(s.stmt.Pos()); t != nil && s.lower && c.lowerAt[t] == nil {
			c.lowerAt[t] = s
		}
	}
	// A wrap puts the whole test on a clock that does not see work: the
	// longest upper bound anywhere in it is what slowed code must pass
	// (rule.Change.Window), whichever site's fix makes the wrap.
	c.boundOf = map[*bubble.Target]time.Duration{}
	for _, s := range sites {
		if t := c.bubbles.TargetOf(s.stmt.Pos()); t != nil && !s.lower {
			c.boundOf[t] = max(c.boundOf[t], c.budgetWindow(s))
		}
	}
	for _, s := range sites {
		c.report(s)
	}
	return nil
}

// findTimings records the variables of f set once by start := time.Now()
// or elapsed := time.Since(start) (or time.Now().Sub(start)).
func (c *checker) findTimings(f *ast.File) {
	match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || as.Tok != token.DEFINE || len(as.Lhs) != 1 || len(as.Rhs) != 1 || len(stack) == 0 {
			return true
		}
		id, ok := as.Lhs[0].(*ast.Ident)
		if !ok {
			return true
		}
		v, ok := c.info.Defs[id].(*types.Var)
		if !ok {
			return true
		}
		tm := &timing{v: v, decl: as, parent: stack[len(stack)-1]}
		if call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); ok && len(call.Args) == 0 && match.IsPkgFunc(c.info, call, "time", "Now") {
			c.timings[v] = tm
		} else if start, ok := c.elapsed(as.Rhs[0]); ok {
			tm.start, tm.from = c.startOf(start), start
			c.timings[v] = tm
		}
		return true
	})
	// A variable assigned again is not a plain timing.
	for v := range c.assigned(f) {
		delete(c.timings, v)
	}
}

// assigned returns the variables root assigns (other than by declaring
// them), increments or takes the address of.
func (c *checker) assigned(root ast.Node) map[*types.Var]bool {
	out := map[*types.Var]bool{}
	ast.Inspect(root, func(n ast.Node) bool {
		var lhs []ast.Expr
		switch n := n.(type) {
		case *ast.AssignStmt:
			lhs = n.Lhs
		case *ast.IncDecStmt:
			lhs = []ast.Expr{n.X}
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				lhs = []ast.Expr{n.X}
			}
		}
		for _, e := range lhs {
			if id, ok := ast.Unparen(e).(*ast.Ident); ok {
				if v, ok := c.info.Uses[id].(*types.Var); ok {
					out[v] = true
				}
			}
		}
		return true
	})
	return out
}

// elapsed reports whether e is time.Since(start) or time.Now().Sub(start)
// and returns start.
func (c *checker) elapsed(e ast.Expr) (ast.Expr, bool) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil, false
	}
	if match.IsPkgFunc(c.info, call, "time", "Since") {
		return call.Args[0], true
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.IsMethod(c.info, call, "time", "Sub") {
		if now, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok && len(now.Args) == 0 && match.IsPkgFunc(c.info, now, "time", "Now") {
			return call.Args[0], true
		}
	}
	return nil, false
}

// startOf returns the start timing e names, or nil.
func (c *checker) startOf(e ast.Expr) *timing {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return nil
	}
	v, _ := c.info.Uses[id].(*types.Var)
	if tm := c.timings[v]; tm != nil && tm.start == nil && !isElapsed(tm) {
		return tm
	}
	return nil
}

func isElapsed(tm *timing) bool {
	_, ok := ast.Unparen(tm.decl.Rhs[0]).(*ast.CallExpr)
	return ok && tm.start != nil
}

// elapsedOperand reports whether e is elapsed wall time: time.Since(x),
// time.Now().Sub(x), or a variable set once to one of them. It returns
// the start of the timed region (nil when unknown) and the variable.
func (c *checker) elapsedOperand(e ast.Expr) (ok bool, start, via *timing, from ast.Expr) {
	if x, ok := c.elapsed(e); ok {
		return true, c.startOf(x), nil, x
	}
	if id, ok := ast.Unparen(e).(*ast.Ident); ok {
		if v, ok := c.info.Uses[id].(*types.Var); ok {
			if tm := c.timings[v]; tm != nil {
				if _, ok := c.elapsed(tm.decl.Rhs[0]); ok {
					return true, tm.start, tm, tm.from
				}
			}
		}
	}
	return false, nil, nil, nil
}

func (c *checker) isDuration(e ast.Expr) bool {
	tv, ok := c.info.Types[e]
	return ok && tv.Type != nil && match.IsNamed(tv.Type, "time", "Duration")
}

// compare matches a comparison of elapsed time with a duration. It
// returns the budget and whether the comparison holds when the elapsed
// time is at least (not below) the budget.
func (c *checker) compare(e ast.Expr) (s *site, holdsWhenSlow bool) {
	b, ok := ast.Unparen(e).(*ast.BinaryExpr)
	if !ok {
		return nil, false
	}
	var slow bool // the comparison holds for a large elapsed time on the left
	switch b.Op {
	case token.GTR, token.GEQ:
		slow = true
	case token.LSS, token.LEQ:
	default:
		return nil, false
	}
	if ok, start, via, from := c.elapsedOperand(b.X); ok && c.isDuration(b.Y) {
		return &site{budget: b.Y, start: start, via: via, from: from}, slow
	}
	if ok, start, via, from := c.elapsedOperand(b.Y); ok && c.isDuration(b.X) {
		return &site{budget: b.X, start: start, via: via, from: from}, !slow
	}
	return nil, false
}

// site matches an assertion on elapsed wall time at n.
func (c *checker) site(n ast.Node) *site {
	switch n := n.(type) {
	case *ast.IfStmt:
		// Have: an if statement. It must fail the test, and do nothing else.
		if n.Else != nil || !c.fails(n.Body) || n.Init != nil && !c.elapsedInit(n.Init) {
			return nil
		}
		s, slow := c.compare(n.Cond)
		if s == nil {
			return nil
		}
		// Have: if <elapsed cmp budget> { t.Fatal(...) }. The test fails
		// when the comparison holds: a slow failure is an upper bound.
		s.stmt, s.lower = n, !slow
		return s
	case *ast.ExprStmt:
		call, ok := n.X.(*ast.CallExpr)
		if !ok {
			return nil
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil || fn.Type().(*types.Signature).Recv() != nil {
			return nil
		}
		if p := fn.Pkg().Path(); !strings.HasSuffix(p, "testify/assert") && !strings.HasSuffix(p, "testify/require") {
			return nil
		}
		s := c.testify(strings.TrimSuffix(fn.Name(), "f"), call.Args)
		if s != nil {
			s.stmt = n
		}
		return s
	}
	return nil
}

// elapsedInit reports whether an if statement's init only declares elapsed
// time (if d := time.Since(start); d > budget {...}), which goes with the
// if when the assertion is removed.
func (c *checker) elapsedInit(init ast.Stmt) bool {
	as, ok := init.(*ast.AssignStmt)
	if !ok || as.Tok != token.DEFINE || len(as.Lhs) != 1 {
		return false
	}
	id, ok := as.Lhs[0].(*ast.Ident)
	if !ok {
		return false
	}
	v, _ := c.info.Defs[id].(*types.Var)
	tm := c.timings[v]
	return tm != nil && isElapsed(tm)
}

// testify matches a testify assertion named name (without its trailing
// f) on elapsed time.
func (c *checker) testify(name string, args []ast.Expr) *site {
	switch name {
	case "Less", "LessOrEqual", "Greater", "GreaterOrEqual":
		if len(args) < 3 {
			return nil
		}
		// Less(t, a, b) holds when a < b.
		big := name == "Greater" || name == "GreaterOrEqual"
		if ok, start, via, from := c.elapsedOperand(args[1]); ok && c.isDuration(args[2]) {
			return &site{budget: args[2], start: start, via: via, from: from, lower: big}
		}
		if ok, start, via, from := c.elapsedOperand(args[2]); ok && c.isDuration(args[1]) {
			return &site{budget: args[1], start: start, via: via, from: from, lower: !big}
		}
	case "True":
		if len(args) < 2 {
			return nil
		}
		if s, slow := c.compare(args[1]); s != nil {
			s.lower = slow // it must hold: holding when slow is a lower bound
			return s
		}
	case "WithinDuration":
		if len(args) < 4 || !c.isDuration(args[3]) {
			return nil
		}
		// WithinDuration(t, start, time.Now(), d): at most d since start.
		for _, pair := range [][2]ast.Expr{{args[1], args[2]}, {args[2], args[1]}} {
			if now, ok := ast.Unparen(pair[1]).(*ast.CallExpr); ok && len(now.Args) == 0 && match.IsPkgFunc(c.info, now, "time", "Now") {
				if start := c.startOf(pair[0]); start != nil {
					return &site{budget: args[3], start: start}
				}
			}
		}
	}
	return nil
}

// fails reports whether body only fails the test: its statements are
// calls of t.Error*, t.Fatal*, t.Fail*, t.Log* (at least one failing).
func (c *checker) fails(body *ast.BlockStmt) bool {
	failing := false
	for _, st := range body.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			return false
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			return false
		}
		switch {
		case match.IsMethod(c.info, call, "testing", "Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow"):
			failing = true
		case match.IsMethod(c.info, call, "testing", "Log", "Logf", "Helper"):
		default:
			return false
		}
	}
	return failing
}

// budgetWindow is the budget as a change's window (rule.Change.Window),
// 0 when it is not a constant: verification slows the timed code past
// it, which the original fails at the bound and a rewrite that no longer
// sees work (a bubble, the bound gone) passes.
func (c *checker) budgetWindow(s *site) time.Duration {
	d, _ := match.ConstDuration(c.info, s.budget)
	return d
}

// budgetText renders the budget for messages.
func (c *checker) budgetText(s *site) string {
	if d, ok := match.ConstDuration(c.info, s.budget); ok {
		return match.FormatDuration(d)
	}
	return types.ExprString(s.budget)
}

// resolved tells the engine that the assertions in a bubble's function
// are exact: a finding made on one before another rule's fix moved it
// into the bubble was fixed by that fix.
func (c *checker) resolved(body *ast.BlockStmt) {
	ast.Inspect(body, func(n ast.Node) bool {
		if s := c.site(n); s != nil {
			c.pass.Report(rule.Diagnostic{Pos: s.stmt.Pos(), End: s.stmt.End(), Resolved: "the assertion is now on a bubble's virtual clock, where it holds exactly"})
		}
		return true
	})
}

// bubbleBody is the body of a func literal or a declared function (the
// body of synctest.Test(t, testX)), or nil.
func bubbleBody(n ast.Node) *ast.BlockStmt {
	switch n := n.(type) {
	case *ast.FuncLit:
		return n.Body
	case *ast.FuncDecl:
		return n.Body
	}
	return nil
}

// report reports s with its fix or the reason it has none.
func (c *checker) report(s *site) {
	t := c.bubbles.TargetOf(s.stmt.Pos())
	if t == nil {
		return // in a helper, a benchmark or an example: not a test's assertion
	}
	budget := c.budgetText(s)
	d := rule.Diagnostic{Pos: s.stmt.Pos(), End: s.stmt.End()}
	if s.lower {
		d.Message = fmt.Sprintf("the test asserts that at least %s of wall time elapses", budget)
	} else {
		d.Message = fmt.Sprintf("the test asserts that the timed code takes less than %s of wall time", budget)
	}
	waits, opaque, feeds, blocks := false, "", "", ""
	if s.start != nil {
		region := c.region(s)
		blocks = c.blocks(region)
		for _, st := range region {
			if c.bubbles.UsesClock(st) {
				waits = true
			}
			if opaque == "" {
				opaque = c.bubbles.Opaque(st)
			}
		}
		// A region that waits on a channel or a lock that goroutines
		// feed or hold (tokens a ticker goroutine puts in a channel)
		// waits for them: its time is their behaviour, not the test's
		// own computation.
		if !waits {
			if how := c.syncWait(region); how != "" {
				if who := c.goroutines(t); who != "" {
					feeds = "the timed region " + how + " and the test starts goroutines (" + who + ") that may feed it"
				}
			}
		}
	}
	// Have: the assertion, its test, and whether the timed region waits
	// on the clock or on other goroutines.
	said, says := t.Says(intent.Clock)
	if !says {
		said, says = intent.Of(intent.Clock, nil, intent.Comments(c.pass.Fset, s.file, s.stmt))
	}
	switch {
	case says:
		// The test says the wall clock is what it is about: neither
		// virtual time nor a dropped budget keeps that.
		d.NotFixed = said.Reason("the test", "a synctest bubble's virtual clock or a dropped budget")
	case s.lower || waits:
		// Every reason, not only the first (see the sleep rule).
		blocked, unproven := c.bubbles.Blockers([]*bubble.Target{t}, nil)
		what := "the timed region waits on the real clock"
		if s.lower {
			what = "the assertion is a lower bound on real time"
		}
		if len(blocked) > 0 {
			d.NotFixed = what + " and the test cannot run in a synctest bubble: " + blocked[0]
			d.Blockers = append(append([]string{d.NotFixed}, blocked[1:]...), unproven...)
			break
		}
		if why := c.onBudget(s, t.Body()); why != "" {
			d.NotFixed = what + " and " + why + ", and the assertion fails only above it: in a synctest bubble the elapsed time is exactly the sum of the code's waits, so a bug whose waits add up exactly to the budget passes on the boundary, where real time, always a little longer, fails as the original does; keep the real clock"
			break
		}
		hyp := t.Unproven()
		checked := bubble.ClockChecked([]*bubble.Target{t})
		if !s.lower {
			checked = append(checked, checkedOnBudget)
			// An upper bound on real time bounds the timed code's CPU
			// work as well as its waits. Virtual time sees only the
			// waits: a request signed with a key stretched a million
			// rounds (a bug's work, in no build the analysis reads
			// as such) passes the wrapped bound that the original
			// fails. Running the correct code cannot show it; verify's
			// mutants decide (a computing loop made longer).
			why := "the assertion bounds the timed code's real time from above, which bounds its CPU work as well as its waits: in a synctest bubble work that computes takes no virtual time, so code made slow by computing (a key stretched on every request) passes the wrapped bound where the original fails"
			unproven = append(unproven, why)
			if hyp == "" {
				hyp = why
			}
		}
		if low := c.lowerAt[t]; low != nil {
			// On the virtual clock the elapsed time is exactly the sum
			// of the code's waits, with no overhead: a bound at that
			// sum computed with other rounding (4*time.Second/30
			// against four waits of time.Second/30) misses it by a
			// nanosecond on correct code. A run shows it.
			p := c.pass.Fset.Position(low.stmt.Pos())
			why := fmt.Sprintf("the test asserts a lower bound on elapsed time (at %s:%d): in a synctest bubble the elapsed time is exactly the sum of the code's waits, with none of the real clock's overhead, so a bound at that sum computed with other rounding fails on correct code", filepath.Base(p.Filename), p.Line)
			unproven = append(unproven, why)
			if hyp == "" {
				hyp = why
			}
		} else {
			checked = append(checked, checkedExact)
		}
		if len(unproven) > 0 {
			d.Blockers = unproven
		}
		d.Fix = &rule.Fix{
			Message: fmt.Sprintf("run the test in a synctest bubble, where the %s budget holds exactly in virtual time", budget),
			Changes: []rule.Change{{Kind: rule.Clock, WorkUnseen: true, Window: max(c.budgetWindow(s), c.boundOf[t]), What: "the test runs in a synctest bubble: its clock is virtual, so the budget holds exactly; the test's own sleeps end one nanosecond past their deadlines (as real sleeps end a little late), the code's exactly",
				Checked: checked}},
			Hypothesis: rule.Unproven(hyp),
			Apply: func() error {
				if !c.wrapped[t] {
					c.wrapped[t] = true
					return c.bubbles.Wrap(t)
				}
				return nil
			},
		}
	case blocks != "":
		// Not a bubble (a pipe or a connection is not durably blocking,
		// and the writer's time is the behaviour), and not a removal.
		d.NotFixed = "the timed region may block on I/O in " + blocks + ": it measures when something arrives (a writer's ticker, a peer, a child process), not how fast a computation is, so the budget stays"
	case feeds != "":
		// Not a bubble either: on a virtual clock, work a goroutine does
		// takes no time, and an upper bound would always hold.
		d.NotFixed = feeds + ": the time it takes is behaviour of the code under test, not the test's own computation, so the budget stays"
	case s.start == nil:
		d.NotFixed = "the rule cannot see where the timed region starts: " + c.startSeen(s) + ", so it cannot tell whether the region waits on the clock"
	case opaque != "":
		// Removing an upper bound is only safe when the region is the
		// test's own computation; code the analysis cannot see may be a
		// timeout or a cancellation whose speed is the behaviour.
		d.NotFixed = "the timed region calls " + opaque + ", whose code the analysis cannot see: it may wait on the clock, so the budget may be the behaviour under test"
	case !c.otherCheck(t):
		// Removing the test's only check would leave a test that cannot
		// fail: a memoisation test whose only assertion is that the
		// second call is fast. No count the rule can see stands for the
		// budget.
		d.NotFixed = "the budget is the test's only check (besides error checks): without it the test would pass however the code behaves"
	case c.namesSpeed(s, t) != "":
		// The test names speed as what it checks: its other checks are
		// of something else (the value a memoised call returns), so the
		// budget is the only check of that property.
		d.NotFixed = "the test names what the budget checks (" + c.namesSpeed(s, t) + "): its other checks are of something else, so removing the budget would leave that property unchecked"
	case c.speedOnly(s) != "":
		// The values checked stay right under the bug the budget
		// catches (a cache that never hits, a linear Get): the budget
		// is the only check of it, whatever else the test checks.
		d.NotFixed = c.speedOnly(s) + ": the budget is the only check of that, since the values stay right without it, so removing it would pass such a bug"
	case c.warmed(s, t) != "":
		d.NotFixed = fmt.Sprintf("the budget (at %s) is the only check of what prepared the timed call: %s; removing it would pass that preparation made ineffective", c.at(s.stmt.Pos()), c.warmed(s, t))
	case c.unchecked(s, t) != "":
		// Per timed region: the test's other checks may be of other
		// calls. Unless the region's work is checked otherwise (its
		// results compared, what it acts on read), the budget is the
		// only check of that work: a derivation made slow, a load
		// done again, passes without it.
		d.NotFixed = fmt.Sprintf("the budget (at %s) is the only check of the timed region's work: %s; removing it would pass that work made slow", c.at(s.stmt.Pos()), c.unchecked(s, t))
	default:
		d.Fix = c.removeFix(s, t, budget)
	}
	c.pass.Report(d)
}

// region returns the statements timed by s: those after the start in its
// block, up to the one holding the assertion.
func (c *checker) region(s *site) []ast.Stmt {
	var out []ast.Stmt
	after := false
	for _, st := range match.StmtList(s.start.parent) {
		if st.Pos() >= s.stmt.Pos() && st.End() <= s.stmt.End() {
			break
		}
		if after {
			out = append(out, st)
			if st.Pos() <= s.stmt.Pos() && s.stmt.End() <= st.End() {
				break // the statement holding the assertion
			}
		}
		if st == s.start.decl {
			after = true
		}
	}
	return out
}

// removeFix removes the assertion and the timing variables only it used.
func (c *checker) removeFix(s *site, t *bubble.Target, budget string) *rule.Fix {
	del := []ast.Node{s.stmt}
	del = append(del, match.AdjacentComments(s.file, s.parent, s.stmt)...)
	var gone []string
	for _, tm := range []*timing{s.via, s.start} {
		if tm == nil {
			continue
		}
		del = append(del, tm.decl)
		del = append(del, match.AdjacentComments(s.file, tm.parent, tm.decl)...)
		if c.onlyIn(tm.v, map[ast.Node]bool{s.stmt: true, s.via.declOrNil(): true}) {
			gone = append(gone, tm.v.Name())
		}
	}
	msg := fmt.Sprintf("remove a %s wall-clock budget, keeping the timed code and its result assertions", budget)
	if len(gone) > 0 {
		msg = fmt.Sprintf("remove a %s wall-clock budget and the timing variable%s %s, keeping the timed code and its result assertions", budget, plural(len(gone)), strings.Join(gone, ", "))
	}
	bench := ""
	if addBench.Get(c.pass) {
		bench = c.benchable(s, t)
		if bench == "" {
			msg += "; add " + c.benchName(t)
		} else {
			msg += "; no benchmark added: " + bench
		}
	}
	// Removing an upper bound on elapsed real time passes every
	// implementation made slower than the budget whose results stay
	// right (a quadratic pass, a cache that never hits, one slow call
	// among many): the result checks cannot see it, whatever the code
	// is, so no reading of the code proves the removal. Running can
	// show it: a mutant that multiplies the timed work past the budget
	// fails the original at the bound and passes the rewrite, so fix
	// --verify reverts the removal wherever the budget caught such a
	// slowdown.
	why := fmt.Sprintf("the budget (at %s) is the only check of how long the timed work takes: removing it passes every implementation made slower than %s whose results stay right (a quadratic pass, a cache that never hits), which the result checks cannot see", c.at(s.stmt.Pos()), budget)
	return &rule.Fix{
		Message:    msg,
		Hypothesis: rule.Unproven(why),
		Changes: []rule.Change{{Kind: rule.Clock, WorkUnseen: true, Removes: true, Window: c.budgetWindow(s), What: "the wall-clock check goes: the test's other checks of the result stay",
			Checked: []string{"the budget is the only check of slow work (unproven: a slower implementation with right results passes)"}}},
		Deletes: del,
		Apply: func() error {
			if addBench.Get(c.pass) && bench == "" {
				c.addBench(s, t)
			}
			c.delete(s.stmt, s.parent)
			for _, tm := range []*timing{s.via, s.start} {
				if tm != nil && !c.removed[tm.decl] && c.onlyIn(tm.v, c.removed) {
					c.delete(tm.decl, tm.parent)
				}
			}
			return nil
		},
	}
}

func (tm *timing) declOrNil() ast.Node {
	if tm == nil {
		return nil
	}
	return tm.decl
}

func plural(n int) string {
	if n > 1 {
		return "s"
	}
	return ""
}

// onlyIn reports whether every use of v lies in one of the nodes.
func (c *checker) onlyIn(v *types.Var, nodes map[ast.Node]bool) bool {
	for _, id := range c.uses[v] {
		in := false
		for n := range nodes {
			if n != nil && n.Pos() <= id.Pos() && id.End() <= n.End() {
				in = true
			}
		}
		if !in {
			return false
		}
	}
	return true
}

// delete removes stmt from parent in the decorated file.
func (c *checker) delete(stmt ast.Stmt, parent ast.Node) {
	c.removed[stmt] = true
	match.DeleteStmt(c.pass.Dst(parent), c.pass.Dst(stmt).(dst.Stmt))
}

// benchRegion returns the timed statements a benchmark would repeat: the
// region without the statement holding the assertion and the timing
// variables' declarations.
func (c *checker) benchRegion(s *site) []ast.Stmt {
	var out []ast.Stmt
	for _, st := range c.region(s) {
		if st.Pos() <= s.stmt.Pos() && s.stmt.End() <= st.End() || s.via != nil && st == s.via.decl {
			continue
		}
		out = append(out, st)
	}
	return out
}

// benchName names the benchmark of the test t.
func (c *checker) benchName(t *bubble.Target) string {
	return "Benchmark" + strings.TrimPrefix(t.Name(), "Test")
}

// benchable says why the timed code of s cannot become a benchmark, or "".
func (c *checker) benchable(s *site, t *bubble.Target) string {
	fd, ok := t.Fn().(*ast.FuncDecl)
	switch {
	case !ok || fd.Recv != nil:
		return "the assertion is not in a top-level test function"
	case s.start.parent != s.parent:
		return "the timed region and the assertion are in different blocks"
	case c.names[c.benchName(t)]:
		return c.benchName(t) + " already exists"
	case !c.pass.FileUsesGo(t.File(), "go1.24"):
		return "b.Loop needs go1.24"
	}
	region := c.benchRegion(s)
	if len(region) == 0 {
		return "the timed region is empty"
	}
	_, why := c.benchInputs(s, t, region)
	return why
}

// benchInputs returns the declarations, before the region, of the test's
// variables the region reads, each set once to a constant (in := "1,2"),
// or why the region reads another variable of the test.
func (c *checker) benchInputs(s *site, t *bubble.Target, region []ast.Stmt) ([]ast.Stmt, string) {
	consts := map[*types.Var]ast.Stmt{}
	for _, st := range match.StmtList(s.parent) {
		if st.Pos() >= region[0].Pos() {
			break
		}
		as, ok := st.(*ast.AssignStmt)
		if !ok || as.Tok != token.DEFINE || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			continue
		}
		if tv := c.info.Types[as.Rhs[0]]; tv.Value == nil {
			continue
		}
		if id, ok := as.Lhs[0].(*ast.Ident); ok {
			if v, ok := c.info.Defs[id].(*types.Var); ok {
				consts[v] = as
			}
		}
	}
	assigned := c.assigned(t.Body())
	var inputs []ast.Stmt
	from, to := region[0].Pos(), region[len(region)-1].End()
	why := ""
	for _, st := range region {
		ast.Inspect(st, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || why != "" {
				return why == ""
			}
			v, ok := c.info.Uses[id].(*types.Var)
			if !ok || v.IsField() || match.IsPackageLevel(v) || from <= v.Pos() && v.Pos() < to {
				return true
			}
			if decl := consts[v]; decl != nil && !assigned[v] {
				for _, d := range inputs {
					if d == decl {
						return true
					}
				}
				inputs = append(inputs, decl)
				return true
			}
			why = fmt.Sprintf("the timed code uses %s, a variable of the test not set to a constant", v.Name())
			return true
		})
	}
	return inputs, why
}

// addBench adds, after the test, a benchmark repeating the timed code of s.
func (c *checker) addBench(s *site, t *bubble.Target) {
	fd := t.Fn().(*ast.FuncDecl)
	if c.benched[fd] {
		return
	}
	c.benched[fd] = true
	region := c.benchRegion(s)
	inputs, _ := c.benchInputs(s, t, region)
	var pre []dst.Stmt
	for _, st := range inputs {
		clone := dst.Clone(c.pass.Dst(st)).(dst.Stmt)
		clone.Decorations().Before = dst.NewLine
		clone.Decorations().Start.Clear()
		clone.Decorations().End.Clear()
		pre = append(pre, clone)
	}
	var body []dst.Stmt
	for _, st := range region {
		clone := dst.Clone(c.pass.Dst(st)).(dst.Stmt)
		body = append(body, clone)
		// Variables the test's assertions read after the region are
		// unused in the benchmark.
		if as, ok := st.(*ast.AssignStmt); ok && as.Tok == token.DEFINE {
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					body = append(body, &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent("_")}, Tok: token.ASSIGN, Rhs: []dst.Expr{dst.NewIdent(id.Name)}})
				}
			}
		}
	}
	if len(body) > 0 {
		body[0].Decorations().Before = dst.NewLine
	}
	param := &dst.Field{Names: []*dst.Ident{dst.NewIdent("b")}, Type: &dst.StarExpr{X: &dst.Ident{Path: "testing", Name: "B"}}}
	bench := &dst.FuncDecl{
		Name: dst.NewIdent(c.benchName(t)),
		Type: &dst.FuncType{Func: true, Params: &dst.FieldList{List: []*dst.Field{param}}},
		Body: &dst.BlockStmt{List: append(pre, &dst.ForStmt{
			Cond: &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent("b"), Sel: dst.NewIdent("Loop")}},
			Body: &dst.BlockStmt{List: body},
		})},
	}
	bench.Decs.Before = dst.EmptyLine
	file := c.pass.Dst(s.file).(*dst.File)
	test := c.pass.Dst(fd)
	for i, d := range file.Decls {
		if d == test {
			file.Decls = append(file.Decls[:i+1], append([]dst.Decl{bench}, file.Decls[i+1:]...)...)
			return
		}
	}
}

// startSeen says what the elapsed time of s is measured from, when that
// is not a local start := time.Now() set once: a parameter, a field, a
// package-level variable, a variable assigned more than once or set from
// another call, or a call.
func (c *checker) startSeen(s *site) string {
	e := ast.Unparen(s.from)
	if e == nil {
		return "the elapsed time is not measured from a local start := time.Now() in the test"
	}
	str := types.ExprString(e)
	switch e := e.(type) {
	case *ast.Ident:
		v, _ := c.info.Uses[e].(*types.Var)
		switch {
		case v == nil:
		case v.Parent() == c.pass.Pkg.Scope():
			return fmt.Sprintf("it starts at %s, a package-level variable, which any code may set", str)
		case c.param(s.file, v) != "":
			return fmt.Sprintf("it starts at %s, a parameter of %s, set by its caller", str, c.param(s.file, v))
		case c.assigned(s.file)[v]:
			return fmt.Sprintf("it starts at %s, which is assigned more than once", str)
		default:
			if from := c.declaredFrom(s.file, v); from != "" {
				return fmt.Sprintf("it starts at %s, which comes from %s, not time.Now()", str, from)
			}
		}
	case *ast.SelectorExpr:
		if sel := c.info.Selections[e]; sel != nil && sel.Kind() == types.FieldVal {
			return fmt.Sprintf("it starts at %s, a field, which the rule does not follow", str)
		}
		if v, ok := c.info.Uses[e.Sel].(*types.Var); ok && v.Parent() == v.Pkg().Scope() {
			return fmt.Sprintf("it starts at %s, a package-level variable of another package", str)
		}
	case *ast.CallExpr:
		return fmt.Sprintf("it starts at the time %s returns", types.ExprString(e.Fun)+"()")
	}
	return fmt.Sprintf("it starts at %s, which is not a local start := time.Now() in the test", str)
}

// param returns the name of the function in f whose parameter v is, or
// "".
func (c *checker) param(f *ast.File, v *types.Var) string {
	name := ""
	ast.Inspect(f, func(n ast.Node) bool {
		var ft *ast.FuncType
		what := "a function literal"
		switch n := n.(type) {
		case *ast.FuncDecl:
			ft, what = n.Type, n.Name.Name
		case *ast.FuncLit:
			ft = n.Type
		default:
			return name == ""
		}
		if ft.Params != nil && ft.Params.Pos() <= v.Pos() && v.Pos() < ft.Params.End() {
			name = what
		}
		return name == ""
	})
	return name
}

// declaredFrom returns the call that the local v is declared from
// (v := clock.Now()), printed, or "".
func (c *checker) declaredFrom(f *ast.File, v *types.Var) string {
	out := ""
	ast.Inspect(f, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || out != "" {
			return out == ""
		}
		for i, l := range as.Lhs {
			if id, ok := l.(*ast.Ident); ok && c.info.Defs[id] == types.Object(v) && len(as.Rhs) == len(as.Lhs) {
				if call, ok := ast.Unparen(as.Rhs[i]).(*ast.CallExpr); ok {
					out = types.ExprString(call.Fun) + "()"
				}
			}
		}
		return out == ""
	})
	return out
}
