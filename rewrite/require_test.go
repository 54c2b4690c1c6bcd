package rewrite_test

import (
	"bytes"
	"context"
	"go/ast"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

const (
	syncModule  = "golang.org/x/sync"
	pflagModule = "github.com/spf13/pflag"
)

// useErrgroup is a test rule whose fix imports a package of a module the
// test module may not require: it replaces each call pause() with
// new(errgroup.Group).Wait(). Its fix always lists the module, even when
// Pass.Require refused it, so the engine must hold it back; with ask false
// the rule never calls Pass.Require at all (a bug the engine must catch).
func useErrgroup(ask bool) *rule.Rule {
	return requiring("errgroup", "pause", syncModule, ask, func() dst.Expr {
		group := &dst.CallExpr{Fun: dst.NewIdent("new"), Args: []dst.Expr{&dst.Ident{Name: "Group", Path: syncModule + "/errgroup"}}}
		return &dst.CallExpr{Fun: &dst.SelectorExpr{X: group, Sel: dst.NewIdent("Wait")}}
	})
}

// requiring returns a test rule that replaces each call fn() with the
// expression new returns, a fix that needs module modPath.
func requiring(name, fn, modPath string, ask bool, new func() dst.Expr) *rule.Rule {
	return testRule(name, func(src []byte) bool { return bytes.Contains(src, []byte(fn+"()")) }, func(pass *rule.Pass) {
		if ask {
			_, _ = pass.Require(modPath) // the engine applies the answer
		}
		for _, f := range pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != fn {
					return true
				}
				pass.Report(rule.Diagnostic{
					Pos: call.Pos(), End: call.End(),
					Message: "calls " + fn,
					Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}},
						Message:  "call something of " + modPath,
						Requires: []string{modPath},
						Apply: func() error {
							*pass.Dst(call).(*dst.CallExpr) = *new().(*dst.CallExpr)
							return nil
						},
					},
				})
				return true
			})
		}
	})
}

// offlineEnv is the environment of these tests: modules come from a
// proxy the test writes, holding stand-ins for golang.org/x/sync and
// github.com/spf13/pflag, into a module cache of the test's; never from
// the user's module cache (whose version lists name versions it holds no
// zip of) or the network, whatever the ambient settings say. The sync
// stand-in declares go 1.21, as the real module has needed a newer go
// than some modules declare for years. It also returns the go version
// the test modules declare: the dependencies' go lines are not newer.
func offlineEnv(t *testing.T, gowork string) ([]string, string) {
	t.Helper()
	sync := testmod.Sync()
	sync.Go = "1.21"
	pflag := testmod.Module{Path: pflagModule, Version: "v1.0.9", Go: "1.12", Files: map[string]string{
		"pflag.go": "package pflag\n\ntype FlagSet struct{ parsed bool }\n\nfunc (f *FlagSet) Parsed() bool { return f.parsed }\n",
	}}
	return testmod.ProxyEnv(t, []testmod.Module{sync, pflag}, "GOWORK="+gowork), "1.24"
}

// pauseArchive is pauseModule declaring go version v.
func pauseArchive(v string) string { return strings.Replace(pauseModule, "go GOVERSION", "go "+v, 1) }

// pauseModule has the call the rule rewrites in two packages; tests
// replace its go version (pauseArchive).
const pauseModule = `
-- go.mod --
module example.com/m

go GOVERSION
-- m.go --
package m

func pause() {}
-- m_test.go --
package m

import "testing"

func TestA(t *testing.T) {
	pause()
}
-- sub/sub.go --
package sub

func pause() {}
-- sub/sub_test.go --
package sub

import "testing"

func TestB(t *testing.T) {
	pause()
}
`

func runErrgroup(t *testing.T, dir string, env []string, ask bool) *rewrite.Result {
	t.Helper()
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: env, Rules: []*rule.Rule{useErrgroup(ask)}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRequireAddsModule(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	env, goVersion := offlineEnv(t, "off")
	dir := testmod.Write(t, pauseArchive(goVersion))
	res := runErrgroup(t, dir, env, true)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	for _, f := range res.Findings {
		if !f.Fixed {
			t.Errorf("finding not fixed: %+v", f)
		}
	}
	var names []string
	for _, c := range res.Changes {
		rel, _ := filepath.Rel(dir, c.Path)
		names = append(names, filepath.ToSlash(rel))
	}
	// Once per module although both packages required it, sorted by path.
	if got, want := strings.Join(names, " "), "go.mod go.sum m_test.go sub/sub_test.go"; got != want {
		t.Fatalf("changes %s, want %s", got, want)
	}
	mod, sum := res.Changes[0], res.Changes[1]
	if !strings.Contains(string(mod.New), "require "+syncModule+" v") || !strings.Contains(string(mod.New), "go "+goVersion+"\n") {
		t.Errorf("go.mod does not require %s at the same go version:\n%s", syncModule, mod.New)
	}
	if sum.Old != nil || !strings.Contains(string(sum.New), syncModule+" v") {
		t.Errorf("go.sum: want a new file with %s's hashes, got old %q new %q", syncModule, sum.Old, sum.New)
	}
	var diff bytes.Buffer
	if err := output.WriteDiff(&diff, "go.sum", sum.Old, sum.New); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(diff.String(), "--- /dev/null\n+++ b/go.sum\n") {
		t.Errorf("go.sum diff does not create the file:\n%s", diff.String())
	}

	for _, c := range res.Changes {
		if err := c.Write(); err != nil {
			t.Fatal(err)
		}
	}
	vet := exec.Command("go", "vet", "./...")
	vet.Dir, vet.Env = dir, env
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("go vet after writing the changes: %v\n%s", err, out)
	}

	// Now the module requires it: a new fix changes no go.mod.
	more := "package m\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {\n\tpause()\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "more_test.go"), []byte(more), 0o644); err != nil {
		t.Fatal(err)
	}
	res = runErrgroup(t, dir, env, true)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if len(res.Changes) != 1 || filepath.Base(res.Changes[0].Path) != "more_test.go" {
		t.Errorf("want only more_test.go changed, got %d changes", len(res.Changes))
	}
}

func TestRequireRefused(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	tests := []struct {
		name, dir, gowork string
		archive           func(goVersion string) string
		reason            string // part of the findings' reason
	}{
		{
			name:    "vendor",
			archive: func(v string) string { return pauseArchive(v) + "-- vendor/modules.txt --\n" },
			gowork:  "off",
			reason:  "vendor directory",
		},
		{
			name: "workspace",
			archive: func(v string) string {
				return "-- go.work --\ngo " + v + "\n\nuse ./m\n" + strings.ReplaceAll(pauseArchive(v), "-- ", "-- m/")
			},
			dir:    "m",
			reason: "workspace",
		},
		{
			// golang.org/x/sync has needed a newer go for years.
			name:    "go version",
			archive: func(string) string { return pauseArchive("1.20") },
			gowork:  "off",
			reason:  ", newer than the module's go 1.20",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, goVersion := offlineEnv(t, tt.gowork)
			root := testmod.Write(t, tt.archive(goVersion))
			before := testmod.Snapshot(t, root)
			res := runErrgroup(t, filepath.Join(root, tt.dir), env, true)
			if len(res.Errors) > 0 {
				t.Fatalf("errors: %v", res.Errors)
			}
			if len(res.Findings) != 2 {
				t.Fatalf("want 2 findings, got %+v", res.Findings)
			}
			for _, f := range res.Findings {
				if f.Fixed || !strings.Contains(f.Reason, tt.reason) || strings.Contains(f.Reason, "\n") {
					t.Errorf("finding fixed %v, reason %q: want not fixed, saying %q", f.Fixed, f.Reason, tt.reason)
				}
			}
			if len(res.Changes) > 0 {
				t.Errorf("want no change, got %d", len(res.Changes))
			}
			if after := testmod.Snapshot(t, root); len(after) != len(before) {
				t.Errorf("the run left files behind: %d files before, %d after", len(before), len(after))
			}
		})
	}
}

// A fix that needs a module the rule never passed to Pass.Require is a bug
// of the rule: it is held back and reported.
func TestRequireNotAsked(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	env, goVersion := offlineEnv(t, "off")
	dir := testmod.Write(t, pauseArchive(goVersion))
	res := runErrgroup(t, dir, env, false)
	if len(res.Changes) > 0 {
		t.Errorf("want no change, got %d", len(res.Changes))
	}
	if len(res.Errors) != 2 || !strings.Contains(res.Errors[0].Error(), "internal error: rule errgroup") {
		t.Errorf("want an internal error for each fix, got %v", res.Errors)
	}
	for _, f := range res.Findings {
		if f.Fixed {
			t.Errorf("finding fixed: %+v", f)
		}
	}
}

// Verification builds the rewritten tests with the new go.mod, which an
// overlay cannot replace. The fixes are proven, and their tests run all
// the same: a build that failed would hold them back.
func TestRequireVerified(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	env, goVersion := offlineEnv(t, "off")
	dir := testmod.Write(t, pauseArchive(goVersion))
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: env, Rules: []*rule.Rule{useErrgroup(true)}}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Reverts) > 0 || v.Proven != 2 {
		t.Fatalf("want both proven fixes run and kept, got %d proven, reverts %+v", v.Proven, v.Reverts)
	}
	for _, f := range res.Findings {
		if !f.Fixed {
			t.Errorf("finding not fixed: %+v", f)
		}
	}
	if len(res.Changes) != 4 {
		t.Errorf("want go.mod, go.sum and two test files changed, got %d changes", len(res.Changes))
	}
}

// A module Pass.Require added for a fix that was not applied (here one
// silenced by //unflake:ignore) stays out of go.mod.
func TestRequireOnlyForAppliedFixes(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	env, goVersion := offlineEnv(t, "off")
	dir := testmod.Write(t, pauseArchive(goVersion)+`
-- idle.go --
package m

func idle() {}
-- idle_test.go --
package m

import "testing"

func TestIdle(t *testing.T) {
	//unflake:ignore flags the test is about idling
	idle()
}
`)
	useFlags := requiring("flags", "idle", pflagModule, true, func() dst.Expr {
		set := &dst.CallExpr{Fun: dst.NewIdent("new"), Args: []dst.Expr{&dst.Ident{Name: "FlagSet", Path: pflagModule}}}
		return &dst.CallExpr{Fun: &dst.SelectorExpr{X: set, Sel: dst.NewIdent("Parsed")}}
	})
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: env, Rules: []*rule.Rule{useErrgroup(true), useFlags}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if len(res.Changes) != 4 || filepath.Base(res.Changes[0].Path) != "go.mod" {
		t.Fatalf("want go.mod, go.sum and two test files changed, got %d changes", len(res.Changes))
	}
	for _, c := range res.Changes[:2] {
		if s := string(c.New); !strings.Contains(s, syncModule+" v") || strings.Contains(s, pflagModule) {
			t.Errorf("%s: want %s and not %s:\n%s", filepath.Base(c.Path), syncModule, pflagModule, s)
		}
	}
	for _, c := range res.Changes {
		if err := c.Write(); err != nil {
			t.Fatal(err)
		}
	}
	vet := exec.Command("go", "vet", "./...")
	vet.Dir, vet.Env = dir, env
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("go vet after writing the changes: %v\n%s", err, out)
	}
}

// The newest version whose own go line the module's go directive allows is
// chosen, walking down from latest.
func TestRequireChoosesVersionForGoLine(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	const dep = "example.com/dep"
	var mods []testmod.Module
	for _, v := range []struct{ version, goVersion string }{{"v1.0.0", "1.20"}, {"v1.1.0", "1.21"}, {"v1.2.0", "1.99"}} {
		mods = append(mods, testmod.Module{Path: dep, Version: v.version, Go: v.goVersion, Files: map[string]string{"dep.go": "package dep\n\nfunc F() {}\n"}})
	}
	env := testmod.ProxyEnv(t, mods)
	dir := testmod.Write(t, pauseArchive("1.21"))
	useDep := requiring("dep", "pause", dep, true, func() dst.Expr {
		return &dst.CallExpr{Fun: &dst.Ident{Name: "F", Path: dep}}
	})
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: env, Rules: []*rule.Rule{useDep}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if len(res.Changes) == 0 || !strings.Contains(string(res.Changes[0].New), dep+" v1.1.0") || !strings.Contains(string(res.Changes[0].New), "go 1.21\n") {
		t.Fatalf("want go.mod requiring %s v1.1.0 at go 1.21, got %d changes", dep, len(res.Changes))
	}
}
