package rewrite_test

import (
	"bytes"
	"go/ast"
	"go/token"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// wait is a test rule with an unproven fix that has a probe: it rewrites
// wait(1) to wait(2), and its probe to wait(0). Where the call is
// wait(5), the fix has no probe.
var wait = testRule("wait", func(src []byte) bool { return bytes.Contains(src, []byte("wait(")) }, func(pass *rule.Pass) {
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			lit, ok2 := call.Args[0].(*ast.BasicLit)
			if !ok || !ok2 || id.Name != "wait" || (lit.Value != "1" && lit.Value != "5") {
				return true
			}
			set := func(v string) func() error {
				return func() error {
					pass.Dst(call).(*dst.CallExpr).Args[0] = &dst.BasicLit{Kind: token.INT, Value: v}
					return nil
				}
			}
			fix := &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}}, Message: "wait for two", Hypothesis: &rule.Hypothesis{Reason: "only running tells"}, Apply: set("2")}
			if lit.Value == "1" {
				fix.Hypothesis.Probe = &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}}, Message: "do not wait", Apply: set("0")}
				fix.Hypothesis.ProbeHolds = "the checks hold without waiting"
			}
			pass.Report(rule.Diagnostic{Pos: call.Pos(), End: call.End(), Message: "waits", Fix: fix})
			return true
		})
	}
})

const probeModule = `
-- go.mod --
module example.com/p

go 1.24
-- p_test.go --
package p

import "testing"

func wait(n int) int { return n }

func TestP(t *testing.T) {
	_ = wait(1)
	_ = wait(5)
}
`

// A Decision with Probe applies the fix's probe where it has one and
// holds back a fix without one; other decisions and plain runs never
// apply a probe.
func TestDecideProbe(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, probeModule)
	run := func(decide func(rewrite.Site) rewrite.Decision) *rewrite.Result {
		t.Helper()
		res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{wait}, Decide: decide, Env: testmod.GoEnv(t)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Errors) > 0 {
			t.Fatalf("errors: %v", res.Errors)
		}
		return res
	}
	src := func(res *rewrite.Result) string {
		if len(res.Changes) != 1 {
			t.Fatalf("got %d changes, want 1", len(res.Changes))
		}
		return string(res.Changes[0].New)
	}

	res := run(func(rewrite.Site) rewrite.Decision { return rewrite.Decision{Probe: true} })
	if s := src(res); !strings.Contains(s, "_ = wait(0)\n\t_ = wait(5)") {
		t.Errorf("probe: want wait(0) and wait(5) left alone:\n%s", s)
	}
	for _, f := range res.Findings {
		switch {
		case f.Line == 8 && (!f.Fixed || f.Fix != "do not wait" || f.ProbeHolds != "the checks hold without waiting" || f.Variant != 0):
			t.Errorf("probe: the fix with a probe: %+v", f)
		case f.Line == 9 && (f.Fixed || f.Revert == nil || f.Revert.Kind != revert.NoVariant || f.ProbeHolds != ""):
			t.Errorf("probe: the fix without a probe: %+v", f)
		}
	}

	res = run(func(rewrite.Site) rewrite.Decision { return rewrite.Decision{} })
	if s := src(res); !strings.Contains(s, "_ = wait(2)\n\t_ = wait(2)") {
		t.Errorf("fix: want both fixes:\n%s", s)
	}

	if res := run(nil); len(res.Changes) != 0 {
		t.Errorf("plain run changed %s", res.Changes[0].Path)
	}
}
