package bubble

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// valueCompared finds times compared by their value, which a bubble's
// readings (no monotonic reading) make equal where real time does not.
func TestValueCompared(t *testing.T) {
	const now = "\nfunc stamp() time.Time { return time.Now() }\n"
	for _, tc := range []struct {
		code, test string
		want       string // a substring of the hit, or "" for none
	}{
		{"type S struct{ stamp time.Time }\nfunc (s *S) newer(since time.Time) bool { return s.stamp != since }" + now, "", "s.stamp != since"},
		{"var seen = map[time.Time]int{}" + now, "", "a map keyed by time.Time"},
		{"type entry struct{ at time.Time; n int }\nfunc same(a, b entry) bool { return a == b }" + now, "", "a == b"},
		{"type entry struct{ at time.Time }\ntype row struct{ e entry }\nvar byRow map[row]bool" + now, "", "a map keyed by row"},
		{"func tag() string { return stamp().String() }" + now, "", "stamp().String()"},
		{"func tag(at time.Time) string { return fmt.Sprint(at) }" + now, "", "fmt.Sprint"},
		{"func f() time.Time { return time.Now() }", "func TestX(t *testing.T) { got := f(); if !reflect.DeepEqual(got, f()) { t.Fatal() } }", "reflect.DeepEqual"},
		{"func f() time.Time { return time.Now() }", "func TestX(t *testing.T) { require.Equal(t, f(), f()) }", "require.Equal"},
		// The same in and out of a bubble: the zero time, nil, Equal.
		{"func set(at time.Time) bool { return at != (time.Time{}) }" + now, "", ""},
		{"func set(at *time.Time) bool { return at != nil }" + now, "", ""},
		{"func same(a, b time.Time) bool { return a.Equal(b) }" + now, "", ""},
		// testify's first argument is the testing value, not a time.
		{"type tok struct{ exp time.Time }\nfunc (t tok) ok() bool { return true }" + now, "func TestX(t *testing.T) { require.Equal(t, true, true) }", ""},
		// No reading of the clock: no monotonic reading to lose.
		{"func same(a, b time.Time) bool { return a == b }", "", ""},
	} {
		fset := token.NewFileSet()
		code, err := parser.ParseFile(fset, "x.go", "package x\nimport (\"fmt\"; \"time\")\nvar _ = fmt.Sprint\n"+tc.code, 0)
		if err != nil {
			t.Fatal(err)
		}
		files := []*lockFile{{name: "x.go", fset: fset, f: code}}
		var tests []*lockFile
		if tc.test != "" {
			tf, err := parser.ParseFile(fset, "x_test.go", "package x\nimport (\"reflect\"; \"testing\"; \"github.com/stretchr/testify/require\")\nvar _ = reflect.DeepEqual\nvar _ = require.Equal\n"+tc.test, 0)
			if err != nil {
				t.Fatal(err)
			}
			tests = append(tests, &lockFile{name: "x_test.go", fset: fset, f: tf})
		}
		got := valueCompared(files, tests)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("valueCompared(%q, %q) = %q, want %q", tc.code, tc.test, got, tc.want)
		}
	}
}
