package attemptloop

import (
	"testing"
	"time"

	"github.com/unflake/unflake/internal/polls"
	"github.com/unflake/unflake/rule"
)

func TestPollTimeoutFlag(t *testing.T) {
	r := Rule
	pass := &rule.Pass{Rule: r}
	if got := polls.Timeout.Get(pass); got != polls.DefaultTimeout {
		t.Errorf("default poll timeout = %v, want %v", got, polls.DefaultTimeout)
	}
	if err := pass.Options.Set(r, polls.Timeout.Name(), "1500ms"); err != nil {
		t.Fatal(err)
	}
	if got := polls.Timeout.Get(pass); got != 1500*time.Millisecond {
		t.Errorf("poll timeout after -poll-timeout=1500ms = %v", got)
	}
	for _, bad := range []string{"0s", "-1s", "soon"} {
		var opts rule.Options
		if err := opts.Set(r, polls.Timeout.Name(), bad); err == nil {
			t.Errorf("-poll-timeout=%s is accepted", bad)
		}
	}
	// A run's value leaves the declaration alone: another run, and the
	// declared default, still see 10s.
	if got := polls.Timeout.Get(&rule.Pass{Rule: r}); got != polls.DefaultTimeout {
		t.Errorf("another run: %v", got)
	}
	if f := r.Flags.Lookup(polls.Timeout.Name()); f.Value.String() != f.DefValue {
		t.Errorf("the declaration changed: %s, declared %s", f.Value, f.DefValue)
	}
}

func TestPrefilter(t *testing.T) {
	for src, want := range map[string]bool{
		"import \"time\"\nfunc f() { time.Sleep(1) }":         true,
		"import tm \"time\"\nfunc f() { <-tm.After(1) }":      true,
		"import \"time\"\nfunc f() { _ = time.Now() }":        false,
		"import \"fmt\"\nfunc f() { fmt.Println(\"Sleep\") }": false,
	} {
		if got := prefilter([]byte(src), rule.Values{}); got != want {
			t.Errorf("prefilter(%q) = %v, want %v", src, got, want)
		}
	}
}
