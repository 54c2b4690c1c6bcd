package bubble

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"

	"github.com/dave/dst"
	"golang.org/x/tools/go/ast/astutil"

	"github.com/unflake/unflake/internal/match"
)

// A wrap makes each wait of the test's own flow end one nanosecond past
// its deadline.
//
// On the real clock a sleep always ends a little late: the test's check
// after time.Sleep(300ms) runs at 300ms and some microseconds, past any
// deadline of 300ms the code computes, however it computes it (a
// constant, a TTL the test handed over, mult*log10(n)*interval, a
// threshold only a bug derives). On a bubble's exact clock the check
// would run on the deadline itself, where a strict and a non-strict
// comparison differ: correct code that reaps "after more than 300ms"
// keeps the member, and a bug whose threshold lands on the sleep
// (age > window/4 after a sleep of window/4) hides. No reading of the
// code finds every such deadline, so the wrap removes the tie instead:
// each wait of the test's own flow ends one nanosecond late, as the
// original's always do, and the check sees what real time shows it.
// Callbacks the test hands to the code are overshot too (isCallback).
// Waits of goroutines the test starts, and the code's own waits, keep
// their exact deadlines (their order against the test's checks is what
// the other hazards of this package read).

// overshoot makes each wait of t's own flow that a test file holds end
// one nanosecond past its deadline: time.Sleep(d) becomes
// time.Sleep(d + time.Nanosecond), <-time.After(d) likewise. A wait in a
// func literal other than t's own, a subtest's or a callback's (a
// goroutine, a cleanup) keeps its duration; so does a constant wait of 0
// or less, which only yields.
func (a *Analysis) overshoot(t *Target) {
	for _, s := range t.Sites() {
		if a.overshot[s] {
			continue
		}
		call, _ := Wait(a.info, s)
		if call == nil || !a.ownFlow(t, s) {
			continue
		}
		if tv, ok := a.info.Types[call.Args[0]]; ok && tv.Value != nil {
			if v, exact := constant.Int64Val(constant.ToInt(tv.Value)); exact && v <= 0 {
				continue
			}
		}
		d, ok := a.pass.Dst(call).(*dst.CallExpr)
		if !ok {
			continue
		}
		a.overshot[s] = true
		addNanosecond(d)
	}
}

// addNanosecond makes d's first argument, a duration, one nanosecond
// longer: d + time.Nanosecond, keeping the comment after it.
func addNanosecond(d *dst.CallExpr) {
	arg := d.Args[0]
	after := arg.Decorations().After
	arg.Decorations().After = dst.None
	sum := &dst.BinaryExpr{X: arg, Op: token.ADD, Y: &dst.Ident{Path: "time", Name: "Nanosecond"}}
	sum.Decs.After = after
	d.Args[0] = sum
}

// ownFlow reports whether the wait s runs in t's own goroutine, in a
// test file a rule may rewrite: in t's body or a function it calls,
// outside any func literal but t's own and its subtests'.
func (a *Analysis) ownFlow(t *Target, s ast.Node) bool {
	var file *ast.File
	for _, f := range a.pass.Files {
		if f.Pos() <= s.Pos() && s.End() <= f.End() {
			file = f
			break
		}
	}
	if file == nil || !a.Editable(file) {
		return false
	}
	path, _ := astutil.PathEnclosingInterval(file, s.Pos(), s.End())
	for i, n := range path {
		lit, ok := n.(*ast.FuncLit)
		if !ok || ast.Node(lit) == t.fn {
			continue
		}
		if i+1 < len(path) && isSubtestCall(path[i+1], lit) {
			continue
		}
		if isCallback(path[i+1:], lit) {
			continue
		}
		return false
	}
	return true
}

// isCallback reports whether lit, whose enclosing nodes are outer
// (innermost first), is handed to code that may call it in the test's
// flow: an argument of a call (h.Time(func() { time.Sleep(50ms) }), a
// handler conversion) or a value in a composite literal (a Config's
// Handler field), or a literal called at once, but not of a go or defer
// statement's call or of a Cleanup. Code that times the callback's wait measures it as the
// original's real clock did, a little past its length: a histogram
// that files a 50ms handler above its 0.05s bucket files it on the bound
// on an exact clock (red team batch 14). A callback the code runs in a
// goroutine of its own is overshot too, as real time would.
func isCallback(outer []ast.Node, lit *ast.FuncLit) bool {
	if len(outer) == 0 {
		return false
	}
	switch p := outer[0].(type) {
	case *ast.CallExpr:
		if sel, ok := p.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Cleanup" {
			return false
		}
		if len(outer) > 1 {
			switch outer[1].(type) {
			case *ast.GoStmt, *ast.DeferStmt:
				return false
			}
		}
		return true // an argument, or a literal called at once: func() { ... }()
	case *ast.KeyValueExpr:
		if len(outer) < 2 || p.Value != lit {
			return false
		}
		_, ok := outer[1].(*ast.CompositeLit)
		return ok
	case *ast.CompositeLit:
		return true
	}
	return false
}

// isSubtestCall reports whether n is a call x.Run(name, lit): a subtest,
// which runs in its parent's flow while the parent waits for it.
func isSubtestCall(n ast.Node, lit *ast.FuncLit) bool {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) != 2 || call.Args[1] != lit {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Run"
}

// overshootTimers makes each timer t's own body starts end one
// nanosecond late too: time.NewTimer(d), time.AfterFunc(d, f),
// time.NewTicker(d), time.Tick(d) and a timer's or ticker's Reset(d) get
// d + time.Nanosecond. A wait on <-timer.C is a wait of the test's flow
// as much as a sleep, and on the real clock it ends a little late too: a
// test that waits one probe interval on its own timer and then checks a
// breaker's "more than the interval since it tripped" sees the tie in a
// bubble, where the strict comparison is false, and not in real time
// (red team batch 21, probewait). Timers in func literals other than
// t's own flow (a goroutine, a cleanup) keep their durations, as waits
// do.
func (a *Analysis) overshootTimers(t *Target) {
	ast.Inspect(t.body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || a.overshotTimers[call] || !a.isTimerStart(call) || !a.ownFlow(t, call) {
			return true
		}
		if tv, ok := a.info.Types[call.Args[0]]; ok && tv.Value != nil {
			if v, exact := constant.Int64Val(constant.ToInt(tv.Value)); exact && v <= 0 {
				return true
			}
		}
		d, ok := a.pass.Dst(call).(*dst.CallExpr)
		if !ok || len(d.Args) == 0 {
			return true
		}
		a.overshotTimers[call] = true
		addNanosecond(d)
		return true
	})
}

// isTimerStart reports whether call starts or resets a timer or ticker
// of the time package with a duration as its first argument.
func (a *Analysis) isTimerStart(call *ast.CallExpr) bool {
	if len(call.Args) == 0 {
		return false
	}
	fn := match.Callee(a.info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "time" {
		return false
	}
	switch fn.Name() {
	case "NewTimer", "AfterFunc", "NewTicker", "Tick":
		return fn.Type().(*types.Signature).Recv() == nil
	case "Reset":
		return fn.Type().(*types.Signature).Recv() != nil
	}
	return false
}
