package verify

import (
	"fmt"
	"sync"
	"time"
)

// Progress is what verification has done so far, for a progress line.
type Progress struct {
	Round       int // the verification round, from 1 (the probe phase's count too)
	Done, Total int // packages verified in this round, and to verify
	Runs        int // test runs made so far, in every round
	// Left is the estimated time the round still takes, from the
	// measured time of the packages verified (or, before one is, of the
	// runs made against those planned); 0 when nothing is measured yet.
	Left time.Duration
}

// String says it in words: "round 1: 3/9 packages, 140 test runs, about
// 1m20s left".
func (p Progress) String() string {
	s := fmt.Sprintf("%d/%d packages, %s", p.Done, p.Total, plural(p.Runs, "test run"))
	if p.Round > 1 {
		s = fmt.Sprintf("round %d: %s", p.Round, s)
	}
	if p.Left > 0 {
		s += ", about " + roundDuration(p.Left).String() + " left"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// roundDuration rounds d to what a progress line needs: seconds under
// ten minutes, minutes above.
func roundDuration(d time.Duration) time.Duration {
	if d < 10*time.Minute {
		return max(d.Round(time.Second), time.Second)
	}
	return d.Round(time.Minute)
}

// estimate is the time a round still takes, from its elapsed time: in
// proportion to the packages left when some are done (their builds and
// runs measured), else to the runs left of those planned.
func estimate(elapsed time.Duration, done, total, runs, planned int) time.Duration {
	switch {
	case done >= total:
		return 0
	case done > 0:
		return elapsed * time.Duration(total-done) / time.Duration(done)
	case runs > 0 && planned > runs:
		return elapsed * time.Duration(planned-runs) / time.Duration(runs)
	}
	return 0
}

// A tracker counts what verification does and reports it (Options.Progress).
type tracker struct {
	report func(Progress)
	now    func() time.Time

	mu      sync.Mutex
	round   int
	start   time.Time // of the round
	done    int
	total   int
	runs    int // every round's
	planned int // runs planned in this round
	base    int // runs before this round
}

func newTracker(report func(Progress), now func() time.Time) *tracker {
	return &tracker{report: report, now: now}
}

// startRound starts a round of total packages.
func (t *tracker) startRound(total int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.round++
	t.start, t.done, t.total, t.planned, t.base = t.now(), 0, total, 0, t.runs
}

// plan counts runs a package is about to make.
func (t *tracker) plan(runs int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.planned += runs
	t.mu.Unlock()
}

// ran counts the runs of a process that ended.
func (t *tracker) ran(runs int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.runs += runs
	t.send()
	t.mu.Unlock()
}

// pkgDone counts a package verified.
func (t *tracker) pkgDone() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.done++
	t.send()
	t.mu.Unlock()
}

func (t *tracker) progress() Progress {
	left := estimate(t.now().Sub(t.start), t.done, t.total, t.runs-t.base, t.planned)
	return Progress{Round: t.round, Done: t.done, Total: t.total, Runs: t.runs, Left: left}
}

// send reports the progress, with t.mu held: one line at a time.
func (t *tracker) send() {
	if t.report != nil && t.total > 0 {
		t.report(t.progress())
	}
}
