package output

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
	// Writable is no failure: the zero value, as in a Finding whose fix
	// nothing refused (Finding.Unwritable).
	Writable WriteFailure = iota
	// WriteIO is an operating-system error while writing (Err says which).
	WriteIO
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

// String names the failure in JSON and SARIF output.
func (f WriteFailure) String() string {
	switch f {
	case Writable:
		return ""
	case WriteIO:
		return "io"
	case WriteSymlink:
		return "symlink"
	case WriteReadOnly:
		return "read-only"
	case WriteChanged:
		return "changed"
	case WriteNotRegular:
		return "not-regular"
	case WriteOutside:
		return "outside-module"
	}
	return fmt.Sprintf("WriteFailure(%d)", int(f))
}

// MarshalText makes a WriteFailure a string in JSON.
func (f WriteFailure) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

func (e *WriteError) Error() string { return e.Path + ": " + e.Why() }

// Why is the error without the path: "is a symlink; not rewritten".
func (e *WriteError) Why() string {
	switch e.Reason {
	case WriteSymlink:
		return "is a symlink; not rewritten"
	case WriteReadOnly:
		return fmt.Sprintf("not writable (mode %04o); not rewritten", e.Mode.Perm())
	case WriteChanged:
		return "changed since unflake read it; run again"
	case WriteNotRegular:
		return "not a regular file; not rewritten"
	case WriteOutside:
		if e.Err != nil {
			return "its " + e.Err.Error() + "; not rewritten"
		}
		return "its real path is outside its module; not rewritten"
	}
	if e.Err == nil {
		return "not rewritten"
	}
	return e.Err.Error()
}

// FindingReason is the reason a finding in the refused file gives for
// not being fixed.
func (e *WriteError) FindingReason() string {
	switch e.Reason {
	case WriteSymlink:
		return "the file is a symlink; fix does not write through or replace it"
	case WriteReadOnly:
		return fmt.Sprintf("the file is not writable (mode %04o); fix does not override that", e.Mode.Perm())
	case WriteNotRegular:
		return "the file is not a regular file; fix does not write it"
	case WriteOutside:
		if e.Err != nil {
			return "the file's " + e.Err.Error() + "; fix does not write there"
		}
		return "the file's real path is outside its module; fix does not write there"
	}
	return "fix cannot write the file: " + e.Why()
}

func (e *WriteError) Unwrap() error { return e.Err }

// DiffPath returns the path under which a diff names c, relative to base
// with forward slashes, or a *WriteError when no diff of c applies as
// meant.
//
// A file that is a symbolic link is refused (WriteSymlink): git apply
// replaces the link by a file, patch writes through it. A path through a
// directory link is named by its real path: git apply refuses a path
// "beyond a symbolic link", while patch -p1 follows the link, and both
// apply the real path; the file's real path must then lie inside its
// module (WriteOutside otherwise).
func (c Change) DiffPath(base string) (string, error) {
	if fi, err := os.Lstat(c.Path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return "", &WriteError{Path: c.Path, Reason: WriteSymlink}
	}
	lexical := relSlash(base, c.Path)
	dir := filepath.Dir(c.Path)
	realDir, err1 := filepath.EvalSymlinks(dir)
	realBase, err2 := filepath.EvalSymlinks(base)
	if err1 != nil || err2 != nil {
		return lexical, nil // Write reports what is missing
	}
	real := relSlash(realBase, filepath.Join(realDir, filepath.Base(c.Path)))
	if real == lexical {
		return lexical, nil
	}
	if !insideModule(c.Path) {
		return "", &WriteError{Path: c.Path, Reason: WriteOutside}
	}
	return real, nil
}

// relSlash is path relative to base, with forward slashes (path itself
// when it has no relative form).
func relSlash(base, path string) string {
	r, err := filepath.Rel(base, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(r)
}

// refusalOf returns why Write would refuse path whatever its content:
// it is a symbolic link or not a regular file, or has no write permission
// for its owner. The engine asks before it applies fixes (and checks the
// module with outsideModule), so that check, fix and fix --diff report
// the same findings as fixed. It returns nil for a writable file and for
// one that does not exist.
func RefusalOf(path string) *WriteError {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	return refusal(path, fi)
}

// refusal judges the file path by its Lstat information.
func refusal(path string, fi fs.FileInfo) *WriteError {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &WriteError{Path: path, Reason: WriteSymlink}
	case !fi.Mode().IsRegular():
		return &WriteError{Path: path, Reason: WriteNotRegular}
	case fi.Mode().Perm()&0o200 == 0:
		// The mode bits, not a failed open: root may open any file.
		return &WriteError{Path: path, Reason: WriteReadOnly, Mode: fi.Mode()}
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
	}
	if werr := refusal(c.Path, fi); werr != nil {
		return 0, werr
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

// A Change is the new content of one file.
type Change struct {
	Path     string // absolute
	Old, New []byte
	Mode     os.FileMode
}
