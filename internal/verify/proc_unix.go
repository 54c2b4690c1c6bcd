//go:build unix

package verify

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd in a process group of its own and makes cancelling
// its context send the whole group sig: a test binary's children (and
// test2json's child, the binary) get it too, and a terminal's Ctrl-C,
// which signals only the foreground group, is handled by us. Test
// processes get SIGKILL; the go command gets SIGINT, on which it removes
// its work directory.
func ownGroup(cmd *exec.Cmd, sig syscall.Signal) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, sig)
	}
}

const (
	killSignal = syscall.SIGKILL
	stopSignal = syscall.SIGINT
)
