package bubble

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// A loop of the code paced by its own wait (a ticker's tick, a timer, a
// sleep) that computes a quantity from elapsed time (a bucket's refill:
// the whole periods since the last one paid for, time.Since(last)/every)
// sees, in a bubble, elapsed time that is exactly a multiple of its
// period: the code's own waits end exactly on time and nothing else moves
// the clock. Real time is always a little past each tick, so a rounding
// of it (the periods begun counted as paid, a remainder rounded up, a
// ceiling) pays one more in real time, which the original's bound
// catches, and nothing more in the bubble, where the remainder is 0. The
// correct code passes either way, so running it cannot tell: the site is
// not fixed (red team batch 15, ticksecond).

const checkedPaced = "no quantity computed from elapsed time in a loop the code's own waits pace"

// pacedCompute returns why a loop of the code under test (its non-test
// roots) is paced by its own wait and computes from elapsed time, or "".
func (c *clockScan) pacedCompute() string {
	for i, r := range c.rootList {
		if i == 0 || c.a.testCode(r) {
			continue // the test's own waits are overshot (overshoot.go)
		}
		found := ""
		c.inspect(r, func(n ast.Node, _ []ast.Node) bool {
			if found != "" {
				return false
			}
			var body *ast.BlockStmt
			var rangeOver ast.Expr
			switch l := n.(type) {
			case *ast.ForStmt:
				body = l.Body
			case *ast.RangeStmt:
				body, rangeOver = l.Body, l.X
			default:
				return true
			}
			wait := c.ownWait(body)
			if wait == "" && rangeOver != nil && c.tickChan(rangeOver) {
				wait = c.at("range "+types.ExprString(rangeOver), rangeOver)
			}
			if wait == "" {
				return true
			}
			if what := c.computesIn(body); what != "" {
				found = fmt.Sprintf("the code computes a quantity from elapsed time (%s) in a loop paced by its own wait (%s)", what, wait)
			}
			return found == ""
		})
		if found != "" {
			return found
		}
	}
	return ""
}

// ownWait returns where body, a loop's, waits by the code's own clock (a
// sleep, a timer, <-tick.C, <-time.After(d)), not in a closure, or "".
func (c *clockScan) ownWait(body *ast.BlockStmt) string {
	return c.firstOutsideClosures(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			return waitDuration(c.a.info, n, "Sleep", "After", "Tick", "NewTimer") != nil
		case *ast.UnaryExpr:
			return n.Op == token.ARROW && c.tickChan(n.X)
		}
		return false
	})
}

// tickChan reports whether e is the channel of a ticker or a timer
// (tick.C) or of time.Tick or time.After.
func (c *clockScan) tickChan(e ast.Expr) bool {
	info := c.a.info
	switch e := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		return e.Sel.Name == "C" && match.IsNamed(info.TypeOf(e.X), "time", "Ticker", "Timer")
	case *ast.CallExpr:
		return match.IsPkgFunc(info, e, "time", "Tick", "After")
	}
	return false
}

// computesIn returns where body computes a quantity from elapsed time,
// itself (time.Since(last)/every, float64(el)) or through the package's
// functions it calls (b.refill()), not in a closure, or "".
func (c *clockScan) computesIn(body *ast.BlockStmt) string {
	return c.firstOutsideClosures(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			return arith(n.Op) && (c.elapsed(n.X) || c.elapsed(n.Y))
		case *ast.CallExpr:
			return c.computed(n) || c.reaches(n, c.computing)
		}
		return false
	})
}

// firstOutsideClosures names the first node of body, not in a function
// literal (the loop's own code, not what it hands on), that is, or "".
func (c *clockScan) firstOutsideClosures(body *ast.BlockStmt, is func(ast.Node) bool) string {
	found := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if e, ok := n.(ast.Expr); ok && is(n) {
			found = c.at(types.ExprString(e), n)
		}
		return found == ""
	})
	return found
}
