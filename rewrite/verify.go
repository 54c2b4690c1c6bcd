package rewrite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Verification runs the tests a rewrite touches, before and after it,
// without touching the working tree: each package's test binary is built
// twice, once as it is on disk and once with `go test -overlay` holding the
// rewritten files, and each affected top-level test runs in a process of
// its own (a test that leaks a goroutine from a testing/synctest bubble
// kills its whole binary). A fix is kept only if its test passes every
// time, before and after.

// VerifyOptions say how to run the affected tests.
type VerifyOptions struct {
	Count   int           // runs of each test before and after the rewrite; 0 means 3
	Timeout time.Duration // -test.timeout of each run; 0 means 5m

	// Progress, if set, is called after each package is verified.
	Progress func(done, total int)

	before *runCache // runs before the rewrite, kept across RunVerified's rounds
}

// runCache holds the runs of tests before the rewrite, by package
// directory and test name: the working tree does not change between
// rounds, so neither do they.
type runCache struct {
	mu sync.Mutex
	m  map[[2]string]result
}

func (c *runCache) get(dir, name string) (result, bool) {
	if c == nil {
		return result{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[[2]string{dir, name}]
	return r, ok
}

func (c *runCache) put(dir, name string, r result) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[[2]string{dir, name}] = r
}

func (o VerifyOptions) withDefaults() VerifyOptions {
	if o.Count <= 0 {
		o.Count = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	return o
}

// A Verification is what running the affected tests found.
type Verification struct {
	Tests   []TestRun // each affected test, sorted by directory and name
	Reverts []Revert  // fixes to take back
	Rounds  int       // verification rounds run (RunVerified)
	Gains   []Gain    // what companion rules made possible, by package
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
	// Kept is set when the test passed every time before and after the
	// rewrite, so the fixes it covers are kept; otherwise Reason says why.
	Kept          bool
	Reason        string
	Before, After time.Duration // mean time of one run (After only when measured)
}

// A Revert takes back the fixes of Rule in the top-level test (or the
// function outside tests) named Test, as Config.Skip receives it.
type Revert struct {
	Dir        string // the package directory
	Rule, Test string
	Reason     string
}

// maxVerifyRounds bounds RunVerified: each round reverts what failed and
// verifies again the packages whose rewrite changed.
const maxVerifyRounds = 3

// RunVerified runs cfg with the fixes the rules could not prove
// (cfg.Speculative), verifies the result, and runs again without the
// fixes whose tests failed, until a verification reverts nothing (at most
// maxVerifyRounds verifications; only packages whose rewrite changed are
// verified again). It sets cfg.Speculative, cfg.Skip and cfg.SkipReason.
// Fixed findings whose tests passed carry Verified, BeforeMs and AfterMs;
// reverted ones are not fixed, with the reason "reverted: ...".
//
// When a rule's fix is taken back in a test and one of the rule's
// Companions did not run, the affected packages are verified once more
// with the companions added, their fixes limited to those tests; the
// Verification's Gains count what that made possible.
func RunVerified(cfg *Config, opts VerifyOptions) (*Result, *Verification, error) {
	res, v, err := runVerified(cfg, opts, nil)
	if err != nil || cfg.Lookup == nil {
		return res, v, err
	}
	return retryWithCompanions(cfg, opts, res, v)
}

// runVerified is RunVerified without companions. pre, if set, is asked
// before the reverts whether to leave a fix alone.
func runVerified(cfg *Config, opts VerifyOptions, pre func(dir, rule, test string) bool) (*Result, *Verification, error) {
	type key struct{ dir, rule, test string }
	reverts := map[key]string{}
	cfg.Speculative = true
	cfg.Skip = func(dir, rule, test string) bool {
		if pre != nil && pre(dir, rule, test) {
			return true
		}
		_, ok := reverts[key{dir, rule, topLevel(test)}]
		return ok
	}
	cfg.SkipReason = func(dir, rule, test string) string {
		if pre != nil && pre(dir, rule, test) {
			return "a companion fix, tried only where it may help another rule's fix"
		}
		return reverts[key{dir, rule, topLevel(test)}]
	}

	opts.before = &runCache{m: map[[2]string]result{}}
	out := &Verification{}
	verified := map[string]string{} // package directory → the content verified
	runs := map[string][]TestRun{}  // package directory → its latest test runs
	var res *Result
	for {
		var err error
		res, err = Run(cfg)
		if err != nil {
			return nil, nil, err
		}
		if out.Rounds == maxVerifyRounds {
			break // the last run only took fixes back
		}
		contents := dirContents(res.Changes)
		todo := &Result{}
		pkgChanges := 0
		for _, c := range res.Changes {
			switch d := filepath.Dir(c.Path); {
			case isModFile(c.Path):
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
		v, err := Verify(cfg, todo, opts)
		if err != nil {
			return nil, nil, err
		}
		out.Rounds++
		for _, c := range todo.Changes {
			if !isModFile(c.Path) {
				verified[filepath.Dir(c.Path)] = contents[filepath.Dir(c.Path)]
			}
		}
		byDir := map[string][]TestRun{}
		for _, r := range v.Tests {
			byDir[r.Dir] = append(byDir[r.Dir], r)
		}
		for d, fresh := range byDir {
			// A test reverted in an earlier round is no longer affected:
			// keep its record.
			seen := map[string]bool{}
			for _, r := range fresh {
				seen[r.Name] = true
			}
			for _, r := range runs[d] {
				if !r.Kept && !seen[r.Name] {
					fresh = append(fresh, r)
				}
			}
			runs[d] = fresh
		}
		added := 0
		for _, r := range v.Reverts {
			k := key{r.Dir, r.Rule, r.Test}
			if _, ok := reverts[k]; !ok {
				reverts[k] = r.Reason
				out.Reverts = append(out.Reverts, r)
				added++
			}
		}
		if added == 0 {
			break
		}
	}

	// Have: the final result, and the runs of each package directory.
	// Runs count only for directories whose final content was verified.
	final := dirContents(res.Changes)
	for d, rs := range runs {
		for _, r := range rs {
			if !r.Kept || final[d] == verified[d] {
				out.Tests = append(out.Tests, r)
			}
		}
	}
	sort.Slice(out.Tests, func(i, j int) bool {
		a, b := out.Tests[i], out.Tests[j]
		if a.Dir != b.Dir {
			return a.Dir < b.Dir
		}
		return a.Name < b.Name
	})
	for i := range res.Findings {
		f := &res.Findings[i]
		d := filepath.Dir(f.File)
		if !f.Fixed || final[d] == "" || final[d] != verified[d] {
			continue
		}
		f.Verified, f.BeforeMs, f.AfterMs = covered(runs[d], topLevel(f.Test))
	}
	return res, out, nil
}

// covered reports whether the runs of a package verify a fix in test (a
// top-level test name, or a function outside tests, which every test of
// the package may call), and the measured times in milliseconds.
func covered(runs []TestRun, test string) (bool, int64, int64) {
	var before, after time.Duration
	n := 0
	for _, r := range runs {
		if isTestName(test) && r.Name != test {
			continue
		}
		if !r.Kept {
			return false, 0, 0
		}
		before += r.Before
		after += r.After
		n++
	}
	return n > 0, before.Milliseconds(), after.Milliseconds()
}

// dirContents keys the new contents of the changed files by directory;
// go.mod and go.sum belong to a module, not to the package in their
// directory, and are left out.
func dirContents(changes []Change) map[string]string {
	m := map[string]string{}
	for _, c := range changes {
		if isModFile(c.Path) {
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

// isTestName reports whether name is that of a function go test runs.
func isTestName(name string) bool { return testFuncRE.MatchString(name) }

// pkgWork is one package directory to verify.
type pkgWork struct {
	dir      string
	changes  []Change
	mod      []Change  // its module's go.mod and go.sum, when they change
	findings []Finding // the fixed findings in dir
	tests    []string  // affected top-level tests, sorted
	all      bool      // a fix outside any test: every test is affected
}

// Verify runs the tests affected by each package directory's changes in
// res, before and after the rewrite, opts.Count times each, and says which
// fixes to revert. Packages are verified concurrently, at most
// runtime.GOMAXPROCS(0) at a time. A test that fails before the rewrite
// verifies nothing: its fixes are reverted. Verify returns an error only
// when it cannot run at all (no go command, no temporary directory).
func Verify(cfg *Config, res *Result, opts VerifyOptions) (*Verification, error) {
	opts = opts.withDefaults()
	var work []*pkgWork
	byDir := map[string]*pkgWork{}
	modChanges := map[string][]Change{} // module directory → its changes
	for _, c := range res.Changes {
		if isModFile(c.Path) {
			d := filepath.Dir(c.Path)
			modChanges[d] = append(modChanges[d], c)
			continue
		}
		d := filepath.Dir(c.Path)
		w := byDir[d]
		if w == nil {
			w = &pkgWork{dir: d}
			byDir[d] = w
			work = append(work, w)
		}
		w.changes = append(w.changes, c)
	}
	for _, f := range res.Findings {
		w := byDir[filepath.Dir(f.File)]
		if w == nil || !f.Fixed {
			continue
		}
		w.findings = append(w.findings, f)
		if top := topLevel(f.Test); !isTestName(top) {
			w.all = true
		} else if !contains(w.tests, top) {
			w.tests = append(w.tests, top)
		}
	}
	sort.Slice(work, func(i, j int) bool { return work[i].dir < work[j].dir })
	if len(modChanges) > 0 {
		for _, w := range work {
			w.mod = modChanges[moduleDir(w.dir)]
		}
	}

	type outcome struct {
		runs    []TestRun
		reverts []Revert
		err     error
	}
	results := make([]outcome, len(work))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, w := range work {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sort.Strings(w.tests)
			runs, reverts, err := w.verify(cfg, opts)
			results[i] = outcome{runs, reverts, err}
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(work))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	v := &Verification{}
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		v.Tests = append(v.Tests, r.runs...)
		v.Reverts = append(v.Reverts, r.reverts...)
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// verify builds the package's test binary before and after the rewrite and
// runs each affected test with both.
func (w *pkgWork) verify(cfg *Config, opts VerifyOptions) ([]TestRun, []Revert, error) {
	if len(w.tests) == 0 && !w.all {
		return nil, nil, nil // no fixed finding: nothing to verify
	}
	tmp, err := os.MkdirTemp("", "unflake-verify-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	overlay, err := writeOverlay(tmp, w.changes)
	if err != nil {
		return nil, nil, err
	}
	modfile, err := writeModFile(tmp, w.mod)
	if err != nil {
		return nil, nil, err
	}
	before := filepath.Join(tmp, "before.test")
	after := filepath.Join(tmp, "after.test")
	if out, err := buildTest(cfg, w.dir, before, "", ""); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, nil, err
		}
		return w.failAll("the tests do not build before the rewrite: " + buildError(out, err))
	}
	if out, err := buildTest(cfg, w.dir, after, overlay, modfile); err != nil {
		return w.failAll("the tests do not build after the rewrite: " + buildError(out, err))
	}
	tests := w.tests
	if w.all {
		var out, errOut bytes.Buffer
		if err := runBinary(cfg, w.dir, before, opts.Timeout, &out, &errOut, "-test.list=.*"); err != nil {
			return w.failAll("cannot list the tests: " + buildError(errOut.Bytes(), err))
		}
		tests = nil
		for _, name := range strings.Fields(out.String()) {
			if isTestName(name) {
				tests = append(tests, name)
			}
		}
		if len(tests) == 0 {
			return w.failAll("no test runs it")
		}
	}

	var runs []TestRun
	for _, name := range tests {
		run := TestRun{Dir: w.dir, Name: name}
		b, ok := opts.before.get(w.dir, name)
		if !ok {
			b = runTest(cfg, w.dir, before, name, opts, opts.Timeout)
			opts.before.put(w.dir, name, b)
		}
		switch {
		case !b.ok:
			run.Reason = fmt.Sprintf("%s fails before the rewrite: %s", name, b.detail)
		default:
			run.Before = b.mean
			// A rewrite must not make a test slower: a hang in a bubble (a
			// goroutine blocked on something the bubble cannot see) would
			// otherwise cost the whole timeout.
			limit := opts.Timeout
			if l := 3*time.Duration(opts.Count)*b.mean + 30*time.Second; l < limit {
				limit = l
			}
			a := runTest(cfg, w.dir, after, name, opts, limit)
			switch {
			case a.panicked:
				run.Reason = fmt.Sprintf("%s panicked after the rewrite: %s", name, a.detail)
			case !a.ok:
				run.Reason = fmt.Sprintf("%s failed after the rewrite: %s", name, a.detail)
			default:
				run.Kept, run.After = true, a.mean
			}
		}
		runs = append(runs, run)
	}
	return runs, w.reverts(runs), nil
}

// failAll reverts every fix of the package for one reason.
func (w *pkgWork) failAll(reason string) ([]TestRun, []Revert, error) {
	tests := w.tests
	if w.all {
		tests = append(tests, "(all tests)")
	}
	var runs []TestRun
	for _, name := range tests {
		runs = append(runs, TestRun{Dir: w.dir, Name: name, Reason: reason})
	}
	var reverts []Revert
	seen := map[Revert]bool{}
	for _, f := range w.findings {
		r := Revert{Dir: w.dir, Rule: f.Rule, Test: topLevel(f.Test), Reason: reason}
		if !seen[r] {
			seen[r] = true
			reverts = append(reverts, r)
		}
	}
	return runs, reverts, nil
}

// reverts lists the fixes a failed run takes back: those in the failed
// test, and those outside any test (which the test may call).
func (w *pkgWork) reverts(runs []TestRun) []Revert {
	var out []Revert
	seen := map[[2]string]bool{}
	for _, r := range runs {
		if r.Kept {
			continue
		}
		for _, f := range w.findings {
			top := topLevel(f.Test)
			k := [2]string{f.Rule, top}
			if (top == r.Name || !isTestName(top)) && !seen[k] {
				seen[k] = true
				out = append(out, Revert{Dir: w.dir, Rule: f.Rule, Test: top, Reason: r.Reason})
			}
		}
	}
	return out
}

// writeOverlay writes the new contents to tmp and the `go build -overlay`
// file that replaces the originals with them; it returns the latter's path.
func writeOverlay(tmp string, changes []Change) (string, error) {
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
func writeModFile(tmp string, changes []Change) (string, error) {
	var mod, sum *Change
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
	} else if b, err := os.ReadFile(sumPath(mod.Path)); err == nil {
		sumData = b
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return writeModCopy(dir, mod.New, sumData)
}

// buildTest builds the test binary of the package in dir to out, with the
// overlay file and the replacement go.mod if they are not "".
func buildTest(cfg *Config, dir, out, overlay, modfile string) ([]byte, error) {
	args := []string{"test", "-c", "-vet=off", "-o", out}
	if len(cfg.Tags) > 0 {
		args = append(args, "-tags="+strings.Join(cfg.Tags, ","))
	}
	if overlay != "" {
		args = append(args, "-overlay="+overlay)
	}
	if modfile != "" {
		args = append(args, "-modfile="+modfile)
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = dir
	cmd.Env = cfg.Env
	return cmd.CombinedOutput()
}

// buildError is the first line of a build's output that says what failed.
func buildError(out []byte, err error) string {
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return clip(line)
		}
	}
	return err.Error()
}

// runBinary runs a test binary in the package directory, as go test
// does, and kills it if it outlives its own -test.timeout by a minute.
func runBinary(cfg *Config, dir, bin string, timeout time.Duration, stdout, stderr io.Writer, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = cfg.Env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 10 * time.Second
	return cmd.Run()
}

// result is the outcome of running one test opts.Count times.
type result struct {
	ok       bool
	panicked bool
	detail   string        // what failed
	mean     time.Duration // of one run, when ok
}

// runTest runs the top-level test name (a benchmark runs once per count)
// in its own process, with a -test.timeout of timeout.
func runTest(cfg *Config, dir, bin, name string, opts VerifyOptions, timeout time.Duration) result {
	args := []string{"-test.v", "-test.count=" + strconv.Itoa(opts.Count), "-test.timeout=" + timeout.String()}
	anchored := "^" + regexp.QuoteMeta(name) + "$"
	if strings.HasPrefix(name, "Benchmark") {
		args = append(args, "-test.run=^$", "-test.bench="+anchored, "-test.benchtime=1x")
	} else {
		args = append(args, "-test.run="+anchored)
	}
	var out bytes.Buffer
	err := runBinary(cfg, dir, bin, timeout, &out, &out, args...)
	return parseRun(name, out.String(), err, opts.Count)
}

var panicRE = regexp.MustCompile(`(?m)^panic: (.*)$`)

// parseRun reads the -test.v output of count runs of the top-level test
// name: its "--- PASS: name (1.23s)" lines (a benchmark's "ns/op" lines),
// ignoring subtests. A non-zero exit, a panic, a failure or fewer runs
// than asked is a failure.
func parseRun(name, out string, err error, count int) result {
	q := regexp.QuoteMeta(name)
	status := regexp.MustCompile(`--- (PASS|FAIL|SKIP): ` + q + ` \(([0-9.]+)s\)`)
	bench := regexp.MustCompile(`(?m)^` + q + `(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)
	var total time.Duration
	passed, failed := 0, false
	for _, m := range status.FindAllStringSubmatch(out, -1) {
		if m[1] == "FAIL" {
			failed = true
			continue
		}
		if strings.HasPrefix(name, "Benchmark") {
			continue // timed by ns/op below
		}
		secs, _ := strconv.ParseFloat(m[2], 64)
		total += time.Duration(secs * float64(time.Second))
		passed++
	}
	if strings.HasPrefix(name, "Benchmark") {
		for _, m := range bench.FindAllStringSubmatch(out, -1) {
			ns, _ := strconv.ParseFloat(m[1], 64)
			total += time.Duration(ns)
			passed++
		}
	}
	switch {
	case panicRE.MatchString(out):
		m := panicRE.FindStringSubmatch(out)
		detail, _, _ := strings.Cut(m[1], " [recovered")
		return result{panicked: true, detail: clip(detail)}
	case failed:
		return result{detail: failureLine(name, out)}
	case err != nil:
		return result{detail: clip(err.Error() + lastLine(out))}
	case passed < count:
		return result{detail: fmt.Sprintf("ran %d of %d times", passed, count)}
	}
	return result{ok: true, mean: total / time.Duration(passed)}
}

// failureLine is the first line the test logged in its first failed run,
// or a plain statement when it logged nothing.
func failureLine(name, out string) string {
	fail := strings.Index(out, "--- FAIL: "+name+" (")
	run := strings.LastIndex(out[:fail], "=== RUN   "+name+"\n")
	if run < 0 {
		run = 0
	}
	for _, line := range strings.Split(out[run:fail], "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "=== ") && !strings.HasPrefix(line, "--- ") {
			return clip(line)
		}
	}
	return "the test failed"
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return ": " + l
	}
	return ""
}

// clip shortens a reason to one reasonable line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
