package rules_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/goldentest"
	"github.com/unflake/unflake/internal/testmod"

	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/cli"
	"github.com/unflake/unflake/rules"
)

var update = goldentest.Update

// unflake runs the command in dir, its go command with env, and returns
// its exit code and output. Runs go on in parallel: a run's rule options
// are its own.
func unflake(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.MainEnv(append([]string{"-C", dir}, args...), env, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// A goldenCase is one archive under testdata/RULE/ with its directives
// (goldentest.Case says which).
type goldenCase struct {
	rule, name      string
	archive         *txtar.Archive
	flags           []string
	run, fail, race bool
	unproven        bool     // apply the unproven fixes too (goldentest.Case.Unproven)
	proven          bool     // apply the fixes the rule proved (goldentest.Case.Proven)
	failAt          []string // fail: the locations of checks the fix adds
}

func loadCases(t *testing.T, ruleName string) []goldenCase {
	var cases []goldenCase
	for _, c := range goldentest.Cases(t, "..", ruleName) {
		cases = append(cases, goldenCase{rule: c.Rule, name: c.Name, archive: c.Archive, flags: c.Flags, run: c.Run, fail: c.Fail, race: c.Race, unproven: c.Unproven, proven: c.Proven, failAt: c.FailAt})
	}
	return cases
}

// TestGolden runs every rule's cases through the CLI (check, fix, a
// second fix) and then the go command on the fixed module: go vet, and
// the run, fail and race directives. The rules' own packages check the
// findings and rewrites in process (goldentest.Check) in the default
// tier; this is the slow tier's, and the only check of the go.mod and
// go.sum a fix writes and of the --verify cases.
func TestGolden(t *testing.T) {
	testmod.Slow(t)
	for _, r := range rules.All() {
		cases := loadCases(t, r.Name)
		if len(cases) == 0 {
			t.Errorf("rule %s has no cases under testdata/%s", r.Name, r.Name)
		}
		negative := 0
		for _, c := range cases {
			if a, err := txtar.ParseFile(filepath.Join("..", "golden", r.Name, c.name+".golden")); err == nil && len(a.Files) == 1 {
				negative++ // the golden holds findings and no rewritten file
			}
			t.Run(r.Name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				c.check(t)
			})
		}
		if negative == 0 && len(cases) > 0 && !update {
			t.Errorf("rule %s has no negative case (one it must leave alone)", r.Name)
		}
	}
}

// measured matches a duration verify measured and a finding reports
// (how long a test took before the rewrite, and the timeout of a run
// after it, which is derived from that): it varies from run to run, so
// the golden holds "…s" in its place.
var measured = regexp.MustCompile(`(took |timed out after )[0-9]+\.[0-9]+s`)

// check runs one case.
func (c goldenCase) check(t *testing.T) {
	dir := t.TempDir()
	input := map[string][]byte{}
	for _, f := range c.archive.Files {
		input[f.Name] = f.Data
	}
	testmod.WriteFiles(t, dir, c.archive.Files)
	args := append([]string{"--rules", c.rule}, c.flags...)
	args = append(args, "./...")
	// A fix that adds golang.org/x/sync gets the test's stand-in, never
	// a version of the user's module cache or the network; go vet and go
	// test after it find it in the same module cache.
	env := testmod.ProxyEnv(t, []testmod.Module{testmod.Sync()})
	goEnv := append(env[:len(env):len(env)], "GOFLAGS=-mod=mod")

	code, findings, stderr := unflake(t, dir, env, append([]string{"check"}, args...)...)
	if code == 2 {
		t.Fatalf("check failed:\n%s", stderr)
	}
	if c.unproven {
		// fix applies no unproven fix without --verify, and --verify
		// would run the case's tests to decide: the engine keeps every
		// fix instead, as fix --verify does when the tests pass with it.
		selected, opts, err := goldentest.ParseFlags(c.rule, c.flags)
		if err != nil {
			t.Fatalf("flags: %v", err)
		}
		fixKeepingAll(t, dir, env, selected, opts)
	} else if c.proven {
		// The fixes the rule proved, which only their kind of change
		// made hypotheses (rule.Demoted): what fix --verify writes when
		// it keeps them.
		selected, opts, err := goldentest.ParseFlags(c.rule, c.flags)
		if err != nil {
			t.Fatalf("flags: %v", err)
		}
		fixKeepingProven(t, dir, env, selected, opts)
	} else if code, _, stderr := unflake(t, dir, env, append([]string{"fix"}, args...)...); code != 0 {
		t.Fatalf("fix exited %d:\n%s", code, stderr)
	}

	got := &txtar.Archive{Files: []txtar.File{{Name: "findings", Data: []byte(measured.ReplaceAllString(findings, "${1}…s"))}}}
	var names []string
	for name := range input {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		now, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(now, input[name]) {
			got.Files = append(got.Files, txtar.File{Name: name, Data: now})
		}
	}
	// Files the fix created (go.sum, when a requirement is added).
	for _, name := range newFiles(t, dir, input) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got.Files = append(got.Files, txtar.File{Name: name, Data: data})
	}
	goldenPath := filepath.Join("..", "golden", c.rule, c.name+".golden")
	if update {
		if err := os.MkdirAll(filepath.Dir(goldenPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, txtar.Format(got), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(goldenPath); err != nil {
		t.Fatalf("%v (run with UNFLAKE_UPDATE=1 to create it)", err)
	} else if g := txtar.Format(got); !bytes.Equal(g, want) {
		t.Errorf("output differs from %s (UNFLAKE_UPDATE=1 rewrites it):\n%s", goldenPath, lineDiff(string(want), string(g)))
	}

	// When the fix changed something: a second run finds nothing more to
	// fix, and the output type-checks and passes vet. (When it changed
	// nothing, the second run would see the same input, and vet would
	// check the case's own code.)
	if len(got.Files) > 1 {
		if code, diff, stderr := unflake(t, dir, env, append([]string{"fix", "--diff"}, args...)...); code != 0 {
			t.Errorf("second run is not idempotent (exit %d):\n%s%s", code, diff, stderr)
		}
		goCmd(t, dir, goEnv, true, "vet", "./...")
	}

	// Runnable cases run.
	if c.run {
		goCmd(t, dir, goEnv, true, "test", "-count=1", "./...")
	}
	if c.fail {
		c.checkFails(t, dir, goEnv)
	}
	if c.race {
		// A leak shows as a race with the next run, or its failure.
		goCmd(t, dir, goEnv, true, "test", "-race", "-count=2", "./...")
	}
}

// checkFails runs the rewritten module's tests and checks that they fail
// at the expected checks: every failed test reported a failure at a line
// marked "// strength: fail" (or named by fail:), and none panicked or
// timed out.
func (c goldenCase) checkFails(t *testing.T, dir string, env []string) {
	t.Helper()
	m, err := readMarkers(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range c.failAt {
		file, line, ok := strings.Cut(loc, ":")
		n, err := strconv.Atoi(line)
		if !ok || err != nil {
			t.Fatalf("fail: %q is not FILE.go:LINE", loc)
		}
		if m[file] == nil {
			m[file] = map[int][]string{}
		}
		m[file][n] = append(m[file][n], "fail")
	}
	if !m.words()["fail"] {
		t.Fatal("fail: no check is marked // strength: fail")
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", "-timeout=60s", "./...")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	run := parseRun(string(out))
	at, elsewhere := run.failedAt(m, "fail")
	switch {
	case err == nil:
		t.Errorf("go test passed; the mutation must fail:\n%s", out)
	case run.broken() != "":
		t.Errorf("go test %s; the mutation must fail at a check:\n%s", run.broken(), out)
	case at == 0 || elsewhere > 0:
		t.Errorf("go test failed %d times at a check marked // strength: fail and %d times elsewhere:\n%s", at, elsewhere, out)
	}
}

// newFiles lists the files under dir that are not in input.
func newFiles(t *testing.T, dir string, input map[string][]byte) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if _, ok := input[filepath.ToSlash(rel)]; !ok {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// goCmd runs the go command in dir with env and checks whether it
// succeeded.
func goCmd(t *testing.T, dir string, env []string, wantOK bool, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ok := err == nil; ok != wantOK {
		t.Errorf("go %s: ok=%v, want %v:\n%s", strings.Join(args, " "), ok, wantOK, out)
	}
}

func lineDiff(want, got string) string { return goldentest.LineDiff(want, got) }
