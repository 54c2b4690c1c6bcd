package verify

import (
	"testing"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// A probe's failure is evidence only at the checks after the wait: a
// failure at a later line (a later wait now too short) is not.
func TestFailsAt(t *testing.T) {
	t.Parallel()
	f := rewrite.Finding{File: "/m/state_test.go", ProbeLines: [2]int{247, 249}}
	for _, c := range []struct {
		detail string
		want   bool
	}{
		{"state_test.go:248: case 0: expected node to still be suspect", true},
		{"state_test.go:262: case 0: expected node to be dead", false},
		{"panic: index out of range\n\t/m/state_test.go:247 +0x1d", true},
		{"other_test.go:248: x", false},
		{"state_test.go:24: x; state_test.go:249: y", true},
	} {
		if got := failsAt(&rewrite.Revert{Detail: c.detail}, f); got != c.want {
			t.Errorf("failsAt(%q) = %v, want %v", c.detail, got, c.want)
		}
	}
	if !failsAt(&rewrite.Revert{Detail: "anything"}, rewrite.Finding{File: "/m/x_test.go"}) {
		t.Error("without ProbeLines a failure anywhere should count")
	}
}

// A probe's failure is read at the failing check, not at a t.Logf line
// the test printed after it (a deferred log, a cleanup): the check is
// within the lines after the wait, the log line is not.
func TestFailsAtTheCheckNotTheLog(t *testing.T) {
	t.Parallel()
	src := map[int]string{
		248: `		t.Fatalf("expected node to still be suspect")`,
		262: `	t.Logf("state: %v", s)`,
	}
	o := parseEvents(events(
		"run TestState",
		"output TestState     state_test.go:248: expected node to still be suspect",
		"output TestState     state_test.go:262: state: dead",
		"fail TestState"), func(file string, line int) string { return src[line] })
	f := rewrite.Finding{File: "/m/state_test.go", ProbeLines: [2]int{247, 249}}
	if why := (&rewrite.Revert{Kind: revert.FailsAfter, Detail: o.reason()}); !failsAt(why, f) {
		t.Errorf("failure %q is not at the checks after the wait", o.reason())
	}
}
