package attemptloop

import (
	"fmt"
	"go/ast"
	"go/types"
	"go/version"
	"strconv"
	"strings"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// fix returns the fix for the poll l, or why there is none.
func (c *checker) fix(l *loop, waits []wait, use counterUse) (*rule.Fix, string) {
	if len(l.others) > 0 {
		var others []string
		for _, o := range l.others {
			others = append(others, types.ExprString(o))
		}
		return nil, "the loop condition also tests " + strings.Join(others, " && ")
	}
	// Have: a condition that only compares the counter with its bound.

	if l.outer {
		if c.usedAfter(l) {
			return nil, "the loop counter is used after the loop"
		}
		return nil, "the loop counter is declared outside the loop"
	}
	if why := c.countContract(l); why != "" {
		return nil, why
	}
	if why := c.acts(l); why != "" {
		return nil, why
	}
	if !use.ok() {
		if use.why == "assigned" {
			return nil, "the loop counter is assigned in the body"
		}
		return nil, "the loop counter is used in the body (" + use.why + ")"
	}
	keep := use.logged
	if keep && l.down {
		return nil, "the loop counter counts down the attempts left and the body logs it"
	}
	if _, isRange := l.stmt.(*ast.RangeStmt); keep && isRange && !types.Identical(l.counter.Type(), types.Typ[types.Int]) {
		return nil, "the loop counter is not an int"
	}
	// Have: a counter the body does not use, or only logs counting up.

	for _, w := range waits {
		if w.nested {
			return nil, "the loop also waits inside a nested loop"
		}
	}
	n, constCount := c.count(l)
	sum, others, ok := c.constWaits(waits)
	if !ok {
		return nil, "the waits add up to more than a time.Duration holds"
	}
	why, checked := c.timing(l, n, constCount, sum, others)
	if why != "" {
		return nil, why
	}
	budget := time.Duration(0)
	window := time.Duration(0) // the attempts' total, when constant
	var check ast.Stmt         // the statement after the loop that fails on exhaustion
	if constCount && len(others) == 0 {
		total, overflow := match.MulDuration(sum, n)
		if overflow {
			return nil, "the attempts add up to more than a time.Duration holds"
		}
		window = total
		budget = max(c.timeout, total)
		fails, why, chk := c.exhaustionFails(l)
		check = chk
		if total >= budget {
			// The deadline would be the waits' total, and each pass
			// lasts its waits plus its work: a deadline that long ends
			// the loop before its count, checking for less time than
			// the test did.
			if !fails {
				return nil, fmt.Sprintf("running out of attempts does not fail the test, and a deadline of the waits' %s alone would end the loop before its %d attempts, each of which also takes the time of its work: the test would check for less time than it does", match.FormatDuration(total), n)
			}
			if w := c.work(l); w != "" {
				return nil, fmt.Sprintf("the deadline would be the waits' %s alone (at least --poll-timeout), but each pass also runs %s: the loop's real window is longer, and a deadline of its waits would cut it short", match.FormatDuration(total), w)
			}
		} else if !fails {
			return nil, why
		}
	} else {
		fails, why, chk := c.exhaustionFails(l)
		if !fails {
			return nil, why
		}
		check = chk
		// Have: a budget computed at run time. Its operands must be
		// evaluated once, before the loop, to the values the loop sees.
		for _, b := range []ast.Expr{l.lo, l.hi} {
			if _, ok := c.constBound(b); ok {
				continue
			}
			if !match.IsPure(c.info, b) {
				return nil, "the attempt count " + types.ExprString(b) + " is not a simple expression"
			}
		}
		if l.reeval != nil && match.Modifies(c.info, l.body, match.Vars(c.info, l.reeval)) != nil {
			return nil, "the attempt count " + types.ExprString(l.reeval) + " is changed in the body"
		}
		for _, o := range others {
			if !match.IsPure(c.info, o) {
				return nil, "the wait duration " + types.ExprString(o) + " is not a simple expression"
			}
			vars := match.Vars(c.info, o)
			for _, v := range vars {
				if l.stmt.Pos() <= v.Pos() && v.Pos() < l.stmt.End() {
					return nil, "the wait duration " + types.ExprString(o) + " is computed in the loop"
				}
			}
			if match.Modifies(c.info, l.body, vars) != nil {
				return nil, "the wait duration " + types.ExprString(o) + " is changed in the body"
			}
		}
		v := c.pass.FileVersion(c.file)
		if !version.IsValid(v) {
			return nil, "the budget needs max (go1.21) and the file's go version is unknown"
		}
		if !c.pass.FileUsesGo(c.file, "go1.21") {
			return nil, "the budget needs max, which needs go1.21, and the file is " + v
		}
		if !c.resolvesTo(l, "max", types.Universe.Lookup("max")) {
			return nil, "max is shadowed at the loop"
		}
	}
	// Have: a budget: constant, or max(timeout, count × waits).

	if other := c.otherExit(l, check); other != nil {
		return nil, fmt.Sprintf("the poll has another way out at %s (%s), which the deadline keeps: it would end the rewritten wait at a time the rule cannot bound, past the attempts' window, so a state late by less than that would pass where the count fails, and no late mutant can show the difference", c.where(other.stmt.Pos()), other)
	}

	if why := c.timePackage(l); why != "" {
		return nil, why
	}
	name := c.freshName(l, "deadline")

	var deletes []ast.Node
	msg := fmt.Sprintf("bound the poll by a %s deadline", match.FormatDuration(budget))
	if budget == 0 {
		count := strconv.FormatInt(n, 10)
		if !constCount {
			count = parenText(l.hi, c.countText(l))
		}
		msg = fmt.Sprintf("bound the poll by a deadline of max(%s, %s × %s)", match.FormatDuration(c.timeout), count, waitText(sum, others))
	}
	if keep {
		msg += ", keeping the attempt counter"
	}
	switch s := l.stmt.(type) {
	case *ast.ForStmt:
		deletes = append(deletes, s.Cond)
		if !keep {
			deletes = append(deletes, s.Init, s.Post) // both set: the counter is declared in the loop
		}
	case *ast.RangeStmt:
		deletes = append(deletes, s.X)
		if s.Key != nil {
			deletes = append(deletes, s.Key)
		}
	}
	apply := func() error {
		var budgetExpr dst.Expr
		if budget != 0 {
			budgetExpr = match.DurationExpr(budget)
		} else {
			budgetExpr = &dst.CallExpr{
				Fun:  dst.NewIdent("max"),
				Args: []dst.Expr{match.DurationExpr(c.timeout), c.product(l, n, constCount, sum, others)},
			}
		}
		return c.rewrite(l, name, budgetExpr, keep)
	}
	return &rule.Fix{Message: msg, Changes: []rule.Change{{Kind: rule.Budget, What: "the attempt count becomes a deadline: the condition may take longer than the attempts allowed", Checked: append(checked, actsChecked, workChecked), Window: window, Budget: budget, AwaitLines: c.awaitLines(check)}}, Apply: apply, Deletes: deletes}, ""
}

// awaitLines returns the test file's lines, first and last, where a
// failure is the poll running out: the check after the loop that fails
// on exhaustion (rule.Change.AwaitLines). A failure exit inside the loop
// (a state that must never be seen: "lost an uncontested election")
// fires on the first attempt that sees it, whatever the budget, so a
// late write that shows such a state in passing is no sign of the
// window's length (red team batch 16, campaignfence). A check that
// returns a failure to a caller fails the test at the caller's line,
// which may be anywhere: then zero, any failure after the loop counts.
func (c *checker) awaitLines(check ast.Stmt) [2]int {
	if check == nil {
		return [2]int{}
	}
	returns := false
	ast.Inspect(check, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			returns = true
		}
		return !returns
	})
	if returns {
		return [2]int{}
	}
	fset := c.pass.Fset
	return [2]int{fset.Position(check.Pos()).Line, fset.Position(check.End()).Line}
}
