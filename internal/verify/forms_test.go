package verify_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// waitFor is a test rule whose fix has ordered forms, as the sleep rule's
// wait for waiters does: it rewrites waiters(0) to waiters(1), then (2),
// then (3), and only verification can tell which count is right.
var waitFor = &rule.Rule{
	Name:      "waitfor",
	Doc:       "# waitfor: a test rule\n\nA test rule.\n\n## Before\n\nx\n\n## After\n\ny\n",
	Prefilter: func(src []byte, _ rule.Values) bool { return strings.Contains(string(src), "waiters(0)") },
	Run: func(pass *rule.Pass) error {
		for _, f := range pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				id, ok := call.Fun.(*ast.Ident)
				lit, ok2 := call.Args[0].(*ast.BasicLit)
				if !ok || !ok2 || id.Name != "waiters" || lit.Value != "0" {
					return true
				}
				var forms []*rule.Fix
				for n := 1; n <= 3; n++ {
					forms = append(forms, &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}},
						Message:    fmt.Sprintf("wait for %d", n),
						Hypothesis: &rule.Hypothesis{Reason: "how many goroutines wait is known only by running the test"},
						Apply: func() error {
							pass.Dst(call).(*dst.CallExpr).Args[0] = &dst.BasicLit{Kind: token.INT, Value: fmt.Sprint(n)}
							return nil
						},
					})
				}
				forms[0].Hypothesis.Alternatives = forms[1:]
				pass.Report(rule.Diagnostic{Pos: call.Pos(), End: call.End(), Message: "waits for no goroutine", Fix: forms[0]})
				return true
			})
		}
		return nil
	},
}

// formsModule: TestTwo passes with no wait and with a wait for two
// goroutines, and fails with a wait for one (the advance comes before
// the second goroutine reaches the clock); no form fits TestFour.
const formsModule = `
-- go.mod --
module example.com/forms

go 1.24
-- forms_test.go --
package forms

import "testing"

func waiters(n int) int { return n }

func TestTwo(t *testing.T) {
	if n := waiters(0); n != 0 && n != 2 {
		t.Fatalf("waited for %d goroutines; two reach the clock", n)
	}
}

func TestFour(t *testing.T) {
	if n := waiters(0); n != 0 && n != 4 {
		t.Fatalf("waited for %d goroutines; four reach the clock", n)
	}
}
`

// Verification tries a fix's forms in order and keeps the first that
// passes every run; it holds the fix back, and records it at its site,
// only when every form failed.
func TestRunTriesForms(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, formsModule)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{waitFor}, Env: testmod.GoEnv(t)}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 2, RecordIgnores: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	got := map[string]rewrite.Finding{}
	for _, f := range res.Findings {
		got[f.Test] = f
	}
	if f := got["TestTwo"]; !f.Fixed || !f.Verified || f.Variant != 1 || f.Variants != 3 || f.Fix != "wait for 2" {
		t.Errorf("TestTwo: want its second form kept and verified: %+v", f)
	}
	f := got["TestFour"]
	if f.Fixed || f.Revert == nil || f.Revert.Kind != revert.FailsAfter || f.Revert.Forms != 3 {
		t.Errorf("TestFour: want held back after all three forms failed: %+v (%+v)", f, f.Revert)
	} else if want := "reverted: each of the fix's 3 forms failed; the last: TestFour failed after the rewrite: forms_test.go:15: waited for 3 goroutines; four reach the clock"; f.Reason != want {
		t.Errorf("TestFour: reason\n%s\nwant\n%s", f.Reason, want)
	}

	// Forms tried and given up: TestTwo's first, TestFour's first two.
	var retried []string
	for _, h := range v.Retried {
		retried = append(retried, fmt.Sprintf("%s/%d", h.Site.Test, h.Variant))
	}
	if g, want := strings.Join(retried, " "), "TestFour/0 TestTwo/0 TestFour/1"; g != want && g != "TestTwo/0 TestFour/0 TestFour/1" {
		t.Errorf("retried %q, want %q", g, want)
	}
	if len(v.Reverts) != 1 || v.Reverts[0].Site.Test != "TestFour" || v.Reverts[0].Variant != 2 {
		t.Errorf("reverts: %+v", v.Reverts)
	}

	// The file gets TestTwo's second form and, at TestFour's site, the
	// record that no form passed.
	if len(res.Changes) != 1 {
		t.Fatalf("got %d changes, want 1", len(res.Changes))
	}
	src := string(res.Changes[0].New)
	if !strings.Contains(src, "n := waiters(2); n != 0 && n != 2") || !strings.Contains(src, "n := waiters(0); n != 0 && n != 4") {
		t.Errorf("rewritten file:\n%s", src)
	}
	if !strings.Contains(src, "\t//unflake:ignore waitfor reverted by unflake fix --verify: TestFour failed after the rewrite") {
		t.Errorf("TestFour's reverted fix is not recorded:\n%s", src)
	}
	if filepath.Base(res.Changes[0].Path) != "forms_test.go" {
		t.Errorf("changed %s", res.Changes[0].Path)
	}
}
