package readiness

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// Sync-point hazards of where the readiness line goes and what the sleep
// covered. The line follows the first signal.Notify the rule reaches; the
// sleep it replaces covered whatever the child (or children) did before
// the signal.
//
//   - A child with several handlers (a SIGHUP one, then a SIGTERM one; one
//     per mode in a switch) may install the first long before the one for
//     the signal the test sends: the signal can land before its handler.
//   - A handler that does not take the signal the test sends is not the
//     point the test waits for.
//   - A sleep that follows the start of another child covered that child
//     too: one child's line does not say the other is ready.

// notifyChecked is the rule.Change.Checked entry of these hazards.
const notifyChecked = "one signal.Notify in the child, for the signal the test sends, and one child started before the sleep"

// notifyHazard returns why the line after n is not the point the test
// waits for, or "".
func (c *checker) notifyHazard(s *site, helper *ast.FuncDecl) string {
	all := c.allNotify(helper.Body, 0, map[*ast.FuncDecl]bool{helper: true})
	if len(all) > 1 {
		var at []string
		for _, n := range all {
			at = append(at, c.line(n))
		}
		return fmt.Sprintf("the child installs more than one signal handler (signal.Notify at %s): the readiness line would follow the first, which may not be the handler of the signal the test sends (%s at %s), so the signal could land before its handler", strings.Join(at, ", "), types.ExprString(s.signal), c.line(s.signal))
	}
	if len(all) == 1 && len(all[0].Args) > 1 && len(s.signal.Args) == 1 {
		sent := s.signal.Args[0]
		for _, a := range c.signalArgs(all[0]) {
			if c.sameSignal(a, sent) {
				return ""
			}
		}
		return fmt.Sprintf("the child's handler (signal.Notify at %s) is not shown to take the signal the test sends (%s at %s): the readiness line would not say that signal is handled", c.line(all[0]), types.ExprString(sent), c.line(s.signal))
	}
	return ""
}

// signalArgs returns the signals a Notify call lists. A spread package
// variable (signal.Notify(ch, Signals...)) stands for the elements of its
// initializer, a composite literal, when no file of the package assigns
// the variable; otherwise it is itself the one argument, which matches
// no signal the test sends.
func (c *checker) signalArgs(call *ast.CallExpr) []ast.Expr {
	args := call.Args[1:]
	if !call.Ellipsis.IsValid() || len(args) != 1 {
		return args
	}
	id, ok := ast.Unparen(args[0]).(*ast.Ident)
	if !ok {
		return args
	}
	v, ok := c.info.Uses[id].(*types.Var)
	if !ok || v.Parent() != c.pass.Pkg.Scope() {
		return args
	}
	var lit *ast.CompositeLit
	assigned := false
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if c.info.Defs[name] == v && i < len(n.Values) {
						lit, _ = ast.Unparen(n.Values[i]).(*ast.CompositeLit)
					}
				}
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					l = ast.Unparen(l)
					if ix, ok := l.(*ast.IndexExpr); ok {
						l = ast.Unparen(ix.X) // Signals[0] = ...
					}
					if lid, ok := l.(*ast.Ident); ok && c.info.Uses[lid] == v {
						assigned = true
					}
				}
			case *ast.UnaryExpr:
				if xid, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op == token.AND && c.info.Uses[xid] == v {
					assigned = true
				}
			}
			return true
		})
	}
	if lit == nil || assigned {
		return args
	}
	return lit.Elts
}

// sameSignal reports whether a and b are the same signal: the same
// constant value, or the same expression.
func (c *checker) sameSignal(a, b ast.Expr) bool {
	va, vb := c.info.Types[a].Value, c.info.Types[b].Value
	if va != nil && vb != nil {
		return constant.Compare(va, token.EQL, vb)
	}
	return types.ExprString(a) == types.ExprString(b)
}

// allNotify returns every signal.Notify call in body, function literals
// included (a handler installed in a goroutine or a callback is one
// too), following the package functions it calls.
func (c *checker) allNotify(body *ast.BlockStmt, depth int, seen map[*ast.FuncDecl]bool) []*ast.CallExpr {
	var out []*ast.CallExpr
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if match.IsPkgFunc(c.info, call, "os/signal", "Notify") {
			out = append(out, call)
			return true
		}
		fn := match.Callee(c.info, call)
		if fn == nil || depth >= maxDepth {
			return true
		}
		fd := c.decls[fn.Origin()]
		if fd == nil || fd.Body == nil || seen[fd] {
			return true
		}
		seen[fd] = true
		out = append(out, c.allNotify(fd.Body, depth+1, seen)...)
		return true
	})
	return out
}

// otherChild returns why the sleep of s also covers another child: one
// started in the same block before the sleep, or by a function of the
// package a statement before it calls. Or "".
func (c *checker) otherChild(s *site) string {
	for i, st := range s.list[:s.sleep] {
		if i == s.start {
			continue
		}
		if cmd, _ := c.startOf(st); cmd != nil && cmd != s.cmd {
			return fmt.Sprintf("the sleep also covers %s, started at %s: a line from %s alone would not say %s is ready, so the test could signal or use it too early", cmd.Name(), c.line(st), s.cmd.Name(), cmd.Name())
		}
		// A function of the package may start another (red team batch
		// 15, brokerfirst: startBroker(t, sock) starts the fake broker
		// the worker flushes to when signalled).
		if what, at := c.startsProcess(st, 0, map[*ast.FuncDecl]bool{}); what != "" {
			return fmt.Sprintf("the sleep also covers a process %s starts (%s at %s): a line from %s alone would not say it is ready, so the test could signal %s before it can serve it (a broker that replays its journal before it listens)", c.line(st), what, at, s.cmd.Name(), s.cmd.Name())
		}
	}
	return ""
}
