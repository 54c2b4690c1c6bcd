package output

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// contextLines is the number of unchanged lines around each hunk, as in
// diff -u and git diff.
const contextLines = 3

// WriteDiff writes a unified diff of old and new for the file name, with
// a/ and b/ prefixes, that `git apply` and `patch -p1` accept. It writes
// nothing when the contents are equal. A nil old is a file to create: the
// diff runs from /dev/null.
func WriteDiff(w io.Writer, name string, old, new []byte) error {
	a, b := SplitLines(string(old)), SplitLines(string(new))
	ops := LineOps(a, b)
	hunks := groupHunks(ops)
	if len(hunks) == 0 {
		return nil
	}
	var sb strings.Builder
	from := "a/" + name
	if old == nil {
		from = "/dev/null"
	}
	fmt.Fprintf(&sb, "--- %s\n+++ b/%s\n", from, name)
	for _, h := range hunks {
		writeHunk(&sb, h, ops)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// op is one line of the edit script.
type Op struct {
	Kind byte   // ' ', '-' or '+'
	Line string // including its newline, if it has one
	A, B int    // 0-based line numbers in old and new before this op
}

// lineOps computes a line-level edit script. Lines that occur exactly
// once in a and once in b anchor it, in the longest run that keeps their
// order (as patience diff does); go-diff's Myers diff fills the gaps
// between anchors. Myers alone costs the lines times the differences,
// which is quadratic on a file with thousands of fixes; the gaps between
// unique lines are mostly one function each.
func LineOps(a, b []string) []Op {
	var ops []Op
	i, j := 0, 0
	for _, an := range anchors(a, b) {
		ops = myersOps(ops, a[i:an.a], b[j:an.b], i, j)
		ops = append(ops, Op{' ', a[an.a], an.a, an.b})
		i, j = an.a+1, an.b+1
	}
	return myersOps(ops, a[i:], b[j:], i, j)
}

// anchor is a pair of equal lines, a[a] == b[b].
type anchor struct{ a, b int }

// anchors returns the lines unique to both a and b that a diff can keep,
// in order: the longest increasing run of their positions in b.
func anchors(a, b []string) []anchor {
	// count[l]: occurrences of l in a; once b is read, -1-k for a line
	// that occurs once in a and once in b, at line k of b.
	count := make(map[string]int, len(a))
	for _, l := range a {
		count[l]++
	}
	for k, l := range b {
		switch n := count[l]; {
		case n == 1:
			count[l] = -1 - k
		case n < 0:
			count[l] = 0 // more than once in b
		}
	}
	var pairs []anchor
	for k, l := range a {
		if n := count[l]; n < 0 {
			pairs = append(pairs, anchor{k, -1 - n})
		}
	}
	// Longest increasing subsequence of pairs[].b (patience sorting).
	var tops []int // tops[k]: index in pairs of the smallest end of a run of length k+1
	prev := make([]int, len(pairs))
	for k, p := range pairs {
		lo := sort.Search(len(tops), func(x int) bool { return pairs[tops[x]].b >= p.b })
		if lo > 0 {
			prev[k] = tops[lo-1]
		} else {
			prev[k] = -1
		}
		if lo == len(tops) {
			tops = append(tops, k)
		} else {
			tops[lo] = k
		}
	}
	out := make([]anchor, len(tops))
	if len(tops) > 0 {
		x := tops[len(tops)-1]
		for k := len(tops) - 1; k >= 0; k-- {
			out[k] = pairs[x]
			x = prev[x]
		}
	}
	return out
}

// myersOps appends the edit script of a and b, which start at lines ai
// and bi of the whole, computed with go-diff.
func myersOps(ops []Op, a, b []string, ai, bi int) []Op {
	switch {
	case len(a) == 0 && len(b) == 0:
		return ops
	case len(a) == 0:
		for _, l := range b {
			ops = append(ops, Op{'+', l, ai, bi})
			bi++
		}
		return ops
	case len(b) == 0:
		for _, l := range a {
			ops = append(ops, Op{'-', l, ai, bi})
			ai++
		}
		return ops
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0 // exact, deterministic diffs
	ta, tb, lines := dmp.DiffLinesToRunes(strings.Join(a, ""), strings.Join(b, ""))
	diffs := dmp.DiffMainRunes(ta, tb, false)
	for _, d := range diffs {
		for _, r := range d.Text {
			line := lines[r]
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				ops = append(ops, Op{' ', line, ai, bi})
				ai++
				bi++
			case diffmatchpatch.DiffDelete:
				ops = append(ops, Op{'-', line, ai, bi})
				ai++
			case diffmatchpatch.DiffInsert:
				ops = append(ops, Op{'+', line, ai, bi})
				bi++
			}
		}
	}
	return ops
}

// hunk is a range of ops to print.
type hunk struct{ start, end int }

func groupHunks(ops []Op) []hunk {
	var hunks []hunk
	for i := 0; i < len(ops); i++ {
		if ops[i].Kind == ' ' {
			continue
		}
		start := max(i-contextLines, 0)
		end := i
		// Extend over changes closer than 2*context apart.
		for j := i; j < len(ops); j++ {
			if ops[j].Kind != ' ' {
				end = j
			} else if j-end > 2*contextLines {
				break
			}
		}
		end = min(end+contextLines+1, len(ops))
		if n := len(hunks); n > 0 && hunks[n-1].end >= start {
			hunks[n-1].end = end
		} else {
			hunks = append(hunks, hunk{start, end})
		}
		i = end - 1
	}
	return hunks
}

func writeHunk(sb *strings.Builder, h hunk, ops []Op) {
	first := ops[h.start]
	na, nb := 0, 0
	for _, o := range ops[h.start:h.end] {
		if o.Kind != '+' {
			na++
		}
		if o.Kind != '-' {
			nb++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(first.A, na), hunkRange(first.B, nb))
	for _, o := range ops[h.start:h.end] {
		sb.WriteByte(o.Kind)
		sb.WriteString(o.Line)
		if !strings.HasSuffix(o.Line, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats a hunk's line range as diff -u does: an empty range
// names the line before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after each newline; the last line may lack one.
func SplitLines(s string) []string {
	var lines []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// CountChangedLines returns the number of lines added plus the number of
// lines removed in the line diff of old and new. It uses the same diff as
// WriteDiff, so the size a plan reports is the size a reviewer sees.
func CountChangedLines(old, new []byte) int {
	n := 0
	for _, o := range LineOps(SplitLines(string(old)), SplitLines(string(new))) {
		if o.Kind != ' ' {
			n++
		}
	}
	return n
}
