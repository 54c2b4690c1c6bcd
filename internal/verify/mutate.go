package verify

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// Strength. A fix that passes every run, proven or not, may still have
// made its test blind: a poll that stops at the first instant its checks
// hold passes a counter that goes on to 2, where the sleep it replaced
// saw the 2. So, once every test passed after the rewrite, each test
// with a fix is tried on mutants of the code under test (the non-test
// files of its package): the statements that write the state the test's
// checks read, made twice, made again a little later, undone a little
// later, or dropped; and mutants aimed at what the fix changes in the
// test's meaning (Finding.Changes, aim.go): for a budget (a poll, a
// deadline) the awaited write made late, past the original's window and
// well within a poll's budget, and a timer's period made 3x; for a clock
// (a bubble, a fake clock) a time comparison moved by one tick, a
// timer's duration made 0 and elapsed time that no longer passes; for
// ownership a Close or Stop that runs its body twice. A mutant counts
// when the original test fails on it; the fix is kept only if the
// rewritten test fails on every such mutant too (Finding.Mutants), and
// is otherwise reverted as revert.Weaker, naming the mutant it misses.
// An unproven fix needs more: for each kind of change it names that
// mutants are aimed at (budget, clock, ownership), one aimed at that
// kind that counts, and that the rewrite kills (shown.go). When none
// could be aimed, or the original kills none, "kills 0 of 0" says
// nothing of the hazard the rule could not exclude, and the fix is
// reverted as revert.Unshown.
// Mutants are files of an overlay: the working tree is never touched.
//
// "Late" was long not a mutant: the original failing when the event
// comes late under load is the flake a poll exists to tolerate. But a
// poll with a budget of seconds also passes code whose timer fires at
// three times its period (issue 28: a breaker's half-open timer, a cron
// entry a second late), which the original caught: a fix that changes a
// budget must still see lateness its original saw.

// maxMutants bounds the mutants of state tried per test, and maxAimed
// those aimed at what its fixes change (aim.go): each costs two or three
// runs (the builds are shared: see schema), and one that hangs the test
// costs its timeout.
const (
	maxMutants = 8
	maxAimed   = 6
)

// A mutation is how a statement is changed.
type mutation int

const (
	twice   mutation = iota // the statement twice in a row
	again                   // the statement, and again a moment later
	undone                  // an assignment, and the value before it restored a moment later
	dropped                 // the statement removed

	// Aimed at what a fix changes (aim.go).
	late          // the statement made later, past the original's window
	scaled        // a timer's duration made 3x
	zeroed        // a timer's duration made 0
	tick          // a time comparison moved by one tick: a.After(b) made !a.Before(b)
	stands        // elapsed time that no longer passes: time.Since(x) made 0
	closedTwice   // a Close or Stop that runs its body twice
	worked        // a counted loop's bound made many times larger: more CPU work (aimwork.go)
	defaultZeroed // a package default duration made 0 at each of its uses (aimwork.go)
	closeSkipped  // a Close or Stop that returns at once: what it should stop runs on (aim.go)
	lateRead      // a time comparison (its argument moved) or elapsed time read as if the clock were behind: an expiry made late (aim.go)
	lateReadRecv  // a time comparison's receiver moved later: an expiry made late (aim.go)
	slowed        // a function's entry made to take real time the clock does not see: work (aimslow.go)
)

// labels name the mutations in a finding's tally (rewrite.Mutants.Names).
var labels = map[mutation]string{twice: "twice", again: "again", undone: "undone", dropped: "dropped",
	late: "late", scaled: "period x3", zeroed: "duration 0", tick: "one tick", stands: "elapsed 0", closedTwice: "closes twice",
	worked: "more work", defaultZeroed: "default 0", closeSkipped: "stops nothing", lateRead: "expires late", lateReadRecv: "expires late", slowed: "slowed"}

// A writeKind is what a statement does to the state.
type writeKind int

const (
	counts  writeKind = iota // x.n++, x.n += k, n.Add(1), atomic.AddInt32
	stores                   // x.state = v, v.Store(x), atomic.StoreInt32
	signals                  // ch <- v, x.onJoin(m), a call of a func value
	closes                   // close(ch)
)

// mutations are what makes sense for each kind, most telling first: a
// store made twice writes the same value, a channel closed twice panics
// in both tests.
var mutations = map[writeKind][]mutation{
	counts:  {twice, again, dropped},
	stores:  {undone, dropped},
	signals: {twice, again, dropped},
	closes:  {dropped},
}

// A target is a statement of the code under test that writes state, or
// a site of a mutant aimed at what a fix changes (aim.go): an expression
// or a method's body.
type target struct {
	file       string // absolute path
	src        []byte // the file's content
	pkgEnd     int    // offset of the end of the package clause
	start, end int    // the statement's byte offsets
	line       int
	kind       writeKind
	names      []string // the fields, variables and methods it writes through
	// read and write, for an assignment with one value, read the
	// current value and write a given one back (for undone).
	read  string
	write func(val string) string

	// passes: the statement calls a function value or sends one on a
	// channel: it runs or hands on what a test may have handed the code
	// (p.Submit(func() { ran.Add(1) }), run by a worker as job()).
	passes bool

	form  siteForm
	encl  string // the function or method the site is in
	site  *aimSite
	calls string // for a caller target (callers.go), the name of the function its statement calls
}

// A siteForm is what a target's text is.
type siteForm int

const (
	stmtForm siteForm = iota // a statement (its mutant replaces it)
	exprForm                 // an expression (its mutant's value replaces it)
	bodyForm                 // a method's body (its mutant runs first, at the body's start: start == end)
)

// A mutant is one mutation of one target.
type mutant struct {
	t  *target
	op mutation
	// delay is how much later the second write of again or undone comes.
	delay time.Duration
}

// String names the mutant as a finding does: "n.Add(1) made twice at
// counter.go:14".
func (m *mutant) String() string {
	text := string(m.t.src[m.t.start:m.t.end])
	if m.t.site != nil {
		text = m.t.site.shown
	}
	stmt := strings.Join(strings.Fields(text), " ")
	if len(stmt) > 40 {
		stmt = clipTo(stmt, 37)
	}
	var what string
	switch m.op {
	case twice:
		what = "made twice"
	case again:
		what = fmt.Sprintf("made again %s later", m.delay)
	case undone:
		what = fmt.Sprintf("undone %s later", m.delay)
	case dropped:
		what = "dropped"
	case late:
		what = fmt.Sprintf("made %s late", m.delay)
	case scaled:
		what = "with its duration made 3x"
	case zeroed:
		what = "with its duration made 0"
	case tick:
		what = "moved by one tick (" + m.t.site.tickedOp() + ")"
	case stands:
		what = "made 0"
	case closedTwice:
		what = "running its body twice"
	case closeSkipped:
		what = "returning at once"
	case lateRead, lateReadRecv:
		what = fmt.Sprintf("made to expire %s late", m.delay)
	case worked:
		what = fmt.Sprintf("made %dx (more CPU work)", m.t.site.factor)
	case slowed:
		return fmt.Sprintf("the code slowed by %s of work at %s:%d (%s, the clock does not see it)", m.delay, filepath.Base(m.t.file), m.t.line, m.t.site.shown)
	case defaultZeroed:
		what = "made 0 at each use"
		if n := len(m.t.site.uses); n > 1 {
			what = fmt.Sprintf("made 0 at its %d uses", n)
		}
	}
	return fmt.Sprintf("%s %s at %s:%d", stmt, what, filepath.Base(m.t.file), m.t.line)
}

// The mutants of a package are built at once, as a schema: each target
// statement S becomes
//
//	switch unflakeMutant { case "m1.test": S; S; case "m2.test": ; default: S }
//
// where unflakeMutant is the base name of the test binary (os.Args[0]),
// and the binary is linked under the name of each mutant to run it. One
// build of the tests before the rewrite and one after it serve every
// mutant. The imports a schema needs are added on the package clause's
// line under names that shadow nothing (a second import of a package
// under another name is legal Go), the selector at the end of the file:
// no line moves before a target, so the lines the tests report stay
// where they were.
const (
	mutantVar  = "unflakeMutant"
	mutantTime = "unflakemutanttime"
	mutantOS   = "unflakemutantos"
	mutantPath = "unflakemutantpath"
	mutantSys  = "unflakemutantsyscall"
	mutantAtom = "unflakemutantatomic"
)

// binName is the name of the binary that runs mutant id.
func binName(id int) string { return "m" + strconv.Itoa(id) + ".test" }

// schema returns the files of the package with every mutant of ms (ids:
// their index plus one) built in, by path. A statement's mutants switch
// on unflakeMutant in its place; an expression's are a function literal
// called in its place, returning the mutant's value or its own; a
// method body's run a copy of the body, a method appended at the end of
// the file, before it. Expressions may lie inside statements (their
// mutants are then built into each of the statement's forms), and a
// default's use inside a timer's duration (the same way); nothing else
// nests (collect).
func schema(ms []*mutant) map[string][]byte {
	// A mutant may change several sites (a package default made 0 at
	// each of its uses): each site, with the mutant's index.
	type use struct {
		t *target
		i int
	}
	byFile := map[string][]use{}
	var files []string
	for i, m := range ms {
		for _, t := range m.sites() {
			if byFile[t.file] == nil {
				files = append(files, t.file)
			}
			byFile[t.file] = append(byFile[t.file], use{t, i})
		}
	}
	out := map[string][]byte{}
	for k, file := range files {
		uses := byFile[file]
		// Group the mutants of each target; order the targets by start,
		// a body's insertion before a statement at the same offset, an
		// outer site before those within it.
		var groups []siteGroup
		at := map[*target]int{}
		needTime := false // an unused import would not build
		needSys := false
		for _, u := range uses {
			g, ok := at[u.t]
			if !ok {
				g = len(groups)
				at[u.t] = g
				groups = append(groups, siteGroup{t: u.t})
			}
			groups[g].ids = append(groups[g].ids, u.i+1)
			needTime = needTime || ms[u.i].needsTime(u.t)
			needSys = needSys || ms[u.i].op == slowed
		}
		sort.SliceStable(groups, func(a, b int) bool {
			ta, tb := groups[a].t, groups[b].t
			if ta.start != tb.start {
				return ta.start < tb.start
			}
			if (ta.start == ta.end) != (tb.start == tb.end) {
				return ta.start == ta.end
			}
			return ta.end > tb.end
		})
		first := uses[0].t
		src := first.src
		var b strings.Builder
		b.Write(src[:first.pkgEnd])
		if needTime {
			b.WriteString("; import " + mutantTime + ` "time"`)
		}
		if needSys {
			b.WriteString("; import " + mutantSys + ` "syscall"; import ` + mutantAtom + ` "sync/atomic"`)
		}
		if k == 0 {
			b.WriteString("; import " + mutantOS + ` "os"; import ` + mutantPath + ` "path/filepath"`)
		}
		sp := &splicer{src: src, ms: ms, file: k}
		b.WriteString(sp.splice(first.pkgEnd, len(src), groups))
		if k == 0 {
			b.WriteString("\nvar " + mutantVar + " = " + mutantPath + ".Base(" + mutantOS + ".Args[0])\n")
		}
		b.WriteString(sp.tail.String())
		out[file] = []byte(b.String())
	}
	return out
}

// sites are the targets a mutant changes: its own, or, for a package
// default, each of its uses (aimwork.go).
func (m *mutant) sites() []*target {
	if m.t.site != nil && m.t.site.what == durationDefault {
		return m.t.site.uses
	}
	return []*target{m.t}
}

// needsTime reports whether the mutant's code at t uses the time package.
func (m *mutant) needsTime(t *target) bool {
	switch m.op {
	case again, undone, late:
		return true
	}
	return t.form == exprForm && strings.HasPrefix(t.site.typ, mutantTime+".")
}

// A siteGroup is a target and the ids of its mutants.
type siteGroup struct {
	t   *target
	ids []int
}

// A splicer writes one file of a schema.
type splicer struct {
	src  []byte
	ms   []*mutant
	file int             // the file's index in the schema, for unique names
	tail strings.Builder // what goes at the end of the file: the copies of bodies
}

// splice returns src[from:to] with the mutants of groups (sorted, all
// within it) built in.
func (sp *splicer) splice(from, to int, groups []siteGroup) string {
	var b strings.Builder
	at := from
	for i := 0; i < len(groups); {
		g := groups[i]
		j := i + 1
		for j < len(groups) && groups[j].t.start < g.t.end {
			j++ // within g
		}
		b.Write(sp.src[at:g.t.start])
		inner := sp.splice(g.t.start, g.t.end, groups[i+1:j])
		b.WriteString(sp.site(g, inner))
		at, i = g.t.end, j
	}
	b.Write(sp.src[at:to])
	return b.String()
}

// site is a target's text with its mutants built in; inner is its own
// text, with the mutants of the sites within it built in.
func (sp *splicer) site(g siteGroup, inner string) string {
	var b strings.Builder
	switch g.t.form {
	case exprForm:
		fmt.Fprintf(&b, "func() %s { switch %s {", g.t.site.typ, mutantVar)
		for _, id := range g.ids {
			fmt.Fprintf(&b, " case %q: return %s;", binName(id), sp.ms[id-1].value(g.t, inner))
		}
		fmt.Fprintf(&b, " }; return %s }()", inner)
	case bodyForm:
		if w := g.t.site.what; w == entry || w == stamp {
			if w == stamp {
				// After the statement, on its line: a statement of its
				// own.
				b.WriteString(";")
			}
			sp.slow(&b, g)
			break
		}
		// closedTwice runs a copy of the body, a method appended at the
		// end of the file, first; closeSkipped returns at once.
		name := fmt.Sprintf("unflakeTwice%d_%d", sp.file, g.t.start)
		a := g.t.site
		copied := false
		fmt.Fprintf(&b, " switch %s {", mutantVar)
		for _, id := range g.ids {
			if sp.ms[id-1].op == closeSkipped {
				fmt.Fprintf(&b, " case %q: return %s;", binName(id), strings.Join(a.zeros, ", "))
				continue
			}
			if !copied {
				copied = true
				fmt.Fprintf(&sp.tail, "\nfunc %s %s() %s %s\n", a.recv, name, a.results, sp.src[a.body[0]:a.body[1]])
			}
			fmt.Fprintf(&b, " case %q: %s.%s();", binName(id), a.recvName, name)
		}
		b.WriteString(" };")
	default:
		b.WriteString("switch " + mutantVar + " {")
		for _, id := range g.ids {
			fmt.Fprintf(&b, " case %q: %s;", binName(id), sp.ms[id-1].code(inner))
		}
		b.WriteString(" default: " + inner + " }")
	}
	return b.String()
}

// code is the mutant's form of stmt.
func (m *mutant) code(stmt string) string {
	later := func(s string) string {
		return fmt.Sprintf("go func() { %s.Sleep(%d); %s }()", mutantTime, int64(m.delay), s)
	}
	switch m.op {
	case twice:
		return stmt + "; " + stmt
	case again:
		return stmt + "; " + later(stmt)
	case undone:
		return "unflakeBefore := " + m.t.read + "; " + stmt + "; " + later(m.t.write("unflakeBefore"))
	case late:
		return later(stmt)
	}
	return "" // dropped
}

// value is the mutant's value of an expression whose text is expr, at
// site t.
func (m *mutant) value(t *target, expr string) string {
	switch m.op {
	case scaled:
		return "3 * (" + expr + ")"
	case tick:
		return t.site.ticked()
	case lateRead, lateReadRecv:
		return t.site.readLate(expr, m.delay, m.op == lateReadRecv)
	case worked:
		return fmt.Sprintf("(%s) * %d", expr, t.site.factor)
	case defaultZeroed:
		if !t.site.zero {
			return "1" // a ticker's period: 0 panics; 1ns refires as often
		}
	}
	return "0" // zeroed, stands
}

// strength holds what the mutants decided, by site key: fixes whose tests
// killed every mutant, with the counts. A test is tried once; a later
// round (other fixes reverted) keeps the verdict.
type strength struct {
	mu     sync.Mutex
	killed map[string]rewrite.Mutants
	weaker map[string]rewrite.Mutants // the fixes reverted as revert.Weaker
	total  MutantCount
}

// A MutantCount says what the mutants of a verification did.
type MutantCount struct {
	Tests int // tests tried on mutants
	Built int // mutants they were run on
	// Of are the mutants the original tests fail on, and Killed those
	// that the rewritten tests fail on too.
	Of, Killed int
}

// mutantCount returns the totals.
func (v *verifier) mutantCount() MutantCount {
	s := v.strengths()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// recordStrength records the mutants the tests of sites killed: they are not
// tried again.
func (v *verifier) recordStrength(sites []fixSite, m rewrite.Mutants) {
	s := v.strengths()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, site := range sites {
		s.killed[site.site.Key] = m
	}
}

// mutantsOf returns the mutants the test of a fix kept, or of one
// reverted as revert.Weaker, killed (zero when none was tried).
func (v *verifier) mutantsOf(f rewrite.Finding) rewrite.Mutants {
	s := v.strengths()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case f.Revert != nil && f.Revert.Kind == revert.Weaker:
		return s.weaker[f.Site().Key]
	case f.Fixed:
		return s.killed[f.Site().Key]
	}
	return rewrite.Mutants{}
}

func (v *verifier) strengths() *strength {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.strength == nil {
		v.strength = &strength{killed: map[string]rewrite.Mutants{}, weaker: map[string]rewrite.Mutants{}}
	}
	return v.strength
}

// mutate tries the tests of w's fixes, proven or not, which all passed after
// the rewrite (runs), on mutants of the package's code under test, and
// returns the fixes to revert as revert.Weaker (or revert.Unshown: see
// shown.go); their tests' runs lose
// Kept. It does nothing in the probe phase (decide asks for probes) or
// with Options.NoMutants.
func (v *verifier) mutate(decide func(rewrite.Site) rewrite.Decision, w *pkgWork, b *beforeRuns, runs []TestRun) ([]Held, error) {
	if v.opts.NoMutants {
		return nil, nil
	}
	held, outside, err := v.mutateTests(decide, w, b, runs)
	if err != nil {
		return nil, err
	}
	// The fixes outside tests hold back no test's runs: every test of
	// the package ran them, and their reversal is of the site alone.
	return append(held, outside...), nil
}

// outsideTests holds back an unproven fix outside any test (a helper the
// tests call, a poll in waitActive) whose kind mutants are aimed at.
// Mutants are tried per test, on the fixes in it; a helper's fix is in
// every test that calls it, and which ones do the verifier does not
// know, so no test's kill shows its strength (red team batch 19,
// evictgrace and startwatch: a poll in a helper that returns an error
// was kept with no mutant tried, and passed a state made late that the
// attempts caught).
func outsideTests(s fixSite) []Held {
	if unshownWhy(s, nil) == "" {
		return nil // proven, or of a kind no mutant is aimed at
	}
	return []Held{{Site: s.site, Why: &rewrite.Revert{Kind: revert.Unshown,
		Detail: "the fix is outside any test function (in a helper the tests call), and mutants are tried per test on the fixes in it: no mutant shows its strength"}}}
}

// mutateTests tries the mutants on the tests with fixes in them; it also
// returns the fixes outside tests that it holds back (outsideTests).
func (v *verifier) mutateTests(decide func(rewrite.Site) rewrite.Decision, w *pkgWork, b *beforeRuns, runs []TestRun) ([]Held, []Held, error) {
	st := v.strengths()
	byTest := map[string][]fixSite{}
	var tests []string
	var outside []Held
	for _, s := range w.sites {
		if decide(s.site).Probe {
			continue
		}
		if s.test == "" {
			outside = append(outside, outsideTests(s)...)
			continue
		}
		st.mu.Lock()
		_, done := st.killed[s.site.Key]
		st.mu.Unlock()
		if done {
			continue
		}
		if byTest[s.test] == nil {
			tests = append(tests, s.test)
		}
		byTest[s.test] = append(byTest[s.test], s)
	}
	if len(tests) == 0 {
		return nil, outside, nil
	}
	// A test with nothing to mutate is not tried again in later rounds.
	// Its proven fixes stand as verified; its unproven fixes of a kind
	// mutants are aimed at do not (unshown): nothing shows their
	// strength.
	var held []Held
	untried := func() []Held {
		for _, test := range tests {
			h, rest := unshown(test, byTest[test], nil)
			held = append(held, h...)
			v.recordStrength(rest, rewrite.Mutants{})
		}
		return held
	}
	code, err := v.codeUnderTest(w)
	if err != nil {
		return nil, nil, err
	}
	if code == nil || len(code.targets) == 0 && len(code.aims) == 0 {
		return v.dropKept(untried(), runs), outside, nil
	}

	// Have: the tests to try and the targets. Pick each test's mutants;
	// the package's schema holds them all, once each.
	sort.Strings(tests)
	plans := make([]mutantPlan, 0, len(tests))
	var all []*mutant
	index := map[mutant]int{} // a mutant → its id
	for _, test := range tests {
		b.mu.Lock()
		before := b.tests[test]
		b.mu.Unlock()
		if before == nil {
			continue
		}
		p := mutantPlan{test: test, sites: byTest[test], before: before}
		m := checkedNames(p.sites, test, code.reads)
		ms := append(code.aimed(m, changeKinds(p.sites), lateMutantDelays(before, windowOf(p.sites), budgetOf(p.sites)), slowDelay(before, max(windowOf(p.sites), unseenWindowOf(p.sites)), v.r.goos, workUnseen(p.sites))), pickMutants(code.relevant(m), mutantDelay(before))...)
		for _, m := range ms {
			id, ok := index[*m]
			if !ok {
				all = append(all, m)
				id = len(all)
				index[*m] = id
			}
			p.ids = append(p.ids, id)
		}
		if len(p.ids) > 0 {
			plans = append(plans, p)
		} else {
			h, rest := unshown(test, p.sites, nil)
			held = append(held, h...)
			v.recordStrength(rest, rewrite.Mutants{})
		}
	}
	if len(plans) == 0 {
		return v.dropKept(held, runs), outside, nil
	}
	var files []rewrite.Change
	for path, src := range schema(all) {
		files = append(files, rewrite.Change{Path: path, New: src})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	origDir, err := v.buildMutants(w.dir, files, nil, len(all))
	if err != nil {
		return nil, nil, err
	}
	afterDir := ""
	if origDir != "" {
		if afterDir, err = v.buildMutants(w.dir, append(slices.Clip(w.changes), files...), w.mod, len(all)); err != nil {
			return nil, nil, err
		}
	}
	if afterDir == "" {
		// The schema does not build: no mutant to try.
		return v.dropKept(untried(), runs), outside, nil
	}

	planHeld := make([][]Held, len(plans))
	errs := make([]error, len(plans))
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			planHeld[i], errs[i] = v.mutateTest(w.dir, p, all, origDir, afterDir)
		}()
	}
	wg.Wait()
	for i := range plans {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		held = append(held, planHeld[i]...)
	}
	return v.dropKept(held, runs), outside, nil
}

// dropKept marks the runs of the tests of held as not kept, and returns
// held.
func (v *verifier) dropKept(held []Held, runs []TestRun) []Held {
	for _, h := range held {
		for j := range runs {
			if runs[j].Name == h.Why.Test {
				runs[j].Kept, runs[j].Why = false, h.Why
			}
		}
	}
	return held
}

// A mutantPlan is one test to try on mutants: its fixes, its run
// before the rewrite, and the ids of its mutants.
type mutantPlan struct {
	test   string
	sites  []fixSite
	before *outcome
	ids    []int
}

// mutantDelay is how much later the second write of again and undone
// comes: within the original's window, after the first write, about a
// quarter of the test's time: the largest of mutantDelays not above it,
// so that a test's time measured a little differently gives the same
// mutant (and the same message).
func mutantDelay(before *outcome) time.Duration {
	d := mutantDelays[0]
	for _, s := range mutantDelays {
		if s <= before.mean()/4 {
			d = s
		}
	}
	return d
}

var mutantDelays = []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}

// mutateTest runs one test on its mutants: the binaries named after each
// in origDir (before the rewrite) and afterDir (after it). A mutant counts
// when the original fails on it; the rewrite must fail on it too. When
// the rewrite passes, the original runs once more: a mutant whose timing
// it only sometimes catches tells nothing.
func (v *verifier) mutateTest(dir string, p mutantPlan, all []*mutant, origDir, afterDir string) ([]Held, error) {
	// A mutant that hangs a test is killed by the timeout. The original
	// gets room (a mutant it kills only by a timeout under load would be
	// one the rewrite "misses"); the rewrite less: one that polls for a
	// state the mutant never reaches fails at its timeout, and a
	// rewritten test still running at twice the original's time is not
	// passing either.
	//
	// A late write, or a period made 3x, lengthens what both wait for:
	// they get that much more, so that a rewrite that passes it is seen
	// to pass rather than stopped as if it failed.
	//
	// The rewrite also gets twice what the original took on the same
	// mutant: an original that fails at its check only after a wait of
	// its own (a 3s deadline for a state the mutant never reaches) is
	// not outrun by a rewrite that waits as long and fails at the same
	// check, which a limit set by the correct code's time would stop as
	// a hang (red team batch 24, leasekeep and watchevents).
	origTimeout := 3*p.before.mean() + 5*time.Second
	afterTimeout := 2*p.before.mean() + 2*time.Second
	var origWall sync.Map // mutant id → the original's wall time on it
	once := func(binDir string, id int, alone bool) (*rewrite.Revert, error) {
		timeout := origTimeout
		if binDir == afterDir {
			timeout = afterTimeout
			if w, ok := origWall.Load(id); ok {
				timeout = max(timeout, 2*w.(time.Duration)+2*time.Second)
			}
		}
		switch m := all[id-1]; m.op {
		case late, lateRead, lateReadRecv:
			timeout += m.delay
		case scaled:
			timeout += 3 * p.before.mean()
		case worked:
			// The work takes real time in both (a second or so): a
			// rewrite that does it and then fails at its check catches.
			timeout += workTimeout
		case slowed:
			// Each slowed call takes the delay in real time, in both.
			timeout += slowCalls * m.delay
		}
		o, err := v.r.exec(v.r.ctx, dir, job{bin: filepath.Join(binDir, binName(id)), name: p.test, run: anchored(p.test), count: 1, timeout: timeout, alone: alone})
		if err != nil {
			return nil, err
		}
		if binDir == origDir && !o.hung {
			origWall.Store(id, o.wall)
		}
		return failure(o, p.test, 1, p.before), nil
	}
	// The mutants run in parallel, and a test that binds a fixed port or
	// path clashes with its own copies: a failure over a resource clash
	// (environmental) is the environment's, never a kill nor a catch. The
	// run is made again alone (no other process of the package beside
	// it), and that run decides: a clash that repeats alone is the
	// mutant's own doing (a listen made twice), which the original
	// catches and the rewrite must too.
	run := func(binDir string, id int) (*rewrite.Revert, error) {
		why, err := once(binDir, id, false)
		if err != nil || !environmental(why) {
			return why, err
		}
		return once(binDir, id, true)
	}
	type verdict struct {
		counts  bool // the original kills it
		killed  bool // the rewrite kills it too
		origWhy *rewrite.Revert
		after   *rewrite.Revert // the rewrite's run, nil when it passed
	}
	verdicts := make([]verdict, len(p.ids))
	errs := make([]error, len(p.ids))
	var wg sync.WaitGroup
	for i, id := range p.ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			origWhy, err := run(origDir, id)
			if origWhy == nil || err != nil {
				errs[i] = err // the original does not kill it: it tells nothing
				return
			}
			afterWhy, err := run(afterDir, id)
			if err != nil {
				errs[i] = err
				return
			}
			if afterWhy == nil {
				// Before the rewrite is blamed for a miss, the
				// original's kill is made again alone: copies of a test
				// that writes a fixed path (a file in the source tree)
				// spoil each other's runs without a message that names
				// a clash (otiai10/copy: a large file truncated by its
				// copy, so the copy ends early).
				if again, err := once(origDir, id, true); again == nil || err != nil {
					errs[i] = err
					return
				}
			}
			verdicts[i] = verdict{counts: true, killed: catches(origWhy, afterWhy), origWhy: origWhy, after: afterWhy}
		}()
	}
	wg.Wait()
	if err := v.r.ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	var tally rewrite.Mutants
	missed := -1
	for i, vd := range verdicts {
		if !vd.counts {
			continue
		}
		tally.Of++
		if l := labels[all[p.ids[i]-1].op]; !slices.Contains(tally.Names, l) {
			tally.Names = append(tally.Names, l)
		}
		if vd.killed {
			tally.Killed++
		} else if missed < 0 {
			missed = i
		}
	}
	st := v.strengths()
	st.mu.Lock()
	st.total.Tests++
	st.total.Built += len(p.ids)
	st.total.Of += tally.Of
	st.total.Killed += tally.Killed
	st.mu.Unlock()
	if missed < 0 {
		// Every mutant that counts killed; but an unproven fix needs,
		// for each kind it changes that mutants are aimed at, one aimed
		// at that kind among them (shown.go).
		tried := make([]triedMutant, len(verdicts))
		for i, vd := range verdicts {
			tried[i] = triedMutant{m: all[p.ids[i]-1], counts: vd.counts, killed: vd.killed, orig: vd.origWhy, after: vd.after}
		}
		held, rest := unshown(p.test, p.sites, tried)
		v.recordStrength(rest, tally)
		return held, nil
	}
	// Blame the fix whose checks the original failed at: the last one
	// before that line in the test file.
	vd := verdicts[missed]
	blame := p.sites[0]
	if line := failLine(vd.origWhy.Detail, blame.finding.File); line > 0 {
		for _, s := range p.sites {
			if s.finding.File == blame.finding.File && s.finding.Line <= line && s.finding.Line > blame.finding.Line {
				blame = s
			}
		}
	}
	detail := fmt.Sprintf("%s (the original fails: %s); %s", all[p.ids[missed]-1], vd.origWhy.Detail, tally)
	if vd.after != nil {
		detail = fmt.Sprintf("%s (the original fails: %s; the rewrite %s instead: %s); %s", all[p.ids[missed]-1], vd.origWhy.Detail, vd.after.Kind, vd.after.Detail, tally)
	}
	why := &rewrite.Revert{Kind: revert.Weaker, Test: p.test, Detail: clip(detail)}
	st.mu.Lock()
	st.weaker[blame.site.Key] = tally
	st.mu.Unlock()
	return []Held{{Site: blame.site, Why: why}}, nil
}

// environmental reports whether a test's failure on a mutant may be the
// environment's, not the mutant's: a clash over a resource another
// process holds (an address in use, a file that exists, a lock held;
// clashes, the classifier settle uses). The mutants of a test run in
// parallel, and a test that binds a fixed port or path clashes with its
// own copies; the fix that removes the fixed port passes where the
// original failed. Verification never blames a fix for the environment:
// such a run is made again alone (mutateTest).
func environmental(why *rewrite.Revert) bool {
	return why != nil && clashes(why.Detail)
}

// catches reports whether the rewrite's run on a mutant (after) catches
// it as the original's did (orig). A rewrite that hangs or panics where
// the original failed at a check does not: a bug the test named with a
// message would now cost the whole timeout, or crash the run, before
// anyone learns of it (a cleanup that waits for what the bug never gives
// back). A hang or panic the original had too is the same catch.
func catches(orig, after *rewrite.Revert) bool {
	if after == nil {
		return false
	}
	blunt := func(r *rewrite.Revert) bool { return r.Kind == revert.Hangs || r.Kind == revert.Panics }
	return !blunt(after) || blunt(orig)
}

// buildMutants builds the package's test binary with changes on an
// overlay, links it under the name of each of n mutants, and returns the
// directory of the links, or "" when it does not build.
func (v *verifier) buildMutants(dir string, changes, mod []rewrite.Change, n int) (string, error) {
	tmp := v.tempDir()
	if err := mkdir(tmp); err != nil {
		return "", err
	}
	overlay, err := writeOverlay(tmp, changes)
	if err != nil {
		return "", err
	}
	modfile, err := writeModFile(tmp, mod)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "schema.test")
	if _, err := v.r.build(dir, bin, overlay, modfile, false); err != nil {
		return "", v.r.ctx.Err()
	}
	for id := 1; id <= n; id++ {
		if err := linkOrCopy(bin, filepath.Join(tmp, binName(id))); err != nil {
			return "", err
		}
	}
	return tmp, nil
}

// linkOrCopy makes dst a hard link to src, or a copy where links fail.
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// pickMutants takes up to maxMutants mutants of the targets (most
// relevant first): each target's first mutation, then each one's
// second, and so on, so that the budget covers many writes before it
// covers one write in many ways.
func pickMutants(targets []*target, delay time.Duration) []*mutant {
	var ms []*mutant
	for round := 0; len(ms) < maxMutants; round++ {
		more := false
		for _, t := range targets {
			ops := mutations[t.kind]
			if round >= len(ops) {
				continue
			}
			more = true
			if ops[round] == undone && t.read == "" {
				continue
			}
			ms = append(ms, &mutant{t: t, op: ops[round], delay: delay})
			if len(ms) == maxMutants {
				break
			}
		}
		if !more {
			break
		}
	}
	return ms
}

// relevant returns the targets the names m score, most relevant first
// (source order among equals).
func (c *codeUnderTest) relevant(m mentions) []*target {
	var out []*target
	score := map[*target]int{}
	for _, t := range c.targets {
		if s := t.relevance(m); s > 0 {
			score[t] = s
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return score[out[i]] > score[out[j]] })
	return out
}

// relevance scores a target by the names of the test's checks: 2 per
// name of its own they mention, 1 per name read by a function they call.
//
// A statement that calls or sends a function value scores 1 when the
// test hands the code a function literal that writes what its checks
// read: the write the checks await is the literal's, made when the code
// runs it (a job a worker takes from a channel), so a late mutant of the
// call (or the send) makes that write late. Its names alone would not
// tell: they are the code's (job, jobs), not the checks'.
func (t *target) relevance(m mentions) int {
	s := 0
	if t.passes && m.handsFunc {
		s++
	}
	for _, n := range t.names {
		switch {
		case m.direct[n]:
			s += 2
		case m.indirect[n]:
			s++
		}
	}
	return s
}

// mentions are the names a test's checks use (direct) and the names
// that the functions and methods of the package they call read, or that
// the rest of the test uses (indirect).
type mentions struct {
	direct, indirect map[string]bool
	// handsFunc: the test hands the code a function literal that
	// mentions a name its checks read (p.Submit(func() { ran.Add(1) })).
	handsFunc bool
}

// checkedNames returns the identifiers of the test's checks: the lines
// the fixes name (rewrite.Finding.ProbeLines) when they name some, else
// the whole test function, read from the file before the rewrite, with
// what the test file's helpers they call read; and, as indirect, the
// rest of the test and what the functions of the code under test the
// checks call read (reads).
func checkedNames(sites []fixSite, test string, reads map[string]map[string]bool) mentions {
	m := mentions{direct: map[string]bool{}, indirect: map[string]bool{}}
	file := sites[0].finding.File
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return m
	}
	var lines [][2]int
	for _, s := range sites {
		if l := s.finding.ProbeLines; l[0] > 0 {
			lines = append(lines, l)
		}
	}
	within := func(n ast.Node) bool {
		if len(lines) == 0 {
			return true
		}
		line := fset.Position(n.Pos()).Line
		for _, l := range lines {
			if l[0] <= line && line <= l[1] {
				return true
			}
		}
		return false
	}
	helpers := map[string]*ast.FuncDecl{} // the test file's functions
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			helpers[fd.Name.Name] = fd
		}
	}
	if fd := helpers[test]; fd != nil && fd.Recv == nil {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if within(id) {
					m.direct[id.Name] = true
				} else {
					// The rest of the test: what it hands the code
					// (s.onJoin = func...) feeds what the checks read.
					m.indirect[id.Name] = true
				}
			}
			return true
		})
	}
	// A function literal the test passes to a call (or sends, or
	// stores) whose body mentions what the checks read: the code runs
	// it, and its write is what the checks await.
	if fd := helpers[test]; fd != nil && fd.Recv == nil {
		tname := "" // the testing value, which checks and literals both use
		if ps := fd.Type.Params.List; len(ps) > 0 && len(ps[0].Names) > 0 {
			tname = ps[0].Names[0].Name
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			var vals []ast.Expr
			switch n := n.(type) {
			case *ast.CallExpr:
				vals = n.Args
			case *ast.SendStmt:
				vals = []ast.Expr{n.Value}
			case *ast.AssignStmt:
				if n.Tok == token.ASSIGN {
					vals = n.Rhs
				}
			case *ast.CompositeLit:
				vals = n.Elts
			case *ast.KeyValueExpr:
				vals = []ast.Expr{n.Value}
			}
			for _, v := range vals {
				lit, ok := ast.Unparen(v).(*ast.FuncLit)
				if !ok || m.handsFunc {
					continue
				}
				ast.Inspect(lit.Body, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && id.Name != tname && m.direct[id.Name] {
						m.handsFunc = true
					}
					return !m.handsFunc
				})
			}
			return true
		})
	}
	// A check made by a helper of the test file (assertCount(t, c, 1))
	// reads what the helper reads.
	for name := range maps.Clone(m.direct) {
		if fd := helpers[name]; fd != nil && name != test {
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					m.direct[id.Name] = true
				}
				return true
			})
		}
	}
	for name := range m.direct {
		for r := range reads[name] {
			m.indirect[r] = true
		}
	}
	return m
}

// codeUnderTest is what mutants are made of: the statements of a
// package's non-test files that write state, and the names each function
// or method reads (for checks that call it: m.Len(), c.State()).
type codeUnderTest struct {
	targets []*target
	aims    []*target                  // the sites of mutants aimed at what a fix changes (aim.go)
	callers []*target                  // the statements that call a function of the package (callers.go)
	reads   map[string]map[string]bool // function or method name → names
}

// codeUnderTest type-checks the package's non-test files and finds its
// targets. A package that does not load, uses cgo, or whose non-test
// files the rewrite changes has none (nil).
func (v *verifier) codeUnderTest(w *pkgWork) (*codeUnderTest, error) {
	cfg := &packages.Config{
		Context: v.r.ctx,
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:     w.dir,
		Env:     append(append([]string(nil), v.r.environ()...), "GOTMPDIR="+v.r.tmp),
	}
	if len(v.r.tags) > 0 {
		cfg.BuildFlags = []string{"-tags=" + strings.Join(v.r.tags, ",")}
	}
	pkgs, err := packages.Load(cfg, ".")
	if v.r.ctx.Err() != nil {
		return nil, v.r.ctx.Err()
	}
	if err != nil || len(pkgs) != 1 || len(pkgs[0].Errors) > 0 || pkgs[0].TypesInfo == nil {
		return nil, nil
	}
	p := pkgs[0]
	if !slices.Equal(p.GoFiles, p.CompiledGoFiles) {
		return nil, nil // cgo: the syntax is of generated files
	}
	for _, c := range w.changes {
		if slices.Contains(p.GoFiles, c.Path) {
			return nil, nil
		}
	}
	srcs := map[string][]byte{}
	for _, f := range p.Syntax {
		file := p.Fset.File(f.Pos()).Name()
		if srcs[file], err = os.ReadFile(file); err != nil {
			return nil, nil
		}
	}
	return collect(p.Fset, p.Syntax, srcs, p.TypesInfo, p.Types.Scope()), nil
}

// collect finds the targets of the type-checked files (srcs: their
// contents by path) of the package whose scope is scope.
func collect(fset *token.FileSet, files []*ast.File, srcs map[string][]byte, info *types.Info, scope *types.Scope) *codeUnderTest {
	code := &codeUnderTest{reads: map[string]map[string]bool{}}
	defaults := &defaultUses{uses: map[types.Object][]*target{}, atTimer: map[types.Object]bool{}}
	var timers []*target // the duration sites of every file
	for _, f := range files {
		file := fset.File(f.Pos()).Name()
		c := &collector{info: info, scope: scope, fset: fset, file: file, src: srcs[file], pkgEnd: fset.Position(f.Name.End()).Offset}
		var callers []*target
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			reads := code.reads[fd.Name.Name]
			if reads == nil {
				reads = map[string]bool{}
				code.reads[fd.Name.Name] = reads
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					reads[id.Name] = true
				}
				return true
			})
			first := len(c.out)
			ast.Inspect(fd.Body, c.visit)
			for _, t := range c.out[first:] {
				t.encl = fd.Name.Name
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				var t *target
				switch n := n.(type) {
				case *ast.CallExpr:
					t = c.aimCall(n, fd.Name.Name)
				case *ast.ForStmt, *ast.RangeStmt:
					t = c.aimLoop(n, fd.Name.Name)
				}
				if t != nil {
					c.aims = append(c.aims, t)
					if t.site.what == durationArg {
						timers = append(timers, t)
					}
				}
				return true
			})
			c.durationUses(fd, timers, defaults)
			if t := c.aimBody(fd); t != nil {
				c.aims = append(c.aims, t)
			}
			c.aims = append(c.aims, c.aimEntry(fd))
			c.aims = append(c.aims, c.aimStamps(fd)...)
			callers = append(callers, c.callerTargets(fd)...)
		}
		kept := keepAims(c.aims, c.out)
		code.aims = append(code.aims, kept...)
		code.callers = append(code.callers, keepCallers(callers, c.out, kept)...)
		// A target inside another (s.cb = func() { s.n++ }) is left
		// out: a schema splices each target once.
		sort.SliceStable(c.out, func(i, j int) bool { return c.out[i].start < c.out[j].start })
		end := 0
		for _, t := range c.out {
			if t.start >= end {
				code.targets = append(code.targets, t)
				end = t.end
			}
		}
	}
	code.aims = append(code.aims, defaults.sites(fset, timers)...)
	return code
}

// A collector finds the targets of one file.
type collector struct {
	info   *types.Info
	scope  *types.Scope // the package's
	fset   *token.FileSet
	file   string
	src    []byte
	pkgEnd int // offset of the end of the package clause
	out    []*target
	aims   []*target // the sites of aimed mutants (aim.go)
}

// visit looks at the statements of each statement list.
func (c *collector) visit(n ast.Node) bool {
	var list []ast.Stmt
	switch n := n.(type) {
	case *ast.BlockStmt:
		list = n.List
	case *ast.CaseClause:
		list = n.Body
	case *ast.CommClause:
		list = n.Body
	}
	for _, s := range list {
		if t := c.classify(s); t != nil {
			c.out = append(c.out, t)
		}
	}
	return true
}

// classify returns the target a statement is, or nil.
func (c *collector) classify(s ast.Stmt) *target {
	t := &target{file: c.file, src: c.src, pkgEnd: c.pkgEnd,
		start: c.fset.Position(s.Pos()).Offset, end: c.fset.Position(s.End()).Offset, line: c.fset.Position(s.Pos()).Line}
	var written []ast.Expr
	switch s := s.(type) {
	case *ast.IncDecStmt:
		if !c.isState(s.X) {
			return nil
		}
		t.kind, written = counts, []ast.Expr{s.X}
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			return nil
		}
		for _, l := range s.Lhs {
			if !c.isState(l) {
				return nil
			}
		}
		written = s.Lhs
		t.kind = counts
		if s.Tok == token.ASSIGN {
			t.kind = stores
			if len(s.Lhs) == 1 && len(s.Rhs) == 1 {
				lhs := c.text(s.Lhs[0])
				t.read, t.write = lhs, func(val string) string { return lhs + " = " + val }
			}
		}
	case *ast.SendStmt:
		t.kind, written = signals, []ast.Expr{s.Chan}
		if tv, ok := c.info.Types[s.Value]; ok && tv.Type != nil {
			_, t.passes = tv.Type.Underlying().(*types.Signature)
		}
	case *ast.ExprStmt:
		call, ok := ast.Unparen(s.X).(*ast.CallExpr)
		if !ok || !c.callTarget(t, call) {
			return nil
		}
		written = []ast.Expr{call.Fun}
		t.passes = t.kind == signals
		if t.kind == closes && len(call.Args) == 1 {
			written = call.Args
		}
	default:
		return nil
	}
	seen := map[string]bool{}
	for _, e := range written {
		ast.Inspect(e, func(n ast.Node) bool {
			var name string
			switch n := n.(type) {
			case *ast.SelectorExpr:
				name = n.Sel.Name
			case *ast.Ident:
				if v, ok := c.info.Uses[n].(*types.Var); ok && v.Parent() == c.scope {
					name = n.Name
				}
			}
			if name != "" && !seen[name] {
				seen[name] = true
				t.names = append(t.names, name)
			}
			return true
		})
	}
	return t
}

// callTarget says whether a call statement writes state (an atomic add or
// store, a close, a call of a function value), and sets t's kind.
func (c *collector) callTarget(t *target, call *ast.CallExpr) bool {
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		switch obj := c.info.Uses[fun].(type) {
		case *types.Builtin:
			if obj.Name() == "close" {
				t.kind = closes
				return true
			}
		case *types.Var:
			if _, ok := obj.Type().Underlying().(*types.Signature); ok {
				t.kind = signals // a callback: a parameter or a variable
				return true
			}
		}
	case *ast.SelectorExpr:
		if sel := c.info.Selections[fun]; sel != nil {
			switch sel.Kind() {
			case types.FieldVal:
				if _, ok := sel.Type().Underlying().(*types.Signature); ok {
					t.kind = signals // x.onJoin(m)
					return true
				}
			case types.MethodVal:
				fn := sel.Obj().(*types.Func)
				if fn.Pkg() == nil || fn.Pkg().Path() != "sync/atomic" {
					return false
				}
				return atomicWrite(t, fun.Sel.Name, c.text(fun.X))
			}
			return false
		}
		// A qualified identifier: atomic.AddInt32(&n, 1).
		if fn, ok := c.info.Uses[fun.Sel].(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == "sync/atomic" {
			return atomicWrite(t, fun.Sel.Name, "")
		}
		if v, ok := c.info.Uses[fun.Sel].(*types.Var); ok {
			if _, ok := v.Type().Underlying().(*types.Signature); ok {
				t.kind = signals
				return true
			}
		}
	}
	return false
}

// atomicWrite classifies a sync/atomic function or method by its name;
// recv, for a method, is its receiver's text (undone reads and writes
// through it).
func atomicWrite(t *target, name, recv string) bool {
	switch {
	case strings.HasPrefix(name, "Add"), strings.HasPrefix(name, "And"), strings.HasPrefix(name, "Or"):
		t.kind = counts
	case name == "Store" && recv != "":
		t.kind = stores
		t.read = recv + ".Load()"
		t.write = func(val string) string { return recv + ".Store(" + val + ")" }
	case strings.HasPrefix(name, "Store"), strings.HasPrefix(name, "Swap"), strings.HasPrefix(name, "CompareAndSwap"):
		t.kind = stores
	default:
		return false
	}
	return true
}

// isState reports whether e is state that outlives the call: a field, a
// package variable (of this package or another), an element of either.
func (c *collector) isState(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, ok := c.info.Uses[e].(*types.Var)
		return ok && v.Parent() == c.scope
	case *ast.SelectorExpr:
		if sel := c.info.Selections[e]; sel != nil {
			return sel.Kind() == types.FieldVal
		}
		_, ok := c.info.Uses[e.Sel].(*types.Var)
		return ok
	case *ast.IndexExpr:
		return c.isState(e.X)
	}
	return false
}

// text is the source of a node.
func (c *collector) text(n ast.Node) string {
	return string(c.src[c.fset.Position(n.Pos()).Offset:c.fset.Position(n.End()).Offset])
}

// failLine returns the line of file that a failure's text names first
// ("x_test.go:41: got 2"), or 0.
func failLine(detail, file string) int {
	base := filepath.Base(file) + ":"
	i := strings.Index(detail, base)
	if i < 0 {
		return 0
	}
	n := 0
	for _, r := range detail[i+len(base):] {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}
