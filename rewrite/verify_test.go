package rewrite_test

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"

	"github.com/dave/dst"

	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// checkTwo is a test rule with an unproven fix: it rewrites check(1) to
// check(2), which some tests notice and others do not.
func checkTwo() *rule.Rule {
	return testRule("checktwo", func(src []byte) bool { return strings.Contains(string(src), "check(1)") }, func(pass *rule.Pass) {
		for _, f := range pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				id, ok := call.Fun.(*ast.Ident)
				lit, ok2 := call.Args[0].(*ast.BasicLit)
				if !ok || !ok2 || id.Name != "check" || lit.Value != "1" {
					return true
				}
				pass.Report(rule.Diagnostic{
					Pos: call.Pos(), End: call.End(),
					Message: "checks one",
					Fix: &rule.Fix{
						Message:  "check two",
						Unproven: "the analysis cannot tell whether the value matters",
						Apply: func() {
							pass.Dst(call).(*dst.CallExpr).Args[0] = &dst.BasicLit{Kind: token.INT, Value: "2"}
						},
					},
				})
				return true
			})
		}
	})
}

// verifyModule has, in package m, a test that does not care about the
// value, one that does, and one that fails before any rewrite; in package
// p, a test that panics after the rewrite, one that leaks a goroutine from
// a synctest bubble (which kills the whole test binary) and one that does
// not care; in package h, a fix in a helper outside any test, which every test of h
// covers, benchmarks included.
const verifyModule = `
-- go.mod --
module example.com/m

go 1.25
-- m_test.go --
package m

import (
	"os"
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

// TestGood counts its runs in the file $UNFLAKE_RUNS names.
func TestGood(t *testing.T) {
	f, err := os.OpenFile(os.Getenv("UNFLAKE_RUNS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
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
`

func TestRunVerified(t *testing.T) {
	dir := testmod.Write(t, verifyModule)
	before := testmod.Snapshot(t, dir)
	counter := filepath.Join(t.TempDir(), "runs")
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{checkTwo()}, Env: append(os.Environ(), "UNFLAKE_RUNS="+counter)}
	var progress []int
	res, v, err := rewrite.RunVerified(cfg, rewrite.VerifyOptions{Count: 2, Progress: func(done, total int) { progress = append(progress, done) }})
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
	// TestGood ran twice before the rewrite, and twice after it in each of
	// two rounds (TestBad's revert changed the package): the runs before
	// are not repeated, since the working tree does not change.
	if runs, _ := os.ReadFile(counter); string(runs) != "xxxxxx" {
		t.Errorf("TestGood ran %d times, want 6", len(runs))
	}

	got := map[string]rewrite.Finding{}
	for _, f := range res.Findings {
		got[filepath.Base(filepath.Dir(f.File))+" "+f.Test] = f
	}
	base := filepath.Base(dir)
	for _, tc := range []struct {
		key    string
		fixed  bool
		reason string // for a finding not fixed
	}{
		{base + " TestGood/sub", true, ""},
		{base + " TestBad", false, "reverted: TestBad failed after the rewrite: m_test.go:12: check = 2, want 1"},
		{base + " TestBroken", false, "reverted: TestBroken fails before the rewrite: m_test.go:18: broken before"},
		{"p TestPanics", false, "reverted: TestPanics panicked after the rewrite: two is too many"},
		{"p TestLeaks", false, "reverted: TestLeaks panicked after the rewrite: deadlock: main bubble goroutine has exited but blocked goroutines remain"},
		{"p TestFine", true, ""},
		{"h helper", true, ""},
	} {
		f, ok := got[tc.key]
		switch {
		case !ok:
			t.Errorf("%s: no finding", tc.key)
		case tc.fixed && (!f.Fixed || !f.Unproven || !f.Verified || f.BeforeMs < 0 || f.AfterMs < 0):
			t.Errorf("%s: want fixed, unproven and verified: %+v", tc.key, f)
		case !tc.fixed && (f.Fixed || f.Verified || f.Reason != tc.reason):
			t.Errorf("%s: want not fixed with reason %q: %+v", tc.key, tc.reason, f)
		}
	}
	if len(got) != 7 {
		t.Errorf("got %d findings, want 7: %+v", len(got), res.Findings)
	}

	// The kept fixes are in the changes; the reverted ones are not.
	if len(res.Changes) != 3 {
		t.Fatalf("got %d changes, want 3", len(res.Changes))
	}
	for _, c := range res.Changes {
		s := string(c.New)
		switch filepath.Base(c.Path) {
		case "m_test.go":
			if strings.Count(s, "check(2)") != 1 || !strings.Contains(s, `t.Run("sub", func(t *testing.T) { check(2) })`) {
				t.Errorf("m_test.go:\n%s", s)
			}
		case "p_test.go":
			if !strings.Contains(s, "func TestFine(t *testing.T) { check(2) }") || strings.Count(s, "if check(1) == 2") != 2 {
				t.Errorf("p_test.go:\n%s", s)
			}
		case "h_test.go":
			if !strings.Contains(s, "return check(2)") {
				t.Errorf("h_test.go:\n%s", s)
			}
		}
	}

	var runs []string
	for _, r := range v.Tests {
		t.Logf("%+v", r)
		s := filepath.Base(r.Dir) + " " + r.Name
		if r.Kept {
			s += " kept"
		}
		runs = append(runs, s)
	}
	want := []string{base + " TestBad", base + " TestBroken", base + " TestGood kept", "h BenchmarkH kept", "h TestH1 kept", "h TestH2 kept", "p TestFine kept", "p TestLeaks", "p TestPanics"}
	if strings.Join(runs, "\n") != strings.Join(want, "\n") {
		t.Errorf("test runs:\n%s\nwant:\n%s", strings.Join(runs, "\n"), strings.Join(want, "\n"))
	}
	if v.Rounds != 2 || len(v.Reverts) != 4 {
		t.Errorf("rounds %d, reverts %+v: want 2 rounds, 4 reverts", v.Rounds, v.Reverts)
	}

	// Writing is the caller's choice, and still works.
	for _, c := range res.Changes {
		if err := c.Write(); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "h", "h_test.go")); !strings.Contains(string(b), "return check(2)") {
		t.Errorf("h_test.go not written")
	}
}

func TestUnprovenFixNeedsVerify(t *testing.T) {
	dir := testmod.Write(t, verifyModule)
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./p"}, Rules: []*rule.Rule{checkTwo()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 || len(res.Findings) != 3 {
		t.Fatalf("changes %d, findings %+v", len(res.Changes), res.Findings)
	}
	for _, f := range res.Findings {
		if f.Fixed || f.Unproven || f.Reason != "the analysis cannot tell whether the value matters (fix --verify can try it)" {
			t.Errorf("finding %+v: want not fixed, with the rule's reason", f)
		}
	}
}

func TestVerifyBuildFailure(t *testing.T) {
	// Verify does not type-check: a change that does not compile has
	// every fix of its package reverted.
	dir := testmod.Write(t, verifyModule)
	path := filepath.Join(dir, "p", "p_test.go")
	src, _ := os.ReadFile(path)
	res := &rewrite.Result{
		Changes:  []rewrite.Change{{Path: path, Old: src, New: append(src, "\nfunc broken() { undefined() }\n"...), Mode: 0o644}},
		Findings: []rewrite.Finding{{Rule: "checktwo", Test: "TestFine", File: path, Fixed: true}},
	}
	v, err := rewrite.Verify(&rewrite.Config{Dir: dir}, res, rewrite.VerifyOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Reverts) != 1 || v.Reverts[0].Rule != "checktwo" || v.Reverts[0].Test != "TestFine" ||
		!strings.HasPrefix(v.Reverts[0].Reason, "the tests do not build after the rewrite: ") || !strings.Contains(v.Reverts[0].Reason, "undefined: undefined") {
		t.Errorf("reverts: %+v", v.Reverts)
	}
	if len(v.Tests) != 1 || v.Tests[0].Kept {
		t.Errorf("tests: %+v", v.Tests)
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
