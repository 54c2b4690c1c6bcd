package waitfor

import (
	"go/ast"
	"strings"

	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
)

// keepsTime says why the wait w, enclosed by stack, stays as it is: a
// comment next to it, the test it is in (its name, its subtests' names,
// its comments, the helpers it calls) or, for a wait in a helper, a test
// that calls the helper, says it exercises the wall clock (package
// intent). A sleep there may measure a period ("one flush within 75ms of
// real time"), which a poll that ends when the state holds would no
// longer measure; or "".
func (c *checker) keepsTime(file *ast.File, w *wait, stack []ast.Node) string {
	const by = "a poll in place of the fixed sleep"
	if s, ok := intent.Of(intent.Clock, nil, intent.Comments(c.pass.Fset, file, w.stmt)); ok {
		return s.Reason("the sleep", by)
	}
	var top *ast.FuncDecl
	for _, n := range stack {
		if fd, ok := n.(*ast.FuncDecl); ok {
			top = fd
			break
		}
	}
	if top == nil {
		return ""
	}
	if isTest(top) {
		// The test, and the subtests the wait is in.
		var fn ast.Node = top
		labels := []intent.Label{{Text: top.Name.Name}}
		notes := intent.Comments(c.pass.Fset, file, top)
		for k := 0; k+1 < len(stack); k++ {
			call, ok := stack[k].(*ast.CallExpr)
			if !ok || len(call.Args) != 2 || call.Args[1] != stack[k+1] || !match.IsMethod(c.info, call, "testing", "Run") {
				continue
			}
			if lit, ok := call.Args[1].(*ast.FuncLit); ok {
				fn = lit
				labels = append(labels, c.said.Labels(call.Args[0])...)
				notes = append(notes, intent.Comments(c.pass.Fset, file, call)...)
			}
		}
		if s, ok := c.said.Says(intent.Clock, fn, labels, notes); ok {
			return s.Reason("the test", by)
		}
		return ""
	}
	if s, ok := intent.Of(intent.Clock, []string{top.Name.Name}, intent.Comments(c.pass.Fset, file, top)); ok {
		return s.Reason(top.Name.Name, by)
	}
	for _, t := range c.said.Callers(top) {
		notes := intent.Comments(c.pass.Fset, c.said.FileOf(t), t)
		if s, ok := c.said.Says(intent.Clock, t, []intent.Label{{Text: t.Name.Name}}, notes); ok {
			return s.Reason(t.Name.Name+", which calls "+top.Name.Name+",", by)
		}
	}
	return ""
}

// isTest reports whether fd is a test function (not TestMain).
func isTest(fd *ast.FuncDecl) bool {
	return fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") && fd.Name.Name != "TestMain"
}
