package cli

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/plan"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

func newFixCmd(opts *options) *cobra.Command {
	var (
		diff     bool
		format   string
		planPath string
		batch    int
		raiseGo  bool
	)
	cmd := &cobra.Command{
		Use:   "fix [flags] PATTERNS",
		Short: "Rewrite flaky test code in place (or print a diff with --diff)",
		Long: `Fix rewrites the test files of the packages matching PATTERNS (as for
go test; default ".") in place, atomically. With --diff it writes nothing and
prints a unified diff that git apply and patch -p1 accept; it then exits 1
when there is a change.

With --verify it also tries the fixes the static analysis could not prove
safe, and runs the tests each fix touches before and after it (the rewritten
files are given to go test through -overlay; the working tree is not touched
until the end). Each affected top-level test runs once before the rewrite
and --verify-count times after it, each run a process of its own: one at
GOMAXPROCS=1 (which times it), one under -race, the rest in parallel
processes that oversubscribe the CPUs; a test the rewrite did not make
faster runs only as often as fits in five times its time before. A
rewritten test still running at four times its time before (at least 10s)
has hung and is stopped then. Tests whose fixes pass are then run on
mutants of the code under test (--verify-mutants), and the package's whole
test binary once. Benchmarks never run. A fix is kept only if its test
passed before and passes every run after; the others are reverted and
reported with what failed (see unflake check). A test that skips or does
not run verifies nothing. On a terminal each fix is reported as it is kept
or reverted. On SIGINT or SIGTERM the fixes verified so far are written
(or diffed), the rest left as they were.

A fix that a test failed after is remembered in unflake's cache directory
(UNFLAKE_CACHE; "off" forgets), so that a later --verify does not try it
again; the diff holds fixes only. With --record-ignores it is also
recorded at its site as a generated //unflake:ignore line, which every
later run honours and a reviewer sees.

With --diff, --format json prints {"findings": [...], "diff": "..."};
--format sarif the findings as a SARIF 2.1.0 log; --format github a
GitHub Actions ::warning command per finding, then the diff in a log group.
With --changed-since REV only the test files changed since the git revision
REV are looked at.

With --plan PLAN.json --batch K (a plan saved by unflake plan --json) it
applies exactly batch K: only the batch's files are analysed and rewritten.
A file that changed since the plan was made is analysed again; if it now
has a fix the plan did not list, it is held back and reported (exit 1).

With --raise-go, a module whose go directive holds fixes back (synctest
needs go1.25) gets its go line raised to the lowest version that unlocks
them, when the installed toolchain supports it, and those fixes are
applied; the summary and the diff show the go.mod change. Without the
flag the go line is never changed (unflake plan counts what it would
unlock).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if format != formatText && !diff {
				return fmt.Errorf("--format needs --diff")
			}
			if opts.unproven && (!diff || opts.verify) {
				return fmt.Errorf("--unproven needs --diff, without --verify: it shows the fixes --verify would try, and writes nothing")
			}
			switch {
			case planPath != "" && batch == 0:
				return fmt.Errorf("--plan needs --batch K")
			case planPath == "" && batch != 0:
				return fmt.Errorf("--batch needs --plan PLAN.json")
			case planPath != "":
				if format != formatText {
					return fmt.Errorf("--plan: --format %s is not supported, only the text diff", format)
				}
				if raiseGo {
					return fmt.Errorf("--raise-go: not supported with --plan")
				}
				return batchRun(opts, args, planPath, batch, diff)
			}
			return fixRun(opts, args, diff, format, raiseGo)
		},
	}
	cmd.Flags().BoolVar(&diff, "diff", false, "print a unified diff instead of writing files")
	addFormatFlag(cmd, &format)
	cmd.Flags().StringVar(&planPath, "plan", "", "apply one batch of the plan in `PLAN.json` (with --batch)")
	cmd.Flags().IntVar(&batch, "batch", 0, "with --plan, the batch `K` to apply")
	cmd.Flags().BoolVar(&raiseGo, "raise-go", false, "raise a module's go directive where a newer go version unlocks fixes, and apply them")
	cmd.Flags().BoolVar(&opts.unproven, "unproven", false, "with --diff, also show the fixes the analysis could not prove (the hypotheses --verify would run and keep only if their tests pass and still catch the mutants the original catches); never written")
	cmd.Flags().BoolVar(&opts.recordIgnores, "record-ignores", false, "with --verify, write a generated //unflake:ignore line at the site of each fix a test failed after")
	addAnalysisFlags(cmd, opts)
	addChangedSinceFlag(cmd, opts)
	addVerifyFlags(cmd, opts)
	addProfileFlags(cmd)
	return cmd
}

// addVerifyFlags adds --verify and its options.
func addVerifyFlags(cmd *cobra.Command, opts *options) {
	f := cmd.Flags()
	f.BoolVar(&opts.verify, "verify", false, "run the affected tests before and after each fix; keep only fixes whose tests pass every time")
	f.IntVar(&opts.verifyCount, "verify-count", verify.DefaultCount, "with --verify, run each affected test `N` times after the rewrite (once before), each run a process of its own: one at GOMAXPROCS=1, one under -race, the rest in parallel processes that oversubscribe the CPUs; a test the rewrite did not make faster runs only as often as fits in five times its time before (3 at least), so a summary may say \"6 to 20 runs\"")
	f.DurationVar(&opts.verifyTimeout, "verify-timeout", 5*time.Minute, "with --verify, the most a run of one test may take; after the rewrite a test still running at four times its time before (at least 10s) has hung and is stopped then")
	f.BoolVar(&opts.verifyMutants, "verify-mutants", true, "with --verify, keep a fix only if its test still fails on every mutant of the code under test that the original fails on")
	prev := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if opts.verifyCount < 1 {
			return fmt.Errorf("--verify-count %d: must be at least 1", opts.verifyCount)
		}
		if opts.verifyTimeout <= 0 {
			return fmt.Errorf("--verify-timeout %v: must be positive", opts.verifyTimeout)
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

func fixRun(opts *options, patterns []string, diff bool, format string, raiseGo bool) error {
	selected, err := opts.selectedRules()
	if err != nil {
		return err
	}
	var (
		res    *rewrite.Result
		v      *verify.Verification
		base   string
		raises []plan.GoRaise
		held   string // why --raise-go raises nothing
	)
	if raiseGo {
		res, v, base, raises, held, err = opts.raisedFix(patterns)
	} else {
		res, v, base, err = opts.analyse(patterns)
	}
	// A run a signal stopped goes on with what was verified so far: it
	// is written (or diffed), and the rest left as it was.
	var stopped *interrupted
	if err != nil && (!errors.As(err, &stopped) || res == nil) {
		if stopped != nil {
			stopped.done = "no file changed"
		}
		return err
	}
	errs := opts.reportErrors(res, base)
	if diff && format != formatText {
		err = opts.emitDiff(res, base, selected, format)
	} else {
		err = opts.emitAll(res.Changes, res.Refused, base, diff)
	}
	if err != nil {
		return err
	}
	if v != nil {
		for _, f := range res.Findings {
			if f.Revert != nil && f.Revert.Kind != revert.Companion {
				f.File = rel(base, f.File)
				fmt.Fprintln(opts.stderr, f.String())
			}
		}
		for _, line := range keptLines(res, v, base) {
			fmt.Fprintln(opts.stderr, line)
		}
	}
	if errs == nil || len(res.Changes) > 0 {
		s := summary(res, diff)
		if v != nil && len(res.Changes) == 0 {
			s = noChangeSummary(res, diff)
		}
		if len(raises) > 0 {
			s += "; " + raiseSummary(raises, diff)
		}
		if v != nil {
			s += "; " + verifySummary(v, base)
		}
		fmt.Fprintln(opts.stderr, s)
		if v != nil {
			for _, line := range packageTimes(v, base) {
				fmt.Fprintln(opts.stderr, line)
			}
		}
		if held != "" {
			fmt.Fprintln(opts.stderr, held)
		}
	}
	if stopped != nil {
		switch {
		case len(res.Changes) == 0:
			stopped.done = "no fix was verified before it; no file changed"
		case diff:
			stopped.done = "the diff above holds the fixes verified before it; the others were left out"
		default:
			stopped.done = "the fixes verified before it were written; the others were left as they were"
		}
		return stopped
	}
	if errs != nil {
		return errs
	}
	if diff && len(res.Changes) > 0 {
		return errFindings
	}
	return nil
}

// noChangeSummary is the summary of a verified run that changes no file:
// "unflake: no file changed: the 1 fix verification tried was reverted".
func noChangeSummary(res *rewrite.Result, diff bool) string {
	s := "unflake: no file changed"
	if diff {
		s = "unflake: would change no file"
	}
	reverted, left := 0, 0
	for _, f := range res.Findings {
		switch {
		case f.Revert != nil && f.Revert.AfterRewrite():
			reverted++
		case !f.Fixed:
			left++
		}
	}
	if reverted > 0 {
		s += fmt.Sprintf(": verification reverted every fix it tried (%s)", plural(reverted, "fix"))
	}
	if left > 0 {
		s += fmt.Sprintf("; %s not fixed (see unflake check)", plural(left, "finding"))
	}
	return s
}

// keptLines lists the fixes verification kept, proven or not (their
// tests all ran), one a line, with the mutants each killed:
// "unflake: kept a/a_test.go:12 sleep (20 runs, 1.2s → 0.1s; verified:
// kills 3 of 3 mutants the original kills (late, period x3, twice))".
func keptLines(res *rewrite.Result, v *verify.Verification, base string) []string {
	var out []string
	for _, f := range res.Findings {
		if !f.Fixed || !f.Verified {
			continue
		}
		// A fix in a helper has no test of its own name: its runs are
		// those of the package's tests, which verification counts.
		what := runsAndTimes(v.RunsOf(f), time.Duration(f.BeforeMs)*time.Millisecond, time.Duration(f.AfterMs)*time.Millisecond)
		if f.Mutants.Of > 0 {
			what += "; verified: " + f.Mutants.String()
		}
		out = append(out, fmt.Sprintf("unflake: kept %s:%d %s (%s)", rel(base, f.File), f.Line, f.Rule, what))
	}
	return out
}

// summary is the one-line report of a fix run.
func summary(res *rewrite.Result, diff bool) string {
	fixed, left, unproven, review := 0, 0, 0, 0
	for _, f := range res.Findings {
		if f.Fixed {
			fixed++
			switch {
			case f.Unproven && rule.Unprovable(f.Changes) != "":
				review++
			case f.Unproven:
				unproven++
			}
		} else {
			left++
		}
	}
	verb := "rewrote"
	if diff {
		verb = "would rewrite"
	}
	fixes := plural(fixed, "fix")
	if unproven > 0 {
		// Only fix --diff --unproven applies a fix unverified: say how
		// many of the diff's fixes are hypotheses.
		fixes += fmt.Sprintf(", %d unproven: --verify decides them", unproven)
	}
	if review > 0 {
		// An order, address or sync change: verification holds it
		// back unrun (rule.Unprovable).
		fixes += fmt.Sprintf(", %d for review only: no run can show them sound", review)
	}
	s := fmt.Sprintf("unflake: %s %s (%s)", verb, plural(len(res.Changes), "file"), fixes)
	if left > 0 {
		s += fmt.Sprintf("; %s not fixed (see unflake check)", plural(left, "finding"))
	}
	return s
}

// verifySummary says what verification ran, kept and measured:
// "verified 3 tests: 2 kept, 1 reverted (20 runs each after the rewrite);
// measured 12.3s → 0.4s". A test whose failure was not the fixes' doing
// (it failed or was flaky before the rewrite, skipped, clashed over a
// resource, or verification ran out of rounds) is not verified, not
// reverted.
func verifySummary(v *verify.Verification, base string) string {
	kept, reverted, least, most := 0, 0, 0, 0
	var before, after time.Duration
	var alone []string // failures beside other runs that did not repeat alone
	for _, t := range v.Tests {
		if t.Alone != "" && t.Kept {
			alone = append(alone, t.Alone)
		}
		if !t.Kept && t.Why != nil && t.Why.AfterRewrite() {
			reverted++
		}
		if t.Kept {
			kept++
			before += t.Before
			after += t.After
			if least == 0 || t.Runs < least {
				least = t.Runs
			}
			most = max(most, t.Runs)
		}
	}
	s := fmt.Sprintf("verified %s: %d kept, %d reverted", plural(len(v.Tests), "test"), kept, reverted)
	if n := len(v.Tests) - kept - reverted; n > 0 {
		s += fmt.Sprintf(", %d not verified", n)
	}
	switch {
	case least > 0 && least == most:
		s += fmt.Sprintf(" (%s each after the rewrite)", plural(most, "run"))
	case least > 0:
		// A test the rewrite did not make faster runs fewer times.
		s += fmt.Sprintf(" (%d to %d runs each after the rewrite: fewer for a test the rewrite did not make faster)", least, most)
	}
	switch {
	case kept > 0 && after < before:
		s += fmt.Sprintf("; measured %.1fs → %.1fs", before.Seconds(), after.Seconds())
	case kept > 0 && after > 0:
		// Kept because they pass every run, not because they save time.
		s += fmt.Sprintf("; kept as deterministic, not faster (%.1fs → %.1fs)", before.Seconds(), after.Seconds())
	}
	for _, g := range v.Gains {
		fixes := fmt.Sprintf("%d %s fixes", g.Fixes, g.Rule)
		if g.Fixes == 1 {
			fixes = "1 " + g.Rule + " fix"
		}
		s += fmt.Sprintf("; with %s, %s kept in %s (%s retried)", strings.Join(g.Companions, ", "), fixes, rel(base, g.Dir), plural(g.Tests, "test"))
	}
	if len(alone) > 0 {
		// Their runs beside each other clashed (a fixed port, a socket
		// path, a lock): the rest ran one after another.
		s += fmt.Sprintf("; %s passed alone after failing beside other runs (%s)", plural(len(alone), "test"), alone[0])
	}
	if v.Recorded > 0 {
		s += fmt.Sprintf("; %s recorded as //unflake:ignore", strings.Replace(plural(v.Recorded, "fix"), "fix", "reverted fix", 1))
	}
	if v.Remembered > 0 {
		s += fmt.Sprintf("; %s held back without runs: an earlier --verify reverted them (UNFLAKE_CACHE=off tries them again)", plural(v.Remembered, "fix"))
	}
	if v.Stopped {
		s += "; stopped before verification ended"
	}
	held, failed := 0, 0 // fixes whose probe passed every run; whose must-pass form failed (verify.Probe)
	for _, p := range v.Probed {
		switch {
		case p.MustPass && p.Waits:
			failed++
		case !p.MustPass && p.Holds():
			held++
		}
	}
	switch {
	case held == 1:
		s += "; 1 wait left: its checks hold without waiting"
	case held > 1:
		s += fmt.Sprintf("; %d waits left: their checks hold without waiting", held)
	}
	if failed > 0 {
		s += fmt.Sprintf("; %s held back: a form of the fix that must pass failed", plural(failed, "fix"))
	}
	switch m := v.Mutants; {
	case m.Tests > 0 && m.Of == 0:
		// Nothing to compare: passing proves no strength here.
		s += fmt.Sprintf("; %s of fixes tried on %s: the originals kill none, so they say nothing of the rewrites' strength", plural(m.Tests, "test"), plural(m.Built, "mutant"))
	case m.Tests > 0:
		s += fmt.Sprintf("; %s of fixes tried on %s: the rewrites kill %d of the %d the originals kill", plural(m.Tests, "test"), plural(m.Built, "mutant"), m.Killed, m.Of)
	}
	if v.NoRace != "" && len(v.Tests) > 0 {
		s += "; no run under -race: " + v.NoRace
	}
	if v.Proven > 0 {
		s += fmt.Sprintf("; %s kept: their tests ran as every fix's do", strings.Replace(plural(v.Proven, "fix"), "fix", "proven fix", 1))
	}
	if v.Elapsed > 0 {
		s += "; verified in " + shortDuration(v.Elapsed)
		if v.Suite > 0 {
			s += "; one run of the affected tests takes " + shortDuration(v.Suite)
		}
	}
	return strings.TrimPrefix(s, "; ")
}

// packageTimes says, per package with kept tests, where the time went:
// "unflake: ./sched: measured 22.3s → 0.1s (9 kept tests)", the largest
// saving first. Nothing when one package or none has kept tests: the
// summary's own measure says it.
func packageTimes(v *verify.Verification, base string) []string {
	type sum struct {
		before, after time.Duration
		tests         int
	}
	by := map[string]*sum{}
	for _, t := range v.Tests {
		if !t.Kept {
			continue
		}
		s := by[t.Dir]
		if s == nil {
			s = &sum{}
			by[t.Dir] = s
		}
		s.before += t.Before
		s.after += t.After
		s.tests++
	}
	if len(by) < 2 {
		return nil
	}
	dirs := slices.Collect(maps.Keys(by))
	slices.SortFunc(dirs, func(a, b string) int {
		sa, sb := by[a].before-by[a].after, by[b].before-by[b].after
		return cmp.Or(cmp.Compare(sb, sa), strings.Compare(a, b))
	})
	var out []string
	for _, d := range dirs {
		s := by[d]
		dir := rel(base, d)
		if dir != "." && !strings.HasPrefix(dir, "../") {
			dir = "./" + dir
		}
		out = append(out, fmt.Sprintf("unflake: %s: measured %.1fs → %.1fs (%s)", dir, s.before.Seconds(), s.after.Seconds(), strings.Replace(plural(s.tests, "test"), "test", "kept test", 1)))
	}
	return out
}

// shortDuration rounds d for a summary: tenths of a second under ten
// seconds, seconds above.
func shortDuration(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// verifyProgress returns a progress printer for verification when stderr
// is a terminal, or nil: one line, rewritten in place ("unflake:
// verifying 3/9 packages, 140 test runs, about 1m20s left"), cleared at
// the end of each round.
func verifyProgress(stderr io.Writer) func(verify.Progress) {
	f := terminal(stderr)
	if f == nil {
		return nil
	}
	return func(p verify.Progress) { fmt.Fprint(f, progressLine(p)) }
}

// progressLine is what verifyProgress prints for p.
func progressLine(p verify.Progress) string {
	if p.Done >= p.Total {
		return "\r\033[K"
	}
	return "\runflake: verifying " + p.String() + "\033[K"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if word == "fix" {
		return fmt.Sprintf("%d fixes", n)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// emit prints the changes as a unified diff (diff) or writes them, each
// file atomically. A file that cannot be written (or, for a diff, a
// symlink, whose hunk neither git apply nor patch would apply as meant)
// does not stop the others: each is reported on its own line as
// "FILE: why", then one line says what was written and what was not, and
// emit returns errReported.
func (o *options) emit(changes []rewrite.Change, base string, diff bool) error {
	return o.emitAll(changes, nil, base, diff)
}

// emitAll is emit for a run in which the engine also refused files
// (rewrite.Result.Refused): files with fixes that fix will not write.
// They are reported first, as files that could not be written.
func (o *options) emitAll(changes []rewrite.Change, refused []*output.WriteError, base string, diff bool) error {
	var failed []string
	for _, w := range refused {
		failed = append(failed, rel(base, w.Path))
		fmt.Fprintln(o.stderr, oneLine(relError(w, w.Path, base)))
	}
	if diff {
		ok, err := o.diffable(changes, base)
		if err := o.printDiff(ok); err != nil {
			return err
		}
		if len(failed) > 0 {
			return errReported
		}
		return err
	}
	// go.mod and go.sum first: a test file that needs a new requirement
	// must not be written without it.
	changes = append([]rewrite.Change(nil), changes...)
	sort.SliceStable(changes, func(i, j int) bool { return !isTestPath(changes[i].Path) && isTestPath(changes[j].Path) })
	var heldBy []string // directories of modules whose go.mod or go.sum failed
	var written int
	for _, c := range changes {
		err := heldBack(c, heldBy)
		if err == nil {
			err = c.Write()
		}
		if err != nil {
			if !isTestPath(c.Path) {
				heldBy = append(heldBy, filepath.Dir(c.Path))
			}
			failed = append(failed, rel(base, c.Path))
			fmt.Fprintln(o.stderr, oneLine(relError(err, c.Path, base)))
			continue
		}
		written++
	}
	if len(failed) == 0 {
		return nil
	}
	fmt.Fprintf(o.stderr, "unflake: wrote %s; not written: %s\n", plural(written, "file"), strings.Join(failed, ", "))
	return errReported
}

// heldBack refuses to write a test file under a module directory whose
// go.mod or go.sum change failed.
func heldBack(c rewrite.Change, heldBy []string) error {
	for _, d := range heldBy {
		if isTestPath(c.Path) && strings.HasPrefix(c.Path, d+string(filepath.Separator)) {
			return fmt.Errorf("%s: needs the go.mod change that was not written; not rewritten", c.Path)
		}
	}
	return nil
}

func isTestPath(path string) bool { return strings.HasSuffix(path, "_test.go") }

// relError is err's message with path shown relative to base.
func relError(err error, path, base string) string {
	return strings.ReplaceAll(err.Error(), path, rel(base, path))
}

// A named is a change and the path its diff names (rewrite.Change.DiffPath).
type named struct {
	rewrite.Change
	name string
}

// diffable returns the changes whose diff applies as meant, each with the
// path its diff names, and prints the others (symlinks); it returns
// errReported if it left any out.
func (o *options) diffable(changes []rewrite.Change, base string) ([]named, error) {
	var ok []named
	var err error
	for _, c := range changes {
		name, e := c.DiffPath(base)
		if e != nil {
			fmt.Fprintln(o.stderr, oneLine(relError(e, c.Path, base)))
			err = errReported
			continue
		}
		ok = append(ok, named{c, name})
	}
	return ok, err
}

// printDiff prints the changes as one unified diff.
func (o *options) printDiff(changes []named) error {
	d, err := unifiedDiff(changes)
	if err != nil {
		return err
	}
	_, err = io.WriteString(o.stdout, d)
	return err
}

// emitDiff prints the findings and the changes of fix --diff in a format
// other than text.
func (o *options) emitDiff(res *rewrite.Result, base string, selected []*rule.Rule, format string) error {
	for _, w := range res.Refused {
		fmt.Fprintln(o.stderr, oneLine(relError(w, w.Path, base)))
	}
	changes, skipped := o.diffable(res.Changes, base)
	d, err := unifiedDiff(changes)
	if err != nil {
		return err
	}
	if err := o.emitDiffAs(res, d, selected, format, base); err != nil {
		return err
	}
	if len(res.Refused) > 0 {
		return errReported
	}
	return skipped
}

// emitDiffAs prints the findings and the diff d in format.
func (o *options) emitDiffAs(res *rewrite.Result, d string, selected []*rule.Rule, format, base string) error {
	findings := relFindings(res.Findings, base)
	switch format {
	case formatJSON:
		return writeFixJSON(o.stdout, findings, d)
	case formatSARIF:
		return writeSARIF(o.stdout, selected, findings)
	case formatGitHub:
		if err := writeGitHub(o.stdout, findings); err != nil {
			return err
		}
		return writeGitHubDiff(o.stdout, d)
	}
	return fmt.Errorf("internal error: format %q", format)
}

// unifiedDiff returns the changes as one unified diff, each under the
// path it is named by.
func unifiedDiff(changes []named) (string, error) {
	var buf bytes.Buffer
	for _, c := range changes {
		if err := output.WriteDiff(&buf, c.name, c.Old, c.New); err != nil {
			return "", err
		}
	}
	return buf.String(), nil
}
