package rewrite_test

import (
	"fmt"
	"go/ast"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// twoPackages is a module whose packages a and b each sleep in a test.
const twoPackages = `
-- go.mod --
module example.com/m

go 1.24
-- a/a_test.go --
package a

import (
	"testing"
	"time"
)

func TestA(t *testing.T) { time.Sleep(1) }
-- b/b_test.go --
package b

import (
	"testing"
	"time"
)

func TestB(t *testing.T) { time.Sleep(2) }
`

// inB reports whether the pass is on package b.
func inB(pass *rule.Pass) bool { return strings.HasSuffix(pass.Pkg.Path(), "/b") }

// A panic of a rule, of an analysis it requires, or of a fix's Apply on
// one package is an internal error on that package, naming the rule, the
// package and the frame that panicked: the other package is still
// analysed and fixed.
func TestPanicIsContained(t *testing.T) {
	t.Parallel()
	var nilMap map[string][]int
	panicky := &rule.Analysis{Name: "panicky", Doc: "panics on b", Run: func(pass *rule.Pass) (any, error) {
		if inB(pass) {
			return nilMap["x"][1], nil // index out of range
		}
		return 0, nil
	}}
	cases := []struct {
		name string
		rule func() *rule.Rule
	}{
		{"rule", func() *rule.Rule {
			z := sleepZero("inrule", zero)
			run := z.Run
			z.Run = func(pass *rule.Pass) error {
				if inB(pass) {
					var p *rule.Pass
					_ = p.Pkg.Path() // nil dereference
				}
				return run(pass)
			}
			return z
		}},
		{"analysis", func() *rule.Rule {
			z := sleepZero("inanalysis", zero)
			z.Requires = []*rule.Analysis{panicky}
			return z
		}},
		{"apply", func() *rule.Rule {
			return testRule("inapply", func([]byte) bool { return true }, func(pass *rule.Pass) {
				for _, f := range pass.Files {
					ast.Inspect(f, func(n ast.Node) bool {
						call, ok := n.(*ast.CallExpr)
						if !ok || len(call.Args) != 1 {
							return true
						}
						if lit, ok := call.Args[0].(*ast.BasicLit); !ok || lit.Value == "0" {
							return true
						}
						pass.Report(rule.Diagnostic{Pos: call.Pos(), End: call.End(), Message: "sleeps", Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}}, Message: "sleep zero", Apply: func() error {
							if inB(pass) {
								panic(fmt.Sprintf("no statement at %d", call.Pos()))
							}
							pass.Dst(call).(*dst.CallExpr).Args[0] = zero()
							return nil
						}}})
						return true
					})
				}
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := testmod.Write(t, twoPackages)
			r := c.rule()
			res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{r}, Env: testmod.GoEnv(t)})
			if err != nil {
				t.Fatal(err)
			}
			// a is fixed.
			if len(res.Changes) != 1 || filepath.Base(res.Changes[0].Path) != "a_test.go" || !strings.Contains(string(res.Changes[0].New), "time.Sleep(0)") {
				t.Errorf("changes %v, want a_test.go's sleep zeroed", res.Changes)
			}
			var got []string
			for _, f := range res.Findings {
				got = append(got, fmt.Sprintf("%s %s:%d fixed=%v %s (%s)", f.Package, filepath.Base(f.File), f.Line, f.Fixed, f.Message, f.Reason))
			}
			if len(got) != 2 || got[0] != "example.com/m/a a_test.go:8 fixed=true sleeps ()" || !strings.HasPrefix(got[1], "example.com/m/b b_test.go:") {
				t.Errorf("findings:\n%s\nwant a's fixed, then b's", strings.Join(got, "\n"))
			}
			// b's panic: one error naming the rule, the package and the frame.
			if len(res.Errors) != 1 {
				t.Fatalf("errors %q, want one", res.Errors)
			}
			msg := res.Errors[0].Error()
			where := regexp.QuoteMeta(" (at rewrite/panic_test.go:") + `\d+ \(rewrite_test\.TestPanicIsContained\.func[\d.]+\)\)`
			var want *regexp.Regexp
			if c.name == "apply" {
				// A fix that panics is set aside like a fix that fails.
				want = regexp.MustCompile(`b_test.go:8:28: internal error: rule inapply: the fix failed: panic: no statement at \d+` + where)
			} else {
				want = regexp.MustCompile(`b_test.go:1:1: internal error: rule ` + r.Name + ` panicked in package example.com/m/b: runtime error: .*` + where)
			}
			if !want.MatchString(msg) {
				t.Errorf("error %q\nwant it to match %s", msg, want)
			}
			if !strings.Contains(got[1], "internal error") {
				t.Errorf("b's finding %q does not say internal error", got[1])
			}
		})
	}
}

// A rule's prefilter that panics on one file is an error naming the rule,
// the file and the frame; the other package is analysed and fixed.
func TestPrefilterPanicIsContained(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, twoPackages)
	z := sleepZero("picky", zero)
	z.Prefilter = func(src []byte, _ rule.Values) bool {
		if strings.Contains(string(src), "package b") {
			var s []int
			return s[len(src)] > 0 // index out of range
		}
		return true
	}
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{z}, Env: testmod.GoEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || filepath.Base(res.Changes[0].Path) != "a_test.go" {
		t.Errorf("changes %v, want a_test.go's", res.Changes)
	}
	want := regexp.MustCompile(`b_test.go: internal error: the prefilter of rule picky panicked: runtime error: index out of range \[\d+\] with length 0 \(at rewrite/panic_test.go:\d+ \(rewrite_test.TestPrefilterPanicIsContained.func1\)\)$`)
	if len(res.Errors) != 1 || !want.MatchString(res.Errors[0].Error()) {
		t.Errorf("errors %q, want one matching %s", res.Errors, want)
	}
}
