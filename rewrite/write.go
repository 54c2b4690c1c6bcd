package rewrite

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces the file's content atomically: the new content goes to a
// temporary file in the same directory, takes the old file's mode, and is
// renamed over the old file, so a reader never sees a partial file.
// A change with a nil Old creates the file (mode 0644 unless Mode says
// otherwise) and fails if it already exists.
func (c Change) Write() error {
	if c.Old == nil {
		if _, err := os.Lstat(c.Path); err == nil {
			return &os.PathError{Op: "create", Path: c.Path, Err: fs.ErrExist}
		}
		if c.Mode == 0 {
			c.Mode = 0o644
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.Path), "."+filepath.Base(c.Path)+".unflake-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after a successful rename
	if _, err := tmp.Write(c.New); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(name, c.Mode); err != nil {
		return err
	}
	return os.Rename(name, c.Path)
}
