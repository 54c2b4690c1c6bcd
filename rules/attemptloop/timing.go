package attemptloop

import (
	"fmt"
	"go/ast"
	"go/token"
	"strconv"
	"time"

	"github.com/unflake/unflake/internal/contract"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
)

// byDeadline is what the rule would put in a timing window's place.
const byDeadline = "a deadline"

// timing says why the attempts of l (n of them when constCount, waiting
// sum plus others on each pass) are the window of a timing contract,
// which no deadline may replace (package contract): the code under test
// runs on a duration the test sets, of the order of the attempts' total,
// or the test's names or the failure messages after the loop state a time
// bound ("within 100ms"). Otherwise it returns what it excluded, for the
// fix's rule.Change.Checked.
func (c *checker) timing(l *loop, n int64, constCount bool, sum time.Duration, others []ast.Expr) (why string, checked []string) {
	var top *ast.FuncDecl
	for _, s := range l.stack {
		if fd, ok := s.(*ast.FuncDecl); ok {
			top = fd
			break
		}
	}
	if top == nil {
		return "", nil
	}
	win := contract.Window{What: "the total of the loop's attempts"}
	if constCount && len(others) == 0 {
		total, overflow := match.MulDuration(sum, n)
		if !overflow {
			win.Wait, win.Known = total, true
			win.What = fmt.Sprintf("the loop's %s of attempts (%d × %s)", match.FormatDuration(total), n, match.FormatDuration(sum))
		}
	}
	win.Budget = max(c.timeout, win.Wait)
	if !win.Known {
		win.Budget = c.timeout
	}

	said := c.said()
	test := match.IsTestFunc(c.info, top)
	if test {
		if b := contract.NameBound(top.Name.Name); b != "" {
			return contract.BoundReason(win, "the test's name", b, byDeadline), nil
		}
		for k := 0; k+1 < len(l.stack); k++ {
			call, ok := l.stack[k].(*ast.CallExpr)
			if !ok || len(call.Args) != 2 || call.Args[1] != l.stack[k+1] || !match.IsMethod(c.info, call, "testing", "Run") {
				continue
			}
			for _, lb := range said.Labels(call.Args[0]) {
				if b := contract.NameBound(lb.Text); b != "" {
					return contract.BoundReason(win, "the subtest's name "+strconv.Quote(lb.Text), b, byDeadline), nil
				}
			}
		}
	} else {
		for _, t := range said.Callers(top) {
			if b := contract.NameBound(t.Name.Name); b != "" {
				return contract.BoundReason(win, t.Name.Name+", which calls "+top.Name.Name+",", b, byDeadline), nil
			}
		}
	}
	for _, check := range c.checksAfter(l) {
		if _, isCond := check.(ast.Expr); isCond {
			continue // a condition's strings are values, not words
		}
		found := ""
		ast.Inspect(check, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && found == "" {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					found = contract.MessageBound(s)
				}
			}
			return found == ""
		})
		if found != "" {
			return contract.BoundReason(win, "the failure message after the loop", found, byDeadline), nil
		}
	}

	// The durations the test sets up to the end of the loop (a dial's
	// timeout inside it too), or, for a loop in a helper, the helper and
	// the tests that call it.
	find := c.contracts()
	var ds []contract.Duration
	if test {
		ds = find.Set(top, l.stmt.End())
	} else {
		ds = find.Set(top, token.NoPos)
		for _, t := range find.Callers(top) {
			ds = append(ds, find.Set(t, token.NoPos)...)
		}
	}
	if d, ok := contract.Binds(win, ds); ok {
		return contract.Reason(win, d, byDeadline), nil
	}
	// The code's own waits and deadlines (a health check's sleep in the
	// goroutine Release starts, a dispatcher's delay) decide when the
	// awaited state comes as much as the test's durations do: a deadline
	// would pass one many times too long.
	var own []contract.Duration
	if test {
		own = find.Own(top, l.stmt.End(), len(ds) > 0)
	} else {
		own = find.Own(top, token.NoPos, len(ds) > 0)
		for _, t := range find.Callers(top) {
			own = append(own, find.Own(t, token.NoPos, len(ds) > 0)...)
		}
	}
	if d, ok := contract.Binds(win, own); ok {
		return contract.Reason(win, d, byDeadline), nil
	}
	return "", []string{contract.Checked(ds), contract.OwnChecked, contract.NoBound}
}

// lateHazard says why a deadline is only a hypothesis: always. The
// attempts' window bounds when the awaited state may come; a deadline
// longer than it passes a state that comes after the window, and some
// implementation of the code under test makes it that late (a wait, a
// default of seconds or slow work only a bug adds), whatever the correct
// code's own timers: the original fails on it, the deadline passes it.
// The analysis reads the correct code only, so it cannot prove the window
// did not matter; fix --verify's late mutants can. The reason names a
// duration the test sets or the code's own where there is one (a bug
// that waits it too long is the likeliest late), else the window.
func (c *checker) lateHazard(l *loop) string {
	const verify = "only fix --verify's late mutants can show the window does not matter"
	var top *ast.FuncDecl
	for _, s := range l.stack {
		if fd, ok := s.(*ast.FuncDecl); ok {
			top = fd
			break
		}
	}
	if top != nil {
		find := c.contracts()
		tops := []*ast.FuncDecl{top}
		test := match.IsTestFunc(c.info, top)
		if !test {
			tops = append(tops, find.Callers(top)...)
		}
		for _, t := range tops {
			end := token.NoPos
			if t == top && test {
				end = l.stmt.End()
			}
			ds := find.Set(t, end)
			for _, d := range append(ds, find.Own(t, end, len(ds) > 0)...) {
				return fmt.Sprintf("the code under test runs on time (%s): a deadline longer than the attempts' window would pass it made late, beyond the window, which the count catches; %s", d.Site, verify)
			}
		}
	}
	// Where neither the test nor the code runs on a duration, the window
	// is still the time bound the test sets: a bug that adds a wait of its
	// own (a batcher that ships a second late, an apply goroutine that
	// batches) comes after it and within the deadline. Only running the
	// late mutants can tell.
	return "a deadline longer than the attempts' window would pass the awaited state made late by a wait or slow work only a bug adds (even where the correct code runs on no time), which the count catches; " + verify
}

// said returns what the package's tests say (subtest names as the code
// computes them), made on first use.
func (c *checker) said() *intent.Package {
	if c.pkg.said == nil {
		c.pkg.said = intent.NewPackage(c.pass.Fset, c.pass.Pkg, c.info, c.pass.AllFiles)
	}
	return c.pkg.said
}

// contracts returns the package's finder of the durations tests set,
// made on first use.
func (c *checker) contracts() *contract.Finder {
	if c.pkg.contracts == nil {
		c.pkg.contracts = contract.NewFinder(c.pass.Fset, c.info, match.DeclsOf(c.pass), c.pass.AllFiles)
	}
	return c.pkg.contracts
}
