package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
)

// sealModule reads a variable through a wrapper, one by a name that is not
// a constant, and one through another package; app has a TestMain in an
// external test file.
const sealModule = `
-- go.mod --
module example.com/m

go 1.22
-- config/config.go --
package config

import "os"

func env(name string) string { return os.Getenv(name) }

func Home() string { return env("APP_HOME") }

func Any(prefix string) string { return os.Getenv(prefix + "_HOME") }
-- config/config_test.go --
package config

import "testing"

func TestHome(t *testing.T) { _ = Home() }
-- app/app.go --
package app

import "example.com/m/config"

func Home() string { return config.Home() }
-- app/app_test.go --
package app_test

import (
	"os"
	"testing"

	"example.com/m/app"
)

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

func TestHome(t *testing.T) { _ = app.Home() }
`

func TestSealDiffApplies(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := testmod.Write(t, sealModule)
	before := testmod.Snapshot(t, dir)
	code, diff, stderr := run(t, "-C", dir, "seal", "--diff", "./...")
	if code != 1 {
		t.Fatalf("seal --diff: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	wantErr := "config/config.go:9:51: seal: cannot see: os.Getenv called with a name that is not a constant\n" +
		"unflake: would seal 2 packages (2 files changed)\n"
	if stderr != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, wantErr)
	}
	if !strings.Contains(diff, "--- /dev/null\n+++ b/config/unflake_seal_test.go\n@@ -0,0 +1,16 @@\n") ||
		!strings.Contains(diff, "--- a/app/app_test.go\n+++ b/app/app_test.go\n") {
		t.Errorf("diff:\n%s", diff)
	}
	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v {
			t.Errorf("--diff changed %s", k)
		}
	}

	// The diff applied with git apply gives what seal writes in place.
	applied := testmod.Write(t, sealModule)
	cmd := exec.Command("git", "apply", "-")
	cmd.Dir = applied
	cmd.Stdin = strings.NewReader(diff)
	cmd.Env = testmod.GitEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	if code, stdout, stderr := run(t, "-C", dir, "seal", "./..."); code != 0 || stdout != "" {
		t.Fatalf("seal: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	sealed, got := testmod.Snapshot(t, dir), testmod.Snapshot(t, applied)
	if len(sealed) != len(got) {
		t.Errorf("in place: %d files, applied diff: %d", len(sealed), len(got))
	}
	for k, v := range sealed {
		if got[filepath.Join(applied, strings.TrimPrefix(k, dir))] != v {
			t.Errorf("%s differs between in place and the applied diff", k)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "config", "unflake_seal_test.go")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file: %v, %v", fi, err)
	}

	// Sealed: nothing more to do.
	code, diff, stderr = run(t, "-C", dir, "seal", "--diff", "./...")
	if code != 0 || diff != "" || !strings.HasSuffix(stderr, "unflake: would seal 2 packages (0 files changed)\n") {
		t.Errorf("second seal --diff: exit %d, diff %q, stderr %q", code, diff, stderr)
	}
}

func TestSealUsageErrors(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, sealModule)
	before := testmod.Snapshot(t, dir)
	for _, args := range [][]string{
		{"seal", "--no-such-flag", "./..."},
		{"seal", "./nothing/..."},
	} {
		code, stdout, stderr := run(t, append([]string{"-C", dir}, args...)...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "unflake: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v {
			t.Errorf("a usage error changed %s", k)
		}
	}
}
