package analyzers_test

import (
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/unflake/unflake/internal/effects"
)

func TestMain(m *testing.M) {
	// The stub of effects.Analyzer declares the interface Source as its
	// ResultType and returns a value of a concrete type, which
	// go/analysis/checker (under analysistest) rejects; unitchecker does
	// not check. The summaries that replace the stub return *Facts and
	// declare it, and this does nothing then.
	if effects.Analyzer.ResultType.Kind() == reflect.Interface {
		effects.Analyzer.ResultType = reflect.TypeOf(effects.None)
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "unflake-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	if unflakeBin, err = buildUnflake(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building unflake:", err)
		return 2
	}
	return m.Run()
}
