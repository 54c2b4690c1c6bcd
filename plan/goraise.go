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

// Hypotheses says which of the fixes a raised analysis left unproven
// (rule.Fix.Hypothesis) GoRaises counts as unlocked.
type Hypotheses int

const (
	// ProvenOnly counts none: what plain fix applies.
	ProvenOnly Hypotheses = iota
	// Verifiable counts those fix --verify may keep: not those for
	// review only (Finding.Review), which verification holds back
	// before it runs anything (a plan once promised a raise's bubbles
	// that fix --raise-go --verify then held back, every one).
	Verifiable
	// ForReview counts them all: what fix --diff --unproven shows.
	ForReview
)

// GoRaises compares the findings of an analysis (before) with those of
// the same analysis with each module's go version raised (raised, from
// rewrite.Config.GoAs): a fix in raised whose finding (same ID) is not
// fixed in before is unlocked by the raise, and so is a fix the raised
// run left unproven that hyp counts. Only fixes that name the version they need
// (Finding.NeedsGo) count, so a difference the version gates do not
// explain is never attributed to the raise. module gives the module
// directory of a finding's file. The result has one entry per module with
// unlocked fixes, by module; To is the highest NeedsGo among them, the
// lowest version at which all of them hold.
func GoRaises(before, raised []rewrite.Finding, module func(file string) string, hyp Hypotheses) []GoRaise {
	fixed := map[string]bool{}
	for _, f := range before {
		if f.Fixed {
			fixed[f.ID] = true
		}
	}
	byModule := map[string]*GoRaise{}
	seen := map[string]bool{}
	for _, f := range raised {
		counts := f.Fixed || hyp == ForReview || hyp == Verifiable && !f.Review
		if f.NeedsGo == "" || fixed[f.ID] || seen[f.ID] || !counts {
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

// GoHeld is why a go raise unlocks no more fix than it does: the
// findings the go version held back (their blockers change when the
// module is analysed at a newer version) that the raised analysis still
// does not fix.
type GoHeld struct {
	Findings int
	// Unproven counts those whose fix the raised analysis found but could
	// not prove safe: fix --verify can try them, but for Review.
	Unproven int
	// Review counts those of Unproven whose fix is for review only
	// (Finding.Review): verification never keeps them, and
	// fix --raise-go --diff --unproven shows them.
	Review int
	// By counts them by the first blocker that still holds each back,
	// most first.
	By []ReasonCount
}

// GoHolds compares the findings of an analysis (before) with those of
// the same analysis with the go version raised (raised), as GoRaises
// does, and counts the findings the raise changes but does not fix. A
// finding counts when its blockers (Finding.Blockers, or its reason when
// its rule gives none) differ between the two: what the raise removed is
// what the version gates decided, without reading any reason's wording.
func GoHolds(before, raised []rewrite.Finding) GoHeld {
	blockers := func(f rewrite.Finding) []string {
		if len(f.Blockers) > 0 {
			return f.Blockers
		}
		return []string{f.Reason}
	}
	was := map[string]rewrite.Finding{}
	for _, f := range before {
		if !f.Fixed {
			was[f.ID] = f
		}
	}
	var held GoHeld
	by := map[string]int{}
	seen := map[string]bool{}
	for _, f := range raised {
		b, ok := was[f.ID]
		if !ok || f.Fixed || seen[f.ID] || slices.Equal(blockers(b), blockers(f)) {
			continue
		}
		seen[f.ID] = true
		held.Findings++
		if f.NeedsGo != "" {
			held.Unproven++
			if f.Review {
				held.Review++
			}
		}
		by[blockers(f)[0]]++
	}
	for r, n := range by {
		held.By = append(held.By, ReasonCount{Reason: r, Count: n})
	}
	slices.SortFunc(held.By, func(a, b ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	return held
}
