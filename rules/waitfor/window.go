package waitfor

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A poll repeats the checks that read the state the test waits for. The
// statements after a sleep often go on to the test's next step: a new
// value (p1, err := ants.NewPoolWithFunc(...)), a new action checked in
// turn (err := client.Connect(addr); if err != nil {...}, or
// require.NoError(t, m.Shutdown())). Those do not read the awaited state,
// and a poll must not repeat them; the window of checks stops before the
// first one, which then runs once, after the poll, as it ran once after
// the sleep.

// cutAtAction drops from the group the statements from the first define or
// check that acts (see actionWhy) on, and the defines left at its end. It
// returns what the first such statement calls, or "" when none acts.
func (g *group) cutAtAction() string {
	for i, s := range g.stmts {
		why := g.c.actsWhy(s)
		if why == "" {
			continue
		}
		kept := map[ast.Stmt]bool{}
		for _, k := range g.stmts[:i] {
			kept[k] = true
		}
		g.stmts = g.stmts[:i]
		var checks []*check
		for _, ck := range g.checks {
			if kept[ck.stmt] {
				checks = append(checks, ck)
			}
		}
		g.checks = checks
		for len(g.stmts) > 0 {
			if _, ok := g.stmts[len(g.stmts)-1].(*ast.AssignStmt); !ok {
				break
			}
			g.stmts = g.stmts[:len(g.stmts)-1]
		}
		return why
	}
	return ""
}

// actsWhy returns what the statement s, a define or a check of the group,
// calls that acts rather than reads, or "".
func (c *checker) actsWhy(s ast.Stmt) string {
	var exprs []ast.Expr
	switch s := s.(type) {
	case *ast.AssignStmt:
		exprs = s.Rhs
	default:
		ck := c.checkOf(s)
		if ck == nil {
			return ""
		}
		if ck.init != nil {
			exprs = append(exprs, ck.init.Rhs...)
		}
		if ck.fails != nil {
			exprs = append(exprs, ck.fails)
		}
		exprs = append(exprs, ck.args...)
	}
	why := ""
	for _, e := range exprs {
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.CallExpr:
				if why == "" {
					why = c.actionWhy(n)
				}
			}
			return why == ""
		})
	}
	return why
}

// actionWhy says what call does when it is an action of the test rather
// than a read of state: a function whose name says it changes state
// (Connect, NewPool, Shutdown, Submit; a standard one too: SetReadDeadline),
// an operation taking a context, or a function of the package whose body
// writes state, starts a goroutine or sends. A function value, a standard
// function that waits or reads the clock, and the like are not actions:
// the checks keep them, and the rule says why it cannot poll them.
func (c *checker) actionWhy(call *ast.CallExpr) string {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	path := fn.Pkg().Path()
	if path == assertPath || path == requirePath {
		return ""
	}
	name := types.ExprString(call.Fun)
	if v := verb(fn.Name()); mutating[v] {
		if match.IsStd(path) && stdReader(fn) {
			return ""
		}
		return fmt.Sprintf("%s, whose name says it changes state (%s)", name, v)
	}
	if match.IsStd(path) {
		return ""
	}
	sig := fn.Type().(*types.Signature)
	for i := 0; i < sig.Params().Len(); i++ {
		if match.IsNamed(sig.Params().At(i).Type(), "context", "Context") {
			return name + ", an operation with a context (a request, an RPC)"
		}
	}
	why := c.bodyWhy(fn, 0)
	for _, w := range []string{"writes ", "sets the package variable ", "starts a goroutine", "sends on a channel"} {
		if strings.HasPrefix(why, w) {
			return name + ", which " + why
		}
	}
	return ""
}
