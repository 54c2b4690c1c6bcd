package spawn_test

import (
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/spawn"
)

// TestCheckedOrder: a fix names the order hazards it excluded; goldens
// show findings, not the changes a fix carries.
func TestCheckedOrder(t *testing.T) {
	pkg := ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"os"
	"os/exec"
	"testing"
)

func TestX(t *testing.T) {
	if err := exec.Command(os.Args[0], "-test.run=^TestA$").Run(); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(os.Args[0], "-test.run=^TestB$").Run(); err != nil {
		t.Fatal(err)
	}
}
`}}
	diags := ruletest.Run(t, spawn.Rule, effect.None, pkg)
	if len(diags) != 1 || diags[0].Fix == nil {
		t.Fatalf("got %+v, want one fixed finding", diags)
	}
	if got := diags[0].Fix.Changes[0].Checked; len(got) != 5 {
		t.Errorf("checked %q, want the shared arguments, the directory, the inherited state, the clock and the order of results", got)
	}
}
