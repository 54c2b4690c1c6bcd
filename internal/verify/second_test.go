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

// A kept clock fix's test runs twice in one process: a second run that
// fails where the original passed twice holds the fix back.
func TestRunSecondRun(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, secondModule)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: testmod.GoEnv(t),
		Rules: []*rule.Rule{hypothesisRule("waitpoll", "wait", "poll", rule.Clock, "the clock may leave state for the next run")}}
	res, _, err := verify.Run(context.Background(), cfg, verify.Options{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	byTest := map[string]rewrite.Finding{}
	for _, f := range res.Findings {
		if f.Revert != nil {
			byTest[f.Revert.Test] = f
		}
	}
	fresh := byTest["TestFresh"]
	if fresh.Fixed || fresh.Revert == nil || fresh.Revert.Kind != revert.FailsAfter || !strings.HasPrefix(fresh.Revert.Detail, "on its second run in one process") || !strings.Contains(fresh.Revert.Detail, "left over from the first run") {
		t.Errorf("TestFresh: want held back on its second run: %+v (%+v)", fresh, fresh.Revert)
	}
	// TestOwn's fix passes its second run test (the original fails it
	// too) and is then held back for strength: nothing aimed at the
	// clock can be made of Ready.
	own := byTest["TestOwn"]
	if own.Fixed || own.Revert == nil || own.Revert.Kind != revert.Unshown {
		t.Errorf("TestOwn: want held back as %s, not for its second run: %+v (%+v)", revert.Unshown, own, own.Revert)
	}
}
