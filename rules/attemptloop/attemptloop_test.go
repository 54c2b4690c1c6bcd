package attemptloop

import (
	"flag"
	"testing"
	"time"

	"github.com/unflake/unflake/rule"
)

func TestPollTimeoutFlag(t *testing.T) {
	r := &rule.Rule{Flags: newFlags()}
	pass := &rule.Pass{Rule: r}
	if got := pollTimeout(pass); got != defaultPollTimeout {
		t.Errorf("default poll timeout = %v, want %v", got, defaultPollTimeout)
	}
	if err := r.Flags.Parse([]string{"-poll-timeout=1500ms"}); err != nil {
		t.Fatal(err)
	}
	if got := pollTimeout(pass); got != 1500*time.Millisecond {
		t.Errorf("poll timeout after -poll-timeout=1500ms = %v", got)
	}
	for _, bad := range []string{"0s", "-1s", "soon"} {
		if err := r.Flags.Lookup(pollTimeoutFlag).Value.Set(bad); err == nil {
			t.Errorf("-poll-timeout=%s is accepted", bad)
		}
	}
	// The default survives a reset to DefValue, as the command line does
	// between runs.
	f := r.Flags.Lookup(pollTimeoutFlag)
	if err := f.Value.Set(f.DefValue); err != nil {
		t.Fatal(err)
	}
	if got := f.Value.(flag.Getter).Get(); got != defaultPollTimeout {
		t.Errorf("after reset: %v", got)
	}
}

func TestPrefilter(t *testing.T) {
	for src, want := range map[string]bool{
		"import \"time\"\nfunc f() { time.Sleep(1) }":         true,
		"import tm \"time\"\nfunc f() { <-tm.After(1) }":      true,
		"import \"time\"\nfunc f() { _ = time.Now() }":        false,
		"import \"fmt\"\nfunc f() { fmt.Println(\"Sleep\") }": false,
	} {
		if got := prefilter([]byte(src)); got != want {
			t.Errorf("prefilter(%q) = %v, want %v", src, got, want)
		}
	}
}
