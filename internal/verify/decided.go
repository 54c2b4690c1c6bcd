package verify

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/unflake/unflake/internal/modedit"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// A Decided is a fix verification decided, as soon as its
// package's verification in a round ends: kept (the package passed every
// run with it, mutants and its whole run included) or reverted. A later
// round of the same run may still revert a kept fix (a companion retry,
// rounds running out); the final result says what stands.
type Decided struct {
	Finding rewrite.Finding // the fix: File, Line, Rule, Test
	Kept    bool
	// Runs is how many times its test ran after the rewrite, and
	// Before, After the mean time of one run before and after (kept).
	Runs          int
	Before, After time.Duration
	// Why is why it was reverted; Retry is set when its next form is
	// tried (rule.Hypothesis.Alternatives).
	Why   *rewrite.Revert
	Retry bool
}

// pkgDecided notes what a package's verification in a round of the main
// phase decided (applied holds the round's fixed findings by site key),
// for the result of an interrupted run (partial), and reports each fix,
// proven or not, whose fate changed to Options.Decided.
func (v *verifier) pkgDecided(w *pkgWork, runs []TestRun, held []Held, applied map[string]rewrite.Finding) {
	v.mu.Lock()
	v.latest[w.dir] = runs
	if len(held) == 0 {
		v.clean[w.dir] = dirContents(w.changes)[w.dir]
	}
	for _, h := range held {
		v.roundHeld[h.Site.Key] = h.Why
	}
	v.mu.Unlock()
	if v.opts.Decided == nil {
		return
	}
	tell := func(d Decided) {
		key := d.Finding.Site().Key
		if kept, ok := v.told[key]; ok && kept == d.Kept && !d.Retry {
			return
		}
		v.told[key] = d.Kept
		v.opts.Decided(d)
	}
	if len(held) == 0 {
		for _, s := range w.sites {
			// The runs that verify it, as the final result counts them
			// (covered): a helper's are every test's of the package.
			t := tally(runs, s.test)
			if !t.verified {
				continue // no run verifies it: it is not reported kept
			}
			tell(Decided{Finding: s.finding, Kept: true, Runs: t.runs, Before: t.before, After: t.after})
		}
		return
	}
	for _, h := range held {
		f, ok := applied[h.Site.Key]
		if !ok || h.Why == nil || h.Why.Kind == revert.Companion {
			continue
		}
		tell(Decided{Finding: f, Why: h.Why, Retry: h.Why.AfterRewrite() && f.Variant+1 < f.Variants})
	}
}

// partial is the result of a run stopped when ctx ended, from res, the
// last engine run of the main phase: the packages whose content was
// verified with nothing held back keep their changes, with their
// module's go.mod and go.sum; every other package is left as it was,
// its fixes held back (revert.Stopped, or the failure verification had
// already seen). With no engine run yet, nothing changes.
func (v *verifier) partial(res *rewrite.Result, out *Verification) (*rewrite.Result, *Verification) {
	v.mu.Lock()
	defer v.mu.Unlock()
	o := *out
	o.Stopped = true
	if res == nil {
		return nil, &o
	}
	keep := map[string]bool{}
	mods := map[string]bool{}
	for d, c := range dirContents(res.Changes) {
		if c == v.clean[d] {
			keep[d] = true
			mods[moduleDir(d)] = true
		}
	}
	next := *res
	next.Changes = nil
	for _, c := range res.Changes {
		d := filepath.Dir(c.Path)
		if modedit.IsModFile(c.Path) && mods[d] || !modedit.IsModFile(c.Path) && keep[d] {
			next.Changes = append(next.Changes, c)
		}
	}
	next.Findings = slices.Clone(res.Findings)
	for i := range next.Findings {
		f := &next.Findings[i]
		d := filepath.Dir(f.File)
		switch {
		case !f.Fixed:
		case keep[d]:
			f.Verified, f.BeforeMs, f.AfterMs = covered(v.latest[d], topLevel(f.Test))
		default:
			why := v.roundHeld[f.Site().Key]
			if why == nil {
				why = &rewrite.Revert{Kind: revert.Stopped, Detail: "verification was stopped before it verified this package"}
			}
			f.Fixed, f.Fix, f.Revert, f.Reason = false, "", why, why.Reason()
		}
	}
	o.Tests = nil
	for d, rs := range v.latest {
		for _, r := range rs {
			if keep[d] || !r.Kept && r.Why != nil && r.Why.AfterRewrite() {
				o.Tests = append(o.Tests, r)
			}
		}
	}
	sortRuns(o.Tests)
	return &next, &o
}
