package verify

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// A fakePkg stands for a package's test binaries: each test passes, or
// fails as its mode says. Its runs take no time; each run of a test is
// said to take one millisecond.
type fakePkg struct {
	tests []string          // in source order, as a binary runs them
	modes map[string]string // test → how it fails (the consts below)

	mu   sync.Mutex
	jobs []job
}

const (
	failsAfter   = "after"   // fails after the rewrite, naming itself
	crashesAfter = "crash"   // the binary exits after the rewrite, naming no test
	failsBefore  = "before"  // fails before the rewrite as after it
	failsBeside  = "beside:" // fails after the rewrite when the test named after the colon runs in its process
	hangsAfter   = "hang"    // hangs after the rewrite: the binary's timeout fires, naming the test
	failsTwice   = "twice"   // fails its second run in one process (state in package variables), before and after
	runsOnce     = "once"    // runs once in a process whatever -test.count says, as an example does
	goneAlone    = "gone"    // does not run after the rewrite, nor in a process alone
	beforeBin    = "before.test"
	beforeRace   = "before-race.test"
	afterBin     = "after.test"
	afterRace    = "after-race.test"
)

func (p *fakePkg) exec(_ string, j job) *outcome {
	p.mu.Lock()
	p.jobs = append(p.jobs, j)
	p.mu.Unlock()
	after := j.bin == afterBin || j.bin == afterRace
	re := regexp.MustCompile(j.run)
	o := &outcome{passed: map[string]int{}, skipped: map[string]string{}, each: map[string]time.Duration{}}
	var ran []string
	for _, n := range p.tests {
		if re.MatchString(n) {
			ran = append(ran, n)
		}
	}
	for _, n := range ran {
		mode := p.modes[n]
		other, beside := strings.CutPrefix(mode, failsBeside)
		switch {
		case after && mode == hangsAfter:
			o.failed, o.hung, o.test, o.panic = true, true, n, "panic: test timed out after 1m0s"
			return o
		case after && mode == crashesAfter:
			o.failed, o.exit = true, "exit status 2"
			return o
		case mode == failsTwice && j.count > 1:
			o.failed = true
			if o.test == "" {
				o.test, o.detail = n, "x_test.go:2: "+n+" found the state its first run left"
			}
			o.passed[n]++
			continue
		case mode == goneAlone && (after || j.alone):
			continue
		case mode == runsOnce:
			o.passed[n]++
			o.tops++
			o.each[n] += time.Millisecond
			o.elapsed += time.Millisecond
			continue
		case mode == failsBefore || after && mode == failsAfter || after && beside && slices.Contains(ran, other):
			o.failed = true
			if o.test == "" {
				o.test, o.detail = n, "x_test.go:1: "+n+" is broken"
			}
			continue
		}
		d := time.Duration(j.count) * time.Millisecond
		o.passed[n] += j.count
		o.tops += j.count
		o.each[n] += d
		o.elapsed += d
	}
	o.pkgPassed = !o.failed
	return o
}

// processes returns the jobs run with bin.
func (p *fakePkg) processes(bin string) []job {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []job
	for _, j := range p.jobs {
		if j.bin == bin {
			out = append(out, j)
		}
	}
	return out
}

func fakeVerifier(p *fakePkg, count int) (*verifier, *beforeRuns, binaries) {
	r := &runner{ctx: context.Background(), sem: make(chan struct{}, 4), bsem: make(chan struct{}, 1), fake: p.exec}
	v := &verifier{r: r, opts: Options{Count: count, Procs: 3}.withDefaults(), before: map[string]*beforeRuns{}}
	b := v.beforeOf("pkg")
	b.once.Do(func() { b.bin = beforeBin })
	b.raceOnce.Do(func() { b.race = beforeRace })
	bins := binaries{plain: afterBin, race: &lazyBuild{build: func() (string, string, error) { return afterRace, "", nil }}}
	return v, b, bins
}

func kept(runs []TestRun) map[string]bool {
	m := map[string]bool{}
	for _, r := range runs {
		m[r.Name] = r.Kept
	}
	return m
}

// The affected tests of a package run together: one process before the
// rewrite, and after it the processes one test would have (one at
// GOMAXPROCS=1, one under -race, the rest spread), each running all of
// them, Count times in all.
func TestTogetherRunsTheTestsInOneProcess(t *testing.T) {
	t.Parallel()
	names := []string{"TestA", "TestB", "TestC", "TestD"}
	p := &fakePkg{tests: names}
	v, b, bins := fakeVerifier(p, 10)
	runs, err := v.testRuns("pkg", b, bins, names, false)
	if err != nil {
		t.Fatal(err)
	}
	if before := p.processes(beforeBin); len(before) != 1 || before[0].run != "^(TestA|TestB|TestC|TestD)$" {
		t.Errorf("runs before the rewrite: %+v", before)
	}
	after := append(p.processes(afterBin), p.processes(afterRace)...)
	total := 0
	for _, j := range after {
		if j.run != "^(TestA|TestB|TestC|TestD)$" {
			t.Errorf("a process after the rewrite runs %s", j.run)
		}
		total += j.count
	}
	// One at GOMAXPROCS=1, one under -race, the other eight in
	// processes of their own: a test runs once in each process.
	if len(after) != 10 || total != 10 {
		t.Errorf("%d processes after the rewrite, %d runs; want 10 and 10", len(after), total)
	}
	for _, j := range after {
		if j.count != 1 {
			t.Errorf("a process after the rewrite runs the tests %d times, want once", j.count)
		}
	}
	for _, r := range runs {
		if !r.Kept || r.Runs != 10 || r.Before != time.Millisecond || r.After != time.Millisecond {
			t.Errorf("%+v", r)
		}
	}
	if len(runs) != 4 {
		t.Errorf("%d test runs, want 4", len(runs))
	}
}

// A failure in a shared run that names its test is settled for that
// test alone (it repeats alone, and not before the rewrite: the fix is
// to blame); the other tests run together again and are kept.
func TestTogetherSettlesTheTestAFailureNames(t *testing.T) {
	t.Parallel()
	names := []string{"TestA", "TestB", "TestC", "TestD"}
	p := &fakePkg{tests: names, modes: map[string]string{"TestC": failsAfter}}
	v, b, bins := fakeVerifier(p, 10)
	runs, err := v.testRuns("pkg", b, bins, names, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"TestA": true, "TestB": true, "TestC": false, "TestD": true}
	if got := kept(runs); !equalKept(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	for _, r := range runs {
		switch {
		case r.Name == "TestC" && (r.Why == nil || r.Why.Kind != revert.FailsAfter || r.Why.Detail != "x_test.go:1: TestC is broken"):
			t.Errorf("TestC: %+v", r.Why)
		case r.Name != "TestC" && r.Runs != 10:
			t.Errorf("%s ran %d times, want 10", r.Name, r.Runs)
		}
	}
	// TestC was run alone before blame: after the rewrite (settle) and
	// before it (confirm).
	if !ranAlone(p.processes(afterBin), "TestC") || !ranAlone(p.processes(beforeBin), "TestC") {
		t.Errorf("TestC was not run alone: %+v", p.jobs)
	}
	// The first process failed: no other was started for it.
	if n := len(p.processes(afterRace)); n != 1 {
		t.Errorf("%d processes under -race, want 1 (the others' shared run)", n)
	}
}

// A failure that names no test (the binary exited) splits the tests in
// halves until the one that fails runs alone.
func TestTogetherSplitsAFailureThatNamesNoTest(t *testing.T) {
	t.Parallel()
	names := []string{"TestA", "TestB", "TestC", "TestD"}
	p := &fakePkg{tests: names, modes: map[string]string{"TestB": crashesAfter}}
	v, b, bins := fakeVerifier(p, 6)
	runs, err := v.testRuns("pkg", b, bins, names, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"TestA": true, "TestB": false, "TestC": true, "TestD": true}
	if got := kept(runs); !equalKept(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	for _, r := range runs {
		if r.Name == "TestB" && (r.Why == nil || r.Why.Kind != revert.FailsAfter || r.Why.Detail != "exit status 2") {
			t.Errorf("TestB: %+v", r.Why)
		}
	}
	var halves []string
	for _, j := range p.processes(afterBin) {
		if j.procs1 {
			halves = append(halves, j.run)
		}
	}
	for _, want := range []string{"^(TestA|TestB|TestC|TestD)$", "^(TestA|TestB)$", "^(TestC|TestD)$", "^TestA$", "^TestB$"} {
		if !slices.Contains(halves, want) {
			t.Errorf("no first run of %s: %v", want, halves)
		}
	}
}

// A test that fails only beside another test of its process, and passes
// alone every time after the rewrite, keeps its fix: running tests
// together must not revert a fix whose test passes alone.
func TestTogetherKeepsATestThatFailsOnlyBesideAnother(t *testing.T) {
	t.Parallel()
	names := []string{"TestA", "TestB", "TestC"}
	p := &fakePkg{tests: names, modes: map[string]string{"TestB": failsBeside + "TestA"}}
	v, b, bins := fakeVerifier(p, 6)
	runs, err := v.testRuns("pkg", b, bins, names, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"TestA": true, "TestB": true, "TestC": true}
	if got := kept(runs); !equalKept(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	for _, r := range runs {
		if r.Name == "TestB" && r.Alone != "x_test.go:1: TestB is broken" {
			t.Errorf("TestB: failed beside others with %q", r.Alone)
		}
	}
}

// A test that fails before the rewrite runs alone, then and after; the
// others still share their processes.
func TestTogetherLeavesATestThatFailsBefore(t *testing.T) {
	t.Parallel()
	names := []string{"TestA", "TestB", "TestC"}
	p := &fakePkg{tests: names, modes: map[string]string{"TestA": failsBefore}}
	v, b, bins := fakeVerifier(p, 4)
	runs, err := v.testRuns("pkg", b, bins, names, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Name == "TestA" && (r.Kept || r.Why == nil || r.Why.Kind != revert.FailsBefore) {
			t.Errorf("TestA: %+v %+v", r, r.Why)
		}
		if r.Name != "TestA" && !r.Kept {
			t.Errorf("%s: %+v", r.Name, r.Why)
		}
	}
	for _, j := range p.processes(afterBin) {
		if strings.Contains(j.run, "TestA") {
			t.Errorf("TestA ran after the rewrite: %s", j.run)
		}
	}
	// Once together (TestA failed there), then alone: beside other
	// processes, and with none (testRun: a clash may fail it).
	if n := len(p.processes(beforeBin)); n != 3 {
		t.Errorf("%d processes before the rewrite, want 3", n)
	}
}

// A test refuted in its first run is not stressed further: no process
// under -race, none of the spread ones.
func TestStressStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	p := &fakePkg{tests: []string{"TestA"}, modes: map[string]string{"TestA": failsAfter}}
	v, _, bins := fakeVerifier(p, 20)
	before := &outcome{passed: map[string]int{"TestA": 1}, tops: 1, elapsed: time.Millisecond}
	_, runs, why, failed, err := v.stressed("pkg", bins, "TestA", before)
	if err != nil {
		t.Fatal(err)
	}
	if why == nil || failed == nil || !failed.procs1 || runs != 1 {
		t.Errorf("why %+v, failed %+v, runs %d", why, failed, runs)
	}
	if n := len(p.jobs); n != 1 {
		t.Errorf("%d processes, want 1", n)
	}
}

func ranAlone(jobs []job, name string) bool {
	for _, j := range jobs {
		if j.run == anchored(name) && j.alone {
			return true
		}
	}
	return false
}

func equalKept(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestSplit(t *testing.T) {
	t.Parallel()
	names := []string{"TestA", "TestB", "TestC"}
	for _, tc := range []struct {
		failed string
		want   string
	}{
		{"TestB", "[[TestB]]"},
		{"TestX", "[[TestA] [TestB TestC]]"},
		{"", "[[TestA] [TestB TestC]]"},
	} {
		if got := strings.Join(strings.Fields(strings.ReplaceAll(fmtGroups(split(names, tc.failed)), "\n", " ")), " "); got != tc.want {
			t.Errorf("split(%q) = %s, want %s", tc.failed, got, tc.want)
		}
	}
	if got := anchoredAll([]string{"TestA", "Test.B"}); got != `^(TestA|Test\.B)$` {
		t.Errorf("anchoredAll = %s", got)
	}
}

func fmtGroups(gs [][]string) string {
	var parts []string
	for _, g := range gs {
		parts = append(parts, "["+strings.Join(g, " ")+"]")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Proven fixes run as unproven ones do: a package whose last rewrite
// was not verified holds back both.
func TestProvenFixesRunOutOfRounds(t *testing.T) {
	t.Parallel()
	proven := rewrite.Finding{Rule: "leak", File: "/m/p/p_test.go", Test: "TestA", Fixed: true}
	unproven := rewrite.Finding{Rule: "wait", File: "/m/p/p_test.go", Test: "TestB", Fixed: true, Unproven: true}
	final := map[string]string{"/m/p": "last"}
	verified := map[string]string{"/m/p": "earlier"}
	got := outOfRounds([]rewrite.Finding{proven, unproven}, final, verified)
	if len(got) != 2 || got[0] != proven.Site() || got[1] != unproven.Site() {
		t.Errorf("out of rounds: %+v, want both", got)
	}
	verified["/m/p"] = "last"
	if got := outOfRounds([]rewrite.Finding{proven, unproven}, final, verified); len(got) != 0 {
		t.Errorf("verified, yet out of rounds: %+v", got)
	}
}

// Run removes its temporary directory however it ends: here its context
// ended before it could start anything.
func TestRunRemovesItsTempDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Run(ctx, &rewrite.Config{Dir: dir}, Options{TempDir: dir}); err == nil {
		t.Fatal("Run succeeded with its context ended")
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left %s", filepath.Join(dir, e.Name()))
	}
}

func TestProgressString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    Progress
		want string
	}{
		{Progress{Round: 1, Done: 0, Total: 9, Runs: 1}, "0/9 packages, 1 test run"},
		{Progress{Round: 1, Done: 3, Total: 9, Runs: 140, Left: 80*time.Second + 300*time.Millisecond}, "3/9 packages, 140 test runs, about 1m20s left"},
		{Progress{Round: 2, Done: 1, Total: 2, Runs: 200, Left: 25 * time.Minute}, "round 2: 1/2 packages, 200 test runs, about 25m0s left"},
		{Progress{Round: 1, Done: 1, Total: 2, Runs: 2, Left: time.Millisecond}, "1/2 packages, 2 test runs, about 1s left"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		elapsed                    time.Duration
		done, total, runs, planned int
		want                       time.Duration
	}{
		{time.Minute, 0, 4, 0, 0, 0},                 // nothing measured
		{time.Minute, 0, 4, 10, 40, 3 * time.Minute}, // a quarter of the runs in a minute
		{time.Minute, 1, 4, 10, 40, 3 * time.Minute}, // a package of four in a minute
		{2 * time.Minute, 2, 4, 0, 0, 2 * time.Minute},
		{time.Minute, 4, 4, 40, 40, 0},
	} {
		if got := estimate(tc.elapsed, tc.done, tc.total, tc.runs, tc.planned); got != tc.want {
			t.Errorf("estimate(%v, %d/%d, %d/%d runs) = %v, want %v", tc.elapsed, tc.done, tc.total, tc.runs, tc.planned, got, tc.want)
		}
	}
}

// The tracker reports each process's runs and each package done, with
// the estimate from its clock.
func TestTracker(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	var got []Progress
	tr := newTracker(func(p Progress) { got = append(got, p) }, func() time.Time { return now })
	tr.startRound(2)
	tr.plan(20)
	now = now.Add(10 * time.Second)
	tr.ran(5)
	now = now.Add(10 * time.Second)
	tr.pkgDone()
	want := []Progress{
		{Round: 1, Done: 0, Total: 2, Runs: 5, Left: 30 * time.Second},
		{Round: 1, Done: 1, Total: 2, Runs: 5, Left: 20 * time.Second},
	}
	if !slices.Equal(got, want) {
		t.Errorf("reported %+v, want %+v", got, want)
	}
	// A tracker without a report counts quietly; a nil one is a no-op.
	var none *tracker
	none.startRound(1)
	none.ran(1)
	none.pkgDone()
}

// The package's whole run before the rewrite is made only when the run
// after it fails: a suite that passes lost nothing.
func TestPackageRunBeforeOnlyOnFailure(t *testing.T) {
	t.Parallel()
	names := []string{"TestA", "TestB"}
	p := &fakePkg{tests: names}
	v, b, bins := fakeVerifier(p, 4)
	if why, err := v.packageRun("pkg", b, bins, false); err != nil || why != nil {
		t.Fatalf("why %+v, err %v", why, err)
	}
	if n := len(p.processes(beforeBin)); n != 0 {
		t.Errorf("%d whole runs before the rewrite, want none", n)
	}
	p = &fakePkg{tests: names, modes: map[string]string{"TestB": failsAfter}}
	v, b, bins = fakeVerifier(p, 4)
	why, err := v.packageRun("pkg", b, bins, false)
	if err != nil || why == nil || why.Kind != revert.PackageRun || why.Test != "TestB" {
		t.Fatalf("why %+v, err %v", why, err)
	}
	if n := len(p.processes(beforeBin)); n != 1 {
		t.Errorf("%d whole runs before the rewrite, want 1", n)
	}
}

// A process's limits come from its tests' own times before the rewrite:
// each test may take four times its time (at least its time plus 5s and
// 10s) before it counts as hung; the process, the sum; at most
// Options.Timeout for each test it runs.
func TestLimitScalesWithTheTestsOwnTime(t *testing.T) {
	t.Parallel()
	v := &verifier{opts: Options{Timeout: time.Minute}.withDefaults()}
	ms := func(d time.Duration) *outcome { return &outcome{tops: 1, elapsed: d} }
	befores := map[string]*outcome{"TestA": ms(100 * time.Millisecond), "TestB": ms(10 * time.Second), "TestC": ms(40 * time.Second)}
	j := job{count: 1, tests: []string{"TestA"}}
	v.limit(&j, befores)
	if j.timeout != 10*time.Second || j.limits["TestA"] != 10*time.Second {
		t.Errorf("a 0.1s test: timeout %v, limit %v; want 10s and 10s", j.timeout, j.limits["TestA"])
	}
	j = job{count: 1, tests: []string{"TestA", "TestB"}}
	v.limit(&j, befores)
	if want := 4 * (10*time.Second + 100*time.Millisecond); j.timeout != want || j.limits["TestB"] != 40*time.Second {
		t.Errorf("shared: timeout %v, limit of TestB %v; want %v and 40s", j.timeout, j.limits["TestB"], want)
	}
	j = job{count: 1, tests: []string{"TestC"}}
	v.limit(&j, befores)
	if j.timeout != time.Minute {
		t.Errorf("capped: %v, want 1m", j.timeout)
	}
	j = job{count: 1, tests: []string{"TestB"}, race: true}
	v.limit(&j, befores)
	if j.limits["TestB"] != 100*time.Second {
		t.Errorf("under -race: %v, want 100s", j.limits["TestB"])
	}
}

// The watch stops a process when a top-level test runs past its limit,
// naming it, and never for a test that ended in time or that has no
// limit.
func TestWatchStopsAHungTest(t *testing.T) {
	t.Parallel()
	stopped := make(chan bool)
	w := newWatch(map[string]time.Duration{"TestA": time.Hour, "TestB": time.Millisecond}, func() { close(stopped) })
	events := `{"Action":"run","Test":"TestA"}
{"Action":"pass","Test":"TestA"}
{"Action":"run","Test":"TestOther"}
{"Action":"run","Test":"TestB"}
{"Action":"output","Test":"TestB","Output":"..."}
`
	// In pieces, as a pipe delivers them.
	for _, part := range []string{events[:10], events[10:50], events[50:]} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	<-stopped
	if name, limit := w.hung(); name != "TestB" || limit != time.Millisecond {
		t.Errorf("hung: %q after %v, want TestB after 1ms", name, limit)
	}
	w.stop()

	calm := newWatch(map[string]time.Duration{"TestA": time.Hour}, func() { t.Error("stopped") })
	calm.Write([]byte(`{"Action":"run","Test":"TestA"}` + "\n" + `{"Action":"pause","Test":"TestA"}` + "\n" + `{"Action":"cont","Test":"TestA"}` + "\n" + `{"Action":"pass","Test":"TestA"}` + "\n"))
	calm.stop()
	if name, _ := calm.hung(); name != "" {
		t.Errorf("hung: %q", name)
	}
}

// A hang in a shared run costs the run's whole limit: the tests then run
// alone, at once, rather than together again.
func TestTogetherRunsTestsAloneAfterAHang(t *testing.T) {
	t.Parallel()
	names := []string{"TestA", "TestB", "TestC"}
	p := &fakePkg{tests: names, modes: map[string]string{"TestB": hangsAfter}}
	v, b, bins := fakeVerifier(p, 4)
	runs, err := v.testRuns("pkg", b, bins, names, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"TestA": true, "TestB": false, "TestC": true}
	if got := kept(runs); !equalKept(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	for _, r := range runs {
		if r.Name == "TestB" && (r.Why == nil || r.Why.Kind != revert.Hangs) {
			t.Errorf("TestB: %+v", r.Why)
		}
	}
	shared := 0
	for _, j := range p.processes(afterBin) {
		if len(j.tests) > 1 {
			shared++
		}
	}
	if shared != 1 {
		t.Errorf("%d shared processes after the rewrite, want 1 (the one that hung)", shared)
	}
	// A hang costs its limit once: the hung test is not run again alone
	// after the rewrite, only confirmed on the binary from before it.
	if ranAlone(p.processes(afterBin), "TestB") {
		t.Errorf("the hung test ran alone again after the rewrite")
	}
	if !ranAlone(p.processes(beforeBin), "TestB") {
		t.Errorf("the hang was not confirmed on the binary from before the rewrite")
	}
}

// A test that fails its second run in one process (state in package
// variables), and an example, which runs once in a process whatever
// -test.count says, are verified as go test runs them: once in each
// process. Neither is "flaky without the rewrite".
func TestEachProcessRunsATestOnce(t *testing.T) {
	t.Parallel()
	names := []string{"ExampleB", "TestA", "TestC"}
	p := &fakePkg{tests: names, modes: map[string]string{"TestA": failsTwice, "ExampleB": runsOnce}}
	v, b, bins := fakeVerifier(p, 10)
	runs, err := v.testRuns("pkg", b, bins, names, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if !r.Kept || r.Runs != 10 {
			t.Errorf("%s: kept %v after %d runs (%v), want kept after 10", r.Name, r.Kept, r.Runs, r.Why)
		}
	}
}

// A test that does not run after the rewrite, nor when the binary from
// before runs it again, is "not run": nothing shows it flaky.
func TestATestThatDoesNotRunIsNotFlaky(t *testing.T) {
	t.Parallel()
	p := &fakePkg{tests: []string{"ExampleA"}, modes: map[string]string{"ExampleA": goneAlone}}
	v, b, bins := fakeVerifier(p, 4)
	runs, err := v.testRuns("pkg", b, bins, []string{"ExampleA"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Kept || runs[0].Why == nil || runs[0].Why.Kind != revert.NoTest {
		t.Fatalf("runs %+v, want ExampleA not run", runs)
	}
	if want := "ExampleA did not run (an example runs only when it has an output comment)"; runs[0].Why.Detail != want {
		t.Errorf("detail %q, want %q", runs[0].Why.Detail, want)
	}
}
