package sleep_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules/sleep"
)

// The forms of the wait for waiters, as fix --verify applies them when it
// asks for one (Decision.Variant): the count is the form's, and the
// context is t.Context() from go 1.24, context.Background() before it.
// A clockwork without BlockUntilContext gets BlockUntil(n). From go 1.25
// the first form is a synctest bubble, and the waits follow it. Where
// the test has t.Context(), the wait is bounded (a second here, twice the
// 10ms sleep and a second at least) and fails the test, so that a bug
// that never starts the timer fails rather than hangs. Each rewritten
// module passes vet.
func TestWaitersForms(t *testing.T) {
	testmod.Slow(t)
	a, err := txtar.ParseFile(filepath.Join("..", "..", "testdata", "sleep", "clock_waiters_verify.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		goVersion string
		variant   int
		old       bool // the clockwork stub has BlockUntil(n) instead of BlockUntilContext
		want      string
	}{
		{"1.24", 0, false, "\tctx, cancel := context.WithTimeout(t.Context(), time.Second) // let the worker reach its timer\n\tdefer cancel()\n\tif err := fc.BlockUntilContext(ctx, 1); err != nil {\n\t\tt.Fatalf(\"1 goroutine did not reach the fake clock: %v\", err)\n\t}\n"},
		{"1.24", 1, false, "\tif err := fc.BlockUntilContext(ctx, 2); err != nil {\n\t\tt.Fatalf(\"2 goroutines did not reach the fake clock: %v\", err)\n"},
		{"1.23", 2, false, "\tfc.BlockUntilContext(context.Background(), 3) // let the worker reach its timer\n"},
		{"1.24", 1, true, "\tfc.BlockUntil(2) // let the worker reach its timer\n"},
		{"1.25", 0, false, "\tsynctest.Test(t, func(t *testing.T) {\n"},
		{"1.25", 1, false, "\tif err := fc.BlockUntilContext(ctx, 1); err != nil {\n"},
	} {
		dir := t.TempDir()
		testmod.WriteFiles(t, dir, a.Files)
		mod := filepath.Join(dir, "go.mod")
		data, err := os.ReadFile(mod)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(mod, bytes.Replace(data, []byte("go 1.24"), []byte("go "+tc.goVersion), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if tc.old {
			stub := filepath.Join(dir, "stub", "clockwork", "clockwork.go")
			data, err := os.ReadFile(stub)
			if err != nil {
				t.Fatal(err)
			}
			const method = "func (c *FakeClock) BlockUntilContext(ctx context.Context, n int) error {"
			if !bytes.Contains(data, []byte(method)) {
				t.Fatal("the clockwork stub has no BlockUntilContext to replace")
			}
			data = bytes.Replace(data, []byte(method), []byte("func (c *FakeClock) BlockUntil(n int) { _ = c.blockUntil(context.Background(), n) }\n\nfunc (c *FakeClock) blockUntil(ctx context.Context, n int) error {"), 1)
			if err := os.WriteFile(stub, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		env := testmod.GoEnv(t, "GOFLAGS=-mod=mod")
		res, err := rewrite.Run(&rewrite.Config{
			Dir:      dir,
			Patterns: []string{"./..."},
			Env:      env,
			Rules:    []*rule.Rule{sleep.Rule},
			Options:  allSavings(t), // the case's 10ms sleeps, as its flags line says
			Decide:   func(rewrite.Site) rewrite.Decision { return rewrite.Decision{Variant: tc.variant} },
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Errors) > 0 || len(res.Changes) != 1 || len(res.Findings) != 1 {
			t.Fatalf("go %s, form %d: errors %v, %d changes, findings %+v", tc.goVersion, tc.variant, res.Errors, len(res.Changes), res.Findings)
		}
		forms := 3
		if tc.goVersion >= "1.25" {
			forms = 4
		}
		if f := res.Findings[0]; !f.Fixed || f.Variant != tc.variant || f.Variants != forms {
			t.Errorf("go %s, form %d: finding %+v", tc.goVersion, tc.variant, f)
		}
		c := res.Changes[0]
		if !bytes.Contains(c.New, []byte(tc.want)) {
			t.Errorf("go %s, form %d: no %q in\n%s", tc.goVersion, tc.variant, tc.want, c.New)
		}
		if err := os.WriteFile(c.Path, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "vet", "./...")
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s, form %d: go vet: %v\n%s", tc.goVersion, tc.variant, err, out)
		}
	}
}
