package testscope

import (
	"os"
	"testing"
)

func TestSave(t *testing.T) {
	dir, err := os.MkdirTemp("", "notes") // want `os.MkdirTemp creates a directory the test must remove itself; fix: use t.TempDir`
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("NOTES_DIR", dir) // want `os.Setenv\("NOTES_DIR", ...\) changes the environment of every later test; fix: use t.Setenv`
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
