package rewrite_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"

	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// reason returns the WriteFailure of err, failing the test if err is not
// a *rewrite.WriteError.
func reason(t *testing.T, err error) rewrite.WriteFailure {
	t.Helper()
	var we *rewrite.WriteError
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T), want a *rewrite.WriteError", err, err)
	}
	return we.Reason
}

// noTemps fails the test if a temporary file of Write is left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".unflake-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func TestWriteReplacesAndKeepsMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	writeFile(t, path, "old\n", 0o640)
	if err := (rewrite.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o640}).Write(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if got, _ := os.ReadFile(path); err != nil || string(got) != "new\n" || fi.Mode().Perm() != 0o640 {
		t.Errorf("after Write: %q, %v, %v", got, fi.Mode(), err)
	}
	noTemps(t, dir)
}

// TestWriteRefusesSymlink: a symlinked file is neither written through
// (that changes the target) nor replaced (that turns the link into a copy).
func TestWriteRefusesSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	writeFile(t, target, "old\n", 0o644)
	link := filepath.Join(dir, "a_test.go")
	if err := os.Symlink("target.txt", link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	c := rewrite.Change{Path: link, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}
	err := c.Write()
	if reason(t, err) != rewrite.WriteSymlink || err.Error() != link+": is a symlink; not rewritten" {
		t.Errorf("Write: %v", err)
	}
	if _, err := c.DiffPath(dir); err == nil || reason(t, err) != rewrite.WriteSymlink {
		t.Errorf("DiffPath: %v, want WriteSymlink", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "old\n" {
		t.Errorf("target written through the link: %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v, %v", fi, err)
	}
	noTemps(t, dir)
}

// TestWriteRefusesReadOnly checks the owner's write bit as gofmt -w
// refuses such a file; the mode, not a failed open, so it holds as root.
func TestWriteRefusesReadOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	writeFile(t, path, "old\n", 0o444)
	err := (rewrite.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o444}).Write()
	if reason(t, err) != rewrite.WriteReadOnly || !strings.Contains(err.Error(), "a_test.go: not writable (mode 0444)") {
		t.Errorf("Write: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old\n" {
		t.Errorf("read-only file written: %q", got)
	}
	noTemps(t, dir)
}

// TestWriteRefusesUnwritableDirectory needs a user the kernel denies:
// root may write anywhere.
func TestWriteRefusesUnwritableDirectory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("running as root: permission bits do not deny root; TestWriteRefusesReadOnly and TestWriteIOErrorLeavesNoTemp cover the refusal")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	writeFile(t, path, "old\n", 0o644)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	err := (rewrite.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}).Write()
	if reason(t, err) != rewrite.WriteIO || !errors.Is(err, os.ErrPermission) {
		t.Errorf("Write: %v, want permission denied", err)
	}
	noTemps(t, dir)
}

// TestWriteIOErrorLeavesNoTemp makes the rename fail after the temporary
// file is written: the target is a directory.
func TestWriteIOErrorLeavesNoTemp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	writeFile(t, path, "old\n", 0o644)
	c := rewrite.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}
	// What unflake read is gone; a directory took its place.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(); reason(t, err) != rewrite.WriteNotRegular {
		t.Errorf("Write over a directory: %v", err)
	}
	// A directory the temporary file cannot be created in.
	c.Path = filepath.Join(dir, "file", "b_test.go")
	writeFile(t, filepath.Join(dir, "file"), "", 0o644)
	if err := c.Write(); reason(t, err) != rewrite.WriteIO {
		t.Errorf("Write under a file: %v", err)
	}
	noTemps(t, dir)
}

// TestWriteRemovesStaleTemps: a run killed between creating its temporary
// file and renaming it leaves ".NAME.unflake-DIGITS"; the next write of
// NAME removes it, and nothing else.
func TestWriteRemovesStaleTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	writeFile(t, path, "old\n", 0o644)
	stale := filepath.Join(dir, ".a_test.go.unflake-123456")
	writeFile(t, stale, "half", 0o600)
	keep := []string{
		".a_test.go.unflake-notdigits", // not our pattern
		".b_test.go.unflake-123456",    // another file's: not about to be written
		"a_test.go.unflake-123456",     // not hidden
	}
	for _, k := range keep {
		writeFile(t, filepath.Join(dir, k), "user's", 0o644)
	}
	if err := os.Mkdir(filepath.Join(dir, ".a_test.go.unflake-999"), 0o755); err != nil { // not a regular file
		t.Fatal(err)
	}
	keep = append(keep, ".a_test.go.unflake-999")
	if err := (rewrite.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}).Write(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file not removed: %v", err)
	}
	for _, k := range keep {
		if _, err := os.Lstat(filepath.Join(dir, k)); err != nil {
			t.Errorf("%s removed: %v", k, err)
		}
	}
}

// TestWriteRefusesChangedFile simulates a second unflake run (or an
// editor) that writes the file between the read and the write: the write
// is refused and the other writer's content survives.
func TestWriteRefusesChangedFile(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, module)
	res := runZero(t, dir)
	if len(res.Changes) == 0 {
		t.Fatal("no change")
	}
	c := res.Changes[0]
	theirs := append(append([]byte(nil), c.Old...), "\n// saved by someone else\n"...)
	if err := os.WriteFile(c.Path, theirs, 0o644); err != nil {
		t.Fatal(err)
	}
	err := c.Write()
	if reason(t, err) != rewrite.WriteChanged || !strings.HasSuffix(err.Error(), ": changed since unflake read it; run again") {
		t.Errorf("Write: %v", err)
	}
	if got, _ := os.ReadFile(c.Path); string(got) != string(theirs) {
		t.Errorf("the other writer's content was lost:\n%s", got)
	}
	// Deleted meanwhile: not recreated.
	os.Remove(c.Path)
	if err := c.Write(); reason(t, err) != rewrite.WriteChanged {
		t.Errorf("Write of a deleted file: %v", err)
	}
	if _, err := os.Lstat(c.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("deleted file recreated")
	}
	noTemps(t, filepath.Dir(c.Path))
}

// TestSymlinkedDirectoryOutsideModule: a pattern naming a link to a
// directory outside the module loads files under the link's path; they
// are analysed, never rewritten, and their findings say why, naming the
// real path.
func TestSymlinkedDirectoryOutsideModule(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, module)
	outside := testmod.Write(t, `
-- x_test.go --
package q

import (
	"testing"
	"time"
)

func TestQ(t *testing.T) { time.Sleep(1) }
`)
	if err := os.Symlink(outside, filepath.Join(dir, "q")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./q", "./other"}, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 || len(res.Errors) != 0 {
		t.Errorf("changes %+v, errors %v", res.Changes, res.Errors)
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(outside, "x_test.go"))
	path := filepath.Join(dir, "q", "x_test.go")
	if len(res.Findings) != 1 || res.Findings[0].Fixed || res.Findings[0].Unwritable != rewrite.WriteOutside ||
		!strings.Contains(res.Findings[0].Reason, "real path "+real+" is outside module example.com/m") {
		t.Errorf("findings: %+v, want one not fixed, outside the module", res.Findings)
	}
	if len(res.Refused) != 1 || res.Refused[0].Path != path || res.Refused[0].Reason != rewrite.WriteOutside ||
		!strings.HasPrefix(res.Refused[0].Error(), path+": its real path "+real+" is outside module example.com/m") {
		t.Errorf("refused: %v", res.Refused)
	}
}

// TestNoSilentCleanRun: GOPATH mode and patterns matching only packages
// outside the main module are errors, not clean runs.
func TestNoSilentCleanRun(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, module)
	env := append(os.Environ(), "GO111MODULE=off", "GOFLAGS=")
	_, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: env, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err == nil || !strings.Contains(err.Error(), "GOPATH mode") {
		t.Errorf("GO111MODULE=off: %v, want a GOPATH mode error", err)
	}
	_, err = rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"fmt"}, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err == nil || !strings.Contains(err.Error(), "outside the main module") {
		t.Errorf("fmt: %v, want an error", err)
	}
}

// TestGoCommandError pins the way go/packages wraps a failing go command
// ("err: exit status 1: stderr: ..."): unflake shows the go command's own
// words.
func TestGoCommandError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // no go.mod here or above (the temp root has none)
	env := append(os.Environ(), "GO111MODULE=on", "GOFLAGS=")
	_, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"."}, Env: env, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	var ge *rewrite.GoError
	if !errors.As(err, &ge) || !strings.HasPrefix(err.Error(), "go: go.mod file not found in current directory or any parent directory") {
		t.Errorf("no go.mod: %v (%T)", err, err)
	}
}

// TestMissingGoSumEntry: the go command's message, not the type checker's
// "could not import X (invalid package name: "")".
func TestMissingGoSumEntry(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.22

require github.com/spf13/pflag v1.0.9
-- m_test.go --
package m

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestA(t *testing.T) { _ = pflag.Bool; time.Sleep(1) }
`)
	// Offline: the module is in the cache (unflake requires pflag), its
	// go.sum entry is not in this module.
	env := append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOMODCACHE="+strings.TrimSpace(string(modcache)))
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: env, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "m_test.go:7:2: missing go.sum entry for module providing package github.com/spf13/pflag") {
		t.Errorf("errors: %v", res.Errors)
	}
	if len(res.Changes) != 0 {
		t.Errorf("a package that did not load was changed")
	}
}

// TestWriteRefusesOutsideModule: the last check before the disk, for any
// caller: a path inside the module whose real directory is elsewhere.
func TestWriteRefusesOutsideModule(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, "-- go.mod --\nmodule example.com/m\n")
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "q")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	writeFile(t, filepath.Join(outside, "x_test.go"), "old\n", 0o644)
	err := (rewrite.Change{Path: filepath.Join(dir, "q", "x_test.go"), Old: []byte("old\n"), New: []byte("new\n")}).Write()
	if reason(t, err) != rewrite.WriteOutside {
		t.Errorf("Write: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "x_test.go")); string(got) != "old\n" {
		t.Errorf("written outside the module: %q", got)
	}
	// Through a link that stays inside the module: written.
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "in")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "real", "y_test.go"), "old\n", 0o644)
	if err := (rewrite.Change{Path: filepath.Join(dir, "in", "y_test.go"), Old: []byte("old\n"), New: []byte("new\n")}).Write(); err != nil {
		t.Errorf("Write through a link inside the module: %v", err)
	}
}
