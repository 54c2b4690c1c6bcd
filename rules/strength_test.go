package rules_test

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/internal/goldentest"
	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules"
)

// The strength corpus (testdata/strength/RULE_SHAPE.txtar, docs/strength.md)
// proves that a rewrite keeps the test's power: the rewritten test still
// fails on every bug the original catches, at the same check.
//
// An archive's comment holds directives, then prose:
//
//	rule: NAME      the rule to run (fix --rules NAME)
//	flags: ...      extra flags for unflake fix
//	unproven        also apply the rule's unproven fixes (as fix --verify
//	                would if the tests pass): the engine runs with a
//	                Config.Decide that keeps every fix
//	proven          apply the fixes the rule's own checks proved (those
//	                only their kind of change makes hypotheses:
//	                goldentest.KeepProven), as fix --verify writes them
//	                when it keeps them: the rule's proof, judged
//	verify          run the real unflake fix --verify on the correct code
//	                instead: what it keeps is the rewrite the bugs must
//	                fail (with unchanged: it keeps nothing)
//	unchanged       the rule must leave the test file as it is
//	weak: bug_x     a known gap: the rewritten test misses bug_x (the
//	                harness fails when it starts catching it, so that the
//	                directive goes)
//
// The files are a module with one package at its root: the code under
// test in a correct variant and one variant per bug (build tags bug_KIND),
// and a test whose failing check carries `// strength: bug_KIND ...`.

const (
	strengthTimeout = "60s" // -test.timeout of every run: a hang is a clear failure
	rewrittenRuns   = 5     // runs of the rewritten test on the correct code
	raceRuns        = 2     // and under -race
	bugRuns         = 3     // runs of the rewritten test under each bug
)

// allOriginals runs the originals of every case, not only of those the
// rule changes or the table does not know yet.
var allOriginals = flag.Bool("strength.originals", false, "run the originals of the cases the rule leaves alone too")

// tableRows are the rows of golden/strength/TABLE.md (none when it is
// missing: every case then runs its original).
var tableRows = func() []strengthRow {
	data, err := os.ReadFile(filepath.Join("..", "golden", "strength", "TABLE.md"))
	if err != nil {
		return nil
	}
	var rows []strengthRow
	for _, line := range strings.Split(string(data), "\n") {
		cols := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		if len(cols) == 6 && line != "" && cols[0] != "case" && !strings.HasPrefix(line, "|---") {
			rows = append(rows, strengthRow{cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]})
		}
	}
	return rows
}()

// tableOriginals is the original-caught column of the table by case: what
// the originals of the cases the rule leaves alone caught when they last
// ran.
var tableOriginals = func() map[string]string {
	m := map[string]string{}
	for _, r := range tableRows {
		m[r.name] = r.original
	}
	return m
}()

// A strengthCase is one archive of testdata/strength.
type strengthCase struct {
	name, rule, shape string
	flags             []string
	unproven          bool
	proven            bool
	verify            bool
	unchanged         bool
	weak              map[string]bool
	archive           *txtar.Archive
}

// A strengthRow is a case's line of golden/strength/TABLE.md: only what is
// the same on every run (no times).
type strengthRow struct {
	name, rule, shape, bugs, original, rewritten string
}

// Cases run concurrently, but two that name the same fixed port (a
// freeport case and its verify twin, whose originals both listen on
// 17125) never at once: one original would fail on the other's listener
// (portLocks).
func TestStrength(t *testing.T) {
	testmod.Slow(t)
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "strength", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no cases under testdata/strength")
	}
	var (
		mu   sync.Mutex
		rows []strengthRow
	)
	t.Run("case", func(t *testing.T) {
		// Twice as many cases as CPUs at once, whatever -parallel says:
		// a case spends much of its time in the real sleeps and
		// timeouts of its originals, which leave the CPUs idle (43
		// cases: 181s at two at once on two cores, 131s at four).
		// t.Run may be called from several goroutines.
		sem := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
		var wg sync.WaitGroup
		for _, path := range paths {
			c := loadStrengthCase(t, path)
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				t.Run(c.name, func(t *testing.T) {
					defer fixedPorts.hold(c.ports())()
					row := c.check(t)
					mu.Lock()
					rows = append(rows, row)
					mu.Unlock()
				})
			})
		}
		wg.Wait()
	})
	if len(rows) != len(paths) {
		if !update {
			return // -run chose some cases: the table covers all of them
		}
		// UNFLAKE_UPDATE=1 with -run: the chosen cases' rows replace
		// or join the table's, whose other rows stay while their case
		// does.
		names := map[string]bool{}
		for _, p := range paths {
			names[strings.TrimSuffix(filepath.Base(p), ".txtar")] = true
		}
		ran := map[string]bool{}
		for _, r := range rows {
			ran[r.name] = true
		}
		for _, r := range tableRows {
			if names[r.name] && !ran[r.name] {
				rows = append(rows, r)
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	checkTable(t, rows)
}

func loadStrengthCase(t *testing.T, path string) strengthCase {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := strengthCase{name: strings.TrimSuffix(filepath.Base(path), ".txtar"), archive: a, weak: map[string]bool{}}
	for _, line := range strings.Split(string(a.Comment), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "rule:"):
			c.rule = strings.TrimSpace(strings.TrimPrefix(line, "rule:"))
		case strings.HasPrefix(line, "flags:"):
			c.flags = strings.Fields(strings.TrimPrefix(line, "flags:"))
		case strings.HasPrefix(line, "weak:"):
			for _, w := range strings.Fields(strings.TrimPrefix(line, "weak:")) {
				c.weak[w] = true
			}
		case line == "unproven":
			c.unproven = true
		case line == "proven":
			c.proven = true
		case line == "verify":
			c.verify = true
		case line == "unchanged":
			c.unchanged = true
		}
	}
	if c.rule == "" || rules.Lookup(c.rule) == nil {
		t.Fatalf("%s: no rule: directive naming a rule (got %q)", path, c.rule)
	}
	if n := btoi(c.verify) + btoi(c.unproven) + btoi(c.proven); n > 1 {
		t.Fatalf("%s: verify, unproven and proven exclude each other (each decides what is kept)", path)
	}
	c.shape = strings.TrimPrefix(c.name, c.rule+"_")
	return c
}

// bugKinds are the kinds of bugs timing tests exist to catch
// (docs/strength.md).
var bugKinds = map[string]bool{"never": true, "late": true, "twice": true, "overshoot": true, "leaves": true, "spurious": true, "limit": true}

// buildTagRE finds the bug tags a build constraint names.
var buildTagRE = regexp.MustCompile(`\bbug_\w+`)

// check runs one case and returns its table row.
func (c strengthCase) check(t *testing.T) strengthRow {
	dir := t.TempDir()
	bin := t.TempDir()
	testmod.WriteFiles(t, dir, c.archive.Files)
	// A fix that adds golang.org/x/sync gets the test's stand-in, never a
	// version of the user's module cache or the network.
	env := testmod.ProxyEnv(t, []testmod.Module{testmod.Sync()}, "GOFLAGS=-mod=mod")

	before, err := readMarkers(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bugs []string
	for w := range before.words() {
		if strings.HasPrefix(w, "bug_") {
			bugs = append(bugs, w)
		}
	}
	sort.Strings(bugs)
	row := strengthRow{name: c.name, rule: c.rule, shape: c.shape, bugs: strings.Join(kinds(bugs), ", ")}
	if len(bugs) == 0 {
		t.Fatal("no check is marked with a bug tag (// strength: bug_KIND)")
	}
	// Every bug the code under test has is marked, and every marked bug
	// exists: a typo in either would prove nothing.
	tagged := map[string]bool{}
	for _, f := range c.archive.Files {
		for _, line := range strings.Split(string(f.Data), "\n") {
			if strings.HasPrefix(line, "//go:build") {
				for _, tag := range buildTagRE.FindAllString(line, -1) {
					tagged[tag] = true
				}
			}
		}
	}
	for _, b := range bugs {
		if !bugKinds[strings.TrimPrefix(b, "bug_")] {
			t.Errorf("%s: the kind is not one of never, late, twice, overshoot, leaves, spurious, limit", b)
		}
		if !tagged[b] {
			t.Errorf("%s is marked but no file is built with it", b)
		}
		delete(tagged, b)
	}
	for tag := range tagged {
		t.Errorf("%s has a variant but no marked check", tag)
	}
	for w := range c.weak {
		if !before.words()[w] {
			t.Errorf("weak: %s is not a bug of the case", w)
		}
	}

	// The rewrite first: whether the originals run depends on it.
	src := testFiles(t, dir)
	c.fix(t, dir, env)
	changed := !equalFiles(src, testFiles(t, dir))
	if c.verify && !c.unchanged && !changed {
		// Verification holds a fix back when it cannot tell a failure
		// from the load of the machine (the original failing, a clash,
		// a flake): conservative, and right on a loaded CI machine,
		// but not what the case says. Once more; a fix verification
		// never keeps fails below, as before.
		t.Log("fix --verify kept no fix; trying once more")
		c.fix(t, dir, env)
		changed = !equalFiles(src, testFiles(t, dir))
	}
	if c.unchanged && changed {
		t.Error("the rule changed the test, which the case says it must leave alone")
	}

	// The original: passes on the correct code, fails under each bug at
	// its check. A case the rule leaves alone, as it says, and whose
	// row the table already has, proved that when it was added: its
	// original is the rewritten test, and nothing unflake does can
	// change what it catches. It runs again with -strength.originals or
	// UNFLAKE_UPDATE=1 (most of the corpus: a third of its time).
	if keep, ok := tableOriginals[c.name]; ok && c.unchanged && !changed && !*allOriginals && !update {
		row.original = keep
		row.rewritten = "unchanged"
		return row
	}
	origDir := t.TempDir()
	testmod.WriteFiles(t, origDir, c.archive.Files)
	orig := []variant{{name: "original", count: 1}}
	for _, b := range bugs {
		orig = append(orig, variant{name: "original, " + b, bug: b, count: 1})
	}
	runs := buildAndRun(t, origDir, bin, env, orig)
	caughtBefore := 0
	for i, v := range orig {
		run := runs[i]
		t.Logf("%s: %s", v.name, describe(run, before, v.bug))
		switch at, elsewhere := run.failedAt(before, v.bug); {
		case v.bug == "" && (len(run.failures) > 0 || run.passes == 0 || run.broken() != ""):
			t.Errorf("the original does not pass on the correct code: %s", describe(run, before, ""))
		case v.bug == "":
		case at == 0 || elsewhere > 0 || run.broken() != "":
			t.Errorf("the original does not fail under %s at its marked check: %s", v.bug, describe(run, before, v.bug))
		default:
			caughtBefore++
		}
	}
	row.original = fmt.Sprintf("%d/%d", caughtBefore, len(bugs))

	switch {
	case !c.unchanged && !changed:
		t.Fatal("the rule did not change the test")
	case c.unchanged:
		row.rewritten = "unchanged"
		return row
	}
	after, err := readMarkers(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bugs {
		if !after.words()[b] {
			t.Errorf("the rewrite lost the marker of %s", b)
		}
	}

	// The rewritten test: passes on the correct code, repeatedly and
	// under -race, and fails under each bug at its check, every run.
	fixed := []variant{
		{name: "rewritten", count: rewrittenRuns},
		{name: "rewritten, -race", race: true, count: raceRuns},
	}
	for _, b := range bugs {
		n := bugRuns
		if c.weak[b] {
			n = 1 // a known gap: one run tells whether it is still one
		}
		fixed = append(fixed, variant{name: "rewritten, " + b, bug: b, count: n})
	}
	runs = buildAndRun(t, dir, bin, env, fixed)
	caughtAfter := 0
	var missed []string
	for i, v := range fixed {
		run := runs[i]
		t.Logf("%s: %s", v.name, describe(run, after, v.bug))
		if v.bug == "" {
			if len(run.failures) > 0 || run.passes < v.count || run.broken() != "" {
				t.Errorf("%s does not pass on the correct code: %s", v.name, describe(run, after, ""))
			}
			continue
		}
		at, elsewhere := run.failedAt(after, v.bug)
		caught := at >= v.count && elsewhere == 0 && run.broken() == ""
		switch {
		case caught && c.weak[v.bug]:
			t.Errorf("the rewritten test now catches %s: remove it from weak:", v.bug)
		case !caught && !c.weak[v.bug]:
			t.Errorf("the rewritten test does not fail under %s at its marked check in each of %d runs: %s", v.bug, v.count, describe(run, after, v.bug))
		}
		if caught {
			caughtAfter++
		} else {
			missed = append(missed, strings.TrimPrefix(v.bug, "bug_"))
		}
	}
	row.rewritten = fmt.Sprintf("%d/%d", caughtAfter, len(bugs))
	if len(missed) > 0 {
		row.rewritten += " (misses " + strings.Join(missed, ", ") + ")"
	}
	return row
}

// fix runs the case's rule on the module in dir: as unflake fix does,
// as unflake fix --verify does on the correct code (a verify case: the
// bug variants are left out by their build tags, so verification runs
// and mutates the correct code), or, for an unproven case, through the
// engine with a Decide that keeps every fix (what fix --verify keeps when
// the tests pass and no mutant tells against it), for a proven one, with
// one that keeps the fixes the rule's own checks proved.
func (c strengthCase) fix(t *testing.T, dir string, env []string) {
	t.Helper()
	if !c.unproven && !c.proven {
		args := append([]string{"fix", "--rules", c.rule}, c.flags...)
		if c.verify {
			args = append(args, "--verify", "--verify-count=5")
		}
		code, _, stderr := unflake(t, dir, append(env[:len(env):len(env)], "GOFLAGS="), append(args, "./...")...)
		if code != 0 {
			t.Fatalf("fix exited %d:\n%s", code, stderr)
		}
		if c.verify {
			// What verification kept and reverted, and why: the only
			// account of a case that fails in CI and passes alone.
			t.Logf("fix --verify:\n%s", stderr)
		}
		return
	}
	// --rules adds rules to the case's, as it does on the command line
	// (a string slice flag appends); the other flags are the rules' own.
	names, flags := []string{c.rule}, []string(nil)
	for i := 0; i < len(c.flags); i++ {
		f := c.flags[i]
		switch {
		case f == "--rules" && i+1 < len(c.flags):
			i++
			names = append(names, strings.Split(c.flags[i], ",")...)
		case strings.HasPrefix(f, "--rules="):
			names = append(names, strings.Split(strings.TrimPrefix(f, "--rules="), ",")...)
		default:
			flags = append(flags, f)
		}
	}
	selected, err := rules.Select(names, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.proven {
		fixKeepingProven(t, dir, env, selected, ruleOptions(t, flags))
		return
	}
	fixKeepingAll(t, dir, env, selected, ruleOptions(t, flags))
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fixKeepingAll runs the selected rules on the module in dir through the
// engine with a Config.Decide that keeps every fix, unproven ones too
// (what fix --verify keeps when the tests pass), and writes the changes
// as fix does.
func fixKeepingAll(t *testing.T, dir string, env []string, selected []*rule.Rule, opts rule.Options) {
	t.Helper()
	fixKeeping(t, dir, env, selected, opts, false)
}

// fixKeepingProven writes what fix --verify writes when it keeps the
// fixes the rules' own checks proved (goldentest.KeepProven), and no
// other.
func fixKeepingProven(t *testing.T, dir string, env []string, selected []*rule.Rule, opts rule.Options) {
	t.Helper()
	fixKeeping(t, dir, env, selected, opts, true)
}

func fixKeeping(t *testing.T, dir string, env []string, selected []*rule.Rule, opts rule.Options, proven bool) {
	t.Helper()
	cfg := &rewrite.Config{
		Dir: dir, Patterns: []string{"./..."}, Rules: selected, Lookup: rules.Lookup, Env: env,
		Options: opts,
		Decide:  goldentest.KeepAll,
	}
	if proven {
		cfg.Decide = goldentest.KeepProven
	}
	res, err := rewrite.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("fix: %v", res.Errors)
	}
	// go.mod and go.sum first, as fix writes them.
	sort.SliceStable(res.Changes, func(i, j int) bool {
		return !strings.HasSuffix(res.Changes[i].Path, ".go") && strings.HasSuffix(res.Changes[j].Path, ".go")
	})
	for _, ch := range res.Changes {
		if err := ch.Write(); err != nil {
			t.Fatal(err)
		}
	}
}

// ruleOptions parses --name=value flags of the rules' own options.
func ruleOptions(t *testing.T, flags []string) rule.Options {
	t.Helper()
	var opts rule.Options
	for _, f := range flags {
		name, value, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !ok {
			value = "true"
		}
		found := false
		for _, r := range rules.All() {
			if r.Flags.Lookup(name) != nil {
				if err := opts.Set(r, name, value); err != nil {
					t.Fatalf("flag %s: %v", f, err)
				}
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("flag %s: no rule has this option (an unproven or proven case takes only rule options and --rules)", f)
		}
	}
	return opts
}

// A variant is one test binary of a case: built with the bug's tag (none
// for the correct code) and maybe -race, then run count times.
type variant struct {
	name  string // for the log
	bug   string
	race  bool
	count int
}

// buildAndRun builds the package at dir's root once per variant (go test
// -c, two builds at a time), then runs the binaries one after another. It
// returns each variant's run.
func buildAndRun(t *testing.T, dir, bin string, env []string, vs []variant) []testRun {
	t.Helper()
	bins := make([]string, len(vs))
	errs := make([]string, len(vs))
	runs := make([]testRun, len(vs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, v := range vs {
		bins[i] = filepath.Join(bin, strings.NewReplacer(" ", "", ",", "_", "-", "").Replace(v.name)+".test")
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// No vet (the golden tests vet rewritten code) and no DWARF
			// (failure lines come from the pc tables): less CPU.
			args := []string{"test", "-c", "-o", bins[i], "-vet=off", "-ldflags=-w"}
			if v.bug != "" {
				args = append(args, "-tags", v.bug)
			}
			if v.race {
				args = append(args, "-race")
			}
			cmd := exec.Command("go", append(args, ".")...)
			cmd.Dir = dir
			cmd.Env = env
			if msg, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Sprintf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
			}
		})
	}
	wg.Wait()
	if msg := strings.Join(slices.DeleteFunc(slices.Clone(errs), func(s string) bool { return s == "" }), "\n"); msg != "" {
		t.Fatal(msg)
	}
	for i, v := range vs {
		var msg string
		//unflake:ignore spawn one at a time: an original may hold a fixed port or file (freeport's cases do)
		runs[i], msg = runBinary(dir, env, bins[i], v.count)
		if msg != "" {
			t.Logf("%s: %s", v.name, msg)
		}
	}
	return runs
}

// runBinary runs a test binary count times, in dir, and reads its output.
// The message explains an exit the output does not.
func runBinary(dir string, env []string, bin string, count int) (testRun, string) {
	cmd := exec.Command(bin, "-test.v", fmt.Sprintf("-test.count=%d", count), "-test.timeout="+strengthTimeout)
	cmd.Dir = dir
	// PWD as go test sets it: the readiness fix that lost the child's
	// PWD passed here while it failed under go test (red team batch 18,
	// logicalpwd).
	cmd.Env = append(env[:len(env):len(env)], "PWD="+dir)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	run := parseRun(out.String())
	if (err == nil) != (len(run.failures) == 0 && run.broken() == "") {
		// An exit the output does not explain (a crash before any
		// test, a binary that did not start): count the run as broken.
		run.panicked = true
		return run, fmt.Sprintf("exited with %v:\n%s", err, tail(out.String()))
	}
	return run, ""
}

// describe sums a run up for the log: passes and failures, where each
// failure was, and the tests' own time.
func describe(r testRun, m markers, bug string) string {
	s := fmt.Sprintf("%d passed, %d failed", r.passes, len(r.failures))
	if bug != "" {
		at, elsewhere := r.failedAt(m, bug)
		s += fmt.Sprintf(" (%d at the check of %s, %d elsewhere)", at, bug, elsewhere)
	}
	if b := r.broken(); b != "" {
		s += ", " + b
	}
	var locs []string
	for _, f := range r.failures {
		locs = append(locs, f.test+"@"+strings.Join(f.locs, ","))
	}
	if len(locs) > 0 {
		s += " [" + strings.Join(locs, " ") + "]"
	}
	return s + ", tests took " + r.elapsed.Round(time.Millisecond).String()
}

// tail is the end of a long output.
func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// kinds are bug tags without their prefix.
func kinds(bugs []string) []string {
	out := make([]string, len(bugs))
	for i, b := range bugs {
		out[i] = strings.TrimPrefix(b, "bug_")
	}
	return out
}

// testFiles reads the _test.go files under dir.
func testFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for path, data := range testmod.Snapshot(t, dir) {
		if strings.HasSuffix(path, "_test.go") {
			out[path] = data
		}
	}
	return out
}

func equalFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkTable writes golden/strength/TABLE.md (UNFLAKE_UPDATE=1) or
// compares with it.
func checkTable(t *testing.T, rows []strengthRow) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# Strength corpus\n\n")
	b.WriteString("Generated by `UNFLAKE_UPDATE=1 go test ./rules -run TestStrength` from testdata/strength (docs/strength.md).\n")
	b.WriteString("Caught: bugs whose check fails, out of the case's bugs (the rewritten test in each of " + fmt.Sprint(bugRuns) + " runs).\n\n")
	b.WriteString("| case | rule | shape | bug kinds | original caught | rewritten caught |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.name, r.rule, r.shape, r.bugs, r.original, r.rewritten)
	}
	path := filepath.Join("..", "golden", "strength", "TABLE.md")
	got := b.String()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UNFLAKE_UPDATE=1 to create it)", err)
	}
	if string(want) != got {
		t.Errorf("the table differs from %s (UNFLAKE_UPDATE=1 rewrites it):\n%s", path, lineDiff(string(want), got))
	}
}

// portLocks serialises the cases that name the same fixed port.
type portLocks struct {
	mu    sync.Mutex
	ports map[string]*sync.Mutex
}

var fixedPorts = &portLocks{ports: map[string]*sync.Mutex{}}

// hold locks each of ports, in order (no two cases wait on each other),
// and returns what unlocks them.
func (l *portLocks) hold(ports []string) func() {
	var held []*sync.Mutex
	for _, p := range ports {
		l.mu.Lock()
		m := l.ports[p]
		if m == nil {
			m = &sync.Mutex{}
			l.ports[p] = m
		}
		l.mu.Unlock()
		m.Lock()
		held = append(held, m)
	}
	return func() {
		for _, m := range held {
			m.Unlock()
		}
	}
}

// portText finds a fixed port in a Go string: "127.0.0.1:17125", ":8437".
var portText = regexp.MustCompile(`"[^"\n]*:([1-9][0-9]{3,4})[/"]`)

// ports returns the fixed ports the case's files name, sorted.
func (c strengthCase) ports() []string {
	seen := map[string]bool{}
	for _, f := range c.archive.Files {
		for _, m := range portText.FindAllSubmatch(f.Data, -1) {
			seen[string(m[1])] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
