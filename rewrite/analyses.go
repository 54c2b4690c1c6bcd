package rewrite

import (
	"fmt"

	"github.com/unflake/unflake/internal/rulehook"
	"github.com/unflake/unflake/rule"
)

// analysisResult is one rule.Analysis's result on one package state.
type analysisResult struct {
	value any
	err   error
}

// resultsFor returns the results of the analyses r requires on cur, and of
// those they require, computing each at most once per state: a state is
// one package content, so every rule, trial, baseline and round that sees
// it shares them, and a rule never sees a result of another content. pass
// is r's pass on cur; an analysis reads the same package through a copy
// without the rule's hooks.
func resultsFor(r *rule.Rule, cur *state, pass *rule.Pass) (map[*rule.Analysis]any, error) {
	if len(r.Requires) == 0 {
		return nil, nil
	}
	if cur.results == nil {
		cur.results = map[*rule.Analysis]*analysisResult{}
	}
	out := map[*rule.Analysis]any{}
	var need func(as []*rule.Analysis) error
	need = func(as []*rule.Analysis) error {
		for _, a := range as {
			if _, ok := out[a]; ok {
				continue
			}
			if err := need(a.Requires); err != nil {
				return err
			}
			res := cur.results[a]
			if res == nil {
				ap := *pass
				ap.Rule, ap.Report, ap.Dst, ap.Require = nil, nil, nil, nil
				rulehook.SetGranted(&ap, nil)
				ap.ResultOf = out
				res = &analysisResult{}
				res.value, res.err = a.Run(&ap)
				cur.results[a] = res
			}
			if res.err != nil {
				return fmt.Errorf("analysis %s: %w", a.Name, res.err)
			}
			out[a] = res.value
		}
		return nil
	}
	return out, need(r.Requires)
}

// run runs r on the session's pass over cur, with the results of the
// analyses r requires.
func (s *session) run(r *rule.Rule, cur *state) error {
	res, err := resultsFor(r, cur, s.pass)
	if err != nil {
		return err
	}
	s.pass.ResultOf = res
	return r.Run(s.pass)
}

// failed replaces the session's diagnostics by one on the package, at the
// package clause of its first test file, saying that r failed with err:
// a rule's error, or an analysis's it requires, is a finding, never a
// crash of the run. Without a test file it returns false.
func (s *session) failed(r *rule.Rule, err error) bool {
	if len(s.pass.Files) == 0 {
		return false
	}
	f := s.pass.Files[0]
	s.diags = []rule.Diagnostic{{
		Pos:      f.Package,
		End:      f.Name.End(),
		Message:  fmt.Sprintf("rule %s failed: %v", r.Name, err),
		NotFixed: "internal error",
	}}
	return true
}

// An applyError is a fix's Apply failing: a broken invariant of its rule
// (a statement not where the analysis found it), reported as an internal
// error naming the rule, with the fix never applied.
type applyError struct{ err error }

func (e *applyError) Error() string { return "the fix failed: " + e.err.Error() }
func (e *applyError) Unwrap() error { return e.err }
