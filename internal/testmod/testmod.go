// Package testmod writes small Go modules, given as txtar archives, for
// unflake's own tests, and snapshots directories to show what changed.
package testmod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// Write extracts the archives (txtar text) into a new temporary directory
// and returns it.
func Write(t testing.TB, archives ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, a := range archives {
		WriteFiles(t, dir, txtar.Parse([]byte(a)).Files)
	}
	return dir
}

// WriteFiles writes files under dir, creating directories as needed.
func WriteFiles(t testing.TB, dir string, files []txtar.File) {
	t.Helper()
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Snapshot returns the content of every file under dir, by path.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		m[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// NoTemps fails the test if a temporary file unflake writes beside a file
// it replaces (".unflake-" in its name) is left in dir.
func NoTemps(t testing.TB, dir string) {
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
