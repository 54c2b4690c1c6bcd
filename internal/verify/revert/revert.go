// Package revert is verification's vocabulary for a fix it held back: a
// Revert and its Kind. The engine carries a Revert on a finding
// (rewrite.Finding.Revert) without reading it; package verify makes
// them.
package revert

import (
	"fmt"
)

// A RevertKind says why verification held a fix back.
type RevertKind string

const (
	// FailsBefore: the test fails, or its package does not build, before
	// the rewrite; nothing can be verified.
	FailsBefore RevertKind = "fails-before"
	// FlakyBefore: a run after the rewrite failed, and the same run
	// (the same binary flags and load) without the rewrite failed too:
	// the test is flaky on its own, so it verifies nothing and no fix is
	// to blame.
	FlakyBefore RevertKind = "flaky-before"
	// Skips: the test skips before the rewrite; nothing was verified.
	Skips RevertKind = "skips"
	// NoTest: no test runs the fix (a helper no test calls).
	NoTest RevertKind = "no-test"
	// BuildAfter: the tests do not build after the rewrite.
	BuildAfter RevertKind = "build-after"
	// FailsAfter: a run after the rewrite failed.
	FailsAfter RevertKind = "fails-after"
	// Panics: a run after the rewrite panicked.
	Panics RevertKind = "panics"
	// Hangs: a run after the rewrite did not end within its time limit.
	Hangs RevertKind = "hangs"
	// Vanished: a test or subtest that passed before the rewrite did not
	// run after it, or started to skip.
	Vanished RevertKind = "vanished"
	// PackageRun: the test passed alone, but the package's whole test
	// binary, run with every kept fix, fails a test that passed before.
	PackageRun RevertKind = "package-run"
	// Companion: a companion rule's fix, tried only in the tests where it
	// may help another rule's fix.
	Companion RevertKind = "companion"
	// Clash: a run after the rewrite failed on a resource another
	// process holds (an address in use, a file that exists, a lock held,
	// ...), and the failure repeated when the test ran alone while the
	// same run before the rewrite passed. The environment is to blame as
	// much as the fix: the fix is held back for this run, not recorded.
	Clash RevertKind = "clash"
	// OutOfRounds: verification stopped reverting before it could verify
	// the package's last rewrite.
	OutOfRounds RevertKind = "out-of-rounds"
	// Stopped: verification was stopped (an interrupt) before it
	// verified the fix's package; the fix is left out.
	Stopped RevertKind = "stopped"
	// NoVariant: verification asked for a form of the fix that the rule
	// no longer offers.
	NoVariant RevertKind = "no-variant"
	// HoldsWithout: the fix has a probe (rule.Hypothesis.Probe, the wait it
	// replaces removed) and the tests passed every run with the probe:
	// the checks after the wait hold without it, the wait may guard
	// against an event, and the fix (a poll on the checks) would pass at
	// once. Detail is the whole reason: the rule's Hypothesis.ProbeHolds
	// (carried as Finding.ProbeHolds) and the evidence. The fix never
	// failed a test, so it is not recorded at its site.
	HoldsWithout RevertKind = "holds-without-wait"
	// ProbeUntold: the fix has a probe whose runs could tell nothing (it
	// does not build, its test fails, is flaky or skips before): nothing
	// shows that the checks wait for a change, so the fix is held back
	// as for HoldsWithout, and not recorded either. Detail is the whole
	// reason.
	ProbeUntold RevertKind = "probe-untold"
	// FailsCheck: the fix has a form the tests must pass
	// (rule.Hypothesis.MustPass: its children run one after another in the
	// reverse order) and a test failed with it: what the fix assumes (the
	// order does not matter) is false, so the fix is held back. Detail is
	// the whole reason: the rule's Hypothesis.ProbeFails and the failure.
	// The fix itself never ran, so it is not recorded at its site.
	FailsCheck RevertKind = "fails-check"
	// Weaker: the test passed every run after the rewrite, but a mutant
	// of the code under test that the original test fails on (a write
	// made twice, made again later, undone, dropped: verify's mutate.go)
	// passes the rewritten test, or hangs or panics it where the original
	// failed at a check: the rewrite made the test blind (or mute) to a
	// bug it caught. Detail names the mutant and the original's failure.
	Weaker RevertKind = "weaker"
	// Unshown: the fix is unproven and changes a kind that mutants are
	// aimed at (a budget: lateness the original caught; a clock: time
	// as real time showed it; ownership: a second close); but for some
	// such kind no aimed mutant could be made, or the original kills
	// none (a budget's: none at or after the fix's line), so nothing
	// shows the rewritten test still sees that hazard: passing every run
	// is no evidence of strength. Detail is the whole reason, naming the
	// kind.
	Unshown RevertKind = "strength-unshown"
)

// A Revert says why a fix was held back.
type Revert struct {
	Kind   RevertKind `json:"kind"`
	Test   string     `json:"test,omitempty"` // the test whose runs decided
	Detail string     `json:"detail"`         // what failed, in the test's own words
	// Forms, when more than one, is how many forms of the fix
	// verification tried, one after another (rule.Hypothesis.Alternatives):
	// every one failed, and Detail is the last one's failure.
	Forms int `json:"forms,omitempty"`
	// Remembered, when set, is the day ("2026-12-04") an earlier fix
	// --verify reverted the fix for this reason: verification remembers
	// such reverts outside the source and holds the fix back without
	// running anything.
	Remembered string `json:"remembered,omitempty"`
	// Unrun says the fix was held back before any test ran with it: it
	// changes a kind no run can show sound (rule.Unprovable), so neither
	// a retry with companions nor a later run may keep it.
	Unrun bool `json:"unrun,omitempty"`
}

// AfterRewrite reports whether the fix itself made a test fail: such a
// fix must not be proposed again (verify records it at the site).
func (r *Revert) AfterRewrite() bool {
	switch r.Kind {
	case BuildAfter, FailsAfter, Panics, Hangs, Vanished, PackageRun, Weaker, Unshown:
		return true
	}
	return false
}

// Reason is the finding's reason for a fix held back.
func (r *Revert) Reason() string {
	switch r.Kind {
	case Skips:
		return "not verified: the test skips (" + r.Detail + ")"
	case OutOfRounds, Stopped:
		return "not verified: " + r.Detail
	case Clash, FailsBefore, FlakyBefore, NoTest:
		// Nothing the fix did: the test verified nothing.
		return "not verified: " + r.String()
	case Companion, HoldsWithout, ProbeUntold, FailsCheck:
		return r.Detail
	}
	prefix := "reverted: "
	if r.Remembered != "" {
		prefix = "reverted by fix --verify on " + r.Remembered + " (remembered in unflake's cache; UNFLAKE_CACHE=off tries it again): "
	}
	if r.Forms > 1 {
		return fmt.Sprintf("%seach of the fix's %d forms failed; the last: %s", prefix, r.Forms, r.String())
	}
	return prefix + r.String()
}

// String says what happened, in one line.
func (r *Revert) String() string {
	t := r.Test
	if t == "" {
		t = "the test"
	}
	switch r.Kind {
	case FailsBefore:
		return t + " fails before the rewrite: " + r.Detail
	case FlakyBefore:
		return t + " is flaky without the rewrite (the run that failed after it fails before it too): " + r.Detail
	case Skips:
		return t + " skips: " + r.Detail
	case FailsAfter:
		return t + " failed after the rewrite: " + r.Detail
	case Panics:
		return t + " panicked after the rewrite: " + r.Detail
	case Hangs:
		return t + " hung after the rewrite: " + r.Detail
	case Vanished:
		return t + " after the rewrite: " + r.Detail
	case PackageRun:
		return t + " failed in the package's whole run after the rewrite: " + r.Detail
	case Clash:
		return t + " failed after the rewrite on a resource clash (something it needs was held elsewhere), which is not counted against the fix: " + r.Detail
	case Weaker:
		return t + " after the rewrite misses a bug the original catches: " + r.Detail
	case Unshown:
		return t + " after the rewrite shows no strength: " + r.Detail
	}
	return r.Detail
}
