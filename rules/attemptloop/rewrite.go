package attemptloop

import (
	"fmt"
	"go/ast"
	"go/token"
	"strconv"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
)

// product returns count × waits as a dst expression of type time.Duration:
// 20*interval, time.Duration(n)*5*time.Millisecond,
// time.Duration(n)*(interval+time.Millisecond).
func (c *checker) product(l *loop, n int64, constCount bool, sum time.Duration, others []ast.Expr) dst.Expr {
	var count dst.Expr
	if constCount {
		count = intLit(n)
	} else {
		count = &dst.CallExpr{Fun: &dst.Ident{Path: "time", Name: "Duration"}, Args: []dst.Expr{c.countExpr(l)}}
	}
	if len(others) == 0 {
		// Have: a constant wait: count * k * unit.
		d := match.DurationExpr(sum)
		if b, ok := d.(*dst.BinaryExpr); ok {
			return &dst.BinaryExpr{X: &dst.BinaryExpr{X: count, Op: token.MUL, Y: b.X}, Op: token.MUL, Y: b.Y}
		}
		return &dst.BinaryExpr{X: count, Op: token.MUL, Y: d}
	}
	var waits dst.Expr
	for _, o := range others {
		w := c.clone(o)
		if waits == nil {
			waits = w
			continue
		}
		waits = &dst.BinaryExpr{X: waits, Op: token.ADD, Y: parenIfBinary(w, token.ADD)}
	}
	if sum != 0 {
		waits = &dst.BinaryExpr{X: waits, Op: token.ADD, Y: match.DurationExpr(sum)}
	}
	return &dst.BinaryExpr{X: count, Op: token.MUL, Y: parenIfBinary(waits, token.MUL)}
}

// countExpr returns the attempt count hi-lo (+1) of l as a dst expression,
// for a count that is not constant.
func (c *checker) countExpr(l *loop) dst.Expr {
	lo, loConst := c.constBound(l.lo)
	hi, hiConst := c.constBound(l.hi)
	inc := int64(0)
	if l.incl {
		inc = 1
	}
	var e dst.Expr
	switch {
	case loConst:
		e = addConst(c.clone(l.hi), inc-lo)
	case hiConst:
		e = &dst.BinaryExpr{X: intLit(hi + inc), Op: token.SUB, Y: parenIfBinary(c.clone(l.lo), token.SUB)}
	default:
		e = &dst.BinaryExpr{X: c.clone(l.hi), Op: token.SUB, Y: parenIfBinary(c.clone(l.lo), token.SUB)}
		e = addConst(e, inc)
	}
	return e
}

func addConst(e dst.Expr, k int64) dst.Expr {
	switch {
	case k > 0:
		return &dst.BinaryExpr{X: e, Op: token.ADD, Y: intLit(k)}
	case k < 0:
		return &dst.BinaryExpr{X: e, Op: token.SUB, Y: intLit(-k)}
	}
	return e
}

func intLit(n int64) dst.Expr {
	if n < 0 {
		return &dst.UnaryExpr{Op: token.SUB, X: intLit(-n)}
	}
	return &dst.BasicLit{Kind: token.INT, Value: strconv.FormatInt(n, 10)}
}

// parenIfBinary parenthesizes e, the right operand of op, if it is a binary
// expression that would otherwise bind differently.
func parenIfBinary(e dst.Expr, op token.Token) dst.Expr {
	if b, ok := e.(*dst.BinaryExpr); ok && b.Op.Precedence() <= op.Precedence() {
		return &dst.ParenExpr{X: e}
	}
	return e
}

// clone returns a copy of the decorated form of e without its comments.
func (c *checker) clone(e ast.Expr) dst.Expr {
	d := dst.Clone(c.pass.Dst(e)).(dst.Expr)
	match.StripDecorations(d)
	return d
}

// rewrite edits the decorated loop: its header becomes
//
//	for deadline := time.Now().Add(budget); time.Now().Before(deadline); {
//
// or, keeping the counter,
//
//	for i, deadline := 0, time.Now().Add(budget); time.Now().Before(deadline); i++ {
//
// and its body stays as it is.
func (c *checker) rewrite(l *loop, name string, budget dst.Expr, keep bool) error {
	now := func() dst.Expr { return &dst.CallExpr{Fun: &dst.Ident{Path: "time", Name: "Now"}} }
	start := &dst.CallExpr{Fun: &dst.SelectorExpr{X: now(), Sel: dst.NewIdent("Add")}, Args: []dst.Expr{budget}}
	cond := &dst.CallExpr{Fun: &dst.SelectorExpr{X: now(), Sel: dst.NewIdent("Before")}, Args: []dst.Expr{dst.NewIdent(name)}}

	switch s := c.pass.Dst(l.stmt).(type) {
	case *dst.ForStmt:
		if keep {
			init := s.Init.(*dst.AssignStmt)
			init.Lhs = append(init.Lhs, dst.NewIdent(name))
			init.Rhs = append(init.Rhs, start)
		} else {
			s.Init = &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(name)}, Tok: token.DEFINE, Rhs: []dst.Expr{start}}
			s.Post = nil
		}
		s.Cond = cond

	case *dst.RangeStmt:
		f := &dst.ForStmt{
			Init: &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(name)}, Tok: token.DEFINE, Rhs: []dst.Expr{start}},
			Cond: cond,
			Body: s.Body,
		}
		if keep {
			key := s.Key.(*dst.Ident)
			f.Init = &dst.AssignStmt{
				Lhs: []dst.Expr{dst.NewIdent(key.Name), dst.NewIdent(name)},
				Tok: token.DEFINE,
				Rhs: []dst.Expr{intLit(0), start},
			}
			f.Post = &dst.IncDecStmt{X: dst.NewIdent(key.Name), Tok: token.INC}
		}
		f.Decs.NodeDecs = s.Decs.NodeDecs
		f.Decs.For = s.Decs.For
		f.Decs.Init = append(append(append(f.Decs.Init, s.Decs.Key...), s.Decs.Value...), s.Decs.Range...)
		f.Decs.Cond = s.Decs.X
		return replaceStmt(c.pass.Dst(l.parent), s, f)
	}
	return nil
}

// replaceStmt replaces old by new in parent, a node holding statements.
func replaceStmt(parent dst.Node, old, new dst.Stmt) error {
	replace := func(list []dst.Stmt) {
		for i, s := range list {
			if s == old {
				list[i] = new
			}
		}
	}
	switch p := parent.(type) {
	case *dst.LabeledStmt:
		p.Stmt = new
	case *dst.BlockStmt:
		replace(p.List)
	case *dst.CaseClause:
		replace(p.Body)
	case *dst.CommClause:
		replace(p.Body)
	default:
		return fmt.Errorf("a loop inside %T", parent)
	}
	return nil
}
