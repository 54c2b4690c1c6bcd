package contract

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"time"

	"github.com/unflake/unflake/internal/match"
)

// An evaluator computes the value of a duration expression in one
// function: a constant, arithmetic on constants (ttl/3, tries*interval),
// a conversion, and a local the function declares once with such a value
// and never changes.
type evaluator struct {
	info *types.Info
	root ast.Node // the function whose locals it may read
}

// maxDepth bounds the locals followed through their definitions.
const maxDepth = 4

// value returns the value of e in nanoseconds, or false when unknown.
func (ev *evaluator) value(e ast.Expr, depth int) (time.Duration, bool) {
	if tv, ok := ev.info.Types[e]; ok && tv.Value != nil {
		v := constant.ToInt(tv.Value)
		if v.Kind() != constant.Int {
			return 0, false
		}
		n, exact := constant.Int64Val(v)
		return time.Duration(n), exact
	}
	if depth > maxDepth {
		return 0, false
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, ok := ev.info.Uses[x].(*types.Var)
		if !ok || match.IsPackageLevel(v) {
			return 0, false
		}
		init := ev.definition(v)
		if init == nil {
			return 0, false
		}
		return ev.value(init, depth+1)
	case *ast.BinaryExpr:
		a, okA := ev.value(x.X, depth+1)
		b, okB := ev.value(x.Y, depth+1)
		if !okA || !okB {
			return 0, false
		}
		switch x.Op {
		case token.MUL:
			p, overflow := match.MulDuration(a, int64(b))
			return p, !overflow
		case token.QUO:
			if b == 0 {
				return 0, false
			}
			return a / b, true
		case token.ADD:
			s, overflow := match.AddDuration(a, b)
			return s, !overflow
		case token.SUB:
			return a - b, true
		}
	case *ast.CallExpr:
		// A conversion: time.Duration(n).
		if tv, ok := ev.info.Types[x.Fun]; ok && tv.IsType() && len(x.Args) == 1 {
			return ev.value(x.Args[0], depth+1)
		}
	}
	return 0, false
}

// definition returns the value v is declared with in the root function
// when that is its only assignment, or nil.
func (ev *evaluator) definition(v *types.Var) ast.Expr {
	if ev.root == nil || v.Pos() < ev.root.Pos() || v.Pos() >= ev.root.End() {
		return nil
	}
	var init ast.Expr
	ok := true
	ast.Inspect(ev.root, func(n ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if ev.info.Defs[name] == v && len(n.Values) == len(n.Names) {
					init = n.Values[i]
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				id, isID := ast.Unparen(l).(*ast.Ident)
				if !isID {
					continue
				}
				switch {
				case ev.info.Defs[id] == v && len(n.Lhs) == len(n.Rhs):
					init = n.Rhs[i]
				case ev.info.Uses[id] == v:
					ok = false // assigned again
				}
			}
		case *ast.IncDecStmt:
			if id, isID := ast.Unparen(n.X).(*ast.Ident); isID && ev.info.Uses[id] == v {
				ok = false
			}
		case *ast.UnaryExpr:
			if id, isID := ast.Unparen(n.X).(*ast.Ident); isID && n.Op == token.AND && ev.info.Uses[id] == v {
				ok = false // its address escapes
			}
		}
		return true
	})
	if !ok {
		return nil
	}
	return init
}
