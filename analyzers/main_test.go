package analyzers_test

import (
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
	os.Exit(m.Run())
}
