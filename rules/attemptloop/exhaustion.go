package attemptloop

import (
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// notAFailure is the reason to leave a poll alone whose exhaustion the test
// tolerates: it may be a check that something does not happen, which passes
// by running out of attempts, and a longer deadline would make it slower.
const notAFailure = "running out of attempts does not fail the test, so a longer deadline could slow down a test that passes that way"

// exhaustionFails reports whether the code right after the loop fails the
// test (or makes a helper return a failure) when the loop runs out of
// attempts: the first statement after the loop other than up to two plain
// calls (mu.Unlock(), cancel()) fails
// (calls t.Fatal and relatives, a testify assertion, panic, log.Fatal,
// builds an error, or returns a value other than nil or true), directly or
// in the body of an if whose condition is not one the loop exits on (`if
// bad() { break }` followed by `if bad() { t.Fatal() }` is a check that
// something stays false, which passes by running out of attempts).
func (c *checker) exhaustionFails(l *loop) bool {
	list, at := c.enclosingList(l)
	exits := c.exitConditions(l)
	for k := at + 1; k < len(list) && k <= at+3; k++ {
		switch s := list[k].(type) {
		case *ast.IfStmt:
			return !exits[types.ExprString(s.Cond)] && c.blockFails(s.Body)
		case *ast.ExprStmt:
			if c.stmtFails(s) {
				return true
			}
			// A call such as mu.Unlock() or cancel(): look further.
		default:
			return c.stmtFails(s)
		}
	}
	return false
}

// enclosingList returns the statement list holding the loop (or its label)
// and the loop's index in it, or nil.
func (c *checker) enclosingList(l *loop) ([]ast.Stmt, int) {
	stmt := ast.Stmt(l.stmt)
	k := len(l.stack) - 1
	if l.labeled != nil {
		stmt, k = l.labeled, k-1
	}
	if k < 0 {
		return nil, 0
	}
	var list []ast.Stmt
	switch p := l.stack[k].(type) {
	case *ast.BlockStmt:
		list = p.List
	case *ast.CaseClause:
		list = p.Body
	case *ast.CommClause:
		list = p.Body
	}
	for i, s := range list {
		if s == stmt {
			return list, i
		}
	}
	return nil, 0
}

// exitConditions returns the conditions (as text) of the if statements
// whose then branch holds one of the loop's success exits.
func (c *checker) exitConditions(l *loop) map[string]bool {
	conds := map[string]bool{}
	match.WithStack(l.body, func(n ast.Node, stack []ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		exit := false
		switch n := n.(type) {
		case *ast.BranchStmt:
			exit = c.leaves(l, n, stack) && !c.failure(l, n, stack)
		case *ast.ReturnStmt:
			exit = !c.failure(l, n, stack)
		}
		if exit {
			for i := len(stack) - 1; i >= 0; i-- {
				if ifs, ok := stack[i].(*ast.IfStmt); ok {
					conds[types.ExprString(ifs.Cond)] = true
					break
				}
			}
		}
		return true
	})
	return conds
}

// blockFails reports whether a statement of b, outside func literals,
// fails as stmtFails says.
func (c *checker) blockFails(b *ast.BlockStmt) bool {
	found := false
	ast.Inspect(b, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case ast.Stmt:
			if _, ok := n.(*ast.BlockStmt); !ok && !found {
				found = c.stmtFails(n)
			}
		}
		return !found
	})
	return found
}

// stmtFails reports whether the statement s fails the test or returns a
// failure (see exhaustionFails).
func (c *checker) stmtFails(s ast.Stmt) bool {
	if ret, ok := s.(*ast.ReturnStmt); ok {
		for _, r := range ret.Results {
			if id, ok := ast.Unparen(r).(*ast.Ident); !ok || (id.Name != "nil" && id.Name != "true") {
				return true
			}
		}
		return false
	}
	switch s.(type) {
	case *ast.ExprStmt, *ast.AssignStmt, *ast.SendStmt, *ast.DeclStmt:
	default:
		return false
	}
	return c.failing(s) || anyCall(s, func(call *ast.CallExpr) bool {
		if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && id.Name == "panic" {
			_, builtin := c.info.Uses[id].(*types.Builtin)
			return builtin
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil {
			return false
		}
		path := fn.Pkg().Path()
		return strings.HasSuffix(path, "testify/require") || strings.HasSuffix(path, "testify/assert") ||
			path == "log" && strings.HasPrefix(fn.Name(), "Fatal")
	})
}
