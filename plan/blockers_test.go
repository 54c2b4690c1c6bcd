package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/unflake/unflake/rewrite"
)

// Blockers that differ only in what they name are one kind.
func TestKindOf(t *testing.T) {
	for _, group := range [][]string{
		{
			"the test starts goroutines the analysis cannot show end (a go statement in Stop)",
			"the test starts goroutines the analysis cannot show end (a go statement in startJob)",
		},
		{
			"the module's go version is go1.12; synctest needs go1.25",
			"the module's go version is go1.16; synctest needs go1.25",
		},
		{
			"the test waits (time.After(OneSecond) at cron_test.go:159) while code under test runs concurrently with it (a go statement in Start) and checks at cron_test.go:161 after the wait",
			"the test waits (time.Sleep(5 * time.Millisecond) at chain_test.go:139) while code under test runs concurrently with it (a go statement) and checks at chain_test.go:142 after the wait",
		},
	} {
		if a, b := kindOf(group[0]), kindOf(group[1]); a != b {
			t.Errorf("kindOf differs:\n%q → %q\n%q → %q", group[0], a, group[1], b)
		}
	}
	if a, b := kindOf("a lock held across a wait"), kindOf("the real network"); a == b {
		t.Errorf("kindOf(%q) = kindOf(%q)", "a lock held across a wait", "the real network")
	}
}

// A finding counts once per kind, however many of its blockers are of
// it; the example is the commonest blocker of the kind; with measured
// times the kind that holds back the most time comes first.
func TestKinds(t *testing.T) {
	stop := "the test starts goroutines the analysis cannot show end (a go statement in Stop): in a synctest bubble ..."
	start := "the test starts goroutines the analysis cannot show end (a go statement in Start): in a synctest bubble ..."
	lock := "mu held from chain.go:66 across j.Run at chain.go:71, which waits: in a synctest bubble ..."
	fs := []rewrite.Finding{
		{Rule: "sleep", Package: "m", Test: "TestA", MeasuredMs: 1000, Blockers: []string{stop, start}},
		{Rule: "sleep", Package: "m", Test: "TestA/sub", MeasuredMs: 1000, Blockers: []string{stop}},
		{Rule: "sleep", Package: "m", Test: "TestB", MeasuredMs: 100, Blockers: []string{stop}},
		{Rule: "sleep", Package: "m", Test: "TestC", MeasuredMs: 5000, Blockers: []string{lock}},
		{Rule: "sleep", Package: "m", Test: "TestD", Fixed: true, MeasuredMs: 9000},
	}
	got := Make(Input{Findings: fs}, Options{}).Rules[0]
	want := []KindCount{
		{Example: "mu held from chain.go:66 across j.Run at chain.go:71, which waits", Count: 1, HeldMs: 5000},
		{Example: "the test starts goroutines the analysis cannot show end (a go statement in Stop)", Others: 1, Count: 3, HeldMs: 1100},
	}
	if g, w := fmt.Sprint(got.Kinds), fmt.Sprint(want); g != w {
		t.Errorf("kinds:\n got %s\nwant %s", g, w)
	}
	if got.HeldMs != 6100 {
		t.Errorf("HeldMs = %d, want 6100 (TestA once, TestB, TestC; not the fixed TestD)", got.HeldMs)
	}
	if g := got.Blockers[0]; g.Reason != lock || g.HeldMs != 5000 {
		t.Errorf("first blocker = %+v, want the lock's, 5000 ms", g)
	}
	md := Make(Input{Findings: fs}, Options{}).Markdown()
	for _, line := range []string{
		"| rule | findings | fixable | not fixable, held back by (a finding may have several; measured time of its tests) | held back (measured) | estimated saving |",
		"| sleep | 5 | 1 | 1 × mu held from chain.go:66 across j.Run at chain.go:71, which waits (5.0 s)<br>3 × the test starts goroutines the analysis cannot show end (a go statement in Stop) (1 more like it; 1.1 s) | 6.1 s | — |",
	} {
		if !strings.Contains(md, line+"\n") {
			t.Errorf("Markdown lacks the line\n%s\nin\n%s", line, md)
		}
	}
}

// A rule's row lists a few kinds, then how many more there are.
func TestKindsCellCap(t *testing.T) {
	var fs []rewrite.Finding
	for i := range maxKindsShown + 2 {
		fs = append(fs, rewrite.Finding{Rule: "sleep", Reason: fmt.Sprintf("blocker %c", 'a'+i)})
	}
	md := Make(Input{Findings: fs}, Options{}).Markdown()
	if !strings.Contains(md, "<br>2 kinds more (the JSON plan lists them) |") {
		t.Errorf("Markdown does not cap the kinds:\n%s", md)
	}
	if strings.Contains(md, "blocker "+string(rune('a'+maxKindsShown))) {
		t.Errorf("Markdown shows more than %d kinds:\n%s", maxKindsShown, md)
	}
}
