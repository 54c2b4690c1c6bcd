package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"

	"github.com/unflake/unflake/cli"
	"github.com/unflake/unflake/rewrite"
)

// ownContext is a module with one context of the test's own that testscope
// fixes (t.Context(): proven whatever the code under test does, since the
// context never reaches it), and one clean package.
const ownContext = `
-- go.mod --
module example.com/m

go 1.24
-- m.go --
package m

// Config returns the default configuration file's contents.
func Config() string { return "debug=true\n" }
-- m_test.go --
package m

import (
	"context"
	"testing"
)

func TestConfig(t *testing.T) {
	// The configuration, read under a context of the test's own.
	ctx, end := context.WithCancel(context.Background())
	defer end()
	if err := ctx.Err(); err != nil || Config() != "debug=true\n" {
		t.Fatalf("config %q, %v", Config(), err)
	}
}
-- clean/clean_test.go --
package clean

import "testing"

func TestNothing(t *testing.T) {}
`

const broken = `
-- broken/broken_test.go --
package broken

import (
	"testing"
	"time"
)

func TestBroken(t *testing.T) {
	for i := 0; i < 3; i++ {
		if undefined() {
			break
		}
		time.Sleep(time.Millisecond)
	}
}
`

// run runs unflake in process, its go command with the test's own
// environment (testmod.GoEnv): the user's GOFLAGS or GOWORK cannot change
// what a test sees.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runEnv(t, testmod.GoEnv(t), args...)
}

// runEnv is run with env as the go command's environment.
func runEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.MainEnv(args, env, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUsageErrors(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	before := testmod.Snapshot(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fix", "--no-such-flag", "./..."}, "unknown flag: --no-such-flag"},
		{[]string{"check", "--rules", "nosuchrule", "./..."}, `unknown rule "nosuchrule"`},
		{[]string{"fix", "--skip", "nosuchrule", "./..."}, `unknown rule "nosuchrule"`},
		{[]string{"fix", "./nothing/..."}, "nothing"},
		{[]string{"check", "--run", "(", "./..."}, "invalid --run pattern"},
		{[]string{"fix", "--verify", "--verify-count", "0", "./..."}, "--verify-count 0: must be at least 1"},
		{[]string{"check", "--verify", "--verify-timeout", "-1s", "./..."}, "--verify-timeout -1s: must be positive"},
		{[]string{"rules", "nosuchrule"}, `unknown rule "nosuchrule"`},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"-C", filepath.Join(dir, "m.go"), "check"}, "not a directory"},
	} {
		code, _, stderr := run(t, append([]string{"-C", dir}, tc.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "unflake: ") {
			t.Errorf("%v: stderr %q, want one line containing %q", tc.args, stderr, tc.want)
		}
	}
	if after := testmod.Snapshot(t, dir); len(after) != len(before) {
		t.Errorf("a usage error touched files")
	} else {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("a usage error changed %s", k)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	code, stdout, stderr := run(t, "-C", dir, "check", "--rules", "testscope", "./...")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "m_test.go:10:14: testscope: ") || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, "; fix: ") {
		t.Errorf("stdout: %q", stdout)
	}

	code, stdout, _ = run(t, "-C", dir, "check", "--rules", "testscope", "--json", "./...")
	var findings []rewrite.Finding
	if err := json.Unmarshal([]byte(stdout), &findings); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if code != 1 || len(findings) != 1 {
		t.Fatalf("exit %d, findings %+v", code, findings)
	}
	f := findings[0]
	if f.Rule != "testscope" || f.File != "m_test.go" || f.Line != 10 || f.Test != "TestConfig" || !f.Fixed || f.ID == "" || f.Package != "example.com/m" {
		t.Errorf("finding: %+v", f)
	}

	code, stdout, _ = run(t, "-C", dir, "check", "./clean")
	if code != 0 || stdout != "" {
		t.Errorf("clean package: exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = run(t, "-C", dir, "check", "--json", "./clean")
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("clean package --json: exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = run(t, "-C", dir, "check", "--run", "TestOther", "./...")
	if code != 0 || stdout != "" {
		t.Errorf("--run TestOther: exit %d, stdout %q", code, stdout)
	}
}

func TestFixDiffApplies(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	before := testmod.Snapshot(t, dir)
	code, diff, stderr := run(t, "-C", dir, "fix", "--diff", "./...")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(diff, "--- a/m_test.go\n+++ b/m_test.go\n@@ ") {
		t.Errorf("diff:\n%s", diff)
	}
	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v {
			t.Fatalf("--diff wrote %s", k)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	cmd := exec.Command("git", "apply", "--check", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(diff)
	cmd.Env = testmod.GitEnv(t)
	//unflake:ignore spawn the check must pass before the diff is applied to the same directory
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply --check: %v\n%s", err, out)
	}
	cmd = exec.Command("git", "apply", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(diff)
	cmd.Env = testmod.GitEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	if code, diff, _ := run(t, "-C", dir, "fix", "--diff", "./..."); code != 0 || diff != "" {
		t.Errorf("after applying the diff: exit %d, diff:\n%s", code, diff)
	}
}

func TestFixInPlace(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext)
	path := filepath.Join(dir, "m_test.go")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	code, stdout, stderr := run(t, "-C", dir, "fix", "./...")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "rewrote 1 file (1 fix)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	now, _ := os.ReadFile(path)
	if bytes.Equal(old, now) || !bytes.Contains(now, []byte("t.Context()")) {
		t.Errorf("m_test.go not rewritten:\n%s", now)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".unflake-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	if code, _, _ := run(t, "-C", dir, "fix", "./..."); code != 0 {
		t.Errorf("second fix: exit %d", code)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, now) {
		t.Errorf("second fix changed the file again")
	}
}

func TestFailedPackageIsLeftUntouched(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, ownContext, broken)
	brokenPath := filepath.Join(dir, "broken", "broken_test.go")
	old, _ := os.ReadFile(brokenPath)
	code, _, stderr := run(t, "-C", dir, "fix", "./...")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr, "broken/broken_test.go:10:6: undefined: undefined") {
		t.Errorf("stderr does not name the error with file:line:col:\n%s", stderr)
	}
	if now, _ := os.ReadFile(brokenPath); !bytes.Equal(now, old) {
		t.Errorf("the package that failed to load was changed")
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "m_test.go")); !bytes.Contains(now, []byte("t.Context()")) {
		t.Errorf("the package that loads was not fixed")
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	code, stdout, _ := run(t, "rules")
	if code != 0 || !strings.HasPrefix(stdout, "leak") || !strings.Contains(stdout, "\nattemptloop ") {
		t.Errorf("rules: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = run(t, "rules", "attemptloop")
	if code != 0 || !strings.HasPrefix(stdout, "# attemptloop: ") || !strings.Contains(stdout, "## Before") || !strings.Contains(stdout, "## After") {
		t.Errorf("rules attemptloop: exit %d\n%s", code, stdout)
	}
}

// TestFixUnproven: --unproven shows the hypotheses in a diff, says how
// many there are, and is refused where it could write them.
func TestFixUnproven(t *testing.T) {
	testmod.Short(t)
	demo, err := filepath.Abs(filepath.Join("..", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"fix", "--unproven", "./..."}, {"fix", "--diff", "--verify", "--unproven", "./..."}} {
		code, _, stderr := run(t, append([]string{"-C", demo}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "--unproven needs --diff") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
	_, proven, _ := run(t, "-C", demo, "fix", "--diff", "--rules", "all", "./...")
	code, all, stderr := run(t, "-C", demo, "fix", "--diff", "--unproven", "--rules", "all", "./...")
	if code != 1 || len(all) <= len(proven) || !strings.Contains(stderr, "unproven: --verify decides them") {
		t.Errorf("fix --diff --unproven: exit %d, diff of %d bytes (%d without --unproven); stderr:\n%s", code, len(all), len(proven), stderr)
	}
}
