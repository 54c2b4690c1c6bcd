package bubble

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// The hazards of "no time passes between two readings" (backToBack) look
// at the test's calls: a second call right after another. The code can
// read the clock twice with nothing between as well, in a loop of its
// own: a router deduping a batch of alerts reads the clock for each one,
// keeps the reading of the first and compares the elapsed time of the
// next with its repeat interval, all inside the one call the test makes.
// In real time each pass is a few microseconds after the last; in a
// bubble exactly 0. So a bug that leaves the interval 0 (an option lost,
// a field not copied) sends every repeat in real time, which the original
// catches, and one in the bubble, as the correct code does; a rounding of
// elapsed time (a refill rounded up, "at least one tick") likewise. The
// correct code passes either way, so running cannot tell: not fixed
// (red team batch 18, batchdedupe).
//
// A loop counts when, in the package's code the test reaches, its body
// reads the clock, keeps a reading where a later pass can see it (a
// field, a map's or a slice's element, a variable declared outside the
// body, or through a function of the package that stores one), and
// compares elapsed time with a duration that may be zero or tiny, or
// computes a quantity from elapsed time (itself or through the package's
// functions it calls), with no wait of the code's own clock in the body
// (a loop paced by its own wait is paced.go's). A loop that only compares
// readings kept by earlier calls (a sweep over stamped entries) keeps
// nothing and is the test's calls' hazard, not this one.

// loopAgain returns why a loop of the code under test reads the clock on
// every pass with nothing between and decides from the elapsed time
// since an earlier pass's reading, or "". compares selects the hazard:
// elapsed time against a duration that may be zero (true) or a quantity
// computed from it (false).
func (c *clockScan) loopAgain(compares bool) string {
	for i, r := range c.rootList {
		if i == 0 || c.a.testCode(r) {
			continue // the test's own loops are backToBack's
		}
		found := ""
		c.inspect(r, func(n ast.Node, _ []ast.Node) bool {
			if found != "" {
				return false
			}
			var body *ast.BlockStmt
			switch l := n.(type) {
			case *ast.ForStmt:
				body = l.Body
			case *ast.RangeStmt:
				body = l.Body
				if c.tickChan(l.X) {
					return true // paced by a ticker: paced.go
				}
			default:
				return true
			}
			if c.ownWait(body) != "" {
				return true
			}
			reads := c.firstOutsideClosures(body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				return ok && (readsClock(c.a.info, call) || c.reaches(call, c.clocked))
			})
			if reads == "" {
				return true
			}
			kept := c.keptInLoop(body)
			if kept == "" {
				return true
			}
			decides := ""
			if compares {
				decides = c.firstOutsideClosures(body, func(n ast.Node) bool {
					if call, ok := n.(*ast.CallExpr); ok && c.reaches(call, c.comparing) {
						return true
					}
					return c.againstMaybeZero(n)
				})
				if decides != "" {
					decides = "compares elapsed time with a duration that may be zero or tiny (" + decides + ")"
				}
			} else if what := c.computesIn(body); what != "" {
				decides = "computes a quantity from elapsed time (" + what + ")"
			}
			if decides != "" {
				found = fmt.Sprintf("the code reads the clock on every pass of a loop that does not wait (%s), keeps a reading for a later pass (%s) and %s", reads, kept, decides)
			}
			return found == ""
		})
		if found != "" {
			return found
		}
	}
	return ""
}

// keptInLoop returns where body, a loop's, keeps a reading of the clock
// where a later pass sees it, or "": assigned to a field, an element of
// a map or a slice, or a variable declared outside body (last = now), or
// stored by a function of the package body calls (b.touch(now)).
func (c *clockScan) keptInLoop(body *ast.BlockStmt) string {
	return c.firstStmtOutsideClosures(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				return false
			}
			for i, l := range n.Lhs {
				if i >= len(n.Rhs) || !(c.reading(n.Rhs[i]) || c.readingMoved(n.Rhs[i])) {
					continue
				}
				switch l := ast.Unparen(l).(type) {
				case *ast.IndexExpr, *ast.SelectorExpr:
					return true
				case *ast.Ident:
					if obj := c.a.info.ObjectOf(l); obj != nil && (obj.Pos() < body.Pos() || obj.Pos() >= body.End()) {
						return true
					}
				}
			}
		case *ast.CallExpr:
			fn := match.Callee(c.a.info, n)
			if fn != nil && fn.Pkg() == c.a.pass.Pkg {
				if c.restarts == nil {
					c.restarts = map[*types.Func]bool{}
				}
				return c.storesReading(fn, c.restarts)
			}
		}
		return false
	})
}

// firstStmtOutsideClosures is firstOutsideClosures for any node, named by
// its source text (an assignment as well as an expression).
func (c *clockScan) firstStmtOutsideClosures(body *ast.BlockStmt, is func(ast.Node) bool) string {
	found := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if n != nil && is(n) {
			found = c.at(nodeString(n), n)
		}
		return found == ""
	})
	return found
}

// loopAgainIf is loopAgain's reason, the hazard explained, when the scan
// found the comparison (or the computation) somewhere (found), or "".
func (c *clockScan) loopAgainIf(found, compares bool) string {
	if !found {
		return ""
	}
	why := c.loopAgain(compares)
	switch {
	case why == "":
		return ""
	case compares:
		return why + ": in a synctest bubble no time passes between two passes of the loop, so the elapsed time since an earlier pass's reading is exactly 0 there where real time gives a few microseconds, and a bug that leaves the duration 0 or makes it nanoseconds (an option lost, a field not copied, a unit dropped) flips the comparison in real time, which the original catches, and not in the bubble; the correct code sets the duration, so running it cannot tell"
	default:
		return why + ": in a synctest bubble no time passes between two passes of the loop, so the elapsed time since an earlier pass's reading is exactly 0 there where real time gives a few microseconds, and a rounding of it (a refill or a tick count rounded up) that the original catches passes in the bubble; the correct code passes either way, so running it cannot tell"
	}
}
