package verify_test

import (
	"context"
	"go/ast"
	"slices"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// renameRule is a test rule with a proven fix: it rewrites each call of
// from to a call of to, a change of the given kind.
func renameRule(name, from, to string, kind rule.ChangeKind) *rule.Rule {
	return hypothesisRule(name, from, to, kind, "")
}

// hypothesisRule is renameRule with an unproven fix when why is set.
func hypothesisRule(name, from, to string, kind rule.ChangeKind, why string) *rule.Rule {
	return &rule.Rule{
		Name:      name,
		Doc:       "# " + name + ": a test rule\n\nA test rule.\n\n## Before\n\nx\n\n## After\n\ny\n",
		Prefilter: func(src []byte, _ rule.Values) bool { return strings.Contains(string(src), from+"(") },
		Run: func(pass *rule.Pass) error {
			for _, f := range pass.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != from {
						return true
					}
					pass.Report(rule.Diagnostic{
						Pos: call.Pos(), End: call.End(),
						Message: "calls " + from,
						// A paths change the code cannot see is the one kind
						// a rule proves (rule.Change.Unseen).
						Fix: &rule.Fix{Changes: []rule.Change{{Kind: kind, What: "a test change", Unseen: kind == rule.Paths}},
							Message:    "call " + to,
							Hypothesis: rule.Unproven(why),
							Apply: func() error {
								pass.Dst(call).(*dst.CallExpr).Fun.(*dst.Ident).Name = to
								return nil
							},
						},
					})
					return true
				})
			}
			return nil
		},
	}
}

// lateModule: in late and bounded, a counter counts one event 5ms after
// Start, and the test sleeps 400ms before checking it; a proven budget
// fix replaces the sleep by a poll that returns once the count is 1 and
// keeps the rest of the window. late's poll has a budget of 5s: it
// passes the event made a second late, which the sleep caught; bounded's
// has the window's. In broke, a proven fix makes the test fail.
var lateModule = `
-- go.mod --
module example.com/late

go 1.24
-- late/counter.go --
package late
` + counterCode + `-- late/counter_test.go --
package late
` + strings.Replace(counterTest, "POLL", `// poll waits until until holds, for up to 5s, then for the rest of d.
func poll(d time.Duration, until func() bool) {
	start := time.Now()
	for !until() && time.Since(start) < 5*time.Second {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Until(start.Add(d)))
}`, 1) + `-- bounded/counter.go --
package bounded
` + counterCode + `-- bounded/counter_test.go --
package bounded
` + strings.Replace(counterTest, "POLL", `// poll waits until until holds, for up to d, then for the rest of d.
func poll(d time.Duration, until func() bool) {
	start := time.Now()
	for !until() && time.Since(start) < d {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Until(start.Add(d)))
}`, 1) + `-- broke/broke_test.go --
package broke

import "testing"

func one() int { return 1 }

func two() int { return 2 }

func TestOne(t *testing.T) {
	if got := one(); got != 1 {
		t.Fatalf("got %d, want 1", got)
	}
}
`

// Running decides (issue 28): a proven fix's test runs, and a proven fix
// it fails after is reverted; a budget fix (a hypothesis by its kind)
// is tried on a write made late, and reverted when its poll passes it
// where the original failed.
func TestRunAimedMutants(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, lateModule)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: testmod.GoEnv(t),
		Rules: []*rule.Rule{renameRule("waitpoll", "wait", "poll", rule.Budget), renameRule("onetwo", "one", "two", rule.Paths)}}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	byPkg := map[string]rewrite.Finding{}
	for _, f := range res.Findings {
		byPkg[f.Package[strings.LastIndex(f.Package, "/")+1:]] = f
	}

	// The mutants of c.n.Add(1): late, twice, again, dropped (the sleep
	// of Start made 3x the original passes: it does not count). late's
	// poll misses the late one.
	late := byPkg["late"]
	// How many of the four the long poll kills depends on whether it fails
	// at its check or runs out its budget (a hang is no catch), so the
	// count is not pinned.
	if late.Fixed || late.Revert == nil || late.Revert.Kind != revert.Weaker {
		t.Fatalf("late: want reverted as weaker: %+v (%+v)", late, late.Revert)
	}
	for _, want := range []string{"c.n.Add(1) made ", " late at counter.go:14", "(the original fails: counter_test.go:24: n = 0, want 1)", "of 4 mutants the original kills (late, twice, again, dropped)"} {
		if !strings.Contains(late.Revert.Detail, want) {
			t.Errorf("late: reason %q lacks %q", late.Reason, want)
		}
	}

	bounded := byPkg["bounded"]
	if !bounded.Fixed || !bounded.Verified || bounded.Mutants.Killed != 4 || bounded.Mutants.Of != 4 || !slices.Contains(bounded.Mutants.Names, "late") {
		t.Errorf("bounded: want kept, killing 4 of 4 mutants, late among them: %+v", bounded)
	}
	// A budget change is a hypothesis whatever its rule proved
	// (rule.Demote): kept on what its mutants show.
	if !bounded.Unproven {
		t.Errorf("bounded: want kept as a hypothesis: %+v", bounded)
	}
	if !strings.Contains(bounded.Text(), "(verified: kills 4 of 4 mutants the original kills (late, twice, again, dropped))") {
		t.Errorf("bounded: %s", bounded.Text())
	}

	broke := byPkg["broke"]
	if broke.Fixed || broke.Revert == nil || broke.Revert.Kind != revert.FailsAfter || !strings.Contains(broke.Revert.Detail, "got 2, want 1") {
		t.Errorf("broke: want the proven fix reverted, its test failing after it: %+v (%+v)", broke, broke.Revert)
	}
	if v.Proven != 0 {
		t.Errorf("proven fixes kept: %d, want 0 (broke's is reverted, bounded's is a hypothesis)", v.Proven)
	}
}

// unshownModule: an unproven budget fix (wait made poll, which here
// waits the same) in two packages whose tests pass after it. In quiet
// the code under test writes nothing: no mutant can be aimed at it. In
// blind the code counts one event 5ms after Start, and the test only
// checks that at most one came: the original does not fail on the
// event made late, only on it made twice.
const unshownModule = `
-- go.mod --
module example.com/unshown

go 1.24
-- quiet/quiet.go --
package quiet

// Ready reports whether the service is ready.
func Ready() bool { return true }
-- quiet/quiet_test.go --
package quiet

import (
	"testing"
	"time"
)

func wait(d time.Duration) { time.Sleep(d) }

func poll(d time.Duration) { time.Sleep(d) }

func TestReady(t *testing.T) {
	wait(50 * time.Millisecond)
	if !Ready() {
		t.Fatal("not ready")
	}
}
-- blind/counter.go --
package blind
` + counterCode + `-- blind/counter_test.go --
package blind

import (
	"testing"
	"time"
)

func wait(d time.Duration) { time.Sleep(d) }

func poll(d time.Duration) { time.Sleep(d) }

func TestAtMostOne(t *testing.T) {
	var c Counter
	c.Start()
	wait(200 * time.Millisecond)
	if got := c.n.Load(); got > 1 {
		t.Fatalf("n = %d, want at most 1", got)
	}
}
-- shared/shared.go --
package shared

// Ready reports whether the service is ready.
func Ready() bool { return true }
-- shared/shared_test.go --
package shared

import (
	"testing"
	"time"
)

func wait(d time.Duration) { time.Sleep(d) }

func poll(d time.Duration) { time.Sleep(d) }

// settle is a helper two tests call: a fix in it is outside any test.
func settle(t *testing.T) {
	wait(50 * time.Millisecond)
	if !Ready() {
		t.Fatal("not ready")
	}
}

func TestA(t *testing.T) { settle(t) }

func TestB(t *testing.T) { settle(t) }
`

// An unproven budget fix whose test passes every run, and every mutant
// that counts, is still held back when no mutant aimed at lateness
// counts: nothing shows the rewrite still sees a late event.
func TestRunUnshown(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, unshownModule)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: testmod.GoEnv(t),
		Rules: []*rule.Rule{hypothesisRule("waitpoll", "wait", "poll", rule.Budget, "a longer budget passes a late event")}}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	// The tests passed every run, but their fixes were taken back: none
	// is kept (the summary counted them kept, with their measured time).
	for _, r := range v.Tests {
		if r.Kept || r.Why == nil || !r.Why.AfterRewrite() {
			t.Errorf("%s %s: kept=%v why=%+v, want reverted", r.Dir, r.Name, r.Kept, r.Why)
		}
	}
	byPkg := map[string]rewrite.Finding{}
	for _, f := range res.Findings {
		byPkg[f.Package[strings.LastIndex(f.Package, "/")+1:]] = f
	}
	for pkg, want := range map[string]string{
		"quiet": "reverted: TestReady after the rewrite shows no strength: no mutant aimed at its budget change could be made of the code the test reaches",
		"blind": "reverted: TestAtMostOne after the rewrite shows no strength: the original fails on none of the mutants aimed at its budget change (late, period x3)",
	} {
		f := byPkg[pkg]
		if f.Fixed || f.Revert == nil || f.Revert.Kind != revert.Unshown {
			t.Errorf("%s: want held back as %s: %+v (%+v)", pkg, revert.Unshown, f, f.Revert)
			continue
		}
		if !strings.HasPrefix(f.Reason, want) || !strings.HasSuffix(f.Reason, "strength cannot be shown") {
			t.Errorf("%s: reason %q, want it to start %q", pkg, f.Reason, want)
		}
	}
}
