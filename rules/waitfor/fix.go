package waitfor

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// pollInterval is how often a poll looks again: short, so a passing test
// is not slower than the state it waits for.
const pollInterval = 10 * time.Millisecond

// Reasons shared by the fix and the docs.
const (
	probeHolds = "the checks hold without waiting: the sleep may guard a check that nothing happens, and a poll would gain nothing over its window"
	// unprovenExactWhy: the poll with the rest of the window keeps the
	// checks' power either way; what running tells is whether it gains
	// anything (a deflake) over the sleep.
	unprovenExactWhy = "the checks' state may already hold when the sleep starts (the sleep then gives an unwanted event time to happen), and a poll would gain nothing over the sleep; only running the test without the sleep tells"
)

// A poll is the fix of one wait: the rewrite, with what it needs to know.
type poll struct {
	c      *checker
	file   *ast.File
	parent ast.Node // the node whose statement list holds the wait
	wait   *wait
	group  *group
	stack  []ast.Node // the nodes enclosing the wait, outermost first

	// checked lists the budget hazards excluded (no timing contract:
	// contract.go), for the fix's rule.Change.
	checked []string
}

// fix returns the fix, or why there is none.
func (p *poll) fix() (*rule.Fix, string) {
	w := p.wait
	scope := p.scope()
	if scope == nil {
		return nil, "the wait's scope is unknown"
	}
	if why := p.timePackage(scope); why != "" {
		return nil, why
	}
	// The poll's budget is the sleep itself: a poll that stops as soon
	// as a monotone state holds, and never waits past the window the
	// test gave it, fails on every event the sleep's check failed on,
	// a late one included, and only ends sooner. A longer budget (the
	// --poll-timeout, which cures a window too tight under load) passes
	// an event later than the window, which the original caught: it is
	// a further form only verification tries, after this one failed,
	// and keeps only if the test still kills the late mutants the
	// original kills.
	interval := pollInterval
	var window, long func() dst.Expr
	var windowText, longText string
	var windowBudget, longBudget time.Duration // 0: not a constant
	if w.known {
		b := max(p.c.timeout, w.dur)
		windowBudget, longBudget = w.dur, b
		interval = min(interval, w.dur)
		window = func() dst.Expr { return match.DurationExpr(w.dur) }
		windowText = match.FormatDuration(w.dur)
		long = func() dst.Expr { return match.DurationExpr(b) }
		longText = match.FormatDuration(b)
	} else {
		if !match.IsPure(p.c.info, w.d) {
			return nil, "the sleep's duration " + types.ExprString(w.d) + " is not a simple expression"
		}
		sleep := func() dst.Expr {
			d := dst.Clone(p.c.pass.Dst(w.d)).(dst.Expr)
			match.StripDecorations(d)
			return d
		}
		window, windowText = sleep, types.ExprString(w.d)
		// timeout + d is at least max(timeout, d), so the poll never
		// waits less than the sleep did, and needs no max (go1.21, and
		// often shadowed in older code).
		long = func() dst.Expr {
			return &dst.BinaryExpr{X: match.DurationExpr(p.c.timeout), Op: token.ADD, Y: parenIf(sleep(), token.ADD)}
		}
		longText = fmt.Sprintf("%s + %s", match.FormatDuration(p.c.timeout), types.ExprString(w.d))
	}
	body, why := p.body(interval)
	if why != "" {
		return nil, why
	}
	// A name the group uses would be captured by the loop's variable;
	// the start of the window is declared in the wait's block, so it
	// must not clash with a name the rest of the block uses either.
	var stmts []ast.Node
	for _, st := range p.group.stmts {
		stmts = append(stmts, st)
	}
	name := match.FreshName(scope, p.wait.stmt.Pos(), match.Idents(stmts...), "deadline")
	var rest []ast.Node
	for _, st := range p.after() {
		rest = append(rest, st)
	}
	monotone := p.group.monotone()
	start := ""
	if !monotone {
		used := match.Idents(rest...)
		used[name] = true
		// Another wait of the block fixed in this run declares its own.
		for n := range p.c.taken[p.parent] {
			used[n] = true
		}
		start = match.FreshName(scope, p.wait.stmt.Pos(), used, "start")
		if p.c.taken[p.parent] == nil {
			p.c.taken[p.parent] = map[string]bool{}
		}
		p.c.taken[p.parent][start] = true
	}

	checks, follow := p.group.noun(), "follow"+sIf(len(p.group.checks) == 1)
	form := func(budget func() dst.Expr, budgetD time.Duration, desc string, what string) *rule.Fix {
		msg := fmt.Sprintf("poll until the %s hold%s, every %s for up to %s; the %s %s unchanged",
			checks, sIf(len(p.group.checks) == 1), match.FormatDuration(interval), desc, checks, follow)
		if !monotone {
			msg = fmt.Sprintf("poll for the %s state, every %s for up to %s, then keep the rest of the %s window; the %s %s unchanged",
				p.group.possessive(), match.FormatDuration(interval), desc, p.windowDesc(), checks, follow)
		}
		checked := p.checked
		if monotone {
			// laterWhy excluded these: the poll ends the window early.
			checked = append(append([]string(nil), checked...), "later checks of state the code may still change (a count, an error the code returns, a select with a default on what it sent, a rising state the poll did not wait for)")
		}
		return &rule.Fix{
			Message: msg,
			Changes: []rule.Change{{Kind: rule.Budget, What: what, Checked: checked, Window: p.knownWindow(), Budget: budgetD}},
			Deletes: []ast.Node{w.call},
			Apply: func() error {
				stmts, post := body()
				var window dst.Expr
				if !monotone {
					window = p.window()
				}
				p.rewrite(name, start, budget(), stmts, post, window)
				return nil
			},
		}
	}
	lateWhy := fmt.Sprintf("a poll of up to %s passes an event that comes later than the sleep's %s window, which the original fails on", longText, windowText)
	longWhat := fmt.Sprintf("the wait ends when the checks hold, after up to %s, not after the sleep's %s window: an event later than the window but within the budget passes", longText, windowText)
	if monotone {
		// A monotone state, once reached, stays: a poll on it is as
		// strict as the check at the end of the window whatever the
		// state was when the sleep started. But the window also held
		// back what comes after the checks (later.go).
		if why := p.laterWhy(); why != "" {
			return nil, why
		}
		fix := form(window, windowBudget, windowText, "the wait ends as soon as the checks hold, and never later than the sleep's window: an event later than the window still fails the checks")
		if longText != windowText {
			longer := form(long, longBudget, longText, longWhat)
			longer.Hypothesis = &rule.Hypothesis{Reason: lateWhy}
			fix.Hypothesis = &rule.Hypothesis{Alternatives: []*rule.Fix{longer}}
		}
		return fix, ""
	}
	// Exact checks keep the whole window after the state is reached, so
	// a poll bounded by the window would save nothing: the only form
	// that gains anything waits longer for the state, which passes an
	// event later than the window. It is never proven; verification
	// keeps it only if the test still kills the mutants (a late event
	// among them) the original kills.
	fix := form(long, longBudget, longText, longWhat)
	reason := lateWhy
	if !p.provenChange() {
		reason = unprovenExactWhy + "; and " + lateWhy
	}
	h := &rule.Hypothesis{Reason: reason, Probe: p.probe(), ProbeHolds: probeHolds}
	for _, s := range p.group.stmts {
		h.ProbeChecks = append(h.ProbeChecks, s)
	}
	fix.Hypothesis = h
	return fix, ""
}

// after returns the statements of the wait's block after it.
func (p *poll) after() []ast.Stmt {
	list := match.StmtList(p.parent)
	for i, s := range list {
		if s == ast.Stmt(p.wait.stmt) {
			return list[i+1:]
		}
	}
	return nil
}

// knownWindow is the wait's duration when the rule knows it, else 0
// (rule.Change.Window).
func (p *poll) knownWindow() time.Duration {
	if p.wait.known {
		return p.wait.dur
	}
	return 0
}

// windowDesc names the wait's duration for a message: "100ms",
// "time.Duration(n) * time.Millisecond".
func (p *poll) windowDesc() string {
	if p.wait.known {
		return match.FormatDuration(p.wait.dur)
	}
	return types.ExprString(p.wait.d)
}

// window returns the wait's duration as an expression of the fix.
func (p *poll) window() dst.Expr {
	if p.wait.known && p.wait.d == nil {
		return match.DurationExpr(p.wait.dur) // a helper's
	}
	d := dst.Clone(p.c.pass.Dst(p.wait.d)).(dst.Expr)
	match.StripDecorations(d)
	return d
}

// scope returns the scope the wait is in.
func (p *poll) scope() *types.Scope {
	s := p.c.pass.Pkg.Scope().Innermost(p.wait.stmt.Pos())
	return s
}

// timePackage returns why the poll cannot name the time package at the
// wait, or "". A file that does not import time (a helper's caller) gets
// the import.
func (p *poll) timePackage(scope *types.Scope) string {
	name, n := match.ImportName(p.file, "time", "time")
	switch {
	case n > 1:
		return "the file imports time more than once"
	case name == "." || name == "_":
		return "the file imports time as " + name
	}
	if _, obj := scope.LookupParent(name, p.wait.stmt.Pos()); n == 0 && obj == nil {
		return ""
	}
	if !match.Denotes(scope, p.wait.stmt.Pos(), name, "time") {
		return name + " is shadowed at the sleep"
	}
	return ""
}

// body returns a function building the poll's body and its post
// statement, or why the checks cannot be polled together.
//
// The body is the defines the conditions need, then `if holds { break }`;
// post is the sleep between looks. When two checks' inits declare the same
// name, which one block cannot hold, each check keeps its own if instead,
// `if init; fails { continue }`, the body ends in `break`, and the sleep
// is the loop's post statement.
func (p *poll) body(interval time.Duration) (func() ([]dst.Stmt, dst.Stmt), string) {
	info := p.c.info
	var defines []*ast.AssignStmt // the group's own, hoisted
	for _, s := range p.group.stmts {
		if a, ok := s.(*ast.AssignStmt); ok {
			defines = append(defines, a)
		}
	}
	// What the conditions read, for the use of defines.
	var conds []ast.Node
	for _, ck := range p.group.checks {
		if ck.init != nil {
			conds = append(conds, ck.init)
		}
		if ck.fails != nil {
			conds = append(conds, ck.fails)
		}
		for _, a := range p.polledArgs(ck) {
			conds = append(conds, a)
		}
	}
	uses := func(nodes []ast.Node, obj types.Object) bool {
		found := false
		for _, n := range nodes {
			ast.Inspect(n, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && info.Uses[id] == obj {
					found = true
				}
				return !found
			})
		}
		return found
	}
	// A name a define declares must be used by a condition or a later
	// define; an unused one becomes _, a define with none is left out.
	keep := make([][]bool, len(defines)) // per define, per name: used
	used := make([]bool, len(defines))
	for i := len(defines) - 1; i >= 0; i-- {
		later := append([]ast.Node(nil), conds...)
		for j := i + 1; j < len(defines); j++ {
			if used[j] {
				for _, r := range defines[j].Rhs {
					later = append(later, r)
				}
			}
		}
		keep[i] = make([]bool, len(defines[i].Lhs))
		for k, l := range defines[i].Lhs {
			id, ok := l.(*ast.Ident)
			if !ok || id.Name == "_" {
				continue
			}
			if obj := defined(info, id); obj != nil && uses(later, obj) {
				keep[i][k], used[i] = true, true
			}
		}
	}
	declared := map[string]bool{}
	for i, d := range defines {
		if !used[i] {
			continue
		}
		fresh := false
		for k, l := range d.Lhs {
			if id := l.(*ast.Ident); keep[i][k] {
				fresh = fresh || !declared[id.Name]
				declared[id.Name] = true
			}
		}
		if !fresh {
			return nil, "the reads before the checks declare " + types.ExprString(d.Lhs[0]) + " twice, which one poll cannot hold"
		}
	}
	// The inits: hoisted beside the defines unless a name clashes.
	separate := false
	inits := map[string]bool{}
	for _, ck := range p.group.checks {
		if ck.init == nil {
			continue
		}
		for _, l := range ck.init.Lhs {
			if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
				separate = separate || declared[id.Name] || inits[id.Name]
				inits[id.Name] = true
			}
		}
	}
	build := func() ([]dst.Stmt, dst.Stmt) {
		var out []dst.Stmt
		for i, d := range defines {
			if !used[i] {
				continue
			}
			a := p.clone(d).(*dst.AssignStmt)
			for k := range a.Lhs {
				if !keep[i][k] {
					a.Lhs[k] = dst.NewIdent("_")
				}
			}
			out = append(out, a)
		}
		sleep := &dst.ExprStmt{X: &dst.CallExpr{Fun: &dst.Ident{Path: "time", Name: "Sleep"}, Args: []dst.Expr{match.DurationExpr(interval)}}}
		if separate {
			for _, ck := range p.group.checks {
				stmt := &dst.IfStmt{Body: &dst.BlockStmt{List: []dst.Stmt{&dst.BranchStmt{Tok: token.CONTINUE}}}}
				if ck.init != nil {
					if init := p.pruned(ck.init, uses, []ast.Node{ck.fails}); init != nil {
						stmt.Init = init
					}
				}
				if ck.fails != nil {
					stmt.Cond = p.cloneExpr(ck.fails)
				} else {
					stmt.Cond = not(p.holds(ck))
				}
				out = append(out, stmt)
			}
			return append(out, &dst.BranchStmt{Tok: token.BREAK}), sleep
		}
		for _, ck := range p.group.checks {
			if ck.init == nil {
				continue
			}
			if init := p.pruned(ck.init, uses, conds); init != nil {
				out = append(out, init)
			}
		}
		var holds dst.Expr
		for _, ck := range p.group.checks {
			h := p.holds(ck)
			if holds == nil {
				holds = h
				continue
			}
			holds = &dst.BinaryExpr{X: holds, Op: token.LAND, Y: parenIf(h, token.LAND)}
		}
		out = append(out, &dst.IfStmt{Cond: holds, Body: &dst.BlockStmt{List: []dst.Stmt{&dst.BranchStmt{Tok: token.BREAK}}}})
		return out, sleep
	}
	return build, ""
}

// pruned returns a copy of the define a whose names nothing in later
// uses made _, so the copy compiles where a name was used only by a
// check's failure branch; nil when no name is used (the read is left
// out).
func (p *poll) pruned(a *ast.AssignStmt, uses func([]ast.Node, types.Object) bool, later []ast.Node) dst.Stmt {
	out := p.clone(a).(*dst.AssignStmt)
	kept := false
	for k, l := range a.Lhs {
		id, ok := l.(*ast.Ident)
		if !ok || id.Name == "_" {
			continue
		}
		if obj := defined(p.c.info, id); obj != nil && uses(later, obj) {
			kept = true
			continue
		}
		out.Lhs[k] = dst.NewIdent("_")
	}
	if !kept {
		return nil
	}
	return out
}

// defined returns the variable a name on the left of := stands for: the
// one it declares, or, when it is not new there (val, ok := f() after an
// earlier ok), the one it assigns. The poll's copy declares both anew in
// its own block, and the conditions after it read the copy.
func defined(info *types.Info, id *ast.Ident) types.Object {
	if obj := info.Defs[id]; obj != nil {
		return obj
	}
	return info.Uses[id]
}

// not returns !e, parenthesised as it must be.
func not(e dst.Expr) dst.Expr {
	switch x := e.(type) {
	case *dst.UnaryExpr:
		if x.Op == token.NOT {
			return x.X
		}
	case *dst.BinaryExpr:
		return &dst.UnaryExpr{Op: token.NOT, X: &dst.ParenExpr{X: e}}
	}
	return &dst.UnaryExpr{Op: token.NOT, X: e}
}

// assertArgs returns the arguments of an assertion the poll passes on:
// those before its message (msgAndArgs ...any).
func (p *poll) assertArgs(ck *check) []ast.Expr {
	if ck.assert == nil {
		return nil
	}
	sig := ck.fn.Type().(*types.Signature)
	fixed := sig.Params().Len()
	if sig.Variadic() {
		fixed--
	}
	if sig.Recv() == nil {
		fixed-- // the testing.T
	}
	return ck.args[:min(max(fixed, 0), len(ck.args))]
}

// polledArgs returns the arguments of the assertion ck that the poll's
// condition passes on: those before its message for a condition written
// in Go, all of them (the message and its format arguments too) for the
// assertion asked through a collector, so that an …f assertion keeps
// the values its format reads.
func (p *poll) polledArgs(ck *check) []ast.Expr {
	if ck.assert == nil {
		return nil
	}
	if p.c.direct(ck) != nil {
		return p.assertArgs(ck)
	}
	return ck.args
}

// holds returns the condition under which check ck passes, as a
// decorated expression.
func (p *poll) holds(ck *check) dst.Expr {
	if ck.fails != nil {
		return p.negate(ck.fails)
	}
	args := p.polledArgs(ck)
	if direct := p.c.direct(ck); direct != nil {
		return p.cloneDirect(direct)
	}
	call := &dst.CallExpr{
		Fun:  &dst.Ident{Path: assertPath, Name: ck.fn.Name()},
		Args: []dst.Expr{&dst.CallExpr{Fun: dst.NewIdent("new"), Args: []dst.Expr{&dst.Ident{Path: assertPath, Name: "CollectT"}}}},
	}
	for _, a := range args {
		call.Args = append(call.Args, p.cloneExpr(a))
	}
	return call
}

// cloneDirect builds the decorated form of a direct condition.
func (p *poll) cloneDirect(d *directCond) dst.Expr {
	switch d.op {
	case "":
		return p.cloneExpr(d.x)
	case "!":
		return p.negate(d.x)
	case "len":
		return &dst.BinaryExpr{X: &dst.CallExpr{Fun: dst.NewIdent("len"), Args: []dst.Expr{p.cloneExpr(d.x)}}, Op: token.EQL, Y: parenIf(p.cloneExpr(d.y), token.EQL)}
	}
	op := token.EQL
	if d.op == "!=" {
		op = token.NEQ
	}
	var y dst.Expr = dst.NewIdent("nil")
	if d.y != nil {
		y = p.cloneExpr(d.y)
	}
	return &dst.BinaryExpr{X: parenIf(p.cloneExpr(d.x), op), Op: op, Y: parenIf(y, op)}
}

// negate returns !e, simplified where that is exact: a != b → a == b,
// !x → x, x || y → !x && !y, a < b → a >= b for integers and strings
// (not floats: NaN).
func (p *poll) negate(e ast.Expr) dst.Expr {
	switch x := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			return p.cloneExpr(x.X)
		}
	case *ast.BinaryExpr:
		switch x.Op {
		case token.NEQ, token.EQL:
			b := p.cloneExpr(x).(*dst.BinaryExpr)
			if x.Op == token.NEQ {
				b.Op = token.EQL
			} else {
				b.Op = token.NEQ
			}
			return b
		case token.LOR:
			return &dst.BinaryExpr{X: parenIf(p.negate(x.X), token.LAND), Op: token.LAND, Y: parenIf(p.negate(x.Y), token.LAND)}
		case token.LSS, token.LEQ, token.GTR, token.GEQ:
			if p.ordered(x.X) && p.ordered(x.Y) {
				b := p.cloneExpr(x).(*dst.BinaryExpr)
				b.Op = map[token.Token]token.Token{token.LSS: token.GEQ, token.LEQ: token.GTR, token.GTR: token.LEQ, token.GEQ: token.LSS}[x.Op]
				return b
			}
		}
	case *ast.Ident, *ast.CallExpr, *ast.SelectorExpr:
		return &dst.UnaryExpr{Op: token.NOT, X: p.cloneExpr(x)}
	}
	return &dst.UnaryExpr{Op: token.NOT, X: &dst.ParenExpr{X: p.cloneExpr(e)}}
}

// ordered reports whether e is an integer or a string, whose orderings
// are total: !(a < b) is a >= b (unlike floats, with NaN).
func (p *poll) ordered(e ast.Expr) bool {
	t := p.c.info.TypeOf(e)
	if t == nil {
		return false
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&(types.IsInteger|types.IsString) != 0
}

// parenIf parenthesises e, an operand of op, when it binds less tightly.
func parenIf(e dst.Expr, op token.Token) dst.Expr {
	if b, ok := e.(*dst.BinaryExpr); ok && b.Op.Precedence() <= op.Precedence() && b.Op != op {
		return &dst.ParenExpr{X: e}
	}
	return e
}

func (p *poll) clone(n ast.Node) dst.Node {
	d := dst.Clone(p.c.pass.Dst(n))
	match.StripDecorations(d)
	return d
}

func (p *poll) cloneExpr(e ast.Expr) dst.Expr { return p.clone(e).(dst.Expr) }

// rewrite replaces the wait by a poll:
//
//	for deadline := time.Now().Add(budget); time.Now().Before(deadline); time.Sleep(interval) {
//		defines
//		if holds {
//			break
//		}
//	}
//
// (or the body of separate checks, see body), keeping the wait's
// comments. With a window (the checks are exact), the poll starts the
// window and keeps the rest of it after the state arrived:
//
//	start := time.Now()
//	for deadline := start.Add(budget); time.Now().Before(deadline); time.Sleep(interval) {
//		...
//	}
//	time.Sleep(time.Until(start.Add(window)))
//
// The interval is the loop's post statement, and the rest of the window
// is a sleep until a time right after the loop: shapes the sleep rule and
// this one know as a poll's own (match.PollWait), not a guess to report.
func (p *poll) rewrite(name, start string, budget dst.Expr, body []dst.Stmt, post dst.Stmt, window dst.Expr) {
	now := func() dst.Expr { return &dst.CallExpr{Fun: &dst.Ident{Path: "time", Name: "Now"}} }
	from := now()
	if window != nil {
		from = dst.NewIdent(start)
	}
	loop := &dst.ForStmt{
		Init: &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(name)}, Tok: token.DEFINE,
			Rhs: []dst.Expr{&dst.CallExpr{Fun: &dst.SelectorExpr{X: from, Sel: dst.NewIdent("Add")}, Args: []dst.Expr{budget}}}},
		Cond: &dst.CallExpr{Fun: &dst.SelectorExpr{X: now(), Sel: dst.NewIdent("Before")}, Args: []dst.Expr{dst.NewIdent(name)}},
		Post: post,
		Body: &dst.BlockStmt{List: body},
	}
	stmts := []dst.Stmt{loop}
	if window != nil {
		begin := &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(start)}, Tok: token.DEFINE, Rhs: []dst.Expr{now()}}
		end := &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(start), Sel: dst.NewIdent("Add")}, Args: []dst.Expr{window}}
		var rest dst.Expr = &dst.CallExpr{Fun: &dst.Ident{Path: "time", Name: "Until"}, Args: []dst.Expr{end}}
		if !p.c.pass.FileUsesGo(p.file, "go1.8") {
			rest = &dst.CallExpr{Fun: &dst.SelectorExpr{X: end, Sel: dst.NewIdent("Sub")}, Args: []dst.Expr{now()}}
		}
		keep := &dst.ExprStmt{X: &dst.CallExpr{Fun: &dst.Ident{Path: "time", Name: "Sleep"}, Args: []dst.Expr{rest}}}
		stmts = []dst.Stmt{begin, loop, keep}
	}
	old := p.c.pass.Dst(p.wait.stmt).(*dst.ExprStmt)
	// Comments above the sleep stay above; one after it goes after the
	// poll's opening brace, on the line that replaced the sleep's.
	first, last := stmts[0], stmts[len(stmts)-1]
	first.Decorations().Before, first.Decorations().Start = old.Decs.Before, old.Decs.Start
	last.Decorations().After = old.Decs.After
	if len(stmts) > 1 {
		first.Decorations().After = dst.NewLine
		loop.Decs.Before, loop.Decs.After = dst.NewLine, dst.NewLine
		last.Decorations().Before = dst.NewLine
	}
	loop.Body.Decs.Lbrace = old.Decs.End
	list := match.DstStmtList(p.c.pass.Dst(p.parent))
	for i, s := range *list {
		if s == old {
			*list = append((*list)[:i], append(stmts, (*list)[i+1:]...)...)
			break
		}
	}
}

// probe returns the fix's probe: the wait replaced by `_ = d` (`_ = 0` for
// a helper's call), which waits for nothing, keeps what d uses in use and
// keeps the file's lines where they are, so a failure's line still points
// at the checks. It is no wait either, so a later round of the rule does
// not take it for one.
func (p *poll) probe() *rule.Fix {
	w := p.wait
	msg, deletes := "the sleep removed", []ast.Node{w.call}
	if w.helper != nil {
		msg = "the call of " + w.helper.Name() + " removed"
	}
	return &rule.Fix{
		Message: msg,
		Changes: []rule.Change{{Kind: rule.Budget, What: "the wait is removed: the checks run at once", Checked: p.checked}},
		Deletes: deletes,
		Apply: func() error {
			stmt := p.c.pass.Dst(w.stmt).(*dst.ExprStmt)
			var keep dst.Expr = &dst.BasicLit{Kind: token.INT, Value: "0"}
			if w.d != nil {
				keep = dst.Clone(p.c.pass.Dst(w.d)).(dst.Expr)
				match.StripDecorations(keep)
			}
			blank := &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent("_")}, Tok: token.ASSIGN, Rhs: []dst.Expr{keep}}
			blank.Decs.NodeDecs = stmt.Decs.NodeDecs
			list := match.DstStmtList(p.c.pass.Dst(p.parent))
			for i, s := range *list {
				if s == stmt {
					(*list)[i] = blank
				}
			}
			return nil
		},
	}
}
