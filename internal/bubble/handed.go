package bubble

import (
	"fmt"
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// Readings handed to code the analysis does not read.
//
// The clock hazards are looked for in this package's syntax. Code of
// another package (of the module or a dependency) is read only through
// its effect summary, which says whether it reads the clock itself. A
// helper there that reads no clock is not pure for the bubble when the
// package hands it readings: clockx.Older(at, p.idle[oldest]) compares
// two readings the package kept, which a bubble makes equal, so the
// oldest is whichever a map's iteration gives first (red team batch 18,
// oldestidle). A reading handed in is a reading the callee takes, as
// derived.go says for the package's own functions: what the callee does
// with it (compares it with another, keeps it to compare later, with a
// fixed date of its own, computes from elapsed time) is every hazard
// this file's package would be checked for, in code that is not checked.
// So a call of such code handed a reading counts as the package's own
// comparison of what it is handed:
//
//   - two readings or more, one at least kept (an element of a map or a
//     slice of readings, a range's value over one, a parameter handed a
//     kept one), or a map or a slice of readings itself: a comparison of
//     stored readings (storedOrder, not fixed: the order a bubble leaves
//     to a map or a sort's ties varies run to run);
//   - a reading handed to a method, or to a function handed a place to
//     keep it (a pointer, a map, a slice, a channel): the callee may keep
//     it and compare it with one it is handed later, the same comparison
//     of stored readings (not fixed);
//   - two readings otherwise: a comparison of two readings (order,
//     unproven: equal in a bubble every run, so running tells);
//   - and any reading: that code reads the clock as far as the analysis
//     can tell (outside), so what it may do with elapsed time right after
//     another call is held against the test as for code that calls
//     time.Now itself.

// handedReadings records the hazards of call, a call of fn, a function
// of another non-standard package the analysis does not read, in root.
func (c *clockScan) handedReadings(call *ast.CallExpr, fn *types.Func, root ast.Node) {
	// handed are the instants among the arguments: a duration (elapsed
	// time handed to a timer) is no reading to keep or order, and counts
	// only as the clock read (outside, below).
	var handed []ast.Expr
	kept, clocked := false, false
	for _, arg := range call.Args {
		if !c.carriesReading(arg) {
			continue
		}
		clocked = true
		if !c.carriesInstant(arg) {
			continue
		}
		handed = append(handed, arg)
		if c.carriesKept(arg) {
			kept = true
		}
	}
	if !clocked {
		return
	}
	where := c.at(types.ExprString(call), call)
	pkg := fn.Pkg().Path()
	keeper := ""
	if len(handed) > 0 {
		keeper = c.keeper(call, fn)
	}
	switch {
	case kept && (len(handed) > 1 || c.containerArg(handed)):
		if c.storedOrder == "" {
			c.storedOrder = fmt.Sprintf("%s: readings it kept handed to code of %s, which the analysis does not read and which may compare them", where, pkg)
		}
	case keeper != "":
		if c.storedOrder == "" {
			c.storedOrder = fmt.Sprintf("%s: a reading handed to %s of %s, which the analysis does not read and which may keep it and compare it with one it is handed later", where, keeper, pkg)
		}
	case len(handed) > 1:
		if c.order == "" {
			c.order = fmt.Sprintf("%s: two readings handed to code of %s, which the analysis does not read and which may compare them", where, pkg)
		}
	}
	c.outsideRoots[root] = true
	if c.outside == "" {
		c.outside = fmt.Sprintf("the code under test in %s (%s, handed a reading of the clock) is not read for the clock hazards", pkg, c.at(match.PkgFuncName(fn), call))
	}
}

// handsOut reports whether call hands a reading of the clock to a
// function of another non-standard package (not an assertion): code the
// analysis does not read, which takes the reading as its own.
func (c *clockScan) handsOut(call *ast.CallExpr) bool {
	fn := match.Callee(c.a.info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg() == c.a.pass.Pkg || match.IsStd(fn.Pkg().Path()) || match.IsAssertion(fn.Pkg().Path(), fn.Name()) {
		return false
	}
	for _, arg := range call.Args {
		if c.carriesReading(arg) {
			return true
		}
	}
	return false
}

// carriesReading reports whether e holds a reading of the clock or a
// measure of elapsed time, whatever it is wrapped in: a reading, one
// moved (now.Add(d)) or made a number (now.UnixNano()), elapsed time, a
// map or a slice of readings, a composite literal or a conversion around
// one, or a value the package's clock-reading flow marks (derived.go: a
// function's result, a field set from one).
func (c *clockScan) carriesReading(e ast.Expr) bool {
	c.a.derived()
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false // a closure's body is not its value
		}
		x, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		found = c.reading(x) || c.readingMoved(x) || c.numeric(x) || c.elapsed(x) || c.container(x)
		return !found
	})
	// The package's flow marks whatever is made from a reading (a
	// method value, a bool of a comparison, a struct holding one);
	// only a value that can be a reading or hold one counts here.
	return found || c.a.fromClock(e) && timeValue(c.a.info.TypeOf(e))
}

// timeValue reports whether a value of type t can be a reading of the
// clock or hold one: a time.Time or a number (now.UnixNano()), or a
// pointer, a slice, an array, a map or a struct holding one. An interface
// or a function is not counted: what it holds is not a value handed.
func timeValue(t types.Type) bool {
	return holds(t, false, map[types.Type]bool{})
}

// canKeep reports whether a value of type t is a place a reading can be
// kept in: one that holds a time.Time, a number or an interface (any),
// directly or through pointers, slices, maps, channels and fields.
func canKeep(t types.Type) bool {
	return holds(t, true, map[types.Type]bool{})
}

// holds is timeValue, or canKeep where iface is true.
func holds(t types.Type, iface bool, seen map[types.Type]bool) bool {
	if t == nil || seen[t] {
		return false
	}
	seen[t] = true
	if match.IsNamed(t, "time", "Time") || match.IsNamed(t, "time", "Duration") {
		return true
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return u.Info()&types.IsNumeric != 0
	case *types.Interface:
		return iface
	case *types.Pointer:
		return holds(u.Elem(), iface, seen)
	case *types.Slice:
		return holds(u.Elem(), iface, seen)
	case *types.Array:
		return holds(u.Elem(), iface, seen)
	case *types.Chan:
		return iface && holds(u.Elem(), iface, seen)
	case *types.Map:
		return holds(u.Key(), iface, seen) || holds(u.Elem(), iface, seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if holds(u.Field(i).Type(), iface, seen) {
				return true
			}
		}
	}
	return false
}

// carriesInstant reports whether e holds an instant of the clock, not
// only elapsed time: carriesReading without the durations.
func (c *clockScan) carriesInstant(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		x, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		if c.elapsed(x) {
			return false // now.Sub(last): a duration, whatever it is made of
		}
		found = c.reading(x) || c.readingMoved(x) || c.unixOf(x) != nil || c.container(x)
		return !found
	})
	if found {
		return true
	}
	t := c.a.info.TypeOf(e)
	return t != nil && !match.IsNamed(t, "time", "Duration") && timeValue(t) && c.a.fromClock(e) && !c.elapsed(e)
}

// carriesKept reports whether e holds a reading kept for later
// (storedReading) or a map or a slice of readings.
func (c *clockScan) carriesKept(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if x, ok := n.(ast.Expr); ok {
			found = c.storedReading(x) || c.container(x)
		}
		return !found
	})
	return found
}

// container reports whether e names a map or a slice of readings.
func (c *clockScan) container(e ast.Expr) bool {
	obj := c.objOf(e)
	return obj != nil && c.containers[obj]
}

// containerArg reports whether one of handed is a map or a slice of
// readings: many readings in one argument.
func (c *clockScan) containerArg(handed []ast.Expr) bool {
	for _, e := range handed {
		if c.container(e) {
			return true
		}
	}
	return false
}

// keeper names where call's callee may keep a reading it is handed, or
// "": a method whose receiver can hold a reading ("a method of
// *pq.Queue"), or a function also handed a pointer, a map, a slice or a
// channel that can (canKeep).
func (c *clockScan) keeper(call *ast.CallExpr, fn *types.Func) string {
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return ""
	}
	if recv := sig.Recv(); recv != nil && canKeep(recv.Type()) {
		return "a method of " + types.TypeString(recv.Type(), types.RelativeTo(fn.Pkg()))
	}
	for _, arg := range call.Args {
		t := c.a.info.TypeOf(arg)
		if t == nil || c.carriesReading(arg) && !c.container(arg) {
			continue
		}
		switch t.Underlying().(type) {
		case *types.Pointer, *types.Map, *types.Slice, *types.Chan:
			if canKeep(t) {
				return fmt.Sprintf("%s, handed %s to keep it in", match.PkgFuncName(fn), types.ExprString(arg))
			}
		}
	}
	return ""
}
