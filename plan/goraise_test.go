package plan_test

import (
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/unflake/unflake/plan"
	"github.com/unflake/unflake/rewrite"
)

func TestGoRaises(t *testing.T) {
	t.Parallel()
	before := []rewrite.Finding{
		{ID: "a", File: "m/a_test.go"},              // unlocked at go1.25
		{ID: "b", File: "m/a_test.go", Fixed: true}, // fixed anyway
		{ID: "c", File: "m/sub/c_test.go"},          // unlocked at go1.24
		{ID: "d", File: "n/d_test.go"},              // still not fixed
		{ID: "e", File: "n/e_test.go"},              // fixed without a gate: not the raise's doing
		{ID: "f", File: "n/f_test.go"},              // unproven at go1.25
		{ID: "g", File: "o/g_test.go"},              // for review only at go1.25
	}
	raised := []rewrite.Finding{
		{ID: "a", File: "m/a_test.go", Fixed: true, NeedsGo: "go1.25", SavingMs: 50},
		{ID: "b", File: "m/a_test.go", Fixed: true, NeedsGo: "go1.25", SavingMs: 10},
		{ID: "c", File: "m/sub/c_test.go", Fixed: true, NeedsGo: "go1.24", SavingMs: 7},
		{ID: "d", File: "n/d_test.go"},
		{ID: "e", File: "n/e_test.go", Fixed: true},
		{ID: "f", File: "n/f_test.go", NeedsGo: "go1.25", SavingMs: 100},
		{ID: "g", File: "o/g_test.go", NeedsGo: "go1.25", SavingMs: 30, Review: true},
	}
	module := func(file string) string { return strings.SplitN(path.Dir(file), "/", 2)[0] }
	got := plan.GoRaises(before, raised, module, plan.ProvenOnly)
	want := []plan.GoRaise{{Module: "m", To: "go1.25", Fixes: 2, EstimatedSavingMs: 57}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GoRaises = %+v, want %+v", got, want)
	}
	got = plan.GoRaises(before, raised, module, plan.Verifiable)
	want = append(want, plan.GoRaise{Module: "n", To: "go1.25", Fixes: 1, EstimatedSavingMs: 100})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GoRaises with the verifiable = %+v, want %+v (not the fix for review only)", got, want)
	}
	got = plan.GoRaises(before, raised, module, plan.ForReview)
	want = append(want, plan.GoRaise{Module: "o", To: "go1.25", Fixes: 1, EstimatedSavingMs: 30})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GoRaises for review = %+v, want %+v", got, want)
	}
	if got := plan.GoRaises(before, before, module, plan.ForReview); len(got) != 0 {
		t.Errorf("without a raise: %+v, want none", got)
	}
}

func TestMarkdownGoRaise(t *testing.T) {
	t.Parallel()
	p := plan.Make(plan.Input{GoRaises: []plan.GoRaise{{Module: ".", To: "go1.25", Fixes: 3, EstimatedSavingMs: 1500}}}, plan.Options{})
	md := p.Markdown()
	for _, want := range []string{"## Go directive", "| `.` | go1.25 | 3 | 1.5 s |", "fix --raise-go"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if md := plan.Make(plan.Input{}, plan.Options{}).Markdown(); strings.Contains(md, "Go directive") {
		t.Errorf("a plan without raises shows the section:\n%s", md)
	}
}

func TestGoHolds(t *testing.T) {
	t.Parallel()
	version := "the module's go version is go1.18; synctest needs go1.25"
	before := []rewrite.Finding{
		{ID: "a", Blockers: []string{version, "a goroutine"}},              // still held back by the goroutine
		{ID: "b", Blockers: []string{version, "the network"}},              // and by the network
		{ID: "c", Blockers: []string{version, "a goroutine"}},              // unproven once raised
		{ID: "d", Reason: "a check repeats a call"},                        // nothing to do with the version
		{ID: "e", Blockers: []string{version}},                             // unlocked: GoRaises counts it
		{ID: "f", Blockers: []string{version, "a goroutine"}, Fixed: true}, // fixed anyway
	}
	raised := []rewrite.Finding{
		{ID: "a", Blockers: []string{"a goroutine"}},
		{ID: "b", Blockers: []string{"the network"}},
		{ID: "c", Blockers: []string{"a goroutine"}, NeedsGo: "go1.25"},
		{ID: "d", Reason: "a check repeats a call"},
		{ID: "e", Fixed: true, NeedsGo: "go1.25"},
		{ID: "f", Fixed: true},
	}
	got := plan.GoHolds(before, raised)
	want := plan.GoHeld{Findings: 3, Unproven: 1, By: []plan.ReasonCount{{Reason: "a goroutine", Count: 2}, {Reason: "the network", Count: 1}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GoHolds = %+v, want %+v", got, want)
	}
	if got := plan.GoHolds(before, before); got.Findings != 0 {
		t.Errorf("without a raise: %+v, want none", got)
	}
}
