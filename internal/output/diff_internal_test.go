package output

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
		for _, o := range LineOps(a, b) {
			if o.A != ai || o.B != bi {
				t.Fatalf("case %d: op %+v at a=%d b=%d", n, o, ai, bi)
			}
			if o.Kind != '+' {
				gotA = append(gotA, o.Line)
				ai++
			}
			if o.Kind != '-' {
				gotB = append(gotB, o.Line)
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
	m := LineMap([]byte(orig), []byte(changed))
	want := []LineAt{{0, 0, false}, {0, 0, true}, {0, 0, true}, {2, 1, false}, {2, 0, true}, {3, 0, false}}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("lineMap = %v, want %v", m, want)
	}
}
