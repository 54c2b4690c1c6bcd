//go:build !unix

package verify

import (
	"os/exec"
	"syscall"
)

// ownGroup: without process groups, cancelling kills the process alone.
func ownGroup(cmd *exec.Cmd, sig syscall.Signal) {}

const (
	killSignal = syscall.SIGKILL
	stopSignal = syscall.SIGINT
)
