package testscope_test

import (
	"slices"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/testscope"
)

// TestCheckedPaths: a t.TempDir fix names the paths hazard it excluded;
// goldens show findings, not the changes a fix carries.
func TestCheckedPaths(t *testing.T) {
	pkg := ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"os"
	"testing"
)

func TestX(t *testing.T) {
	dir, err := os.MkdirTemp("", "x")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(dir+"/f", nil, 0o644)
}
`}}
	diags := ruletest.Run(t, testscope.Rule, effect.None, pkg)
	if len(diags) != 1 || diags[0].Fix == nil {
		t.Fatalf("got %+v, want one fixed finding", diags)
	}
	got := diags[0].Fix.Changes[0].Checked
	if want := []string{"no unix socket under the directory"}; !slices.Equal(got, want) {
		t.Errorf("checked %q, want %q", got, want)
	}
}
