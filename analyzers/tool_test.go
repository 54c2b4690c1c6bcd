package analyzers_test

import (
	"testing"

	"github.com/unflake/unflake/analyzers"
)

// The go command's calls of a vet or fix tool go to unitchecker; the CLI's
// commands do not.
func TestIsTool(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"-V=full"}, true},
		{[]string{"-flags"}, true},
		{[]string{"/tmp/go-build1/b001/vet.cfg"}, true},
		{[]string{"-sleep", "-json", "/tmp/go-build1/b001/vet.cfg"}, true},
		{[]string{"-fix", "-diff", "/tmp/go-build1/b001/vet.cfg"}, true},
		{nil, false},
		{[]string{"check", "./..."}, false},
		{[]string{"check", "x.cfg"}, false},
		{[]string{"--version"}, false},
		{[]string{"rules", "sleep"}, false},
	} {
		if got := analyzers.IsTool(c.args); got != c.want {
			t.Errorf("IsTool(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
