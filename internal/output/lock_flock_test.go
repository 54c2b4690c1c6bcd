//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package output

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// tryLock reports whether another open file description could take the
// directory lock now.
func tryLock(t *testing.T, dir string) bool {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
	return true
}

// TestWriteHoldsTheDirectoryLock: from the content check to the rename,
// another unflake process cannot take the lock, so it cannot check a
// content that is about to change; afterwards it can, and no lock file
// is left.
func TestWriteHoldsTheDirectoryLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	heldAtRename := true
	rename = func(from, to string) error {
		heldAtRename = !tryLock(t, dir)
		return os.Rename(from, to)
	}
	defer func() { rename = os.Rename }()
	if err := (Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}).Write(); err != nil {
		t.Fatal(err)
	}
	if !heldAtRename {
		t.Errorf("the directory was not locked at the rename")
	}
	if !tryLock(t, dir) {
		t.Errorf("the lock outlived Write")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left beside a_test.go: %v", entries)
	}
}
