package readiness

import (
	"fmt"
	"go/ast"
	"go/types"
)

// The burst hazard. Two signals sent to a Go child back to back reach it
// in either order, or as one: the kernel hands each to whichever thread
// of the child can take it, and the runtime queues them as they come (a
// signal of a kind already pending is merged with it). The original's
// sleep left the child idle, its threads parked, so the signals came one
// after the other, in order; just after the readiness line the child (its
// runtime, the testing package) is still at work, and the second may be
// handled first: an agent that syncs on SIGHUP and leaves on SIGTERM
// leaves without syncing, on correct code, a few runs in a hundred under
// load. Running the test cannot reliably tell, so such a site is not
// fixed.

// burstChecked is the Checked entry of a fix: the hazard excluded.
const burstChecked = "the test sends the child one signal at a time: no second signal follows the first without a wait between"

// burstHazard says why the signal of s is followed by another to the same
// child with nothing between that waits, naming it; or "".
func (c *checker) burstHazard(s *site) string {
	i := 0
	for i < len(s.list) && !(s.list[i].Pos() <= s.signal.Pos() && s.signal.End() <= s.list[i].End()) {
		i++
	}
	if i == len(s.list) {
		return ""
	}
	switch s.list[i].(type) {
	case *ast.ForStmt, *ast.RangeStmt:
		return fmt.Sprintf("the test signals the child in a loop (at %s), one signal right after another: %s", c.line(s.list[i]), burstWords)
	}
	for _, st := range s.list[i+1:] {
		if c.isSleep(st) || c.waits([]ast.Stmt{st}, s.cmd) || c.waitsFor(st, s.cmd) {
			return ""
		}
		if sig := c.signalIn(st, s.cmd); sig != nil {
			return fmt.Sprintf("the test sends the child another signal right after the first (%s at %s), with nothing between them that waits: %s", types.ExprString(sig.Fun), c.line(sig), burstWords)
		}
	}
	return ""
}

// burstWords completes the burst hazard's reason.
const burstWords = "two signals sent back to back reach a Go child in either order, or as one, depending on what its threads are doing; the sleep left the child idle, so they came in order, while just after the readiness line it is still at work and may handle the second first (a leave before a sync) on correct code; keep the sleep, or wait for the child to act on the first signal before sending the next"

// waitsFor reports whether st calls cmd.Wait (the child has exited after
// it).
func (c *checker) waitsFor(st ast.Stmt, cmd *types.Var) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || found {
			return false
		}
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Wait" {
			if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && c.info.Uses[id] == types.Object(cmd) {
				found = true
			}
		}
		return !found
	})
	return found
}
