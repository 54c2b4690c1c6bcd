package bubble

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// summary decides, from the effect summary s of fn (a function of another
// package, referenced by the identifier id), what calling it does to a
// bubble, as the walk decides for the package's own code:
//
//   - the real network, processes, signals, syscalls or cgo, and
//     package-level channels, timers, wait groups or contexts (made
//     outside the bubble) block the test when fn or a function it calls
//     has them (near): the same evidence as a helper of the package
//     that calls net.Listen. Deeper down the chain such an effect is
//     often one branch of many (fasthttp's Response.Body reads from a
//     *net.TCPConn only for a body stream of that type), so it makes the
//     test unproven, with the chain: fix --verify may try the bubble;
//   - goroutines that nothing shown ends make it unproven, as a go
//     statement does; so do goroutines a lifecycle method of the value fn
//     returns, or of its receiver, ends (GoroutineEnds), unless the code
//     that calls fn ends that value at cleanup (defer v.Close(),
//     t.Cleanup(v.Close); see endedAt);
//   - a call the summary could not follow (Opaque) leaves fn unknown:
//     unproven, as a function without a summary;
//   - anything else (the real clock's timers, which are virtual in a
//     bubble; writes of the environment or of package-level variables)
//     does not matter to a bubble.
func (w *walker) summary(fn *types.Func, ended map[string]bool, s *effect.Summary, where string) {
	name := match.PkgFuncName(fn)
	for _, e := range s.Effects {
		why := "the test calls " + e.Why() + where
		// The same obstacle reached through several functions (a
		// package-level variable two helpers use, the real network) is
		// one blocker.
		key := effectKey{e.Kind, e.What}
		hazard := func(why string) { w.blockAs(key, why) }
		if !near(e) {
			hazard = func(why string) { w.unproveAs(key, why) }
		}
		switch e.Kind {
		case effect.Network:
			if near(e) {
				why += effectSeam(e)
			} else {
				w.netFar()
			}
			hazard(why)
		case effect.Process, effect.Signal:
			hazard(why)
		case effect.Syscall, effect.Cgo:
			hazard(why + "; a synctest bubble cannot follow it")
		case effect.SharedSync:
			switch verdict, rule := outside(e.Type); verdict {
			case blocks:
				hazard(why + rule)
			case unsure:
				w.unproveAs(key, why+rule)
			case inParallel:
				w.unproveParallel(key, why+rule)
			}
		case effect.GoroutineForever:
			w.spawned(name + where)
			w.unprove(why)
		case effect.GoroutineEnds:
			w.spawned(name + where)
			if e.Ends == "" || !ended[e.Type+"."+e.Ends] && !(e.Type == "" && ended[e.Ends]) {
				w.unprove(why + "; the test does not call " + e.Ends + " (with defer, t.Cleanup or before it returns), so the goroutine never ends")
			}
		}
	}
	if s.RunsBubble {
		// Bubbles do not nest: synctest.Test panics inside one.
		w.block("the test already runs code in a synctest bubble (through " + name + ")" + where)
	}
	if s.Spin != nil {
		w.unprove("the test calls " + s.Spin.Why() + where + "; " + spinHangs)
	}
	if s.RealClock != nil {
		// A coarse clock a goroutine of init refreshes: the bubble's
		// waits pass in no real time, so it does not move with them,
		// and a check on what the code makes of now sees neither
		// clock (red team batch 20, coarseclock).
		rc := *s.RealClock
		what := rc.What
		rc.What = ""
		w.block("the test calls " + rc.Why() + where + ", which " + what + ": that state moves in real time, not with the bubble's virtual clock, so a wait in the bubble passes without it moving and the code's idea of now is neither clock")
	}
	if s.Opaque != "" {
		w.unprove("the test calls " + name + ", whose code the analysis cannot see in full (it " + s.Opaque + ")" + where)
	}
}

// near reports whether the function the test calls has the effect e in
// its own code or in a function it calls: the chain, which ends with the
// standard library function that has it, if any, is at most two long.
func near(e effect.Effect) bool { return len(e.Via) <= 2 }

// endedAt records in w.ended, for each call of a function in root, the
// methods that the same block calls at cleanup (defer v.M(),
// t.Cleanup(v.M), or t.Cleanup(func() { ...; v.M(); ... }) with the call
// as a statement of the literal's body), or plainly in a later statement
// that nothing before it can skip (see endsLater), on a variable the
// call's result is assigned to by a later statement (v := lib.New(), v,
// err := lib.New()), or on the variable whose method the call is
// (s.Start(), with defer s.Stop() before or after it). Such a method runs
// before the bubble's function returns, on every path that made the call
// and passes. Methods
// are recorded by name and as "import/path.Type.Method" (Effect.Type).
func (w *walker) endedAt(root ast.Node) {
	info := w.a.info
	record := func(fun *ast.Ident, v *types.Var, m string) {
		if reassigned(info, root, v) {
			return // the cleanup may end another value than the call's
		}
		if w.ended == nil {
			w.ended = map[*ast.Ident]map[string]bool{}
		}
		if w.ended[fun] == nil {
			w.ended[fun] = map[string]bool{}
		}
		w.ended[fun][m] = true
		w.ended[fun][effects.TypeKey(v.Type())+"."+m] = true
	}
	ast.Inspect(root, func(n ast.Node) bool {
		list := match.StmtList(n)
		for i, st := range list {
			var call *ast.CallExpr
			var lhs []ast.Expr
			switch st := st.(type) {
			case *ast.AssignStmt:
				if len(st.Rhs) == 1 {
					call, _ = ast.Unparen(st.Rhs[0]).(*ast.CallExpr)
					lhs = st.Lhs
				}
			case *ast.ExprStmt:
				call, _ = ast.Unparen(st.X).(*ast.CallExpr)
			}
			if call == nil {
				continue
			}
			var fun *ast.Ident
			switch f := ast.Unparen(call.Fun).(type) {
			case *ast.Ident:
				fun = f
			case *ast.SelectorExpr:
				fun = f.Sel
				// The receiver: its cleanup may come before the call.
				if x, ok := ast.Unparen(f.X).(*ast.Ident); ok {
					if sel, ok := info.Selections[f]; ok && sel.Kind() == types.MethodVal {
						if v, ok := info.Uses[x].(*types.Var); ok {
							for j, other := range list {
								if m := w.cleanupOf(other, v); j != i && m != "" {
									record(fun, v, m)
								}
								if m := w.endsLater(list, i, j, v); m != "" {
									record(fun, v, m)
								}
							}
						}
					}
				}
			}
			if fun == nil {
				continue
			}
			for _, l := range lhs {
				lid, ok := l.(*ast.Ident)
				if !ok || lid.Name == "_" {
					continue
				}
				v, _ := info.ObjectOf(lid).(*types.Var)
				if v == nil {
					continue
				}
				for j, later := range list[i+1:] {
					if m := w.cleanupOf(later, v); m != "" {
						record(fun, v, m)
					}
					if m := w.endsLater(list, i, i+1+j, v); m != "" {
						record(fun, v, m)
					}
				}
			}
		}
		return true
	})
}

// endsLater returns the method of v that list[j], a statement after
// list[i], calls plainly (v.Release(), err = v.Close()) when no statement
// between them can leave the block (a return, break, continue or goto
// outside a function literal): every path through list[i] that goes on
// reaches it. A path that leaves by t.Fatal or a panic fails the test
// anyway. Or "".
func (w *walker) endsLater(list []ast.Stmt, i, j int, v *types.Var) string {
	if j <= i {
		return ""
	}
	m := w.calledOn(list[j], v)
	if m == "" {
		return ""
	}
	for _, st := range list[i+1 : j] {
		leaves := false
		ast.Inspect(st, func(n ast.Node) bool {
			switch n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt, *ast.BranchStmt:
				leaves = true
			}
			return !leaves
		})
		if leaves {
			return ""
		}
	}
	return m
}

// reassigned reports whether root assigns v after declaring it (v = x,
// v, err := x with v declared before, a range with =) or takes its
// address.
func reassigned(info *types.Info, root ast.Node, v *types.Var) bool {
	is := func(e ast.Expr) bool {
		id, ok := ast.Unparen(e).(*ast.Ident)
		return ok && info.Uses[id] == types.Object(v)
	}
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				found = found || is(l)
			}
		case *ast.RangeStmt:
			found = found || n.Tok == token.ASSIGN && (n.Key != nil && is(n.Key) || n.Value != nil && is(n.Value))
		case *ast.UnaryExpr:
			found = found || n.Op == token.AND && is(n.X)
		}
		return !found
	})
	return found
}

// cleanupOf returns the method of v that the statement st calls at
// cleanup (defer v.M(), t.Cleanup(v.M), t.Cleanup(func() { v.M() })),
// or "".
func (w *walker) cleanupOf(st ast.Stmt, v *types.Var) string {
	info := w.a.info
	method := func(e ast.Expr) string { return w.methodOf(e, v) }
	switch st := st.(type) {
	case *ast.DeferStmt:
		return method(st.Call.Fun)
	case *ast.ExprStmt:
		call, ok := ast.Unparen(st.X).(*ast.CallExpr)
		if !ok || len(call.Args) != 1 || !match.IsMethod(info, call, "testing", "Cleanup") {
			return ""
		}
		switch arg := ast.Unparen(call.Args[0]).(type) {
		case *ast.SelectorExpr:
			return method(arg)
		case *ast.FuncLit:
			for _, s := range arg.Body.List {
				if m := w.calledOn(s, v); m != "" {
					return m
				}
			}
		}
	}
	return ""
}

// methodOf returns the name of the method of v that e selects (v.M), or "".
func (w *walker) methodOf(e ast.Expr, v *types.Var) string {
	info := w.a.info
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if x, ok := ast.Unparen(sel.X).(*ast.Ident); ok && info.Uses[x] == types.Object(v) {
		if s, ok := info.Selections[sel]; ok && s.Kind() == types.MethodVal {
			return sel.Sel.Name
		}
	}
	return ""
}

// calledOn returns the method of v that the statement st calls: v.M(),
// _ = v.M(), err := v.M(), or the init of an if; or "".
func (w *walker) calledOn(st ast.Stmt, v *types.Var) string {
	var e ast.Expr
	switch st := st.(type) {
	case *ast.ExprStmt:
		e = st.X
	case *ast.AssignStmt:
		if len(st.Rhs) == 1 && (st.Tok == token.ASSIGN || st.Tok == token.DEFINE) {
			e = st.Rhs[0]
		}
	case *ast.IfStmt:
		if st.Init != nil {
			return w.calledOn(st.Init, v)
		}
	}
	if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
		return w.methodOf(call.Fun, v)
	}
	return ""
}

// effectKey identifies an effect's obstacle across the functions that
// reach it.
type effectKey struct {
	kind effect.Kind
	what string
}
