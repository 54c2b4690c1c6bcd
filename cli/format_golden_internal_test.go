package cli

import (
	"testing"

	"github.com/unflake/unflake/internal/goldentest"
	"github.com/unflake/unflake/rewrite"
)

// The rules' in-process golden checks print findings with
// goldentest.FormatFinding: it must print what unflake check prints.
func TestGoldenFindingsAsCheckPrintsThem(t *testing.T) {
	t.Parallel()
	base := rewrite.Finding{File: "a_test.go", Line: 3, Col: 2, Rule: "sleep", Message: "time.Sleep(1s) waits"}
	fixed, notFixed, verified := base, base, base
	fixed.Fixed, fixed.Fix = true, "run the test in a bubble"
	notFixed.Reason = "the test runs in parallel"
	verified.Fixed, verified.Fix, verified.Mutants = true, "poll", rewrite.Mutants{Killed: 2, Of: 3}
	for _, f := range []rewrite.Finding{fixed, notFixed, verified} {
		if got, want := goldentest.FormatFinding(f), formatFinding(f); got != want {
			t.Errorf("goldentest.FormatFinding = %q, check prints %q", got, want)
		}
	}
}
