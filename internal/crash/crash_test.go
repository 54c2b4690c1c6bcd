package crash_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/crash"
)

// recovered runs f and returns its panic as recovered by a deferred
// function, as the engine does.
func recovered(f func()) (p *crash.Panic) {
	defer func() {
		if v := recover(); v != nil {
			p = crash.Recovered(v)
		}
	}()
	f()
	return nil
}

type box struct{ n *int }

//go:noinline
func deref(b box) int { return *b.n }

// The frame is the innermost one of unflake's code, below the runtime's.
func TestRecoveredFrame(t *testing.T) {
	p := recovered(func() { deref(box{}) })
	if p == nil {
		t.Fatal("no panic recovered")
	}
	var rt runtime.Error
	if !errors.As(p, &rt) {
		t.Errorf("%v: the runtime error is not unwrapped", p)
	}
	if !strings.HasPrefix(p.Frame, "internal/crash/crash_test.go:") || !strings.HasSuffix(p.Frame, " (crash_test.deref)") {
		t.Errorf("frame %q, want internal/crash/crash_test.go:N (crash_test.deref)", p.Frame)
	}
	if !strings.HasPrefix(p.Error(), "panic: runtime error: invalid memory address or nil pointer dereference (at internal/crash/crash_test.go:") {
		t.Errorf("message %q", p.Error())
	}
}

// A Panic re-raised from an inner recover keeps the frame it was first
// raised at.
func TestRecoveredAgain(t *testing.T) {
	p := recovered(func() {
		defer func() {
			if v := recover(); v != nil {
				panic(crash.Recovered(v))
			}
		}()
		panic("boom")
	})
	if p == nil || p.Value != "boom" || !strings.Contains(p.Frame, "crash_test.TestRecoveredAgain.func1") {
		t.Errorf("got %#v, want boom at crash_test.TestRecoveredAgain.func1", p)
	}
}
