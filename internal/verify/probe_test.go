package verify_test

import (
	"context"
	"go/ast"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// holdsReason is the stub rule's rule.Hypothesis.ProbeHolds.
const holdsReason = "the checks hold without waiting: the sleep may guard a check that nothing happens"

// waitPoll is a test rule shaped like a wait for the asserted state: it
// rewrites wait(d, until), a sleep, to poll(d, until), which returns as
// soon as until holds; its probe is skip(d, until), which does not wait.
var waitPoll = waitRule("waitpoll", true)

// waitRule returns a test rule named name that rewrites wait(d, until) to
// poll(d, until), an unproven fix, with skip(d, until) as its probe when
// probe is set (waitPoll), without one otherwise (mutate_test.go's
// waitToPoll, shaped like waitfor's fix once its probe has decided).
func waitRule(name string, probe bool) *rule.Rule {
	return &rule.Rule{
		Name:      name,
		Doc:       "# " + name + ": a test rule\n\nA test rule.\n\n## Before\n\nx\n\n## After\n\ny\n",
		Prefilter: func(src []byte, _ rule.Values) bool { return strings.Contains(string(src), "wait(") },
		Run: func(pass *rule.Pass) error {
			for _, f := range pass.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || len(call.Args) != 2 {
						return true
					}
					if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "wait" {
						return true
					}
					rename := func(name string) func() error {
						return func() error {
							pass.Dst(call).(*dst.CallExpr).Fun.(*dst.Ident).Name = name
							return nil
						}
					}
					fix := &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}},
						Message:    "poll for it",
						Hypothesis: &rule.Hypothesis{Reason: "only running tells whether the checks wait for a change"},
						Apply:      rename("poll"),
					}
					if probe {
						fix.Hypothesis.Probe = &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}}, Message: "do not wait", Apply: rename("skip")}
						fix.Hypothesis.ProbeHolds = holdsReason
					}
					pass.Report(rule.Diagnostic{
						Pos: call.Pos(), End: call.End(),
						Message: "sleeps for the state the checks assert",
						Fix:     fix,
					})
					return true
				})
			}
			return nil
		},
	}
}

// probeModule: in p, TestWaits waits for a goroutine's change (its probe
// fails), TestNothing sleeps before checking that nothing changed (its
// probe passes), and TestMixed does both, one after the other. In b the
// probe does not compile (b has no skip).
const probeModule = `
-- go.mod --
module example.com/probe

go 1.24
-- p/p_test.go --
package p

import (
	"sync/atomic"
	"testing"
	"time"
)

// wait sleeps for d; until is what the checks after it assert.
func wait(d time.Duration, until func() bool) { time.Sleep(d) }

// poll returns as soon as until holds, or after d.
func poll(d time.Duration, until func() bool) {
	deadline := time.Now().Add(d)
	for !until() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

func skip(d time.Duration, until func() bool) {}

func TestWaits(t *testing.T) {
	var done atomic.Bool
	go func() {
		time.Sleep(5 * time.Millisecond)
		done.Store(true)
	}()
	wait(200*time.Millisecond, done.Load)
	if !done.Load() {
		t.Fatal("not done")
	}
}

func TestNothing(t *testing.T) {
	var n atomic.Int32
	wait(20*time.Millisecond, func() bool { return n.Load() == 0 })
	if n.Load() != 0 {
		t.Fatal("changed")
	}
}

func TestMixed(t *testing.T) {
	var done atomic.Bool
	var n atomic.Int32
	go func() {
		time.Sleep(5 * time.Millisecond)
		done.Store(true)
	}()
	wait(200*time.Millisecond, done.Load)
	if !done.Load() {
		t.Fatal("not done")
	}
	wait(20*time.Millisecond, func() bool { return n.Load() == 0 })
	if n.Load() != 0 {
		t.Fatal("changed")
	}
}
-- b/b_test.go --
package b

import (
	"sync/atomic"
	"testing"
	"time"
)

func wait(d time.Duration, until func() bool) { time.Sleep(d) }

func poll(d time.Duration, until func() bool) {}

func TestBroken(t *testing.T) {
	var n atomic.Int32
	wait(time.Millisecond, func() bool { return n.Load() == 0 })
	if n.Load() != 0 {
		t.Fatal("changed")
	}
}
`

// Verification runs each probe first: a fix whose probe fails a test is
// tried and verified; one whose probe passes every run is held back with
// the rule's reason and the evidence, and so is one whose probe could
// not be run; a test with two probes has each decided on its own.
func TestRunProbes(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, probeModule)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{waitPoll}, Env: testmod.GoEnv(t)}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	byLine := map[string]map[int]rewrite.Finding{}
	for _, f := range res.Findings {
		if byLine[f.Test] == nil {
			byLine[f.Test] = map[int]rewrite.Finding{}
		}
		byLine[f.Test][f.Line] = f
	}
	fixed := func(test string, line int) {
		t.Helper()
		if f := byLine[test][line]; !f.Fixed || !f.Verified || f.Revert != nil {
			t.Errorf("%s:%d: want fixed and verified: %+v", test, line, f)
		}
	}
	holds := func(test string, line int) {
		t.Helper()
		f := byLine[test][line]
		want := holdsReason + " (" + test + " passed 3 runs with the probe: do not wait)"
		if f.Fixed || f.Revert == nil || f.Revert.Kind != revert.HoldsWithout || f.Reason != want {
			t.Errorf("%s:%d: want held back with\n%s\ngot %+v (%+v)", test, line, want, f, f.Revert)
		}
	}
	fixed("TestWaits", 28)
	holds("TestNothing", 36)
	fixed("TestMixed", 49)
	holds("TestMixed", 53)
	f := byLine["TestBroken"][15]
	if f.Fixed || f.Revert == nil || f.Revert.Kind != revert.ProbeUntold || !strings.HasPrefix(f.Reason, "not verified: the probe could not show that the checks wait for a change: ") {
		t.Errorf("TestBroken: want held back, the probe not run: %+v (%+v)", f, f.Revert)
	}

	var outcomes []string
	for _, p := range v.Probed {
		o := "unknown"
		switch {
		case p.Waits:
			o = "waits"
		case p.Holds():
			o = "holds"
		}
		outcomes = append(outcomes, p.Site.Test+":"+o)
	}
	for _, want := range []string{"TestWaits:waits", "TestNothing:holds", "TestMixed:waits", "TestMixed:holds", "TestBroken:unknown"} {
		if !strings.Contains(" "+strings.Join(outcomes, " ")+" ", " "+want+" ") {
			t.Errorf("probes %v: no %s", outcomes, want)
		}
	}
	if len(outcomes) != 5 {
		t.Errorf("probes %v, want 5", outcomes)
	}

	// The fixes kept are in the changes; the probes and the fixes held
	// back are not, and nothing is recorded as //unflake:ignore.
	if v.Recorded != 0 || len(res.Changes) != 1 {
		t.Fatalf("recorded %d, changes %d", v.Recorded, len(res.Changes))
	}
	src := string(res.Changes[0].New)
	if strings.Count(src, "poll(200*time.Millisecond, done.Load)") != 2 || strings.Count(src, "wait(20*time.Millisecond") != 2 || strings.Count(src, "skip(") != 1 {
		t.Errorf("rewritten file:\n%s", src)
	}
}

// companionModule: TestWaits's fix fails (this poll does not wait), so
// verification tries TestWaits's package again with the rule's companion;
// TestNothing's fix, held back by its probe, stays held in that retry.
const companionModule = `
-- go.mod --
module example.com/companion

go 1.24
-- c_test.go --
package c

import (
	"sync/atomic"
	"testing"
	"time"
)

func wait(d time.Duration, until func() bool) { time.Sleep(d) }

func poll(d time.Duration, until func() bool) {}

func skip(d time.Duration, until func() bool) {}

func TestWaits(t *testing.T) {
	var done atomic.Bool
	go func() {
		time.Sleep(5 * time.Millisecond)
		done.Store(true)
	}()
	wait(200*time.Millisecond, done.Load)
	if !done.Load() {
		t.Fatal("not done")
	}
}

func TestNothing(t *testing.T) {
	var n atomic.Int32
	wait(20*time.Millisecond, func() bool { return n.Load() == 0 })
	if n.Load() != 0 {
		t.Fatal("changed")
	}
}
`

// A retry with companions keeps the fixes the probe phase held back.
func TestRunProbesWithCompanions(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, companionModule)
	nop := &rule.Rule{Name: "nop", Doc: waitPoll.Doc, Prefilter: func([]byte, rule.Values) bool { return false }, Run: func(*rule.Pass) error { return nil }}
	withCompanion := &rule.Rule{Name: waitPoll.Name, Doc: waitPoll.Doc, Prefilter: waitPoll.Prefilter, Run: waitPoll.Run, Companions: []string{"nop"}}
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{withCompanion}, Env: testmod.GoEnv(t),
		Lookup: func(name string) *rule.Rule {
			if name == "nop" {
				return nop
			}
			return nil
		}}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if len(v.Gains) != 1 || v.Gains[0].Fixes != 0 {
		t.Errorf("want one retry with the companion, gaining nothing: %+v", v.Gains)
	}
	for _, f := range res.Findings {
		var want revert.RevertKind
		switch f.Test {
		case "TestWaits":
			want = revert.FailsAfter
		case "TestNothing":
			want = revert.HoldsWithout
		}
		if f.Fixed || f.Revert == nil || f.Revert.Kind != want {
			t.Errorf("%s: want held back as %s: %+v (%+v)", f.Test, want, f, f.Revert)
		}
	}
	if len(res.Findings) != 2 || len(v.Probed) != 2 {
		t.Errorf("%d findings, %d probes; want 2 each", len(res.Findings), len(v.Probed))
	}
}
