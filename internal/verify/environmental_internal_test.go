package verify

import (
	"testing"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// The original failing on a mutant over a resource its parallel copies
// hold is the environment's doing, never a kill that blames the fix
// (freeport_rt9_statsd: the fixed-port original failed "bind: address
// already in use" under a mutant, and the sound fix was reverted).
func TestEnvironmentalFailuresAreNoKills(t *testing.T) {
	cases := []struct {
		detail string
		want   bool
	}{
		{"statsd_test.go:14: listen udp 127.0.0.1:18125: bind: address already in use", true},
		{"app_test.go:20: open /tmp/app.lock: file exists", true},
		{"db_test.go:9: database is locked", true},
		{"statsd_test.go:31: got 2 packets, want 1", false},
		{"lease_test.go:40: the lease lapsed while the keeper ran", false},
	}
	for _, c := range cases {
		why := &rewrite.Revert{Kind: revert.FailsAfter, Test: "TestX", Detail: c.detail}
		if got := environmental(why); got != c.want {
			t.Errorf("environmental(%q) = %v, want %v", c.detail, got, c.want)
		}
	}
	if environmental(nil) {
		t.Errorf("environmental(nil) = true: a mutant the original passes is no clash")
	}
}
