package testscope

import (
	"os"
	"path/filepath"
)

// Save writes text to name in the directory $NOTES_DIR.
func Save(name, text string) error {
	return os.WriteFile(filepath.Join(os.Getenv("NOTES_DIR"), name), []byte(text), 0o644)
}
