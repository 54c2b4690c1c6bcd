package attemptloop

import (
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// notAFailure is the reason to leave a poll alone whose exhaustion the test
// tolerates: it may be a check that something does not happen, which passes
// by running out of attempts, and a longer deadline would make it slower.
const notAFailure = "running out of attempts does not fail the test, so a longer deadline could slow down a test that passes that way"

// notProven is the reason to leave a poll alone that a check follows which
// may pass when the loop runs out of attempts: it does not test the
// negation of the condition the loop exits on.
const notProven = "the check after the loop does not test the negation of the condition the loop exits on, so the test may pass by running out of attempts (a check that something stays false), and a longer deadline could slow it down"

// exhaustionFails reports whether the code right after the loop fails the
// test (or makes a helper return a failure) whenever the loop runs out of
// attempts, so that a test that passes never runs out and a longer
// deadline cannot slow it down. It looks at the first statement after the
// loop other than up to two plain calls (mu.Unlock(), cancel()):
//
//   - a statement that fails unconditionally (t.Fatal and relatives,
//     panic, log.Fatal, an error built, a return of something other than
//     nil or true) fails;
//   - an if whose body fails, or a testify assertion, fails on exhaustion
//     only when its failing condition is the negation of the condition of
//     one of the loop's success exits (`if ready() { break }` then `if
//     !ready() { t.Fatal() }`, `if err == nil { break }` then
//     `require.NoError(t, err)`): see provesExhaustion.
//
// Anything else is not proof: `if bad() { break }` followed by `if bad()
// { t.Fatal() }` checks that something stays false and passes by running
// out of attempts; a loop that just waits and a check of something else
// (`if store.Count() != 0`) pass the same way.
//
// When it does not, it says why. When it does, check is the statement
// after the loop that fails.
func (c *checker) exhaustionFails(l *loop) (fails bool, why string, check ast.Stmt) {
	list, at := c.enclosingList(l)
	exits := c.exitConditions(l)
	proves := func(s ast.Stmt, guard []cond) (bool, string, ast.Stmt) {
		if c.provesExhaustion(exits, guard) {
			return true, "", s
		}
		return false, notProven, nil
	}
	for k := at + 1; k < len(list) && k <= at+3; k++ {
		switch s := list[k].(type) {
		case *ast.IfStmt:
			if !c.blockFails(s.Body) {
				return false, notAFailure, nil
			}
			return proves(s, c.disjuncts(s.Cond, c.defined(s.Init)))
		case *ast.ExprStmt:
			if guard, ok := c.assertionGuard(s); ok {
				return proves(s, guard)
			}
			if c.assertion(s) {
				return false, notProven, nil // an assertion whose condition the rule cannot read
			}
			if c.stmtFails(s) {
				return true, "", s
			}
			// A call such as mu.Unlock() or cancel(): look further.
		default:
			if c.stmtFails(s) {
				return true, "", s
			}
			return false, notAFailure, nil
		}
	}
	return false, notAFailure, nil
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

// exitConditions returns, for each success exit of the loop, the
// conditions under which it is reached: the conditions of the if
// statements between it and the loop body (negated in an else branch), the
// conjuncts of each, and the negated conditions of the `if c { ...;
// continue }` statements before it in the blocks on its way. An exit whose
// conditions the rule cannot tell has none, and proves nothing.
func (c *checker) exitConditions(l *loop) [][]cond {
	var out [][]cond
	for _, e := range c.successExits(l) {
		out = append(out, e.alts...)
	}
	return out
}

// A successExit is a statement that leaves the loop other than by failing
// the test, and the conditions under which it is reached: each of alts is
// one way of telling (the if statements on its way, a flag set before
// it); none when the rule cannot tell.
type successExit struct {
	stmt ast.Stmt
	alts [][]cond
	// under is the condition of the innermost if statement on its way,
	// nil when none: what a reason quotes.
	under ast.Expr
}

// String words the exit for a reason: "if ctx.Err() != nil { break }".
func (e successExit) String() string {
	s := "{ " + exitWord(e.stmt) + " }"
	if e.under != nil {
		s = "if " + types.ExprString(e.under) + " " + s
	}
	return s
}

// exitWord is the keyword of an exit statement: break, goto L, return.
func exitWord(s ast.Stmt) string {
	switch s := s.(type) {
	case *ast.BranchStmt:
		if s.Label != nil {
			return s.Tok.String() + " " + s.Label.Name
		}
		return s.Tok.String()
	case *ast.ReturnStmt:
		return "return"
	}
	return "exit"
}

// successExits returns the loop's success exits (see exitConditions).
func (c *checker) successExits(l *loop) []successExit {
	return c.exits(l, func(n ast.Stmt, stack []ast.Node) bool { return !c.failure(l, n, stack) })
}

// quietExits returns the loop's exits that do not fail the test where
// they are: its success exits, and those under `if err != nil` that leave
// the failing to the code after the loop (`if ctx.Err() != nil { break
// }`), which the check after the loop then reports as the state not
// reached.
func (c *checker) quietExits(l *loop) []successExit {
	return c.exits(l, func(n ast.Stmt, stack []ast.Node) bool { return !c.failsHere(l, stack) })
}

// exits returns the statements that leave the loop and that keep says
// to, with the conditions under which each is reached.
func (c *checker) exits(l *loop, keep func(ast.Stmt, []ast.Node) bool) []successExit {
	subst := c.defined(l.body)
	var out []successExit
	match.WithStack(l.body, func(n ast.Node, stack []ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		exit := false
		switch n := n.(type) {
		case *ast.BranchStmt:
			exit = c.leaves(l, n, stack) && keep(n, stack)
		case *ast.ReturnStmt:
			exit = keep(n, stack)
		}
		if !exit {
			return true
		}
		e := successExit{stmt: n.(ast.Stmt), alts: c.exitAlts(l, n.(ast.Stmt), stack, subst)}
		for i := len(stack) - 1; i >= 0; i-- {
			if ifs, ok := stack[i].(*ast.IfStmt); ok {
				e.under = ifs.Cond
				break
			}
		}
		out = append(out, e)
		return true
	})
	return out
}

// exitAlts returns the ways of telling when the exit n, enclosed by stack
// within the loop body, is reached (see successExit).
func (c *checker) exitAlts(l *loop, n ast.Stmt, stack []ast.Node, subst map[types.Object]ast.Expr) [][]cond {
	var out [][]cond
	var conds []cond
	path := append(stack, n)
	for i := 0; i+1 < len(path); i++ {
		switch p := path[i].(type) {
		case *ast.IfStmt:
			switch path[i+1] {
			case p.Body:
				for _, e := range match.Conjuncts(p.Cond) {
					conds = append(conds, c.canon(e, subst))
				}
			case p.Else:
				conds = append(conds, c.canon(p.Cond, subst).not())
			default:
				return nil // in the init or condition: unknown
			}
		case *ast.BlockStmt:
			for _, s := range p.List {
				if s == path[i+1] {
					break
				}
				if ifs, ok := s.(*ast.IfStmt); ok && ifs.Else == nil && c.continues(l, ifs.Body) {
					conds = append(conds, c.canon(ifs.Cond, subst).not())
				}
			}
		case *ast.SwitchStmt:
			if p.Init != nil {
				return nil
			}
		case *ast.CaseClause:
			// switch x { case v: ... } is reached when x == v;
			// switch { case c: ... } when c.
			sw, _ := path[i-2].(*ast.SwitchStmt)
			if sw == nil || len(p.List) != 1 {
				return nil // a default, or one of several values
			}
			if sw.Tag == nil {
				conds = append(conds, c.canon(p.List[0], subst))
			} else {
				conds = append(conds, c.canon(&ast.BinaryExpr{X: sw.Tag, Op: token.EQL, Y: p.List[0]}, subst))
			}
		case *ast.CommClause, *ast.TypeSwitchStmt, *ast.SelectStmt, *ast.ForStmt, *ast.RangeStmt, *ast.LabeledStmt:
			return nil // a path the rule does not follow
		}
	}
	if len(conds) > 0 {
		out = append(out, conds)
	}
	// A flag set just before the exit (ok = true; break) that starts
	// false and that the loop sets to nothing else: running out of
	// attempts leaves it false.
	if block, ok := stack[len(stack)-1].(*ast.BlockStmt); ok {
		for _, s := range block.List {
			if s == n {
				break
			}
			if v := c.flagSet(s); v != nil && c.flagOnlySet(l, v) {
				out = append(out, []cond{{text: v.Name()}})
			}
		}
	}
	return out
}

// otherExit returns a success exit of the loop that the check after it
// (check, the statement exhaustionFails found) does not test the negation
// of: a second way out of the poll ("if hub.Lapsed(topic) { break }", "if
// ctx.Err() != nil { break }"), or nil. The deadline keeps it, so it ends
// the rewritten wait at a time the rule cannot bound: past the attempts'
// window and before the deadline, a state that comes late by less than
// that passes the rewrite, and a late mutant later than it fails both
// (red team batch 17, websublapse and watchdogctx). An unconditional
// failure after the loop tells no exit from another: then any second
// success exit is one.
func (c *checker) otherExit(l *loop, check ast.Stmt) *successExit {
	exits := c.quietExits(l)
	guard, known := c.checkGuard(check)
	if !known {
		if len(exits) > 1 {
			return &exits[1]
		}
		return nil
	}
	for i, e := range exits {
		if !c.provesExhaustion(e.alts, guard) {
			return &exits[i]
		}
	}
	return nil
}

// checkGuard returns the conditions under which check, a statement after
// the loop that fails on exhaustion, fails; known is false when it fails
// whatever they are (t.Fatal right after the loop).
func (c *checker) checkGuard(check ast.Stmt) (guard []cond, known bool) {
	switch s := check.(type) {
	case *ast.IfStmt:
		return c.disjuncts(s.Cond, c.defined(s.Init)), true
	case *ast.ExprStmt:
		if g, ok := c.assertionGuard(s); ok {
			return g, true
		}
	}
	return nil, false
}

// flagSet returns v if s is `v = true` for a local bool variable v.
func (c *checker) flagSet(s ast.Stmt) *types.Var {
	as, ok := s.(*ast.AssignStmt)
	if !ok || as.Tok != token.ASSIGN || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return nil
	}
	if b, ok := c.boolConst(as.Rhs[0]); !ok || !b {
		return nil
	}
	id, ok := ast.Unparen(as.Lhs[0]).(*ast.Ident)
	if !ok {
		return nil
	}
	v, _ := c.info.Uses[id].(*types.Var)
	if v == nil || v.Parent() == nil || v.Parent() == c.pass.Pkg.Scope() {
		return nil
	}
	return v
}

// flagOnlySet reports whether the flag v is declared false before the
// loop (v := false, var v bool) in the statement list that holds the loop,
// and the loop sets it to true only.
func (c *checker) flagOnlySet(l *loop, v *types.Var) bool {
	list, at := c.enclosingList(l)
	declared := false
	for _, s := range list[:at] {
		switch s := s.(type) {
		case *ast.AssignStmt:
			if id, ok := s.Lhs[0].(*ast.Ident); ok && s.Tok == token.DEFINE && len(s.Lhs) == 1 && len(s.Rhs) == 1 && c.info.Defs[id] == v {
				b, ok := c.boolConst(s.Rhs[0])
				declared = ok && !b
			} else if c.mentions(s, v) {
				return false
			}
		case *ast.DeclStmt:
			if gd, ok := s.Decl.(*ast.GenDecl); ok && len(gd.Specs) == 1 {
				if vs, ok := gd.Specs[0].(*ast.ValueSpec); ok && len(vs.Names) == 1 && c.info.Defs[vs.Names[0]] == v {
					declared = len(vs.Values) == 0
				}
			}
		default:
			if c.mentions(s, v) {
				return false
			}
		}
	}
	if !declared {
		return false
	}
	only := true
	ast.Inspect(l.body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if c.flagSet(n) != v {
				for _, lhs := range n.Lhs {
					if id, ok := ast.Unparen(lhs).(*ast.Ident); ok && c.info.Uses[id] == v {
						only = false
					}
				}
			}
		case *ast.UnaryExpr:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op == token.AND && c.info.Uses[id] == v {
				only = false
			}
		}
		return only
	})
	return only
}

// continues reports whether the block b ends with a continue of the loop l.
func (c *checker) continues(l *loop, b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	br, ok := b.List[len(b.List)-1].(*ast.BranchStmt)
	if !ok || br.Tok != token.CONTINUE {
		return false
	}
	if br.Label == nil {
		return true
	}
	lab, _ := c.info.Uses[br.Label].(*types.Label)
	return lab != nil && lab == l.label
}

// provesExhaustion reports whether a check that fails when one of guard
// holds fails whenever the loop runs out of attempts: for one of the
// loop's exits, the negation of each of its conditions is one of guard.
// When the loop runs out of attempts, no exit's conditions held at the
// last pass, and the check reads them again.
func (c *checker) provesExhaustion(exits [][]cond, guard []cond) bool {
	for _, conds := range exits {
		all := true
		for _, e := range conds {
			found := false
			for _, g := range guard {
				found = found || g == e.not()
			}
			all = all && found
		}
		if all {
			return true
		}
	}
	return false
}

// A cond is a condition in a canonical form: its text (with the variables
// it was computed into replaced by their values), and whether it is
// negated. a > b is b < a, a >= b is !(a < b), x == false is !x, and the
// operands of == are sorted, so two spellings of one condition meet.
type cond struct {
	text string
	neg  bool
}

func (k cond) not() cond { return cond{k.text, !k.neg} }

// canon returns the canonical form of e; subst holds the values of
// variables declared once (ready := srv.Ready()).
func (c *checker) canon(e ast.Expr, subst map[types.Object]ast.Expr) cond {
	e = ast.Unparen(e)
	if id, ok := e.(*ast.Ident); ok {
		if v, ok := subst[c.info.Uses[id]]; ok {
			return c.canon(v, subst)
		}
	}
	switch e := e.(type) {
	case *ast.UnaryExpr:
		if e.Op == token.NOT {
			return c.canon(e.X, subst).not()
		}
	case *ast.BinaryExpr:
		x, y := c.text(e.X, subst), c.text(e.Y, subst)
		switch e.Op {
		case token.EQL, token.NEQ:
			for _, side := range [][2]ast.Expr{{e.X, e.Y}, {e.Y, e.X}} {
				if b, ok := c.boolConst(side[1]); ok {
					k := c.canon(side[0], subst)
					if b != (e.Op == token.EQL) {
						k = k.not()
					}
					return k
				}
			}
			if y < x {
				x, y = y, x
			}
			return cond{x + " == " + y, e.Op == token.NEQ}
		case token.LSS:
			return cond{x + " < " + y, false}
		case token.GEQ:
			return cond{x + " < " + y, true}
		case token.GTR:
			return cond{y + " < " + x, false}
		case token.LEQ:
			return cond{y + " < " + x, true}
		}
	}
	return cond{c.text(e, subst), false}
}

// boolConst reports whether e is the predeclared true or false.
func (c *checker) boolConst(e ast.Expr) (value, ok bool) {
	id, isID := ast.Unparen(e).(*ast.Ident)
	if !isID || c.info.Uses[id] == nil || c.info.Uses[id].Parent() != types.Universe {
		return false, false
	}
	switch id.Name {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// text renders e with the variables of subst replaced by their values.
func (c *checker) text(e ast.Expr, subst map[types.Object]ast.Expr) string {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return c.text(e.X, subst)
	case *ast.Ident:
		if v, ok := subst[c.info.Uses[e]]; ok {
			return c.text(v, subst)
		}
	case *ast.SelectorExpr:
		return c.text(e.X, subst) + "." + e.Sel.Name
	case *ast.CallExpr:
		var args []string
		for _, a := range e.Args {
			args = append(args, c.text(a, subst))
		}
		dots := ""
		if e.Ellipsis.IsValid() {
			dots = "..."
		}
		return c.text(e.Fun, subst) + "(" + strings.Join(args, ", ") + dots + ")"
	case *ast.UnaryExpr:
		return e.Op.String() + c.text(e.X, subst)
	case *ast.BinaryExpr:
		return c.text(e.X, subst) + " " + e.Op.String() + " " + c.text(e.Y, subst)
	case *ast.IndexExpr:
		return c.text(e.X, subst) + "[" + c.text(e.Index, subst) + "]"
	case *ast.StarExpr:
		return "*" + c.text(e.X, subst)
	}
	return types.ExprString(e)
}

// disjuncts returns the canonical forms of the operands of the || chain e.
func (c *checker) disjuncts(e ast.Expr, subst map[types.Object]ast.Expr) []cond {
	if b, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && b.Op == token.LOR {
		return append(c.disjuncts(b.X, subst), c.disjuncts(b.Y, subst)...)
	}
	return []cond{c.canon(e, subst)}
}

// defined returns the variables that root declares with `v := value`
// (one name, one value) and never assigns again, with their values.
func (c *checker) defined(root ast.Node) map[types.Object]ast.Expr {
	out := map[types.Object]ast.Expr{}
	if root == nil || reflect.ValueOf(root).IsNil() {
		return out
	}
	assigned := map[types.Object]bool{}
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				id, ok := ast.Unparen(lhs).(*ast.Ident)
				if !ok {
					continue
				}
				if def := c.info.Defs[id]; def != nil && n.Tok == token.DEFINE && len(n.Lhs) == 1 && len(n.Rhs) == 1 {
					out[def] = n.Rhs[0]
				} else if obj := c.info.ObjectOf(id); obj != nil {
					assigned[obj] = true
				}
			}
		case *ast.IncDecStmt:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok {
				assigned[c.info.ObjectOf(id)] = true
			}
		case *ast.UnaryExpr:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op == token.AND {
				assigned[c.info.ObjectOf(id)] = true
			}
		}
		return true
	})
	for obj := range assigned {
		delete(out, obj)
	}
	return out
}

// assertion reports whether s is a call of a testify assertion.
func (c *checker) assertion(s *ast.ExprStmt) bool {
	call, ok := ast.Unparen(s.X).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := match.Callee(c.info, call)
	return fn != nil && fn.Pkg() != nil && (strings.HasSuffix(fn.Pkg().Path(), "testify/require") || strings.HasSuffix(fn.Pkg().Path(), "testify/assert"))
}

// assertionGuard returns the condition under which the testify assertion
// s fails, as disjuncts, for the assertions whose condition is one
// expression: True(x) fails on !x, False(x) on x, NoError(err) and
// NotNil(x) on x != nil and x == nil, Error(err) and Nil(x) on err == nil
// and x != nil, Equal(a, b) on a != b, NotEqual(a, b) on a == b.
func (c *checker) assertionGuard(s *ast.ExprStmt) ([]cond, bool) {
	if !c.assertion(s) {
		return nil, false
	}
	call := ast.Unparen(s.X).(*ast.CallExpr)
	fn := match.Callee(c.info, call)
	name := strings.TrimSuffix(fn.Name(), "f")
	args := call.Args
	if fn.Signature().Recv() == nil {
		if len(args) == 0 {
			return nil, false
		}
		args = args[1:] // the t
	}
	none := map[types.Object]ast.Expr{}
	nilCmp := func(x ast.Expr, neg bool) []cond {
		a, b := c.text(x, none), "nil"
		if b < a {
			a, b = b, a
		}
		return []cond{{text: a + " == " + b, neg: neg}}
	}
	if len(args) >= 1 {
		switch name {
		case "True":
			return []cond{c.canon(args[0], none).not()}, true
		case "False":
			return []cond{c.canon(args[0], none)}, true
		case "NoError", "NotNil":
			return nilCmp(args[0], true), true
		case "Error", "Nil":
			return nilCmp(args[0], false), true
		}
	}
	if len(args) >= 2 {
		x, y := c.text(args[0], none), c.text(args[1], none)
		if y < x {
			x, y = y, x
		}
		switch name {
		case "Equal", "Exactly", "EqualValues":
			return []cond{{x + " == " + y, true}}, true
		case "NotEqual":
			return []cond{{x + " == " + y, false}}, true
		}
	}
	return nil, false
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
