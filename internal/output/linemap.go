package output

import "strings"

// A lineAt is the original line a line of rewritten content is, and how
// much deeper the rewrite indented it.
type LineAt struct {
	Line   int
	Indent int  // bytes of leading white space added (negative: removed)
	Added  bool // the line is new: line is the original line before it
}

// lineMap maps each line of changed to the line of orig it is: the same
// line, the same line re-indented, or, for a line the rewrite added, the
// original line before it.
//
// The lines are compared without their indentation: a rewrite that wraps
// a test's body (a synctest bubble) re-indents every line of it, and a
// diff of the lines as they are would match a closing "\t\t}" of the
// original's inner block with the wrapped body's outer one, so that the
// lines between them could find their originals nowhere and a failure
// would be quoted at a line before its check.
func LineMap(orig, changed []byte) []LineAt {
	a, b := SplitLines(string(orig)), SplitLines(string(changed))
	ta, tb := make([]string, len(a)), make([]string, len(b))
	for i, l := range a {
		ta[i] = strings.TrimLeft(l, " \t") // the newline stays: the diff splits on it
	}
	for i, l := range b {
		tb[i] = strings.TrimLeft(l, " \t")
	}
	m := make([]LineAt, len(b))
	last := 0
	ops := LineOps(ta, tb)
	for i := 0; i < len(ops); {
		o := ops[i]
		if o.Kind == ' ' {
			m[o.B], last = LineAt{Line: o.A, Indent: indentOf(b[o.B]) - indentOf(a[o.A])}, o.A
			i++
			continue
		}
		// A run of changes: deleted lines, added lines, in any order.
		var dels, adds []Op
		for ; i < len(ops) && ops[i].Kind != ' '; i++ {
			if ops[i].Kind == '-' {
				dels = append(dels, ops[i])
			} else {
				adds = append(adds, ops[i])
			}
		}
		d := 0
		for _, ad := range adds {
			text := strings.TrimSpace(ad.Line)
			k := d
			for k < len(dels) && (text == "" || strings.TrimSpace(dels[k].Line) != text) {
				k++
			}
			if k < len(dels) {
				m[ad.B] = LineAt{Line: dels[k].A, Indent: indentOf(b[ad.B]) - indentOf(a[dels[k].A])}
				last, d = dels[k].A, k+1
				continue
			}
			m[ad.B] = LineAt{Line: last, Added: true}
		}
	}
	return m
}

func indentOf(line string) int {
	return len(line) - len(strings.TrimLeft(line, " \t"))
}

// OriginalLine returns the line of orig (1-based) that line of changed,
// a rewrite of it, is; added reports a line the rewrite added, for which
// the line is the original one before it. A line outside changed maps to
// itself. Verification uses it to quote a failure of a rewritten test at
// the user's own line.
func OriginalLine(orig, changed []byte, line int) (at int, added bool) {
	m := LineMap(orig, changed)
	if line < 1 || line > len(m) {
		return line, false
	}
	return m[line-1].Line + 1, m[line-1].Added
}
