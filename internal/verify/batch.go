package verify

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// The affected tests of a package run together: one process runs all of
// them (-test.run with one pattern for their names) before the rewrite,
// and each run after it runs all of them again, so that a package with
// twenty affected tests costs the processes of one, not twenty. A
// failure in such a run names the test that failed, when it can: that
// test's failure is settled as if it had run alone (settle, confirm: a
// failure is the fix's only when it repeats alone, and not before the
// rewrite), and the others run together again. A failure that names no
// test (the binary exited, hung, or lost a test to another's crash)
// splits the tests in halves, down to one; a hang (the process's whole
// limit spent) sends them to run alone, at once. A test that cannot share a
// process (a benchmark, one that failed or did not run in the shared
// run before the rewrite) runs alone, as every test did before.

// A failedRun is a run beside other tests that failed, narrowed to the
// test it names: testRun settles it instead of stressing the test again.
type failedRun struct {
	why  *rewrite.Revert
	job  job // the process that failed, its pattern narrowed to the test
	runs int // the test's runs in the shared processes
}

// anchoredAll is the -test.run pattern of several top-level tests.
func anchoredAll(names []string) string {
	if len(names) == 1 {
		return anchored(names[0])
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// only is the part of o that is the top-level test name's: its passes,
// skips and time, as if it had run alone and passed.
func (o *outcome) only(name string) *outcome {
	n := &outcome{passed: map[string]int{}, skipped: map[string]string{}, each: map[string]time.Duration{}, pkgPassed: true}
	for p, c := range o.passed {
		if topLevel(p) == name {
			n.passed[p] = c
		}
	}
	for p, m := range o.skipped {
		if topLevel(p) == name {
			n.skipped[p] = m
		}
	}
	n.tops, n.elapsed = o.passed[name], o.each[name]
	n.each[name], n.wall = n.elapsed, n.elapsed
	return n
}

// merged is the outcome of tests run together before the rewrite, made
// of each one's own: what must pass after it.
func merged(befores map[string]*outcome) *outcome {
	m := &outcome{passed: map[string]int{}, skipped: map[string]string{}, each: map[string]time.Duration{}}
	for name, b := range befores {
		for p, c := range b.passed {
			m.passed[p] = c
		}
		m.elapsed += b.elapsed
		m.tops += b.tops
		m.each[name] = b.mean()
	}
	return m
}

// passes reports whether a test's run before the rewrite passed: the
// only tests verification can run.
func passes(before *outcome, name string) bool {
	_, skips := before.skipped[name]
	return !before.failed && !skips && before.passed[name] > 0
}

// testRuns verifies the affected tests of a package (sorted): those that
// can share a process together, the others alone.
func (v *verifier) testRuns(dir string, b *beforeRuns, bins binaries, names []string, probing bool) ([]TestRun, error) {
	if err := v.beforeTogether(dir, b, names); err != nil {
		return nil, err
	}
	var shared, solo []string
	b.mu.Lock()
	for _, n := range names {
		if before, ok := b.tests[n]; ok && !isBench(n) && passes(before, n) && !b.solo[n] {
			shared = append(shared, n)
		} else {
			solo = append(solo, n)
		}
	}
	b.mu.Unlock()
	runs := make([]TestRun, 0, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	add := func(rs []TestRun, err error) {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, rs...)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, n := range solo {
		wg.Go(func() {
			r, err := v.testRun(dir, b, bins, n, probing, nil)
			add([]TestRun{r}, err)
		})
	}
	if len(shared) > 0 {
		wg.Go(func() { add(v.together(dir, b, bins, shared, probing)) })
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Name < runs[j].Name })
	return runs, nil
}

// beforeTogether runs the package's affected tests that have no run
// before the rewrite yet in one process, and keeps the run of each that
// passed or skipped in it. A test that failed in it, or did not run (a
// crash of another stopped the binary), is marked solo: it runs alone
// before the rewrite (testRun) and after it.
func (v *verifier) beforeTogether(dir string, b *beforeRuns, names []string) error {
	var todo []string
	b.mu.Lock()
	for _, n := range names {
		if _, ok := b.tests[n]; !ok && !isBench(n) && !b.solo[n] {
			todo = append(todo, n)
		}
	}
	b.mu.Unlock()
	if len(todo) < 2 {
		return nil // testRun runs it alone
	}
	// The tests' own limit, shared: a batch that outlives it leaves the
	// tests it did not reach to run alone.
	o, err := v.r.exec(v.r.ctx, dir, job{bin: b.bin, run: anchoredAll(todo), count: 1, timeout: v.opts.Timeout})
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wall += o.wall
	failed := ""
	if o.test != "" {
		failed = topLevel(o.test)
	}
	for _, n := range todo {
		_, skips := o.skipped[n]
		switch {
		case n != failed && (o.passed[n] > 0 || skips):
			b.tests[n] = o.only(n)
		default:
			b.solo[n] = true
		}
	}
	return nil
}

// together verifies tests that passed before the rewrite, run together
// after it. When every run passes, each test is kept. When a run fails
// naming one of them, that one's failure is settled (testRun) and the
// others run together again; when it names none, the halves run apart.
func (v *verifier) together(dir string, b *beforeRuns, bins binaries, names []string, probing bool) ([]TestRun, error) {
	if len(names) == 1 {
		r, err := v.testRun(dir, b, bins, names[0], probing, nil)
		return []TestRun{r}, err
	}
	befores := map[string]*outcome{}
	b.mu.Lock()
	for _, n := range names {
		befores[n] = b.tests[n]
	}
	b.mu.Unlock()
	st, err := v.stress(dir, bins, names, befores)
	if err != nil {
		return nil, err
	}
	if st.why == nil {
		runs := make([]TestRun, len(names))
		for i, n := range names {
			runs[i] = TestRun{Dir: dir, Name: n, Kept: true, Before: befores[n].mean(), After: st.after[n], Runs: st.runs[n]}
		}
		return runs, nil
	}
	if st.why.Kind == revert.Hangs {
		// A hang costs its process's whole limit, which grows with the
		// tests it runs, and splitting would pay it again: the tests run
		// alone now, at once, as they would without sharing.
		return v.apart(dir, b, bins, names, probing, st)
	}
	groups := split(names, st.why.Test)
	if len(groups) == 1 { // the failure names one test
		suspect := groups[0][0]
		j := *st.failed
		j.name, j.run, j.bench, j.tests = suspect, anchored(suspect), false, []string{suspect}
		why := *st.why
		from := &failedRun{why: &why, job: j, runs: st.runs[suspect]}
		rest := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == suspect })
		var (
			r       TestRun
			rerr    error
			wg      sync.WaitGroup
			runs    []TestRun
			restErr error
		)
		wg.Go(func() { r, rerr = v.testRun(dir, b, bins, suspect, probing, from) })
		runs, restErr = v.together(dir, b, bins, rest, probing)
		wg.Wait()
		if rerr != nil {
			return nil, rerr
		}
		if restErr != nil {
			return nil, restErr
		}
		return append(runs, r), nil
	}
	var wg sync.WaitGroup
	runs := make([][]TestRun, len(groups))
	errs := make([]error, len(groups))
	for i, g := range groups {
		wg.Go(func() { runs[i], errs[i] = v.together(dir, b, bins, g, probing) })
	}
	wg.Wait()
	var out []TestRun
	for i := range groups {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, runs[i]...)
	}
	return out, nil
}

// apart verifies tests alone, at once, after their shared run st
// failed: the test the failure names settles that failure.
func (v *verifier) apart(dir string, b *beforeRuns, bins binaries, names []string, probing bool, st stressRun) ([]TestRun, error) {
	runs := make([]TestRun, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		var from *failedRun
		if n == st.why.Test {
			j := *st.failed
			j.name, j.run, j.bench, j.tests = n, anchored(n), false, []string{n}
			why := *st.why
			from = &failedRun{why: &why, job: j, runs: st.runs[n]}
		}
		wg.Go(func() { runs[i], errs[i] = v.testRun(dir, b, bins, n, probing, from) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// split divides tests that failed together: the one the failure names
// alone, when it is one of them; else the two halves.
func split(names []string, failed string) [][]string {
	if failed != "" && slices.Contains(names, failed) {
		return [][]string{{failed}}
	}
	h := len(names) / 2
	return [][]string{names[:h], names[h:]}
}

// A stressRun is what the runs of tests after the rewrite found.
type stressRun struct {
	after  map[string]time.Duration // test → the mean time of its runs
	runs   map[string]int           // test → its runs
	why    *rewrite.Revert          // why a run failed, or nil
	failed *job                     // the process that failed
}

// stressed is stress for one test: its mean time after the rewrite and
// its runs, or why a run failed and which.
func (v *verifier) stressed(dir string, bins binaries, name string, before *outcome) (time.Duration, int, *rewrite.Revert, *job, error) {
	st, err := v.stress(dir, bins, []string{name}, map[string]*outcome{name: before})
	if err != nil {
		return 0, 0, nil, nil, err
	}
	return st.after[name], st.runs[name], st.why, st.failed, nil
}

// stress runs tests opts.Count times each after the rewrite, together in
// each process: first once at GOMAXPROCS=1, alone, which times each
// rewritten test; then once under the race detector (when there is one)
// and the rest in processes of their own, opts.Procs at once, so that
// together they oversubscribe the CPUs. Each process runs each test once,
// as go test does: a test that keeps state in package variables may fail
// its second run in one process (and an example runs once whatever
// -test.count says), which says nothing of a fix.
// A rewrite usually makes a test cheap (virtual time); when it did not,
// its runs after the first are cut to what fits in five times the test's
// time before (two at least), so that verifying costs a multiple of the
// tests' own time, not Count times it: the tests cut alike run in
// processes of their own. The first failure stops the other processes:
// a fix refuted once needs no more runs.
func (v *verifier) stress(dir string, bins binaries, names []string, befores map[string]*outcome) (stressRun, error) {
	st := stressRun{after: map[string]time.Duration{}, runs: map[string]int{}}
	base := job{bin: bins.plain, run: anchoredAll(names), src: bins.src, tests: names}
	if len(names) == 1 {
		base.name, base.bench = names[0], isBench(names[0])
	}
	check := func(o *outcome, j job) *rewrite.Revert {
		set := map[string]*outcome{}
		for _, n := range j.tests {
			set[n] = befores[n]
		}
		return failure(o, j.name, j.count, merged(set))
	}
	first := base
	first.count, first.procs1 = 1, true
	v.limit(&first, befores)
	outs, why, failed, err := v.runJobs(dir, []job{first}, check)
	if err != nil {
		return st, err
	}
	for _, n := range names {
		st.runs[n] = 1
	}
	if why != nil {
		st.why, st.failed = why, failed
		return st, nil
	}
	// The tests cut to the same number of runs share their processes.
	cut := map[int][]string{}
	for _, n := range names {
		a := outs[0].mean()
		if len(names) > 1 {
			a = 0
			if c := outs[0].passed[n]; c > 0 {
				a = outs[0].each[n] / time.Duration(c)
			}
		}
		k := v.fit(befores[n].mean(), a)
		cut[k] = append(cut[k], n)
	}
	var counts []int
	for k := range cut {
		counts = append(counts, k)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	var jobs []job
	for _, k := range counts {
		group := cut[k]
		sub := base
		sub.run, sub.tests = anchoredAll(group), group
		set := map[string]*outcome{}
		for _, n := range group {
			set[n] = befores[n]
			st.runs[n] += k
		}
		n := k
		if bins.race != nil && n > 0 {
			path, broken, err := bins.racePath()
			if err != nil {
				return st, err
			}
			if broken != "" {
				st.why, st.failed = buildAfter(broken), &first
				return st, nil
			}
			r := sub
			r.bin, r.count, r.race = path, 1, true
			v.limit(&r, set)
			jobs = append(jobs, r)
			n--
		}
		for range n {
			j := sub
			j.count = 1
			v.limit(&j, set)
			jobs = append(jobs, j)
		}
	}
	more, why, failed, err := v.runJobs(dir, jobs, check)
	if err != nil {
		return st, err
	}
	if why != nil {
		st.why, st.failed = why, failed
		return st, nil
	}
	// Have: every run passed. Each test's mean time over them.
	total := map[string]time.Duration{}
	count := map[string]int{}
	for _, o := range append(outs, more...) {
		for _, n := range names {
			if len(names) == 1 {
				total[n] += o.elapsed
				count[n] += o.tops
				continue
			}
			total[n] += o.each[n]
			count[n] += o.passed[n]
		}
	}
	for _, n := range names {
		if count[n] > 0 {
			st.after[n] = total[n] / time.Duration(count[n])
		}
	}
	return st, nil
}

// limit sets a job's time limits from the measured time of one run of
// each of its tests before the rewrite (befores): a rewritten test still
// running at hangAfter of its own time is a hang, and its process is
// stopped then (job.limits, watched by exec), so a rewrite that hangs
// costs a few times the test's own time in every form and round it is
// tried, not the limit of a whole batch. The process's -test.timeout is
// the sum of its tests' limits, at most Options.Timeout for each test it
// runs.
func (v *verifier) limit(j *job, befores map[string]*outcome) {
	names := j.tests
	if len(names) == 0 && j.name != "" {
		names = []string{j.name}
	}
	count := time.Duration(max(j.count, 1))
	j.limits = map[string]time.Duration{}
	var total time.Duration
	for _, n := range names {
		var mean time.Duration
		if b := befores[n]; b != nil {
			mean = b.mean()
		}
		j.limits[n] = hangAfter(mean, j.race)
		total += mean
	}
	j.timeout = min(v.opts.Timeout*time.Duration(max(len(names), 1)), hangAfter(count*total, j.race))
}

// hangAfter is how long runs that took total before the rewrite may take
// after it before they count as hung: four times their time (ten under
// the race detector, which slows code 2–20 times), and at least their
// time plus 5s and 10s in all, so that a process's start, a loaded
// machine's scheduling and a deterministic rewrite that is a little
// slower are not taken for hangs.
func hangAfter(total time.Duration, race bool) time.Duration {
	factor := time.Duration(4)
	if race {
		factor = 10
	}
	return max(factor*total, total+5*time.Second, 10*time.Second)
}

// fit is the number of runs after the first: opts.Count-1, cut to what
// fits in five times the test's time before (mean) when a run takes a
// (two at least).
func (v *verifier) fit(mean, a time.Duration) int {
	n := v.opts.Count - 1
	if a > 0 {
		if fit := int((5*mean + 2*time.Second) / a); fit < n {
			n = max(fit, 2)
		}
	}
	return n
}

// runJobs runs jobs at once and returns their outcomes, or why one
// failed (check says) and which: the first failure stops the others.
func (v *verifier) runJobs(dir string, jobs []job, check func(*outcome, job) *rewrite.Revert) ([]*outcome, *rewrite.Revert, *job, error) {
	ctx, cancel := context.WithCancel(v.r.ctx)
	defer cancel()
	outs := make([]*outcome, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			o, err := v.r.exec(ctx, dir, j)
			outs[i], errs[i] = o, err
			if err == nil && check(o, j) != nil {
				cancel() // one failure decides
			}
		})
	}
	wg.Wait()
	if err := v.r.ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	for i, o := range outs {
		if o == nil {
			continue // stopped after another run failed
		}
		if why := check(o, jobs[i]); why != nil {
			if jobs[i].race {
				why.Detail += " (in the run under -race)"
			}
			return nil, why, &jobs[i], nil
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return outs, nil, nil, nil
}
