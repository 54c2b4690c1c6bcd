package sleep

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// maxWaiters is the most goroutines waitersFix waits for: each count is
// a form verification may have to try, a round each.
const maxWaiters = 3

// waitersFix replaces the wait s, in a test that advances the clockwork
// fake clock v after it, by a wait for n goroutines to reach v's timers
// (v.BlockUntilContext(ctx, n)), for n = 1, 2, 3: one unproven fix and its
// Alternatives, which only verification tries, in that order, keeping the
// first that passes every run. How many goroutines the sleep waits for is
// known only by running the test: too few lets the advance come early
// (the test fails), too many blocks (the test hangs), so counting up
// finds the least that passes. why is the reason each form is unproven.
// It returns nil unless v's type has the method (checked with go/types:
// older clockwork versions have only BlockUntil(n), used then).
func (a *analysis) waitersFix(s *site, v *types.Var, why string) *rule.Fix {
	c, _ := clockOf(v.Type())
	if c.path != clockworkPath || !a.advancesAfter(s, v) {
		return nil
	}
	method := "BlockUntilContext"
	if !hasMethod(v, method, "context.Context", "int") {
		method = "BlockUntil"
		if !hasMethod(v, method, "int") {
			return nil
		}
	}
	// Have: a clockwork fake clock the test advances after the sleep,
	// with a wait for waiters.
	ctx := a.testContext(s)
	var forms []*rule.Fix
	for n := 1; n <= maxWaiters; n++ {
		text := fmt.Sprintf("%s.%s(%d)", v.Name(), method, n)
		if method == "BlockUntilContext" {
			text = fmt.Sprintf("%s.%s(%s, %d)", v.Name(), method, ctx.text, n)
		}
		forms = append(forms, &rule.Fix{
			Message:    fmt.Sprintf("wait for %s to reach the fake clock instead (%s)", goroutines(n), text),
			Changes:    []rule.Change{{Kind: rule.Clock, What: "the fake clock moves once the goroutines wait on it, not after a real sleep"}},
			Hypothesis: &rule.Hypothesis{Reason: why},
			Apply: func() error {
				stmt := a.pass.Dst(s.stmt).(*dst.ExprStmt)
				args := []dst.Expr{&dst.BasicLit{Kind: token.INT, Value: fmt.Sprint(n)}}
				if method == "BlockUntilContext" {
					args = append([]dst.Expr{ctx.expr()}, args...)
				}
				stmt.X = &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(v.Name()), Sel: dst.NewIdent(method)}, Args: args}
				return nil
			},
		})
	}
	forms[0].Hypothesis.Alternatives = forms[1:]
	return forms[0]
}

// waitsForWaiters returns the calls in body that wait for waiters of the
// clock v right before advancing it (v.BlockUntilContext(ctx, n) or
// v.BlockUntil(n), then v.Advance(d)): the shape waitersFix writes, which
// a later run (the engine's next round, after the first sleep's fix) must
// see as synchronisation, not as the test moving the clock.
func (a *analysis) waitsForWaiters(body *ast.BlockStmt, v *types.Var) map[*ast.CallExpr]bool {
	out := map[*ast.CallExpr]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		list := match.StmtList(n)
		for i := 0; i+1 < len(list); i++ {
			wait := a.clockCall(list[i], v, "BlockUntilContext", "BlockUntil")
			if wait != nil && a.clockCall(list[i+1], v, "Advance") != nil {
				out[wait] = true
			}
		}
		return true
	})
	return out
}

// clockCall returns the call s is when it is a statement calling one of
// the methods names on v, or nil.
func (a *analysis) clockCall(s ast.Stmt, v *types.Var, names ...string) *ast.CallExpr {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return nil
	}
	call, ok := ast.Unparen(es.X).(*ast.CallExpr)
	if !ok {
		return nil
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || !slices.Contains(names, sel.Sel.Name) {
		return nil
	}
	if id, ok := ast.Unparen(sel.X).(*ast.Ident); !ok || a.info.Uses[id] != v {
		return nil
	}
	return call
}

const clockworkPath = "github.com/jonboulle/clockwork"

// hasMethod reports whether v's type has the method name with parameters
// of the types params (as types.TypeString writes them).
func hasMethod(v *types.Var, name string, params ...string) bool {
	obj, _, _ := types.LookupFieldOrMethod(v.Type(), true, v.Pkg(), name)
	fn, ok := obj.(*types.Func)
	if !ok {
		return false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Params().Len() != len(params) || sig.Variadic() {
		return false
	}
	for i, p := range params {
		if types.TypeString(sig.Params().At(i).Type(), nil) != p {
			return false
		}
	}
	return true
}

// advancesAfter reports whether the test body holding s advances the fake
// clock v after s: the shape start, sleep, advance, in which the sleep
// lets goroutines reach the clock's timers before it moves.
func (a *analysis) advancesAfter(s *site, v *types.Var) bool {
	found := false
	ast.Inspect(s.decl.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if found || !ok || call.Pos() < s.stmt.End() {
			return !found
		}
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Advance" {
			if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && a.info.Uses[id] == v {
				found = true
			}
		}
		return !found
	})
	return found
}

// A waitContext is the context the wait for waiters is given.
type waitContext struct {
	t    string // the test's *testing.T, for t.Context(); "" for context.Background()
	text string
}

func (c waitContext) expr() dst.Expr {
	if c.t != "" {
		return &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(c.t), Sel: dst.NewIdent("Context")}}
	}
	return &dst.CallExpr{Fun: &dst.Ident{Path: "context", Name: "Background"}}
}

// testContext returns the context for a wait at s: the innermost
// enclosing test's t.Context() where the file's go version has it
// (go1.24) and t is in scope there, else context.Background(). Neither
// ends while the test waits, so both wait as long as the test may run:
// a count of goroutines that never comes shows as a hang at
// BlockUntilContext, which verification bounds and reports; a timeout
// of our own would only guess at how slow a loaded runner is.
func (a *analysis) testContext(s *site) waitContext {
	background := waitContext{text: "context.Background()"}
	if !a.pass.FileUsesGo(s.file, "go1.24") {
		return background
	}
	scope := a.pass.Pkg.Scope().Innermost(s.stmt.Pos())
	if scope == nil {
		return background
	}
	for i := len(s.stack) - 1; i >= 0; i-- {
		var ft *ast.FuncType
		switch fn := s.stack[i].(type) {
		case *ast.FuncDecl:
			ft = fn.Type
		case *ast.FuncLit:
			ft = fn.Type
		default:
			continue
		}
		for _, field := range ft.Params.List {
			for _, name := range field.Names {
				p, ok := a.info.Defs[name].(*types.Var)
				if !ok || !match.IsNamed(p.Type(), "testing", "T") {
					continue
				}
				if _, ok := p.Type().(*types.Pointer); !ok {
					continue
				}
				if _, obj := scope.LookupParent(p.Name(), s.stmt.Pos()); obj == p {
					return waitContext{t: p.Name(), text: p.Name() + ".Context()"}
				}
				return background
			}
		}
		return background // the innermost function has no *testing.T
	}
	return background
}

// goroutines says "1 goroutine", "2 goroutines".
func goroutines(n int) string {
	if n == 1 {
		return "1 goroutine"
	}
	return fmt.Sprintf("%d goroutines", n)
}
