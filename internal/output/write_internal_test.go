package output

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFailedRenameLeavesNoTemp fails the last step of Write, after
// the temporary file is complete: it is removed and the file is intact.
func TestWriteFailedRenameLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a_test.go")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failure := errors.New("injected")
	rename = func(string, string) error { return failure }
	defer func() { rename = os.Rename }()
	err := Change{Path: path, Old: []byte("old\n"), New: []byte("new\n"), Mode: 0o644}.Write()
	var we *WriteError
	if !errors.As(err, &we) || we.Reason != WriteIO || !errors.Is(err, failure) {
		t.Errorf("Write: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old\n" {
		t.Errorf("file changed: %q", got)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".unflake-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
