// Package readiness is a daemon that stops cleanly on SIGTERM.
package readiness

import (
	"os"
	"syscall"
)

// Drain finishes in-flight work before the daemon exits; it stands for a
// server's graceful shutdown.
func Drain() int { return 0 }

// Signals are the signals the daemon stops on.
var Signals = []os.Signal{syscall.SIGTERM}
