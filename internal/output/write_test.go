package output_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/internal/testmod"
)

// reason returns the output.WriteFailure of err, failing the test if err is not
// a *output.WriteError.
func reason(t *testing.T, err error) output.WriteFailure {
	t.Helper()
	var we *output.WriteError
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T), want a *output.WriteError", err, err)
	}
	return we.Reason
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
	if err := (output.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o640}).Write(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if got, _ := os.ReadFile(path); err != nil || string(got) != "new\n" || fi.Mode().Perm() != 0o640 {
		t.Errorf("after Write: %q, %v, %v", got, fi.Mode(), err)
	}
	testmod.NoTemps(t, dir)
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
	c := output.Change{Path: link, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}
	err := c.Write()
	if reason(t, err) != output.WriteSymlink || err.Error() != link+": is a symlink; not rewritten" {
		t.Errorf("Write: %v", err)
	}
	if _, err := c.DiffPath(dir); err == nil || reason(t, err) != output.WriteSymlink {
		t.Errorf("DiffPath: %v, want output.WriteSymlink", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "old\n" {
		t.Errorf("target written through the link: %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v, %v", fi, err)
	}
	testmod.NoTemps(t, dir)
}

// TestWriteRefusesReadOnly checks the owner's write bit as gofmt -w
// refuses such a file; the mode, not a failed open, so it holds as root.
func TestWriteRefusesReadOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	writeFile(t, path, "old\n", 0o444)
	err := (output.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o444}).Write()
	if reason(t, err) != output.WriteReadOnly || !strings.Contains(err.Error(), "a_test.go: not writable (mode 0444)") {
		t.Errorf("Write: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old\n" {
		t.Errorf("read-only file written: %q", got)
	}
	testmod.NoTemps(t, dir)
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
	err := (output.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}).Write()
	if reason(t, err) != output.WriteIO || !errors.Is(err, os.ErrPermission) {
		t.Errorf("Write: %v, want permission denied", err)
	}
	testmod.NoTemps(t, dir)
}

// TestWriteIOErrorLeavesNoTemp makes the rename fail after the temporary
// file is written: the target is a directory.
func TestWriteIOErrorLeavesNoTemp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	writeFile(t, path, "old\n", 0o644)
	c := output.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}
	// What unflake read is gone; a directory took its place.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(); reason(t, err) != output.WriteNotRegular {
		t.Errorf("Write over a directory: %v", err)
	}
	// A directory the temporary file cannot be created in.
	c.Path = filepath.Join(dir, "file", "b_test.go")
	writeFile(t, filepath.Join(dir, "file"), "", 0o644)
	if err := c.Write(); reason(t, err) != output.WriteIO {
		t.Errorf("Write under a file: %v", err)
	}
	testmod.NoTemps(t, dir)
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
	if err := (output.Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}).Write(); err != nil {
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
	err := (output.Change{Path: filepath.Join(dir, "q", "x_test.go"), Old: []byte("old\n"), New: []byte("new\n")}).Write()
	if reason(t, err) != output.WriteOutside {
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
	if err := (output.Change{Path: filepath.Join(dir, "in", "y_test.go"), Old: []byte("old\n"), New: []byte("new\n")}).Write(); err != nil {
		t.Errorf("Write through a link inside the module: %v", err)
	}
}
