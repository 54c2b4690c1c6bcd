package readiness

import (
	"fmt"
	"go/ast"
	"go/token"
	"strconv"

	"github.com/unflake/unflake/internal/contract"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
)

// The readiness line ends the parent's wait when the child has installed
// its handler (at the latest at the end of the sleep's window, which
// bounds the wait). When the sleep is a window the test grants ("the
// worker must be up within 1.5s"), the bound speaks of the child's whole
// start-up, and the handler's install is only part of it: with the
// window ended there, what the child does after its handler no longer
// has to fit in it. The same holds when the test measures time across
// the sleep (time.Since after the signal): the sleep's length is part of
// what it measures, and a shorter wait lets a slow shutdown pass under
// the same bound, or fails a "not before" check on correct code.
// Running the test on correct code cannot show either (it passes), so
// such a site is reported, not fixed.

// timingChecked is the Checked entry of a fix: the hazard excluded.
const timingChecked = "no start-up time bound in the comments next to the sleep, the test's names or the failure messages after the sleep, and no measurement of time by the test or its helper"

// timingHazard says why the sleep of s is the window of a time bound the
// test states or measures, naming the words or the call and their line,
// or "".
func (c *checker) timingHazard(s *site, helper *ast.FuncDecl) string {
	sleep := s.list[s.sleep]
	const keep = "the sleep is the window that checks it: a readiness wait ends that window once the handler is installed, which is only part of the start-up the bound speaks of, so what the child does after its handler would no longer have to fit in it; keep the sleep, or have the test measure the start-up time it means to bound"

	// The comments next to the sleep.
	for _, g := range intent.Comments(c.pass.Fset, c.file, sleep) {
		if b := contract.StatedBound(intent.Prose(g)); b != "" {
			return fmt.Sprintf("the comment at %s states a time bound (%q) and %s", c.line(g), b, keep)
		}
	}

	// The test's name, the subtests' names, or the names of the tests
	// that call the helper holding the sleep.
	stack := c.stackTo(sleep)
	if c.isTestFunc(c.fn) {
		if b := contract.NameStatedBound(c.fn.Name.Name); b != "" {
			return fmt.Sprintf("the test's name %s states a time bound (%q) and %s", c.fn.Name.Name, b, keep)
		}
		for k := 0; k+1 < len(stack); k++ {
			call, ok := stack[k].(*ast.CallExpr)
			if !ok || len(call.Args) != 2 || call.Args[1] != stack[k+1] || !match.IsMethod(c.info, call, "testing", "Run") {
				continue
			}
			for _, l := range c.said().Labels(call.Args[0]) {
				if b := contract.NameStatedBound(l.Text); b != "" {
					return fmt.Sprintf("the subtest's name %s at %s states a time bound (%q) and %s", strconv.Quote(l.Text), c.line(call), b, keep)
				}
			}
		}
	} else {
		for _, t := range c.said().Callers(c.fn) {
			if b := contract.NameStatedBound(t.Name.Name); b != "" {
				return fmt.Sprintf("%s, which calls %s, states a time bound in its name (%q) and %s", t.Name.Name, c.fn.Name.Name, b, keep)
			}
		}
	}

	// The failure messages after the sleep: the string literals of the
	// function after it, but for the values a condition compares.
	var msg, msgAt string
	compared := map[*ast.BasicLit]bool{}
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if msg != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				for _, e := range []ast.Expr{n.X, n.Y} {
					if lit, ok := ast.Unparen(e).(*ast.BasicLit); ok {
						compared[lit] = true
					}
				}
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if lit, ok := ast.Unparen(e).(*ast.BasicLit); ok {
					compared[lit] = true
				}
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING || n.Pos() < sleep.End() || compared[n] {
				return true
			}
			if text, err := strconv.Unquote(n.Value); err == nil {
				if b := contract.StatedBound(text); b != "" {
					msg, msgAt = b, c.line(n)
				}
			}
		}
		return true
	})
	if msg != "" {
		return fmt.Sprintf("the failure message at %s states a time bound (%q) and %s", msgAt, msg, keep)
	}

	// A measurement of time by the test (around the sleep) or by the
	// child's helper (an uptime it checks when signalled).
	for _, fn := range []*ast.FuncDecl{c.fn, helper} {
		if fn == nil {
			continue
		}
		var at string
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && at == "" {
				if match.IsPkgFunc(c.info, call, "time", "Now", "Since", "Until") || match.IsMethod(c.info, call, "time", "Sub") {
					at = c.line(call)
				}
			}
			return at == ""
		})
		if at != "" {
			who := "the test"
			if fn == helper && fn != c.fn {
				who = "the child's helper " + helper.Name.Name
			}
			return fmt.Sprintf("%s measures time (at %s), and the sleep's length is part of what it measures: a readiness line that comes sooner would let a slow child pass a bound on the total, or fail a lower bound on correct code; keep the sleep", who, at)
		}
	}
	return ""
}

// stackTo returns the nodes enclosing n in the function, outermost first.
func (c *checker) stackTo(n ast.Node) []ast.Node {
	var out []ast.Node
	match.WithStack(c.fn.Body, func(m ast.Node, stack []ast.Node) bool {
		if out != nil || m.Pos() > n.Pos() || m.End() < n.End() {
			return false
		}
		if m == n {
			out = append([]ast.Node{c.fn}, stack...)
			return false
		}
		return true
	})
	return out
}

// said returns what the package's tests say (subtest names as the code
// computes them, the callers of a helper), made on first use.
func (c *checker) said() *intent.Package {
	if c.saidPkg == nil {
		c.saidPkg = intent.NewPackage(c.pass.Fset, c.pass.Pkg, c.info, c.pass.AllFiles)
	}
	return c.saidPkg
}
