package rewrite

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLineOpsIsAnEditScript: on random files with repeated and unique
// lines, the script's kept and deleted lines are the old file, its kept
// and added lines the new one, and its line numbers count them.
func TestLineOpsIsAnEditScript(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		a := randomLines(rng, rng.IntN(40))
		b := mutate(rng, a)
		var gotA, gotB []string
		ai, bi := 0, 0
		for _, o := range lineOps(a, b) {
			if o.a != ai || o.b != bi {
				t.Fatalf("case %d: op %+v at a=%d b=%d", n, o, ai, bi)
			}
			if o.kind != '+' {
				gotA = append(gotA, o.line)
				ai++
			}
			if o.kind != '-' {
				gotB = append(gotB, o.line)
				bi++
			}
		}
		if strings.Join(gotA, "") != strings.Join(a, "") || strings.Join(gotB, "") != strings.Join(b, "") {
			t.Fatalf("case %d: script does not rebuild the files:\na=%q\nb=%q", n, a, b)
		}
	}
}

func randomLines(rng *rand.Rand, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		if rng.IntN(3) == 0 {
			out = append(out, fmt.Sprintf("unique %d\n", rng.IntN(1000)))
		} else {
			out = append(out, fmt.Sprintf("common %d\n", rng.IntN(4)))
		}
	}
	return out
}

// mutate deletes, inserts, re-indents and swaps lines of a.
func mutate(rng *rand.Rand, a []string) []string {
	var b []string
	for _, l := range a {
		switch rng.IntN(8) {
		case 0: // deleted
		case 1:
			b = append(b, "\t"+l)
		case 2:
			b = append(b, l, fmt.Sprintf("added %d\n", rng.IntN(5)))
		default:
			b = append(b, l)
		}
	}
	if len(b) > 2 && rng.IntN(4) == 0 {
		i, j := rng.IntN(len(b)), rng.IntN(len(b))
		b[i], b[j] = b[j], b[i]
	}
	return b
}

// TestLineMapFollowsReindentedLines: a body moved one level deeper maps
// each of its lines back to its original line and indentation.
func TestLineMapFollowsReindentedLines(t *testing.T) {
	orig := "func TestA(t *testing.T) {\n\tos.Setenv(\"A\", \"1\")\n\ttime.Sleep(1)\n}\n"
	changed := "func TestA(t *testing.T) {\n\tsynctest.Test(t, func(t *testing.T) {\n\t\tt.Setenv(\"A\", \"1\")\n\t\ttime.Sleep(1)\n\t})\n}\n"
	m := lineMap([]byte(orig), []byte(changed))
	want := []lineAt{{0, 0, false}, {0, 0, true}, {0, 0, true}, {2, 1, false}, {2, 0, true}, {3, 0, false}}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("lineMap = %v, want %v", m, want)
	}
}

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
