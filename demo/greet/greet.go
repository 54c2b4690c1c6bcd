// Package greet is the demo's command-line tool: its tests run the test
// binary itself as a child process, once per greeting.
package greet

import "strings"

// Greeting returns the greeting for name.
func Greeting(name string) string {
	return "hello, " + strings.TrimSpace(name)
}
