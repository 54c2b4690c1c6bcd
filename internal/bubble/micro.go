package bubble

import (
	"go/ast"
	"go/types"
	"sort"
)

// A wrap ends the test's own waits one nanosecond past their deadlines
// (overshoot.go), as real sleeps end some tens of microseconds past
// them. A count of whole microseconds drops that nanosecond:
// now.UnixMicro() stamps compared with <=, time.Since(last).Microseconds()
// against a TTL's. A check at the end of a sleep as long as a bug's
// deadline (a TTL halved) is then decided on its boundary in the bubble,
// where real time is always a microsecond or more past it, and the bug
// that the original catches passes (red team batch 19, presencemicros).
// The correct code passes either way, so running cannot tell: not
// fixed, as a coarsened reading is (builds.go). Coarser counts do not
// count: real time is less than a millisecond past a sleep's end, so
// the original sees a boundary of whole milliseconds only now and then.
// Read by syntax in every build of the package, as coarsened is.

// microCounted names the first count of whole microseconds of a reading
// or a duration in files, "x at file:line", or "".
func microCounted(files []*lockFile) string {
	timeOf, tn := fileTimeNames(files)
	var hits []string
	for _, lf := range files {
		tm := timeOf[lf]
		ast.Inspect(lf.f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 0 {
				return true
			}
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok {
				return true
			}
			// Microseconds with no argument is time.Duration's, by
			// syntax: what else is named so is rare, and counts the same.
			if sel.Sel.Name == "UnixMicro" && tn.isTime(sel.X, tm) || sel.Sel.Name == "Microseconds" {
				hits = append(hits, types.ExprString(call)+" at "+lf.at(call.Pos()))
			}
			return true
		})
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	return hits[0]
}

// microHazard says where the code under test, in some build, counts
// time in whole microseconds, or "" (microCounted).
func (a *Analysis) microHazard() string {
	at := microCounted(a.codeFiles())
	if at == "" {
		return ""
	}
	return "the code under test, in some build, counts time in whole microseconds (" + at + "): the wrap ends the test's waits one nanosecond past their deadlines, as real sleeps end a microsecond or more past them, and the count drops that nanosecond, so a check at the end of a sleep as long as a bug's deadline (a TTL halved) is decided on its boundary in the bubble and passes the bug the original catches; running the correct build cannot tell"
}
