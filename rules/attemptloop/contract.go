package attemptloop

import (
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"strconv"
	"strings"
)

// attemptWords are the words of a failure message or a variable that name
// a count of attempts ("not usable after 3 attempts", "within 3 tries",
// retries, attemptCount).
var attemptWords = regexp.MustCompile(`(?i)(attempt|retr(y|ies|ied)|\btr(y|ies|ied)\b|\btimes\b|iteration|\brounds?\b)`)

// countContract says why the loop's attempt count is part of what the test
// checks, or "". A deadline would let code that needs more attempts than
// the count pass ("usable within 3 attempts" would pass a bug that needs
// 6), so such a loop is kept. The count is the contract when a check after
// the loop (the condition of an if whose body fails, or a failing
// statement or assertion, up to the end of the block that holds the loop
// or the next loop in it)
//
//   - names the loop's bound (t.Fatalf("not ready after %d tries", n));
//   - has a message that speaks of attempts, tries, retries, times,
//     iterations or rounds;
//   - reads a variable the loop counts (attempts++ in the body, then
//     if attempts > 3), or one whose name speaks of attempts or retries
//     (srv.Retries()).
func (c *checker) countContract(l *loop) string {
	bound := map[types.Object]bool{}
	for _, b := range []ast.Expr{l.lo, l.hi} {
		if b == nil {
			continue
		}
		ast.Inspect(b, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				switch obj := c.info.Uses[id].(type) {
				case *types.Var, *types.Const:
					if obj.Parent() != types.Universe {
						bound[obj] = true
					}
				}
			}
			return true
		})
	}
	counted := c.counted(l)
	why := ""
	for _, check := range c.checksAfter(l) {
		ast.Inspect(check, func(n ast.Node) bool {
			if why != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if text, err := strconv.Unquote(n.Value); err == nil && attemptWords.MatchString(text) && !strings.Contains(strings.ToLower(text), "times out") {
						why = "the failure message after the loop speaks of attempts (" + n.Value + "): the attempt count is part of what the test checks"
					}
				}
			case *ast.Ident:
				obj := c.info.Uses[n]
				switch {
				case obj == nil:
				case bound[obj]:
					why = "the attempt bound " + n.Name + " is used in a check after the loop: the attempt count is part of what the test checks"
				case counted[obj]:
					why = "the loop counts " + n.Name + ", which a check after the loop reads: the attempt count is part of what the test checks"
				case attemptWords.MatchString(n.Name) && !c.enclosingCounter(l, obj):
					if _, isFunc := obj.(*types.Func); isFunc || isVarOrField(obj) {
						why = "a check after the loop reads " + n.Name + ": the attempt count is part of what the test checks"
					}
				}
			}
			return true
		})
		if why != "" {
			return why
		}
	}
	return ""
}

func isVarOrField(obj types.Object) bool {
	_, ok := obj.(*types.Var)
	return ok
}

// counted returns the variables declared outside the loop that its body
// increments (n++, n += 1, n = n + 1).
func (c *checker) counted(l *loop) map[types.Object]bool {
	out := map[types.Object]bool{}
	outside := func(e ast.Expr) types.Object {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok {
			return nil
		}
		obj := c.info.Uses[id]
		if obj == nil || l.stmt.Pos() <= obj.Pos() && obj.Pos() < l.stmt.End() {
			return nil
		}
		return obj
	}
	ast.Inspect(l.body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IncDecStmt:
			if obj := outside(n.X); obj != nil {
				out[obj] = true
			}
		case *ast.AssignStmt:
			if len(n.Lhs) == 1 && (n.Tok == token.ADD_ASSIGN || n.Tok == token.SUB_ASSIGN || n.Tok == token.ASSIGN && len(n.Rhs) == 1 && c.mentionsExpr(n.Rhs[0], n.Lhs[0])) {
				if obj := outside(n.Lhs[0]); obj != nil {
					out[obj] = true
				}
			}
		}
		return true
	})
	return out
}

// mentionsExpr reports whether e refers to the variable x names.
func (c *checker) mentionsExpr(e, x ast.Expr) bool {
	id, ok := ast.Unparen(x).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := c.info.Uses[id].(*types.Var)
	return ok && c.mentions(e, v)
}

// checksAfter returns the checks after the loop, to the end of the block
// that holds it or the next loop in it: the conditions (and inits) of if statements whose body
// fails the test, and the failing statements and testify assertions.
func (c *checker) checksAfter(l *loop) []ast.Node {
	list, at := c.enclosingList(l)
	if list == nil {
		return nil
	}
	var out []ast.Node
	for _, s := range list[at+1:] {
		switch s.(type) {
		case *ast.ForStmt, *ast.RangeStmt, *ast.LabeledStmt:
			return out // the checks after the next loop are that loop's
		}
		ast.Inspect(s, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IfStmt:
				if c.blockFails(n.Body) {
					out = append(out, n.Cond)
					if n.Init != nil {
						out = append(out, n.Init)
					}
				}
			case *ast.ExprStmt:
				if c.stmtFails(n) || c.assertion(n) {
					out = append(out, n)
				}
			case *ast.AssignStmt, *ast.ReturnStmt, *ast.SendStmt, *ast.DeclStmt:
				if c.stmtFails(n.(ast.Stmt)) {
					out = append(out, n)
				}
			}
			return true
		})
	}
	return out
}

// enclosingCounter reports whether obj is declared by the header of a loop
// that encloses l: the attempt of an outer loop, not of this one.
func (c *checker) enclosingCounter(l *loop, obj types.Object) bool {
	for _, n := range l.stack {
		var header []ast.Node
		switch n := n.(type) {
		case *ast.ForStmt:
			if n.Init != nil {
				header = append(header, n.Init)
			}
		case *ast.RangeStmt:
			if n.Key != nil {
				header = append(header, n.Key)
			}
			if n.Value != nil {
				header = append(header, n.Value)
			}
		}
		for _, h := range header {
			if h.Pos() <= obj.Pos() && obj.Pos() < h.End() {
				return true
			}
		}
	}
	return false
}
