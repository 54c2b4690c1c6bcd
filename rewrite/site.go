package rewrite

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rule"
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
	// Unproven, given to Config.Decide, is why the fix is a hypothesis
	// (rule.Fix.Unproven: its rule's reason, or its kind of change's),
	// "" when its rule proved it. Site returns it empty.
	Unproven string
	// Fix, given to Config.Decide, is the fix's first form: verification
	// holds back a kind of change no run can show the strength of
	// (rule.Unprovable of its Changes) before it runs anything. Site
	// returns it nil, so sites stay comparable by value.
	Fix *rule.Fix
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

// Site returns the site of the fix a finding reports.
func (f Finding) Site() Site {
	key := f.Rule + "\x00" + f.Package + "\x00" + f.Test + "\x00" + f.code
	sum := sha256.Sum256([]byte(key))
	return Site{Dir: filepath.Dir(f.File), Rule: f.Rule, Test: f.Test, Key: f.Rule + "-" + hex.EncodeToString(sum[:8])}
}

// A Revert says why verification held a fix back (package revert).
type Revert = revert.Revert

// HoldsWithout is revert.HoldsWithout, for the rules' tests that look
// for it on a finding.
const HoldsWithout = revert.HoldsWithout
