package attemptloop

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// Budget hazards of an attempt itself: what each pass does besides
// waiting. A deadline keeps the waits' meaning only when a pass is a
// look at the code under test and a rest.
//
//   - An attempt that acts on the code under test (takes a token, sends a
//     message a warming-up server counts, records a heartbeat) makes the
//     count part of what the test does: a deadline makes hundreds of
//     attempts where the test made 5, and a limit of 15 passes where the
//     test checked 10.
//   - A pass that works (a round trip, a heartbeat) lasts its wait plus
//     the work: a deadline computed from the waits alone is shorter than
//     the loop's real window.

// actsChecked and workChecked are the rule.Change.Checked entries of the
// two hazards.
const (
	actsChecked = "no attempt changes the code under test's state, nor sends to a server, connection or handler made from it"
	workChecked = "a deadline no shorter than the loop's waits and its work on each pass"
)

// maxActsDepth bounds how deep acts follows the package's functions.
const maxActsDepth = 3

// acts returns why an attempt of l changes the state of the code under
// test, or "": a call in the body (its conditions too) of a function of
// the package's non-test code whose body (or a function it calls, up to
// maxActsDepth) writes a field, an element or a package variable, sends
// or receives, or changes an atomic; a test helper is followed into; a
// function of another module package whose body the rule cannot see is
// judged by its name (Take, Allow, Send, Acquire...). Standard library
// calls are not code under test, except those that send to a server,
// listener, connection or handler the test made from it (network.go):
// an HTTP request to an httptest server over the package's handler is a
// failed login the guard counts.
func (c *checker) acts(l *loop) string {
	c.serving = c.served(l)
	defer func() { c.serving, c.usesCode = "", "" }()
	why := ""
	ast.Inspect(l.body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || why != "" {
			return why == ""
		}
		if c.waitDuration(call) != nil {
			return true
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil {
			return true
		}
		if w := c.sendsServed(call, fn); w != "" {
			why = "each attempt " + w + ": the count of attempts is part of what the test does, and a deadline would make many more of them (a request the code handles, a failed login counted, on each)"
			return false
		}
		if match.IsStd(fn.Pkg().Path()) {
			return true
		}
		if w := c.callActs(fn, 0, map[*types.Func]bool{}); w != "" {
			why = fmt.Sprintf("each attempt calls %s (%s), which %s: the count of attempts is part of what the test does, and a deadline would make many more of them (a token taken, a send counted, on each)", types.ExprString(call.Fun), c.where(call.Pos()), w)
		}
		return why == ""
	})
	return why
}

// callActs returns why calling fn changes the code under test's state,
// or "".
func (c *checker) callActs(fn *types.Func, depth int, seen map[*types.Func]bool) string {
	if seen[fn] {
		return ""
	}
	// What the rule cannot follow may change state: a quota spent four
	// calls down, through an interface, on every ping (red team batch
	// 15, pingquota2), so a deadline's extra attempts spend more.
	if depth > maxActsDepth {
		return "calls " + fn.Name() + ", deeper than the rule follows, which may change state"
	}
	seen[fn] = true
	fd := match.DeclsOf(c.pass)[fn]
	if fd == nil || fd.Body == nil {
		if fn.Pkg() != c.pass.Pkg && consuming[verbOf(fn.Name())] {
			return "by its name changes state (" + verbOf(fn.Name()) + ")"
		}
		if recv := fn.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
			return "calls " + fn.Name() + " through an interface, whose implementations may change state"
		}
		if fn.Pkg() != c.pass.Pkg {
			sum := c.pass.Effects.Of(fn)
			if sum == nil || sum.Opaque != "" {
				return "calls " + match.PkgFuncName(fn) + ", whose effects the rule cannot see in full"
			}
			for _, e := range sum.Effects {
				if e.Kind != effect.Timer && e.Kind != effect.ReadsClock {
					return "calls " + e.Why()
				}
			}
		}
		return ""
	}
	test := strings.HasSuffix(c.pass.Fset.Position(fd.Pos()).Filename, "_test.go")
	why := ""
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // run later, if at all
		case *ast.CallExpr:
			f := match.Callee(c.info, n)
			if f == nil || f.Pkg() == nil {
				return true
			}
			if w := c.sendsServed(n, f); w != "" {
				why = w
				return false
			}
			if match.IsStd(f.Pkg().Path()) {
				if !test && f.Pkg().Path() == "sync/atomic" && atomicWrite(f.Name()) {
					why = "changes " + types.ExprString(n.Fun)
				}
				return why == ""
			}
			if w := c.callActs(f, depth+1, seen); w != "" {
				why = w
			}
		}
		if test {
			return why == "" // a helper of the tests: only what it calls
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, lhs := range n.Lhs {
					if w := c.writes(fd, lhs); w != "" {
						why = w
					}
				}
			}
		case *ast.IncDecStmt:
			why = c.writes(fd, n.X)
		case *ast.SendStmt:
			why = "sends on " + types.ExprString(n.Chan)
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				why = "receives from " + types.ExprString(n.X)
			}
		}
		return why == ""
	})
	return why
}

// writes returns "writes X" when assigning to lhs in fd writes state
// that outlives the call: a field, an element, a pointer's target or a
// package variable; or "".
func (c *checker) writes(fd *ast.FuncDecl, lhs ast.Expr) string {
	root, plain := lhs, true
	for {
		switch x := ast.Unparen(root).(type) {
		case *ast.SelectorExpr:
			root, plain = x.X, false
			continue
		case *ast.IndexExpr:
			root, plain = x.X, false
			continue
		case *ast.StarExpr:
			root, plain = x.X, false
			continue
		}
		break
	}
	id, ok := ast.Unparen(root).(*ast.Ident)
	if !ok {
		return "writes " + types.ExprString(lhs)
	}
	v, ok := c.info.Uses[id].(*types.Var)
	if !ok {
		return ""
	}
	if match.IsPackageLevel(v) {
		return "writes the package variable " + id.Name
	}
	if !plain && (v.Pos() < fd.Body.Pos() || v.Pos() >= fd.Body.End()) {
		return "writes " + types.ExprString(lhs)
	}
	return ""
}

func atomicWrite(name string) bool {
	for _, p := range []string{"Add", "Store", "Swap", "CompareAndSwap", "And", "Or"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// consuming are the verbs that start the names of functions that take,
// count or change something: an attempt that calls one acts on the code.
var consuming = map[string]bool{}

func init() {
	for _, v := range strings.Fields(`Acquire Add Allow Append Beat Consume Dec Decrement Dequeue Drain Emit Enqueue
		Heartbeat Inc Increment Insert Mark Next Pop Publish Push Put Record Reserve Send Set Step Store Submit Take
		Tick Touch Use Write`) {
		consuming[v] = true
	}
}

// verbOf returns the first word of a function name, capitalised.
func verbOf(name string) string {
	r := []rune(name)
	if len(r) == 0 {
		return ""
	}
	r[0] = unicode.ToUpper(r[0])
	end := 1
	for end < len(r) && !unicode.IsUpper(r[end]) && r[end] != '_' {
		end++
	}
	return string(r[:end])
}

// work returns the first statement of l's body, outside the if
// statements that test its exits and the waits, that does work on each
// pass (a call, an assignment from one): its text and line. Or "".
func (c *checker) work(l *loop) string {
	for _, s := range l.body.List {
		switch s := s.(type) {
		case *ast.IfStmt, *ast.EmptyStmt, *ast.BranchStmt:
			continue
		case *ast.ExprStmt:
			if c.waitDuration(s.X) != nil {
				continue
			}
		}
		calls := false
		ast.Inspect(s, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if tv, ok := c.info.Types[call.Fun]; !ok || !tv.IsType() {
					calls = true
				}
			}
			return !calls
		})
		if calls {
			return fmt.Sprintf("%s at %s", firstLine(types.ExprString(exprOf(s))), c.where(s.Pos()))
		}
	}
	return ""
}

// exprOf returns what to name a statement by: its expression or its
// right-hand side.
func exprOf(s ast.Stmt) ast.Expr {
	switch s := s.(type) {
	case *ast.ExprStmt:
		return s.X
	case *ast.AssignStmt:
		if len(s.Rhs) > 0 {
			return s.Rhs[0]
		}
	}
	return &ast.BadExpr{}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + "..."
	}
	return s
}

// where words pos as file:line, the file's base name.
func (c *checker) where(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}
