package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify/revert"

	"github.com/unflake/unflake/rewrite"
)

// ownContexts has two packages with a context of the test's own each,
// which testscope fixes (t.Context(), proven): the test of a passes, the
// test of b fails before any rewrite, so --verify cannot keep b's fix.
const ownContexts = `
-- go.mod --
module example.com/m

go 1.24
-- a/a_test.go --
package a

import (
	"context"
	"testing"
)

func TestA(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ctx.Err(); err != nil {
		t.Fatal(err)
	}
}
-- b/b_test.go --
package b

import (
	"context"
	"testing"
)

func TestB(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Fatalf("always fails, with %v", ctx.Err())
}
`

// testscope's fixes are proven, and --verify runs their tests all the
// same (running decides): a's is kept, b's, whose test fails before any
// rewrite, is not verified and left out.
func TestFixVerify(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, ownContexts)
	a, b := filepath.Join(dir, "a", "a_test.go"), filepath.Join(dir, "b", "b_test.go")
	oldA, _ := os.ReadFile(a)
	oldB, _ := os.ReadFile(b)

	// check --verify reports what fix --verify would keep, and writes nothing.
	code, stdout, stderr := run(t, "-C", dir, "check", "--json", "--verify", "--verify-count", "2", "--rules", "testscope", "./...")
	var findings []rewrite.Finding
	if err := json.Unmarshal([]byte(stdout), &findings); err != nil {
		t.Fatalf("--json: %v\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if code != 1 || len(findings) != 2 {
		t.Fatalf("exit %d, findings %+v, stderr:\n%s", code, findings, stderr)
	}
	if f := findings[0]; f.File != "a/a_test.go" || !f.Fixed || f.Unproven || !f.Verified || f.Revert != nil {
		t.Errorf("a: want fixed, proven, verified: %+v", f)
	}
	if f := findings[1]; f.File != "b/b_test.go" || f.Fixed || f.Revert == nil || f.Revert.Kind != revert.FailsBefore {
		t.Errorf("b: want held back, its test failing before: %+v", f)
	}
	if now, _ := os.ReadFile(a); string(now) != string(oldA) {
		t.Errorf("check --verify wrote a/a_test.go")
	}

	code, stdout, stderr = run(t, "-C", dir, "fix", "--verify", "--verify-count=2", "--rules=testscope", "./...")
	if stdout != "" || !strings.Contains(stderr, "unflake: kept a/a_test.go:") || !strings.Contains(stderr, "1 proven fix kept: their tests ran as every fix's do") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if now, _ := os.ReadFile(a); string(now) == string(oldA) {
		t.Errorf("a/a_test.go was not rewritten")
	}
	if now, _ := os.ReadFile(b); string(now) != string(oldB) {
		t.Errorf("b/b_test.go was rewritten, though its test fails before")
	}
}

func TestFixVerifyDiff(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, ownContexts)
	before := testmod.Snapshot(t, dir)
	code, diff, stderr := run(t, "-C", dir, "fix", "--diff", "--verify", "--verify-count=1", "--rules=testscope", "./a")
	if code != 1 || !strings.HasPrefix(diff, "--- a/a/a_test.go\n+++ b/a/a_test.go\n@@ ") {
		t.Fatalf("exit %d, diff:\n%s\nstderr:\n%s", code, diff, stderr)
	}
	if !strings.Contains(stderr, "1 proven fix kept: their tests ran as every fix's do") {
		t.Errorf("stderr:\n%s", stderr)
	}
	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v {
			t.Errorf("--diff --verify wrote %s", k)
		}
	}
}

// leakyWorker is a module whose test sleeps and leaves a worker goroutine
// blocked: wrapped in a bubble alone it dies of the leak ("deadlock: main
// bubble goroutine has exited but blocked goroutines remain"); with leak's
// t.Cleanup(w.Close) it passes.
const leakyWorker = `
-- go.mod --
module example.com/comp

go 1.25
-- worker.go --
package comp

import "sync/atomic"

// Worker counts the jobs sent to it until it is closed.
type Worker struct {
	jobs chan int
	n    atomic.Int64
}

// Start starts a worker.
func Start() *Worker {
	w := &Worker{jobs: make(chan int)}
	go func() {
		for range w.jobs {
			w.n.Add(1)
		}
	}()
	return w
}

// Do hands the worker a job.
func (w *Worker) Do() { w.jobs <- 1 }

// N is the number of jobs done.
func (w *Worker) N() int64 { return w.n.Load() }

// Close stops the worker.
func (w *Worker) Close() { close(w.jobs) }
-- worker_test.go --
package comp

import (
	"testing"
	"time"
)

func TestWorker(t *testing.T) {
	w := Start()
	w.Do()
	time.Sleep(100 * time.Millisecond)
	if w.N() != 1 {
		t.Fatalf("N = %d, want 1", w.N())
	}
}
`

// TestVerifyRetriesWithCompanions: with only the sleep rule, the bubble
// would fail verification alone (its worker is never closed) and pass
// with leak's fix, sleep's companion. A clock change is held back before
// any run since red-team batch 41 (rule.Unprovable), so no companion is
// tried for it: retrying cannot keep a fix no run may keep.
func TestVerifyRetriesWithCompanions(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, leakyWorker)
	code, diff, stderr := run(t, "-C", dir, "fix", "--diff", "--rules", "sleep", "--verify", "--verify-count", "1", "./...")
	if code != 0 || diff != "" {
		t.Fatalf("exit %d, want 0 (no diff)\n%s\n%s", code, diff, stderr)
	}
	if want := "sleep: time.Sleep(100ms) waits on the real clock; not fixed: reverted: TestWorker after the rewrite shows no strength: strength cannot be shown, so it is not run: clock change: "; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "with leak") || strings.Contains(stderr, "leak:") {
		t.Errorf("a companion was tried for a fix held back before any run:\n%s", stderr)
	}
}

// janitor's only sleep fix (a synctest wrap) is reverted: the goroutine
// the test starts never ends, which panics the bubble.
const janitor = `
-- go.mod --
module example.com/janitor

go 1.25
-- worker_test.go --
package worker

import (
	"testing"
	"time"
)

func janitor(every time.Duration) {
	go func() {
		for range time.Tick(every) {
		}
	}()
}

func TestJanitor(t *testing.T) {
	janitor(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
}
`

// A verified run whose every fix is held back changes no file and says
// so; a fix held back before any run (a clock change, rule.Unprovable)
// failed nothing, so --record-ignores writes no ignore line for it (the
// line is for a fix a test failed after: internal/verify's tests).
func TestFixVerifyOnlyReverts(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, janitor)
	before := testmod.Snapshot(t, dir)
	for _, args := range [][]string{
		{"fix", "--verify", "--verify-count=1", "--min-saving=0", "--rules=sleep", "./..."},
		{"fix", "--verify", "--record-ignores", "--verify-count=1", "--min-saving=0", "--rules=sleep", "./..."},
	} {
		code, stdout, stderr := run(t, append([]string{"-C", dir}, args...)...)
		if code != 0 || stdout != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr:\n%s", args, code, stdout, stderr)
		}
		if !strings.Contains(stderr, "worker_test.go:17:2: sleep: ") || !strings.Contains(stderr, "reverted: TestJanitor after the rewrite shows no strength: strength cannot be shown, so it is not run: clock change: ") ||
			!strings.Contains(stderr, "unflake: no file changed: verification reverted every fix it tried (1 fix)") || strings.Contains(stderr, "rewrote") {
			t.Errorf("%v: stderr:\n%s", args, stderr)
		}
		for k, v := range testmod.Snapshot(t, dir) {
			if before[k] != v {
				t.Errorf("%v: changed %s:\n%s", args, k, v)
			}
		}
	}
}
