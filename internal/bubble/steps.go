package bubble

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"time"

	"github.com/unflake/unflake/internal/match"
)

// A loop of the code that waits by a step (a poll interval, a constant,
// a field, a default) against a deadline it fixed before the loop
// (deadline := time.Now().Add(timeout), start := time.Now() and
// time.Since(start) < budget) meets that deadline on its boundary in a
// bubble: the code's own waits end exactly on time, so after k steps the
// time left is exactly budget-k*step, a multiple of the step when the
// step divides the budget. A comparison of the time left (or elapsed)
// with the step or the deadline is then decided on its boundary, where
// real time, always a little late, is past it: a bug that gives up when
// less than a step is left (time.Until(deadline) < step) gives up a step
// early in real time, which a test's lower bound or result catches, and
// in the bubble, where exactly a step is left, polls on to the deadline
// and passes. The correct code passes either way, so running it cannot
// tell: the site is not fixed. A step that does not divide a constant
// budget never lands on it; a step or a budget the analysis cannot
// evaluate (a field, a parameter, a backoff that grows) may.

const checkedStepLoop = "no loop of the code waiting by a step against a deadline the step may divide"

// stepLoop returns why a loop of the code under test (its non-test
// roots) waits by a step against a deadline the step may divide, or "".
func (c *clockScan) stepLoop() string {
	found := ""
	for i, r := range c.rootList {
		if i == 0 || c.a.testCode(r) {
			continue // the test's own loops are other rules' (waitfor, attemptloop)
		}
		c.inspect(r, func(n ast.Node, _ []ast.Node) bool {
			if found != "" {
				return false
			}
			if loop, ok := n.(*ast.ForStmt); ok {
				found = c.stepAgainstDeadline(loop, r)
			}
			return found == ""
		})
		if found != "" {
			return found
		}
	}
	return ""
}

// A step is the duration a loop's wait is made of, when it is not
// computed from the clock: its value when constant.
type step struct {
	what  string // "lookEvery at pool.go:14", where it is declared
	d     time.Duration
	known bool
}

// stepAgainstDeadline says why loop, in the function body scope, waits
// by a step against a deadline it may divide, or "".
func (c *clockScan) stepAgainstDeadline(loop *ast.ForStmt, scope ast.Node) string {
	info := c.a.info
	var wait ast.Node
	var steps []step
	ast.Inspect(loop.Body, func(n ast.Node) bool {
		if len(steps) > 0 {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // not the loop's own wait
		case *ast.CallExpr:
			if arg := waitDuration(info, n, "Sleep", "After", "NewTimer"); arg != nil {
				if s := c.stepsOf(arg, scope, map[types.Object]bool{}); len(s) > 0 {
					wait, steps = n, s
				}
			}
		case *ast.UnaryExpr:
			// <-tick.C of a ticker or a timer the function made before
			// the loop: its period is the step.
			sel, ok := ast.Unparen(n.X).(*ast.SelectorExpr)
			if n.Op != token.ARROW || !ok || sel.Sel.Name != "C" || !match.IsNamed(info.TypeOf(sel.X), "time", "Ticker", "Timer") {
				return true
			}
			if arg := c.madeWith(sel.X, scope, loop); arg != nil {
				if s := c.stepsOf(arg, scope, map[types.Object]bool{}); len(s) > 0 {
					wait, steps = n, s
				}
			}
		}
		return true
	})
	if wait == nil {
		return ""
	}
	dl, budget, ok := c.loopDeadline(loop, scope)
	if !ok {
		dl, budget, ok = c.ctxDeadline(loop)
	}
	if !ok {
		return ""
	}
	waitAt := c.at(types.ExprString(wait.(ast.Expr)), wait)
	b, bKnown := match.ConstDuration(info, budget)
	for _, s := range steps {
		var why string
		switch {
		case !s.known:
			why = fmt.Sprintf("the step %s is not a constant the analysis can evaluate, so it may divide the deadline", s.what)
		case !bKnown:
			why = fmt.Sprintf("the deadline's duration %s is not a constant the analysis can evaluate, so the step %s (%s) may divide it", types.ExprString(budget), s.what, match.FormatDuration(s.d))
		case s.d > 0 && b%s.d == 0:
			why = fmt.Sprintf("the deadline's duration %s (%s) is a multiple of the step %s (%s)", types.ExprString(budget), match.FormatDuration(b), s.what, match.FormatDuration(s.d))
		default:
			continue
		}
		return fmt.Sprintf("the code waits in a loop by a step (%s) against a deadline (%s): %s", waitAt, dl, why)
	}
	return ""
}

// stepsOf returns the steps a wait's duration e is made of: e itself
// when it is not computed from the clock (a constant, a field, a
// parameter, a variable), or the arguments of min or max that are not
// (min(left, lookEvery): the step is lookEvery). A local variable
// counts as what scope assigns to it, once; assigned more often (a
// backoff that doubles) it is a step of unknown value.
func (c *clockScan) stepsOf(e ast.Expr, scope ast.Node, seen map[types.Object]bool) []step {
	info := c.a.info
	e = ast.Unparen(e)
	if call, ok := e.(*ast.CallExpr); ok && match.IsBuiltin(info, call.Fun, "min", "max") {
		var out []step
		for _, a := range call.Args {
			out = append(out, c.stepsOf(a, scope, seen)...)
		}
		return out
	}
	if d, ok := match.ConstDuration(info, e); ok {
		if d <= 0 {
			return nil
		}
		return []step{{what: c.named(e), d: d, known: true}}
	}
	if computed(info, e, scope, map[types.Object]bool{}) {
		return nil // the time left, an elapsed time: not a step
	}
	if v, ok := c.objOf(e).(*types.Var); ok && !v.IsField() && v.Parent() != nil && v.Pkg() != nil && v.Parent() != v.Pkg().Scope() && !seen[v] {
		seen[v] = true
		var rhs []ast.Expr
		more := false
		ast.Inspect(scope, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if info.ObjectOf(identOf(l)) != v {
						continue
					}
					if n.Tok != token.DEFINE && n.Tok != token.ASSIGN || len(n.Rhs) != len(n.Lhs) {
						more = true
						continue
					}
					rhs = append(rhs, n.Rhs[i])
				}
			case *ast.IncDecStmt:
				if info.ObjectOf(identOf(n.X)) == v {
					more = true
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if info.ObjectOf(id) == v && i < len(n.Values) {
						rhs = append(rhs, n.Values[i])
					}
				}
			}
			return true
		})
		if len(rhs) == 1 && !more {
			return c.stepsOf(rhs[0], scope, seen)
		}
		if len(rhs) > 1 || more {
			return []step{{what: c.named(e) + ", set more than once"}}
		}
	}
	if !match.IsNamed(info.TypeOf(e), "time", "Duration") {
		return nil
	}
	return []step{{what: c.named(e)}}
}

// named names e with the line that declares what it names (a constant,
// a variable, a field), or with its own line.
func (c *clockScan) named(e ast.Expr) string {
	if obj := c.objOf(e); obj != nil && obj.Pos().IsValid() && obj.Pkg() == c.a.pass.Pkg {
		p := c.a.pass.Fset.Position(obj.Pos())
		return fmt.Sprintf("%s at %s:%d", types.ExprString(e), filepath.Base(p.Filename), p.Line)
	}
	return c.at(types.ExprString(e), e)
}

// madeWith returns the duration the ticker or timer x was made with
// (x := time.NewTicker(d) before loop, in scope), or nil.
func (c *clockScan) madeWith(x ast.Expr, scope ast.Node, loop *ast.ForStmt) ast.Expr {
	v := c.objOf(x)
	if v == nil {
		return nil
	}
	var arg ast.Expr
	ast.Inspect(scope, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || as.Pos() >= loop.Pos() || len(as.Lhs) != len(as.Rhs) {
			return true
		}
		for i, l := range as.Lhs {
			call, ok := ast.Unparen(as.Rhs[i]).(*ast.CallExpr)
			if c.objOf(l) == v && ok && match.IsPkgFunc(c.a.info, call, "time", "NewTicker", "NewTimer") && len(call.Args) == 1 {
				arg = call.Args[0]
			}
		}
		return true
	})
	return arg
}

// loopDeadline returns the deadline loop checks the clock against, fixed
// before the loop in scope, and the duration it is set from: deadline :=
// time.Now().Add(d) read with time.Until(deadline), deadline.Sub(now),
// now.After(deadline) or now.Before(deadline); or start := time.Now()
// read with time.Since(start) (now.Sub(start)) compared with d. A
// deadline that is a parameter of the function is of unknown duration:
// its name stands for it. A deadline kept in a field or a map (an
// entry's expiry) is not the loop's own: false.
func (c *clockScan) loopDeadline(loop *ast.ForStmt, scope ast.Node) (string, ast.Expr, bool) {
	info := c.a.info
	var what string
	var dur ast.Expr
	look := func(n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if dur != nil {
				return false
			}
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.CallExpr:
				var x ast.Expr
				switch {
				case match.IsPkgFunc(info, n, "time", "Until") && len(n.Args) == 1:
					x = n.Args[0]
				case match.IsMethod(info, n, "time", "Sub", "After", "Before") && len(n.Args) == 1:
					if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && c.isNow(sel.X) {
						x = n.Args[0]
					} else if ok && c.isNow(n.Args[0]) {
						x = sel.X
					}
				}
				if x == nil {
					return true
				}
				if d, from := c.fixedDeadline(x, scope, loop); d != nil {
					what, dur = c.at(types.ExprString(from), from), d
				}
			case *ast.BinaryExpr:
				// time.Since(start) < budget, budget <= time.Since(start)
				if n.Op != token.LSS && n.Op != token.LEQ && n.Op != token.GTR && n.Op != token.GEQ {
					return true
				}
				for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
					start := c.sinceOf(pair[0], scope)
					if start == nil || !match.IsNamed(info.TypeOf(pair[1]), "time", "Duration") {
						continue
					}
					if from := c.startedAt(start, scope, loop); from != nil {
						what, dur = c.at(types.ExprString(from), from)+", elapsed compared with "+types.ExprString(pair[1]), pair[1]
						return false
					}
				}
			}
			return true
		})
	}
	look(loop.Cond)
	look(loop.Body)
	return what, dur, dur != nil
}

// fixedDeadline returns the duration a deadline x was set from before
// loop (x := time.Now().Add(d): d) and where, or x itself for a
// parameter of the function (its duration unknown); nil for anything
// else.
func (c *clockScan) fixedDeadline(x ast.Expr, scope ast.Node, loop *ast.ForStmt) (ast.Expr, ast.Expr) {
	v, ok := c.objOf(x).(*types.Var)
	if !ok || v.IsField() {
		return nil, nil
	}
	if c.param(v, scope) {
		return x, x
	}
	rhs := c.onlyValue(v, scope, loop)
	call, ok := ast.Unparen(rhs).(*ast.CallExpr)
	if !ok || !match.IsMethod(c.a.info, call, "time", "Add") || len(call.Args) != 1 {
		return nil, nil
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); !ok || !c.isNow(sel.X) {
		return nil, nil
	}
	return call.Args[0], call
}

// startedAt returns where start, a local variable, was set to a reading
// of the clock before loop, or nil.
func (c *clockScan) startedAt(start types.Object, scope ast.Node, loop *ast.ForStmt) ast.Expr {
	rhs := c.onlyValue(start, scope, loop)
	if rhs == nil || !c.isNow(rhs) {
		return nil
	}
	return rhs
}

// sinceOf returns the variable e measures elapsed time from
// (time.Since(start), time.Now().Sub(start)), or nil.
func (c *clockScan) sinceOf(e ast.Expr, scope ast.Node) types.Object {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil
	}
	switch {
	case match.IsPkgFunc(c.a.info, call, "time", "Since"):
		return c.objOf(call.Args[0])
	case match.IsMethod(c.a.info, call, "time", "Sub"):
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && c.isNow(sel.X) {
			return c.objOf(call.Args[0])
		}
	}
	return nil
}

// onlyValue returns what scope sets v to, when it sets it once, before
// loop and outside it; nil otherwise (a deadline the loop moves is not
// fixed).
func (c *clockScan) onlyValue(v types.Object, scope ast.Node, loop *ast.ForStmt) ast.Expr {
	var rhs ast.Expr
	n := 0
	ast.Inspect(scope, func(node ast.Node) bool {
		as, ok := node.(*ast.AssignStmt)
		if !ok {
			return true
		}
		for i, l := range as.Lhs {
			if c.objOf(l) != v {
				continue
			}
			n++
			if len(as.Rhs) == len(as.Lhs) && as.Pos() < loop.Pos() {
				rhs = as.Rhs[i]
			}
		}
		return true
	})
	if n != 1 {
		return nil
	}
	return rhs
}

// param reports whether v is a parameter of the function whose body is
// scope.
func (c *clockScan) param(v *types.Var, scope ast.Node) bool {
	if v.Parent() == nil {
		return false
	}
	// A parameter's scope is the function's, which encloses the body.
	return v.Parent().Pos() < scope.Pos() && scope.Pos() <= v.Parent().End() && v.Pos() < scope.Pos()
}

// ctxDeadline returns the deadline of a loop that waits on a context's
// Done beside its step (select { case <-ctx.Done(): ...; case
// <-time.After(step): }) when the test makes a context with a timeout or
// a deadline (context.WithTimeout(ctx, 300ms)): the loop meets that
// deadline as it would one of its own, and in a bubble after exactly k
// steps. A bug that gives up when less than a step is left
// (time.Until(dl) < step, from ctx.Deadline()) lives only in its own
// build, where the correct code compares nothing (red team batch 21,
// retryctx). The duration is the timeout's, or the deadline itself
// (not a constant: it may be a multiple of the step).
func (c *clockScan) ctxDeadline(loop *ast.ForStmt) (string, ast.Expr, bool) {
	info := c.a.info
	var done ast.Node
	ast.Inspect(loop.Body, func(n ast.Node) bool {
		if done != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CommClause:
			var x ast.Expr
			switch comm := n.Comm.(type) {
			case *ast.ExprStmt:
				x = comm.X
			case *ast.AssignStmt:
				if len(comm.Rhs) == 1 {
					x = comm.Rhs[0]
				}
			}
			if u, ok := ast.Unparen(x).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
				if call, ok := ast.Unparen(u.X).(*ast.CallExpr); ok && match.IsMethod(info, call, "context", "Done") {
					done = call
				}
			}
		}
		return true
	})
	if done == nil {
		return "", nil, false
	}
	var what string
	var dur ast.Expr
	for i, r := range c.rootList {
		if i > 0 && !c.a.testCode(r) {
			continue
		}
		ast.Inspect(r, func(n ast.Node) bool {
			if dur != nil {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if ok && len(call.Args) == 2 && match.IsPkgFunc(info, call, "context", "WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause") {
				what, dur = c.at(types.ExprString(done.(ast.Expr)), done)+", a context the test gives a deadline ("+c.at(types.ExprString(call), call)+")", call.Args[1]
			}
			return dur == nil
		})
		if dur != nil {
			break
		}
	}
	return what, dur, dur != nil
}
