package verify

import (
	"slices"

	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// A second run. Stress runs each test once per process, as go test
// does: a test that keeps state in package variables may fail its second
// run in one process whatever the fix. But a bubble (a rule.Clock fix)
// can make a test that ran twice fine fail the second time: the first
// bubble leaves package state behind, which the second reads (a value a
// sync.Once made inside the first bubble, a channel or timer it owns,
// which another bubble may not touch; a time stamped on the first
// bubble's clock, 2000-01-01, that the second's, which starts there
// again, reads as not yet passed). -count=2 and a test runner that reuses
// the binary see it; one run per process does not. So each kept test
// with a clock fix runs twice in one process after the rewrite; when
// that fails and the original passes twice in one process, the clock
// fixes of the test are held back.

// secondRuns runs each kept test of runs whose fixes (w.sites) change
// the clock twice in one process after the rewrite (bins), and before
// it when that fails; it returns the fixes to hold back, and their
// tests' runs lose Kept.
func (v *verifier) secondRuns(w *pkgWork, b *beforeRuns, bins binaries, runs []TestRun) ([]Held, error) {
	var held []Held
	for i := range runs {
		r := &runs[i]
		if !r.Kept {
			continue
		}
		var clock []fixSite
		for _, s := range w.sites {
			if s.test == r.Name && slices.ContainsFunc(s.finding.Changes, func(c rule.Change) bool { return c.Kind == rule.Clock }) {
				clock = append(clock, s)
			}
		}
		b.mu.Lock()
		before := b.tests[r.Name]
		b.mu.Unlock()
		if len(clock) == 0 || before == nil {
			continue
		}
		twice := func(bin string, src map[string][]byte) (*rewrite.Revert, error) {
			j := job{bin: bin, name: r.Name, run: anchored(r.Name), count: 2, src: src, alone: true}
			v.limit(&j, map[string]*outcome{r.Name: before})
			o, err := v.r.exec(v.r.ctx, w.dir, j)
			if err != nil {
				return nil, err
			}
			return failure(o, r.Name, 2, before), nil
		}
		why, err := twice(bins.plain, bins.src)
		if err != nil || why == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		orig, err := twice(b.bin, nil)
		if err != nil {
			return nil, err
		}
		if orig != nil {
			continue // the test's own state: its second run fails before the rewrite too
		}
		why = &rewrite.Revert{Kind: why.Kind, Test: r.Name, Detail: "on its second run in one process: " + clipTo(why.Detail, 120) +
			"; it passed twice in one process before the rewrite (a bubble may leave package state for the next run: a sync.Once's value, a channel or timer it owns, a time stamped on its clock)"}
		for _, s := range clock {
			held = append(held, Held{Site: s.site, Why: why})
		}
		r.Kept, r.Why = false, why
	}
	return held, nil
}
