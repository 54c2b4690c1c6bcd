package waitfor_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules/attemptloop"
	"github.com/unflake/unflake/rules/waitfor"
)

// applyAll writes the case archive name of testdata/waitfor to a module,
// applies every waitfor fix there, unproven ones included (what fix
// --verify applies before it runs the tests), with the given poll
// timeout, and writes the result. It returns the module's directory, its
// environment and the changes.
func applyAll(t *testing.T, name, timeout string) (string, []string, []rewrite.Change) {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("..", "..", "testdata", "waitfor", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testmod.WriteFiles(t, dir, a.Files)
	env := testmod.GoEnv(t, "GOFLAGS=-mod=mod")
	var opts rule.Options
	if err := opts.Set(attemptloop.Rule, "poll-timeout", timeout); err != nil {
		t.Fatal(err)
	}
	res, err := rewrite.Run(&rewrite.Config{
		Dir:      dir,
		Patterns: []string{"./..."},
		Env:      env,
		Rules:    []*rule.Rule{waitfor.Rule},
		Options:  opts,
		Decide:   func(rewrite.Site) rewrite.Decision { return rewrite.Decision{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	for _, c := range res.Changes {
		if err := os.WriteFile(c.Path, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, env, res.Changes
}

// goTest runs the tests matching run in dir and checks whether they
// passed (with extra go test flags); it returns the output.
func goTest(t *testing.T, dir string, env []string, run string, wantOK bool, flags ...string) string {
	t.Helper()
	cmd := exec.Command("go", append(append([]string{"test", "-count=1", "-run", run}, flags...), "./...")...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ok := err == nil; ok != wantOK {
		t.Fatalf("go test -run %s: ok=%v, want %v:\n%s", run, ok, wantOK, out)
	}
	return string(out)
}

// The unproven polls, as fix --verify applies them, build, pass vet and
// pass: testify's assertions polled through assert.CollectT, a read
// before the checks repeated with its unused names made _.
func TestUnprovenPollsBuild(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir, env, changes := applyAll(t, "testify", "10s")
	var got []byte
	for _, c := range changes {
		if filepath.Base(c.Path) == "cache_test.go" {
			got = c.New
		}
	}
	for _, want := range []string{
		"\t\tval, ok := c.Get(\"a\")\n",
		"if ok && val == 1 && len(c.Keys()) == 1 && assert.Equal(new(assert.CollectT), []string{\"a\"}, c.Keys()) {",
		// An …f assertion keeps its format's arguments.
		"if assert.Equalf(new(assert.CollectT), []string{\"b\"}, c.Keys(), \"got %d keys\", len(c.Keys())) {",
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the rewritten test lacks %q:\n%s", want, got)
		}
	}
	goTest(t, dir, env, ".", true, "-vet=all")
}

// The other shapes of a poll, as fix --verify applies them, build, pass
// vet and pass.
func TestPollForms(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir, env, changes := applyAll(t, "forms", "10s")
	if len(changes) != 1 {
		t.Fatalf("got %d changed files, want 1", len(changes))
	}
	got := changes[0].New
	for _, want := range []string{
		// Two inits that declare err: each check keeps its if.
		"time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {\n\t\tif err := r.Check(0); err != nil {\n\t\t\tcontinue\n\t\t}\n\t\tif err := r.Check(1); err != nil {\n\t\t\tcontinue\n\t\t}\n\t\tbreak\n",
		// The index below the length the check before requires.
		"if len(nodes) == 1 && nodes[0] == \"a\" {",
		"if r.Ready(want[1]) {",
		// ok, not new at the :=, is the copy's in the poll.
		"_, ok := len(r.Nodes()), r.Ready(1)\n\t\tif ok {",
		// An init only the failure message uses is left out.
		"time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {\n\t\tif r.Ready(1) {",
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the rewritten test lacks %q:\n%s", want, got)
		}
	}
	goTest(t, dir, env, ".", true, "-vet=all")
}

// A rewritten test keeps its power: the poll replaces the sleep of
// TestLeave, and when the awaited leave never happens (the mutation),
// the test still fails, with its own message, once the poll gives up.
func TestPollStillFails(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir, env, _ := applyAll(t, "unproven", "100ms")
	goTest(t, dir, env, "^TestLeave$", true)

	path := filepath.Join(dir, "members.go")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const leave = "func (l *List) Leave(name string) {\n"
	if !bytes.Contains(src, []byte(leave)) {
		t.Fatal("members.go has no Leave to break")
	}
	mutated := bytes.Replace(src, []byte(leave), []byte(leave+"\tif true {\n\t\treturn // the mutation: nobody ever leaves\n\t}\n"), 1)
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := goTest(t, dir, env, "^TestLeave$", false); !strings.Contains(out, "should have 1 node") {
		t.Fatalf("the test failed, but not with its own check's message:\n%s", out)
	}
}

// A test left alone keeps catching the event it guards against: fix
// --verify leaves TestNoSpuriousJoin's sleep (its check holds without
// any wait), and when a spurious join does happen in the background (the
// mutation), the unchanged test fails on it.
func TestLeftAloneStillCatches(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	a, err := txtar.ParseFile(filepath.Join("..", "..", "testdata", "waitfor", "verify.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testmod.WriteFiles(t, dir, a.Files)
	env := testmod.GoEnv(t, "GOFLAGS=-mod=mod")
	res, v, err := verify.Run(context.Background(), &rewrite.Config{
		Dir:      dir,
		Patterns: []string{"./..."},
		Env:      env,
		Rules:    []*rule.Rule{waitfor.Rule},
	}, verify.Options{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Findings {
		if f.Test != "TestNoSpuriousJoin" {
			continue
		}
		if f.Fixed || f.Revert == nil || f.Revert.Kind != rewrite.HoldsWithout {
			t.Fatalf("TestNoSpuriousJoin's sleep: fixed=%v revert=%+v, want it held: its check holds without waiting", f.Fixed, f.Revert)
		}
	}
	// One probe each: the probe is no wait, so no later round of the
	// rule takes it for a site of its own.
	var holds []string
	for _, p := range v.Probed {
		if p.Holds() {
			holds = append(holds, p.Site.Test)
		}
	}
	if len(holds) != 1 || holds[0] != "TestNoSpuriousJoin" {
		t.Errorf("probes that held: %v, want [TestNoSpuriousJoin]", holds)
	}
	for _, c := range res.Changes {
		if err := os.WriteFile(c.Path, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goTest(t, dir, env, "^TestNoSpuriousJoin$", true)

	path := filepath.Join(dir, "members.go")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const ctor = "func NewList(names ...string) *List { return &List{names: names} }"
	const spurious = `func NewList(names ...string) *List {
	l := &List{names: names}
	go func() { // the mutation: a member nobody asked for joins
		l.mu.Lock()
		defer l.mu.Unlock()
		l.names = append(l.names, "ghost")
	}()
	return l
}`
	if !bytes.Contains(src, []byte(ctor)) {
		t.Fatal("members.go has no NewList to break")
	}
	if err := os.WriteFile(path, bytes.Replace(src, []byte(ctor), []byte(spurious), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := goTest(t, dir, env, "^TestNoSpuriousJoin$", false); !strings.Contains(out, "without a join") {
		t.Fatalf("the test failed, but not on the spurious join:\n%s", out)
	}
}

// The window forms, as fix --verify applies them, build, pass vet and
// pass: a sleep whose state a synchronous call may have reached already
// polls, then keeps its whole window. (The sleep of 2*d is no longer
// fixed: the code under test runs on its own 1ms sleep, which binds a
// window of unknown length as a timing contract; window.golden says so.)
func TestWindowForms(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir, env, changes := applyAll(t, "window", "10s")
	if len(changes) != 1 {
		t.Fatalf("got %d changed files, want 1", len(changes))
	}
	got := changes[0].New
	for _, want := range []string{
		"\t\tif n.Load() == 1 {\n\t\t\tbreak\n\t\t}\n\t}\n\ttime.Sleep(time.Until(start.Add(100 * time.Millisecond)))\n\tif n.Load() != 1 {\n",
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the rewritten test lacks %q:\n%s", want, got)
		}
	}
	goTest(t, dir, env, ".", true, "-vet=all", "-race")
}
