package sweep_test

import (
	"slices"
	"testing"
)

func TestBasePackage(t *testing.T) {
	for in, want := range map[string]string{
		"example.com/p":                           "example.com/p",
		"example.com/p [example.com/p.test]":      "example.com/p",
		"example.com/p_test [example.com/p.test]": "example.com/p",
		"example.com/p.test":                      "example.com/p",
	} {
		if got := basePackage(in); got != want {
			t.Errorf("basePackage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChangedDirs(t *testing.T) {
	diff := "--- a/a_test.go\n+++ b/a_test.go\n@@ -1 +1 @@\n-x\n+y\n" +
		"--- a/x/y/b_test.go\n+++ b/x/y/b_test.go\n" +
		"--- a/x/y/c_test.go\n+++ b/x/y/c_test.go\n" +
		"--- a/go.mod\n+++ b/go.mod\n"
	got := changedDirs(diff)
	if want := []string{"./.", "./x/y"}; !slices.Equal(got, want) {
		t.Errorf("changedDirs = %q, want %q", got, want)
	}
}

func TestNewMessages(t *testing.T) {
	before := "# p\np/a_test.go:3:2: declared and not used: x\nvet: p/b.go:9: old\n"
	// The same messages moved by a rewrite are not new; a second copy of
	// one is.
	after := "# p\np/a_test.go:7:2: declared and not used: x\np/a_test.go:9:2: declared and not used: x\nvet: p/b.go:9: old\n"
	got := newMessages(before, after)
	if want := []string{"p/a_test.go:9:2: declared and not used: x"}; !slices.Equal(got, want) {
		t.Errorf("newMessages = %q, want %q", got, want)
	}
}

func TestUnescape(t *testing.T) {
	if got := unescape("github.com/!burnt!sushi/toml"); got != "github.com/BurntSushi/toml" {
		t.Errorf("unescape = %q", got)
	}
}

func TestProblems(t *testing.T) {
	ls := &listing{
		loadErrors: map[string]bool{"module lookup disabled by GOPROXY=off": true},
		// The package in bad/ does not compile as it is; the one in good/
		// does.
		typeError: func(dir string) string {
			if dir == "bad" {
				return "bad/x_test.go:3:2: undefined: T"
			}
			return ""
		},
	}
	const summary = "unflake: would rewrite 1 file (2 fixes); 3 findings not fixed (see unflake check)"
	for _, c := range []struct {
		name, stderr string
		code         int
		want         int // problems
	}{
		{"clean", "", 0, 0},
		{"summary", summary, 1, 0},
		{"the module's own load errors", "a/a.go:3:2: module lookup disabled by GOPROXY=off\nunflake: go: example.com/m@v1.0.0: module lookup disabled by GOPROXY=off\n" + summary, 2, 0},
		{"the module's own type errors", "bad/x_test.go:3:2: undefined: T\nbad/x_test.go:9:2: undefined: U", 2, 0},
		{"a type error where the package compiles", "good/x_test.go:3:2: undefined: T", 2, 1},
		{"exit 2 without a reason", summary, 2, 1},
		{"internal error beside a load error", "a/a.go:3:2: module lookup disabled by GOPROXY=off\nunflake: b_test.go:1:1: internal error: rule r: fix does not compile", 2, 1},
		{"an error go list did not report", "unflake: cannot write go.sum", 2, 1},
		{"panic", "panic: runtime error\n\ngoroutine 1 [running]:\nmain.main()", 2, 1},
		{"killed", "", -1, 1},
	} {
		if got := ls.problems(c.stderr, c.code); len(got) != c.want {
			t.Errorf("%s: problems = %q, want %d", c.name, got, c.want)
		}
	}
}
