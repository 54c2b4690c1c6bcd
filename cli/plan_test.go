package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/plan"
	"github.com/unflake/unflake/rewrite"
)

// update rewrites golden files instead of comparing with them
// (UNFLAKE_UPDATE=1 go test ./...).
var update = os.Getenv("UNFLAKE_UPDATE") != ""

// campaign writes the campaign module of testdata/plan to a new directory.
func campaign(t *testing.T) string {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("..", "testdata", "plan", "campaign.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testmod.WriteFiles(t, dir, a.Files)
	return dir
}

// golden compares got with golden/plan/NAME, or rewrites it under
// UNFLAKE_UPDATE.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "golden", "plan", name)
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UNFLAKE_UPDATE=1 creates it)", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (UNFLAKE_UPDATE=1 rewrites it):\n%s", path, got)
	}
}

// makePlan runs plan --json on dir and decodes it.
func makePlan(t *testing.T, dir string, args ...string) (*plan.Plan, string) {
	t.Helper()
	code, out, stderr := run(t, append([]string{"-C", dir, "plan", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("plan --json: exit %d\n%s", code, stderr)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	return &p, out
}

func TestPlanGolden(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := campaign(t)
	code, md, stderr := run(t, "-C", dir, "plan", "--max-files", "2", "./...")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, stderr)
	}
	golden(t, "campaign.md.golden", md)
	_, js := makePlan(t, dir, "--max-files", "2", "./...")
	golden(t, "campaign.json.golden", js)
}

// TestPlanAddsUpToCheck: every finding of check is in the plan's rules,
// and the batches hold every finding of the files they rewrite.
func TestPlanAddsUpToCheck(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := campaign(t)
	_, out, _ := run(t, "-C", dir, "check", "--json", "./...")
	var findings []rewrite.Finding
	if err := json.Unmarshal([]byte(out), &findings); err != nil {
		t.Fatal(err)
	}
	p, _ := makePlan(t, dir, "--max-files", "2", "./...")
	if p.Totals.Findings != len(findings) {
		t.Errorf("plan totals %d findings, check %d", p.Totals.Findings, len(findings))
	}
	byRule := map[string]int{}
	fixable := 0
	for _, f := range findings {
		byRule[f.Rule]++
		if f.Fixed {
			fixable++
		}
	}
	for _, r := range p.Rules {
		if r.Findings != byRule[r.Rule] {
			t.Errorf("rule %s: plan %d findings, check %d", r.Rule, r.Findings, byRule[r.Rule])
		}
	}
	inBatch := map[string]bool{}
	batchFindings, batchFixable := 0, 0
	for _, b := range p.Batches {
		batchFindings += b.Findings
		batchFixable += b.Fixable
		for _, f := range b.Files {
			if inBatch[f.Path] {
				t.Errorf("%s is in two batches", f.Path)
			}
			inBatch[f.Path] = true
		}
	}
	outside := 0
	for _, f := range findings {
		if !inBatch[f.File] {
			outside++
			if f.Fixed {
				t.Errorf("fixable finding %s:%d is in no batch", f.File, f.Line)
			}
		}
	}
	if batchFindings+outside != len(findings) || batchFixable != fixable {
		t.Errorf("batches hold %d findings (%d fixable) and %d are outside, check has %d (%d fixable)", batchFindings, batchFixable, outside, len(findings), fixable)
	}
}

// TestApplyBatchChangesOnlyItsFiles applies each batch to a fresh copy and
// compares what changed with the batch's files.
func TestApplyBatchChangesOnlyItsFiles(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	p, js := makePlan(t, campaign(t), "--max-files", "2", "./...")
	if len(p.Batches) < 2 {
		t.Fatalf("want several batches, got %d", len(p.Batches))
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Batches {
		dir := campaign(t)
		before := testmod.Snapshot(t, dir)
		code, _, stderr := run(t, "-C", dir, "fix", "--plan", planFile, "--batch", strconv.Itoa(b.ID), "./...")
		if code != 0 {
			t.Fatalf("batch %d: exit %d\n%s", b.ID, code, stderr)
		}
		var changed, want []string
		for path, content := range testmod.Snapshot(t, dir) {
			if before[path] != content {
				r, _ := filepath.Rel(dir, path)
				changed = append(changed, filepath.ToSlash(r))
			}
		}
		for _, f := range b.Files {
			want = append(want, f.Path)
		}
		sort.Strings(changed)
		sort.Strings(want)
		if strings.Join(changed, " ") != strings.Join(want, " ") {
			t.Errorf("batch %d changed %v, want %v", b.ID, changed, want)
		}
	}
}

// TestApplyBatchHoldsBackChangedFiles: a batch file edited after the plan
// gains a fix the plan did not list; it is held back and reported, the
// batch's other file is still fixed.
func TestApplyBatchHoldsBackChangedFiles(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := campaign(t)
	p, js := makePlan(t, dir, "--max-files", "2", "./...")
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	var batch *plan.Batch
	for i := range p.Batches {
		if len(p.Batches[i].Files) == 2 {
			batch = &p.Batches[i]
			break
		}
	}
	if batch == nil {
		t.Fatal("no batch with two files")
	}
	edited := filepath.Join(dir, batch.Files[0].Path)
	other := filepath.Join(dir, batch.Files[1].Path)
	src, err := os.ReadFile(edited)
	if err != nil {
		t.Fatal(err)
	}
	added := append(src, []byte(`
func TestAddedAfterThePlan(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Log(ctx.Err())
}
`)...)
	if err := os.WriteFile(edited, added, 0o644); err != nil {
		t.Fatal(err)
	}
	otherBefore, _ := os.ReadFile(other)
	code, _, stderr := run(t, "-C", dir, "fix", "--plan", planFile, "--batch", strconv.Itoa(batch.ID), "./...")
	if code != 1 {
		t.Errorf("exit %d, want 1 (a file was held back)\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "not in the plan") {
		t.Errorf("stderr does not report the new finding:\n%s", stderr)
	}
	if now, _ := os.ReadFile(edited); !bytes.Equal(now, added) {
		t.Errorf("%s was rewritten although it changed since the plan", batch.Files[0].Path)
	}
	if now, _ := os.ReadFile(other); bytes.Equal(now, otherBefore) {
		t.Errorf("%s, unchanged since the plan, was not fixed", batch.Files[1].Path)
	}
}

func TestApplyBatchErrors(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := campaign(t)
	_, js := makePlan(t, dir, "./...")
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testmod.Snapshot(t, dir)
	for _, args := range [][]string{
		{"fix", "--plan", planFile, "--batch", "99", "./..."},
		{"fix", "--plan", planFile, "./..."},
		{"fix", "--batch", "1", "./..."},
		{"fix", "--plan", bad, "--batch", "1", "./..."},
		{"fix", "--plan", filepath.Join(dir, "missing.json"), "--batch", "1", "./..."},
		{"plan", "--max-files", "0", "./..."},
	} {
		code, _, stderr := run(t, append([]string{"-C", dir}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
	after := testmod.Snapshot(t, dir)
	for path := range before {
		if before[path] != after[path] {
			t.Errorf("%s changed after an error", path)
		}
	}
}
