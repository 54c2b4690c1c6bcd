package rewrite

import "strings"

// splice carries the changes from printed to fixed over to src, where
// printed is src printed back without the fixes. It is used when printing
// changes lines the fixes did not touch: the result is src with only the
// fixes' lines changed. Every changed run of lines must be found in src:
// the lines it replaces must appear there unchanged (for an insertion, a
// line next to it must). It reports false when they do not.
func splice(src, printed, fixed []byte) ([]byte, bool) {
	s, a := splitLines(string(src)), splitLines(string(printed))
	// at[k] is the line of src that line k of printed is, or -1.
	at := make([]int, len(a)+1)
	for i := range at {
		at[i] = -1
	}
	at[len(a)] = len(s)
	for _, o := range lineOps(s, a) {
		if o.kind == ' ' {
			at[o.b] = o.a
		}
	}
	var out strings.Builder
	done := 0 // lines of src written so far
	ops := lineOps(a, splitLines(string(fixed)))
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A run of changes replacing printed lines [a0, a1).
		a0 := ops[i].a
		var added []string
		for ; i < len(ops) && ops[i].kind != ' '; i++ {
			if ops[i].kind == '+' {
				added = append(added, ops[i].line)
			}
		}
		a1 := a0
		if i < len(ops) {
			a1 = ops[i].a
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
