package verify

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// An interrupted run keeps what it verified: the packages whose content
// passed keep their changes (and their module's go.mod); the others are
// left as they were, their fixes held back as stopped, or with the
// failure already seen. Without an engine run, nothing changes.
func TestPartialKeepsWhatWasVerified(t *testing.T) {
	t.Parallel()
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(mod, "a"), filepath.Join(mod, "b")
	ca := rewrite.Change{Path: filepath.Join(a, "a_test.go"), New: []byte("a2")}
	cb := rewrite.Change{Path: filepath.Join(b, "b_test.go"), New: []byte("b2")}
	cm := rewrite.Change{Path: filepath.Join(mod, "go.mod"), New: []byte("module m\n\ngo 1.25\n")}
	fa := rewrite.Finding{Rule: "sleep", Package: "m/a", File: ca.Path, Line: 3, Test: "TestA", Fixed: true, Fix: "wait", Unproven: true}
	fb := rewrite.Finding{Rule: "sleep", Package: "m/b", File: cb.Path, Line: 3, Test: "TestB", Fixed: true, Fix: "wait", Unproven: true}
	fc := fb
	fc.Line, fc.Test = 9, "TestC"
	res := &rewrite.Result{Changes: []rewrite.Change{cm, ca, cb}, Findings: []rewrite.Finding{fa, fb, fc}}

	var told []Decided
	v := &verifier{opts: Options{Decided: func(d Decided) { told = append(told, d) }},
		clean: map[string]string{}, latest: map[string][]TestRun{}, roundHeld: map[string]*rewrite.Revert{}, told: map[string]bool{}}
	failed := &rewrite.Revert{Kind: revert.FailsAfter, Test: "TestC", Detail: "b_test.go:9: got 2"}
	applied := map[string]rewrite.Finding{fa.Site().Key: fa, fb.Site().Key: fb, fc.Site().Key: fc}
	v.pkgDecided(&pkgWork{dir: a, changes: []rewrite.Change{ca}, sites: []fixSite{{site: fa.Site(), test: "TestA", finding: fa}}},
		[]TestRun{{Dir: a, Name: "TestA", Kept: true, Runs: 20, Before: time.Second, After: time.Millisecond}}, nil, applied)
	v.pkgDecided(&pkgWork{dir: b, changes: []rewrite.Change{cb}},
		[]TestRun{{Dir: b, Name: "TestC", Why: failed}}, []Held{{Site: fc.Site(), Why: failed}}, applied)

	if len(told) != 2 || !told[0].Kept || told[0].Runs != 20 || told[0].Finding.Line != 3 || told[1].Kept || told[1].Why != failed {
		t.Errorf("told %+v", told)
	}

	got, out := v.partial(res, &Verification{})
	if !out.Stopped {
		t.Errorf("not marked stopped")
	}
	var paths []string
	for _, c := range got.Changes {
		paths = append(paths, c.Path)
	}
	if len(paths) != 2 || paths[0] != cm.Path || paths[1] != ca.Path {
		t.Errorf("changes %v, want go.mod and a's", paths)
	}
	byTest := map[string]rewrite.Finding{}
	for _, f := range got.Findings {
		byTest[f.Test] = f
	}
	if f := byTest["TestA"]; !f.Fixed || !f.Verified || f.BeforeMs != 1000 {
		t.Errorf("TestA: %+v", f)
	}
	if f := byTest["TestB"]; f.Fixed || f.Revert == nil || f.Revert.Kind != revert.Stopped || f.Reason != "not verified: verification was stopped before it verified this package" {
		t.Errorf("TestB: %+v", f)
	}
	if f := byTest["TestC"]; f.Fixed || f.Revert != failed {
		t.Errorf("TestC: %+v", f)
	}
	if len(out.Tests) != 2 {
		t.Errorf("tests %+v, want TestA kept and TestC reverted", out.Tests)
	}
	if r, o := v.partial(nil, &Verification{}); r != nil || !o.Stopped {
		t.Errorf("no engine run: %+v %+v", r, o)
	}
}

// A fix in a helper outside tests is verified by every test of its
// package, since any of them may call it: its runs are the fewest of any
// of those tests, never those of a test named after the helper, which
// there is none of (fix --verify once printed "kept ... (0 runs)" for
// the demo's waitDone). A test that did not keep it leaves it unverified.
func TestHelperFixCountsItsTestsRuns(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "worker")
	helper := rewrite.Finding{Rule: "sleep", Package: "m/worker", File: filepath.Join(dir, "worker_test.go"), Line: 16, Test: "waitDone", Fixed: true, Unproven: true}
	inTest := rewrite.Finding{Rule: "sleep", Package: "m/worker", File: helper.File, Line: 38, Test: "TestCounts/sub", Fixed: true, Unproven: true}
	runs := []TestRun{
		{Dir: dir, Name: "TestCounts", Kept: true, Runs: 20, Before: 30 * time.Millisecond, After: time.Millisecond},
		{Dir: dir, Name: "TestSubmit", Kept: true, Runs: 7, Before: 100 * time.Millisecond, After: 2 * time.Millisecond},
		{Dir: filepath.Join(dir, "other"), Name: "TestOther", Kept: true, Runs: 1},
	}

	var told []Decided
	v := &verifier{opts: Options{Decided: func(d Decided) { told = append(told, d) }},
		clean: map[string]string{}, latest: map[string][]TestRun{}, roundHeld: map[string]*rewrite.Revert{}, told: map[string]bool{}}
	v.pkgDecided(&pkgWork{dir: dir, all: true, tests: []string{"TestCounts"}, sites: []fixSite{
		{site: helper.Site(), finding: helper},
		{site: inTest.Site(), test: "TestCounts", finding: inTest},
	}}, runs[:2], nil, nil)
	if len(told) != 2 {
		t.Fatalf("told %+v, want both fixes kept", told)
	}
	if d := told[0]; !d.Kept || d.Runs != 7 || d.Before != 130*time.Millisecond || d.After != 3*time.Millisecond {
		t.Errorf("helper: told %+v, want kept with 7 runs (TestSubmit's), 130ms → 3ms", d)
	}
	if d := told[1]; !d.Kept || d.Runs != 20 || d.Before != 30*time.Millisecond {
		t.Errorf("TestCounts: told %+v, want kept with its own 20 runs", d)
	}

	out := &Verification{Tests: runs}
	if got := out.RunsOf(helper); got != 7 {
		t.Errorf("RunsOf(helper) = %d, want 7: the fewest of its package's tests", got)
	}
	if got := out.RunsOf(inTest); got != 20 {
		t.Errorf("RunsOf(TestCounts/sub) = %d, want 20", got)
	}
	if ok, before, _ := covered(runs[:2], helper.Test); !ok || before != 130 {
		t.Errorf("covered(helper) = %v, %dms; want verified, 130ms", ok, before)
	}

	// One of its tests did not keep it: the helper's fix is not verified
	// (and no run count makes it look so), the other test's fix still is.
	runs[1].Kept, runs[1].Why = false, &rewrite.Revert{Kind: revert.FailsAfter, Test: "TestSubmit", Detail: "worker_test.go:18: done = 2, want 3"}
	if got := out.RunsOf(helper); got != 0 {
		t.Errorf("RunsOf(helper) with TestSubmit reverted = %d, want 0", got)
	}
	if got := out.RunsOf(inTest); got != 20 {
		t.Errorf("RunsOf(TestCounts/sub) with TestSubmit reverted = %d, want 20", got)
	}

	// A run kept with no run counted is the fewest, not skipped over.
	zero := []TestRun{{Dir: dir, Name: "TestA", Kept: true}, {Dir: dir, Name: "TestB", Kept: true, Runs: 20}}
	if got := runsOf(zero, dir, ""); got != 0 {
		t.Errorf("runsOf with a run of 0 = %d, want 0", got)
	}
}
