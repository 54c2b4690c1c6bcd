//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package output

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive advisory lock on the directory dir, waiting
// for another unflake process to release it, and returns the release.
// The lock lives on the directory itself, which a rename inside it leaves
// in place, so no lock file is ever left behind.
func lockDir(dir string) (func(), error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		d.Close()
		return nil, &os.PathError{Op: "flock", Path: dir, Err: err}
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}
