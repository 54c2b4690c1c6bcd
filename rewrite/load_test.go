package rewrite_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/load"
	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/internal/testmod"

	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// TestSymlinkedDirectoryOutsideModule: a pattern naming a link to a
// directory outside the module loads files under the link's path; they
// are analysed, never rewritten, and their findings say why, naming the
// real path.
func TestSymlinkedDirectoryOutsideModule(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, module)
	outside := testmod.Write(t, `
-- x_test.go --
package q

import (
	"testing"
	"time"
)

func TestQ(t *testing.T) { time.Sleep(1) }
`)
	if err := os.Symlink(outside, filepath.Join(dir, "q")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./q", "./other"}, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 || len(res.Errors) != 0 {
		t.Errorf("changes %+v, errors %v", res.Changes, res.Errors)
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(outside, "x_test.go"))
	path := filepath.Join(dir, "q", "x_test.go")
	if len(res.Findings) != 1 || res.Findings[0].Fixed || res.Findings[0].Unwritable != output.WriteOutside ||
		!strings.Contains(res.Findings[0].Reason, "real path "+real+" is outside module example.com/m") {
		t.Errorf("findings: %+v, want one not fixed, outside the module", res.Findings)
	}
	if len(res.Refused) != 1 || res.Refused[0].Path != path || res.Refused[0].Reason != output.WriteOutside ||
		!strings.HasPrefix(res.Refused[0].Error(), path+": its real path "+real+" is outside module example.com/m") {
		t.Errorf("refused: %v", res.Refused)
	}
}

// TestNoSilentCleanRun: GOPATH mode and patterns matching only packages
// outside the main module are errors, not clean runs.
func TestNoSilentCleanRun(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, module)
	env := testmod.GoEnv(t, "GO111MODULE=off")
	_, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: env, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err == nil || !strings.Contains(err.Error(), "GOPATH mode") {
		t.Errorf("GO111MODULE=off: %v, want a GOPATH mode error", err)
	}
	_, err = rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"fmt"}, Env: testmod.GoEnv(t), Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err == nil || !strings.Contains(err.Error(), "outside the main module") {
		t.Errorf("fmt: %v, want an error", err)
	}
}

// TestGoCommandError pins the way go/packages wraps a failing go command
// ("err: exit status 1: stderr: ..."): unflake shows the go command's own
// words.
func TestGoCommandError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // no go.mod here or above (the temp root has none)
	env := testmod.GoEnv(t, "GO111MODULE=on")
	_, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"."}, Env: env, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	var ge *load.GoError
	if !errors.As(err, &ge) || !strings.HasPrefix(err.Error(), "go: go.mod file not found in current directory or any parent directory") {
		t.Errorf("no go.mod: %v (%T)", err, err)
	}
}

// TestMissingGoSumEntry: the go command's message, not the type checker's
// "could not import X (invalid package name: "")".
func TestMissingGoSumEntry(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.22

require github.com/spf13/pflag v1.0.9
-- m_test.go --
package m

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestA(t *testing.T) { _ = pflag.Bool; time.Sleep(1) }
`)
	// The module is in the test's proxy, its go.sum entry is not in this
	// module.
	pflag := testmod.Module{Path: "github.com/spf13/pflag", Version: "v1.0.9", Go: "1.12", Files: map[string]string{"pflag.go": "package pflag\n\nfunc Bool() {}\n"}}
	env := testmod.ProxyEnv(t, []testmod.Module{pflag}, "GOFLAGS=-mod=readonly")
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Env: env, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "m_test.go:7:2: missing go.sum entry for module providing package github.com/spf13/pflag") {
		t.Errorf("errors: %v", res.Errors)
	}
	if len(res.Changes) != 0 {
		t.Errorf("a package that did not load was changed")
	}
}

// TestWriteRefusesChangedFile simulates a second unflake run (or an
// editor) that writes the file between the read and the write: the write
// is refused and the other writer's content survives.
func TestWriteRefusesChangedFile(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, module)
	res := runZero(t, dir)
	if len(res.Changes) == 0 {
		t.Fatal("no change")
	}
	c := res.Changes[0]
	theirs := append(append([]byte(nil), c.Old...), "\n// saved by someone else\n"...)
	if err := os.WriteFile(c.Path, theirs, 0o644); err != nil {
		t.Fatal(err)
	}
	err := c.Write()
	if reason(t, err) != output.WriteChanged || !strings.HasSuffix(err.Error(), ": changed since unflake read it; run again") {
		t.Errorf("Write: %v", err)
	}
	if got, _ := os.ReadFile(c.Path); string(got) != string(theirs) {
		t.Errorf("the other writer's content was lost:\n%s", got)
	}
	// Deleted meanwhile: not recreated.
	os.Remove(c.Path)
	if err := c.Write(); reason(t, err) != output.WriteChanged {
		t.Errorf("Write of a deleted file: %v", err)
	}
	if _, err := os.Lstat(c.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("deleted file recreated")
	}
	testmod.NoTemps(t, filepath.Dir(c.Path))
}

// reason returns the output.WriteFailure of err, failing the test if err is not
// a *output.WriteError.
func reason(t *testing.T, err error) output.WriteFailure {
	t.Helper()
	var we *output.WriteError
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T), want a *output.WriteError", err, err)
	}
	return we.Reason
}
