package plan

import (
	"cmp"
	"go/version"
	"slices"

	"github.com/unflake/unflake/rewrite"
)

// GoRaise is what raising one module's go directive would unlock: the
// fixes found only when the module is analysed at a newer go version.
type GoRaise struct {
	Module            string `json:"module"` // its directory, relative to the analysed one ("." at the top)
	To                string `json:"to"`     // the lowest version that unlocks them ("go1.25")
	Fixes             int    `json:"fixes"`
	EstimatedSavingMs int64  `json:"estimatedSavingMs"`
}

// GoRaises compares the findings of an analysis (before) with those of
// the same analysis with each module's go version raised (raised, from
// rewrite.Config.GoAs): a fix in raised whose finding (same ID) is not
// fixed in before is unlocked by the raise. With unproven set, a fix the
// raised run left unproven (for fix --verify to try) counts too, as the
// run it plans will verify. Only fixes that name the version they need
// (Finding.NeedsGo) count, so a difference the version gates do not
// explain is never attributed to the raise. module gives the module
// directory of a finding's file. The result has one entry per module with
// unlocked fixes, by module; To is the highest NeedsGo among them, the
// lowest version at which all of them hold.
func GoRaises(before, raised []rewrite.Finding, module func(file string) string, unproven bool) []GoRaise {
	fixed := map[string]bool{}
	for _, f := range before {
		if f.Fixed {
			fixed[f.ID] = true
		}
	}
	byModule := map[string]*GoRaise{}
	seen := map[string]bool{}
	for _, f := range raised {
		if f.NeedsGo == "" || fixed[f.ID] || seen[f.ID] || !(f.Fixed || unproven) {
			continue
		}
		seen[f.ID] = true
		m := module(f.File)
		r := byModule[m]
		if r == nil {
			r = &GoRaise{Module: m, To: f.NeedsGo}
			byModule[m] = r
		}
		if version.Compare(f.NeedsGo, r.To) > 0 {
			r.To = f.NeedsGo
		}
		r.Fixes++
		r.EstimatedSavingMs += f.SavingMs
	}
	out := []GoRaise{}
	for _, r := range byModule {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b GoRaise) int { return cmp.Compare(a.Module, b.Module) })
	return out
}
