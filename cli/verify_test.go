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
// fails verification; the engine retries the test with leak's fixes (sleep's
// companion), and says so. The pair passes, but is held back: the
// original fails on none of the mutants aimed at the clock (its code
// slowed by work the bubble does not see passes the original too), and
// the original never calls the Close leak adds, so no mutant shows the
// strength of either unproven fix.
func TestVerifyRetriesWithCompanions(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, leakyWorker)
	code, diff, stderr := run(t, "-C", dir, "fix", "--diff", "--rules", "sleep", "--verify", "--verify-count", "1", "./...")
	if code != 0 || diff != "" {
		t.Fatalf("exit %d, want 0 (no diff)\n%s\n%s", code, diff, stderr)
	}
	for _, want := range []string{
		"with leak, 0 sleep fixes kept in . (1 test retried)",
		// The cleanup, an ownership change whose Close may wait on what
		// a bug wedges, is never run: the bubble alone deadlocks.
		"sleep: time.Sleep(100ms) waits on the real clock; not fixed: reverted: TestWorker panicked after the rewrite: deadlock: main bubble goroutine has exited but blocked goroutines remain",
		"leak: w (*Worker) is never closed; it outlives the test; not fixed: reverted: TestWorker after the rewrite shows no strength: no mutant is aimed at its ownership change",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
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

// A verified run whose every fix is reverted changes no file and says
// so: the reverted fix is remembered outside the source, not written as
// an ignore line. --record-ignores writes the line.
func TestFixVerifyOnlyReverts(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, janitor)
	before := testmod.Snapshot(t, dir)
	code, stdout, stderr := run(t, "-C", dir, "fix", "--verify", "--verify-count=1", "--min-saving=0", "--rules=sleep", "./...")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "worker_test.go:17:2: sleep: ") || !strings.Contains(stderr, "reverted: TestJanitor panicked after the rewrite") ||
		!strings.Contains(stderr, "unflake: no file changed: verification reverted every fix it tried (1 fix)") || strings.Contains(stderr, "rewrote") {
		t.Errorf("stderr:\n%s", stderr)
	}
	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v {
			t.Errorf("changed %s:\n%s", k, v)
		}
	}

	code, _, stderr = run(t, "-C", dir, "fix", "--verify", "--record-ignores", "--verify-count=1", "--min-saving=0", "--rules=sleep", "./...")
	src, _ := os.ReadFile(filepath.Join(dir, "worker_test.go"))
	if code != 0 || !strings.Contains(string(src), "\t//unflake:ignore sleep reverted by unflake fix --verify: TestJanitor panicked after the rewrite") {
		t.Errorf("exit %d, worker_test.go:\n%s\nstderr:\n%s", code, src, stderr)
	}
}
