package rewrite

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/format"
	"path/filepath"
	"strings"
)

// Verification (package verify, above the engine) talks to the engine
// through one hook, Config.Decide: the engine names each fix it is about
// to apply by its Site, and Decide may hold it back with a Revert, which
// the finding then carries. No code reads the wording of a Revert: its
// Kind says what happened.

// A Site names one fix, stably across engine runs of the same code: the
// package directory, the rule, the test, and a key that hashes the rule,
// the package, the test and the matched code (a Finding's ID without the
// numbering of identical matches, which is not known while rules run).
type Site struct {
	Dir  string // the package directory
	Rule string
	Test string // "TestX/sub", or the enclosing function outside tests
	Key  string
}

// Site returns the site of the fix a finding reports.
func (f Finding) Site() Site {
	key := f.Rule + "\x00" + f.Package + "\x00" + f.Test + "\x00" + f.code
	sum := sha256.Sum256([]byte(key))
	return Site{Dir: filepath.Dir(f.File), Rule: f.Rule, Test: f.Test, Key: f.Rule + "-" + hex.EncodeToString(sum[:8])}
}

// A Decision is verification's answer about one fix: hold it back (a
// non-nil Revert), apply its probe (Probe), or apply its form Variant (0:
// the fix itself; k: its k-th rule.Hypothesis.Alternatives). The zero Decision
// applies the fix.
type Decision struct {
	Revert  *Revert
	Variant int
	// Probe asks for the fix's rule.Hypothesis.Probe instead of the fix (Variant
	// is then ignored): verification's probe phase, whose result is run
	// and discarded. A fix without a probe is held back (NoVariant).
	// Plain runs (no Decide) never apply a probe.
	Probe bool
}

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
	// Weaker: the test passed every run after the rewrite, but a mutant
	// of the code under test that the original test fails on (a write
	// made twice, made again later, undone, dropped: verify's mutate.go)
	// passes the rewritten test: the rewrite made the test blind to a
	// bug it caught. Detail names the mutant and the original's failure.
	Weaker RevertKind = "weaker"
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
}

// AfterRewrite reports whether the fix itself made a test fail: such a
// fix must not be proposed again (verify records it at the site).
func (r *Revert) AfterRewrite() bool {
	switch r.Kind {
	case BuildAfter, FailsAfter, Panics, Hangs, Vanished, PackageRun, Weaker:
		return true
	}
	return false
}

// Reason is the finding's reason for a fix held back.
func (r *Revert) Reason() string {
	switch r.Kind {
	case Skips:
		return "not verified: the test skips (" + r.Detail + ")"
	case OutOfRounds:
		return "not verified: " + r.Detail
	case Clash, FailsBefore, FlakyBefore, NoTest:
		// Nothing the fix did: the test verified nothing.
		return "not verified: " + r.String()
	case Companion, HoldsWithout, ProbeUntold:
		return r.Detail
	}
	if r.Forms > 1 {
		return fmt.Sprintf("reverted: each of the fix's %d forms failed; the last: %s", r.Forms, r.String())
	}
	return "reverted: " + r.String()
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
	}
	return r.Detail
}

// InsertIgnore returns new with a line holding comment (a //unflake:ignore
// directive) inserted before the line that was line (1-based) in old, at
// its indentation. It reports false when that line did not survive from
// old to new unchanged, or when the result would not be gofmt-clean.
func InsertIgnore(old, new []byte, line int, comment string) ([]byte, bool) {
	a, b := splitLines(string(old)), splitLines(string(new))
	at := -1
	for _, o := range lineOps(a, b) {
		if o.kind == ' ' && o.a == line-1 {
			at = o.b
			break
		}
	}
	if at < 0 {
		return nil, false
	}
	target := b[at]
	indent := target[:len(target)-len(strings.TrimLeft(target, " \t"))]
	var out bytes.Buffer
	for i, l := range b {
		if i == at {
			out.WriteString(indent + comment + "\n")
		}
		out.WriteString(l)
	}
	formatted, err := format.Source(out.Bytes())
	if err != nil || !bytes.Equal(formatted, out.Bytes()) {
		return nil, false
	}
	return out.Bytes(), true
}

// MarshalJSON writes a finding as its struct tags say, except that a
// verified finding always carries beforeMs and afterMs, 0 included.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding // without this method
	out := struct {
		plain
		BeforeMs *int64 `json:"beforeMs,omitempty"`
		AfterMs  *int64 `json:"afterMs,omitempty"`
	}{plain: plain(f)}
	if f.Verified || f.BeforeMs != 0 || f.AfterMs != 0 {
		out.BeforeMs, out.AfterMs = &f.BeforeMs, &f.AfterMs
	}
	return json.Marshal(out)
}
