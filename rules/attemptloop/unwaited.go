package attemptloop

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
)

// An attempt count bounds time only when every pass of the loop waits. A
// pass that can end without waiting (a select that takes an event when
// one is ready and waits on time.After only when none is; a sleep in one
// branch) is bounded by something else: the loop takes at most N events,
// or tries N times in a burst. A deadline lets it take any number in its
// first millisecond: a watch that replays 30 stale events before the one
// the test waits for fails the count and passes the deadline (red team
// batch 20, watchreplay). Such a loop is not fixed.

// passEnd is what a statement does to the pass of the loop that runs it.
type passEnd uint8

const (
	fallsThrough passEnd = iota // the pass goes on to the next statement, not having waited
	waited                      // every path through it waited or left the loop
	unwaited                    // a path continues the loop without having waited
)

// unwaitedWhy says how a pass of l can end, and the loop go on, without
// one of its waits, or "".
func (c *checker) unwaitedWhy(l *loop, waits []wait) string {
	isWait := map[ast.Expr]bool{}
	for _, w := range waits {
		isWait[w.d] = true
	}
	var at ast.Node // where the first pass without a wait goes on
	end := c.listEnd(l, l.body.List, isWait, &at, false)
	if end == waited {
		return ""
	}
	where := "at the end of the pass, " + c.where(l.body.Rbrace)
	if at != nil {
		where = "at " + c.where(at.Pos())
	}
	return fmt.Sprintf("a pass of the loop can end without waiting (%s): the attempts bound how many passes the test makes, events taken or tries in a burst, not how long it waits, and a deadline lets it make any number in its first instant (a replayed history before the awaited event, a burst of retries)", where)
}

// listEnd is what the statement list does to the pass; at is set to where
// a pass goes on without waiting. inSwitch: the list is in a select or
// switch of the pass, which a plain break ends.
func (c *checker) listEnd(l *loop, list []ast.Stmt, isWait map[ast.Expr]bool, at *ast.Node, inSwitch bool) passEnd {
	for _, s := range list {
		switch e := c.stmtEnd(l, s, isWait, at, inSwitch); e {
		case waited, unwaited:
			return e
		}
	}
	return fallsThrough
}

func (c *checker) stmtEnd(l *loop, s ast.Stmt, isWait map[ast.Expr]bool, at *ast.Node, inSwitch bool) passEnd {
	switch s := s.(type) {
	case *ast.ExprStmt:
		if c.isLoopWait(s.X, isWait) || c.leavesTest(s.X) {
			return waited
		}
	case *ast.ReturnStmt:
		return waited
	case *ast.BranchStmt:
		switch s.Tok {
		case token.CONTINUE:
			if s.Label == nil || c.info.Uses[s.Label] == l.label {
				if *at == nil {
					*at = s
				}
				return unwaited
			}
			return waited // it continues an outer loop: it leaves this one
		case token.BREAK:
			// A break of a switch or select inside the pass only ends
			// that statement, and the pass goes on after it.
			if s.Label == nil {
				if inSwitch {
					return fallsThrough
				}
				return waited
			}
			if lab, _ := c.info.Uses[s.Label].(*types.Label); lab != l.label && lab != nil && l.stmt.Pos() <= lab.Pos() && lab.Pos() < l.stmt.End() {
				return fallsThrough // a labelled statement inside the pass
			}
			return waited
		case token.GOTO:
			// Into the loop it goes on without the wait; out of it, it
			// leaves.
			if lab, _ := c.info.Uses[s.Label].(*types.Label); lab == nil || l.stmt.Pos() <= lab.Pos() && lab.Pos() < l.stmt.End() {
				if *at == nil {
					*at = s
				}
				return unwaited
			}
			return waited
		}
	case *ast.BlockStmt:
		return c.listEnd(l, s.List, isWait, at, inSwitch)
	case *ast.LabeledStmt:
		return c.stmtEnd(l, s.Stmt, isWait, at, inSwitch)
	case *ast.IfStmt:
		then := c.listEnd(l, s.Body.List, isWait, at, inSwitch)
		els := fallsThrough
		if s.Else != nil {
			els = c.stmtEnd(l, s.Else, isWait, at, inSwitch)
		}
		return join(then, els)
	case *ast.SelectStmt:
		var ends []passEnd
		for _, cl := range s.Body.List {
			cc := cl.(*ast.CommClause)
			if es, ok := cc.Comm.(*ast.ExprStmt); ok && c.isLoopWait(es.X, isWait) {
				ends = append(ends, waited)
				continue
			}
			e := c.listEnd(l, cc.Body, isWait, at, true)
			if e == fallsThrough && *at == nil {
				*at = cc
			}
			ends = append(ends, e)
		}
		return join(ends...)
	case *ast.SwitchStmt, *ast.TypeSwitchStmt:
		var body *ast.BlockStmt
		if sw, ok := s.(*ast.SwitchStmt); ok {
			body = sw.Body
		} else {
			body = s.(*ast.TypeSwitchStmt).Body
		}
		var ends []passEnd
		hasDefault := false
		for _, cl := range body.List {
			cc := cl.(*ast.CaseClause)
			hasDefault = hasDefault || cc.List == nil
			ends = append(ends, c.listEnd(l, cc.Body, isWait, at, true))
		}
		if !hasDefault {
			ends = append(ends, fallsThrough)
		}
		return join(ends...)
	}
	return fallsThrough
}

// join is the end of a statement whose paths end as ends do.
func join(ends ...passEnd) passEnd {
	all := len(ends) > 0
	for _, e := range ends {
		if e == unwaited {
			return unwaited
		}
		all = all && e == waited
	}
	if all {
		return waited
	}
	return fallsThrough
}

// isLoopWait reports whether e is one of the loop's waits (time.Sleep(d),
// <-time.After(d)).
func (c *checker) isLoopWait(e ast.Expr, isWait map[ast.Expr]bool) bool {
	d := c.waitDuration(e)
	return d != nil && isWait[d]
}

// leavesTest reports whether e is a call that ends the test's goroutine:
// t.Fatal, t.FailNow, t.Skip and their relatives, panic, runtime.Goexit,
// os.Exit.
func (c *checker) leavesTest(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		b, ok := c.info.Uses[fun].(*types.Builtin)
		return ok && b.Name() == "panic"
	case *ast.SelectorExpr:
		switch fun.Sel.Name {
		case "Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow", "Goexit", "Exit":
			return true
		}
	}
	return false
}
