package wallclock

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

const checkedOnBudget = "no upper bound failing only above a sum of the code's waits"

// onBudget says why the upper bound s, made exact in a synctest bubble,
// could pass a bug that the original catches, or "": on the virtual
// clock the elapsed time is exactly the sum of the code's waits, so a
// bug whose waits add up exactly to the budget (two election timeouts of
// 150ms against 300ms, backoffs of 100ms and 200ms) meets an assertion
// that fails only above it (d > 300ms) on the boundary and passes, where
// real time, always a little longer, fails. The correct code passes
// either way, so running it cannot tell: the site is not fixed. An
// assertion that fails at the budget too (d >= budget, assert.Less) is
// not at risk, and neither is a budget no duration of the code or the
// test divides (the waits cannot add up to it).
func (c *checker) onBudget(s *site, t ast.Node) string {
	if s.lower || !c.strictUpper(s) {
		return ""
	}
	b, ok := match.ConstDuration(c.info, s.budget)
	if !ok {
		return fmt.Sprintf("the budget %s is not a constant, so the code's waits may add up to it", types.ExprString(s.budget))
	}
	if b <= 0 {
		return ""
	}
	found := ""
	look := func(root ast.Node) {
		ast.Inspect(root, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if found != "" || !ok || s.stmt.Pos() <= e.Pos() && e.End() <= s.stmt.End() {
				return found == ""
			}
			tv := c.info.Types[e]
			if tv.Value == nil || tv.Type == nil || !match.IsNamed(tv.Type, "time", "Duration") {
				return true
			}
			// The whole constant, not its parts (100 * time.Millisecond
			// is 100ms, not also 1ms).
			if d, ok := match.ConstDuration(c.info, e); ok && d > 0 && b%d == 0 {
				p := c.pass.Fset.Position(e.Pos())
				found = fmt.Sprintf("%s at %s:%d", types.ExprString(e), filepath.Base(p.Filename), p.Line)
			}
			return false
		})
	}
	for _, f := range c.pass.AllFiles {
		if !isTestFile(c.pass.Fset, f) {
			look(f)
		}
	}
	if found == "" {
		look(t)
	}
	if found == "" {
		return ""
	}
	return fmt.Sprintf("the budget %s is a multiple of %s, a duration of the code or the test", match.FormatDuration(b), found)
}

// strictUpper reports whether the upper bound s fails only when the
// elapsed time is above the budget (d > budget, budget < d,
// assert.LessOrEqual), not at it: an if statement whose condition
// compares with >= (or <=, the budget first) fails at the budget too, as
// assert.Less does. Anything else counts as strict.
func (c *checker) strictUpper(s *site) bool {
	switch st := s.stmt.(type) {
	case *ast.IfStmt:
		strict := true
		ast.Inspect(st.Cond, func(n ast.Node) bool {
			b, ok := n.(*ast.BinaryExpr)
			if !ok {
				return true
			}
			if b.Op == token.GEQ && ast.Unparen(b.Y) == s.budget || b.Op == token.LEQ && ast.Unparen(b.X) == s.budget {
				strict = false
			}
			return true
		})
		return strict
	case *ast.ExprStmt:
		if call, ok := ast.Unparen(st.X).(*ast.CallExpr); ok {
			if fn := match.Callee(c.info, call); fn != nil && (fn.Name() == "Less" || fn.Name() == "Lessf") {
				return false
			}
		}
	}
	return true
}

// isTestFile reports whether f is a _test.go file.
func isTestFile(fset *token.FileSet, f *ast.File) bool {
	return strings.HasSuffix(fset.File(f.Pos()).Name(), "_test.go")
}
