package testscope

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// orderHazard says why moving an undo (the restore of a variable, the
// removal of a directory) from where the original runs it to the cleanup
// that t.Setenv or t.TempDir registers at set changes what other code of
// the test sees, or "". undo is the original's restore statement (a
// defer, or a t.Cleanup), or nil when there is none; state says what the
// code would now see ("with "MODE" still set").
//
// The check is syntactic, so it holds for every implementation of the
// code under test, not only the one the rule reads:
//   - a deferred restore: a call deferred before it ran after it in the
//     original and now runs before the cleanup that undoes the change;
//     a cleanup registered after set (by t.Cleanup, or by any function
//     given t) ran after it and now runs before it; and in a helper, the
//     caller's code after the call ran after it;
//   - a t.Cleanup restore: a cleanup registered between set and it ran
//     after it and now runs before the undo;
//   - no restore: a cleanup registered before set saw the change (never
//     undone) and now runs after the undo.
func (c *checker) orderHazard(sc *scope, set, undo ast.Stmt, state string) string {
	var lo, hi = set.End(), undo
	deferred := false
	if undo != nil {
		_, deferred = undo.(*ast.DeferStmt)
	}
	if deferred && !sc.test {
		return fmt.Sprintf("the deferred undo (%s) runs when the helper returns, but the cleanup that would replace it runs when the test ends: the caller's code after the call would run %s", c.line(undo), state)
	}
	if deferred {
		if d := c.deferBefore(sc, undo); d != nil {
			return fmt.Sprintf("%s (%s) is deferred before the undo (%s) and ran after it in the original; the cleanup that would replace the undo runs after every deferred call, so it would run %s", c.text(d.Call), c.line(d), c.line(undo), state)
		}
	}
	for _, r := range c.registrations(sc) {
		var bad bool
		switch {
		case r.anytime:
			bad = true
		case undo == nil:
			bad = r.at.Pos() < set.Pos()
		case deferred:
			bad = r.at.Pos() >= lo
		default:
			bad = r.at.Pos() >= lo && r.at.Pos() < hi.Pos()
		}
		if !bad {
			continue
		}
		switch {
		case undo == nil:
			return fmt.Sprintf("%s (%s) may register a cleanup before the change, which saw it in the original (it is never undone) and would run after the cleanup that undoes it, %s", r.what, c.line(r.at), "without it")
		case deferred:
			return fmt.Sprintf("%s (%s) may register a cleanup, which ran after the deferred undo (%s) in the original and would run before the cleanup that replaces it, %s", r.what, c.line(r.at), c.line(undo), state)
		default:
			return fmt.Sprintf("%s (%s) may register a cleanup between the change and its t.Cleanup undo (%s), which ran after the undo in the original and would run before the cleanup that replaces it, %s", r.what, c.line(r.at), c.line(undo), state)
		}
	}
	return ""
}

// deferBefore returns a defer statement of sc's function, other than
// undo, that runs after undo in the original (deferred before it, or in
// a loop around it) and may see the state, or nil.
func (c *checker) deferBefore(sc *scope, undo ast.Stmt) *ast.DeferStmt {
	var loops []ast.Node
	match.WithStack(sc.body, func(n ast.Node, stack []ast.Node) bool {
		if n == undo {
			for _, s := range stack {
				switch s.(type) {
				case *ast.ForStmt, *ast.RangeStmt:
					loops = append(loops, s)
				}
			}
		}
		_, lit := n.(*ast.FuncLit)
		return !lit
	})
	var found *ast.DeferStmt
	match.WithStack(sc.body, func(n ast.Node, stack []ast.Node) bool {
		if found != nil {
			return false
		}
		if _, lit := n.(*ast.FuncLit); lit {
			return false // a closure's defers run when it returns
		}
		d, ok := n.(*ast.DeferStmt)
		if !ok || d == undo || c.harmlessDefer(d.Call) {
			return true
		}
		before := d.Pos() < undo.Pos()
		for _, s := range stack {
			for _, l := range loops {
				if s == l {
					before = true
				}
			}
		}
		if before {
			found = d
		}
		return true
	})
	return found
}

// harmlessDefer reports whether a deferred call is a standard one that
// reads neither the environment nor a directory's contents: another
// restore or removal, an unlock.
func (c *checker) harmlessDefer(call *ast.CallExpr) bool {
	switch {
	case match.IsPkgFunc(c.info, call, "os", "Setenv", "Unsetenv", "RemoveAll", "Remove", "Chdir"):
		return true
	case match.IsMethod(c.info, call, "os", "Close"):
		return true
	case match.IsMethod(c.info, call, "sync", "Unlock", "RUnlock"):
		return true
	}
	return false
}

// A registration is a place where a cleanup may be registered on the
// test's t: a t.Cleanup call, or t handed to other code (an argument, a
// field, a variable), which may register one then or later.
type registration struct {
	at   ast.Node
	what string
	// anytime: the place is in a closure, or the code given t keeps a
	// value that may hold it, so the cleanup may be registered at any
	// later point.
	anytime bool
}

// registrations returns the places in sc's function (closures included)
// that may register a cleanup on sc.t, other than the testing package's
// own (t.Setenv, t.TempDir and the like undo standard state only).
func (c *checker) registrations(sc *scope) []registration {
	var out []registration
	match.WithStack(sc.body, func(n ast.Node, stack []ast.Node) bool {
		inLit := false
		for _, s := range stack {
			if _, ok := s.(*ast.FuncLit); ok {
				inLit = true
			}
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			if c.isTCall(n, sc.t, "Cleanup") {
				out = append(out, registration{at: n, what: "a t.Cleanup", anytime: inLit})
			}
		case *ast.Ident:
			if c.info.Uses[n] != types.Object(sc.t) || len(stack) == 0 {
				break
			}
			parent := stack[len(stack)-1]
			if sel, ok := parent.(*ast.SelectorExpr); ok && sel.X == n {
				break // a method or field of t itself
			}
			call, ok := parent.(*ast.CallExpr)
			if ok && (match.IsPkgFunc(c.info, call, "testing/synctest", "Test") || c.stdCall(call)) {
				break
			}
			r := registration{at: n, what: fmt.Sprintf("%s, given %s", c.callName(parent), sc.t.Name()), anytime: inLit}
			if !ok {
				r.what = fmt.Sprintf("code %s is handed to", sc.t.Name())
				r.anytime = true
			} else if len(stack) >= 2 && !c.keepsNothing(call, stack[len(stack)-2]) {
				r.anytime = true // the result may hold t
			}
			out = append(out, r)
		}
		return true
	})
	return out
}

// stdCall reports whether call is of a standard library function, which
// registers no cleanup of the code under test.
func (c *checker) stdCall(call *ast.CallExpr) bool {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil || !match.IsStd(fn.Pkg().Path()) {
		return false
	}
	// A module named without a dot ("app") looks standard too.
	first, _, _ := strings.Cut(fn.Pkg().Path(), "/")
	mine, _, _ := strings.Cut(c.pass.Pkg.Path(), "/")
	return first != mine
}

func (c *checker) callName(n ast.Node) string {
	if call, ok := n.(*ast.CallExpr); ok {
		return c.text(call.Fun)
	}
	return "code"
}

// keepsNothing reports whether the result of call (whose parent node is
// parent) is dropped or holds no value that may keep t: no result, or
// only an error or basic values.
func (c *checker) keepsNothing(call *ast.CallExpr, parent ast.Node) bool {
	if _, ok := parent.(*ast.ExprStmt); ok {
		return true
	}
	tv, ok := c.info.Types[call]
	if !ok {
		return false
	}
	basic := func(t types.Type) bool {
		if _, ok := t.Underlying().(*types.Basic); ok {
			return true
		}
		return types.Identical(t, types.Universe.Lookup("error").Type())
	}
	if tup, ok := tv.Type.(*types.Tuple); ok {
		for i := 0; i < tup.Len(); i++ {
			if !basic(tup.At(i).Type()) {
				return false
			}
		}
		return true
	}
	return tv.Type == nil || basic(tv.Type)
}
