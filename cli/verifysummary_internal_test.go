package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// The summary counts the waits whose checks held without them, not those
// that wait for a change or whose probe told nothing.
func TestVerifySummaryProbes(t *testing.T) {
	t.Parallel()
	v := &verify.Verification{Probed: []verify.Probe{
		{Test: "TestA", Runs: 20},
		{Test: "TestB", Waits: true, Why: &rewrite.Revert{Kind: revert.FailsAfter}},
		{Test: "TestC", Why: &rewrite.Revert{Kind: revert.FailsBefore}},
		{Test: "TestD", Runs: 20},
	}}
	if s := verifySummary(v, "/"); !strings.Contains(s, "; 2 waits left: their checks hold without waiting") {
		t.Errorf("summary %q", s)
	}
	v.Probed = v.Probed[:3]
	if s := verifySummary(v, "/"); !strings.Contains(s, "; 1 wait left: its checks hold without waiting") {
		t.Errorf("summary %q", s)
	}
	v.Probed = v.Probed[1:]
	if s := verifySummary(v, "/"); strings.Contains(s, "wait") {
		t.Errorf("summary %q", s)
	}
}

// Tests whose failure was not the fixes' doing are not verified, not
// reverted; a test that passed alone after failing beside its parallel
// runs says so.
func TestVerifySummaryNotVerified(t *testing.T) {
	t.Parallel()
	v := &verify.Verification{Tests: []verify.TestRun{
		{Name: "TestKept", Kept: true, Runs: 20},
		{Name: "TestAlone", Kept: true, Runs: 20, Alone: "a_test.go:9: listen tcp :8080: bind: address already in use"},
		{Name: "TestBad", Why: &rewrite.Revert{Kind: revert.FailsAfter}},
		{Name: "TestBefore", Why: &rewrite.Revert{Kind: revert.FailsBefore}},
		{Name: "TestFlaky", Why: &rewrite.Revert{Kind: revert.FlakyBefore}},
		{Name: "TestClash", Why: &rewrite.Revert{Kind: revert.Clash}},
	}}
	s := verifySummary(v, "/")
	for _, want := range []string{
		"verified 6 tests: 2 kept, 1 reverted, 3 not verified (20 runs each after the rewrite)",
		"; 1 test passed alone after failing beside other runs (a_test.go:9: listen tcp :8080: bind: address already in use)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
}

// The summary counts the proven fixes, whose tests ran too, and says what
// verification cost beside one run of the affected tests.
func TestVerifySummaryProvenAndTime(t *testing.T) {
	t.Parallel()
	v := &verify.Verification{
		Tests:   []verify.TestRun{{Name: "TestKept", Kept: true, Runs: 20}},
		Proven:  7,
		Elapsed: 70*time.Second + 400*time.Millisecond,
		Suite:   4200 * time.Millisecond,
	}
	s := verifySummary(v, "/")
	for _, want := range []string{
		"verified 1 test: 1 kept, 0 reverted (20 runs each after the rewrite)",
		"; 7 proven fixes kept: their tests ran as every fix's do",
		"; verified in 1m10s; one run of the affected tests takes 4.2s",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
	// Only proven fixes: their tests ran all the same.
	v = &verify.Verification{Tests: []verify.TestRun{{Name: "TestKept", Kept: true, Runs: 2}}, Proven: 1, Elapsed: 2 * time.Second}
	if s := verifySummary(v, "/"); s != "verified 1 test: 1 kept, 0 reverted (2 runs each after the rewrite); 1 proven fix kept: their tests ran as every fix's do; verified in 2s" {
		t.Errorf("summary %q", s)
	}
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	if got, want := progressLine(verify.Progress{Round: 1, Done: 3, Total: 9, Runs: 140, Left: 80 * time.Second}), "\runflake: verifying 3/9 packages, 140 test runs, about 1m20s left\033[K"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := progressLine(verify.Progress{Round: 1, Done: 9, Total: 9}); got != "\r\033[K" {
		t.Errorf("the last line %q does not clear", got)
	}
}

// A deflake kept because it is deterministic may be slower: the summary
// and the fix's line do not present that as a saving.
func TestVerifySummaryKeptSlower(t *testing.T) {
	t.Parallel()
	v := &verify.Verification{Tests: []verify.TestRun{{Name: "TestA", Kept: true, Runs: 20, Before: 20 * time.Millisecond, After: 200 * time.Millisecond}}}
	s := verifySummary(v, "/")
	if want := "; kept as deterministic, not faster (0.0s → 0.2s)"; !strings.Contains(s, want) || strings.Contains(s, "measured") {
		t.Errorf("summary %q, want %q", s, want)
	}
	v.Tests[0].After = 2 * time.Millisecond
	if s := verifySummary(v, "/"); !strings.Contains(s, "; measured 0.0s → 0.0s") {
		t.Errorf("summary %q", s)
	}
	if got, want := runsAndTimes(20, 10*time.Millisecond, 210*time.Millisecond), "20 runs; deterministic, not faster: 0.0s → 0.2s"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := runsAndTimes(6, 3*time.Second, 100*time.Millisecond), "6 runs, 3.0s → 0.1s"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// Each fix kept is one line, with its runs and the mutants it killed.
func TestKeptLines(t *testing.T) {
	t.Parallel()
	res := &rewrite.Result{Findings: []rewrite.Finding{
		{Rule: "waitfor", File: "/m/a/a_test.go", Line: 12, Test: "TestA", Fixed: true, Verified: true, BeforeMs: 1200, AfterMs: 100,
			Mutants: rewrite.Mutants{Killed: 3, Of: 3, Names: []string{"late", "period x3", "twice"}}},
		{Rule: "leak", File: "/m/a/a_test.go", Line: 20, Test: "TestA", Fixed: true, Verified: true, BeforeMs: 1200, AfterMs: 100},
		{Rule: "sleep", File: "/m/a/a_test.go", Line: 30, Test: "TestA"},
		// In a helper outside tests: every test of the package verified
		// it, and the fewest runs of any of them count, not a test named
		// waitDone's (none: that said "0 runs").
		{Rule: "attemptloop", File: "/m/a/a_test.go", Line: 40, Test: "waitDone", Fixed: true, Verified: true, BeforeMs: 1500, AfterMs: 200},
	}}
	v := &verify.Verification{Tests: []verify.TestRun{{Dir: "/m/a", Name: "TestA", Kept: true, Runs: 20}, {Dir: "/m/a", Name: "TestB", Kept: true, Runs: 12}}}
	got := strings.Join(keptLines(res, v, "/m"), "\n")
	want := "unflake: kept a/a_test.go:12 waitfor (20 runs, 1.2s → 0.1s; verified: kills 3 of 3 mutants the original kills (late, period x3, twice))\n" +
		"unflake: kept a/a_test.go:20 leak (20 runs, 1.2s → 0.1s)\n" +
		"unflake: kept a/a_test.go:40 attemptloop (12 runs, 1.5s → 0.2s)"
	if got != want {
		t.Errorf("kept lines:\n%s\nwant\n%s", got, want)
	}
}

// Each decided fix is one line: kept with its runs, reverted with why.
func TestDecidedLine(t *testing.T) {
	t.Parallel()
	f := rewrite.Finding{Rule: "sleep", File: "/m/a/a_test.go", Line: 12, Test: "TestA"}
	kept := verify.Decided{Finding: f, Kept: true, Runs: 20, Before: time.Second, After: 100 * time.Millisecond}
	if got, want := decidedLine(kept, "/m"), "unflake: kept a/a_test.go:12 sleep (20 runs, 1.0s → 0.1s)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	why := &rewrite.Revert{Kind: revert.FailsAfter, Test: "TestA", Detail: "a_test.go:14: got 2"}
	if got, want := decidedLine(verify.Decided{Finding: f, Why: why}, "/m"), "unflake: reverted a/a_test.go:12 sleep: TestA failed after the rewrite: a_test.go:14: got 2"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// A verified run that reverts every fix it tries changes no file, and
// says so rather than "rewrote 1 file (0 fixes)".
func TestNoChangeSummary(t *testing.T) {
	t.Parallel()
	res := &rewrite.Result{Findings: []rewrite.Finding{
		{Rule: "sleep", Revert: &rewrite.Revert{Kind: revert.FailsAfter}},
		{Rule: "sleep", Revert: &rewrite.Revert{Kind: revert.FailsBefore}},
	}}
	if got, want := noChangeSummary(res, false), "unflake: no file changed: verification reverted every fix it tried (1 fix); 1 finding not fixed (see unflake check)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// With kept tests in several packages, a line per package says where the
// time went, the largest saving first.
func TestPackageTimes(t *testing.T) {
	t.Parallel()
	v := &verify.Verification{Tests: []verify.TestRun{
		{Dir: "/m/a", Name: "TestA", Kept: true, Before: time.Second, After: 100 * time.Millisecond},
		{Dir: "/m/b", Name: "TestB", Kept: true, Before: 3 * time.Second, After: 0},
		{Dir: "/m/b", Name: "TestC", Kept: true, Before: 2 * time.Second, After: 0},
		{Dir: "/m/c", Name: "TestD", Before: 9 * time.Second}, // reverted: not counted
	}}
	got := strings.Join(packageTimes(v, "/m"), "\n")
	want := "unflake: ./b: measured 5.0s → 0.0s (2 kept tests)\nunflake: ./a: measured 1.0s → 0.1s (1 kept test)"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	v.Tests = v.Tests[:1]
	if got := packageTimes(v, "/m"); got != nil {
		t.Errorf("one package: got %q; the summary says it", got)
	}
}
