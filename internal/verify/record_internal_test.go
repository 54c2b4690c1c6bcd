package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// Only a fix that was applied and that a test failed after, proven or
// not (running decides), is written down; everything else verification held back stays out of the
// diff, and no file changes for a directive alone unless it records one.
func TestRecordWritesDownOnlyTheFixesFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	x := filepath.Join(dir, "x_test.go")
	y := filepath.Join(dir, "y_test.go")
	src := "package x\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\ta()\n\tb()\n\tc()\n\td()\n}\n"
	for _, p := range []string{x, y} {
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := "x_test.go:41: got a response with status 503 while the handler was still draining its queue of pending requests, want 200"
	finding := func(file, rule string, line int, why *rewrite.Revert) rewrite.Finding {
		return rewrite.Finding{Rule: rule, Package: "x", Test: "TestA", File: file, Line: line, Revert: why,
			Reason: why.Reason()}
	}
	failed := func() *rewrite.Revert {
		return &rewrite.Revert{Kind: revert.FailsAfter, Test: "TestA", Detail: long}
	}
	res := &rewrite.Result{Findings: []rewrite.Finding{
		finding(x, "unproven", 6, failed()),
		finding(x, "proven", 7, failed()),
		finding(x, "clash", 8, &rewrite.Revert{Kind: revert.Clash, Test: "TestA", Detail: "x_test.go:9: listen unix a.sock: bind: address already in use"}),
		finding(x, "untried", 9, failed()),
		finding(y, "rounds", 6, &rewrite.Revert{Kind: revert.OutOfRounds, Detail: "verification stopped after 4 rounds"}),
		finding(y, "provenY", 7, failed()),
		finding(y, "flaky", 8, &rewrite.Revert{Kind: revert.FlakyBefore, Test: "TestA", Detail: "x"}),
	}}
	tried := map[string]bool{}
	for _, f := range res.Findings {
		switch f.Rule {
		case "unproven", "clash", "rounds", "flaky", "proven", "provenY":
			tried[f.Site().Key] = true
		}
	}
	if n := record(res, tried); n != 3 {
		t.Errorf("recorded %d fixes, want 3", n)
	}
	if len(res.Changes) != 2 || res.Changes[0].Path != x || res.Changes[1].Path != y {
		t.Fatalf("changes %+v, want x_test.go and y_test.go", res.Changes)
	}
	got := string(res.Changes[0].New)
	want := "\t//unflake:ignore unproven reverted by unflake fix --verify: TestA failed after the rewrite: x_test.go:41: got a response with status 503 while the handler was still draining its…\n\ta()\n"
	if !strings.Contains(got, want) {
		t.Errorf("x_test.go:\n%s\nlacks\n%s", got, want)
	}
	if !strings.Contains(got, "//unflake:ignore proven reverted") || strings.Count(got, "//unflake:ignore") != 2 {
		t.Errorf("x_test.go: want the unproven and the proven fix recorded, no other:\n%s", got)
	}
	if got := string(res.Changes[1].New); !strings.Contains(got, "//unflake:ignore provenY reverted") || strings.Count(got, "//unflake:ignore") != 1 {
		t.Errorf("y_test.go: want the proven fix recorded, no other:\n%s", got)
	}
	for _, f := range res.Findings {
		if f.Rule == "rounds" && !strings.HasPrefix(f.Reason, "not verified: ") {
			t.Errorf("%s: reason %q", f.Rule, f.Reason)
		}
	}
}

// A reverted unproven fix is remembered outside the source, by its site
// key: a later run recalls it (with the day it was reverted) until the
// memory is too old; another site, or no memory, recalls nothing.
func TestMemoryRecallsARevertedFix(t *testing.T) {
	t.Parallel()
	m := memory(t.TempDir())
	f := rewrite.Finding{Rule: "sleep", Package: "x", Test: "TestA", File: "/m/x_test.go", Line: 6,
		Revert: &rewrite.Revert{Kind: revert.FailsAfter, Test: "TestA", Detail: "x_test.go:7: got 2"}}
	other := f
	other.Line, other.Test = 9, "TestB"
	at := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	tried := map[string]bool{f.Site().Key: true}
	if !toRemember(f, tried) || toRemember(other, tried) {
		t.Fatalf("toRemember: applied %v, never applied %v", toRemember(f, tried), toRemember(other, tried))
	}
	m.remember(f, at)
	got := m.recall(f.Site().Key, at.Add(time.Hour))
	if got == nil || got.Kind != revert.FailsAfter || got.Detail != f.Revert.Detail || got.Remembered != "2026-12-04" {
		t.Fatalf("recalled %+v", got)
	}
	if want := "reverted by fix --verify on 2026-12-04 (remembered in unflake's cache; UNFLAKE_CACHE=off tries it again): TestA failed after the rewrite: x_test.go:7: got 2"; got.Reason() != want {
		t.Errorf("reason %q, want %q", got.Reason(), want)
	}
	// Remembered again, it stays remembered, not counted as new.
	f.Revert = got
	if !toRemember(f, map[string]bool{}) {
		t.Errorf("a remembered revert is not kept in memory")
	}
	if r := m.recall(other.Site().Key, at); r != nil {
		t.Errorf("another site recalls %+v", r)
	}
	if r := m.recall(f.Site().Key, at.Add(memoryAge+time.Hour)); r != nil {
		t.Errorf("an old memory recalls %+v", r)
	}
	if r := memory("").recall(f.Site().Key, at); r != nil {
		t.Errorf("no memory recalls %+v", r)
	}
}
