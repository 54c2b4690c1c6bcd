//go:build unix

package verify

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd in a process group of its own and makes cancelling
// its context kill the whole group: a test binary's children (and
// test2json's child, the binary) die with it, and a terminal's Ctrl-C,
// which signals only the foreground group, is handled by us.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
