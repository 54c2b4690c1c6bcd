package verify

import (
	"path/filepath"
	"sort"

	"github.com/unflake/unflake/internal/modedit"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// retryWithCompanions verifies again, with their rules' companions, the
// tests whose fixes verification took back, and merges the outcome into
// res and v: the retried packages' findings, changes and runs replace
// those of the first verification.
func (vf *verifier) retryWithCompanions(cfg *rewrite.Config, res *rewrite.Result, v *Verification) (*rewrite.Result, *Verification, error) {
	ran := map[string]bool{}
	for _, r := range cfg.Rules {
		ran[r.Name] = true
	}
	byName := map[string]*rule.Rule{}
	for _, r := range cfg.Rules {
		byName[r.Name] = r
	}
	// The tests to retry: dir → top-level test → true.
	retry := map[string]map[string]bool{}
	extra := map[string]bool{}              // companions to add
	retried := map[string]map[string]bool{} // dir → rule whose fixes are retried
	for _, f := range res.Findings {
		r := byName[f.Rule]
		if r == nil || f.Revert == nil || !f.Revert.AfterRewrite() || f.Revert.Remembered != "" {
			continue
		}
		if f.Revert.Unrun {
			continue // held back before any run: companions cannot change that
		}
		var missing []string
		for _, c := range r.Companions {
			if !ran[c] && cfg.Lookup(c) != nil {
				missing = append(missing, c)
			}
		}
		if len(missing) == 0 {
			continue
		}
		dir := filepath.Dir(f.File)
		if retry[dir] == nil {
			retry[dir] = map[string]bool{}
			retried[dir] = map[string]bool{}
		}
		retry[dir][topLevel(f.Test)] = true
		retried[dir][f.Rule] = true
		for _, c := range missing {
			extra[c] = true
		}
	}
	if len(retry) == 0 {
		return res, v, nil
	}

	cfg2 := *cfg
	cfg2.Rules = nil
	var names []string
	for c := range extra {
		names = append(names, c)
	}
	sort.Strings(names)
	// Companions run first: their fixes are what the others need.
	for _, c := range names {
		cfg2.Rules = append(cfg2.Rules, cfg.Lookup(c))
	}
	cfg2.Rules = append(cfg2.Rules, cfg.Rules...)
	only := cfg.Only
	cfg2.Only = func(path string) bool {
		return retry[filepath.Dir(path)] != nil && (only == nil || only(path))
	}
	pre := func(s rewrite.Site) *rewrite.Revert {
		if extra[s.Rule] && !retry[s.Dir][topLevel(s.Test)] {
			return companionOnly
		}
		return nil
	}
	res2, v2, err := vf.run(&cfg2, pre, mainPhase)
	if err != nil {
		return nil, nil, err
	}

	// Merge: the retried packages from the second run, the rest from
	// the first.
	in := func(path string) bool { return retry[filepath.Dir(path)] != nil }
	out := &rewrite.Result{Packages: res.Packages, Loaded: res.Loaded, Errors: append(res.Errors, res2.Errors...)}
	for _, f := range res.Findings {
		if !in(f.File) {
			out.Findings = append(out.Findings, f)
		}
	}
	for _, f := range res2.Findings {
		if extra[f.Rule] && !retry[filepath.Dir(f.File)][topLevel(f.Test)] {
			continue // a companion the user did not ask for, outside the retried tests
		}
		out.Findings = append(out.Findings, f)
	}
	rewrite.SortFindings(out.Findings)
	seen := map[string]bool{}
	for _, c := range res.Changes {
		if !in(c.Path) || modedit.IsModFile(c.Path) {
			out.Changes = append(out.Changes, c)
			seen[c.Path] = true
		}
	}
	for _, c := range res2.Changes {
		if !seen[c.Path] && (in(c.Path) || modedit.IsModFile(c.Path)) {
			out.Changes = append(out.Changes, c)
		}
	}
	sort.Slice(out.Changes, func(i, j int) bool { return out.Changes[i].Path < out.Changes[j].Path })

	vo := &Verification{Rounds: v.Rounds + v2.Rounds}
	for _, t := range v.Tests {
		if retry[t.Dir] == nil {
			vo.Tests = append(vo.Tests, t)
		}
	}
	vo.Tests = append(vo.Tests, v2.Tests...)
	sort.Slice(vo.Tests, func(i, j int) bool {
		a, b := vo.Tests[i], vo.Tests[j]
		if a.Dir != b.Dir {
			return a.Dir < b.Dir
		}
		return a.Name < b.Name
	})
	for _, r := range v.Reverts {
		if retry[r.Site.Dir] == nil {
			vo.Reverts = append(vo.Reverts, r)
		}
	}
	vo.Reverts = append(vo.Reverts, v2.Reverts...)

	// Gains: the retried rules' fixes kept in the retried tests.
	var dirs []string
	for d := range retry {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		var rs []string
		for r := range retried[d] {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		for _, r := range rs {
			g := Gain{Dir: d, Rule: r, Companions: byName[r].Companions, Tests: len(retry[d])}
			for _, f := range res2.Findings {
				if f.Rule == r && f.Fixed && filepath.Dir(f.File) == d && retry[d][topLevel(f.Test)] {
					g.Fixes++
				}
			}
			vo.Gains = append(vo.Gains, g)
		}
	}
	return out, vo, nil
}

// companionOnly holds back a companion's fix outside the tests retried.
var companionOnly = &rewrite.Revert{Kind: revert.Companion, Detail: "a companion fix, tried only where it may help another rule's fix"}
