package rewrite

import (
	"fmt"
	"testing"
)

// TestRemapLinesDropsFindingsOnAddedCode: a finding without a fix on code
// a fix added (a poll's interval sleep) is not the user's and is not
// reported at the line before it; one on the user's code is kept, at its
// original line.
func TestRemapLinesDropsFindingsOnAddedCode(t *testing.T) {
	orig := "func TestA(t *testing.T) {\n\tx()\n\ttime.Sleep(100)\n\tcheck()\n}\n"
	changed := "func TestA(t *testing.T) {\n\tx()\n\tfor poll() {\n\t\ttime.Sleep(10)\n\t}\n\tcheck()\n}\n"
	first := map[string]*content{"a_test.go": {data: []byte(orig)}}
	seen := &content{data: []byte(changed)}
	fs := []found{
		{Finding: Finding{File: "a_test.go", Line: 4, Col: 3, Rule: "sleep"}, seen: seen, site: "time.Sleep(10)"},
		{Finding: Finding{File: "a_test.go", Line: 6, Col: 2, Rule: "other"}, seen: seen, site: "check()"},
		{Finding: Finding{File: "a_test.go", Line: 4, Col: 3, Rule: "fixed", Fixed: true}, seen: seen, site: "time.Sleep(10)"},
	}
	got := remapLines(fs, first)
	var lines []string
	for _, f := range got {
		lines = append(lines, fmt.Sprintf("%s:%d", f.Rule, f.Line))
	}
	if want := "[other:4 fixed:2]"; fmt.Sprint(lines) != want {
		t.Errorf("remapLines kept %v, want %s", lines, want)
	}
}
