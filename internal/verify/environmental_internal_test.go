package verify

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// A failure that names a resource clash may be the environment's.
func TestEnvironmentalNamesClashes(t *testing.T) {
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
		t.Errorf("environmental(nil) = true: a mutant the test passes is no clash")
	}
}

// mutantRuns stands for the binaries of mutateTest: per mutant, how the
// original and the rewrite end, beside other processes and alone.
type mutantRuns struct {
	mu   sync.Mutex
	jobs []job
	// fails: "orig/1" (the original on mutant 1 beside others),
	// "orig/1/alone", "after/1", ... → the failure's line; absent: passes.
	fails map[string]string
}

func (m *mutantRuns) exec(_ string, j job) *outcome {
	m.mu.Lock()
	m.jobs = append(m.jobs, j)
	m.mu.Unlock()
	key := filepath.Base(filepath.Dir(j.bin)) + "/" + strings.TrimSuffix(strings.TrimPrefix(filepath.Base(j.bin), "m"), ".test")
	if j.alone {
		key += "/alone"
	}
	o := &outcome{passed: map[string]int{}, skipped: map[string]string{}, each: map[string]time.Duration{}}
	if line, ok := m.fails[key]; ok {
		o.failed, o.test, o.detail = true, "TestFlush", line
		return o
	}
	o.passed["TestFlush"], o.tops, o.elapsed, o.pkgPassed = 1, 1, time.Millisecond, true
	return o
}

// The original failing on a mutant over a clash with its own parallel
// copies (a fixed port) is no kill: the run made again alone decides.
// Where the original passes alone, the mutant tells nothing, and the
// sound fix that removed the fixed port stays (freeport_rt9_statsd);
// where it clashes alone too (the mutant listens twice), the mutant is
// the original's catch, and a rewrite that passes it is weaker. Any kill
// of the original's that the rewrite misses is made again alone before
// the rewrite is blamed.
func TestMutantClashesAreSettledAlone(t *testing.T) {
	const clash = "statsd_test.go:12: listen udp 127.0.0.1:18125: bind: address already in use"
	cases := []struct {
		name     string
		fails    map[string]string
		weaker   bool
		lastJobs int // runs made
	}{
		{"environment", map[string]string{"orig/1": clash}, false, 2},
		{"the mutant's own clash", map[string]string{"orig/1": clash, "orig/1/alone": clash}, true, 4},
		// Copies spoiling a fixed path with no message that names a
		// clash (otiai10/copy): the original's kill, made again alone
		// before the rewrite is blamed, does not repeat.
		{"a spoiled run", map[string]string{"orig/1": "all_test.go:380: copied in 1.2s, want at least 5s"}, false, 3},
		{"a real kill", map[string]string{"orig/1": "statsd_test.go:33: got 2 datagrams, want 1", "after/1": "statsd_test.go:33: got 2 datagrams, want 1"}, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &mutantRuns{fails: c.fails}
			r := &runner{ctx: context.Background(), sem: make(chan struct{}, 4), bsem: make(chan struct{}, 1), fake: m.exec}
			v := &verifier{r: r, opts: Options{Count: 1, Procs: 2}.withDefaults(), before: map[string]*beforeRuns{}}
			before := &outcome{passed: map[string]int{"TestFlush": 1}, tops: 1, elapsed: time.Millisecond}
			site := fixSite{site: rewrite.Site{Key: "statsd_test.go:12"}, test: "TestFlush", finding: rewrite.Finding{File: "statsd_test.go", Line: 12}}
			src := []byte("r.send(buf)")
			all := []*mutant{{t: &target{file: "statsd.go", src: src, start: 0, end: len(src), line: 20}, op: twice}}
			p := mutantPlan{test: "TestFlush", sites: []fixSite{site}, before: before, ids: []int{1}}
			held, err := v.mutateTest("pkg", p, all, "orig", "after")
			if err != nil {
				t.Fatal(err)
			}
			weaker := len(held) == 1 && held[0].Why.Kind == revert.Weaker
			if weaker != c.weaker || !c.weaker && len(held) != 0 {
				t.Errorf("held %+v, want weaker=%v", held, c.weaker)
			}
			if len(m.jobs) != c.lastJobs {
				t.Errorf("%d runs, want %d: %+v", len(m.jobs), c.lastJobs, m.jobs)
			}
		})
	}
}
