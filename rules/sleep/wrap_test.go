package sleep_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/internal/goldentest"
	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules/sleep"
)

// The function form of a wrap (testdata/sleep/wrap_function.txtar) moves
// TestRefill's body into testRefill2 with every line as it was (but for
// its sleeps, which end a nanosecond late), and keeps
// the test's power: the rewritten test passes on the bucket, and fails on
// a bucket that never refills. Both runs are on virtual time.
func TestFunctionFormKeepsBodyAndPower(t *testing.T) {
	testmod.Slow(t)
	a, err := txtar.ParseFile(filepath.Join("..", "..", "testdata", "sleep", "wrap_function.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var before []byte
	for _, f := range a.Files {
		if f.Name == "bucket_test.go" {
			before = f.Data
		}
	}
	dir := t.TempDir()
	testmod.WriteFiles(t, dir, a.Files)
	env := testmod.GoEnv(t, "GOFLAGS=-mod=mod")

	// Plain fix holds a clock change back (a hypothesis only fix --verify
	// keeps); the rewrite is the one the rule proved, as a golden's
	// proven directive applies it.
	cfg := &rewrite.Config{
		Dir:      dir,
		Patterns: []string{"./..."},
		Env:      env,
		Rules:    []*rule.Rule{sleep.Rule},
		Decide:   goldentest.KeepProven,
	}
	res, err := rewrite.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	var after []byte
	for _, c := range res.Changes {
		if filepath.Base(c.Path) == "bucket_test.go" {
			after = c.New
		}
		if err := os.WriteFile(c.Path, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Have: the rewritten files on disk.
	// The body moves as it was but for the test's own sleeps, which end
	// a nanosecond late (internal/bubble/overshoot.go): compared with
	// that added back out and spaces gone (gofmt tightens d * unit
	// beside the +).
	body := between(t, before, "\ttt.Parallel()\n\n", "\n}\n")
	unshot := func(s string) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(s, " + time.Nanosecond)", ")")), "")
	}
	if !strings.Contains(unshot(string(after)), unshot("synctest.Test(tt, testRefill2)\n}\n\nfunc testRefill2(tt *testing.T) {\n"+body+"\n}\n")) {
		t.Fatalf("TestRefill's body did not move unchanged into testRefill2:\n%s", after)
	}
	if strings.Contains(body, "time.Sleep(") && !bytes.Contains(after, []byte(" + time.Nanosecond)")) {
		t.Fatalf("TestRefill's sleeps do not end a nanosecond late in testRefill2:\n%s", after)
	}

	refillTest(t, dir, env, true)
	// The mutation: the bucket never refills.
	path := filepath.Join(dir, "bucket.go")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mutated := bytes.Replace(src, []byte("n := int(now.Sub(b.last) / b.every)"), []byte("n := 0 * int(now.Sub(b.last)/b.every)"), 1)
	if bytes.Equal(mutated, src) {
		t.Fatal("the mutation did not apply")
	}
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		t.Fatal(err)
	}
	refillTest(t, dir, env, false)
}

// between returns the text of b after the first from and before the
// next to.
func between(t *testing.T, b []byte, from, to string) string {
	t.Helper()
	_, rest, ok := strings.Cut(string(b), from)
	if !ok {
		t.Fatalf("no %q in the input", from)
	}
	s, _, ok := strings.Cut(rest, to)
	if !ok {
		t.Fatalf("no %q after %q in the input", to, from)
	}
	return s
}

// refillTest runs TestRefill in dir and checks its outcome.
func refillTest(t *testing.T, dir string, env []string, wantOK bool) {
	t.Helper()
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestRefill$", "./...")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ok := err == nil; ok != wantOK {
		t.Fatalf("go test: ok=%v, want %v:\n%s", ok, wantOK, out)
	}
	if !wantOK && !strings.Contains(string(out), "token refused") {
		t.Fatalf("go test failed, but not on a refused token:\n%s", out)
	}
}
