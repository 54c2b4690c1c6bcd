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

// secondModule: a clock fix (wait made poll) whose rewrite passes once
// per process, as a bubble that leaves package state for the next run
// does: TestFresh passed twice in one process before it. TestOwn fails
// its second run in one process before the rewrite too: that says
// nothing of the fix.
const secondModule = `
-- go.mod --
module example.com/second

go 1.24
-- p/p.go --
package p

// Ready reports whether the service is ready.
func Ready() bool { return true }
-- p/p_test.go --
package p

import "testing"

var polled = map[string]bool{}

func wait(name string) bool { return Ready() }

// poll passes once per process for each name.
func poll(name string) bool {
	if polled[name] {
		return false
	}
	polled[name] = true
	return Ready()
}

func TestFresh(t *testing.T) {
	if !wait("fresh") {
		t.Fatal("left over from the first run")
	}
}

var own int

func TestOwn(t *testing.T) {
	if own++; own > 1 {
		t.Fatal("the test's own state")
	}
	if !wait("own") {
		t.Fatal("left over from the first run")
	}
}
`

// A clock fix's test would run twice in one process (second.go), a
// second run that fails where the original passed twice holding the fix
// back. Since red-team batch 41 a clock change is held back before any
// run (rule.Unprovable): neither test runs with the fix, and each says
// so. They are held back in the engine run that meets them: one run in
// all, not one that applies them and a second that takes them back
// (each run loads every package).
func TestRunSecondRun(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, secondModule)
	runs := 0 // engine runs: each ends with Progress(total, total)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: testmod.GoEnv(t),
		Rules: []*rule.Rule{hypothesisRule("waitpoll", "wait", "poll", rule.Clock, "the clock may leave state for the next run")},
		Progress: func(done, total int) {
			if done == total {
				runs++
			}
		}}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("%d engine runs, want 1: a fix no run can show the strength of is held back in the run that meets it", runs)
	}
	if len(v.Reverts) != 2 || len(v.Tests) != 0 {
		t.Errorf("verification: %d reverts, %d tests run; want 2 held back and none run", len(v.Reverts), len(v.Tests))
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	n := 0
	for _, f := range res.Findings {
		n++
		if f.Fixed || f.Revert == nil || f.Revert.Kind != revert.Unshown || !f.Revert.Unrun || !strings.Contains(f.Revert.Detail, "clock change: ") {
			t.Errorf("%s: want held back before any run: %+v (%+v)", f.Test, f, f.Revert)
		}
	}
	if n != 2 {
		t.Errorf("%d findings, want 2", n)
	}
}
