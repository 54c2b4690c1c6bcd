package analyzers

import (
	"go/token"
	"slices"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/modedit"
	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
)

// The engine type-checks the fixes of a package together, in rounds, and
// hands back each file's new content, not one edit per finding: a fix of
// one rule may need another's (the import both add, a bubble wallclock's
// assertion relies on). So the suggested fix of every fixed finding of a
// package is the whole type-checked change of the package, as line edits.
// A driver that applies several of them (go fix) merges identical edits
// into one, and the files end as `unflake fix` writes them; a driver that
// applies one (an editor's quick fix) gets a change that compiles.

// unitFixes is the change the fixed findings of one package carry.
type unitFixes struct {
	edits []analysis.TextEdit
	fixed map[string]bool // IDs of the findings whose fixes edits makes
	why   string          // why a fixed finding not in fixed carries none
}

// goModWhy is why a fix that adds a requirement to go.mod is not offered
// as a suggested fix: text edits reach only the package's Go files.
const goModWhy = "go fix cannot apply this fix: it also adds a requirement to go.mod; unflake fix applies it"

// of returns the edits of f's fix, or false when it has none to offer.
func (u *unitFixes) of(f rewrite.Finding) ([]analysis.TextEdit, bool) {
	if !u.fixed[f.ID] || len(u.edits) == 0 {
		return nil, false
	}
	return u.edits, true
}

// fixesOf computes the change the fixed findings of out carry. When the
// change also edits go.mod, which a text edit of a Go file cannot, the
// fixes that need a new requirement are held back: a run without the
// module's go.mod tells them (each is either not applied or applied in
// another form), and a third run applies the fixes of out but those, so
// that every fix offered is one unflake fix makes, type-checked without
// the others.
func fixesOf(files map[string]*token.File, cfg *rewrite.Config, p *packages.Package, src effects.Source, out *rewrite.Result) (*unitFixes, error) {
	u := &unitFixes{fixed: map[string]bool{}, why: goModWhy}
	if slices.ContainsFunc(out.Changes, func(c rewrite.Change) bool { return modedit.IsModFile(c.Path) }) {
		q := *p
		mod := *p.Module
		mod.GoMod = ""
		q.Module = &mod
		without, err := rewrite.RunPackage(cfg, &q, src)
		if err != nil {
			return nil, err
		}
		same := map[rewrite.Site]string{} // fixes made without go.mod, by site
		for _, f := range without.Findings {
			if f.Fixed {
				same[f.Site()] = f.Fix
			}
		}
		apply := map[rewrite.Site]bool{}
		for _, f := range out.Findings {
			if f.Fixed && same[f.Site()] == f.Fix {
				apply[f.Site()] = true
			}
		}
		held := &rewrite.Revert{Kind: revert.Companion, Detail: goModWhy}
		again := *cfg
		again.Decide = func(s rewrite.Site) rewrite.Decision {
			if apply[s] {
				return rewrite.Decision{}
			}
			return rewrite.Decision{Revert: held}
		}
		if out, err = rewrite.RunPackage(&again, p, src); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out.Changes, func(c rewrite.Change) bool { return modedit.IsModFile(c.Path) }) {
			return u, nil // cannot happen: every fix was applied without go.mod
		}
	}
	for _, f := range out.Findings {
		if f.Fixed {
			u.fixed[f.ID] = true
		}
	}
	for _, c := range out.Changes {
		tf := files[c.Path]
		if tf == nil || modedit.IsModFile(c.Path) {
			continue // the engine changes only the package's test files
		}
		old, new := c.Old, c.New
		if tf.Size() != len(old) {
			u.why = "go fix cannot apply this fix: " + c.Path + " changed since it was read"
			u.edits = nil
			return u, nil
		}
		for _, e := range output.LineEdits(old, new) {
			u.edits = append(u.edits, analysis.TextEdit{Pos: tf.Pos(e.Start), End: tf.Pos(e.End), NewText: []byte(e.New)})
		}
	}
	return u, nil
}
