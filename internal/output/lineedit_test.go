package output_test

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/output"
)

// LineEdits turns old into new, touching only the lines that differ.
func TestLineEdits(t *testing.T) {
	for _, c := range []struct{ old, new string }{
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"a\nb\nc\n", "a\nc\n"},
		{"a\nc\n", "a\nb\nc\n"},
		{"a\nb\n", "x\na\nb\ny\n"},
		{"a\nb\nc\nd\ne\n", "a\nB\nc\nD\nE\nf\n"},
		{"a\nb", "a\nb\n"},
		{"", "a\n"},
		{"a\n", ""},
		{"same\n", "same\n"},
	} {
		edits := output.LineEdits([]byte(c.old), []byte(c.new))
		var b strings.Builder
		at := 0
		for _, e := range edits {
			if e.Start < at || e.End < e.Start || e.End > len(c.old) {
				t.Fatalf("%q -> %q: edits out of order or range: %+v", c.old, c.new, edits)
			}
			if e.Start > 0 && c.old[e.Start-1] != '\n' || e.End > 0 && e.End < len(c.old) && c.old[e.End-1] != '\n' {
				t.Errorf("%q -> %q: edit %+v does not cover whole lines", c.old, c.new, e)
			}
			b.WriteString(c.old[at:e.Start])
			b.WriteString(e.New)
			at = e.End
		}
		b.WriteString(c.old[at:])
		if b.String() != c.new {
			t.Errorf("%q -> %q: the edits %+v make %q", c.old, c.new, edits, b.String())
		}
		if c.old == c.new && len(edits) > 0 {
			t.Errorf("%q: edits for no change: %+v", c.old, edits)
		}
	}
}
