package bubble

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"github.com/unflake/unflake/internal/match"
)

// A reading of the clock need not stay a time.Time, nor stay in the code
// that made it. The test may read the clock and hand the reading to the
// code (AllowAt(client, time.Now()), the shape of x/time/rate's AllowN),
// and the code may keep a reading as a number (an atomic.Int64 of
// UnixNano stamped at init, or by its first caller). Looking for clock
// reads by type and place misses both (red team batch 17, allowat and
// uptimeinit): a reading handed in is made by the call as much as one
// the code takes itself, and a package-level number stamped on the real
// clock is a time from outside the bubble as much as a time.Time is.
//
// clockDerived follows readings through the package's files, the tests'
// included: a value is derived when it contains a call of time.Now or of
// a clock held in a function value (nowValue), a call of a function of
// the package that returns such a value, or a variable, field or
// parameter set from one (an assignment, a declaration, a composite
// literal's field, a call's argument for the callee's parameter), moved,
// converted or made a number on the way (t.Add(d), t.UnixNano(),
// int64(...)). It is conservative: every operation keeps the mark.
type clockDerived struct {
	objs    map[types.Object]bool // variables, fields and parameters set from a reading
	returns map[*types.Func]bool  // functions of the package returning one
	// globals are the package-level variables of the package set from a
	// reading (assigned, or handed one by a method call on them:
	// startNanos.Store(time.Now().UnixNano())), with the first place.
	globals map[*types.Var]string
}

// derived returns the package's clockDerived, computed once.
func (a *Analysis) derived() *clockDerived {
	if a.fromClockSet != nil {
		return a.fromClockSet
	}
	d := &clockDerived{objs: map[types.Object]bool{}, returns: map[*types.Func]bool{}, globals: map[*types.Var]string{}}
	a.fromClockSet = d
	// To a fixed point: a parameter marked late marks what its function
	// sets from it. Each round only adds marks, so it ends.
	for changed := true; changed; {
		changed = false
		for _, f := range a.pass.AllFiles {
			for _, decl := range f.Decls {
				var fn *types.Func
				if fd, ok := decl.(*ast.FuncDecl); ok {
					fn, _ = a.info.Defs[fd.Name].(*types.Func)
				}
				if a.deriveIn(decl, fn) {
					changed = true
				}
			}
		}
	}
	return d
}

// deriveIn marks what root (a declaration) sets from a reading; fn is the
// function whose returns root's return statements are, or nil. It
// reports whether it marked anything new.
func (a *Analysis) deriveIn(root ast.Node, fn *types.Func) bool {
	d := a.fromClockSet
	changed := false
	mark := func(obj types.Object) {
		if obj != nil && !d.objs[obj] {
			d.objs[obj], changed = true, true
		}
	}
	global := func(target ast.Expr, at ast.Node) {
		if v := match.Root(a.info, target); match.IsPackageLevel(v) && v.Pkg() == a.pass.Pkg {
			if _, ok := d.globals[v]; !ok {
				d.globals[v], changed = a.pos(types.ExprString(at.(ast.Expr)), at), true
			}
		}
	}
	set := func(lhs, rhs ast.Expr) {
		if rhs == nil || !a.fromClock(rhs) {
			return
		}
		mark(objOf(a.info, lhs))
		if ix, ok := ast.Unparen(lhs).(*ast.IndexExpr); ok {
			mark(objOf(a.info, ix.X)) // stamps[k] = now: the container holds readings
		}
		global(lhs, rhs)
	}
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			// Its returns are its own; what it sets is marked.
			if a.deriveIn(n.Body, nil) {
				changed = true
			}
			return false
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				switch {
				case len(n.Lhs) == len(n.Rhs):
					set(l, n.Rhs[i])
				case len(n.Rhs) == 1:
					set(l, n.Rhs[0])
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				switch {
				case len(n.Values) == len(n.Names):
					set(id, n.Values[i])
				case len(n.Values) == 1:
					set(id, n.Values[0])
				}
			}
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok {
				if v, ok := a.info.Uses[id].(*types.Var); ok && v.IsField() && a.fromClock(n.Value) {
					mark(v)
				}
			}
		case *ast.ReturnStmt:
			if fn != nil && !d.returns[fn] {
				for _, r := range n.Results {
					if a.fromClock(r) {
						d.returns[fn], changed = true, true
						break
					}
				}
			}
		case *ast.CallExpr:
			// A function of the package: its parameters take the
			// arguments (the test's time.Now() is the callee's now).
			if callee := match.Callee(a.info, n); callee != nil && callee.Pkg() == a.pass.Pkg {
				if sig, ok := callee.Type().(*types.Signature); ok {
					for i, arg := range n.Args {
						if i < sig.Params().Len() && a.fromClock(arg) {
							mark(sig.Params().At(i))
						}
					}
				}
			}
			// A method called on a package-level variable with a
			// reading stores it there, as far as anyone can tell
			// (startNanos.CompareAndSwap(0, time.Now().UnixNano())).
			// So does a call handed its address and a reading
			// (atomic.StoreInt64(&lastNanos, time.Now().UnixNano())).
			var targets []ast.Expr
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
				if _, isMethod := a.info.Selections[sel]; isMethod {
					targets = append(targets, sel.X)
				}
			}
			for _, arg := range n.Args {
				if u, ok := ast.Unparen(arg).(*ast.UnaryExpr); ok && u.Op == token.AND {
					targets = append(targets, u.X)
				}
			}
			if len(targets) > 0 && slices.ContainsFunc(n.Args, a.fromClock) {
				for _, x := range targets {
					global(x, n)
				}
			}
		}
		return true
	})
	return changed
}

// fromClock reports whether e is derived from a reading of the clock
// (clockDerived), as far as the marks made so far tell.
func (a *Analysis) fromClock(e ast.Expr) bool {
	d := a.fromClockSet
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // a closure's body is not its value
		case *ast.CallExpr:
			if match.IsPkgFunc(a.info, n, "time", "Now") || nowValue(a.info, n) {
				found = true
			} else if fn := match.Callee(a.info, n); fn != nil && d.returns[fn.Origin()] {
				found = true
			}
		case *ast.Ident:
			if obj := a.info.ObjectOf(n); obj != nil && d.objs[obj] {
				found = true
			}
		}
		return !found
	})
	return found
}

// stampedGlobal names where a statement of the package sets v, a
// package-level variable of it, from a reading of the clock, or "".
func (a *Analysis) stampedGlobal(v *types.Var) string {
	return a.derived().globals[v]
}

// handsReading reports whether call hands the code a reading of the
// clock the caller made: an argument derived from one (time.Now(), a
// variable set to one, now.Add(d), now.UnixNano()). The reading is made
// by the call as much as one the code takes itself: two such calls in a
// row see a few microseconds between them in real time, the code's own
// work included, and none in a bubble.
func (a *Analysis) handsReading(call *ast.CallExpr) bool {
	a.derived()
	for _, arg := range call.Args {
		if a.fromClock(arg) {
			return true
		}
	}
	return false
}

// objOf is the variable or field e names, or nil.
func objOf(info *types.Info, e ast.Expr) types.Object {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return info.ObjectOf(e)
	case *ast.SelectorExpr:
		return info.ObjectOf(e.Sel)
	}
	return nil
}
