//go:build !unix

package verify

import "os/exec"

// ownGroup: without process groups, cancelling kills the process alone.
func ownGroup(cmd *exec.Cmd) {}
