package testscope

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSave(t *testing.T) {
	dir, err := os.MkdirTemp("", "notes") // want `os.MkdirTemp creates a directory the test must remove itself; fix: use t.TempDir`
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	want := filepath.Join(dir, "want.txt")
	if err := os.WriteFile(want, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Setenv("NOTES_DIR", "shelf") // want `os.Setenv\("NOTES_DIR", ...\) changes the environment of every later test; not fixed: paths change: .*`
	defer os.Unsetenv("NOTES_DIR")
	if err := Save("a.txt", "hello"); err != nil {
		t.Fatal(err)
	}
}

// Nope: TestMain sets the environment of the whole binary, on purpose.
func TestMain(m *testing.M) {
	os.Setenv("NOTES_MODE", "test")
	os.Exit(m.Run())
}
