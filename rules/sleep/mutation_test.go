package sleep_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules/sleep"
)

// The bubble the rule offers fix --verify for the scheduler test of
// testdata/sleep/scheduler_bubble.txtar keeps the test's power: the
// rewritten test passes on the scheduler, and fails on a scheduler whose
// first run waits an interval (the start-up run the sleep let happen is
// gone). Both runs are on virtual time, so neither depends on timing.
func TestSchedulerBubbleKeepsPower(t *testing.T) {
	testmod.Slow(t)
	a, err := txtar.ParseFile(filepath.Join("..", "..", "testdata", "sleep", "scheduler_bubble.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testmod.WriteFiles(t, dir, a.Files)
	env := testmod.GoEnv(t, "GOFLAGS=-mod=mod")

	res, err := rewrite.Run(&rewrite.Config{
		Dir:      dir,
		Patterns: []string{"./..."},
		Env:      env,
		Rules:    []*rule.Rule{sleep.Rule},
		Options:  allSavings(t),                                                     // the case's 10ms sleeps, as its flags line says
		Decide:   func(rewrite.Site) rewrite.Decision { return rewrite.Decision{} }, // what fix --verify applies before it runs the tests
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	if len(res.Changes) != 1 {
		t.Fatalf("got %d changed files, want 1", len(res.Changes))
	}
	c := res.Changes[0]
	if !bytes.Contains(c.New, []byte("synctest.Test(t, func(t *testing.T) {")) || bytes.Contains(c.New, []byte("Advance(")) {
		t.Fatalf("the scheduler test is not run in a bubble (or the clock is advanced):\n%s", c.New)
	}
	if err := os.WriteFile(c.Path, c.New, 0o644); err != nil {
		t.Fatal(err)
	}
	goTest(t, dir, env, true)

	// The mutation: the first run waits an interval of the fake clock,
	// which the test never advances.
	path := filepath.Join(dir, "scheduler.go")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const run = "\tfor {\n\t\ts.mu.Lock()\n\t\ts.lastRun = s.clock.Now()"
	const late = "\tselect {\n\tcase <-s.clock.After(s.interval):\n\tcase <-s.stop:\n\t\treturn\n\t}\n" + run
	if !bytes.Contains(src, []byte(run)) {
		t.Fatal("scheduler.go has no start-up run to break")
	}
	if err := os.WriteFile(path, bytes.Replace(src, []byte(run), []byte(late), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	goTest(t, dir, env, false)
}

// goTest runs the scheduler's start-up test in dir and checks whether it
// passed.
func goTest(t *testing.T, dir string, env []string, wantOK bool) {
	t.Helper()
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestStartRunsAtOnce$", "./...")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ok := err == nil; ok != wantOK {
		t.Fatalf("go test: ok=%v, want %v:\n%s", ok, wantOK, out)
	}
	if !wantOK && !strings.Contains(string(out), "start-up run at") {
		t.Fatalf("go test failed, but not on the start-up run's time:\n%s", out)
	}
}

// allSavings returns options that offer a bubble whatever it saves
// (--min-saving=0), as the cases these tests read say in their flags line.
func allSavings(t *testing.T) rule.Options {
	t.Helper()
	var opts rule.Options
	if err := opts.Set(sleep.Rule, "min-saving", "0"); err != nil {
		t.Fatal(err)
	}
	return opts
}
