package testscope

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The directory and the variable are process-wide: a failure before the
// defers run, or a forgotten one, leaks them into the next test. unflake
// hands both to the testing package.
func TestSave(t *testing.T) {
	dir, err := os.MkdirTemp("", "notes")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("NOTES_DIR", dir)
	defer os.Unsetenv("NOTES_DIR")
	if err := Save("a.txt", "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
}

// Each note is saved only while the test's context is live.
func TestSaveAll(t *testing.T) {
	t.Setenv("NOTES_DIR", t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := ctx.Err(); err != nil {
			t.Fatalf("saving %s: %v", name, err)
		}
		if err := Save(name, "hello"); err != nil {
			t.Fatal(err)
		}
	}
}
