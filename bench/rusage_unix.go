//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSSKiB returns ru_maxrss of a waited-for process in KiB.
//
// On Linux, wait4 fills ru_maxrss with the larger of the child's own peak
// and the peaks of the descendants it waited for (the kernel folds a reaped
// child's maxrss into its parent's "children" figure, and wait4 reports
// self+children). So this is the peak of the largest single process in the
// tool's process tree — the tool itself, or a `go list` / compile it ran —
// not the sum of processes alive at the same time. /usr/bin/time -v
// reports the same number.
func peakRSSKiB(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss) / 1024 // bytes there
	}
	return int64(ru.Maxrss)
}
