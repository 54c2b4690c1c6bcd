//go:build !unix

package main

import "os"

// peakRSSKiB is unknown on this system.
func peakRSSKiB(*os.ProcessState) int64 { return 0 }
