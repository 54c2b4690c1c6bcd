package verify

import (
	"testing"
	"unicode/utf8"
)

func TestClipToKeepsWholeRunes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"a  b\n c", 10, "a b c"},
		{"abcdef", 3, "abc..."},
		{"ab→cd", 3, "ab..."}, // "→" is three bytes: cut before it, not inside
		{"ab→cd", 5, "ab→..."},
	} {
		if got := clipTo(c.in, c.n); got != c.want {
			t.Errorf("clipTo(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if !utf8.ValidString(clipTo(c.in, c.n)) {
			t.Errorf("clipTo(%q, %d) is not valid UTF-8", c.in, c.n)
		}
	}
}
