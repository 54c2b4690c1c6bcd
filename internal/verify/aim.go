package verify

import (
	"go/ast"
	"go/types"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/unflake/unflake/rule"
)

// Mutants aimed at what a fix changes (rule.Change, by kind; issue 28).
// The mutants of state (mutate.go) ask whether a rewritten test still
// sees a write made twice, undone or dropped; these ask whether it still
// sees what its fix changed:
//
//   - budget (a poll, a deadline): the awaited write made late, three
//     times the test's time before or the window the fix replaces,
//     whichever is longer (lateDelay): past the original's window, well
//     within a poll's budget; and the duration a timer,
//     ticker or sleep of the code is given made 3x (whether a constant,
//     a field, a parameter or a value the test passes in: the mutant
//     scales it where it is used); and, with the same delay, an
//     expiry made late: a time comparison or an elapsed time read as if
//     the clock were behind (a lease that lapses when !now.Before(exp)
//     lapses when !now.Before(exp.Add(d)); time.Since(x) made
//     time.Since(x) - d; both operands, as two mutants, where the text
//     does not tell which is the current time). State the code computes from the clock, with
//     no write to delay (a TTL, a cooldown, a lease), is awaited too.
//   - clock (a bubble, a fake clock): a time comparison moved by one
//     tick (a.After(b) made !a.Before(b), a.Before(b) made !a.After(b)),
//     a timer's or sleep's duration made 0, elapsed time that no
//     longer passes (time.Since(x), or a fake clock's Since, made 0),
//     a loop that only computes made to compute thousands of times
//     more (virtual time does not see CPU work), and a package default
//     duration a timer is given made 0 at each of its uses (a re-armed
//     timer refires at one instant forever): aimwork.go.
//     A bubble also waits for every goroutine it started: the code's
//     Close, Stop or Shutdown returning at once (a bug that leaves a
//     loop running) turns a check the original failed at ("still
//     alive after Close") into a panic after it ("blocked goroutines
//     remain"), which kills the test binary and every later test, a
//     miss. It shows nothing of time, so it is not one of the clock's
//     mutants that show strength (shown.go).
//   - ownership: the code's Close, Stop or Shutdown running its body
//     twice (the owner closing too).
//
// Sync and order get no aimed mutant: a readiness point earlier than the
// work it announces makes the rewritten test fail where the original
// passes, which running shows, not a mutant the original kills; and
// what order changes is sharing between tests, not a statement of the
// code. Paths neither.

// An aimKind is what an aimed site is.
type aimKind int

const (
	durationArg     aimKind = iota // the duration a timer, ticker or sleep is given
	comparison                     // a.After(b) or a.Before(b) of two time.Time values
	elapsed                        // time.Since(x), or a clock's Since
	closer                         // the body of a Close, Stop or Shutdown method
	workBound                      // the bound of a counted loop that only computes (aimwork.go)
	durationDefault                // a package-level duration some timer is given: its uses (aimwork.go)
	durationUse                    // one use of a durationDefault
	entry                          // a function's entry, where a slowed mutant takes real time (aimslow.go)
	stamp                          // right after a statement that stores a reading of the clock, where a slowed mutant takes real time (aimslow.go)
)

// An aimSite is what a target of an aimed mutant is (target.site).
type aimSite struct {
	what  aimKind
	shown string // what a mutant's name shows: the call, or the method's name
	typ   string // exprForm: the type of the value, in the schema's terms
	zero  bool   // durationArg: 0 is a valid duration there (not a ticker's)
	// comparison: the receiver's and the argument's text, and whether it
	// is After.
	x, y  string
	after bool
	// closer: the receiver ("(s *Server)"), its name, the results and
	// the body's offsets; zeros are the results' zero values, which a
	// mutant that returns at once returns (*new(error)).
	recv, recvName, results string
	body                    [2]int
	zeros                   []string
	// workBound: how many times the bound is made larger.
	factor int64
	// durationDefault: the uses its mutant changes, each a durationUse
	// whose zero says whether 0 is valid there.
	uses []*target
	// entry: whether the function reads the clock or waits on a timer
	// (the body's offsets are in body).
	clocked bool
}

// ticked is the comparison moved by one tick: > made >=, < made <=.
func (a *aimSite) ticked() string {
	if a.after {
		return "!(" + a.x + ").Before(" + a.y + ")"
	}
	return "!(" + a.x + ").After(" + a.y + ")"
}

// readLate is the site read as if the clock were d behind, so that what
// it decides happens d later: elapsed time made d shorter, or a
// comparison's operand that is not the current time moved d later (the
// receiver when recv, else the argument). d is written as an untyped
// constant, which needs no import of time.
func (a *aimSite) readLate(expr string, d time.Duration, recv bool) string {
	n := strconv.FormatInt(int64(d), 10)
	if a.what == elapsed {
		return "((" + expr + ") - " + n + ")"
	}
	op := "Before"
	if a.after {
		op = "After"
	}
	if recv {
		return "(" + a.x + ").Add(" + n + ")." + op + "(" + a.y + ")"
	}
	return "(" + a.x + ")." + op + "((" + a.y + ").Add(" + n + "))"
}

// lateShifts says which operands of a comparison an expiry made late
// moves: the one that is not the current time, by its text (a Now() call
// or a variable named now, in any case); both, as two mutants, when the
// text does not tell. Moving the current time's side instead makes the
// expiry early, a mutant that shows nothing of lateness; the late one of
// the two is always tried, and a rewrite that misses it is reverted.
func (a *aimSite) lateShifts() (arg, recv bool) {
	xNow, yNow := looksNow(a.x), looksNow(a.y)
	switch {
	case xNow && !yNow:
		return true, false
	case yNow && !xNow:
		return false, true
	}
	return true, true
}

// looksNow reports whether an expression's text reads the current time.
func looksNow(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	return strings.HasSuffix(t, "now()") || t == "now"
}

// tickedOp says what ticked does: "After made !Before".
func (a *aimSite) tickedOp() string {
	if a.after {
		return "After made !Before"
	}
	return "Before made !After"
}

// timerFuncs take the duration of a timer, ticker or sleep first: the
// time package's functions and methods, and a fake clock's of the same
// names. zeroable are those a 0 duration is valid for (a ticker's
// panics, and time.Tick's returns nil).
var (
	timerFuncs = map[string]bool{"NewTicker": true, "NewTimer": true, "After": true, "AfterFunc": true, "Sleep": true, "Tick": true, "Reset": true}
	zeroable   = map[string]bool{"NewTimer": true, "After": true, "AfterFunc": true, "Sleep": true}
	closers    = map[string]bool{"Close": true, "Stop": true, "Shutdown": true}
)

// aimCall returns the aimed site a call is, or nil.
func (c *collector) aimCall(call *ast.CallExpr, encl string) *target {
	var fn *types.Func
	var recvX ast.Expr
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		fn, _ = c.info.Uses[fun].(*types.Func)
	case *ast.SelectorExpr:
		fn, _ = c.info.Uses[fun.Sel].(*types.Func)
		if sel := c.info.Selections[fun]; sel != nil && sel.Kind() == types.MethodVal {
			recvX = fun.X
		}
	}
	if fn == nil {
		return nil
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return nil
	}
	name := fn.Name()
	site := func(e ast.Expr, a *aimSite) *target {
		a.shown = c.text(call)
		return &target{file: c.file, src: c.src, pkgEnd: c.pkgEnd, form: exprForm, encl: encl, site: a,
			start: c.fset.Position(e.Pos()).Offset, end: c.fset.Position(e.End()).Offset, line: c.fset.Position(e.Pos()).Line}
	}
	switch {
	case timerFuncs[name] && sig.Params().Len() >= 1 && isTimeType(sig.Params().At(0).Type(), "Duration") && len(call.Args) >= 1:
		if lit, ok := ast.Unparen(call.Args[0]).(*ast.BasicLit); ok && lit.Value == "0" {
			return nil
		}
		zero := zeroable[name]
		if name == "Reset" && sig.Recv() != nil && isTimeType(sig.Recv().Type(), "Timer") {
			zero = true
		}
		return site(call.Args[0], &aimSite{what: durationArg, typ: mutantTime + ".Duration", zero: zero})
	case (name == "After" || name == "Before") && recvX != nil && sig.Recv() != nil && isTimeType(sig.Recv().Type(), "Time") && len(call.Args) == 1:
		return site(call, &aimSite{what: comparison, typ: "bool", x: c.text(recvX), y: c.text(call.Args[0]), after: name == "After"})
	case name == "Since" && len(call.Args) == 1 && sig.Results().Len() == 1 && isTimeType(sig.Results().At(0).Type(), "Duration"):
		return site(call, &aimSite{what: elapsed, typ: mutantTime + ".Duration"})
	}
	return nil
}

// aimBody returns the site of a Close, Stop or Shutdown method's body, or
// nil: only one with a named receiver, no parameters and no type
// parameters, whose body a copy under another name can run.
func (c *collector) aimBody(fd *ast.FuncDecl) *target {
	if fd.Recv == nil || len(fd.Recv.List) != 1 || !closers[fd.Name.Name] || fd.Type.Params.NumFields() > 0 {
		return nil
	}
	names := fd.Recv.List[0].Names
	if len(names) != 1 || names[0].Name == "_" {
		return nil
	}
	a := &aimSite{what: closer, shown: fd.Name.Name, recv: c.text(fd.Recv), recvName: names[0].Name,
		body: [2]int{c.fset.Position(fd.Body.Lbrace).Offset, c.fset.Position(fd.Body.End()).Offset}}
	if fd.Type.Results != nil {
		a.results = c.text(fd.Type.Results)
		for _, f := range fd.Type.Results.List {
			for range max(len(f.Names), 1) {
				a.zeros = append(a.zeros, "*new("+c.text(f.Type)+")")
			}
		}
	}
	at := c.fset.Position(fd.Body.Lbrace).Offset + 1
	return &target{file: c.file, src: c.src, pkgEnd: c.pkgEnd, form: bodyForm, encl: fd.Name.Name, site: a,
		start: at, end: at, line: c.fset.Position(fd.Pos()).Line}
}

// isTimeType reports whether t (or what it points to) is the time
// package's type name.
func isTimeType(t types.Type, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == name
}

// keepAims returns the aimed sites that a schema can splice: none inside
// another (the outer one stays) and none holding a statement target
// (stmts: every statement target found, in any order).
func keepAims(aims, stmts []*target) []*target {
	sort.SliceStable(aims, func(i, j int) bool {
		if aims[i].start != aims[j].start {
			return aims[i].start < aims[j].start
		}
		return aims[i].end > aims[j].end
	})
	var out []*target
	end := -1
	for _, a := range aims {
		if a.form == exprForm && a.start < end {
			continue // within the last kept one
		}
		holds := false
		for _, s := range stmts {
			holds = holds || a.form == exprForm && a.start <= s.start && s.end <= a.end
		}
		if holds {
			continue
		}
		out = append(out, a)
		if a.form == exprForm {
			end = a.end
		}
	}
	return out
}

// lateMutantDelays are the delays of the late mutants (see lateDelay),
// shortest first.
//
// Besides lateDelay's, a late mutant comes just past the window (a
// quarter later than it), when the window is known: the nearest lateness
// the original fails on. The code may end the late write's chance itself (a daemon whose
// context the test gave 450ms never gets ready after that): a write
// 1s late then fails the rewrite too, a kill that says nothing of a
// write 300ms late, which the attempts' 200ms caught and the deadline
// passes (red team batch 21, drainready). Near the window, the rewrite
// that passes it is seen to.
func lateMutantDelays(before *outcome, window, budget time.Duration) []time.Duration {
	var out []time.Duration
	if window > 0 {
		near := (window*5/4 + 10*time.Millisecond - 1) / (10 * time.Millisecond) * (10 * time.Millisecond)
		if budget == 0 || near <= budget/2 {
			out = append(out, near)
		}
	}
	if d := lateDelay(before, window, budget); d > 0 && !slices.Contains(out, d) {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// lateDelay is how much later a "late" mutant makes a write: three times
// the test's time before the rewrite (its wait, mostly) or the window the
// fix replaces (rule.Change.Window), whichever is longer, rounded up on a
// fixed scale so that a test timed a little differently gets the same
// mutant; 0 (no late mutant) when that is more than the scale holds.
//
// The window counts because a poll that ends at once on the correct code
// (an attempt loop whose state comes in microseconds) takes no time
// before: three times that is within the original's window, which the
// original passes too, and the mutant says nothing. The original fails on
// what comes after its window, whatever the correct code's timers.
//
// A late mutant must also come well within the new wait's budget
// (rule.Change.Budget, budget here: the tightest the changes name, 0 when
// none does): one later than the budget fails the rewrite only because
// the budget ran out, which shows nothing of a write late but within it
// (red team batch 20, hotreload: a poll of 800ms kept on a mutant 1.2s
// late passed a reload 500ms late, which ten attempts of 10ms caught).
// So when three times the test's time reaches past half the budget, the
// mutant is made half as late again as the window alone, and none is
// made when even that is past half the budget.
func lateDelay(before *outcome, window, budget time.Duration) time.Duration {
	want := 3 * max(before.mean(), window)
	if budget > 0 && want > budget/2 {
		base := window
		if base == 0 {
			base = before.mean()
		}
		want = base * 3 / 2
	}
	for _, d := range lateDelays {
		if d >= want {
			if budget > 0 && d > budget/2 {
				return 0
			}
			return d
		}
	}
	return 0
}

// budgetOf is the tightest new budget the budget changes of sites name
// (rule.Change.Budget), 0 when none does.
func budgetOf(sites []fixSite) time.Duration {
	var b time.Duration
	for _, s := range sites {
		for _, c := range s.finding.Changes {
			if c.Kind == rule.Budget && c.Budget > 0 && (b == 0 || c.Budget < b) {
				b = c.Budget
			}
		}
	}
	return b
}

// windowOf is the longest window the budget changes of sites replace
// (rule.Change.Window), 0 when none says.
func windowOf(sites []fixSite) time.Duration {
	var w time.Duration
	for _, s := range sites {
		for _, c := range s.finding.Changes {
			if c.Kind == rule.Budget {
				w = max(w, c.Window)
			}
		}
	}
	return w
}

var lateDelays = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second}

// changeKinds returns the kinds of change of the fixes of sites.
func changeKinds(sites []fixSite) map[rule.ChangeKind]bool {
	kinds := map[rule.ChangeKind]bool{}
	for _, s := range sites {
		for _, c := range s.finding.Changes {
			kinds[c.Kind] = true
		}
	}
	return kinds
}

// reach returns the names of the functions a test's names lead to: those
// it mentions, and those their bodies mention, and so on.
func (c *codeUnderTest) reach(m mentions) map[string]bool {
	seen := map[string]bool{}
	var todo []string
	for _, names := range []map[string]bool{m.direct, m.indirect} {
		for n := range names {
			if !seen[n] {
				seen[n] = true
				todo = append(todo, n)
			}
		}
	}
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for r := range c.reads[n] {
			if _, fn := c.reads[r]; fn && !seen[r] {
				seen[r] = true
				todo = append(todo, r)
			}
		}
	}
	return seen
}

// aimed returns the mutants aimed at kinds (what the test's fixes
// change): at most maxAimed, of the sites in functions the test reaches,
// those it mentions first, one of each mutation in turn. lateBy is the
// delay of a late write (0: none), slowBy the real time a slowed
// function's entry takes (0: none; aimslow.go).
func (c *codeUnderTest) aimed(m mentions, kinds map[rule.ChangeKind]bool, lateBy []time.Duration, slowBy time.Duration) []*mutant {
	reach := c.reach(m)
	var score func(t *target) int
	score = func(t *target) int {
		if t.site != nil && t.site.what == durationDefault {
			s := 0 // a default's uses may lie in several functions
			for _, u := range t.site.uses {
				s = max(s, score(u))
			}
			return s
		}
		switch {
		case m.direct[t.encl]:
			return 2
		case m.indirect[t.encl] || reach[t.encl]:
			return 1
		}
		return 0
	}
	sites := func(what aimKind, ok func(*aimSite) bool) []*target {
		var out []*target
		for _, t := range c.aims {
			if t.site.what == what && (ok == nil || ok(t.site)) && score(t) > 0 {
				out = append(out, t)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return score(out[i]) > score(out[j]) })
		return out
	}
	var lists [][]*mutant
	add := func(op mutation, ts []*target, delay time.Duration) {
		var l []*mutant
		for _, t := range ts {
			l = append(l, &mutant{t: t, op: op, delay: delay})
		}
		if len(l) > 0 {
			lists = append(lists, l)
		}
	}
	if kinds[rule.Budget] {
		if len(lateBy) > 0 {
			rel := c.relevant(m)
			for _, d := range lateBy {
				add(late, rel, d)
				add(late, c.lateCallers(rel), d)
			}
			far := lateBy[len(lateBy)-1]
			add(lateRead, append(sites(comparison, func(a *aimSite) bool { arg, _ := a.lateShifts(); return arg }), sites(elapsed, nil)...), far)
			add(lateReadRecv, sites(comparison, func(a *aimSite) bool { _, recv := a.lateShifts(); return recv }), far)
		}
		add(scaled, sites(durationArg, nil), 0)
	}
	if kinds[rule.Clock] {
		add(tick, sites(comparison, nil), 0)
		if slowBy > 0 {
			add(slowed, c.slowable(m, sites(entry, nil)), slowBy)
			add(slowed, sites(stamp, nil), slowBy)
		}
		add(zeroed, sites(durationArg, func(a *aimSite) bool { return a.zero }), 0)
		add(stands, sites(elapsed, nil), 0)
		add(worked, sites(workBound, nil), 0)
		add(defaultZeroed, sites(durationDefault, nil), 0)
	}
	if kinds[rule.Ownership] {
		add(closedTwice, sites(closer, nil), 0)
	}
	if kinds[rule.Clock] {
		// Last: the mutants that show a clock change's strength first.
		add(closeSkipped, sites(closer, nil), 0)
	}
	var out []*mutant
	for round := 0; len(out) < maxAimed; round++ {
		more := false
		for _, l := range lists {
			if round < len(l) && len(out) < maxAimed {
				out = append(out, l[round])
				more = true
			}
		}
		if !more {
			break
		}
	}
	return out
}
