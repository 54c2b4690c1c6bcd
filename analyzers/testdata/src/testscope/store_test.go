package testscope

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestSave(t *testing.T) {
	dir, err := os.MkdirTemp("", "notes") // want `os.MkdirTemp creates a directory the test must remove itself; not fixed: paths change: .*`
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

func TestLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background()) // want `the test builds its own context, cancelled by a defer, where t.Context\(\) is the test's; fix: use t.Context\(\)`
	defer cancel()
	if err := ctx.Err(); err != nil {
		t.Fatal(err)
	}
}

// Nope: TestMain sets the environment of the whole binary, on purpose.
func TestMain(m *testing.M) {
	os.Setenv("NOTES_MODE", "test")
	os.Exit(m.Run())
}
