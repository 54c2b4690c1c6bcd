package verify

import (
	"os"
	"sort"

	"github.com/unflake/unflake/rewrite"
)

// record writes, into res.Changes, a generated directive
//
//	//unflake:ignore RULE reverted by unflake fix --verify: WHAT FAILED
//
// on the line before each fix that a test failed after (not one whose
// test failed or skipped before the rewrite: that fix was never tried).
// The engine honours the directive, so a later plain fix does not propose
// the fix again, and a reviewer sees why in the diff; deleting the line
// lets unflake try again. It returns the number of fixes recorded; a site
// whose line another fix changed, or where the directive would not be
// gofmt-clean, is left unrecorded.
func record(res *rewrite.Result) int {
	byPath := map[string]int{}
	for i, c := range res.Changes {
		byPath[c.Path] = i
	}
	n := 0
	for _, f := range res.Findings {
		if f.Fixed || f.Revert == nil || !f.Revert.AfterRewrite() {
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
		}
		c := &res.Changes[i]
		comment := "//unflake:ignore " + f.Rule + " reverted by unflake fix --verify: " + clipTo(f.Revert.String(), 120)
		if src, ok := rewrite.InsertIgnore(c.Old, c.New, f.Line, comment); ok {
			c.New = src
			n++
		}
	}
	sort.Slice(res.Changes, func(i, j int) bool { return res.Changes[i].Path < res.Changes[j].Path })
	return n
}
