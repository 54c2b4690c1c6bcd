package bubble

import (
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// A cleanup or a finalizer the code registers with the runtime
// (runtime.AddCleanup, runtime.SetFinalizer) runs on a goroutine of the
// runtime's own, outside any synctest bubble. One that touches a value
// the bubble made (sends on its channel, stops its timer: a connection
// pool reclaiming a lease when its handle is collected) is a fatal error,
// "send on synctest channel from outside bubble", which kills the test
// binary where the original failed at its check, and whether it runs at
// all depends on the collector: running the correct code cannot show it
// (red team batch 21, connpool and leasepool). Not fixed.

const checkedRuntimeCleanup = "no cleanup or finalizer the code registers with the runtime, which would run outside the bubble"

// runtimeCleanup names where the code the bubble would hold registers a
// cleanup or a finalizer with the runtime, or "".
func (c *clockScan) runtimeCleanup() string {
	found := ""
	for _, r := range c.rootList {
		c.inspect(r, func(n ast.Node, _ []ast.Node) bool {
			if found != "" {
				return false
			}
			if call, ok := n.(*ast.CallExpr); ok && match.IsPkgFunc(c.a.info, call, "runtime", "AddCleanup", "SetFinalizer") {
				if fn, ok := types.Unalias(c.a.info.TypeOf(call.Args[len(call.Args)-1])).(*types.Basic); ok && fn.Kind() == types.UntypedNil {
					return true // SetFinalizer(x, nil) clears one
				}
				found = c.at(types.ExprString(call.Fun), call)
			}
			return found == ""
		})
		if found != "" {
			break
		}
	}
	return found
}
