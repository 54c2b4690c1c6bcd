package verify_test

import (
	"context"
	"go/ast"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// orderReason is the stub rule's rule.Hypothesis.ProbeFails.
const orderReason = "the steps depend on their order"

// together is a test rule shaped like spawn's: it rewrites inOrder(a, b)
// to together(a, b), a proven fix, whose form that must pass is
// reversed(a, b), the steps one after another, last first.
var together = &rule.Rule{
	Name:      "together",
	Doc:       "# together: a test rule\n\nA test rule.\n\n## Before\n\nx\n\n## After\n\ny\n",
	Prefilter: func(src []byte, _ rule.Values) bool { return strings.Contains(string(src), "inOrder(") },
	Run: func(pass *rule.Pass) error {
		for _, f := range pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if id, isID := call.Fun.(*ast.Ident); !isID || id.Name != "inOrder" {
					return true
				}
				rename := func(name string) func() error {
					return func() error {
						pass.Dst(call).(*dst.CallExpr).Fun.(*dst.Ident).Name = name
						return nil
					}
				}
				// Paths, not order: an order change is never proven
				// (rule.Unprovable), and the form that must pass is
				// about any proven fix.
				order := []rule.Change{{Kind: rule.Paths, What: "the steps run together", Unseen: true}}
				pass.Report(rule.Diagnostic{
					Pos: call.Pos(), End: call.End(),
					Message: "runs independent steps one after another",
					Fix: &rule.Fix{Changes: order, Message: "run them together", Apply: rename("together"),
						Hypothesis: &rule.Hypothesis{
							Probe:    &rule.Fix{Changes: order, Message: "run them last first", Apply: rename("reversed")},
							MustPass: true, ProbeFails: orderReason,
						}},
				})
				return true
			})
		}
		return nil
	},
}

// orderModule: TestApart's steps share nothing, TestChained's second step
// reads what the first one wrote.
const orderModule = `
-- go.mod --
module example.com/order

go 1.24
-- o_test.go --
package o

import "testing"

func inOrder(a, b func())  { a(); b() }
func together(a, b func()) { a(); b() }
func reversed(a, b func()) { b(); a() }

func TestApart(t *testing.T) {
	var x, y int
	inOrder(func() { x = 1 }, func() { y = 2 })
	if x != 1 || y != 2 {
		t.Fatal(x, y)
	}
}

func TestChained(t *testing.T) {
	var x, y int
	inOrder(func() { x = 1 }, func() { y = x + 1 })
	if y != 2 {
		t.Fatalf("y = %d", y)
	}
}
`

// A fix with a form that must pass is tried only when its tests pass
// every run with that form: TestApart's is kept, TestChained's is held
// back with the rule's reason and the failure, and not recorded.
func TestRunMustPass(t *testing.T) {
	testmod.Slow(t)
	dir := testmod.Write(t, orderModule)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{together}, Env: testmod.GoEnv(t)}
	res, v, err := verify.Run(context.Background(), cfg, verify.Options{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	for _, f := range res.Findings {
		switch f.Test {
		case "TestApart":
			if !f.Fixed || !f.Verified || f.Revert != nil {
				t.Errorf("TestApart: want fixed and verified: %+v (%+v)", f, f.Revert)
			}
		case "TestChained":
			if f.Fixed || f.Revert == nil || f.Revert.Kind != revert.FailsCheck || !strings.HasPrefix(f.Reason, orderReason+": TestChained failed") || !strings.Contains(f.Reason, "y = 1") {
				t.Errorf("TestChained: want held back, the reverse order failing: %+v (%+v)", f, f.Revert)
			}
		default:
			t.Errorf("unexpected finding %+v", f)
		}
	}
	held := 0
	for _, p := range v.Probed {
		if !p.MustPass {
			t.Errorf("probe %+v: want MustPass", p)
		}
		if p.Held() {
			held++
		}
	}
	if len(v.Probed) != 2 || held != 1 || v.Recorded != 0 {
		t.Errorf("probes %+v, %d held, %d recorded; want 2, 1 held, 0 recorded", v.Probed, held, v.Recorded)
	}
	if len(res.Changes) != 1 || strings.Count(string(res.Changes[0].New), "together(func") != 1 {
		t.Errorf("changes: %d", len(res.Changes))
	}
}

// Plain fix applies a proven fix with a form that must pass: only
// verification runs that form.
func TestMustPassPlain(t *testing.T) {
	dir := testmod.Write(t, orderModule)
	cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{together}, Env: testmod.GoEnv(t)}
	res, err := rewrite.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || strings.Count(string(res.Changes[0].New), "together(func") != 2 || strings.Contains(string(res.Changes[0].New), "reversed(func") {
		t.Fatalf("changes: %+v", res.Changes)
	}
}
