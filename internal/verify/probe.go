package verify

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// The probe phase. A fix with a probe (rule.Hypothesis.Probe: the wait it
// replaces removed, with nothing in its place) is right only when the
// checks after the wait wait for a change: then a test fails in some run
// with the probe. When the tests pass every run with it, the wait may
// give an unwanted event the time to happen, and the fix (a poll on the
// checks) would pass at once: the fix is held back. The probes are
// verified as fixes are (the same runs before and after, cached before
// runs, bisecting, rounds), only what counts as success is turned round.

// A phase is what a verification loop applies: the fixes, or their
// probes.
type phase int

const (
	mainPhase phase = iota
	probePhase
)

// A Probe is the outcome of one fix's probe.
type Probe struct {
	Site rewrite.Site
	// Waits is set when a test failed (panicked, hung, lost a subtest,
	// or failed in the package's whole run) with the probe: the checks
	// wait for a change, and the fix was then tried as usual.
	Waits bool
	Test  string // the test whose runs decided ("" for a fix outside tests)
	Runs  int    // the runs that passed with the probe, when the checks held
	// Why is, with Waits, the failure the probe caused; without it, when
	// set, why the probe's runs could tell nothing (the probe did not
	// build, the test fails or skips before): the fix is held back then
	// too (revert.ProbeUntold), since nothing shows the checks wait for
	// a change.
	Why *rewrite.Revert
	// MustPass is set when the probe is a form the tests must pass
	// (rule.Hypothesis.MustPass): Waits then means the fix was held back.
	MustPass bool
}

// Holds reports whether the tests passed every run with the probe: the
// checks hold without waiting, and the fix was held back for that (or,
// with MustPass, was tried).
func (p Probe) Holds() bool { return !p.Waits && p.Why == nil }

// Held reports whether the probe's outcome held the fix back.
func (p Probe) Held() bool {
	if p.MustPass {
		return !p.Holds()
	}
	return !p.Waits
}

// probedBefore holds back, in a later probe phase, a fix whose probe has
// an outcome already; it is never reported.
var probedBefore = &rewrite.Revert{Kind: revert.Companion, Detail: "probed already"}

// unprobed returns the keys of the sites of res whose fixes were applied,
// have a probe, and have no probe outcome yet.
func (v *verifier) unprobed(res *rewrite.Result) map[string]bool {
	fresh := map[string]bool{}
	for _, f := range res.Findings {
		if f.Fixed && f.ProbeHolds != "" {
			if _, ok := v.probes[f.Site().Key]; !ok {
				fresh[f.Site().Key] = true
			}
		}
	}
	return fresh
}

// probe runs the probe phase on cfg (a copy: the caller's Decide stays)
// and records the outcome of every probe it sees; the sites fresh (the
// keys unprobed returned) always get one.
func (v *verifier) probe(cfg *rewrite.Config, pre func(rewrite.Site) *rewrite.Revert, fresh map[string]bool) error {
	c := *cfg
	res, pv, err := v.run(&c, pre, probePhase)
	if err != nil {
		return err
	}
	v.probeRounds += pv.Rounds
	failed := map[string]*rewrite.Revert{} // site key → the failure that took its probe back
	for _, h := range pv.Reverts {
		failed[h.Site.Key] = h.Why
	}
	for _, f := range res.Findings {
		s := f.Site()
		if _, ok := v.probes[s.Key]; ok || f.ProbeHolds == "" {
			continue
		}
		p := Probe{Site: s, Test: topLevel(f.Test), MustPass: f.ProbeMustPass}
		if !rewrite.IsTestName(p.Test) {
			p.Test = ""
		}
		switch why := failed[s.Key]; {
		case why != nil:
			p.Why = why
			p.Waits = why.AfterRewrite() && why.Kind != revert.BuildAfter && failsAt(why, f)
			if !p.Waits && !p.MustPass && why.AfterRewrite() && why.Kind != revert.BuildAfter {
				// The test failed, but not at the checks the wait was
				// before (a later wait, now too short, say): nothing
				// shows those checks wait for a change.
				why = &rewrite.Revert{Kind: why.Kind, Test: why.Test, Detail: "it failed elsewhere than at the checks after the wait: " + why.Detail}
				p.Why = why
			}
			if why.Test != "" {
				p.Test = why.Test
			}
		case f.Revert != nil:
			p.Why = f.Revert // the rounds ran out
		case f.Fixed && f.Verified:
			p.Runs = runsOf(pv.Tests, filepath.Dir(f.File), p.Test)
		case f.Fixed:
			p.Why = &rewrite.Revert{Kind: revert.NoTest, Test: p.Test, Detail: "no test ran it"}
		default:
			// The probe does not compile, or cannot be written.
			p.Why = &rewrite.Revert{Kind: revert.BuildAfter, Test: p.Test, Detail: f.Reason}
		}
		v.decided(p, f.ProbeHolds, f.Fix)
	}
	for key := range fresh {
		if _, ok := v.probes[key]; !ok {
			// Not seen without the other fixes: nothing was learned.
			v.decided(Probe{Site: rewrite.Site{Key: key}, Why: &rewrite.Revert{Kind: revert.NoTest, Detail: "the probe phase did not see this fix"}}, "", "")
		}
	}
	return nil
}

// decided records a probe's outcome and, unless the checks wait for a
// change, the hold of its fix: holds is the finding's ProbeHolds, msg
// what the probe does.
func (v *verifier) decided(p Probe, holds, msg string) {
	v.probes[p.Site.Key] = p
	v.probed = append(v.probed, p)
	if !p.Held() {
		return
	}
	what := "the probe"
	if msg != "" {
		what += " (" + msg + ")"
	}
	hold := &rewrite.Revert{Kind: revert.ProbeUntold, Test: p.Test}
	switch {
	case p.MustPass && p.Waits:
		// What the fix assumes is false: the form that must pass fails.
		hold.Kind = revert.FailsCheck
		hold.Detail = fmt.Sprintf("%s: %s", holds, p.Why.String())
	case p.MustPass:
		hold.Detail = fmt.Sprintf("not verified: %s could not show that the fix's assumption holds: %s", what, p.Why.String())
	case p.Holds():
		hold.Kind = revert.HoldsWithout
		who := p.Test
		if who == "" {
			who = "every test"
		}
		runs := "1 run"
		if p.Runs != 1 {
			runs = fmt.Sprintf("%d runs", p.Runs)
		}
		with := "the probe"
		if msg != "" {
			with += ": " + msg
		}
		hold.Detail = fmt.Sprintf("%s (%s passed %s with %s)", holds, who, runs, with)
	default:
		hold.Detail = fmt.Sprintf("not verified: %s could not show that the checks wait for a change: %s", what, p.Why.String())
	}
	v.probeHeld[p.Site.Key] = hold
}

// runsOf returns the fewest runs after the rewrite of the tests of dir
// that verify a fix in test (every test of dir for "" or a helper's
// name), or 0 when they do not all keep it (tally).
func runsOf(runs []TestRun, dir, test string) int {
	var pkg []TestRun
	for _, r := range runs {
		if r.Dir == dir {
			pkg = append(pkg, r)
		}
	}
	t := tally(pkg, test)
	if !t.verified {
		return 0
	}
	return t.runs
}

// probesPerTest returns the most probes applied in one test (or outside
// tests, in one package) of res.
func probesPerTest(res *rewrite.Result) int {
	n := map[[2]string]int{}
	most := 0
	for _, f := range res.Findings {
		if !f.Fixed {
			continue
		}
		k := [2]string{filepath.Dir(f.File), topLevel(f.Test)}
		n[k]++
		most = max(most, n[k])
	}
	return most
}

// failsAt reports whether the failure why is at the checks of finding f
// (Finding.ProbeLines): its text names f's file at one of those lines, as
// t.Fatal's "x_test.go:41:" or a panic's stack "x_test.go:41 +0x1d" do.
// Without ProbeLines any failure counts.
func failsAt(why *rewrite.Revert, f rewrite.Finding) bool {
	from, to := f.ProbeLines[0], f.ProbeLines[1]
	if from == 0 {
		return true
	}
	base := filepath.Base(f.File)
	text := why.Detail
	for i := strings.Index(text, base+":"); i >= 0; {
		rest := text[i+len(base)+1:]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if line, err := strconv.Atoi(rest[:n]); err == nil && from <= line && line <= to {
			return true
		}
		j := strings.Index(rest, base+":")
		if j < 0 {
			break
		}
		i += len(base) + 1 + j
	}
	return false
}
