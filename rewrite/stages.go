package rewrite

import (
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unflake/unflake/internal/effects"
)

// stageTimes records what each stage of a run cost, for the benchmark's
// stage table (bench -stages). It is on only when UNFLAKE_STAGES names a
// file, which run writes as JSON when it ends: the engine prints nothing.
// Sequential stages (list, load, rules) are wall times; the costs inside
// the concurrent jobs (prefilter, apply, recheck) are summed over the
// goroutines, so they can add up to more than the rules stage's wall.
type stageTimes struct {
	file string
	mu   sync.Mutex
	wall map[string]time.Duration
	from time.Time
	name string

	spent [numCosts]atomic.Int64 // nanoseconds, summed
	count [numCosts]atomic.Int64
}

// The costs paid inside jobs, summed.
const (
	costPrefilter = iota
	costApply     // decorate, apply, print, parse and re-type-check
	costRecheck   // the re-type-check alone
	numCosts
)

var stages = newStageTimes(os.Getenv("UNFLAKE_STAGES"))

func newStageTimes(file string) *stageTimes {
	if file == "" {
		return nil
	}
	return &stageTimes{file: file, wall: map[string]time.Duration{}}
}

// enter ends the current sequential stage and starts name ("" for none).
func (s *stageTimes) enter(name string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.name != "" {
		s.wall[s.name] += now.Sub(s.from)
	}
	s.name, s.from = name, now
}

// since adds the time since start to the cost and counts one.
func (s *stageTimes) since(cost int, start time.Time) {
	if s == nil {
		return
	}
	s.spent[cost].Add(int64(time.Since(start)))
	s.count[cost].Add(1)
}

// write writes the recorded costs and the effect loader's counts.
func (s *stageTimes) write(candidates, loaded int, l *effects.Loader) {
	if s == nil {
		return
	}
	s.enter("")
	sec := func(d time.Duration) float64 { return d.Seconds() }
	out := map[string]any{
		"candidates":  candidates,
		"jobs":        loaded,
		"list_s":      sec(s.wall["list"]),
		"load_s":      sec(s.wall["load"]),
		"rules_s":     sec(s.wall["rules"]),
		"prefilter_s": sec(time.Duration(s.spent[costPrefilter].Load())),
		"prefiltered": s.count[costPrefilter].Load(),
		"apply_s":     sec(time.Duration(s.spent[costApply].Load())),
		"applies":     s.count[costApply].Load(),
		"recheck_s":   sec(time.Duration(s.spent[costRecheck].Load())),
		"rechecks":    s.count[costRecheck].Load(),
	}
	if l != nil {
		st := l.Stats()
		out["summaries_asked"] = st.Asked
		out["summaries_known"] = st.Known
		out["summary_packages_loaded"] = st.Loaded
		out["summary_load_s"] = sec(st.LoadTime)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err == nil {
		err = os.WriteFile(s.file, append(data, '\n'), 0o666)
	}
	_ = err // a benchmark aid: a file that cannot be written is no run's failure
}
