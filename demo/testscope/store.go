// Package testscope stores notes in a directory named by the environment.
package testscope

import (
	"os"
	"path/filepath"
)

// Save writes note into the directory $NOTES_DIR.
func Save(name, note string) error {
	return os.WriteFile(filepath.Join(os.Getenv("NOTES_DIR"), name), []byte(note), 0o644)
}
