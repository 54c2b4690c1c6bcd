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
