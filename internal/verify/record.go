package verify

import (
	"os"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/rewrite"
)

// record writes, into res.Changes, a generated directive
//
//	//unflake:ignore RULE reverted by unflake fix --verify: WHAT FAILED
//
// on the line before each fix that a test failed after (toRemember),
// when fix --verify --record-ignores asks for it. The engine honours the
// directive, so a later plain fix does not propose the fix again, and a
// reviewer sees why in the diff; deleting the line lets unflake try
// again. It returns the number of fixes recorded; a site whose line
// another fix changed, or where the directive would not be gofmt-clean,
// is left unrecorded.
//
// Only what verification showed to be the fix's is written down for
// good: not a fix whose test failed, skipped or was flaky before the
// rewrite, clashed over a resource or ran out of rounds (never the fix's
// doing). A proven fix a test failed after is recorded as an unproven
// one is: running decides.
func record(res *rewrite.Result, tried map[string]bool) int {
	added := map[string]bool{} // files changed only to record
	byPath := map[string]int{}
	for i, c := range res.Changes {
		byPath[c.Path] = i
	}
	n := 0
	for k := range res.Findings {
		f := &res.Findings[k]
		if !toRemember(*f, tried) {
			continue
		}
		i, ok := byPath[f.File]
		if !ok {
			old, err := os.ReadFile(f.File)
			if err != nil {
				continue
			}
			fi, err := os.Stat(f.File)
			if err != nil {
				continue
			}
			res.Changes = append(res.Changes, rewrite.Change{Path: f.File, Old: old, New: old, Mode: fi.Mode().Perm()})
			i = len(res.Changes) - 1
			byPath[f.File] = i
			added[f.File] = true
		}
		c := &res.Changes[i]
		if src, ok := output.InsertIgnore(c.Old, c.New, f.Line, ignoreLine(f.Rule, f.Revert)); ok {
			c.New = src
			n++
		}
	}
	// A file whose only change would have been a directive that did not
	// fit stays out of the diff.
	kept := res.Changes[:0]
	for _, c := range res.Changes {
		if !added[c.Path] || string(c.Old) != string(c.New) {
			kept = append(kept, c)
		}
	}
	res.Changes = kept
	sort.Slice(res.Changes, func(i, j int) bool { return res.Changes[i].Path < res.Changes[j].Path })
	return n
}

// ignoreLine is the directive recording a reverted fix: the failure's
// first line, cut at a word boundary to keep the line readable.
func ignoreLine(rule string, why *rewrite.Revert) string {
	first, _, _ := strings.Cut(why.String(), "\n")
	return "//unflake:ignore " + rule + " reverted by unflake fix --verify: " + clipTo(first, 120)
}
