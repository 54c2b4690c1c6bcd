package spawn_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
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
	"path/filepath"
	"testing"
` + imp + `
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
	a, err := child(ra, "-test.run=^TestA$").Output()
	if err != nil {
		t.Fatal(err)
	}
	b, err := child(rb, "-test.run=^TestB$").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || len(b) == 0 {
		t.Error("no output")
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

// The machine of issue 27: its module cache lists golang.org/x/sync
// v0.11.0 with its .info and .mod but no zip (as go mod download of many
// module graphs leaves it), and the network is off. Under --no-new-deps
// the finding used to say "cannot add golang.org/x/sync to go.mod:
// downloading golang.org/x/sync v0.11.0"; nothing may ask for a module.
func TestNoNewDepsPartialModuleCache(t *testing.T) {
	testmod.Short(t)
	cache := testmod.ModCache(t)
	at := filepath.Join(cache, "cache", "download", "golang.org", "x", "sync", "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"list":         "v0.11.0\n",
		"v0.11.0.info": `{"Version":"v0.11.0","Time":"2025-01-01T00:00:00Z"}`,
		"v0.11.0.mod":  "module golang.org/x/sync\n\ngo 1.18\n",
	} {
		if err := os.WriteFile(filepath.Join(at, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.25
-- m_test.go --
package m

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
	a, err := child(ra, "-test.run=^TestA$").Output()
	if err != nil {
		t.Fatal(err)
	}
	b, err := child(rb, "-test.run=^TestB$").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || len(b) == 0 {
		t.Error("no output")
	}
}
`)
	var opts rule.Options
	if err := opts.Set(spawn.Rule, "no-new-deps", "true"); err != nil {
		t.Fatal(err)
	}
	res, err := rewrite.Run(&rewrite.Config{
		Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{spawn.Rule}, Options: opts,
		Env: testmod.GoEnv(t, "GOMODCACHE="+cache, "GOPROXY=off", "GOFLAGS=-mod=mod"),
		// An order change is a hypothesis (rule.Unprovable): applied
		// as fix --diff --unproven applies it.
		Decide: func(rewrite.Site) rewrite.Decision { return rewrite.Decision{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if len(res.Findings) != 1 || !res.Findings[0].Fixed || !strings.Contains(res.Findings[0].Fix, "a sync.WaitGroup (not errgroup: --no-new-deps)") {
		t.Fatalf("want one fixed finding with a sync.WaitGroup, got %+v", res.Findings)
	}
	for _, c := range res.Changes {
		if filepath.Base(c.Path) != "m_test.go" {
			t.Errorf("changed %s", c.Path)
		}
	}
}
