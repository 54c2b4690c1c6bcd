package attemptloop

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// match returns the counted loop stmt, or nil.
func (c *checker) match(stmt ast.Stmt, stack []ast.Node) *loop {
	l := &loop{stmt: stmt, stack: append([]ast.Node(nil), stack...)}
	if len(stack) == 0 {
		return nil
	}
	l.parent = stack[len(stack)-1]
	if ls, ok := l.parent.(*ast.LabeledStmt); ok {
		l.labeled = ls
		l.label, _ = c.info.Defs[ls.Label].(*types.Label)
	}
	switch s := stmt.(type) {
	case *ast.ForStmt:
		l.body = s.Body
		if !c.matchFor(l, s) {
			return nil
		}
	case *ast.RangeStmt:
		l.body = s.Body
		if !c.matchRange(l, s) {
			return nil
		}
	}
	if l.lo != nil && l.hi != nil {
		if n, ok := c.count(l); ok && n <= 0 {
			return nil // the body never runs
		}
	}
	return l
}

func (c *checker) matchFor(l *loop, s *ast.ForStmt) bool {
	// The post statement names the counter and its direction.
	var id *ast.Ident
	switch post := s.Post.(type) {
	case *ast.IncDecStmt:
		id, _ = ast.Unparen(post.X).(*ast.Ident)
		l.down = post.Tok == token.DEC
	case *ast.AssignStmt:
		if len(post.Lhs) != 1 || len(post.Rhs) != 1 || (post.Tok != token.ADD_ASSIGN && post.Tok != token.SUB_ASSIGN) {
			return false
		}
		if n, ok := match.ConstInt(c.info, post.Rhs[0]); !ok || n != 1 {
			return false
		}
		id, _ = ast.Unparen(post.Lhs[0]).(*ast.Ident)
		l.down = post.Tok == token.SUB_ASSIGN
	}
	if id == nil {
		return false
	}
	l.counter, _ = c.info.Uses[id].(*types.Var)
	if l.counter == nil || !isInteger(l.counter.Type()) {
		return false
	}
	// Have: a post statement stepping an integer counter by one.

	var start ast.Expr
	switch init := s.Init.(type) {
	case nil:
		l.outer = true
	case *ast.AssignStmt:
		if len(init.Lhs) != 1 || len(init.Rhs) != 1 {
			return false
		}
		lid, ok := init.Lhs[0].(*ast.Ident)
		if !ok || c.info.ObjectOf(lid) != l.counter {
			return false
		}
		switch init.Tok {
		case token.DEFINE:
		case token.ASSIGN:
			l.outer = true
		default:
			return false
		}
		start = init.Rhs[0]
	default:
		return false
	}
	// Have: the counter's start value, or nil if it is set before the loop.

	var bound ast.Expr
	var op token.Token
	for _, e := range match.Conjuncts(s.Cond) {
		if bound == nil {
			if b, o, ok := c.comparison(e, l.counter); ok {
				bound, op = b, o
				continue
			}
		}
		l.others = append(l.others, e)
	}
	if bound == nil || c.mentions(bound, l.counter) || start != nil && c.mentions(start, l.counter) {
		return false
	}
	switch {
	case !l.down && (op == token.LSS || op == token.LEQ):
		l.lo, l.hi, l.reeval = start, bound, bound
	case l.down && (op == token.GTR || op == token.GEQ):
		l.lo, l.hi, l.reeval = bound, start, bound
	default:
		return false // the counter moves away from its bound
	}
	l.incl = op == token.LEQ || op == token.GEQ
	// Have: for i := lo; i < hi; i++ or one of its relatives.
	return true
}

func (c *checker) matchRange(l *loop, s *ast.RangeStmt) bool {
	if s.Value != nil || !isInteger(c.info.TypeOf(s.X)) {
		return false
	}
	if id, ok := s.Key.(*ast.Ident); ok && id.Name != "_" {
		l.counter, _ = c.info.ObjectOf(id).(*types.Var)
		l.outer = s.Tok == token.ASSIGN
	} else if s.Key != nil && !ok {
		return false // for x.f = range n
	}
	// Have: for range hi, or for i := range hi.
	l.lo = zero
	l.hi = s.X
	return true
}

// comparison matches e against `counter op bound` or `bound op counter` and
// returns the bound and the operator with the counter on the left.
func (c *checker) comparison(e ast.Expr, counter *types.Var) (ast.Expr, token.Token, bool) {
	b, ok := ast.Unparen(e).(*ast.BinaryExpr)
	if !ok {
		return nil, 0, false
	}
	flip := map[token.Token]token.Token{token.LSS: token.GTR, token.LEQ: token.GEQ, token.GTR: token.LSS, token.GEQ: token.LEQ}
	if _, ok := flip[b.Op]; !ok {
		return nil, 0, false
	}
	if c.isVar(b.X, counter) {
		return b.Y, b.Op, true
	}
	if c.isVar(b.Y, counter) {
		return b.X, flip[b.Op], true
	}
	return nil, 0, false
}

func (c *checker) isVar(e ast.Expr, v *types.Var) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && c.info.Uses[id] == v
}

// mentions reports whether n refers to v.
func (c *checker) mentions(n ast.Node, v *types.Var) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && c.info.ObjectOf(id) == v {
			found = true
		}
		return !found
	})
	return found
}

func isInteger(t types.Type) bool {
	if t == nil {
		return false
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// waits returns the waits of a loop body: time.Sleep(d) and <-time.After(d)
// statements and select cases <-time.After(d) of a select without default,
// outside func literals (a goroutine's sleep is not the loop's).
func (c *checker) waits(body *ast.BlockStmt) []wait {
	var out []wait
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		es, ok := n.(*ast.ExprStmt)
		if !ok {
			_, lit := n.(*ast.FuncLit)
			return !lit
		}
		d := c.waitDuration(es.X)
		if d == nil {
			return true
		}
		if cc, ok := stack[len(stack)-1].(*ast.CommClause); ok && cc.Comm == es {
			sel := stack[len(stack)-3].(*ast.SelectStmt)
			for _, s := range sel.Body.List {
				if s.(*ast.CommClause).Comm == nil {
					return true // the select does not wait: it has a default case
				}
			}
		}
		nested := false
		for _, s := range stack[1:] {
			switch s.(type) {
			case *ast.ForStmt, *ast.RangeStmt:
				nested = true
			}
		}
		out = append(out, wait{d: d, nested: nested})
		return true
	})
	return out
}

// waitDuration returns d if e is time.Sleep(d) or <-time.After(d).
func (c *checker) waitDuration(e ast.Expr) ast.Expr {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		if call, ok := ast.Unparen(u.X).(*ast.CallExpr); ok && len(call.Args) == 1 && match.IsPkgFunc(c.info, call, "time", "After") {
			return call.Args[0]
		}
		return nil
	}
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 && match.IsPkgFunc(c.info, call, "time", "Sleep") {
		return call.Args[0]
	}
	return nil
}

// successExit reports whether the loop body can leave the loop other than
// by failing the test: a break, return or goto leaving the loop whose
// branch does not call t.Error, t.Fatal, t.Skip or their relatives.
func (c *checker) successExit(l *loop) bool {
	found := false
	match.WithStack(l.body, func(n ast.Node, stack []ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its return and branches are its own
		case *ast.BranchStmt:
			found = c.leaves(l, n, stack) && !c.failure(l, n, stack)
		case *ast.ReturnStmt:
			found = !c.failure(l, n, stack)
		}
		return !found
	})
	return found
}

// leaves reports whether the branch statement b, enclosed by stack within
// the loop body (stack[0] is the body), leaves the loop.
func (c *checker) leaves(l *loop, b *ast.BranchStmt, stack []ast.Node) bool {
	inside := func(lab *types.Label) bool {
		return lab != nil && l.stmt.Pos() <= lab.Pos() && lab.Pos() < l.stmt.End()
	}
	var lab *types.Label
	if b.Label != nil {
		lab, _ = c.info.Uses[b.Label].(*types.Label)
		if lab == nil {
			return false
		}
	}
	switch b.Tok {
	case token.BREAK:
		if lab != nil {
			return lab == l.label || !inside(lab)
		}
		for _, s := range stack[1:] {
			switch s.(type) {
			case *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
				return false // it breaks out of s
			}
		}
		return true
	case token.CONTINUE:
		return lab != nil && lab != l.label && !inside(lab)
	case token.GOTO:
		return !inside(lab)
	}
	return false
}
