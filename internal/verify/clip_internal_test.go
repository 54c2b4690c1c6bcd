package verify

import (
	"testing"
	"unicode/utf8"
)

func TestClipToCutsAtWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"a  b\n c", 10, "a b c"},
		{"abcdefgh", 6, "abc…"},            // one long word: cut at a rune
		{"ab→cdefgh", 6, "ab…"},            // "→" is three bytes: cut before it, not inside
		{"got 12, want 13", 14, "got 12…"}, // not "got 12, wa"
		{"got 12, want 13", 15, "got 12, want 13"},
		{"one two three", 10, "one two…"}, // a space right after the limit: "two" is whole
	} {
		got := clipTo(c.in, c.n)
		if got != c.want {
			t.Errorf("clipTo(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if !utf8.ValidString(got) || len(got) > max(c.n, len(c.want)) {
			t.Errorf("clipTo(%q, %d) = %q: invalid or too long", c.in, c.n, got)
		}
	}
}
