package rules_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file reads what a test run printed, for the strength corpus
// (strength_test.go) and the golden `fail` directive (golden_test.go): one
// implementation, so both mean the same by "the test failed at the
// expected check".
//
// The expected check is marked in the test file by a trailing comment on
// the line that reports the failure (the line go test prints as
// FILE.go:LINE:, i.e. the t.Fatal, t.Error or assert call):
//
//	t.Fatalf("got %d", n) // strength: bug_twice bug_leaves
//	t.Fatal("still valid") // strength: fail
//
// The words after "strength:" name what must fail there: a bug tag of a
// strength case, or "fail" for a golden mutation.

// markerRE matches a marker comment and captures its words.
var markerRE = regexp.MustCompile(`//\s*strength:\s*(.*)$`)

// markers are the marked lines of a module's test files: base name of
// the file, then line, then the words of the marker.
type markers map[string]map[int][]string

// readMarkers reads the markers of every _test.go file under dir.
func readMarkers(dir string) (markers, error) {
	m := markers{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if sub := markerRE.FindStringSubmatch(line); sub != nil {
				base := filepath.Base(path)
				if m[base] == nil {
					m[base] = map[int][]string{}
				}
				m[base][i+1] = append(m[base][i+1], strings.Fields(sub[1])...)
			}
		}
		return nil
	})
	return m, err
}

// words are every word the markers use, each once.
func (m markers) words() map[string]bool {
	out := map[string]bool{}
	for _, lines := range m {
		for _, ws := range lines {
			for _, w := range ws {
				out[w] = true
			}
		}
	}
	return out
}

// marks reports whether the location "file.go:LINE" is marked with word.
func (m markers) marks(loc, word string) bool {
	file, line, ok := strings.Cut(loc, ":")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(line)
	if err != nil {
		return false
	}
	for _, w := range m[file][n] {
		if w == word {
			return true
		}
	}
	return false
}

// A testRun is what one run of a test binary (or go test -v) printed,
// read from its -test.v output.
type testRun struct {
	failures []testFailure // one per failed run of a top-level test, in order
	passes   int           // passed runs of top-level tests
	elapsed  time.Duration // the sum of the top-level tests' times, as printed
	panicked bool          // a panic
	timedOut bool          // -test.timeout fired
}

// A testFailure is one failed run of a top-level test and the locations
// (file.go:LINE) it and its subtests reported failures at.
type testFailure struct {
	test string
	locs []string
}

var (
	// The testing package's status lines under -v; a subtest's are
	// indented.
	statusRE = regexp.MustCompile(`^\s*(?:=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)|--- (FAIL|PASS|SKIP): (\S+) \(([0-9.]+)s\))`)
	// A message of t.Error, t.Fatal, t.Log (and assert libraries): the
	// location, indented.
	locationRE = regexp.MustCompile(`^\s+([\w.+-]+\.go):(\d+): `)
)

// parseRun reads the -test.v output of one or more runs. Output lines are
// the test's whose status line came last (the testing package prints a
// "=== NAME" line whenever that changes), which holds for parallel tests
// too.
func parseRun(out string) testRun {
	var r testRun
	current := ""
	locs := map[string][]string{} // by top-level test, since its last RUN line
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "panic: ") || strings.Contains(line, "] panic: ") {
			r.panicked = true
		}
		if strings.HasPrefix(line, "panic: test timed out") || strings.Contains(line, "test timed out after") {
			r.timedOut = true
		}
		if sub := statusRE.FindStringSubmatch(line); sub != nil {
			if sub[1] != "" {
				current = sub[1]
				if top := topLevel(current); top == current && strings.Contains(line, "=== RUN") {
					locs[top] = nil
				}
				continue
			}
			name := sub[3]
			current = name
			if topLevel(name) != name {
				continue
			}
			if d, err := time.ParseDuration(sub[4] + "s"); err == nil {
				r.elapsed += d
			}
			switch sub[2] {
			case "FAIL":
				r.failures = append(r.failures, testFailure{test: name, locs: locs[name]})
			case "PASS":
				r.passes++
			}
			continue
		}
		if sub := locationRE.FindStringSubmatch(line); sub != nil && current != "" {
			top := topLevel(current)
			locs[top] = append(locs[top], sub[1]+":"+sub[2])
		}
	}
	return r
}

func topLevel(name string) string {
	top, _, _ := strings.Cut(name, "/")
	return top
}

// failedAt counts the failed runs that reported a failure at a line
// marked with word, and those that did not (failed elsewhere).
func (r testRun) failedAt(m markers, word string) (at, elsewhere int) {
	for _, f := range r.failures {
		hit := false
		for _, loc := range f.locs {
			if m.marks(loc, word) {
				hit = true
			}
		}
		if hit {
			at++
		} else {
			elsewhere++
		}
	}
	return at, elsewhere
}

// broken says what makes a run's failure not count as a failed check: a
// panic or a timeout, or "".
func (r testRun) broken() string {
	switch {
	case r.timedOut:
		return "timed out"
	case r.panicked:
		return "panicked"
	}
	return ""
}

// parseRun attributes each failure to its top-level test, also when
// parallel tests interleave (=== NAME) and for subtests, and tells a
// panic and a timeout from a failed check.
func TestParseRun(t *testing.T) {
	t.Parallel()
	out := `=== RUN   TestA
=== PAUSE TestA
=== RUN   TestB
=== PAUSE TestB
=== CONT  TestA
=== CONT  TestB
    b_test.go:9: b failed
=== NAME  TestA
    a_test.go:5: a failed
--- FAIL: TestB (0.00s)
--- FAIL: TestA (0.01s)
=== RUN   TestC
=== RUN   TestC/sub
    c_test.go:7: sub failed
--- FAIL: TestC (0.00s)
    --- FAIL: TestC/sub (0.00s)
=== RUN   TestD
--- PASS: TestD (0.25s)
FAIL
`
	r := parseRun(out)
	var got []string
	for _, f := range r.failures {
		got = append(got, f.test+"@"+strings.Join(f.locs, ","))
	}
	if want := "TestB@b_test.go:9 TestA@a_test.go:5 TestC@c_test.go:7"; strings.Join(got, " ") != want {
		t.Errorf("failures %q, want %q", got, want)
	}
	if r.passes != 1 || r.elapsed != 260*time.Millisecond || r.broken() != "" {
		t.Errorf("passes %d, elapsed %v, broken %q", r.passes, r.elapsed, r.broken())
	}
	m := markers{"c_test.go": {7: {"bug_x"}}}
	if at, elsewhere := r.failedAt(m, "bug_x"); at != 1 || elsewhere != 2 {
		t.Errorf("failedAt = %d, %d; want 1, 2", at, elsewhere)
	}

	if r := parseRun("=== RUN   TestP\n--- FAIL: TestP (0.00s)\npanic: boom [recovered]\n"); r.broken() != "panicked" {
		t.Errorf("a panic: broken %q", r.broken())
	}
	if r := parseRun("=== RUN   TestH\npanic: test timed out after 1s\n\trunning tests:\n"); r.broken() != "timed out" {
		t.Errorf("a timeout: broken %q", r.broken())
	}
}
