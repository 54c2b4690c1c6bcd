package attemptloop

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// failureMethods are the testing methods that mark a branch as failing (or
// skipping) the test.
var failureMethods = []string{"Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow", "Skip", "Skipf", "SkipNow"}

// failure reports whether the exit statement exit, enclosed by stack within
// the loop body, is a failure exit. Its branch is the blocks between it and
// the loop body (the body itself if exit is directly in it). The exit is a
// failure if a simple statement of its branch calls a testing failure
// method or builds an error (errors.New, fmt.Errorf, errors.Join: an error
// returned, sent or stored), or if it lies in the then branch of an
// `if err != nil`.
func (c *checker) failure(l *loop, exit ast.Stmt, stack []ast.Node) bool {
	for i, s := range stack[1:] {
		if s, ok := s.(*ast.IfStmt); ok && i+2 < len(stack) && stack[i+2] == s.Body && c.testsErrNotNil(s.Cond) {
			return true
		}
	}
	return c.failsHere(l, stack)
}

// failsHere reports whether the branch of an exit, enclosed by stack
// within the loop body, fails the test itself: a simple statement of it
// calls a testing failure method or builds an error.
func (c *checker) failsHere(l *loop, stack []ast.Node) bool {
	var blocks [][]ast.Stmt
	for _, s := range stack[1:] {
		switch s := s.(type) {
		case *ast.BlockStmt:
			blocks = append(blocks, s.List)
		case *ast.CaseClause:
			blocks = append(blocks, s.Body)
		case *ast.CommClause:
			blocks = append(blocks, s.Body)
		}
	}
	if len(blocks) == 0 {
		blocks = append(blocks, l.body.List)
	}
	for _, list := range blocks {
		for _, s := range list {
			switch s.(type) {
			case *ast.ExprStmt, *ast.AssignStmt, *ast.SendStmt, *ast.ReturnStmt, *ast.DeclStmt:
				if c.failing(s) {
					return true
				}
			}
		}
	}
	return false
}

// failing reports whether the simple statement s calls a testing failure
// method or builds an error, outside func literals.
func (c *checker) failing(s ast.Stmt) bool {
	return anyCall(s, func(call *ast.CallExpr) bool {
		return match.IsMethod(c.info, call, "testing", failureMethods...) ||
			match.IsPkgFunc(c.info, call, "errors", "New", "Join") ||
			match.IsPkgFunc(c.info, call, "fmt", "Errorf")
	})
}

// anyCall reports whether n holds a call, outside func literals, for which
// pred is true.
func anyCall(n ast.Node, pred func(*ast.CallExpr) bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			found = found || pred(n)
		}
		return !found
	})
	return found
}

// testsErrNotNil reports whether cond is, or has a conjunct, `x != nil`
// (or `nil != x`) with x an error.
func (c *checker) testsErrNotNil(cond ast.Expr) bool {
	errType := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	for _, e := range match.Conjuncts(cond) {
		b, ok := ast.Unparen(e).(*ast.BinaryExpr)
		if !ok || b.Op != token.NEQ {
			continue
		}
		x, y := b.X, b.Y
		if c.isNil(x) {
			x, y = y, x
		}
		if !c.isNil(y) {
			continue
		}
		if t := c.info.TypeOf(x); t != nil && types.Implements(t, errType) {
			return true
		}
	}
	return false
}

func (c *checker) isNil(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return false
	}
	_, isNil := c.info.Uses[id].(*types.Nil)
	return isNil
}

// A counterUse says how a loop body uses the loop counter.
type counterUse struct {
	used   bool   // the body refers to the counter
	logged bool   // only in the arguments of logging calls
	why    string // how it uses it otherwise: "as an index", ...
}

// ok reports whether the counter can be dropped or kept as it is.
func (u counterUse) ok() bool { return u.why == "" }

// logCall reports whether call only writes a message: t.Log, t.Errorf, ...
// (the counter in its arguments numbers the attempt) or fmt or log Print*.
func (c *checker) logCall(call *ast.CallExpr) bool {
	return match.IsMethod(c.info, call, "testing", "Log", "Logf", "Error", "Errorf", "Fatal", "Fatalf", "Skip", "Skipf") ||
		match.IsPkgFunc(c.info, call, "fmt", "Print", "Printf", "Println") ||
		match.IsPkgFunc(c.info, call, "log", "Print", "Printf", "Println") ||
		match.IsMethod(c.info, call, "log", "Print", "Printf", "Println")
}

// counterUse classifies the uses of the counter in the loop body.
func (c *checker) counterUse(l *loop) counterUse {
	var u counterUse
	if l.counter == nil {
		return u
	}
	match.WithStack(l.body, func(n ast.Node, stack []ast.Node) bool {
		if u.why != "" {
			return false
		}
		id, ok := n.(*ast.Ident)
		if !ok || c.info.Uses[id] != l.counter {
			return true
		}
		u.used = true
		if c.logged(id, stack) {
			u.logged = true
		} else {
			u.why = c.useKind(id, stack)
		}
		return true
	})
	if u.why != "" {
		u.logged = false
	}
	return u
}

// climb returns the outermost expression that holds id through arithmetic
// and conversions only, and the node above it.
func (c *checker) climb(id *ast.Ident, stack []ast.Node) (ast.Expr, ast.Node) {
	var child ast.Expr = id
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr:
			child = p
			continue
		case *ast.UnaryExpr:
			if p.Op != token.AND && p.Op != token.ARROW {
				child = p
				continue
			}
		case *ast.BinaryExpr:
			if p.Op.Precedence() >= 4 { // arithmetic, not a comparison
				child = p
				continue
			}
		case *ast.CallExpr:
			if tv, ok := c.info.Types[p.Fun]; ok && tv.IsType() && p.Fun != child {
				child = p
				continue
			}
		}
		return child, stack[i]
	}
	return child, nil
}

// logged reports whether the use id is an argument (or part of one, through
// arithmetic) of a logging call.
func (c *checker) logged(id *ast.Ident, stack []ast.Node) bool {
	e, p := c.climb(id, stack)
	call, ok := p.(*ast.CallExpr)
	return ok && call.Fun != e && c.logCall(call)
}

// useKind describes a use of the counter that is not logging.
func (c *checker) useKind(id *ast.Ident, stack []ast.Node) string {
	e, p := c.climb(id, stack)
	switch p := p.(type) {
	case *ast.IndexExpr:
		if p.Index == e {
			return "as an index"
		}
	case *ast.IndexListExpr, *ast.SliceExpr:
		return "as an index"
	case *ast.AssignStmt:
		for _, l := range p.Lhs {
			if l == e {
				return "assigned"
			}
		}
		if len(p.Lhs) == 1 {
			return "assigned to " + types.ExprString(p.Lhs[0])
		}
		return "in an assignment"
	case *ast.IncDecStmt:
		return "assigned"
	case *ast.BinaryExpr:
		return "in a comparison"
	case *ast.CallExpr:
		if c.waitDuration(p) != nil || match.IsPkgFunc(c.info, p, "time", "After") {
			return "in a wait duration"
		}
		return "as an argument of " + types.ExprString(p.Fun)
	case *ast.CompositeLit, *ast.KeyValueExpr:
		return "in a composite literal"
	case *ast.ReturnStmt:
		return "as a result"
	}
	return "in " + types.ExprString(e)
}
