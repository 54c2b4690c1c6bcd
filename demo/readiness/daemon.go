// Package readiness is a daemon that stops cleanly on SIGTERM.
package readiness

import (
	"os"
	"syscall"
)

// WaitForStop blocks until stop says so; it stands for a server's main
// loop.
func WaitForStop(stop <-chan os.Signal) os.Signal {
	return <-stop
}

// Signals are the signals the daemon stops on.
var Signals = []os.Signal{syscall.SIGTERM}
