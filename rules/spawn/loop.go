package spawn

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// A loopSite is a range loop each of whose iterations first runs a child
// and then checks its result.
type loopSite struct {
	rs       *ast.RangeStmt
	u        *unit
	rest     []ast.Stmt // the body after the unit
	carried  []*types.Var
	key      string // the index variable's name (new if the loop has none)
	newKey   bool
	n        ast.Expr // the number of iterations: the ranged int or collection
	isInt    bool
	names    map[string]string // results, g
	parent   ast.Node          // the statement list owner holding the loop
	idx      int               // the loop's index there
	listName string            // a name for a ranged composite literal, or ""
}

// loop reports a range loop whose body starts by running a child.
func (c *checker) loop(rs *ast.RangeStmt) {
	if rs.Body == nil || len(rs.Body.List) == 0 {
		return
	}
	u, next := c.unitAt(rs.Body.List, 0)
	if u == nil {
		return
	}
	ls := &loopSite{rs: rs, u: u, rest: rs.Body.List[next:]}
	d := rule.Diagnostic{
		Pos:     u.call.Pos(),
		End:     u.call.End(),
		Message: "each iteration of the loop runs a child process, one after another",
	}
	why := c.analyzeLoop(ls)
	if why == "" {
		why = c.loopOrderHazard(ls)
	}
	if why != "" {
		d.NotFixed = why
	} else {
		d.Message = "each iteration of the loop runs an independent child process, one after another"
		d.Fix = c.loopFix(ls)
		if d.Fix != nil {
			d.Fix.Hypothesis = rule.Unproven(c.loopUnproven(ls))
			if d.Fix.Hypothesis != nil {
				d.Message = "each iteration of the loop runs a child process, one after another"
			}
		}
	}
	c.pass.Report(d)
}

func (c *checker) analyzeLoop(ls *loopSite) string {
	rs, u := ls.rs, ls.u
	if u.why != "" {
		return fmt.Sprintf("the child runs in %s and so must stay on the test goroutine (return an error instead)", u.why)
	}
	if rs.Tok == token.ASSIGN {
		return "the loop assigns variables declared outside it"
	}
	switch t := types.Unalias(c.info.TypeOf(rs.X)).Underlying().(type) {
	case *types.Slice, *types.Array:
	case *types.Pointer:
		if _, ok := t.Elem().Underlying().(*types.Array); !ok {
			return "the loop does not range over a slice, an array or a number"
		}
	case *types.Basic:
		if t.Info()&types.IsInteger == 0 {
			return "the loop does not range over a slice, an array or a number"
		}
		ls.isInt = true
	case *types.Map:
		return "the loop ranges over a map, whose order two loops cannot share"
	default:
		return "the loop does not range over a slice, an array or a number"
	}
	if !c.sameTwice(rs.X) {
		return "the ranged expression is not a plain value the rewrite can read twice"
	}
	if match.Modifies(c.info, rs.Body, match.Vars(c.info, rs.X)) != nil {
		return "the loop body changes what it ranges over"
	}
	if why := c.effect(blockOf(ls.rest), true); why != "" {
		return "the code after the child " + why + "; the next child may depend on it"
	}
	nodes := make([]ast.Node, len(u.stmts))
	for i, s := range u.stmts {
		nodes[i] = s
	}
	sRefs := refs(c.info, nodes...)
	rRefs := refs(c.info, blockOf(ls.rest))
	for _, v := range sortedVars(sRefs) {
		rs2 := sRefs[v]
		if declaredIn(v, rs) || ignored(v) {
			if declaredIn(v, rs.Body) && !declaredInAny(v, []*unit{u}) && written(rRefs[v]) {
				return fmt.Sprintf("the code after the child sets %s, which the next iteration's child uses", v.Name())
			}
			continue
		}
		// Declared outside the loop.
		if written(rs2) {
			return fmt.Sprintf("each child's code sets %s, declared outside the loop", v.Name())
		}
		if c.programNameOnly(u, v, rs2) {
			continue
		}
		return fmt.Sprintf("every child is given %s; one may change what another reads", v.Name())
	}
	// The variables the child's code declares that the rest reads go
	// from one loop to the other through a slice of results.
	last := u.stmts[len(u.stmts)-1]
	var replay ast.Node
	if is, ok := last.(*ast.IfStmt); ok {
		replay = is
	}
	for _, v := range sortedVars(sRefs) {
		if !declaredInAny(v, []*unit{u}) {
			continue
		}
		used := len(rRefs[v]) > 0
		if replay != nil && !used {
			for _, x := range sRefs[v] {
				if x.id.Pos() >= replay.(*ast.IfStmt).Init.End() {
					used = true
				}
			}
		}
		if !used {
			continue
		}
		if c.typeExpr(v.Type()) == nil {
			return "the rewrite cannot name the type " + types.TypeString(v.Type(), nil) + " of " + v.Name()
		}
		for _, w := range ls.carried {
			if w.Name() == v.Name() {
				return "two variables named " + v.Name() + " would be carried between the loops"
			}
		}
		if o := c.scopeOf(rs.Body).Lookup(v.Name()); o != nil && o != types.Object(v) {
			return "the loop body declares another " + v.Name()
		}
		ls.carried = append(ls.carried, v)
	}
	taken := c.namesIn(c.fn)
	fresh := func(base string) string {
		name := base
		for k := 2; taken[name] || c.pass.Pkg.Scope().Lookup(name) != nil || types.Universe.Lookup(name) != nil; k++ {
			name = fmt.Sprintf("%s%d", base, k)
		}
		taken[name] = true
		return name
	}
	if ls.parent, ls.idx = c.enclosing(rs); ls.parent == nil {
		return "the loop is not in a statement list the rewrite can edit"
	}
	if _, ok := ast.Unparen(rs.X).(*ast.CompositeLit); ok {
		ls.listName = fresh("rows") // named once, ranged twice
	}
	ls.names = map[string]string{"g": fresh("g"), "results": fresh("results"), "result": fresh("result")}
	if id, ok := rs.Key.(*ast.Ident); ok && id.Name != "_" {
		ls.key = id.Name
	} else {
		ls.key, ls.newKey = fresh("i"), true
	}
	return ""
}

// blockOf wraps statements for inspection.
func blockOf(list []ast.Stmt) *ast.BlockStmt {
	b := &ast.BlockStmt{List: list}
	if len(list) > 0 {
		b.Lbrace, b.Rbrace = list[0].Pos(), list[len(list)-1].End()
	}
	return b
}

// sameTwice reports whether evaluating e twice gives equal values with no
// side effect: a pure expression, or a composite literal of them.
func (c *checker) sameTwice(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if !c.sameTwice(kv.Key) && !isFieldKey(kv.Key) || !c.sameTwice(kv.Value) {
					return false
				}
				continue
			}
			if !c.sameTwice(el) {
				return false
			}
		}
		return true
	}
	return match.IsPure(c.info, e)
}

// isFieldKey reports whether e is a struct field name in a keyed literal.
func isFieldKey(e ast.Expr) bool {
	_, ok := e.(*ast.Ident)
	return ok
}

// loopUnproven says why the analysis cannot be sure the iterations'
// children share no files: they run in a helper whose commands it cannot
// read, or a program other than the test binary, each in a directory of
// its own (the same program in the same directory is a hazard it sees:
// loopOrderHazard).
func (c *checker) loopUnproven(ls *loopSite) string {
	if external(ls.u) {
		return fmt.Sprintf("every child runs %s, %s", ls.u.prog, unseenProgram)
	}
	return c.unproven([]*unit{ls.u})
}

// perIteration reports whether the expression text names a variable the
// loop declares (its key or value).
func (c *checker) perIteration(ls *loopSite, expr string) bool {
	for _, e := range []ast.Expr{ls.rs.Key, ls.rs.Value} {
		if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
			if expr == id.Name || strings.HasPrefix(expr, id.Name+".") || strings.HasPrefix(expr, id.Name+"[") {
				return true
			}
		}
	}
	return false
}
