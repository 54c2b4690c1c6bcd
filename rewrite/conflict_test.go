package rewrite_test

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// dropErr is a test rule: it reports every `v, err := f()` and drops its
// err (`v := 1`). In TestA each of the two fixes compiles alone (the
// other statement still declares err for the read after them); the two
// together do not. Its fix adds a line.
func dropErr() *rule.Rule {
	return testRule("droperr", func([]byte) bool { return true }, func(pass *rule.Pass) {
		for _, f := range pass.Files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				for _, st := range fd.Body.List {
					a, ok := st.(*ast.AssignStmt)
					if !ok || a.Tok != token.DEFINE || len(a.Lhs) != 2 {
						continue
					}
					pass.Report(rule.Diagnostic{Pos: a.Pos(), End: a.End(), Message: "drops err", Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}}, Message: "drop err", Apply: func() error {
						da := pass.Dst(a).(*dst.AssignStmt)
						da.Lhs = da.Lhs[:1]
						da.Rhs = []dst.Expr{&dst.BasicLit{Kind: token.INT, Value: "1"}}
						// A line more: the compiler's lines are not the user's.
						da.Decs.Before = dst.NewLine
						da.Decs.Start.Append("// err dropped")
						return nil
					}}})
				}
			}
		}
	})
}

// Two fixes that compile alone but not together: the first, in the
// findings' order, is applied; the second is reported not fixed with the
// compiler's words at the user's lines (the fix added one above), and the
// run has no error.
func TestFixesThatDoNotCompileTogether(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.24
-- a_test.go --
package m

import "testing"

func f() (int, error) { return 0, nil }

func TestA(t *testing.T) {
	v, err := f()
	_ = v
	w, err := f()
	_, _ = w, err
}
`)
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{dropErr()}, Env: testmod.GoEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Errorf("errors: %v", res.Errors)
	}
	var got []string
	for _, f := range res.Findings {
		got = append(got, fmt.Sprintf("%s:%d fixed=%v %s", filepath.Base(f.File), f.Line, f.Fixed, f.Reason))
	}
	want := []string{
		"a_test.go:8 fixed=true ",
		"a_test.go:10 fixed=false the fix does not compile with the other fixes in this test: a_test.go:11:12: undefined: err",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Changes) != 1 || !strings.Contains(string(res.Changes[0].New), "// err dropped\n\tv := 1\n") || !strings.Contains(string(res.Changes[0].New), "w, err := f()") {
		t.Errorf("changes: %d, want the first fix only", len(res.Changes))
	}
}

// A rule whose findings change from one run to the next cannot have its
// fixes tried apart: those the trial could not try are reported not
// fixed, as the rule's internal error, never left looking fixable.
func TestUntriedFixesAreReported(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.24
-- a_test.go --
package m

import "testing"

func f() (int, error) { return 0, nil }

func TestA(t *testing.T) {
	v, err := f()
	_ = v
	w, err := f()
	_, _ = w, err
}
`)
	r := dropErr()
	runs := 0
	run := r.Run
	r.Run = func(pass *rule.Pass) error {
		runs++
		if runs > 1 {
			// One more finding than the first run: not the same rule.
			pass.Report(rule.Diagnostic{Pos: pass.Files[0].Name.Pos(), Message: "again", NotFixed: "no fix"})
		}
		return run(pass)
	}
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: []*rule.Rule{r}, Env: testmod.GoEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	untried := 0
	for _, f := range res.Findings {
		if f.Fixed {
			t.Errorf("%s:%d fixed", filepath.Base(f.File), f.Line)
		}
		if strings.HasPrefix(f.Reason, "internal error: the rule's findings change from one run to the next") {
			untried++
		}
	}
	if untried != 2 || len(res.Errors) != 2 || len(res.Changes) != 0 {
		t.Errorf("%d untried findings, errors %v, %d changes; want both fixes untried, an error for each, no change", untried, res.Errors, len(res.Changes))
	}
}
