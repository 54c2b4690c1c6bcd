package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// A value's end is seen not only through the value but through every
// live part of it that other code holds: a ticker's or timer's channel
// handed to the code under test (r.Start(tk.C)) gets no more ticks once
// the ticker stops, a method value (conn.Write) or a pointer field
// (srv.Listener) handed on is the value itself. The test then never
// hands the value on (usesOf sees only a field or method of it), yet the
// code under test is driven by it. The added end runs before every check
// registered earlier (a t.Cleanup's Close and its "nothing reported
// after Close"), and what the code does on the next tick, the bug's
// second report, would never come: the original left the ticker running
// through that check. So a value a part of which code holds is treated
// as one whose other side code holds (peerSees): not fixed when a check
// that runs code under test runs after the end (runsLater).
//
// A standard value made from a function it runs (time.AfterFunc's
// timer) holds code itself, and its end is not an end but a veto: Stop
// keeps the function from ever running, where the original ran it when
// its time came, during the test's cleanups, the next tests, or after the
// test had ended, when its t.Error fails the run. That is never fixed.

// partChecked is the Checked entry of a fix that ends a value a part of
// which other code holds: the hazard excluded.
const partChecked = "%s, but no check registered earlier (a t.Cleanup, a helper given t, a deferred call, a caller's) runs code under test after the %s"

// partSees says why ending s would change what code holding a part of
// it, or a function it runs, does before a later check, or "". checked
// names the part when it is held but nothing runs after the end.
func (c *checker) partSees(s *site) (why, checked string) {
	if fn := c.runsGiven(s); fn != "" {
		return fmt.Sprintf("%s is made by %s from a function it runs (%s): its %s keeps that function from ever running, where the original ran it when its time came (in a check registered earlier, the next tests, or after the test, when a t.Error in it fails the run); end it by hand where the test no longer needs the function", s.v.Name(), calleeName(c.info, s.call), fn, s.lc.method), ""
	}
	part := c.partHeld(s)
	if part == "" {
		return "", ""
	}
	how, reg := c.runsLater(s)
	if reg == "" {
		return "", fmt.Sprintf(partChecked, part, s.lc.method)
	}
	return fmt.Sprintf("a %s's %s.%s would run before %s, and %s: the code that holds it would see %s end (no more ticks, writes or calls through it) before that code runs, which the original, that left it running, never showed it; end it by hand where the test is done with it", how, s.v.Name(), s.lc.method, reg, part, s.v.Name()), ""
}

// runsGiven names a function value a standard constructor of s was given
// (time.AfterFunc(d, f)): the value runs it later. "" otherwise; the
// package's own constructors run what they are given in code the rule
// judges as the package's (ownEnd).
func (c *checker) runsGiven(s *site) string {
	fn := match.Callee(c.info, s.call)
	if fn == nil || fn.Pkg() == nil || !match.IsStd(fn.Pkg().Path()) {
		return ""
	}
	// A parameter of a plain function type: a named one (http.HandlerFunc)
	// or an interface (http.Handler) is a handler, which runsHandlers
	// judges.
	params := fn.Type().(*types.Signature).Params()
	for i, a := range s.call.Args {
		if i >= params.Len() {
			break
		}
		if _, ok := types.Unalias(params.At(i).Type()).(*types.Signature); ok {
			return fmt.Sprintf("%s at %s", types.ExprString(a), c.lineOf(a))
		}
	}
	return ""
}

// partHeld names the first live part of s (a field or method value that
// is not a copy of plain data) that the function creating it hands to
// other code ("tk.C is given to rollup.Rollup.Start at rollup_test.go:37"),
// or "". A part the test only reads in its own body is not held: a
// receive (<-tk.C, a select's case, a range), a comparison, a blank
// assignment, an argument of logging, formatting or an assertion. Any
// use inside a function literal other than the one creating the value
// counts (a goroutine may receive after the test ends), and so does any
// other use (assigned, stored, sent, returned, passed).
func (c *checker) partHeld(s *site) string {
	out := ""
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		if out != "" {
			return false
		}
		id, ok := n.(*ast.Ident)
		if !ok || id == s.id || c.info.Uses[id] != types.Object(s.v) || len(stack) == 0 {
			return true
		}
		k := len(stack) - 1
		var child ast.Node = id
		for k > 0 && flows(c.info, stack[k], child) {
			child = stack[k]
			k--
		}
		sel, ok := stack[k].(*ast.SelectorExpr)
		if !ok || sel.X != child || isLifecycleName(sel.Sel.Name) {
			return true
		}
		// Up from the part, through parentheses.
		j := k - 1
		var part ast.Node = sel
		for j >= 0 {
			if _, ok := stack[j].(*ast.ParenExpr); !ok {
				break
			}
			part = stack[j]
			j--
		}
		if j >= 0 {
			if call, ok := stack[j].(*ast.CallExpr); ok && call.Fun == part {
				return true // a method called: its result is another value
			}
		}
		if plainData(c.info.TypeOf(sel), 0) {
			return true // a copy: srv.URL, a count
		}
		name := types.ExprString(sel)
		for _, up := range stack[:k] {
			if lit, ok := up.(*ast.FuncLit); ok && !within(s.stmt, lit) {
				out = fmt.Sprintf("%s is used by the function literal at %s, which may run after the test ends (a goroutine)", name, c.lineOf(lit))
				return false
			}
		}
		if j < 0 {
			return true
		}
		if how := c.partUse(stack[j], part); how != "" {
			out = fmt.Sprintf("%s %s at %s", name, how, c.lineOf(sel))
		}
		return out == ""
	})
	return out
}

// partUse says how use, the node holding part, hands it to other code
// ("is given to rollup.Rollup.Start"), or "" when the test only reads it.
func (c *checker) partUse(use, part ast.Node) string {
	switch u := use.(type) {
	case *ast.UnaryExpr:
		if u.Op == token.ARROW {
			return "" // the test receives from it
		}
	case *ast.BinaryExpr:
		return "" // compared
	case *ast.RangeStmt:
		if u.X == part {
			return "" // the test's own loop receives
		}
	case *ast.AssignStmt:
		blank := true
		for _, l := range u.Lhs {
			if id, ok := l.(*ast.Ident); !ok || id.Name != "_" {
				blank = false
			}
		}
		if blank {
			return ""
		}
		return "is stored"
	case *ast.CallExpr:
		if c.nonOwning(u) || match.IsBuiltin(c.info, u.Fun, "len", "cap") {
			return ""
		}
		return "is given to " + calleeName(c.info, u)
	}
	return "is handed on"
}

// plainData reports whether a value of t is a copy that holds nothing of
// where it came from: a basic type, or a struct or array of them.
func plainData(t types.Type, depth int) bool {
	if t == nil || depth > 3 {
		return false
	}
	switch u := types.Unalias(t).Underlying().(type) {
	case *types.Basic:
		return u.Kind() != types.UnsafePointer
	case *types.Array:
		return plainData(u.Elem(), depth+1)
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			if !plainData(u.Field(i).Type(), depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
