//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package output

// lockDir is a no-op where the platform has no flock: there the content
// check before the rename still catches a write by another process, but
// not one that lands between the check and the rename.
func lockDir(dir string) (func(), error) { return func() {}, nil }
