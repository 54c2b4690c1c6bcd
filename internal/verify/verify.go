// Package verify runs the tests a rewrite touches, before and after it,
// and keeps a fix only if its tests pass every time after it. It sits
// above the engine (package rewrite) and talks to it through one hook,
// rewrite.Config.Decide; the engine never runs a test.
//
// The working tree is never touched: each package's test binary is built
// once as it is on disk and once with `go test -overlay` holding the
// rewritten files (the -race variant when a run first needs it), and the
// binaries run directly, reused by every run. The tests of every fix
// the rewrite keeps run, proven or not (rule.Fix.Hypothesis), and so do
// those of further forms and probes: a proof reasons about the test and
// can miss what the code does, so running decides, and a proven fix a
// test fails after is reverted as an unproven one is. Before the
// rewrite the affected
// top-level tests of a package run once, together, to confirm they pass
// and to time them. After it, they run Options.Count times, together
// in each process and once in each (as go test runs them: a test that
// keeps state in package variables fails a second run in one process),
// in parallel processes that together oversubscribe the CPUs (a loaded
// CI runner is where flakes come from), with at least one run at
// GOMAXPROCS=1 and one under the race detector where the platform has
// one; a test the rewrite did not make faster runs only as often as fits
// in five times its time before, so verifying costs a multiple of the
// tests' own time. A rewritten test still running at a few times its own
// time before has hung, and its process is stopped then (watch.go).
// Benchmarks never run. Each test process gets a temporary directory of
// its own, removed when it ends or is killed. The first failure stops the
// other processes; a failure that names a test settles that test alone
// while the others run together again, and one that names none (a test
// that leaks a goroutine from a testing/synctest bubble kills its whole
// binary) splits the tests in halves (batch.go). Results are read
// from test2json events: a test that skips is not verified, and the tests
// and subtests that pass after the rewrite must include those that passed
// before. A run that fails is blamed on the fix only if the failure
// repeats when the test runs alone (no other process of its package:
// tests that bind a fixed port or path clash with their own parallel
// runs) and not alone before the rewrite, and does not name a resource
// clash (settle, in pkg.go). When a test with several fixes fails, the fixes are bisected
// and only the one that fails it is reverted. Last, each package's whole
// test binary runs once with every kept fix, to catch fixes that break
// another test. As each package's verification ends, its fixes
// are reported kept or reverted (Options.Decided, decided.go); when ctx
// ends, Run returns what the packages verified so far keep.
//
// A fix with a probe (rule.Hypothesis.Probe: the wait it replaces removed, with
// nothing in its place) goes through a probe phase first: the engine
// applies the probes instead of the fixes (rewrite.Decision.Probe), and
// they are verified the same way, with the same runs before. A probe
// that makes a test fail (panic, hang, lose a subtest, fail the package's
// whole run) in any run shows that the checks after the wait wait for a
// change: its fix is then tried as usual. A probe whose tests pass every
// run shows that they hold without waiting (the wait may guard a check
// that nothing happens, which a poll would pass at once), and its fix is
// held back with the rule's Hypothesis.ProbeHolds and the evidence
// (revert.HoldsWithout); so is one whose probe could tell nothing (it
// does not build, its test fails or skips before: revert.ProbeUntold).
// Several probes in one test are bisected as fixes are, one round each.
// Verification.Probed lists the outcomes.
package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unflake/unflake/internal/modedit"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// Options say how to run the affected tests.
type Options struct {
	// Count is the number of runs of each test after the rewrite; 0
	// means 20. Before it, a test runs once.
	Count int
	// Timeout is the most one run of a test may take (the -test.timeout
	// of a process before the rewrite, for each test it runs); 0 means
	// 5m. After the rewrite a test is stopped as hung much sooner, at a
	// few times its own time before (hangAfter, in batch.go).
	Timeout time.Duration
	// Procs is the number of test processes run at once; 0 means twice
	// GOMAXPROCS.
	Procs int

	// NoMutants turns off the strength check of the fixes (mutate.go):
	// they are then kept when their tests pass.
	NoMutants bool

	// RecordIgnores writes, at the site of each fix a test failed
	// after, a generated //unflake:ignore directive into the
	// changes (record.go). Without it the changes hold fixes only.
	RecordIgnores bool

	// Memory is the directory where verification remembers the fixes a
	// test failed after, so that a later run holds them back
	// without running anything (memory.go); "" remembers nothing.
	Memory string

	// TempDir is where the temporary directory of the builds goes; ""
	// means os.TempDir(). It is removed when Run returns, ctx ended or
	// not.
	TempDir string

	// Progress, if set, is called after each test process ends and each
	// package is verified, one call at a time.
	Progress func(Progress)

	// Decided, if set, is called as each fix is decided, kept or
	// reverted, one call at a time (decided.go).
	Decided func(Decided)
}

// DefaultCount is the default number of runs of a test after a rewrite.
const DefaultCount = 20

func (o Options) withDefaults() Options {
	if o.Count <= 0 {
		o.Count = DefaultCount
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Procs <= 0 {
		o.Procs = 2 * runtime.GOMAXPROCS(0)
	}
	return o
}

// A Verification is what running the affected tests found.
type Verification struct {
	Tests    []TestRun // each affected test, sorted by directory and name
	Reverts  []Held    // fixes taken back, in the order decided
	Retried  []Held    // forms of fixes a test failed after, whose next form was tried
	Rounds   int       // verification rounds run
	Gains    []Gain    // what companion rules made possible, by package
	Recorded int       // reverted fixes recorded at their site (//unflake:ignore, Options.RecordIgnores)
	// Remembered counts the fixes held back because an earlier run
	// reverted them (Options.Memory): they were not tried again.
	Remembered int
	NoRace     string // why no run used the race detector, when none did

	// Probed are the outcomes of the fixes' probes (rule.Hypothesis.Probe), in
	// the order decided, and ProbeRounds the probe phase's rounds (not
	// counted in Rounds).
	Probed      []Probe
	ProbeRounds int

	// Mutants counts what the strength check of the fixes (mutate.go)
	// ran.
	Mutants MutantCount

	// Proven counts the proven fixes kept (rule.Fix.Hypothesis is nil):
	// their tests ran and passed as every fix's do.
	Proven int

	// Stopped is set when ctx ended before verification did: the result
	// then holds the fixes of the packages verified so far, and the
	// others are held back as revert.Stopped.
	Stopped bool

	// Elapsed is the time verification took, and Suite the time of one
	// run of the affected tests before the rewrite (the processes that
	// ran them, measured): what verification costs beside the tests.
	Elapsed, Suite time.Duration
}

// A Held is a fix verification took back, and why.
type Held struct {
	Site    rewrite.Site
	Why     *rewrite.Revert
	Variant int // the form of the fix that failed (rule.Hypothesis.Alternatives)
}

// A Gain is what a rule's companions made possible in one package: fixes
// of Rule that failed alone and passed with the companions' fixes.
type Gain struct {
	Dir        string
	Rule       string
	Companions []string
	Fixes      int // Rule's fixes kept with the companions
	Tests      int // tests retried
}

// A TestRun is the verification of one top-level test (or benchmark, fuzz
// target, example) of the package in Dir.
type TestRun struct {
	Dir  string
	Name string
	// Kept is set when the test passed before the rewrite and every run
	// after it; otherwise Why says why not.
	Kept          bool
	Why           *rewrite.Revert
	Before, After time.Duration // mean time of one run (After only when measured)
	Runs          int           // runs after the rewrite
	// Alone, when set, is a failure of a run beside other test processes
	// that did not repeat when the test ran alone; its remaining runs
	// were then made alone, one after another (settle, in pkg.go).
	Alone string

	repro *job // the run that made the failure after the rewrite repeat alone
}

// maxRounds bounds Run: each round reverts what failed and verifies again
// the packages whose rewrite changed. A fix with further forms
// (rule.Hypothesis.Alternatives) adds a round for each: a form is tried only
// after the one before it failed. In the probe phase, which bounds its
// rounds alike, a test with several probes adds a round for each: a
// round takes back one probe that fails the test.
const maxRounds = 4

// Run runs cfg with the fixes the rules could not prove, verifies the
// result, and runs again without the fixes whose tests failed, until a
// verification reverts nothing (at most maxRounds verifications; only
// packages whose rewrite changed are verified again). It sets cfg.Decide.
// Fixed findings whose tests passed carry Verified, BeforeMs and AfterMs;
// the fixes held back are not fixed and carry the Revert.
//
// When a rule's fix is taken back in a test and one of the rule's
// Companions did not run, the affected packages are verified once more
// with the companions added, their fixes limited to those tests; the
// Verification's Gains count what that made possible.
//
// A fix with a probe (rule.Hypothesis.Probe) is first probed (probe.go): the
// first engine run that applies such a fix not yet probed runs the probe
// phase, and the fixes it holds back stay held in every later run, the
// companions' included; the Verification's Probed lists the outcomes.
// Without such fixes the probe phase costs nothing.
//
// A fix reverted because a test failed after it is remembered
// outside the source (Options.Memory, memory.go), so that a later run
// holds it back without trying it; with Options.RecordIgnores it is also
// recorded at its site, in the changes, as a generated //unflake:ignore
// directive (record.go). The changes otherwise hold fixes only.
//
// Run returns ctx.Err() when ctx ends; every process it started is
// killed and its temporary files are removed first.
func Run(ctx context.Context, cfg *rewrite.Config, opts Options) (*rewrite.Result, *Verification, error) {
	opts = opts.withDefaults()
	start := time.Now()
	tmp, err := os.MkdirTemp(opts.TempDir, "unflake-verify-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	gotmp := filepath.Join(tmp, "go")
	if err := os.Mkdir(gotmp, 0o755); err != nil {
		return nil, nil, err
	}
	r := &runner{ctx: ctx, dir: cfg.Dir, env: cfg.Env, tmp: gotmp, tags: cfg.Tags,
		sem: make(chan struct{}, opts.Procs), bsem: make(chan struct{}, runtime.GOMAXPROCS(0)),
		track: newTracker(opts.Progress, time.Now)}
	if err := r.tools(); err != nil {
		return nil, nil, err
	}
	v := &verifier{r: r, opts: opts, tmp: tmp, before: map[string]*beforeRuns{}, tried: map[string]bool{},
		mem: memory(opts.Memory), recalled: map[string]*rewrite.Revert{},
		clean: map[string]string{}, latest: map[string][]TestRun{}, roundHeld: map[string]*rewrite.Revert{}, told: map[string]bool{},
		probes: map[string]Probe{}, probeHeld: map[string]*rewrite.Revert{}}
	res, out, err := v.run(cfg, nil, mainPhase)
	if err == nil && cfg.Lookup != nil {
		res2, out2, err2 := v.retryWithCompanions(cfg, res, out)
		switch {
		case err2 == nil:
			res, out = res2, out2
		case ctx.Err() != nil:
			// Stopped while retrying: the first verification stands.
			err = ctx.Err()
		default:
			err = err2
		}
	}
	if ctx.Err() != nil && out != nil {
		out.Stopped = true
	}
	if res == nil || err != nil && ctx.Err() == nil {
		return nil, out, err
	}
	out.Probed, out.ProbeRounds = v.probed, v.probeRounds
	out.Mutants = v.mutantCount()
	if !r.race {
		out.NoRace = r.raceWhy
	}
	for _, f := range res.Findings {
		if toRemember(f, v.tried) {
			if f.Revert.Remembered != "" {
				out.Remembered++
			} else {
				v.mem.remember(f, time.Now())
			}
		}
	}
	if opts.RecordIgnores {
		out.Recorded = record(res, v.tried)
	}
	for _, f := range res.Findings {
		if f.Fixed && !f.Unproven {
			out.Proven++
		}
	}
	for _, b := range v.before {
		out.Suite += b.wall
	}
	out.Elapsed = time.Since(start)
	return res, out, err
}

// A verifier holds what does not change across rounds: the runner, and
// the builds and runs before the rewrite.
type verifier struct {
	r    *runner
	opts Options
	tmp  string

	mu     sync.Mutex
	before map[string]*beforeRuns // package directory → its runs before
	seq    int                    // numbers temporary directories

	// tried holds the site key of each fix applied in a round of the
	// main phase: only such a fix is remembered and recorded when a test
	// fails after it (record.go).
	tried map[string]bool

	// The probe phase's outcomes (probe.go), written only between engine
	// runs: site key → outcome, in the order decided, and the fixes it
	// holds back.
	probes      map[string]Probe
	probed      []Probe
	probeHeld   map[string]*rewrite.Revert
	probeRounds int

	strength *strength // the mutants' verdicts (mutate.go)

	// What the main phase decided, package by package (decided.go).
	clean     map[string]string          // package directory → the content verified with no fix held back
	latest    map[string][]TestRun       // package directory → its latest runs
	roundHeld map[string]*rewrite.Revert // site key → why it was held back, as packages end
	told      map[string]bool            // site key → kept, as last reported to Options.Decided

	mem      memory                     // reverts of earlier runs (memory.go)
	recalled map[string]*rewrite.Revert // site key → its remembered revert, or nil; under mu
}

// recall returns the revert an earlier run remembered for the site key,
// or nil; each key's file is read once.
func (v *verifier) recall(key string) *rewrite.Revert {
	if v.mem == "" {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	r, ok := v.recalled[key]
	if !ok {
		r = v.mem.recall(key, time.Now())
		v.recalled[key] = r
	}
	return r
}

// beforeRuns are a package's binary and runs before the rewrite: the
// working tree does not change between rounds, so neither do they.
type beforeRuns struct {
	once   sync.Once
	bin    string
	broken string // why it does not build

	raceOnce   sync.Once
	race       string // the -race build, made only to confirm a failure under -race
	raceBroken string

	mu    sync.Mutex
	tests map[string]*outcome
	solo  map[string]bool // tests that failed or did not run beside the others before the rewrite
	whole *outcome
	wall  time.Duration // of the processes that ran tests before the rewrite
}

func (b *beforeRuns) addWall(d time.Duration) {
	b.mu.Lock()
	b.wall += d
	b.mu.Unlock()
}

func (v *verifier) tempDir() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	return filepath.Join(v.tmp, strconv.Itoa(v.seq))
}

func (v *verifier) beforeOf(dir string) *beforeRuns {
	v.mu.Lock()
	defer v.mu.Unlock()
	b := v.before[dir]
	if b == nil {
		b = &beforeRuns{tests: map[string]*outcome{}, solo: map[string]bool{}}
		v.before[dir] = b
	}
	return b
}

// run is Run without companions and recording. pre, if set, is asked
// first whether to hold a fix back. In the main phase, a fix with a probe
// (rewrite.Finding.ProbeHolds) that was not probed yet sends verification
// through the probe phase first (probe.go), and the fixes it holds back
// stay held. In the probe phase (which never starts another), the engine
// applies the probes instead of the fixes, and a probe that fails a test
// is taken back as a fix would be, but no further form is tried: there,
// a failure is the outcome sought.
func (v *verifier) run(cfg *rewrite.Config, pre func(rewrite.Site) *rewrite.Revert, ph phase) (*rewrite.Result, *Verification, error) {
	held := map[string]*rewrite.Revert{} // site key → why
	form := map[string]int{}             // site key → the form of its fix to try next
	// early holds what decide held back unrun during an engine run
	// (rule.Unprovable); the engine may ask from several goroutines, and
	// the loop below records them in held once the run is over.
	var early struct {
		sync.Mutex
		held map[string]*rewrite.Revert
	}
	early.held = map[string]*rewrite.Revert{}
	decide := func(s rewrite.Site) rewrite.Decision {
		if r := v.recall(s.Key); r != nil {
			return rewrite.Decision{Revert: r}
		}
		if pre != nil {
			if r := pre(s); r != nil {
				return rewrite.Decision{Revert: r}
			}
		}
		if ph == probePhase {
			if _, ok := v.probes[s.Key]; ok {
				return rewrite.Decision{Revert: probedBefore}
			}
			return rewrite.Decision{Revert: held[s.Key], Probe: true}
		}
		if r := v.probeHeld[s.Key]; r != nil {
			return rewrite.Decision{Revert: r}
		}
		if r := held[s.Key]; r != nil || form[s.Key] > 0 || s.Unproven == "" || s.Fix == nil {
			return rewrite.Decision{Revert: r, Variant: form[s.Key]}
		}
		// A kind no run can show the strength of is held back here, in
		// the run that meets it, not applied and taken back by the next
		// one: on a scheduler's suite every sleep is a clock change, and
		// each run of the engine loads every package.
		if why := unprovableChanges(s.Fix.Changes); why != "" {
			r := &rewrite.Revert{Kind: revert.Unshown, Test: topLevel(s.Test), Detail: why, Unrun: true}
			early.Lock()
			early.held[s.Key] = r
			early.Unlock()
			return rewrite.Decision{Revert: r}
		}
		return rewrite.Decision{}
	}
	cfg.Decide = decide
	// Each further form of a fix may need a round of its own.
	limit := maxRounds

	out := &Verification{}
	verified := map[string]string{} // package directory → the content verified
	runs := map[string][]TestRun{}  // package directory → its latest test runs
	var res *rewrite.Result
	var applied map[string]rewrite.Finding // site key → its finding, fixed in this round
	// stopped is what verification learned when ctx ended: the packages
	// verified so far keep their fixes, the others are left as they were.
	stopped := func(err error) (*rewrite.Result, *Verification, error) {
		if v.r.ctx.Err() == nil || ph != mainPhase {
			return nil, nil, err
		}
		r, o := v.partial(res, out)
		return r, o, v.r.ctx.Err()
	}
	for {
		if err := v.r.ctx.Err(); err != nil {
			return stopped(err)
		}
		var err error
		res, err = rewrite.RunContext(v.r.ctx, cfg)
		if err != nil {
			res = nil // the run before it is not what the tree would get
			return stopped(err)
		}
		if ph == mainPhase {
			v.recordEarly(res, early.held, held, out)
			if v.holdUnprovable(res, held, out) {
				continue // again, without them
			}
			if fresh := v.unprobed(res); len(fresh) > 0 {
				if err := v.probe(cfg, pre, fresh); err != nil {
					return stopped(err)
				}
				continue // again, with the fixes the probes hold back
			}
			for _, f := range res.Findings {
				limit = max(limit, maxRounds+f.Variants-1)
				if f.Fixed {
					v.tried[f.Site().Key] = true
				}
			}
		} else {
			limit = max(limit, maxRounds+probesPerTest(res)-1)
		}
		if out.Rounds == limit {
			break // the last run only took fixes back
		}
		contents := dirContents(res.Changes)
		todo := &rewrite.Result{}
		pkgChanges := 0
		for _, c := range res.Changes {
			switch d := filepath.Dir(c.Path); {
			case modedit.IsModFile(c.Path):
				// Every package verified needs its module's new go.mod,
				// whether or not go.mod changed since the last round.
				todo.Changes = append(todo.Changes, c)
			case contents[d] != verified[d]:
				todo.Changes = append(todo.Changes, c)
				pkgChanges++
			}
		}
		if pkgChanges == 0 {
			break
		}
		todo.Findings = res.Findings
		applied = map[string]rewrite.Finding{}
		for _, f := range res.Findings {
			if f.Fixed {
				applied[f.Site().Key] = f
			}
		}
		var onPkg func(*pkgWork, []TestRun, []Held)
		if ph == mainPhase {
			onPkg = func(w *pkgWork, runs []TestRun, held []Held) { v.pkgDecided(w, runs, held, applied) }
		}
		tests, reverts, err := v.verify(cfg, decide, todo, onPkg)
		if err != nil {
			return stopped(err)
		}
		out.Rounds++
		for _, c := range todo.Changes {
			if !modedit.IsModFile(c.Path) {
				verified[filepath.Dir(c.Path)] = contents[filepath.Dir(c.Path)]
			}
		}
		byDir := map[string][]TestRun{}
		for _, r := range tests {
			byDir[r.Dir] = append(byDir[r.Dir], r)
		}
		for d, fresh := range byDir {
			// A test reverted in an earlier round is no longer affected:
			// keep its record.
			seen := map[string]bool{}
			for _, r := range fresh {
				seen[r.Name] = true
			}
			alone := map[string]string{} // a failure beside others, seen in an earlier round
			for _, r := range runs[d] {
				if !r.Kept && !seen[r.Name] {
					fresh = append(fresh, r)
				}
				alone[r.Name] = r.Alone
			}
			for i := range fresh {
				if fresh[i].Kept && fresh[i].Alone == "" {
					fresh[i].Alone = alone[fresh[i].Name]
				}
			}
			runs[d] = fresh
		}
		added := 0
		for _, h := range reverts {
			// The content of h's package was run and a test failed
			// with it: it is not verified. Fixes of other sites may
			// still write the very same content (several sleeps of a
			// test share one wrap of it), and the next round must run
			// it again rather than take it for verified.
			delete(verified, h.Site.Dir)
			key := h.Site.Key
			if held[key] != nil {
				continue
			}
			added++
			if f, ok := applied[key]; ok && h.Why.AfterRewrite() && ph == mainPhase {
				h.Variant = f.Variant
				if f.Variant+1 < f.Variants {
					// A test failed after this form: try the next one.
					form[key] = f.Variant + 1
					out.Retried = append(out.Retried, h)
					continue
				}
				if f.Variants > 1 {
					why := *h.Why // shared by the sites of a package held together
					why.Forms = f.Variants
					h.Why = &why
				}
			}
			held[key] = h.Why
			out.Reverts = append(out.Reverts, h)
		}
		if added == 0 {
			break
		}
	}

	// Have: the final result, and the runs of each package directory.
	// Runs count only for directories whose final content was verified;
	// the fixes of a directory whose last rewrite was not are held back.
	final := dirContents(res.Changes)
	outOf := outOfRounds(res.Findings, final, verified)
	for _, s := range outOf {
		held[s.Key] = &rewrite.Revert{Kind: revert.OutOfRounds,
			Detail: fmt.Sprintf("verification stopped after %d rounds, before it verified the last rewrite of this package", out.Rounds)}
	}
	if len(outOf) > 0 {
		next, err := rewrite.RunContext(v.r.ctx, cfg)
		if err != nil {
			return stopped(err)
		}
		res = next
		final = dirContents(res.Changes)
	}
	for d, rs := range runs {
		for _, r := range rs {
			switch {
			case r.Kept && final[d] == "":
				// Every fix of the package was taken back after these
				// runs (a strength not shown, a form that failed): they
				// passed, but what they verified is not kept, and the
				// test counts as reverted, not kept (x/sync's semaphore:
				// a helper's wrap run by eleven tests, then reverted).
				r.Kept, r.Why = false, revertOf(out.Reverts, d, r.Name)
				out.Tests = append(out.Tests, r)
			case !r.Kept || final[d] == verified[d]:
				out.Tests = append(out.Tests, r)
			case ph == mainPhase:
				// Not verified as it is now: counted so, not reverted.
				r.Kept, r.Why = false, &rewrite.Revert{Kind: revert.OutOfRounds, Test: r.Name,
					Detail: fmt.Sprintf("verification stopped after %d rounds, before it verified the last rewrite of this package", out.Rounds)}
				out.Tests = append(out.Tests, r)
			}
		}
	}
	sortRuns(out.Tests)
	for i := range res.Findings {
		f := &res.Findings[i]
		d := filepath.Dir(f.File)
		f.Mutants = v.mutantsOf(*f)
		if !f.Fixed || final[d] == "" || final[d] != verified[d] {
			continue
		}
		f.Verified, f.BeforeMs, f.AfterMs = covered(runs[d], topLevel(f.Test))
	}
	return res, out, nil
}

// revertOf returns why a fix of the package in dir was taken back,
// preferring one of test (top-level name), or a Revert saying so when
// none is recorded.
func revertOf(reverts []Held, dir, test string) *rewrite.Revert {
	var first *rewrite.Revert
	for _, h := range reverts {
		if h.Site.Dir != dir || h.Why == nil || !h.Why.AfterRewrite() {
			continue
		}
		if topLevel(h.Site.Test) == test {
			return h.Why
		}
		if first == nil {
			first = h.Why
		}
	}
	if first != nil {
		return first
	}
	return &rewrite.Revert{Kind: revert.Unshown, Test: test, Detail: "every fix of the package was taken back after its runs"}
}

// recordEarly records in held and out, in the findings' order, the fixes
// of res that decide held back unrun during the run (early, by site key).
func (v *verifier) recordEarly(res *rewrite.Result, early, held map[string]*rewrite.Revert, out *Verification) {
	for _, f := range res.Findings {
		s := f.Site()
		r := early[s.Key]
		if r == nil || held[s.Key] != nil {
			continue
		}
		held[s.Key] = r
		out.Reverts = append(out.Reverts, Held{Site: s, Why: r})
	}
}

// holdUnprovable holds back, before any run, the fixes of res that
// strength could never be shown for (unprovable), and reports whether it
// held any. decide holds most of them in the run that meets them
// (recordEarly); what is left here is a later form of a fix (decide
// judges the first form only) whose changes are of such a kind.
func (v *verifier) holdUnprovable(res *rewrite.Result, held map[string]*rewrite.Revert, out *Verification) bool {
	added := false
	for _, f := range res.Findings {
		why := unprovable(f)
		if why == "" || held[f.Site().Key] != nil {
			continue
		}
		h := Held{Site: f.Site(), Why: &rewrite.Revert{Kind: revert.Unshown, Test: topLevel(f.Test), Detail: why, Unrun: true}}
		held[h.Site.Key] = h.Why
		out.Reverts = append(out.Reverts, h)
		added = true
	}
	return added
}

// outOfRounds returns the sites of the fixes whose package's last
// rewrite (final, by directory) was not verified: the rounds ran out
// before it.
func outOfRounds(findings []rewrite.Finding, final, verified map[string]string) []rewrite.Site {
	var out []rewrite.Site
	for _, f := range findings {
		if d := filepath.Dir(f.File); f.Fixed && final[d] != verified[d] {
			out = append(out, f.Site())
		}
	}
	return out
}

func sortRuns(rs []TestRun) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Dir != b.Dir {
			return a.Dir < b.Dir
		}
		return a.Name < b.Name
	})
}

// covered reports whether the runs of a package verify a fix in test (a
// top-level test name, or a function outside tests, which every test of
// the package may call), and the measured times in milliseconds.
func covered(runs []TestRun, test string) (bool, int64, int64) {
	t := tally(runs, test)
	return t.verified, t.before.Milliseconds(), t.after.Milliseconds()
}

// A tallied is what the runs of a package say of a fix: whether they
// verify it, the fewest runs after the rewrite of a test that does, and
// the sum of those tests' mean times.
type tallied struct {
	verified      bool
	runs          int
	before, after time.Duration
}

// tally tallies the runs of a package (runs) that verify a fix in test:
// the top-level test's own, or, for a fix outside tests (test is then
// the enclosing function's name, or ""), every test's, since any test of
// the package may call a helper. A fix is verified only when every such
// run kept it, and at least one did.
//
// A helper's fix has no run of its own: no test is named after the
// helper, and looking one up by the helper's name counts 0 runs.
func tally(runs []TestRun, test string) tallied {
	var t tallied
	n := 0
	for _, r := range runs {
		if rewrite.IsTestName(test) && r.Name != test {
			continue
		}
		if !r.Kept {
			return tallied{}
		}
		if n == 0 || r.Runs < t.runs {
			t.runs = r.Runs
		}
		t.before += r.Before
		t.after += r.After
		n++
	}
	t.verified = n > 0
	return t
}

// RunsOf returns how many times the tests that verified the fixed
// finding f ran after the rewrite, the fewest among them: its top-level
// test's runs, or, for a fix in a helper outside tests, the fewest of
// any test of its package (each of which may call the helper). It is 0
// when the runs in v.Tests do not verify f.
func (v *Verification) RunsOf(f rewrite.Finding) int {
	return runsOf(v.Tests, filepath.Dir(f.File), topLevel(f.Test))
}

// dirContents keys the new contents of the changed files by directory;
// go.mod and go.sum belong to a module, not to the package in their
// directory, and are left out.
func dirContents(changes []rewrite.Change) map[string]string {
	m := map[string]string{}
	for _, c := range changes {
		if modedit.IsModFile(c.Path) {
			continue
		}
		d := filepath.Dir(c.Path)
		m[d] += c.Path + "\x00" + string(c.New) + "\x00"
	}
	return m
}

// topLevel returns the first element of a test path ("TestX/sub" → "TestX").
func topLevel(test string) string {
	top, _, _ := strings.Cut(test, "/")
	return top
}

// writeOverlay writes the new contents to tmp and the `go build -overlay`
// file that replaces the originals with them; it returns the latter's path.
func writeOverlay(tmp string, changes []rewrite.Change) (string, error) {
	replace := map[string]string{}
	for i, c := range changes {
		path := filepath.Join(tmp, strconv.Itoa(i)+"_"+filepath.Base(c.Path))
		if err := os.WriteFile(path, c.New, 0o644); err != nil {
			return "", err
		}
		replace[c.Path] = path
	}
	data, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	path := filepath.Join(tmp, "overlay.json")
	return path, os.WriteFile(path, data, 0o644)
}

// moduleDir returns the directory of the go.mod that governs dir (the
// nearest one above it), or "" if there is none.
func moduleDir(dir string) string {
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// writeModFile writes a module's changed go.mod, and its go.sum, to
// tmp/mod for `go build -modfile` (an overlay cannot replace go.mod), and
// returns its path, or "" when the module's go.mod does not change.
func writeModFile(tmp string, changes []rewrite.Change) (string, error) {
	var mod, sum *rewrite.Change
	for i, c := range changes {
		switch filepath.Base(c.Path) {
		case "go.mod":
			mod = &changes[i]
		case "go.sum":
			sum = &changes[i]
		}
	}
	if mod == nil {
		return "", nil
	}
	dir := filepath.Join(tmp, "mod")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	// -modfile reads the go.sum beside it: the new one, or the one on disk.
	var sumData []byte
	if sum != nil {
		sumData = sum.New
	} else if b, err := os.ReadFile(strings.TrimSuffix(mod.Path, ".mod") + ".sum"); err == nil {
		sumData = b
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	path := filepath.Join(dir, "go.mod")
	if err := os.WriteFile(path, mod.New, 0o644); err != nil {
		return "", err
	}
	if sumData != nil {
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), sumData, 0o644); err != nil {
			return "", err
		}
	}
	return path, nil
}
