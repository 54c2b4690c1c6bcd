package sleep

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"time"

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
	var bounded *boundedWait
	if method == "BlockUntilContext" && ctx.t != "" {
		bounded = a.boundedWait(s, ctx)
	}
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
		if bounded != nil {
			f := forms[len(forms)-1]
			budget := match.FormatDuration(waitBudget(bounded.window))
			f.Message = fmt.Sprintf("wait up to %s for %s to reach the fake clock instead (%s.%s(ctx, %d), failing the test after it)", budget, goroutines(n), v.Name(), method, n)
			f.Changes = append(f.Changes, rule.Change{Kind: rule.Budget, What: fmt.Sprintf("the test fails if the goroutines have not reached the fake clock within %s, where it moved the clock after its sleep", budget), Window: bounded.window})
			f.Apply = func() error { return bounded.apply(v.Name(), n) }
		}
	}
	forms[0].Hypothesis.Alternatives = forms[1:]
	return forms[0]
}

// waitBudget is how long the bounded wait for waiters waits before it
// fails the test: twice the sleep it replaces, and a second at least,
// in whole seconds. A wait with no end turns a bug that never starts
// the timer (a zero duration, a dropped goroutine) into a hang, where the
// original failed at its check; verification does not count a hang as
// catching a bug (a long enough run may pass), and gives a rewritten
// test under a mutant twice the original's time and 2s before it calls
// it hung, so the wait ends, and the test fails, within that. Correct
// code reaches its timer in far less than a second, even under -race on
// a loaded machine; the original gave it the sleep.
func waitBudget(sleep time.Duration) time.Duration {
	return max(time.Second, (2*sleep+time.Second-1)/time.Second*time.Second)
}

// A boundedWait is the wait for waiters that fails the test after
// waitBudget: it replaces the sleep's statement by
//
//	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
//	defer cancel()
//	if err := fc.BlockUntilContext(ctx, n); err != nil {
//		t.Fatalf("...: %v", err)
//	}
//
// with names that nothing in the function uses.
type boundedWait struct {
	a           *analysis
	s           *site
	t           string      // the test's *testing.T
	list        *[]dst.Stmt // the statement list holding the sleep
	ctx, cancel string
	window      time.Duration // the sleep's duration, 0 when not constant
}

// boundedWait returns the bounded form's plan for s, or nil where the
// sleep's statement is not in a list a rewrite can splice (a block, a
// case or select clause).
func (a *analysis) boundedWait(s *site, ctx waitContext) *boundedWait {
	if len(s.stack) == 0 {
		return nil
	}
	var body ast.Node
	for i := len(s.stack) - 1; i >= 0 && body == nil; i-- {
		switch fn := s.stack[i].(type) {
		case *ast.FuncDecl:
			body = fn.Body
		case *ast.FuncLit:
			body = fn.Body
		}
	}
	if body == nil {
		return nil
	}
	var list *[]dst.Stmt
	switch p := a.pass.Dst(s.stack[len(s.stack)-1]).(type) {
	case *dst.BlockStmt:
		list = &p.List
	case *dst.CaseClause:
		list = &p.Body
	case *dst.CommClause:
		list = &p.Body
	default:
		return nil
	}
	used := match.Idents(body)
	scope := a.pass.Pkg.Scope().Innermost(s.stmt.Pos())
	b := &boundedWait{a: a, s: s, t: ctx.t, list: list}
	b.ctx = match.FreshName(scope, s.stmt.Pos(), used, "ctx")
	used[b.ctx] = true
	b.cancel = match.FreshName(scope, s.stmt.Pos(), used, "cancel")
	if d, ok := match.ConstDuration(a.info, s.dur); ok {
		b.window = d
	}
	return b
}

// apply replaces the sleep's statement by the bounded wait for n
// goroutines on the clock named clock. The sleep's comments go to the
// first statement.
func (b *boundedWait) apply(clock string, n int) error {
	old := b.a.pass.Dst(b.s.stmt).(*dst.ExprStmt)
	at := slices.Index(*b.list, dst.Stmt(old))
	if at < 0 {
		return fmt.Errorf("the sleep's statement is not in its block")
	}
	timeout := &dst.AssignStmt{
		Lhs: []dst.Expr{dst.NewIdent(b.ctx), dst.NewIdent(b.cancel)},
		Tok: token.DEFINE,
		Rhs: []dst.Expr{&dst.CallExpr{
			Fun: &dst.Ident{Path: "context", Name: "WithTimeout"},
			Args: []dst.Expr{
				&dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(b.t), Sel: dst.NewIdent("Context")}},
				seconds(waitBudget(b.window)),
			},
		}},
	}
	timeout.Decs.NodeDecs = old.Decs.NodeDecs
	timeout.Decs.Before, timeout.Decs.After = old.Decs.Before, dst.NewLine
	deferCancel := &dst.DeferStmt{Call: &dst.CallExpr{Fun: dst.NewIdent(b.cancel)}}
	deferCancel.Decs.After = dst.NewLine
	wait := &dst.IfStmt{
		Init: &dst.AssignStmt{
			Lhs: []dst.Expr{dst.NewIdent("err")},
			Tok: token.DEFINE,
			Rhs: []dst.Expr{&dst.CallExpr{
				Fun:  &dst.SelectorExpr{X: dst.NewIdent(clock), Sel: dst.NewIdent("BlockUntilContext")},
				Args: []dst.Expr{dst.NewIdent(b.ctx), &dst.BasicLit{Kind: token.INT, Value: fmt.Sprint(n)}},
			}},
		},
		Cond: &dst.BinaryExpr{X: dst.NewIdent("err"), Op: token.NEQ, Y: dst.NewIdent("nil")},
		Body: &dst.BlockStmt{List: []dst.Stmt{&dst.ExprStmt{X: &dst.CallExpr{
			Fun: &dst.SelectorExpr{X: dst.NewIdent(b.t), Sel: dst.NewIdent("Fatalf")},
			Args: []dst.Expr{
				&dst.BasicLit{Kind: token.STRING, Value: fmt.Sprintf("%q", fmt.Sprintf("%s did not reach the fake clock: %%v", goroutines(n)))},
				dst.NewIdent("err"),
			},
		}}}},
	}
	wait.Decs.After = old.Decs.After
	*b.list = slices.Replace(*b.list, at, at+1, dst.Stmt(timeout), dst.Stmt(deferCancel), dst.Stmt(wait))
	return nil
}

// seconds is the expression for d, a whole number of seconds:
// time.Second, or N*time.Second.
func seconds(d time.Duration) dst.Expr {
	second := &dst.Ident{Path: "time", Name: "Second"}
	if d == time.Second {
		return second
	}
	return &dst.BinaryExpr{X: &dst.BasicLit{Kind: token.INT, Value: fmt.Sprint(int(d / time.Second))}, Op: token.MUL, Y: second}
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
// the methods names on v, or an if statement whose init assigns what the
// call returns (the bounded wait's `if err := v.BlockUntilContext(ctx,
// n); err != nil`), or nil.
func (a *analysis) clockCall(s ast.Stmt, v *types.Var, names ...string) *ast.CallExpr {
	var x ast.Expr
	switch s := s.(type) {
	case *ast.ExprStmt:
		x = s.X
	case *ast.IfStmt:
		as, ok := s.Init.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 {
			return nil
		}
		x = as.Rhs[0]
	default:
		return nil
	}
	call, ok := ast.Unparen(x).(*ast.CallExpr)
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
// (go1.24) and t is in scope there, else context.Background(). With t,
// the wait is bounded (boundedWait); context.Background() never ends,
// so a count of goroutines that never comes hangs at BlockUntil, which
// verification does not count as a catch.
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
		ft := match.FuncType(s.stack[i])
		if ft == nil {
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
