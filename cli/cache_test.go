package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
)

// TestResultCache runs check and fix --diff twice with the result cache
// on: the second run of each prints exactly what the first did, and an
// edit is seen.
func TestResultCache(t *testing.T) {
	testmod.Short(t)
	dir := testmod.Write(t, ownContext)
	cache := t.TempDir()
	t.Setenv("UNFLAKE_CACHE", cache)
	_, before, _ := run(t, "-C", dir, "check", "./...")
	for _, args := range [][]string{{"check", "./..."}, {"check", "--format", "json", "./..."}, {"fix", "--diff", "./..."}} {
		code1, out1, err1 := run(t, append([]string{"-C", dir}, args...)...)
		code2, out2, err2 := run(t, append([]string{"-C", dir}, args...)...)
		if code1 != 1 || out1 == "" {
			t.Fatalf("%v: exit %d, output %q, want 1 and findings; stderr:\n%s", args, code1, out1, err1)
		}
		if code1 != code2 || out1 != out2 || err1 != err2 {
			t.Errorf("%v: the cached run differs:\nexit %d, stdout:\n%s\nstderr:\n%s\nfirst: exit %d, stdout:\n%s\nstderr:\n%s", args, code2, out2, err2, code1, out1, err1)
		}
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "*", "*-r"))
	if len(entries) == 0 {
		t.Fatal("nothing stored in the cache")
	}
	// fix writes from a cached result too, and the next check sees it.
	if code, _, stderr := run(t, "-C", dir, "fix", "./..."); code != 0 {
		t.Fatalf("fix: exit %d; stderr:\n%s", code, stderr)
	}
	if _, out, stderr := run(t, "-C", dir, "check", "./..."); out == before || strings.Contains(out, "testscope") {
		t.Errorf("check after fix: output:\n%s\nstderr:\n%s\nbefore the fix:\n%s", out, stderr, before)
	}
}

// TestResultCacheOff: UNFLAKE_CACHE=off stores nothing, even in the
// user's cache directory.
func TestResultCacheOff(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, ownContext)
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	t.Setenv("HOME", home)
	t.Setenv("UNFLAKE_CACHE", "off")
	if code, _, stderr := run(t, "-C", dir, "check", "./..."); code != 1 {
		t.Fatalf("check: exit %d; stderr:\n%s", code, stderr)
	}
	err := filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(path, "unflake") {
			t.Errorf("UNFLAKE_CACHE=off wrote %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tokenSeal is a module whose clear of APP_TOKEN setenv offers to remove
// (fix --verify decides), unless
// some variant of the package writes the variable: debug.go, left out by
// its build constraint, is where one would.
const tokenSeal = `
-- go.mod --
module example.com/token

go 1.22
-- token.go --
package token

// Token is a constant token.
func Token() string { return "t" }
-- debug.go --
//go:build debug

package token
-- token_test.go --
package token

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	os.Setenv("APP_TOKEN", "")
	os.Exit(m.Run())
}

func TestToken(t *testing.T) {
	t.Setenv("APP_TOKEN", "")
	if Token() != "t" {
		t.Fatal("token")
	}
}
`

// TestResultCacheSeesIgnoredFiles: an edit of a file the build
// constraints leave out changes the result key, since rules read such
// files too (setenv looks for writes of its variable in every variant).
func TestResultCacheSeesIgnoredFiles(t *testing.T) {
	testmod.Short(t)
	dir := testmod.Write(t, tokenSeal)
	t.Setenv("UNFLAKE_CACHE", t.TempDir())
	_, before, _ := run(t, "-C", dir, "check", "--rules", "setenv", "./...")
	// The rule's checks pass: only the kind of change (a process change,
	// which fix --verify decides) holds the removal back.
	if !strings.Contains(before, "not fixed: process change: ") {
		t.Fatalf("check before the edit: want the clear offered to fix --verify, got:\n%s", before)
	}
	debug := "//go:build debug\n\npackage token\n\nimport \"os\"\n\nfunc init() { os.Setenv(\"APP_TOKEN\", \"debug\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "debug.go"), []byte(debug), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, after, stderr := run(t, "-C", dir, "check", "--rules", "setenv", "./..."); after == before {
		t.Errorf("check after editing a file the build leaves out printed what it did before (a stale cached result):\n%s\nstderr:\n%s", after, stderr)
	}
}
