package output

import (
	"bytes"
	"go/format"
	"strings"
)

// An Edit replaces the bytes [Start, End) of a file's old content with
// New.
type Edit struct {
	Start, End int
	New        string
}

// LineEdits returns the edits that turn old into new, one per run of
// changed lines, in order and not overlapping: the same line diff as
// WriteDiff, so a driver that applies edits (go fix, gopls) changes the
// lines `unflake fix --diff` shows, and no others.
func LineEdits(old, new []byte) []Edit {
	a := SplitLines(string(old))
	var edits []Edit
	offset := make([]int, len(a)+1) // offset[i]: where line i of old starts
	for i, l := range a {
		offset[i+1] = offset[i] + len(l)
	}
	var cur *Edit
	for _, o := range LineOps(a, SplitLines(string(new))) {
		if o.Kind == ' ' {
			cur = nil
			continue
		}
		if cur == nil {
			edits = append(edits, Edit{Start: offset[o.A], End: offset[o.A]})
			cur = &edits[len(edits)-1]
		}
		if o.Kind == '-' {
			cur.End = offset[o.A+1]
		} else {
			cur.New += o.Line
		}
	}
	return edits
}

// InsertIgnore returns new with a line holding comment (a //unflake:ignore
// directive) inserted before the line that was line (1-based) in old, at
// its indentation. It reports false when that line did not survive from
// old to new unchanged, or when the result would not be gofmt-clean.
func InsertIgnore(old, new []byte, line int, comment string) ([]byte, bool) {
	a, b := SplitLines(string(old)), SplitLines(string(new))
	at := -1
	for _, o := range LineOps(a, b) {
		if o.Kind == ' ' && o.A == line-1 {
			at = o.B
			break
		}
	}
	if at < 0 {
		return nil, false
	}
	target := b[at]
	indent := target[:len(target)-len(strings.TrimLeft(target, " \t"))]
	var out bytes.Buffer
	for i, l := range b {
		if i == at {
			out.WriteString(indent + comment + "\n")
		}
		out.WriteString(l)
	}
	formatted, err := format.Source(out.Bytes())
	if err != nil || !bytes.Equal(formatted, out.Bytes()) {
		return nil, false
	}
	return out.Bytes(), true
}
