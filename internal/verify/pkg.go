package verify

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/unflake/unflake/internal/modedit"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// pkgWork is one package directory to verify.
type pkgWork struct {
	dir     string
	changes []rewrite.Change
	mod     []rewrite.Change // its module's go.mod and go.sum, when they change
	sites   []fixSite        // the fixes applied in dir, in source order: their tests run
	tests   []string         // affected top-level tests, sorted
	all     bool             // a fix outside any test: every test is affected
}

// A fixSite is one applied fix and the top-level test it is in.
type fixSite struct {
	site    rewrite.Site
	test    string          // top-level test, or "" outside tests
	finding rewrite.Finding // for mutate.go: Unproven, File, Line, ProbeLines
}

// covers reports whether a failure of the test may come from the fix.
func (s fixSite) covers(test string) bool { return s.test == "" || s.test == test }

// verify verifies each package directory's changes in res, concurrently,
// and says which fixes to hold back. decide is the engine hook of the
// round (for bisecting, which runs the engine again on one package).
//
// onPkg, if set, is called as each package's verification ends, one
// call at a time, with its runs and the fixes it holds back.
func (v *verifier) verify(cfg *rewrite.Config, decide func(rewrite.Site) rewrite.Decision, res *rewrite.Result, onPkg func(*pkgWork, []TestRun, []Held)) ([]TestRun, []Held, error) {
	var work []*pkgWork
	byDir := map[string]*pkgWork{}
	modChanges := map[string][]rewrite.Change{} // module directory → its changes
	for _, c := range res.Changes {
		d := filepath.Dir(c.Path)
		if modedit.IsModFile(c.Path) {
			modChanges[d] = append(modChanges[d], c)
			continue
		}
		w := byDir[d]
		if w == nil {
			w = &pkgWork{dir: d}
			byDir[d] = w
			work = append(work, w)
		}
		w.changes = append(w.changes, c)
	}
	seen := map[string]bool{}
	for _, f := range res.Findings {
		w := byDir[filepath.Dir(f.File)]
		if w == nil || !f.Fixed {
			continue
		}
		s := f.Site()
		if seen[s.Key] {
			continue
		}
		seen[s.Key] = true
		fs := fixSite{site: s, finding: f}
		if top := topLevel(f.Test); rewrite.IsTestName(top) {
			fs.test = top
			if !slices.Contains(w.tests, top) {
				w.tests = append(w.tests, top)
			}
		} else {
			w.all = true
		}
		w.sites = append(w.sites, fs)
	}
	sort.Slice(work, func(i, j int) bool { return work[i].dir < work[j].dir })
	for _, w := range work {
		sort.Strings(w.tests)
		if len(modChanges) > 0 {
			w.mod = modChanges[moduleDir(w.dir)]
		}
	}

	type result struct {
		runs []TestRun
		held []Held
		err  error
	}
	results := make([]result, len(work))
	var wg sync.WaitGroup
	v.r.track.startRound(len(work))
	var onMu sync.Mutex
	for i, w := range work {
		wg.Go(func() {
			runs, held, err := v.verifyPkg(cfg, decide, w)
			results[i] = result{runs, held, err}
			if err == nil && onPkg != nil {
				onMu.Lock()
				onPkg(w, runs, held)
				onMu.Unlock()
			}
			v.r.track.pkgDone()
		})
	}
	wg.Wait()
	var runs []TestRun
	var held []Held
	for _, r := range results {
		if r.err != nil {
			return nil, nil, r.err
		}
		runs = append(runs, r.runs...)
		held = append(held, r.held...)
	}
	return runs, held, nil
}

// verifyPkg verifies one package: the affected tests together, split
// on a failure down to the test that fails, bisecting the fixes of a
// test that fails after the rewrite; then, when every test kept its
// fixes, the whole test binary with all of them. Proven fixes run as
// unproven ones do: a proof can miss what the code does (issue 28 found
// four proven shapes that broke correct code), and running decides.
func (v *verifier) verifyPkg(cfg *rewrite.Config, decide func(rewrite.Site) rewrite.Decision, w *pkgWork) ([]TestRun, []Held, error) {
	if len(w.sites) == 0 {
		return nil, nil, nil // no fixed finding: nothing to verify
	}
	b := v.beforeOf(w.dir)
	if err := v.buildBefore(w.dir, b); err != nil {
		return nil, nil, err
	}
	if b.broken != "" {
		return w.holdAll(&rewrite.Revert{Kind: revert.FailsBefore, Detail: "the tests do not build: " + b.broken})
	}
	bins, broken, err := v.r.buildSet(v.tempDir(), w.dir, w.changes, w.mod)
	if err != nil {
		return nil, nil, err
	}
	if broken != "" {
		return v.brokenBuild(cfg, decide, w, broken)
	}
	tests := w.tests
	if w.all {
		out, err := v.r.command(w.dir, b.bin, "-test.list=.*").Output()
		if err != nil {
			if v.r.ctx.Err() != nil {
				return nil, nil, v.r.ctx.Err()
			}
			return w.holdAll(&rewrite.Revert{Kind: revert.FailsBefore, Detail: "cannot list the tests: " + err.Error()})
		}
		tests = nil
		for _, name := range strings.Fields(string(out)) {
			if rewrite.IsTestName(name) && !isBench(name) {
				tests = append(tests, name)
			}
		}
		if len(tests) == 0 {
			return w.holdAll(&rewrite.Revert{Kind: revert.NoTest, Detail: "no test runs it"})
		}
	}
	// Benchmarks never run: their time is what they measure, and a
	// package's may take minutes. A fix in one is not verified.
	var benchRuns []TestRun
	tests = slices.DeleteFunc(slices.Clone(tests), func(n string) bool {
		if isBench(n) {
			benchRuns = append(benchRuns, TestRun{Dir: w.dir, Name: n, Why: &rewrite.Revert{Kind: revert.NoTest, Test: n,
				Detail: n + " is a benchmark, and verification runs no benchmark"}})
			return true
		}
		return false
	})

	// In the probe phase a failure under load is the evidence sought (the
	// checks after the removed wait race with the code): it is not
	// settled by runs alone.
	probing := decide(w.sites[0].site).Probe
	v.r.track.plan(len(tests) * (1 + v.opts.Count))
	runs, err := v.testRuns(w.dir, b, bins, tests, probing)
	if err != nil {
		return nil, nil, err
	}
	runs = append(runs, benchRuns...)

	// Have: each test's runs. Hold back the fixes of the tests that did
	// not pass: all of them when nothing could be verified, the one that
	// fails the test (bisected) when it failed after the rewrite.
	var held []Held
	hold := func(s rewrite.Site, why *rewrite.Revert) {
		for _, h := range held {
			if h.Site.Key == s.Key {
				return
			}
		}
		held = append(held, Held{Site: s, Why: why})
	}
	for _, run := range runs {
		if run.Kept {
			continue
		}
		var cands []rewrite.Site
		for _, s := range w.sites {
			if s.covers(run.Name) {
				cands = append(cands, s.site)
			}
		}
		if !run.Why.AfterRewrite() || len(cands) == 1 {
			for _, s := range cands {
				hold(s, run.Why)
			}
			continue
		}
		name, repro := run.Name, run.repro
		i, why, err := v.bisect(cfg, decide, w, cands, run.Why, func(bins binaries) (*rewrite.Revert, error) {
			if repro == nil {
				_, _, why, _, err := v.stressed(w.dir, bins, name, b.tests[name])
				return why, err
			}
			// The run that repeated the failure alone, on this variant.
			j := *repro
			j.bin, j.src = bins.plain, bins.src
			if repro.race {
				path, broken, err := bins.racePath()
				if err != nil || broken != "" {
					return buildAfter(broken), err
				}
				j.bin = path
			}
			o, err := v.r.exec(v.r.ctx, w.dir, j)
			if err != nil {
				return nil, err
			}
			return failure(o, name, j.count, b.tests[name]), nil
		})
		if err != nil {
			return nil, nil, err
		}
		hold(cands[i], why)
	}
	if len(held) > 0 {
		return runs, held, nil
	}

	// Have: every test passed alone. Now a bubble's test twice in one
	// process (second.go), the fixes' strength (mutate.go), then the
	// whole binary.
	if !probing {
		if held, err := v.secondRuns(w, b, bins, runs); err != nil || len(held) > 0 {
			return runs, held, err
		}
	}
	if held, err := v.mutate(decide, w, b, runs); err != nil || len(held) > 0 {
		return runs, held, err
	}
	why, err := v.packageRun(w.dir, b, bins, false)
	if err != nil || why == nil {
		return runs, nil, err
	}
	// A suite may be flaky on its own (a test failing one run in six is
	// common), or clash with another package's tests over a port or a
	// file: blame a fix only if the test fails again in a second whole
	// run after the rewrite, alone, and passes in a second one before it,
	// alone too.
	for _, bin := range []string{bins.plain, b.bin} {
		j := job{bin: bin, count: 1, timeout: max(v.opts.Timeout, 2*b.whole.wall+time.Minute), alone: true}
		if bin == bins.plain {
			j.src = bins.src
		}
		again, err := v.r.exec(v.r.ctx, w.dir, j)
		if err != nil {
			return nil, nil, err
		}
		if passed := again.passed[why.Test] > 0; passed == (bin == bins.plain) {
			return runs, nil, nil
		}
	}
	var cands []rewrite.Site
	for _, s := range w.sites {
		cands = append(cands, s.site)
	}
	i := 0
	if len(cands) > 1 {
		i, why, err = v.bisect(cfg, decide, w, cands, why, func(bins binaries) (*rewrite.Revert, error) {
			return v.packageRun(w.dir, b, bins, true)
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if clashes(why.Detail) {
		// Repeated alone, but over a resource clash: not the fix's doing.
		why = &rewrite.Revert{Kind: revert.Clash, Test: why.Test, Detail: why.Detail}
	}
	// The culprit's test (every test, for a fix outside tests) loses it.
	for _, s := range w.sites {
		if s.site.Key != cands[i].Key {
			continue
		}
		for j := range runs {
			if s.covers(runs[j].Name) {
				runs[j].Kept, runs[j].Why = false, why
			}
		}
	}
	return runs, []Held{{Site: cands[i], Why: why}}, nil
}

// buildAfter is why a test cannot run after the rewrite when its -race
// build fails (the plain one built).
func buildAfter(broken string) *rewrite.Revert {
	if broken == "" {
		return nil
	}
	return &rewrite.Revert{Kind: revert.BuildAfter, Detail: "the tests do not build after the rewrite: " + broken}
}

// racePath returns the -race build, built now if it was not yet, or why
// it does not build.
func (b binaries) racePath() (string, string, error) {
	if b.race == nil {
		return "", "the race detector is not available", nil
	}
	return b.race.get()
}

// brokenBuild holds back the fix that breaks the package's build (found
// by bisecting, when there are several): only it is to blame, and the
// others are verified in the next round.
func (v *verifier) brokenBuild(cfg *rewrite.Config, decide func(rewrite.Site) rewrite.Decision, w *pkgWork, broken string) ([]TestRun, []Held, error) {
	why := &rewrite.Revert{Kind: revert.BuildAfter, Detail: "the tests do not build after the rewrite: " + broken}
	all := w.sites
	if len(all) == 1 {
		return w.holdAll(why)
	}
	var cands []rewrite.Site
	for _, s := range all {
		cands = append(cands, s.site)
	}
	builds := func(binaries) (*rewrite.Revert, error) { return nil, nil }
	i, why, err := v.bisect(cfg, decide, w, cands, why, builds)
	if err != nil {
		return nil, nil, err
	}
	runs, _, _ := w.holdAll(why)
	return runs, []Held{{Site: cands[i], Why: why}}, nil
}

// holdAll holds back every fix of the package for one reason.
func (w *pkgWork) holdAll(why *rewrite.Revert) ([]TestRun, []Held, error) {
	tests := w.tests
	if w.all {
		tests = append(tests, "(all tests)")
	}
	var runs []TestRun
	for _, name := range tests {
		runs = append(runs, TestRun{Dir: w.dir, Name: name, Why: why})
	}
	var held []Held
	for _, s := range w.sites {
		held = append(held, Held{Site: s.site, Why: why})
	}
	return runs, held, nil
}

func (v *verifier) buildBefore(dir string, b *beforeRuns) error {
	var err error
	b.once.Do(func() {
		tmp := v.tempDir()
		if err = mkdir(tmp); err != nil {
			return
		}
		b.bin = filepath.Join(tmp, "before.test")
		out, berr := v.r.build(dir, b.bin, "", "", false)
		switch {
		case v.r.ctx.Err() != nil:
			err = v.r.ctx.Err()
		case berr != nil:
			b.broken = buildError(out, berr)
		}
	})
	if err == nil && v.r.ctx.Err() != nil {
		err = v.r.ctx.Err()
	}
	return err
}

// anchored is the -test.run pattern of one top-level test.
func anchored(name string) string { return "^" + regexp.QuoteMeta(name) + "$" }

// testRun verifies one top-level test: once before the rewrite (cached),
// then stressed after it. A failure after it is settled (settle), or,
// when probing, only confirmed on the binary from before it. With from,
// the test failed in a run beside others of its package (together):
// that failure is settled, and the test is not stressed again.
func (v *verifier) testRun(dir string, b *beforeRuns, bins binaries, name string, probing bool, from *failedRun) (TestRun, error) {
	run := TestRun{Dir: dir, Name: name}
	b.mu.Lock()
	before, ok := b.tests[name]
	b.mu.Unlock()
	if !ok {
		var err error
		j := job{bin: b.bin, name: name, run: anchored(name), bench: isBench(name), count: 1, timeout: v.opts.Timeout}
		before, err = v.r.exec(v.r.ctx, dir, j)
		if err != nil {
			return run, err
		}
		b.addWall(before.wall)
		if before.failed && !before.hung {
			// It ran beside the package's other tests, and may have
			// clashed with one over a port or a path: alone, it may pass.
			j.alone = true
			alone, err := v.r.exec(v.r.ctx, dir, j)
			if err != nil {
				return run, err
			}
			if !alone.failed {
				before = alone
			}
		}
		b.mu.Lock()
		b.tests[name] = before
		b.mu.Unlock()
	}
	msg, skips := before.skipped[name]
	switch {
	case before.failed:
		run.Why = &rewrite.Revert{Kind: revert.FailsBefore, Test: name, Detail: before.reason()}
		return run, nil
	case skips:
		run.Why = &rewrite.Revert{Kind: revert.Skips, Test: name, Detail: msg}
		return run, nil
	case before.passed[name] == 0:
		run.Why = &rewrite.Revert{Kind: revert.NoTest, Test: name, Detail: name + " did not run" + exampleNote(name)}
		return run, nil
	}
	run.Before = before.mean()
	var (
		after  time.Duration
		runs   int
		why    *rewrite.Revert
		failed *job
	)
	var err error
	if from != nil {
		runs, why, failed = from.runs, from.why, &from.job
	} else {
		if after, runs, why, failed, err = v.stressed(dir, bins, name, before); err != nil {
			return run, err
		}
	}
	run.Runs = runs
	if why != nil && failed != nil && probing {
		if why, err = v.confirm(dir, b, bins, *failed, name, before, why); err != nil {
			return run, err
		}
	} else if why != nil && failed != nil {
		s, err := v.settle(dir, b, bins, *failed, name, before, why)
		if err != nil {
			return run, err
		}
		why, run.Alone, run.repro = s.why, s.alone, s.repro
		if s.why == nil {
			// The first run passed unless it is the one that failed;
			// the others that ran beside the failure do not count.
			run.Runs = s.runs
			if !failed.procs1 {
				run.Runs++
			}
			after = s.after
		}
	}
	if why != nil {
		run.Why = why
		return run, nil
	}
	run.Kept, run.After = true, after
	return run, nil
}

// A settled failure says whose a failure after the rewrite is.
type settled struct {
	why   *rewrite.Revert // nil: the runs alone passed, and the fix stays
	alone string          // the failure beside others, when the runs alone passed
	repro *job            // the run that repeated the failure alone
	runs  int             // runs made alone
	after time.Duration   // their mean time
}

// settle decides whose a failure after the rewrite (why, in the run j)
// is. That run had company: its own parallel runs, other tests of its
// package. A test that binds a fixed port or socket path, or takes a
// lock, may fail only in company, and that is not the fix's doing. So
// the test runs again alone (no other test process of its package; go
// test too runs packages side by side), twice, as j ran it. If that passes, the rest of its runs are made alone, one
// after another, and if they pass too the fix stays. A failure that
// repeats alone is run again, alone, on the binary from before the
// rewrite (confirm): a failure there too is the test's own
// (FlakyBefore); else a failure that names a resource clash (an address
// in use, a file that exists, a lock held) is the environment's
// (Clash); else it is the fix's.
func (v *verifier) settle(dir string, b *beforeRuns, bins binaries, j job, name string, before *outcome, why *rewrite.Revert) (settled, error) {
	if !why.AfterRewrite() || why.Kind == revert.BuildAfter {
		return settled{why: why}, nil
	}
	if why.Kind == revert.Hangs {
		// Still running at several times its own time (hangAfter) is
		// not what load does; running it alone again would only pay
		// the limit twice. The run from before the rewrite still says
		// whether the test hangs on its own.
		j.alone = true
		confirmed, err := v.confirm(dir, b, bins, j, name, before, why)
		return settled{why: confirmed, repro: &j}, err
	}
	befores := map[string]*outcome{name: before}
	alone := j
	alone.alone, alone.count = true, 1
	v.limit(&alone, befores)
	runs, total, again, err := v.seqRuns(dir, alone, 2, name, before)
	if err != nil {
		return settled{}, err
	}
	repro := alone
	if again == nil {
		// Passed alone: the rest of the runs, alone too.
		rest := job{bin: bins.plain, name: name, run: j.run, bench: j.bench, src: bins.src, alone: true, count: 1}
		v.limit(&rest, befores)
		k := v.fit(before.mean(), total/time.Duration(max(runs, 1)))
		more, moreTotal, why2, err := v.seqRuns(dir, rest, k, name, before)
		if err != nil {
			return settled{}, err
		}
		if again = why2; again == nil {
			return settled{alone: why.Detail, runs: runs + more, after: (total + moreTotal) / time.Duration(max(runs+more, 1))}, nil
		}
		repro = rest
	}
	if repro.race {
		again.Detail += " (in a run under -race)"
	}
	confirmed, err := v.confirm(dir, b, bins, repro, name, before, again)
	if err != nil {
		return settled{}, err
	}
	if confirmed.Kind != revert.FlakyBefore && clashes(confirmed.Detail) {
		confirmed = &rewrite.Revert{Kind: revert.Clash, Test: confirmed.Test, Detail: confirmed.Detail}
	}
	return settled{why: confirmed, repro: &repro}, nil
}

// seqRuns runs j (one run of the test name) n times, one process after
// another, until one fails: the runs made and their time (the passing
// ones), and why the one that failed did.
func (v *verifier) seqRuns(dir string, j job, n int, name string, before *outcome) (int, time.Duration, *rewrite.Revert, error) {
	runs, total := 0, time.Duration(0)
	for range n {
		o, err := v.r.exec(v.r.ctx, dir, j)
		if err != nil {
			return runs, total, nil, err
		}
		if why := failure(o, name, j.count, before); why != nil {
			return runs, total, why, nil
		}
		runs += j.count
		total += o.elapsed
	}
	return runs, total, nil, nil
}

// clashWords are what a failure over a resource another process holds
// says (the errno texts of EADDRINUSE, EEXIST, EAGAIN, ETXTBSY, EBUSY,
// EMFILE, and the usual lock messages).
var clashWords = []string{
	"address already in use", "eaddrinuse", "bind:", "file exists", "eexist",
	"resource temporarily unavailable", "eagain", "ewouldblock",
	"text file busy", "etxtbsy", "device or resource busy", "resource busy",
	"too many open files", "lock held", "already locked", "database is locked",
	"locked by another process",
}

// clashes reports whether a failure names a clash over a resource.
func clashes(detail string) bool {
	d := strings.ToLower(detail)
	for _, w := range clashWords {
		if strings.Contains(d, w) {
			return true
		}
	}
	return false
}

func isBench(name string) bool { return strings.HasPrefix(name, "Benchmark") }

// mean is the mean time of one run of the top-level tests that passed.
func (o *outcome) mean() time.Duration {
	if o.tops == 0 {
		return 0
	}
	return o.elapsed / time.Duration(o.tops)
}

// confirm runs the job that failed after the rewrite once more, with the
// test binary from before it (built with -race when the job was), alone
// when the job was. A test that fails the same way without the rewrite
// is flaky on its own:
// no fix can be verified by it and none is to blame, so the failure is
// reported as one before the rewrite (and never recorded as a reverted
// fix). Otherwise the failure after the rewrite stands.
func (v *verifier) confirm(dir string, b *beforeRuns, bins binaries, j job, name string, before *outcome, why *rewrite.Revert) (*rewrite.Revert, error) {
	if !why.AfterRewrite() || why.Kind == revert.BuildAfter {
		return why, nil
	}
	bin := b.bin
	if j.race {
		b.raceOnce.Do(func() {
			tmp := v.tempDir()
			if err := mkdir(tmp); err != nil {
				b.raceBroken = err.Error()
				return
			}
			b.race = filepath.Join(tmp, "before-race.test")
			if out, err := v.r.build(dir, b.race, "", "", true); err != nil {
				b.raceBroken = buildError(out, err)
			}
		})
		if err := v.r.ctx.Err(); err != nil {
			return nil, err
		}
		if b.raceBroken != "" {
			return why, nil // cannot confirm: the failure stands
		}
		bin = b.race
	}
	j.bin, j.src = bin, nil
	o, err := v.r.exec(v.r.ctx, dir, j)
	if err != nil {
		return nil, err
	}
	again := failure(o, name, j.count, before)
	if again == nil {
		return why, nil
	}
	if notRun(o, name) {
		// The binary from before did not run the test at all this time:
		// no run of it failed, so nothing shows it flaky, and nothing
		// was verified.
		return &rewrite.Revert{Kind: revert.NoTest, Test: name, Detail: name + " did not run" + exampleNote(name)}, nil
	}
	return &rewrite.Revert{Kind: revert.FlakyBefore, Test: why.Test, Detail: again.Detail}, nil
}

// notRun reports whether a process did not run the top-level test name
// at all: it neither passed, failed nor skipped.
func notRun(o *outcome, name string) bool {
	_, skips := o.skipped[name]
	return o.passed[name] == 0 && !skips && (o.test == "" || topLevel(o.test) != name) && !o.failed
}

// exampleNote explains why an example may not run.
func exampleNote(name string) string {
	if strings.HasPrefix(name, "Example") {
		return " (an example runs only when it has an output comment)"
	}
	return ""
}

// bubbleExited is the panic of a synctest bubble whose test function
// returned (or called runtime.Goexit, as t.Fatal does) while goroutines
// of the bubble remain blocked.
const bubbleExited = "main bubble goroutine has exited but blocked goroutines remain"

// failure says why a process of count runs of the top-level test name
// (or, with name "", of the whole binary) failed, compared with the run
// before the rewrite, or returns nil.
func failure(o *outcome, name string, count int, before *outcome) *rewrite.Revert {
	test := name
	if o.test != "" {
		test = topLevel(o.test)
	}
	switch {
	case o.hung:
		return &rewrite.Revert{Kind: revert.Hangs, Test: test, Detail: fmt.Sprintf("%s (it took %.2fs before the rewrite)", o.reason(), before.mean().Seconds())}
	case o.panic != "" && o.detail != "" && strings.Contains(o.panic, bubbleExited):
		// The test failed at a check first: its Fatal (a require's
		// FailNow) ended the bubble's main goroutine before the calls
		// that stop the code's goroutines, which the bubble then finds
		// blocked. That is a failure at the check, with its message,
		// not a crash in place of one (sourcegraph/conc's error pool).
		return &rewrite.Revert{Kind: revert.FailsAfter, Test: test, Detail: o.detail + " (then the bubble panicked: goroutines the test did not get to stop remain blocked)"}
	case o.panic != "":
		return &rewrite.Revert{Kind: revert.Panics, Test: test, Detail: o.reason()}
	case o.failed:
		return &rewrite.Revert{Kind: revert.FailsAfter, Test: test, Detail: o.reason()}
	}
	// The tests and subtests that passed before must pass after, every
	// time.
	var lost []string
	for p := range before.passed {
		if o.passed[p] < count {
			lost = append(lost, p)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	sort.Strings(lost)
	p := lost[0]
	if msg, ok := o.skipped[p]; ok {
		return &rewrite.Revert{Kind: revert.Vanished, Test: topLevel(p), Detail: p + " skips (" + msg + ")"}
	}
	return &rewrite.Revert{Kind: revert.Vanished, Test: topLevel(p), Detail: p + " passed before the rewrite and did not run after it" + exampleNote(p)}
}

// packageRun runs the package's whole test binary once after the rewrite
// (with no other test process when alone) and says which test that
// passed before (in the same run before the rewrite) does not now. The
// run before is made only when the run after fails: a suite that passes
// after the rewrite lost nothing, and one run of the suite is the cost
// verification is measured against.
func (v *verifier) packageRun(dir string, b *beforeRuns, bins binaries, alone bool) (*rewrite.Revert, error) {
	b.mu.Lock()
	before := b.whole
	b.mu.Unlock()
	timeout := v.opts.Timeout
	if before != nil {
		// A whole suite under load may take longer than one test's limit.
		timeout = max(timeout, 2*before.wall+time.Minute)
	}
	// The affected tests, whose time before is known, are stopped as
	// hung at their own limit here too.
	limits := map[string]time.Duration{}
	b.mu.Lock()
	for n, o := range b.tests {
		if passes(o, n) {
			limits[n] = hangAfter(o.mean(), false)
		}
	}
	b.mu.Unlock()
	runAfter := func() (*outcome, error) {
		return v.r.exec(v.r.ctx, dir, job{bin: bins.plain, count: 1, timeout: timeout, src: bins.src, alone: alone, limits: limits})
	}
	after, err := runAfter()
	if err != nil {
		return nil, err
	}
	if before == nil {
		if after.pkgPassed && !after.failed {
			return nil, nil
		}
		if before, err = v.r.exec(v.r.ctx, dir, job{bin: b.bin, count: 1, timeout: v.opts.Timeout}); err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.whole = before
		b.mu.Unlock()
		if longer := 2*before.wall + time.Minute; after.hung && longer > timeout {
			// It may have needed longer than one test's limit.
			timeout = longer
			if after, err = runAfter(); err != nil {
				return nil, err
			}
		}
	}
	// Only tests that passed before count: a suite may have failures of
	// its own.
	var broken []string
	for p := range before.passed {
		if after.passed[p] == 0 {
			broken = append(broken, p)
		}
	}
	if len(broken) == 0 {
		return nil, nil
	}
	sort.Strings(broken)
	// Name the first test that failed, when it is one that passed before.
	p := broken[0]
	if after.test != "" && before.passed[after.test] > 0 {
		p = after.test
	}
	detail := p + " passed before the rewrite and did not pass after it"
	if msg, ok := after.skipped[p]; ok {
		detail = p + " skips (" + msg + ")"
	}
	if p == after.test || after.panic != "" {
		detail = after.reason()
	}
	return &rewrite.Revert{Kind: revert.PackageRun, Test: topLevel(p), Detail: detail}, nil
}

// suspended holds a fix back while bisecting; it is never reported.
var suspended = &rewrite.Revert{Kind: revert.Companion, Detail: "held back while bisecting"}

// bisect finds the fix among sites (in source order) whose addition makes
// fails report a failure: it builds the package with only the first k
// fixes, for k found by binary search, knowing that all of them fail
// (with why) and none of them passed before. It returns the index of the
// fix and the failure it causes.
func (v *verifier) bisect(cfg *rewrite.Config, decide func(rewrite.Site) rewrite.Decision, w *pkgWork, sites []rewrite.Site, why *rewrite.Revert, fails func(binaries) (*rewrite.Revert, error)) (int, *rewrite.Revert, error) {
	lo, hi := 0, len(sites) // fails with sites[:hi], not with sites[:lo]
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		bins, broken, err := v.variant(cfg, decide, w, sites[mid:])
		if err != nil {
			return 0, nil, err
		}
		var got *rewrite.Revert
		if broken != "" {
			got = &rewrite.Revert{Kind: revert.BuildAfter, Detail: "the tests do not build after the rewrite: " + broken}
		} else if got, err = fails(bins); err != nil {
			return 0, nil, err
		}
		if got != nil {
			hi, why = mid, got
		} else {
			lo = mid
		}
	}
	return hi - 1, why, nil
}

// variant rewrites and builds the package without the fixes hold.
func (v *verifier) variant(cfg *rewrite.Config, decide func(rewrite.Site) rewrite.Decision, w *pkgWork, hold []rewrite.Site) (binaries, string, error) {
	skip := map[string]bool{}
	for _, s := range hold {
		skip[s.Key] = true
	}
	c := *cfg
	c.Patterns = []string{w.dir}
	c.Progress = nil
	only := cfg.Only
	c.Only = func(path string) bool { return filepath.Dir(path) == w.dir && (only == nil || only(path)) }
	c.Decide = func(s rewrite.Site) rewrite.Decision {
		if skip[s.Key] {
			return rewrite.Decision{Revert: suspended}
		}
		return decide(s)
	}
	res, err := rewrite.RunContext(v.r.ctx, &c)
	if err != nil {
		return binaries{}, "", fmt.Errorf("bisecting the fixes of %s: %w", w.dir, err)
	}
	var changes, mod []rewrite.Change
	md := moduleDir(w.dir)
	for _, ch := range res.Changes {
		switch {
		case modedit.IsModFile(ch.Path) && filepath.Dir(ch.Path) == md:
			mod = append(mod, ch)
		case filepath.Dir(ch.Path) == w.dir:
			changes = append(changes, ch)
		}
	}
	return v.r.buildSet(v.tempDir(), w.dir, changes, mod)
}
