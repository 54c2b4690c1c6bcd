package spawn_test

import (
	"strings"
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
	"path/filepath"
	"testing"
)

// child runs the test binary in a view of its own.
func child(root, flag string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], flag)
	cmd.Dir = filepath.Join(root, "work")
	cmd.Env = append(os.Environ(), "TMPDIR="+root, "HOME="+root, "XDG_CACHE_HOME="+root, "XDG_CONFIG_HOME="+root)
	return cmd
}

func TestX(t *testing.T) {
	ra, rb := t.TempDir(), t.TempDir()
	if err := child(ra, "-test.run=^TestA$").Run(); err != nil {
		t.Fatal(err)
	}
	if err := child(rb, "-test.run=^TestB$").Run(); err != nil {
		t.Fatal(err)
	}
}
`}}
	diags := ruletest.Run(t, spawn.Rule, effect.None, pkg)
	if len(diags) != 1 || diags[0].Fix == nil {
		t.Fatalf("got %+v, want one fixed finding", diags)
	}
	if got := diags[0].Fix.Changes[0].Checked; len(got) != 14 {
		t.Errorf("checked %q, want the shared arguments, the directory, the locks, the text of other programs, the inherited state, the child code's effects, the package variables, the clock, the children's views, the builds left out, what the builds left out do, the places every child shares, the module's packages and the order of results", got)
	}
}

// TestProcessWideEnv: what TestMain or an init function sets for the
// process, every child inherits; the finding names the variable and the
// line.
func TestProcessWideEnv(t *testing.T) {
	const test = `package x

import (
	"os"
	"os/exec"
	"testing"
)

func TestMain(m *testing.M) {
	os.Setenv("TOOL_STATE", os.TempDir())
	os.Exit(m.Run())
}

func TestX(t *testing.T) {
	if err := exec.Command(os.Args[0], "-test.run=^TestA$").Run(); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(os.Args[0], "-test.run=^TestB$").Run(); err != nil {
		t.Fatal(err)
	}
}
`
	pkg := ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": test}}
	diags := ruletest.Run(t, spawn.Rule, effect.None, pkg)
	if len(diags) != 1 || diags[0].Fix != nil {
		t.Fatalf("got %+v, want one finding, not fixed", diags)
	}
	if want := "TestMain sets TOOL_STATE in the environment (x_test.go:10)"; !strings.Contains(diags[0].NotFixed, want) {
		t.Errorf("not fixed: %q, want it to say %q", diags[0].NotFixed, want)
	}
}
