package waitfor

import (
	"go/ast"
	"go/token"
	"strconv"

	"github.com/unflake/unflake/internal/contract"
	"github.com/unflake/unflake/internal/match"
)

// byPoll is what the rule would put in a timing window's place.
const byPoll = "a poll with a budget"

// timing says why the wait w, enclosed by stack and followed by the
// checks of g, is the window of a timing contract, which no poll may
// replace (package contract): the code under test runs on a duration the
// test sets, of the order of the wait, or the test's names or the checks'
// failure messages state a time bound. Otherwise it returns what it
// excluded, for the fix's rule.Change.Checked.
func (c *checker) timing(w *wait, stack []ast.Node, g *group) (why string, checked []string) {
	var top *ast.FuncDecl
	for _, n := range stack {
		if fd, ok := n.(*ast.FuncDecl); ok {
			top = fd
			break
		}
	}
	if top == nil {
		return "", nil
	}
	win := contract.Window{Wait: w.dur, Known: w.known, Budget: max(c.timeout, w.dur), What: w.describe()}

	// What the test says: its name, its subtests' names, the messages of
	// the checks the wait holds back.
	if isTest(top) {
		if b := contract.NameBound(top.Name.Name); b != "" {
			return contract.BoundReason(win, "the test's name", b, byPoll), nil
		}
		for k := 0; k+1 < len(stack); k++ {
			call, ok := stack[k].(*ast.CallExpr)
			if !ok || len(call.Args) != 2 || call.Args[1] != stack[k+1] || !match.IsMethod(c.info, call, "testing", "Run") {
				continue
			}
			for _, l := range c.said.Labels(call.Args[0]) {
				if b := contract.NameBound(l.Text); b != "" {
					return contract.BoundReason(win, "the subtest's name "+strconv.Quote(l.Text), b, byPoll), nil
				}
			}
		}
	} else {
		for _, t := range c.said.Callers(top) {
			if b := contract.NameBound(t.Name.Name); b != "" {
				return contract.BoundReason(win, t.Name.Name+", which calls "+top.Name.Name+",", b, byPoll), nil
			}
		}
	}
	for _, ck := range g.checks {
		var msg ast.Node = ck.stmt
		if ifs, ok := ck.stmt.(*ast.IfStmt); ok {
			msg = ifs.Body // the condition's strings are values, not words
		}
		if b := messageBound(msg); b != "" {
			return contract.BoundReason(win, "the failure message after "+w.describe(), b, byPoll), nil
		}
	}

	// The durations the test sets before the wait, or, for a wait in a
	// helper, the helper and the tests that call it.
	if c.contracts == nil {
		c.contracts = contract.NewFinder(c.pass.Fset, c.info, c.decls, c.pass.AllFiles)
	}
	find := c.contracts
	var ds []contract.Duration
	if isTest(top) {
		ds = find.Set(top, w.stmt.Pos())
	} else {
		ds = find.Set(top, token.NoPos)
		for _, t := range find.Callers(top) {
			ds = append(ds, find.Set(t, token.NoPos)...)
		}
	}
	if d, ok := contract.Binds(win, ds); ok {
		return contract.Reason(win, d, byPoll), nil
	}
	// The code's own waits and deadlines (a heartbeat's period, a
	// dispatcher's delay) decide when the awaited state comes as much as
	// the test's durations do: a poll would pass one many times too long.
	var own []contract.Duration
	if isTest(top) {
		own = find.Own(top, w.stmt.Pos(), len(ds) > 0)
	} else {
		own = find.Own(top, token.NoPos, len(ds) > 0)
		for _, t := range find.Callers(top) {
			own = append(own, find.Own(t, token.NoPos, len(ds) > 0)...)
		}
	}
	// As a duration the test sets: one of unknown value binds (a delay
	// the code computes), a constant when the window holds fewer than
	// Factor of it. A constant the window holds many times (a 1ms step
	// of simulated work) is left to fix --verify's late mutants.
	if d, ok := contract.Binds(win, own); ok {
		return contract.Reason(win, d, byPoll), nil
	}
	return "", []string{contract.Checked(ds), contract.OwnChecked, contract.NoBound}
}

// messageBound returns the time bound a string literal of stmt states
// ("within 100ms"), or "".
func messageBound(stmt ast.Node) string {
	found := ""
	ast.Inspect(stmt, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && found == "" {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				found = contract.MessageBound(s)
			}
		}
		return found == ""
	})
	return found
}
