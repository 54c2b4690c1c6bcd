package spawn_test

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules/spawn"
)

// errgroupPkg is golang.org/x/sync/errgroup as the test packages see it;
// limit is the declaration of Group.SetLimit, which the fix calls.
func errgroupPkg(limit string) ruletest.Package {
	return ruletest.Package{Path: "golang.org/x/sync/errgroup", Files: map[string]string{"errgroup.go": `package errgroup

type Group struct{}

func (g *Group) Go(f func() error) {}
func (g *Group) Wait() error       { return nil }
` + limit}}
}

// runner imports imp (for its side, through a blank import) and runs two
// children one after another.
func runner(imp string) ruletest.Package {
	return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"os"
	"os/exec"
	"testing"
` + imp + `
)

func TestX(t *testing.T) {
	a, err := exec.Command(os.Args[0], "-test.run=^TestA$").Output()
	if err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(os.Args[0], "-test.run=^TestB$").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Error("differ")
	}
}
`}}
}

// Under --no-new-deps the rule asks for no module: Pass.Require makes the
// go command look golang.org/x/sync up (go list -m, a download), which
// fails, or reads the module cache, on a machine whose cache lists a
// version without its zip. errgroup is used only where the package's
// imports already reach it, with the SetLimit the fix calls.
func TestNoNewDepsAsksNoModule(t *testing.T) {
	lib := ruletest.Package{Path: "example.com/m/lib", Files: map[string]string{"lib.go": "package lib\n\nimport _ \"golang.org/x/sync/errgroup\"\n"}}
	withLimit := errgroupPkg("func (g *Group) SetLimit(n int) {}\n")
	for _, tc := range []struct {
		name string
		pkgs []ruletest.Package
		want string // part of the fix's message
	}{
		{"not imported", []ruletest.Package{runner("")}, "a sync.WaitGroup (not errgroup: --no-new-deps)"},
		{"imported", []ruletest.Package{withLimit, runner(`	_ "golang.org/x/sync/errgroup"`)}, "together with an errgroup.Group and check"},
		{"through a dependency", []ruletest.Package{withLimit, lib, runner(`	_ "example.com/m/lib"`)}, "together with an errgroup.Group and check"},
		{"without SetLimit", []ruletest.Package{errgroupPkg(""), runner(`	_ "golang.org/x/sync/errgroup"`)}, "a sync.WaitGroup (not errgroup: --no-new-deps)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts rule.Options
			if err := opts.Set(spawn.Rule, "no-new-deps", "true"); err != nil {
				t.Fatal(err)
			}
			require := func(modPath string) (bool, error) {
				t.Errorf("--no-new-deps: the rule asked for %s", modPath)
				return true, nil
			}
			diags := ruletest.RunWith(t, spawn.Rule, opts, require, nil, tc.pkgs...)
			if len(diags) != 1 || diags[0].Fix == nil {
				t.Fatalf("want one fixed diagnostic, got %+v", diags)
			}
			if fix := diags[0].Fix; !strings.Contains(fix.Message, tc.want) || len(fix.Requires) > 0 {
				t.Errorf("fix %q requiring %v, want %q and no module", fix.Message, fix.Requires, tc.want)
			}
		})
	}
}
