package cli

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/verify"
)

// The summary counts the waits whose checks held without them, not those
// that wait for a change or whose probe told nothing.
func TestVerifySummaryProbes(t *testing.T) {
	t.Parallel()
	v := &verify.Verification{Probed: []verify.Probe{
		{Test: "TestA", Runs: 20},
		{Test: "TestB", Waits: true, Why: &rewrite.Revert{Kind: rewrite.FailsAfter}},
		{Test: "TestC", Why: &rewrite.Revert{Kind: rewrite.FailsBefore}},
		{Test: "TestD", Runs: 20},
	}}
	if s := verifySummary(v, "/"); !strings.Contains(s, "; 2 waits left: their checks hold without waiting") {
		t.Errorf("summary %q", s)
	}
	v.Probed = v.Probed[:3]
	if s := verifySummary(v, "/"); !strings.Contains(s, "; 1 wait left: its checks hold without waiting") {
		t.Errorf("summary %q", s)
	}
	v.Probed = v.Probed[1:]
	if s := verifySummary(v, "/"); strings.Contains(s, "wait") {
		t.Errorf("summary %q", s)
	}
}
