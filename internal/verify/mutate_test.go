package verify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// waitToPoll is a test rule shaped like waitfor's unproven fix, without
// a probe: it rewrites wait(d, until), a sleep, to poll(d, until).
var waitToPoll = waitRule("waittopoll", false)

// counterCode is the code under test of both packages of strengthModule:
// one event, counted 5ms after Start.
const counterCode = `
import (
	"sync/atomic"
	"time"
)

// A Counter counts one event, 5ms after Start.
type Counter struct{ n atomic.Int32 }

func (c *Counter) Start() {
	go func() {
		time.Sleep(5 * time.Millisecond)
		c.n.Add(1)
	}()
}
`

// counterTest is the test of both packages: a sleep, then a check that
// exactly one event came. POLL is the poll each package's fix calls.
const counterTest = `
import (
	"testing"
	"time"
)

func wait(d time.Duration, until func() bool) { time.Sleep(d) }

POLL

func TestCounts(t *testing.T) {
	var c Counter
	c.Start()
	wait(400*time.Millisecond, func() bool { return c.n.Load() == 1 })
	if got := c.n.Load(); got != 1 {
		t.Fatalf("n = %d, want 1", got)
	}
}
`

// strengthModule: in weak, the poll returns as soon as the count is 1,
// so it misses a second event 100ms later that the original's 400ms sleep
// sees; in strong, the poll keeps the rest of the window (issue 20's
// waitfor for an exact condition) and sees it.
var strengthModule = `
-- go.mod --
module example.com/strength

go 1.24
-- weak/counter.go --
package weak
` + counterCode + `-- weak/counter_test.go --
package weak
` + strings.Replace(counterTest, "POLL", `// poll returns as soon as until holds, or after d.
func poll(d time.Duration, until func() bool) {
	deadline := time.Now().Add(d)
	for !until() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}`, 1) + `-- strong/counter.go --
package strong
` + counterCode + `-- strong/counter_test.go --
package strong
` + strings.Replace(counterTest, "POLL", `// poll waits until until holds, then for the rest of d.
func poll(d time.Duration, until func() bool) {
	deadline := time.Now().Add(d)
	for !until() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Until(deadline))
}`, 1)

// An unproven fix whose test passes is tried on mutants of the code
// under test: kept when the rewritten test kills every mutant the
// original kills, reverted as weaker when it misses one.
func TestRunMutants(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, strengthModule)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{waitToPoll}, Env: testmod.GoEnv(t)}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 2, RecordIgnores: true})
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

	// The mutants of c.n.Add(1): twice, again about 100ms later, dropped. The
	// original kills each; weak's poll misses the second.
	weak := byPkg["weak"]
	if weak.Fixed || weak.Revert == nil || weak.Revert.Kind != revert.Weaker {
		t.Fatalf("weak: want reverted as weaker: %+v (%+v)", weak, weak.Revert)
	}
	for _, want := range []string{"c.n.Add(1) made again ", "later at counter.go:14", "(the original fails: counter_test.go:23: n = 2, want 1)", "kills 2 of 3 mutants the original kills (twice, again, dropped)"} {
		if !strings.Contains(weak.Revert.Detail, want) {
			t.Errorf("weak: reason %q lacks %q", weak.Reason, want)
		}
	}
	if m := weak.Mutants; m.Killed != 2 || m.Of != 3 || strings.Join(m.Names, ",") != "twice,again,dropped" {
		t.Errorf("weak: mutants %+v, want 2 of 3 killed (twice, again, dropped)", weak.Mutants)
	}
	if !strings.HasPrefix(weak.Reason, "reverted: TestCounts after the rewrite misses a bug the original catches: ") {
		t.Errorf("weak: reason %q", weak.Reason)
	}

	strong := byPkg["strong"]
	if !strong.Fixed || !strong.Verified || strong.Mutants.Killed != 3 || strong.Mutants.Of != 3 {
		t.Errorf("strong: want kept, killing 3 of 3 mutants: %+v", strong)
	}
	if got := strong.Mutants.String(); got != "kills 3 of 3 mutants the original kills (twice, again, dropped)" {
		t.Errorf("strong: %q", got)
	}

	// The fix changes a synchronisation point, which no mutant is aimed
	// at: the three of state are built for each test.
	if want := (verify.MutantCount{Tests: 2, Built: 6, Of: 6, Killed: 5}); v.Mutants != want {
		t.Errorf("mutants %+v, want %+v", v.Mutants, want)
	}

	// The weaker fix is recorded at its site; the strong one is in the
	// changes.
	if v.Recorded != 1 {
		t.Errorf("recorded %d, want 1", v.Recorded)
	}
	for _, c := range res.Changes {
		src := string(c.New)
		switch {
		case strings.HasSuffix(c.Path, "strong/counter_test.go"):
			if !strings.Contains(src, "poll(400*time.Millisecond") {
				t.Errorf("strong: not rewritten:\n%s", src)
			}
		case strings.HasSuffix(c.Path, "weak/counter_test.go"):
			if strings.Contains(src, "poll(400") || !strings.Contains(src, "//unflake:ignore waittopoll reverted by unflake fix --verify: TestCounts after the rewrite misses a bug") {
				t.Errorf("weak: want the fix recorded, not applied:\n%s", src)
			}
		}
	}
}
