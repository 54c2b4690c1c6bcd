package waitfor

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// A poll alone keeps a check's power only when the state the check asserts,
// once reached, cannot be left or exceeded in the window the sleep
// covered: then checking at the first instant it holds is as strict as
// checking at the end of the window. Such a condition is monotone. Any
// other is exact (==, !=, DeepEqual, Len, a state name, a bound that can
// be exceeded, >= on something that can decrease): a duplicate, an
// overshoot or a transient state shows only if the check still comes at
// the end of the window.
//
// The decision is conservative and local: what the check reads must be a
// local variable of the test function whose every write the test itself
// makes (its address never taken), so no code under test, correct or
// buggy, can move it the other way:
//
//   - a counter (an integer, or a sync/atomic integer read with Load) that
//     starts at a constant >= 0 and is only incremented by constants >= 0
//     (n++, n += 1, n.Add(1)), checked as reached: n >= c, n > c, n != 0
//     (and their mirror images, and testify's GreaterOrEqual, Greater,
//     NotZero);
//   - a flag (a bool, or an atomic.Bool) that is only ever set to true,
//     checked for true (if !done, assert.True).

// monotone reports whether every check of the group is monotone.
func (g *group) monotone() bool {
	for _, ck := range g.checks {
		if !g.monotoneCheck(ck) {
			return false
		}
	}
	return true
}

func (g *group) monotoneCheck(ck *check) bool {
	if ck.fails != nil {
		// An init declaring one name is a read, followed (if n :=
		// ran.Load(); n < 3): counter and flag see through it.
		return (ck.init == nil || len(ck.init.Lhs) == 1 && len(ck.init.Rhs) == 1) && g.monotoneFails(ck.fails)
	}
	args := ck.args
	switch ck.fn.Name() {
	case "True", "Truef":
		return len(args) > 0 && g.flag(args[0])
	case "GreaterOrEqual", "GreaterOrEqualf", "Greater", "Greaterf":
		return len(args) > 1 && g.counter(args[0]) && constAtLeast(g.c.info, args[1], 0)
	case "NotZero", "NotZerof":
		return len(args) > 0 && g.counter(args[0])
	case "Positive", "Positivef":
		return len(args) > 0 && g.counter(args[0])
	}
	return false
}

// monotoneFails reports whether a check failing when fails holds passes
// on a monotone condition: fails is "not reached yet".
func (g *group) monotoneFails(fails ast.Expr) bool {
	info := g.c.info
	switch x := ast.Unparen(fails).(type) {
	case *ast.UnaryExpr:
		return x.Op == token.NOT && g.flag(x.X) // if !done
	case *ast.BinaryExpr:
		switch x.Op {
		case token.LOR: // if a || b fails; passes on !a && !b
			return g.monotoneFails(x.X) && g.monotoneFails(x.Y)
		case token.LSS, token.LEQ: // n < c, n <= c: passes on n >= c, n > c
			return g.counter(x.X) && constAtLeast(info, x.Y, 0)
		case token.GTR, token.GEQ: // c > n, c >= n
			return g.counter(x.Y) && constAtLeast(info, x.X, 0)
		case token.EQL: // n == 0: passes on n != 0
			return g.counter(x.X) && isZero(info, x.Y) || g.counter(x.Y) && isZero(info, x.X)
		}
	}
	return false
}

func constAtLeast(info *types.Info, e ast.Expr, min int64) bool {
	n, ok := match.ConstInt(info, e)
	return ok && n >= min
}

func isZero(info *types.Info, e ast.Expr) bool {
	n, ok := match.ConstInt(info, e)
	return ok && n == 0
}

// followed returns what e reads: when e names a variable declared, by an
// init of the group's checks or a define before them, from one value and
// assigned nowhere else (n := ran.Load(); if n < 3), that value; else e.
// The variable is a copy taken at the check: the check is as monotone as
// the state it copies.
func (g *group) followed(e ast.Expr) ast.Expr {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return e
	}
	info := g.c.info
	v, ok := info.Uses[id].(*types.Var)
	if !ok {
		return e
	}
	var from ast.Expr
	declares := func(a *ast.AssignStmt) {
		if a == nil || a.Tok != token.DEFINE || len(a.Lhs) != 1 || len(a.Rhs) != 1 {
			return
		}
		if l, ok := a.Lhs[0].(*ast.Ident); ok && info.Defs[l] == v {
			from = a.Rhs[0]
		}
	}
	for _, st := range g.stmts {
		if a, ok := st.(*ast.AssignStmt); ok {
			declares(a)
		}
	}
	for _, ck := range g.checks {
		declares(ck.init)
	}
	if from == nil {
		return e
	}
	// Assigned again, or its address taken: not a plain copy.
	plain := true
	ast.Inspect(g.fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if l, ok := ast.Unparen(l).(*ast.Ident); ok && info.Uses[l] == v {
					plain = false
				}
			}
		case *ast.IncDecStmt:
			if x, ok := ast.Unparen(n.X).(*ast.Ident); ok && info.Uses[x] == v {
				plain = false
			}
		case *ast.UnaryExpr:
			if x, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op == token.AND && info.Uses[x] == v {
				plain = false
			}
		}
		return plain
	})
	if !plain {
		return e
	}
	return from
}

// counter reports whether e reads a local counter that only grows.
func (g *group) counter(e ast.Expr) bool {
	e = g.followed(e)
	v := g.stateVar(e)
	if v == nil {
		return false
	}
	if isAtomicState(v.Type()) {
		if match.IsNamed(v.Type(), "sync/atomic", "Bool") {
			return false
		}
	} else if b, ok := v.Type().Underlying().(*types.Basic); !ok || b.Info()&types.IsInteger == 0 {
		return false
	}
	return g.onlyGrows(v)
}

// flag reports whether e reads a local flag that is only ever set to true.
func (g *group) flag(e ast.Expr) bool {
	e = g.followed(e)
	v := g.stateVar(e)
	if v == nil {
		return false
	}
	if !match.IsNamed(v.Type(), "sync/atomic", "Bool") {
		if b, ok := v.Type().Underlying().(*types.Basic); !ok || b.Info()&types.IsBoolean == 0 {
			return false
		}
	}
	return g.onlyGrows(v)
}

// stateVar returns the local variable e reads, as v or v.Load() (a
// sync/atomic value), or nil.
func (g *group) stateVar(e ast.Expr) *types.Var {
	v, loaded := readVar(g.c.info, e)
	if v == nil || !loaded && isAtomicState(v.Type()) {
		return nil
	}
	return g.local(v)
}

// readVar returns the variable e reads, as v or as v.Load() of a
// sync/atomic value (loaded), or nil.
func readVar(info *types.Info, e ast.Expr) (v *types.Var, loaded bool) {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, _ := info.Uses[x].(*types.Var)
		return v, false
	case *ast.CallExpr:
		sel, ok := ast.Unparen(x.Fun).(*ast.SelectorExpr)
		if !ok || len(x.Args) != 0 || sel.Sel.Name != "Load" {
			return nil, false
		}
		id, ok := ast.Unparen(sel.X).(*ast.Ident)
		if !ok {
			return nil, false
		}
		v, _ := info.Uses[id].(*types.Var)
		if v == nil || !isAtomicState(v.Type()) {
			return nil, false
		}
		return v, true
	}
	return nil, false
}

// local returns v when it is declared in the function the wait is in.
func (g *group) local(v *types.Var) *types.Var {
	if match.IsPackageLevel(v) || v.Pos() < g.fn.Pos() || v.Pos() >= g.fn.End() {
		return nil
	}
	return v
}

// onlyGrows reports whether every write of the local v moves it one way:
// a counter starts at a constant >= 0 and is only incremented by
// constants >= 0, a flag starts false (or true) and is only set to true.
// Its address is never taken, so nothing but these writes changes it.
func (g *group) onlyGrows(v *types.Var) bool {
	info := g.c.info
	isV := func(e ast.Expr) bool {
		id, ok := ast.Unparen(e).(*ast.Ident)
		return ok && info.Uses[id] == v
	}
	isBool := match.IsNamed(v.Type(), "sync/atomic", "Bool")
	if b, ok := v.Type().Underlying().(*types.Basic); ok && b.Info()&types.IsBoolean != 0 {
		isBool = true
	}
	// up reports whether a value written into v keeps it moving one way.
	up := func(e ast.Expr) bool {
		if isBool {
			tv, ok := info.Types[e]
			return ok && tv.Value != nil && tv.Value.Kind() == constant.Bool && constant.BoolVal(tv.Value)
		}
		return constAtLeast(info, e, 0)
	}
	ok := true
	start := func(values []ast.Expr, i int) {
		if len(values) == 0 {
			return // the zero value
		}
		tv, has := info.Types[values[i]]
		if !has || tv.Value == nil || !isBool && constant.Sign(tv.Value) < 0 {
			ok = false
		}
	}
	match.WithStack(g.fn, func(n ast.Node, stack []ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if info.Defs[name] == v {
					if len(n.Values) > 0 && len(n.Values) != len(n.Names) {
						ok = false
					} else {
						start(n.Values, i)
					}
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				id, isID := ast.Unparen(l).(*ast.Ident)
				if !isID {
					continue
				}
				switch {
				case info.Defs[id] == v:
					if len(n.Rhs) != len(n.Lhs) {
						ok = false
					} else {
						start(n.Rhs, i)
					}
				case info.Uses[id] != v:
				case n.Tok == token.ASSIGN && len(n.Rhs) == len(n.Lhs):
					ok = ok && isBool && up(n.Rhs[i])
				case n.Tok == token.ADD_ASSIGN && !isBool:
					ok = ok && up(n.Rhs[0])
				default:
					ok = false
				}
			}
		case *ast.IncDecStmt:
			if isV(n.X) {
				ok = n.Tok == token.INC
			}
		case *ast.UnaryExpr:
			if n.Op == token.AND && isV(n.X) {
				ok = false // its address escapes
			}
		case *ast.SelectorExpr:
			if !isV(n.X) {
				break
			}
			call, called := stack[len(stack)-1].(*ast.CallExpr)
			switch {
			case !called || ast.Unparen(call.Fun) != n:
				ok = false // a method value: called who knows where
			case n.Sel.Name == "Load", n.Sel.Name == "Add", n.Sel.Name == "Store":
				// Add and Store are checked at the call, below.
			default:
				ok = false // Swap, CompareAndSwap, And, Or
			}
		case *ast.CallExpr:
			sel, isSel := ast.Unparen(n.Fun).(*ast.SelectorExpr)
			if !isSel || !isV(sel.X) || !isAtomicState(v.Type()) {
				break
			}
			switch sel.Sel.Name {
			case "Add":
				ok = !isBool && len(n.Args) == 1 && up(n.Args[0])
			case "Store":
				ok = isBool && len(n.Args) == 1 && up(n.Args[0])
			}
		}
		return ok
	})
	return ok
}

// A level is what a monotone check waits for: the state v (a counter, or a
// flag read as 0 or 1) at least min. Once reached, it stays.
type level struct {
	v   *types.Var
	min int64
}

// levels returns what a monotone check of the group needs, every level at
// once (if a < 1 || b < 2 needs both), or false when the check is not
// monotone or a threshold is not a constant. It reads the check as
// monotoneCheck does.
func (g *group) levels(ck *check) ([]level, bool) {
	if !g.monotoneCheck(ck) {
		return nil, false
	}
	info := g.c.info
	at := func(e ast.Expr, min int64) ([]level, bool) {
		v := g.stateVar(g.followed(e))
		return []level{{v, min}}, v != nil
	}
	bound := func(e ast.Expr, plus int64) (int64, bool) {
		n, ok := match.ConstInt(info, e)
		return n + plus, ok
	}
	var fails func(e ast.Expr) ([]level, bool)
	fails = func(e ast.Expr) ([]level, bool) {
		switch x := ast.Unparen(e).(type) {
		case *ast.UnaryExpr: // !done
			return at(x.X, 1)
		case *ast.BinaryExpr:
			var n ast.Expr
			var min int64
			ok := true
			switch x.Op {
			case token.LOR:
				a, okA := fails(x.X)
				b, okB := fails(x.Y)
				return append(a, b...), okA && okB
			case token.LSS: // n < c: needs n >= c
				n = x.X
				min, ok = bound(x.Y, 0)
			case token.LEQ: // n <= c: needs n >= c+1
				n = x.X
				min, ok = bound(x.Y, 1)
			case token.GTR: // c > n
				n = x.Y
				min, ok = bound(x.X, 0)
			case token.GEQ: // c >= n
				n = x.Y
				min, ok = bound(x.X, 1)
			case token.EQL: // n == 0: needs n >= 1
				n, min = x.X, 1
				if isZero(info, x.X) {
					n = x.Y
				}
			}
			if !ok || n == nil {
				return nil, false
			}
			return at(n, min)
		}
		return nil, false
	}
	if ck.fails != nil {
		return fails(ck.fails)
	}
	args := ck.args
	switch ck.fn.Name() {
	case "GreaterOrEqual", "GreaterOrEqualf":
		if min, ok := bound(args[1], 0); ok {
			return at(args[0], min)
		}
	case "Greater", "Greaterf":
		if min, ok := bound(args[1], 1); ok {
			return at(args[0], min)
		}
	default: // True, NotZero, Positive
		return at(args[0], 1)
	}
	return nil, false
}
