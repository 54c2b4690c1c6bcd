package rewrite

import (
	"strings"

	"github.com/unflake/unflake/internal/output"
)

// splice carries the changes from printed to fixed over to src, where
// printed is src printed back without the fixes. It is used when printing
// changes lines the fixes did not touch: the result is src with only the
// fixes' lines changed. Every changed run of lines must be found in src:
// the lines it replaces must appear there unchanged (for an insertion, a
// line next to it must). It reports false when they do not.
func splice(src, printed, fixed []byte) ([]byte, bool) {
	s, a := output.SplitLines(string(src)), output.SplitLines(string(printed))
	// at[k] is the line of src that line k of printed is, or -1.
	at := make([]int, len(a)+1)
	for i := range at {
		at[i] = -1
	}
	at[len(a)] = len(s)
	for _, o := range output.LineOps(s, a) {
		if o.Kind == ' ' {
			at[o.B] = o.A
		}
	}
	var out strings.Builder
	done := 0 // lines of src written so far
	ops := output.LineOps(a, output.SplitLines(string(fixed)))
	for i := 0; i < len(ops); {
		if ops[i].Kind == ' ' {
			i++
			continue
		}
		// A run of changes replacing printed lines [a0, a1).
		a0 := ops[i].A
		var added []string
		for ; i < len(ops) && ops[i].Kind != ' '; i++ {
			if ops[i].Kind == '+' {
				added = append(added, ops[i].Line)
			}
		}
		a1 := a0
		if i < len(ops) {
			a1 = ops[i].A
		} else {
			a1 = len(a)
		}
		// Have: printed lines [a0, a1) become added. Find them in src: the
		// replaced lines themselves, or for a pure insertion a neighbour.
		var start, end int
		switch {
		case a0 < a1:
			start = at[a0]
			for k := a0; k < a1; k++ {
				if start < 0 || at[k] != start+(k-a0) {
					return nil, false
				}
			}
			end = start + (a1 - a0)
		case a0 > 0 && at[a0-1] >= 0:
			start = at[a0-1] + 1
			end = start
		case at[a0] >= 0:
			start = at[a0]
			end = start
		default:
			return nil, false
		}
		if start < done {
			return nil, false
		}
		for _, l := range s[done:start] {
			out.WriteString(l)
		}
		for _, l := range added {
			out.WriteString(l)
		}
		done = end
	}
	for _, l := range s[done:] {
		out.WriteString(l)
	}
	return []byte(out.String()), true
}
