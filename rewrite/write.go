package rewrite

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFailure says why a change was not written. Callers decide on it,
// never on the wording of the error.
type WriteFailure int

const (
	// WriteIO is an operating-system error while writing (Err says which).
	WriteIO WriteFailure = iota
	// WriteSymlink: the file is a symbolic link. Writing through it would
	// change a file somewhere else; replacing it would turn the link into
	// a copy.
	WriteSymlink
	// WriteReadOnly: the file has no write permission for its owner; as
	// gofmt -w, unflake does not override that.
	WriteReadOnly
	// WriteChanged: the file's content is no longer what unflake read (or
	// a file to create now exists): someone else wrote it meanwhile.
	WriteChanged
	// WriteNotRegular: the path is not a regular file.
	WriteNotRegular
	// WriteOutside: the file's real path lies outside the real directory
	// of the module its path is in (a directory link leads elsewhere).
	WriteOutside
)

// A WriteError is a change that was not written, and why.
type WriteError struct {
	Path   string
	Reason WriteFailure
	Mode   fs.FileMode // the file's permissions, for WriteReadOnly
	Err    error       // the underlying error, if any
}

func (e *WriteError) Error() string {
	var why string
	switch e.Reason {
	case WriteSymlink:
		why = "is a symlink; not rewritten"
	case WriteReadOnly:
		why = fmt.Sprintf("not writable (mode %04o); not rewritten", e.Mode.Perm())
	case WriteChanged:
		why = "changed since unflake read it; run again"
	case WriteNotRegular:
		why = "not a regular file; not rewritten"
	case WriteOutside:
		why = "its real path is outside its module; not rewritten"
	default:
		why = e.Err.Error()
	}
	return e.Path + ": " + why
}

func (e *WriteError) Unwrap() error { return e.Err }

// Diffable reports whether a diff of c can be applied: a patch to a
// symbolic link is applied by neither git apply nor patch as unflake
// would mean it, so the change is refused with a *WriteError.
func (c Change) Diffable() error {
	if fi, err := os.Lstat(c.Path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return &WriteError{Path: c.Path, Reason: WriteSymlink}
	}
	return nil
}

// Write replaces the file's content atomically: the new content goes to a
// temporary file in the same directory, takes the old file's mode, and is
// renamed over the old file, so a reader never sees a partial file.
// A change with a nil Old creates the file (mode 0644 unless Mode says
// otherwise) and fails if it already exists.
//
// Write refuses, with a *WriteError, a file that is a symbolic link or not
// a regular file, one without write permission for its owner, and one
// whose content is no longer Old. It holds a lock on the directory (where
// the platform has one) from that check to the rename, so that two unflake
// processes never overwrite each other's writes, and removes the temporary
// files a killed run left next to the file. On every error path the
// temporary file is removed.
func (c Change) Write() (err error) {
	dir := filepath.Dir(c.Path)
	unlock, err := lockDir(dir)
	if err != nil {
		return &WriteError{Path: c.Path, Reason: WriteIO, Err: err}
	}
	defer unlock()
	removeStaleTemps(c.Path)

	if !insideModule(c.Path) {
		return &WriteError{Path: c.Path, Reason: WriteOutside}
	}
	mode, werr := c.check()
	if werr != nil {
		return werr
	}
	tmp, err := os.CreateTemp(dir, tempPrefix(c.Path)+"*")
	if err != nil {
		return &WriteError{Path: c.Path, Reason: WriteIO, Err: err}
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := writeTemp(tmp, c.New, mode); err != nil {
		return &WriteError{Path: c.Path, Reason: WriteIO, Err: err}
	}
	if err := rename(name, c.Path); err != nil {
		return &WriteError{Path: c.Path, Reason: WriteIO, Err: err}
	}
	return nil
}

// rename is os.Rename; a test makes it fail after the temporary file is
// written.
var rename = os.Rename

// check compares the file on disk with what unflake read, and returns the
// mode the new file gets.
func (c Change) check() (fs.FileMode, *WriteError) {
	fi, err := os.Lstat(c.Path)
	if c.Old == nil {
		if err == nil {
			return 0, &WriteError{Path: c.Path, Reason: WriteChanged, Err: fs.ErrExist}
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return 0, &WriteError{Path: c.Path, Reason: WriteIO, Err: err}
		}
		if c.Mode == 0 {
			return 0o644, nil
		}
		return c.Mode, nil
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, &WriteError{Path: c.Path, Reason: WriteChanged, Err: err}
	case err != nil:
		return 0, &WriteError{Path: c.Path, Reason: WriteIO, Err: err}
	case fi.Mode()&fs.ModeSymlink != 0:
		return 0, &WriteError{Path: c.Path, Reason: WriteSymlink}
	case !fi.Mode().IsRegular():
		return 0, &WriteError{Path: c.Path, Reason: WriteNotRegular}
	case fi.Mode().Perm()&0o200 == 0:
		// The mode bits, not a failed open: root may open any file.
		return 0, &WriteError{Path: c.Path, Reason: WriteReadOnly, Mode: fi.Mode()}
	}
	cur, err := os.ReadFile(c.Path)
	if err != nil {
		return 0, &WriteError{Path: c.Path, Reason: WriteIO, Err: err}
	}
	if !bytes.Equal(cur, c.Old) {
		return 0, &WriteError{Path: c.Path, Reason: WriteChanged}
	}
	return fi.Mode().Perm(), nil
}

// insideModule reports whether the real directory of path lies inside
// the real directory of the module path names: the nearest directory
// above it, by name, that holds a go.mod. The engine refuses such files
// before analysing them; this is the last check before the disk. A path
// under no go.mod is not judged.
func insideModule(path string) bool {
	dir := filepath.Dir(path)
	root := dir
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return true
		}
		root = parent
	}
	realRoot, err1 := filepath.EvalSymlinks(root)
	realDir, err2 := filepath.EvalSymlinks(dir)
	if err1 != nil || err2 != nil {
		return true // check reports what is missing
	}
	return realDir == realRoot || strings.HasPrefix(realDir, realRoot+string(filepath.Separator))
}

// writeTemp fills the temporary file, flushes it to disk and sets its mode.
func writeTemp(tmp *os.File, content []byte, mode fs.FileMode) error {
	if _, err := tmp.Write(content); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	return tmp.Close()
}

// tempPrefix is the name of the temporary files Write creates for path,
// without the random digits os.CreateTemp appends: ".NAME.unflake-".
func tempPrefix(path string) string {
	return "." + filepath.Base(path) + ".unflake-"
}

// removeStaleTemps removes the temporary files of path that a killed run
// left behind: regular files named by tempPrefix and digits only. It runs
// under the directory lock, when no other unflake process can be between
// creating such a file and renaming it.
func removeStaleTemps(path string) {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	prefix := tempPrefix(path)
	for _, n := range names {
		digits, ok := strings.CutPrefix(n, prefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		stale := filepath.Join(filepath.Dir(path), n)
		if fi, err := os.Lstat(stale); err == nil && fi.Mode().IsRegular() {
			os.Remove(stale)
		}
	}
}
