package attemptloop_test

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rules/attemptloop"
)

// TestTimingChecked: a deadline the rule writes says what it excluded
// (rule.Change.Checked), and a loop that is the window of a duration the
// test sets names that duration and where the test sets it.
func TestTimingChecked(t *testing.T) {
	const code = `package p

import "time"

type Breaker struct{ cooldown time.Duration }

func New(cooldown time.Duration) *Breaker { return &Breaker{cooldown: cooldown} }
func (b *Breaker) HalfOpen() bool        { return b.cooldown > 0 }
`
	const tests = `package p

import (
	"testing"
	"time"
)

func TestPlain(t *testing.T) {
	b := &Breaker{}
	for i := 0; i < 10; i++ {
		if b.HalfOpen() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !b.HalfOpen() {
		t.Fatal("still open")
	}
}

func TestConfigured(t *testing.T) {
	b := New(20 * time.Millisecond)
	for i := 0; i < 10; i++ {
		if b.HalfOpen() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !b.HalfOpen() {
		t.Fatal("still open")
	}
}
`
	diags := ruletest.Run(t, attemptloop.Rule, nil, ruletest.Package{Path: "example.com/p", Files: map[string]string{"p.go": code, "p_test.go": tests}})
	if len(diags) != 2 {
		t.Fatalf("%d diagnostics, want 2: %+v", len(diags), diags)
	}
	plain, configured := diags[0], diags[1]
	if plain.Fix == nil || len(plain.Fix.Changes) != 1 {
		t.Fatalf("TestPlain: not fixed: %s", plain.NotFixed)
	}
	if got := strings.Join(plain.Fix.Changes[0].Checked, "; "); !strings.Contains(got, "no duration the test sets reaches the code under test") || !strings.Contains(got, "no time bound") {
		t.Errorf("TestPlain: checked %q", got)
	}
	if configured.Fix != nil || !strings.Contains(configured.NotFixed, "the 20ms the test sets as cooldown (New(20 * time.Millisecond) at p_test.go:22)") {
		t.Errorf("TestConfigured: fix %v, not fixed %q", configured.Fix != nil, configured.NotFixed)
	}
}
