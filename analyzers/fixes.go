package analyzers

import (
	"go/token"
	"slices"

	"golang.org/x/tools/go/analysis"

	"github.com/unflake/unflake/internal/modedit"
	"github.com/unflake/unflake/internal/output"
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
const goModWhy = "go fix cannot apply this fix: the fixes of this package add a requirement to go.mod; unflake fix applies them"

// of returns the edits of f's fix, or false when it has none to offer.
func (u *unitFixes) of(f rewrite.Finding) ([]analysis.TextEdit, bool) {
	if !u.fixed[f.ID] || len(u.edits) == 0 {
		return nil, false
	}
	return u.edits, true
}

// fixesOf computes the change the fixed findings of out carry. When the
// change also edits go.mod, which a text edit of a Go file cannot, none
// is offered: the package's fixes were type-checked together, with the
// requirement, and unflake fix applies them. (One engine run per package:
// the fixes that need no requirement are not worked out again without
// the others.)
func fixesOf(files map[string]*token.File, out *rewrite.Result) *unitFixes {
	u := &unitFixes{fixed: map[string]bool{}, why: goModWhy}
	if slices.ContainsFunc(out.Changes, func(c rewrite.Change) bool { return modedit.IsModFile(c.Path) }) {
		return u
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
			return u
		}
		for _, e := range output.LineEdits(old, new) {
			u.edits = append(u.edits, analysis.TextEdit{Pos: tf.Pos(e.Start), End: tf.Pos(e.End), NewText: []byte(e.New)})
		}
	}
	return u
}
