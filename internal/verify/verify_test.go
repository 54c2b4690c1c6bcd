package verify_test

import (
	"context"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// callTwo is a test rule with an unproven fix: it rewrites fn(1) to
// fn(2), which some tests notice and others do not.
func callTwo(fn string) *rule.Rule {
	return &rule.Rule{
		Name:      fn + "two",
		Doc:       "# " + fn + "two: a test rule\n\nA test rule.\n\n## Before\n\nx\n\n## After\n\ny\n",
		Prefilter: func(src []byte, _ rule.Values) bool { return strings.Contains(string(src), fn+"(1)") },
		Run: func(pass *rule.Pass) error {
			for _, f := range pass.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						return true
					}
					id, ok := call.Fun.(*ast.Ident)
					lit, ok2 := call.Args[0].(*ast.BasicLit)
					if !ok || !ok2 || id.Name != fn || lit.Value != "1" {
						return true
					}
					pass.Report(rule.Diagnostic{
						Pos: call.Pos(), End: call.End(),
						Message: "calls " + fn + " with one",
						Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}},
							Message:    "call it with two",
							Hypothesis: &rule.Hypothesis{Reason: "the analysis cannot tell whether the value matters"},
							Apply: func() error {
								pass.Dst(call).(*dst.CallExpr).Args[0] = &dst.BasicLit{Kind: token.INT, Value: "2"}
								return nil
							},
						},
					})
					return true
				})
			}
			return nil
		},
	}
}

// verifyModule holds one case of verification per test. Each package is
// built once before and once (plus once under -race) per round after the
// rewrite, so the cases share packages.
//
//   - m: a test that notices the value (TestBad), one that fails before
//     any rewrite (TestBroken), one that does not care and counts its runs
//     (TestGood).
//   - p: a test that panics after the rewrite, one that leaks a goroutine
//     from a synctest bubble (which kills the whole binary), a fine one.
//   - h: a fix in a helper outside any test, which every test of h covers,
//     benchmarks included.
//   - s: a test that skips without an environment variable; one that
//     prints a log line and then fails; one whose subtest vanishes; one
//     with two fixes of two rules where only one breaks it; one that fails
//     on every fifth run after the rewrite (a counter, never timing); one
//     that fails on one CPU before the rewrite as after it (flaky on its own).
//   - w: a fix that passes alone and breaks another test of the package
//     in the package's whole run, beside a harmless one.
const verifyModule = `
-- go.mod --
module example.com/m

go 1.25
-- m_test.go --
package m

import (
	"os"
	"path/filepath"
	"testing"
)

func check(n int) int { return n }

func TestBad(t *testing.T) {
	if got := check(1); got != 1 {
		t.Fatalf("check = %d, want 1", got)
	}
}

func TestBroken(t *testing.T) {
	check(1)
	t.Fatal("broken before")
}

// TestGood counts its runs in the directory $UNFLAKE_RUNS names.
func TestGood(t *testing.T) {
	f, err := os.OpenFile(filepath.Join(os.Getenv("UNFLAKE_RUNS"), "good"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("x")
	f.Close()
	t.Run("sub", func(t *testing.T) { check(1) })
}
-- p/p_test.go --
package p

import (
	"testing"
	"testing/synctest"
)

func check(n int) int { return n }

func TestPanics(t *testing.T) {
	if check(1) == 2 {
		panic("two is too many")
	}
}

func TestLeaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if check(1) == 2 {
			go func() { select {} }()
		}
	})
}

func TestFine(t *testing.T) { check(1) }
-- h/h_test.go --
package h

import "testing"

func check(n int) int { return n }

func helper() int { return check(1) }

func TestH1(t *testing.T) { _ = helper() }

func TestH2(t *testing.T) {}

func BenchmarkH(b *testing.B) {
	for range b.N {
		_ = helper()
	}
}
-- s/s_test.go --
package s

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func check(n int) int { return n }

func other(n int) int { return n }

func TestSkips(t *testing.T) {
	if os.Getenv("UNFLAKE_SLOW") == "" {
		t.Skip("set UNFLAKE_SLOW to run")
	}
	check(1)
}

func TestLogs(t *testing.T) {
	fmt.Println("[DEBUG] accepted connection: conn.go:12: 127.0.0.1:4242")
	if check(1) != 1 {
		t.Error("expected an error due to the streams being closed")
	}
}

func TestVanish(t *testing.T) {
	if check(1) == 1 {
		t.Run("sub", func(t *testing.T) {})
	}
}

func TestTwo(t *testing.T) {
	a := check(1)
	if b := other(1); b != 1 {
		t.Fatalf("other = %d, want 1", b)
	}
	_ = a
}

// TestFlaky fails on every fifth run after the rewrite. Each run claims
// the next free number by creating a file exclusively, so concurrent runs
// never share one.
func TestFlaky(t *testing.T) {
	if check(1) == 1 {
		return
	}
	n := 1
	for {
		f, err := os.OpenFile(filepath.Join(os.Getenv("UNFLAKE_RUNS"), "flaky-"+strconv.Itoa(n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			break
		}
		n++
	}
	if n%5 == 0 {
		t.Fatalf("run %d fails", n)
	}
}
-- s/load_test.go --
package s

import (
	"runtime"
	"testing"
)

// TestLoadFlaky fails on one CPU, with or without the rewrite: it is
// flaky under load on its own, and no fix is to blame.
func TestLoadFlaky(t *testing.T) {
	check(1)
	if runtime.GOMAXPROCS(0) == 1 {
		t.Fatal("too slow on one CPU")
	}
}
-- s/clash_test.go --
package s

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// claim numbers the runs of a test after the rewrite: each run creates
// the next free numbered file exclusively, so concurrent runs never
// share a number.
func claim(name string) int {
	for n := 1; ; n++ {
		f, err := os.OpenFile(filepath.Join(os.Getenv("UNFLAKE_RUNS"), name+"-"+strconv.Itoa(n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return n
		}
	}
}

// TestClash binds a fixed socket path in its second and third runs after
// the rewrite and never releases it, as two parallel runs of a test that
// binds a fixed address do: whichever binds second fails with "address
// already in use". Alone, the runs after them pass.
func TestClash(t *testing.T) {
	if check(1) == 1 {
		return
	}
	if n := claim("clash"); n == 2 || n == 3 {
		if _, err := net.Listen("unix", filepath.Join(os.Getenv("UNFLAKE_RUNS"), "clash.sock")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClashAlways binds a fixed socket path from its second run after
// the rewrite on and never releases it: every later run clashes, alone
// too.
func TestClashAlways(t *testing.T) {
	if check(1) == 1 {
		return
	}
	if claim("always") >= 2 {
		if _, err := net.Listen("unix", filepath.Join(os.Getenv("UNFLAKE_RUNS"), "always.sock")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLogsAround logs before and after its failing check.
func TestLogsAround(t *testing.T) {
	t.Logf("before the check")
	if check(1) != 1 {
		t.Errorf("check is not one")
	}
	t.Logf("after the check")
}

// TestBeforeClash fails its first run before the rewrite, as a test that
// clashed with another test of its package over a port does; alone, it
// passes.
func TestBeforeClash(t *testing.T) {
	if check(1) == 1 && claim("before") == 1 {
		t.Fatal("listen tcp 127.0.0.1:8080: bind: address already in use")
	}
}
-- w/w_test.go --
package w

import "testing"

var state = 1

func check(n int) int { return n }

func TestA(t *testing.T) { state = check(1) }

func TestB(t *testing.T) {
	if state != 1 {
		t.Fatalf("state = %d, left by TestA", state)
	}
}

func TestC(t *testing.T) { check(1) }
`

func TestRun(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, verifyModule)
	before := testmod.Snapshot(t, dir)
	counter := t.TempDir()
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{callTwo("check"), callTwo("other")},
		Env: testmod.GoEnv(t, "UNFLAKE_RUNS="+counter, "UNFLAKE_SLOW=", "GOMAXPROCS=2")}
	var progress []int
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 6, RecordIgnores: true, Progress: func(p verify.Progress) { progress = append(progress, p.Done) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if after := testmod.Snapshot(t, dir); !equalMaps(before, after) {
		t.Errorf("verification touched the working tree")
	}
	if len(progress) == 0 {
		t.Errorf("progress was never reported")
	}
	// TestGood ran once before the rewrite (with TestBad and TestBroken,
	// which failed there and ran alone); in the first round once beside
	// TestBad (which failed in that run: it was settled alone, and
	// TestGood ran again without it), then six times; six times in the
	// second round (TestBad's revert changed the package); and once
	// after and once before in the package's whole run (the one before
	// runs only because the one after failed: TestBroken fails in both).
	// The runs before are not repeated, since the working tree does not
	// change.
	if runs, _ := os.ReadFile(filepath.Join(counter, "good")); len(runs) != 16 {
		t.Errorf("TestGood ran %d times, want 16", len(runs))
	}

	got := map[string]rewrite.Finding{}
	for _, f := range res.Findings {
		got[filepath.Base(filepath.Dir(f.File))+" "+f.Rule+" "+f.Test] = f
	}
	base := filepath.Base(dir)
	for _, tc := range []struct {
		key    string
		fixed  bool
		kind   revert.RevertKind
		reason string // for a finding not fixed
	}{
		{base + " checktwo TestGood/sub", true, "", ""},
		{base + " checktwo TestBad", false, revert.FailsAfter, "reverted: TestBad failed after the rewrite: m_test.go:13: check = 2, want 1"},
		{base + " checktwo TestBroken", false, revert.FailsBefore, "not verified: TestBroken fails before the rewrite: m_test.go:19: broken before"},
		{"p checktwo TestPanics", false, revert.Panics, "reverted: TestPanics panicked after the rewrite: two is too many"},
		{"p checktwo TestLeaks", false, revert.Panics, "reverted: TestLeaks panicked after the rewrite: deadlock: main bubble goroutine has exited but blocked goroutines remain"},
		{"p checktwo TestFine", true, "", ""},
		{"h checktwo helper", true, "", ""},
		{"s checktwo TestSkips", false, revert.Skips, "not verified: the test skips (s_test.go:17: set UNFLAKE_SLOW to run)"},
		{"s checktwo TestLogs", false, revert.FailsAfter, "reverted: TestLogs failed after the rewrite: s_test.go:25: expected an error due to the streams being closed"},
		{"s checktwo TestVanish", false, revert.Vanished, "reverted: TestVanish after the rewrite: TestVanish/sub passed before the rewrite and did not run after it"},
		{"s checktwo TestTwo", true, "", ""},
		{"s othertwo TestTwo", false, revert.FailsAfter, "reverted: TestTwo failed after the rewrite: s_test.go:38: other = 2, want 1"},
		{"s checktwo TestFlaky", false, revert.FailsAfter, ""},
		{"s checktwo TestClash", true, "", ""},
		{"s checktwo TestBeforeClash", true, "", ""},
		{"s checktwo TestClashAlways", false, revert.Clash, ""},
		{"s checktwo TestLogsAround", false, revert.FailsAfter, "reverted: TestLogsAround failed after the rewrite: clash_test.go:57: check is not one"},
		{"s checktwo TestLoadFlaky", false, revert.FlakyBefore, "not verified: TestLoadFlaky is flaky without the rewrite (the run that failed after it fails before it too): load_test.go:13: too slow on one CPU"},
		{"w checktwo TestA", false, revert.PackageRun, "reverted: TestB failed in the package's whole run after the rewrite: w_test.go:13: state = 2, left by TestA"},
		{"w checktwo TestC", true, "", ""},
	} {
		f, ok := got[tc.key]
		switch {
		case !ok:
			t.Errorf("%s: no finding", tc.key)
		case tc.fixed && (!f.Fixed || !f.Unproven || !f.Verified || f.Revert != nil):
			t.Errorf("%s: want fixed, unproven and verified: %+v", tc.key, f)
		case !tc.fixed && (f.Fixed || f.Verified || f.Revert == nil || f.Revert.Kind != tc.kind):
			t.Errorf("%s: want not fixed, held back as %s: %+v (%+v)", tc.key, tc.kind, f, f.Revert)
		case !tc.fixed && tc.reason != "" && f.Reason != tc.reason:
			t.Errorf("%s: reason\n%s\nwant\n%s", tc.key, f.Reason, tc.reason)
		}
	}
	// TestFlaky passes alone twice, then fails in its runs one after
	// another, alone: on a fifth run.
	if f := got["s checktwo TestFlaky"]; !regexp.MustCompile(`^reverted: TestFlaky failed after the rewrite: s_test.go:\d+: run \d*[05] fails( \(in a run under -race\))?$`).MatchString(f.Reason) {
		t.Errorf("TestFlaky: %s", f.Reason)
	}
	if f := got["s checktwo TestClashAlways"]; !strings.HasPrefix(f.Reason, "not verified: TestClashAlways failed after the rewrite on a resource clash") || !strings.Contains(f.Reason, "always.sock: bind: address already in use") {
		t.Errorf("TestClashAlways: %s", f.Reason)
	}
	if len(got) != 20 {
		t.Errorf("got %d findings, want 20: %+v", len(got), res.Findings)
	}
	// The helper's fix ran in every test of h, each of them run after
	// the rewrite: it counts their runs, not a test named "helper"'s.
	if n := v.RunsOf(got["h checktwo helper"]); n < 2 {
		t.Errorf("helper: RunsOf = %d, want the runs of h's tests", n)
	}

	// The kept fixes are in the changes; the reverted ones are not, and
	// those a test failed after are recorded at their site.
	files := map[string]string{}
	for _, c := range res.Changes {
		files[filepath.Base(c.Path)] = string(c.New)
	}
	for name, want := range map[string][]string{
		"m_test.go": {
			"\t//unflake:ignore checktwo reverted by unflake fix --verify: TestBad failed after the rewrite: m_test.go:13: check = 2, want 1\n\tif got := check(1); got != 1 {",
			"func TestBroken(t *testing.T) {\n\tcheck(1)\n",
			`t.Run("sub", func(t *testing.T) { check(2) })`,
		},
		"p_test.go": {"func TestFine(t *testing.T) { check(2) }", "\t//unflake:ignore checktwo reverted by unflake fix --verify: TestPanics panicked after the rewrite: two is too many\n\tif check(1) == 2 {"},
		"h_test.go": {"return check(2)"},
		"s_test.go": {
			"\t\tt.Skip(\"set UNFLAKE_SLOW to run\")\n\t}\n\tcheck(1)\n",
			"\ta := check(2)\n\t//unflake:ignore othertwo reverted by unflake fix --verify: TestTwo failed after the rewrite: s_test.go:38: other = 2, want 1\n\tif b := other(1); b != 1 {",
		},
		"w_test.go": {"func TestC(t *testing.T) { check(2) }", "//unflake:ignore checktwo reverted by unflake fix --verify: TestB failed in the package's whole run after the rewrite: w_test.go:13: state = 2, left by TestA\nfunc TestA"},
	} {
		for _, w := range want {
			if !strings.Contains(files[name], w) {
				t.Errorf("%s lacks %q:\n%s", name, w, files[name])
			}
		}
	}
	t.Logf("s_test.go after:\n%s", files["s_test.go"])
	if v.Recorded != 9 {
		t.Errorf("recorded %d reverted fixes, want 9", v.Recorded)
	}
	if strings.Contains(files["clash_test.go"], "unflake:ignore checktwo reverted by unflake fix --verify: TestClash") {
		t.Errorf("a clash is recorded:\n%s", files["clash_test.go"])
	}

	var runs []string
	for _, r := range v.Tests {
		t.Logf("%+v %+v", r, r.Why)
		// TestClash failed beside others and passed alone (in the first
		// round; the second verified it again, package s changed). The
		// failed run may be the one under -race, which the detail says.
		if (r.Name == "TestClash") != strings.Contains(r.Alone, "clash.sock: bind: address already in use") {
			t.Errorf("%s: failed beside others with %q", r.Name, r.Alone)
		}
		s := filepath.Base(r.Dir) + " " + r.Name
		if r.Kept {
			s += " kept"
		}
		runs = append(runs, s)
	}
	want := []string{base + " TestBad", base + " TestBroken", base + " TestGood kept",
		"h TestH1 kept", "h TestH2 kept",
		"p TestFine kept", "p TestLeaks", "p TestPanics",
		"s TestBeforeClash kept", "s TestClash kept", "s TestClashAlways", "s TestFlaky", "s TestLoadFlaky", "s TestLogs", "s TestLogsAround", "s TestSkips", "s TestTwo kept", "s TestVanish",
		"w TestA", "w TestC kept"}
	if strings.Join(runs, "\n") != strings.Join(want, "\n") {
		t.Errorf("test runs:\n%s\nwant:\n%s", strings.Join(runs, "\n"), strings.Join(want, "\n"))
	}
	if v.Rounds != 2 {
		t.Errorf("rounds %d, want 2", v.Rounds)
	}

	// A later plain run does not propose the recorded fixes again.
	for _, c := range res.Changes {
		if err := c.Write(); err != nil {
			t.Fatal(err)
		}
	}
	again, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: cfg.Rules})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range again.Findings {
		if f.Revert == nil && (f.Test == "TestBad" || f.Test == "TestPanics" || f.Test == "TestA" || f.Rule == "othertwo") {
			t.Errorf("proposed again: %+v", f)
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
