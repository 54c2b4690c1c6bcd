package verify

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// A watch reads a test process's test2json events as they come and stops
// the process (stop) when a top-level test runs past its limit: a hang
// is then known after a few times the test's own time, not at the end of
// its process's -test.timeout, which covers every test the process runs.
// A paused parallel test's clock stops while it waits.
type watch struct {
	limits map[string]time.Duration
	stop_  func()

	mu      sync.Mutex
	partial []byte
	running map[string]*timing // top-level test → its clock
	hungAt  string
	hungFor time.Duration
	done    bool
}

type timing struct {
	used  time.Duration // before its last start
	start time.Time
	timer *time.Timer
}

func newWatch(limits map[string]time.Duration, stop func()) *watch {
	return &watch{limits: limits, stop_: stop, running: map[string]*timing{}}
}

// Write takes output of the process; it never fails.
func (w *watch) Write(p []byte) (int, error) {
	if len(w.limits) == 0 {
		return len(p), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.event(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

// event handles one line, with w.mu held.
func (w *watch) event(line []byte) {
	if w.done || !bytes.Contains(line, []byte(`"Action"`)) {
		return
	}
	var e struct{ Action, Test string }
	if json.Unmarshal(line, &e) != nil || e.Test == "" || strings.Contains(e.Test, "/") {
		return
	}
	limit, ok := w.limits[e.Test]
	if !ok {
		return
	}
	t := w.running[e.Test]
	switch e.Action {
	case "run", "cont":
		if t == nil || e.Action == "run" {
			t = &timing{}
			w.running[e.Test] = t
		}
		if t.timer != nil {
			return
		}
		t.start = time.Now()
		name := e.Test
		t.timer = time.AfterFunc(limit-t.used, func() { w.fire(name, limit) })
	case "pause", "pass", "fail", "skip":
		if t == nil || t.timer == nil {
			return
		}
		t.timer.Stop()
		t.timer = nil
		t.used += time.Since(t.start)
	}
}

// fire stops the process: name ran past its limit.
func (w *watch) fire(name string, limit time.Duration) {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.done, w.hungAt, w.hungFor = true, name, limit
	w.mu.Unlock()
	w.stop_()
}

// hung returns the test that ran past its limit, and the limit, or "".
func (w *watch) hung() (string, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hungAt, w.hungFor
}

// stop ends the watch: no timer fires after it.
func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	for _, t := range w.running {
		if t.timer != nil {
			t.timer.Stop()
		}
	}
}

// shortDur rounds d for a reason: tenths of a second.
func shortDur(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
