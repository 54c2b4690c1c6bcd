package testmod

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// GoEnv is an environment for the go command built from nothing but what
// it needs: no variable of the caller's environment reaches the runs. The
// build and module caches are the caller's (read once through go env),
// the network is off, and extra is added; a later entry for the same
// variable wins. It skips the test when there is no go command.
func GoEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	vals := strings.Split(strings.TrimSpace(string(out)), "\n")
	path := filepath.Dir(gobin)
	// The C compiler, where there is one, for cgo and -race: the go
	// command finds it on PATH; and git, which unflake --changed-since
	// runs.
	for _, tools := range [][]string{{"gcc", "clang", "cc"}, {"git"}} {
		for _, tool := range tools {
			if p, err := exec.LookPath(tool); err == nil {
				path += string(filepath.ListSeparator) + filepath.Dir(p)
				break
			}
		}
	}
	// A home of the test's, with Go telemetry off: the go command would
	// otherwise write its counters under it, and a telemetry child it
	// starts can still be writing when the test removes the directory
	// ("TempDir RemoveAll cleanup: directory not empty").
	home := t.TempDir()
	WriteFiles(t, home, []txtar.File{{Name: ".config/go/telemetry/mode", Data: []byte("off\n")}})
	env := []string{
		"PATH=" + path,
		"HOME=" + home,
		"GOCACHE=" + vals[0],
		"GOMODCACHE=" + vals[1],
		"GOPROXY=off",
		"GOTOOLCHAIN=local",
		"GOWORK=off",
		"GOFLAGS=",
	}
	return append(env, extra...)
}

// GitEnv is an environment for git built from nothing but what it needs:
// no configuration of the user's or the system's, and none of the
// caller's GIT_DIR, GIT_INDEX_FILE or GIT_WORK_TREE (set when the tests
// run from a git hook), which would point git at another repository. It
// skips the test when there is no git.
func GitEnv(t testing.TB) []string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	return []string{
		"PATH=" + filepath.Dir(git),
		"HOME=" + t.TempDir(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"LC_ALL=C",
	}
}
