package spin

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Busy waits for the clock in its loop's condition.
func Busy(d time.Duration) { // want Busy:`spins: spin.Busy, which spins on the real clock in a loop that never blocks \(spin.go:12\)`
	for start := time.Now(); time.Since(start) < d; {
	}
}

// Deadline waits for the clock in an if that leaves the loop, through a
// variable set from it.
func Deadline(deadline time.Time, ready func() bool) bool { // want Deadline:`opaque: calls the function value ready; spins: spin.Deadline, which spins on the real clock in a loop that never blocks \(spin.go:19\)`
	for {
		now := time.Now()
		if ready() {
			return true
		}
		if now.After(deadline) {
			return false
		}
	}
}

// Outer spins through Busy.
func Outer() { Busy(time.Millisecond) } // want Outer:`spins: spin.Outer → spin.Busy, which spins on the real clock in a loop that never blocks \(spin.go:12\)`

// InGoroutine spins on a goroutine of its own, which holds a bubble's
// clock as much.
func InGoroutine(done chan struct{}) { // want InGoroutine:`spins: spin.InGoroutine, which spins on the real clock in a loop that never blocks \(spin.go:38\)`
	go func() {
		deadline := time.Now().Add(time.Millisecond)
		for time.Now().Before(deadline) {
		}
		close(done)
	}()
}

// Sleeps polls with a sleep: it blocks, no spin.
func Sleeps(d time.Duration, ready func() bool) { // want Sleeps:`opaque: calls the function value ready; reads-clock: spin.Sleeps, which reads the clock \(spin.go:46\); blocks`
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if ready() {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Selects waits on a channel or a timer.
func Selects(ch chan int) { // want Selects:`blocks`
	for start := time.Now(); time.Since(start) < time.Second; {
		select {
		case <-ch:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// Polls does not spin: the select has a default.
func Polls(ch chan int) { // want Polls:`spins: spin.Polls, which spins on the real clock in a loop that never blocks \(spin.go:67\)`
	for start := time.Now(); time.Since(start) < time.Second; {
		select {
		case <-ch:
			return
		default:
		}
	}
}

func pause() { time.Sleep(time.Millisecond) }

// CallsPause blocks in a function it calls: no spin.
func CallsPause() { // want CallsPause:`blocks`
	for start := time.Now(); time.Since(start) < time.Second; {
		pause()
	}
}

// Waits blocks on a wait group.
func Waits(wg *sync.WaitGroup) { wg.Wait() } // want Waits:`blocks`

// Stamps reads the clock in a loop that the clock does not end: no spin.
func Stamps(n int) []time.Time { // want Stamps:`reads-clock: spin.Stamps, which reads the clock \(spin.go:92\)`
	var ts []time.Time
	for i := 0; i < n; i++ {
		ts = append(ts, time.Now())
	}
	return ts
}

// Locks takes a mutex, which does not block durably: a spin.
func Locks(mu *sync.Mutex) { // want Locks:`spins: spin.Locks, which spins on the real clock in a loop that never blocks \(spin.go:99\)`
	for start := time.Now(); time.Since(start) < time.Second; {
		mu.Lock()
		mu.Unlock()
	}
}

// Bubble runs f in a bubble.
func Bubble(t *testing.T, f func(*testing.T)) { synctest.Test(t, f) } // want Bubble:`runs a bubble; bubbles: \[1\]`

// Wrapped runs f inside a literal it runs in a bubble.
func Wrapped(t *testing.T, name string, f func(*testing.T)) { // want Wrapped:`runs a bubble; bubbles: \[2\]`
	synctest.Test(t, func(t *testing.T) {
		t.Helper()
		f(t)
	})
}

// Twice hands f to Wrapped, inside a subtest.
func Twice(t *testing.T, f func(*testing.T)) { // want Twice:`runs a bubble; bubbles: \[1\]`
	t.Run("x", func(t *testing.T) { Wrapped(t, "y", f) })
}

// Plain runs f outside any bubble.
func Plain(t *testing.T, f func(*testing.T)) { f(t) } // want Plain:`opaque: calls the function value f`

// Own runs a literal of its own in a bubble.
func Own(t *testing.T) { // want Own:`runs a bubble`
	synctest.Test(t, func(t *testing.T) {})
}

// Until polls ready and fails the test at the deadline: t.Fatal ends the
// loop as a return would.
func Until(t *testing.T, ready func() bool) { // want Until:`opaque: calls the function value ready; spins: spin.Until, which spins on the real clock in a loop that never blocks \(spin.go:133\)`
	start := time.Now()
	for !ready() {
		if time.Since(start) > time.Second {
			t.Fatal("not ready")
		}
	}
}

// Stamp reads the clock once: no spin, but a reading (Summary.Clock),
// which the clock hazards of a bubble follow across packages.
func Stamp() time.Time { return time.Now() } // want Stamp:`reads-clock: spin.Stamp, which reads the clock \(spin.go:142\)`

// Stamped reads it through Stamp.
func Stamped() int64 { return Stamp().UnixNano() } // want Stamped:`reads-clock: spin.Stamped → spin.Stamp, which reads the clock \(spin.go:142\)`
