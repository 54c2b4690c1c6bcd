package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// lines returns n distinct lines, so that a change from them to nothing
// counts exactly n changed lines.
func lines(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return []byte(b.String())
}

// tfile is a test file for batching tests: n changed lines and one
// fixable finding.
type tfile struct {
	path  string
	lines int
}

func inputOf(files []tfile) Input {
	in := Input{Changes: map[string]FileChange{}}
	for _, f := range files {
		in.Findings = append(in.Findings, rewrite.Finding{
			ID: "sleep-" + f.path, Rule: "sleep", Package: "m/" + f.path,
			File: f.path, Line: 1, Fixed: true, SavingMs: 100,
		})
		in.Changes[f.path] = FileChange{Old: lines(f.lines), New: nil}
	}
	return in
}

func TestCountChangedLines(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     int
	}{
		{"equal", "a\nb\n", "a\nb\n", 0},
		{"one line replaced", "a\nb\nc\n", "a\nB\nc\n", 2},
		{"one line added", "a\nc\n", "a\nb\nc\n", 1},
		{"one line removed", "a\nb\nc\n", "a\nc\n", 1},
		{"new file", "", "a\nb\n", 2},
		{"last newline added", "a", "a\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := output.CountChangedLines([]byte(tt.old), []byte(tt.new)); got != tt.want {
				t.Errorf("CountChangedLines = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBatching(t *testing.T) {
	tests := []struct {
		name       string
		files      []tfile
		codeowners string
		opts       Options
		want       []string // per batch: "owners: path path ..."
	}{
		{
			name:  "max files",
			files: []tfile{{"a/1_test.go", 1}, {"a/2_test.go", 1}, {"a/3_test.go", 1}, {"a/4_test.go", 1}, {"a/5_test.go", 1}},
			opts:  Options{MaxFiles: 2},
			want:  []string{": a/1_test.go a/2_test.go", ": a/3_test.go a/4_test.go", ": a/5_test.go"},
		},
		{
			name:  "max files below 1 counts as 1",
			files: []tfile{{"a/1_test.go", 1}, {"a/2_test.go", 1}},
			opts:  Options{MaxFiles: 0},
			want:  []string{": a/1_test.go", ": a/2_test.go"},
		},
		{
			name:  "max lines",
			files: []tfile{{"a/1_test.go", 10}, {"a/2_test.go", 10}, {"a/3_test.go", 10}},
			opts:  Options{MaxFiles: 10, MaxLines: 20},
			want:  []string{": a/1_test.go a/2_test.go", ": a/3_test.go"},
		},
		{
			name:  "no line limit",
			files: []tfile{{"a/1_test.go", 1000}, {"a/2_test.go", 1000}},
			opts:  Options{MaxFiles: 10},
			want:  []string{": a/1_test.go a/2_test.go"},
		},
		{
			name:  "big single file gets its own batch",
			files: []tfile{{"a/1_test.go", 5}, {"a/2_test.go", 50}, {"a/3_test.go", 5}, {"a/4_test.go", 5}},
			opts:  Options{MaxFiles: 10, MaxLines: 20},
			want:  []string{": a/1_test.go", ": a/2_test.go", ": a/3_test.go a/4_test.go"},
		},
		{
			name:  "big first file",
			files: []tfile{{"a/1_test.go", 50}, {"a/2_test.go", 5}},
			opts:  Options{MaxFiles: 10, MaxLines: 20},
			want:  []string{": a/1_test.go", ": a/2_test.go"},
		},
		{
			name:       "owner groups: sorted by owners, unowned last, ids in that order",
			files:      []tfile{{"a/1_test.go", 1}, {"b/1_test.go", 1}, {"c/1_test.go", 1}, {"a/2_test.go", 1}, {"b/2_test.go", 1}},
			codeowners: "/a/ @zed\n/b/ @amy\n",
			opts:       Options{MaxFiles: 10},
			want:       []string{"@amy: b/1_test.go b/2_test.go", "@zed: a/1_test.go a/2_test.go", ": c/1_test.go"},
		},
		{
			name:       "same owners in another order form one group",
			files:      []tfile{{"a/1_test.go", 1}, {"b/1_test.go", 1}},
			codeowners: "/a/ @b @a\n/b/ @a @b @a\n",
			opts:       Options{MaxFiles: 10},
			want:       []string{"@a @b: a/1_test.go b/1_test.go"},
		},
		{
			name:       "repo prefix",
			files:      []tfile{{"a/1_test.go", 1}, {"b/1_test.go", 1}},
			codeowners: "/sub/dir/a/ @x\n/a/ @wrong\n",
			opts:       Options{MaxFiles: 10, RepoPrefix: "sub/dir"},
			want:       []string{"@x: a/1_test.go", ": b/1_test.go"},
		},
		{
			name:  "directory boundary once half full",
			files: []tfile{{"a/b/1_test.go", 1}, {"a/b/2_test.go", 1}, {"a/c/1_test.go", 1}, {"a/c/2_test.go", 1}},
			opts:  Options{MaxFiles: 4},
			want:  []string{": a/b/1_test.go a/b/2_test.go", ": a/c/1_test.go a/c/2_test.go"},
		},
		{
			name:  "directory boundary ignored below half full",
			files: []tfile{{"a/b/1_test.go", 1}, {"a/c/1_test.go", 1}, {"a/c/2_test.go", 1}, {"a/c/3_test.go", 1}},
			opts:  Options{MaxFiles: 4},
			want:  []string{": a/b/1_test.go a/c/1_test.go a/c/2_test.go a/c/3_test.go"},
		},
		{
			name:  "deeper directories share their top two levels",
			files: []tfile{{"a/b/c/1_test.go", 1}, {"a/b/c/2_test.go", 1}, {"a/b/d/1_test.go", 1}, {"a/b/d/2_test.go", 1}},
			opts:  Options{MaxFiles: 4},
			want:  []string{": a/b/c/1_test.go a/b/c/2_test.go a/b/d/1_test.go a/b/d/2_test.go"},
		},
		{
			name:  "tree order: a directory's files, then its subdirectories",
			files: []tfile{{"a.b/1_test.go", 1}, {"a/b/1_test.go", 1}, {"a/z_test.go", 1}, {"x_test.go", 1}},
			opts:  Options{MaxFiles: 10},
			want:  []string{": x_test.go a/z_test.go a/b/1_test.go a.b/1_test.go"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.codeowners != "" {
				o, err := ParseCodeowners([]byte(tt.codeowners))
				if err != nil {
					t.Fatal(err)
				}
				tt.opts.Owners = o
			}
			p := Make(inputOf(tt.files), tt.opts)
			var got []string
			for i, b := range p.Batches {
				if b.ID != i+1 {
					t.Errorf("batch %d has id %d", i+1, b.ID)
				}
				var paths []string
				for _, f := range b.Files {
					paths = append(paths, f.Path)
				}
				got = append(got, strings.Join(b.Owners, " ")+": "+strings.Join(paths, " "))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("batches:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestBatchFiles checks which files are batch files and what a file and
// a batch record.
func TestBatchFiles(t *testing.T) {
	in := Input{
		Findings: []rewrite.Finding{
			// Listed out of position order: the ids must come sorted.
			{ID: "wallclock-2", Rule: "wallclock", Package: "m/a", File: "a/a_test.go", Line: 9, Reason: "no clock"},
			{ID: "sleep-1", Rule: "sleep", Package: "m/a", File: "a/a_test.go", Line: 3, Fixed: true, SavingMs: 500},
			{ID: "sleep-3", Rule: "sleep", Package: "m/a_test", File: "a/a_test.go", Line: 20, Fixed: true, SavingMs: 250},
			// Not fixable: not a batch file though it changed.
			{ID: "sleep-4", Rule: "sleep", Package: "m/b", File: "b/b_test.go", Line: 1, Reason: "r"},
			// Fixable but without a change: not a batch file.
			{ID: "sleep-5", Rule: "sleep", Package: "m/c", File: "c/c_test.go", Line: 1, Fixed: true},
		},
		Changes: map[string]FileChange{
			"a/a_test.go": {Old: []byte("x\n"), New: []byte("y\n")},
			"b/b_test.go": {Old: []byte("x\n"), New: []byte("y\n")},
			"go.mod":      {Old: []byte("module m\n"), New: []byte("module m\nrequire x v1\n")},
			"go.sum":      {New: []byte("x v1 h1:\n")},
		},
	}
	p := Make(in, Options{MaxFiles: 20})
	want := []Batch{{
		ID: 1, Owners: []string{}, Packages: []string{"m/a", "m/a_test"},
		Files: []File{{
			Path:         "a/a_test.go",
			SHA256:       sha256Hex("x\n"), // the old content's
			ChangedLines: 2,
			Findings:     []string{"sleep-1", "wallclock-2", "sleep-3"},
		}},
		Findings: 3, Fixable: 2, ChangedLines: 2, EstimatedSavingMs: 750,
	}}
	if g, w := jsonOf(t, p.Batches), jsonOf(t, want); g != w {
		t.Errorf("batches:\n got %s\nwant %s", g, w)
	}
	if p.Totals.Files != 1 || p.Totals.Findings != 5 || p.Totals.Fixable != 3 || p.Totals.NotFixable != 2 {
		t.Errorf("totals = %+v", p.Totals)
	}
}

// TestMakeJSON pins the whole JSON form of a small plan, the documented
// schema (docs/plan.md).
func TestMakeJSON(t *testing.T) {
	o, err := ParseCodeowners([]byte("* @org/team\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{
		Findings: []rewrite.Finding{
			{ID: "sleep-1", Rule: "sleep", Package: "m/a", File: "a/a_test.go", Line: 1, Fixed: true, SavingMs: 1200},
			{ID: "sleep-2", Rule: "sleep", Package: "m/a", File: "a/a_test.go", Line: 2, Reason: "not constant"},
		},
		Changes: map[string]FileChange{"a/a_test.go": {Old: []byte("old\n"), New: []byte("new\n")}},
	}
	p := Make(in, Options{MaxFiles: 20, MaxLines: 400, Owners: o, OwnersFile: ".github/CODEOWNERS"})
	want := `{
  "version": 1,
  "estimate": "static",
  "maxFiles": 20,
  "maxLines": 400,
  "codeowners": ".github/CODEOWNERS",
  "batches": [
    {
      "id": 1,
      "owners": [
        "@org/team"
      ],
      "packages": [
        "m/a"
      ],
      "files": [
        {
          "path": "a/a_test.go",
          "sha256": "` + sha256Hex("old\n") + `",
          "changedLines": 2,
          "findings": [
            "sleep-1",
            "sleep-2"
          ]
        }
      ],
      "findings": 2,
      "fixable": 1,
      "changedLines": 2,
      "estimatedSavingMs": 1200
    }
  ],
  "rules": [
    {
      "rule": "sleep",
      "findings": 2,
      "fixable": 1,
      "notFixable": [
        {
          "reason": "not constant",
          "count": 1
        }
      ],
      "blockers": [
        {
          "reason": "not constant",
          "count": 1
        }
      ],
      "kinds": [
        {
          "example": "not constant",
          "others": 0,
          "count": 1
        }
      ],
      "estimatedSavingMs": 1200
    }
  ],
  "goRaise": [],
  "totals": {
    "findings": 2,
    "fixable": 1,
    "notFixable": 1,
    "batches": 1,
    "files": 1,
    "changedLines": 2,
    "estimatedSavingMs": 1200
  }
}`
	if got := jsonOf(t, p); got != want {
		t.Errorf("plan JSON:\n%s\nwant:\n%s", got, want)
	}
}

// TestMakeEmpty: no findings still gives arrays, not nulls, so readers
// of the JSON need no special case.
func TestMakeEmpty(t *testing.T) {
	got := jsonOf(t, Make(Input{}, Options{MaxFiles: 5}))
	if strings.Contains(got, "null") {
		t.Errorf("empty plan has nulls:\n%s", got)
	}
}

func TestRules(t *testing.T) {
	in := Input{Findings: []rewrite.Finding{
		{Rule: "sleep", Fixed: true, SavingMs: 100},
		{Rule: "sleep", Reason: "b"},
		{Rule: "sleep", Reason: "a"},
		{Rule: "sleep", Reason: "c"},
		{Rule: "sleep", Reason: "c"},
		{Rule: "attemptloop", Fixed: true, SavingMs: 7},
		{Rule: "attemptloop", Fixed: true, SavingMs: 3},
		// Each blocker counts on its own: the go version holds back
		// both, the lock one.
		{Rule: "waitfor", Reason: "go; also: lock", Blockers: []string{"go", "lock"}},
		{Rule: "waitfor", Reason: "go", Blockers: []string{"go"}},
	}}
	got := Make(in, Options{MaxFiles: 1}).Rules
	want := []RuleSummary{
		{Rule: "attemptloop", Findings: 2, Fixable: 2, NotFixable: []ReasonCount{}, Blockers: []ReasonCount{}, Kinds: []KindCount{}, EstimatedSavingMs: 10},
		{Rule: "sleep", Findings: 5, Fixable: 1, NotFixable: []ReasonCount{{Reason: "c", Count: 2}, {Reason: "a", Count: 1}, {Reason: "b", Count: 1}}, Blockers: []ReasonCount{{Reason: "c", Count: 2}, {Reason: "a", Count: 1}, {Reason: "b", Count: 1}}, Kinds: []KindCount{{Example: "c", Count: 2}, {Example: "a", Count: 1}, {Example: "b", Count: 1}}, EstimatedSavingMs: 100},
		{Rule: "waitfor", Findings: 2, NotFixable: []ReasonCount{{Reason: "go", Count: 1}, {Reason: "go; also: lock", Count: 1}}, Blockers: []ReasonCount{{Reason: "go", Count: 2}, {Reason: "lock", Count: 1}}, Kinds: []KindCount{{Example: "go", Count: 2}, {Example: "lock", Count: 1}}},
	}
	if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
		t.Errorf("rules:\n got %s\nwant %s", g, w)
	}
}

func TestEstimate(t *testing.T) {
	change := map[string]FileChange{
		"a/a_test.go": {Old: []byte("a\n")},
		"b/b_test.go": {Old: []byte("b\n")},
	}
	tests := []struct {
		name     string
		findings []rewrite.Finding
		estimate string
		batches  []int64 // estimatedSavingMs per batch
		rules    []int64 // per rule, by name
		total    int64
	}{
		{
			name: "static sums the fixable findings' savings",
			findings: []rewrite.Finding{
				{Rule: "sleep", Package: "a", File: "a/a_test.go", Test: "TestA", Fixed: true, SavingMs: 1000},
				{Rule: "sleep", Package: "a", File: "a/a_test.go", Test: "TestA", Fixed: true, SavingMs: 500},
				{Rule: "sleep", Package: "a", File: "a/a_test.go", Test: "TestA", SavingMs: 9999, Reason: "r"},
				{Rule: "wallclock", Package: "b", File: "b/b_test.go", Test: "TestB", Fixed: true, SavingMs: 200},
			},
			estimate: "static",
			batches:  []int64{1500, 200},
			rules:    []int64{1500, 200},
			total:    1700,
		},
		{
			name: "measured counts each top-level test once",
			findings: []rewrite.Finding{
				// Two subtests of one test: one measurement of TestA.
				{Rule: "sleep", Package: "a", File: "a/a_test.go", Test: "TestA/one", Fixed: true, Verified: true, SavingMs: 1, BeforeMs: 3000, AfterMs: 1000},
				{Rule: "wallclock", Package: "a", File: "a/a_test.go", Test: "TestA/two", Fixed: true, Verified: true, SavingMs: 1, BeforeMs: 3000, AfterMs: 1000},
				// Same test name in another package: counted apart.
				{Rule: "sleep", Package: "b", File: "b/b_test.go", Test: "TestA", Fixed: true, Verified: true, BeforeMs: 700, AfterMs: 200},
				// Slower after: adds 0, not a negative.
				{Rule: "sleep", Package: "b", File: "b/b_test.go", Test: "TestC", Fixed: true, Verified: true, BeforeMs: 100, AfterMs: 300},
				// Not verified: adds 0 though it has a static estimate.
				{Rule: "sleep", Package: "b", File: "b/b_test.go", Test: "TestD", Fixed: true, SavingMs: 5000},
			},
			estimate: "measured",
			batches:  []int64{2000, 500},
			rules:    []int64{2500, 2000}, // sleep, wallclock: TestA counts for both rules
			total:    2500,
		},
		{
			name: "go test -json times: a virtual clock saves the test's time, a poll up to it; flaky first",
			findings: []rewrite.Finding{
				// A bubble: the measured 4 s, not the static 0.1 s of
				// the test's own sleeps (it waits on the code's timer).
				{Rule: "sleep", Package: "a", File: "a/a_test.go", Test: "TestA/one", Fixed: true, SavingMs: 100, MeasuredMs: 4000, Changes: []rule.Change{{Kind: rule.Clock}}},
				// A poll: its static saving, but no more than the test
				// took.
				{Rule: "waitfor", Package: "b", File: "b/b_test.go", Test: "TestB", Fixed: true, SavingMs: 9000, MeasuredMs: 1200, Changes: []rule.Change{{Kind: rule.Budget}}},
				// Failed and passed in the log: its batch ranks first.
				{Rule: "waitfor", Package: "b", File: "b/b_test.go", Test: "TestC", Fixed: true, SavingMs: 5, MeasuredMs: 10, Flaky: true},
				// Not measured: nothing.
				{Rule: "sleep", Package: "b", File: "b/b_test.go", Test: "TestD", Fixed: true, SavingMs: 5000},
			},
			estimate: "measured",
			batches:  []int64{1205, 4000},
			rules:    []int64{4000, 1205},
			total:    5205,
		},
		{
			name: "a verified finding that is not fixable does not switch to measured",
			findings: []rewrite.Finding{
				{Rule: "sleep", Package: "a", File: "a/a_test.go", Test: "TestA", Fixed: true, SavingMs: 1000},
				{Rule: "sleep", Package: "a", File: "a/a_test.go", Test: "TestA", Verified: true, BeforeMs: 9000},
			},
			estimate: "static",
			batches:  []int64{1000},
			rules:    []int64{1000},
			total:    1000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Make(Input{Findings: tt.findings, Changes: change}, Options{MaxFiles: 1})
			if p.Estimate != tt.estimate {
				t.Errorf("estimate = %q, want %q", p.Estimate, tt.estimate)
			}
			var batches, rules []int64
			for i, b := range p.Batches {
				batches = append(batches, b.EstimatedSavingMs)
				if b.ID != i+1 {
					t.Errorf("batch %d has ID %d: IDs follow the order", i+1, b.ID)
				}
			}
			for _, r := range p.Rules {
				rules = append(rules, r.EstimatedSavingMs)
			}
			if !slices.Equal(batches, tt.batches) {
				t.Errorf("batch savings = %v, want %v", batches, tt.batches)
			}
			if !slices.Equal(rules, tt.rules) {
				t.Errorf("rule savings = %v, want %v", rules, tt.rules)
			}
			if p.Totals.EstimatedSavingMs != tt.total {
				t.Errorf("total saving = %d, want %d", p.Totals.EstimatedSavingMs, tt.total)
			}
		})
	}
}

// randomInput builds a varied input: several directories and owners,
// fixable and not, files with and without changes.
func randomInput(r *rand.Rand) Input {
	in := Input{Changes: map[string]FileChange{}}
	dirs := []string{"", "a", "a/b", "a/b/c", "a/d", "b", "b/x/y", "c"}
	for i := range 60 {
		dir := dirs[r.IntN(len(dirs))]
		file := fmt.Sprintf("%s/f%d_test.go", dir, r.IntN(12))
		file = strings.TrimPrefix(file, "/")
		in.Findings = append(in.Findings, rewrite.Finding{
			ID:       fmt.Sprintf("rule%d-%02d", i%3, i),
			Rule:     fmt.Sprintf("rule%d", i%3),
			Package:  "m/" + dir,
			Test:     fmt.Sprintf("Test%d/sub", r.IntN(4)),
			File:     file,
			Line:     r.IntN(100),
			Fixed:    r.IntN(3) > 0,
			Reason:   []string{"", "x", "y"}[r.IntN(3)],
			SavingMs: int64(r.IntN(1000)),
		})
		if r.IntN(5) > 0 {
			in.Changes[file] = FileChange{Old: lines(r.IntN(40)), New: lines(r.IntN(40))}
		}
	}
	in.Changes["go.mod"] = FileChange{Old: []byte("module m\n"), New: []byte("module m\n\ngo 1.22\n")}
	return in
}

// TestInvariants checks, over varied inputs, that every finding is
// accounted for, that limits hold and that the plan does not depend on
// the order of the findings.
func TestInvariants(t *testing.T) {
	o, err := ParseCodeowners([]byte("* @all\n/a/ @a\n/a/b/ @b @a\n/b/x/\n"))
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 1))
		in := randomInput(r)
		opts := Options{MaxFiles: 1 + r.IntN(5), MaxLines: r.IntN(60), Owners: o, OwnersFile: "CODEOWNERS"}
		p := Make(in, opts)

		// Every finding is in exactly one batch file, or in a file that
		// is not a batch file.
		inBatch := map[string]bool{}
		batchFindings := 0
		for _, b := range p.Batches {
			batchFindings += b.Findings
			lines := 0
			for _, f := range b.Files {
				if inBatch[f.Path] {
					t.Errorf("seed %d: %s in two batches", seed, f.Path)
				}
				inBatch[f.Path] = true
				lines += f.ChangedLines
			}
			if len(b.Files) > opts.MaxFiles {
				t.Errorf("seed %d: batch %d has %d files, max %d", seed, b.ID, len(b.Files), opts.MaxFiles)
			}
			if opts.MaxLines > 0 && lines > opts.MaxLines && len(b.Files) > 1 {
				t.Errorf("seed %d: batch %d has %d lines in %d files, max %d", seed, b.ID, lines, len(b.Files), opts.MaxLines)
			}
			if lines != b.ChangedLines {
				t.Errorf("seed %d: batch %d changedLines %d, files sum to %d", seed, b.ID, b.ChangedLines, lines)
			}
		}
		outside := 0
		for _, f := range in.Findings {
			if !inBatch[f.File] {
				outside++
			}
		}
		if batchFindings+outside != len(in.Findings) {
			t.Errorf("seed %d: %d findings in batches + %d outside != %d", seed, batchFindings, outside, len(in.Findings))
		}
		if inBatch["go.mod"] {
			t.Errorf("seed %d: go.mod is a batch file", seed)
		}

		// Shuffled findings give the same plan, byte for byte.
		want := jsonOf(t, p)
		r.Shuffle(len(in.Findings), func(i, j int) {
			in.Findings[i], in.Findings[j] = in.Findings[j], in.Findings[i]
		})
		if got := jsonOf(t, Make(in, opts)); got != want {
			t.Errorf("seed %d: plan depends on the order of the findings", seed)
		}
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
