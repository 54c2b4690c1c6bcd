// Package spool writes the file system, which a summary records apart
// from its effects (Summary.Files): through a call, a goroutine and a
// timer's function; reading a file is not a write.
package spool

import (
	"os"
	"time"
)

// Append opens a file for appending.
func Append(path string) { // want Append:`writes-files: spool.Append → os.OpenFile, which writes the file system`
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	f.Close()
}

// Later appends from a timer's function.
func Later(path string) { // want Later:`timer: spool.Later → time.AfterFunc, which starts a timer of the real clock; writes-files: spool.Later → spool.Append → os.OpenFile, which writes the file system`
	time.AfterFunc(time.Millisecond, func() { Append(path) })
}

// Background removes from a goroutine that ends by itself.
func Background(path string) { // want Background:`writes-files: spool.Background → os.Remove, which writes the file system`
	go func() { os.Remove(path) }()
}

// Read only reads.
func Read(path string) ([]byte, error) { return os.ReadFile(path) } // want Read:`pure`
