package parallel

import "strings"

var calls int

// Parse splits "k=v" into a map.
func Parse(s string) map[string]string {
	k, v, _ := strings.Cut(s, "=")
	return map[string]string{k: v}
}

// Count counts the calls, in a package-level variable.
func Count() { calls++ }
