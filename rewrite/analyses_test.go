package rewrite_test

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// The engine computes each analysis a rule requires once per package
// content, and every rule sees the results for the content it runs on:
// through rules, the trials of fixes that do not compile, the baseline
// of a rule an earlier rule's fix changed the package for, and rounds.
func TestAnalysesOncePerContent(t *testing.T) {
	t.Parallel()
	runs := map[string]int{} // analysis name and package content → runs
	count := func(name string, requires ...*rule.Analysis) *rule.Analysis {
		return &rule.Analysis{Name: name, Doc: "counts its runs", Requires: requires, Run: func(pass *rule.Pass) (any, error) {
			for _, r := range requires {
				if pass.ResultOf[r] != pass.Pkg {
					return nil, fmt.Errorf("%s: %s's result is for another content", name, r.Name)
				}
			}
			runs[fmt.Sprintf("%s %p", name, pass.Pkg)]++
			return pass.Pkg, nil
		}}
	}
	base := count("base")
	top := count("top", base)
	var seen []string // mismatches a rule saw
	check := func(pass *rule.Pass) {
		if pass.ResultOf[top] != pass.Pkg || pass.ResultOf[base] != pass.Pkg {
			seen = append(seen, pass.Rule.Name)
		}
	}
	// zero rewrites time.Sleep(1) to time.Sleep(0), and time.Sleep(2) to
	// a call that does not compile, so the engine tries its fixes in
	// halves, running the rule again on the same content.
	zero := testRule("zero", func(src []byte) bool { return bytes.Contains(src, []byte("Sleep")) }, func(pass *rule.Pass) {
		check(pass)
		for _, f := range pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				fn, ok := pass.TypesInfo.Uses[sel.Sel].(*types.Func)
				lit, ok2 := call.Args[0].(*ast.BasicLit)
				if !ok || !ok2 || fn.Name() != "Sleep" || lit.Value == "0" {
					return true
				}
				arg := "0"
				if lit.Value == "2" {
					arg = "nope"
				}
				pass.Report(rule.Diagnostic{Pos: call.Pos(), End: call.End(), Message: "sleeps", Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}},
					Message: "sleep zero",
					Apply:   func() error { pass.Dst(call).(*dst.CallExpr).Args[0] = dst.NewIdent(arg); return nil },
				}})
				return true
			})
		}
	})
	zero.Requires = []*rule.Analysis{top}
	look := testRule("look", func([]byte) bool { return true }, check)
	look.Requires = []*rule.Analysis{base, top}

	dir := testmod.Write(t, `
-- go.mod --
module example.com/p

go 1.24
-- p_test.go --
package p

import (
	"testing"
	"time"
)

func TestA(t *testing.T) { time.Sleep(1) }

func TestB(t *testing.T) { time.Sleep(1) }

func TestC(t *testing.T) { time.Sleep(2) }
`)
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{zero, look}, Env: testmod.GoEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 {
		t.Fatalf("got %d changes, want 1 (errors: %v)", len(res.Changes), res.Errors)
	}
	if len(seen) > 0 {
		t.Errorf("rules %v saw results for another content", seen)
	}
	for k, n := range runs {
		if n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
	// Two analyses on two contents: as written, and after zero's fixes.
	if len(runs) != 4 {
		t.Errorf("got %d analysis runs, want 4: %v", len(runs), runs)
	}
}

// A rule's error, or the error of an analysis it requires, is a finding
// on the package naming the rule, never a crash of the run.
func TestRunErrorIsAFinding(t *testing.T) {
	t.Parallel()
	broken := &rule.Rule{
		Name:      "broken",
		Doc:       "# broken: a test rule\n\nA test rule.\n\n## Before\n\nx\n\n## After\n\ny\n",
		Prefilter: func([]byte, rule.Values) bool { return true },
		Run: func(pass *rule.Pass) error {
			pass.Report(rule.Diagnostic{Pos: pass.Files[0].Name.Pos(), Message: "half done"})
			return errors.New("a statement not in its parent's list")
		},
	}
	failing := &rule.Analysis{Name: "failing", Doc: "fails", Run: func(*rule.Pass) (any, error) { return nil, errors.New("no result") }}
	needy := &rule.Rule{
		Name:      "needy",
		Doc:       "# needy: a test rule\n\nA test rule.\n\n## Before\n\nx\n\n## After\n\ny\n",
		Prefilter: func([]byte, rule.Values) bool { return true },
		Requires:  []*rule.Analysis{failing},
		Run:       func(*rule.Pass) error { t.Error("needy ran without its analysis"); return nil },
	}
	dir := testmod.Write(t, `
-- go.mod --
module example.com/p

go 1.24
-- a_test.go --
package p

import "testing"

func TestA(t *testing.T) {}
-- b_test.go --
package p
`)
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{broken, needy}, Env: testmod.GoEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Errorf("errors: %v", res.Errors)
	}
	var got []string
	for _, f := range res.Findings {
		got = append(got, fmt.Sprintf("%s %s:%d:%d %s fixed=%v (%s)", f.Rule, filepath.Base(f.File), f.Line, f.Col, f.Message, f.Fixed, f.Reason))
	}
	want := []string{
		"broken a_test.go:1:1 rule broken failed: a statement not in its parent's list fixed=false (internal error)",
		"needy a_test.go:1:1 rule needy failed: analysis failing: no result fixed=false (internal error)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A fix whose Apply fails is not applied: its finding says why, as an
// internal error naming the rule, and the rule's other fixes still apply.
func TestApplyErrorIsAFinding(t *testing.T) {
	t.Parallel()
	r := testRule("halfbroken", func([]byte) bool { return true }, func(pass *rule.Pass) {
		for _, f := range pass.Files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || strings.HasSuffix(fd.Name.Name, "x") {
					continue
				}
				broken := fd.Name.Name == "TestB"
				pass.Report(rule.Diagnostic{Pos: fd.Name.Pos(), End: fd.Name.End(), Message: "named", Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}},
					Message: "rename it",
					Apply: func() error {
						if broken {
							return errors.New("a statement not in its parent's list")
						}
						pass.Dst(fd.Name).(*dst.Ident).Name += "x"
						return nil
					},
				}})
			}
		}
	})
	dir := testmod.Write(t, `
-- go.mod --
module example.com/p

go 1.24
-- a_test.go --
package p

import "testing"

func TestA(t *testing.T) {}

func TestB(t *testing.T) {}
`)
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{r}, Env: testmod.GoEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.Findings {
		got = append(got, fmt.Sprintf("%s:%d fixed=%v %s", f.Test, f.Line, f.Fixed, f.Reason))
	}
	want := "TestB:7 fixed=false internal error: the fix failed: a statement not in its parent's list"
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "rule halfbroken: the fix failed") || !strings.Contains(strings.Join(got, "\n"), want) {
		t.Errorf("errors %v, findings:\n%s\nwant among them: %s", res.Errors, strings.Join(got, "\n"), want)
	}
	if len(res.Changes) != 1 || !strings.Contains(string(res.Changes[0].New), "func TestAx(") {
		t.Errorf("TestA's fix was not applied: %d changes", len(res.Changes))
	}
}
