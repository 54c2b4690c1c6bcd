package analyzers_test

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// analysistest runs the go command with the process's environment
	// and takes no other: the user's GOFLAGS (-mod=vendor) and GOWORK,
	// which break its loads ("errors parsing go.work"), are emptied. The
	// other tests give the go command an environment of their own.
	os.Setenv("GOFLAGS", "")
	os.Setenv("GOWORK", "")
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "unflake-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	binDir = dir
	return m.Run()
}
