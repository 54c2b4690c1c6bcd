package testscope

import (
	"fmt"
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// A directory reaches the code under test however the test hands it
// over, not only as an argument: through the environment (t.Setenv,
// os.Setenv: code that reads $FETCH_CACHE), a package-level variable, a
// struct field of a value whose method the test calls, a file the test
// writes (a config file naming it), a channel, a process it starts. Where the test hands it over any of these ways and calls
// code under test at all, the code may use the directory, and the shared
// parent (sharedParent) matters as much as for an argument.

// indirectHandover says how body hands a value in under (the directory
// and what the test builds from it) to code under test other than as an
// argument of a call of it ("t.Setenv at fetch_test.go:13, then Fetch at
// fetch_test.go:15"), or "".
func (c *checker) indirectHandover(body *ast.BlockStmt, under map[*types.Var]bool) string {
	var how string
	ast.Inspect(body, func(n ast.Node) bool {
		if how != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			if w := c.handsOver(n, under); w != "" {
				how = fmt.Sprintf("%s at %s", w, c.line(n))
			}
			// A method of a value that holds it (srv.Dir = dir; srv.Run()).
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && how == "" && c.usesAny(sel.X, under) {
				if fn := match.Callee(c.info, n); fn != nil && fn.Pkg() != nil && !match.IsStd(fn.Pkg().Path()) && c.reachesCodeUnderTest(fn) {
					how = fmt.Sprintf("a value holding it (%s) at %s", types.ExprString(n.Fun), c.line(n))
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				r := n.Rhs[min(i, len(n.Rhs)-1)]
				if !c.usesAny(r, under) {
					continue
				}
				if v := match.Root(c.info, l); v != nil && match.IsPackageLevel(v) {
					how = fmt.Sprintf("the package-level %s at %s", v.Name(), c.line(n))
				}
			}
		case *ast.SendStmt:
			if c.usesAny(n.Value, under) {
				how = fmt.Sprintf("a channel send at %s", c.line(n))
			}
		}
		return how == ""
	})
	if how == "" {
		return ""
	}
	// Handed over: it matters if the test runs code under test at all.
	var code string
	ast.Inspect(body, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CallExpr); ok && code == "" && !runsNoCode(c.info, cl) {
			if fn := match.Callee(c.info, cl); fn != nil && fn.Pkg() != nil && !match.IsStd(fn.Pkg().Path()) && c.reachesCodeUnderTest(fn) {
				code = fmt.Sprintf("%s at %s", types.ExprString(cl.Fun), c.line(cl))
			}
		}
		return code == ""
	})
	if code == "" {
		return ""
	}
	return how + ", then " + code
}

// handsOver names the way call hands a value of under to other code
// without passing it to the code under test's own function: an
// environment write, a file write, a process started; or "".
func (c *checker) handsOver(call *ast.CallExpr, under map[*types.Var]bool) string {
	fn := match.Callee(c.info, call)
	if fn == nil {
		return ""
	}
	anyArg := func(from int) bool {
		for i := from; i < len(call.Args); i++ {
			if c.usesAny(call.Args[i], under) {
				return true
			}
		}
		return false
	}
	switch {
	case match.IsPkgFunc(c.info, call, "os", "Setenv") || match.IsPkgFunc(c.info, call, "syscall", "Setenv"),
		fn.Name() == "Setenv" && recvIsTest(fn):
		if anyArg(1) {
			return "the environment (" + types.ExprString(call.Fun) + ")"
		}
	case match.IsPkgFunc(c.info, call, "os", "WriteFile"):
		if anyArg(1) {
			return "a file written (os.WriteFile)"
		}
	case match.IsPkgFunc(c.info, call, "fmt", "Fprint", "Fprintf", "Fprintln") || match.IsPkgFunc(c.info, call, "io", "WriteString"):
		if anyArg(1) {
			return "a file written (" + types.ExprString(call.Fun) + ")"
		}
	case fn.Signature().Recv() != nil && (fn.Name() == "Write" || fn.Name() == "WriteString") && !recvIsTest(fn):
		if anyArg(0) {
			return "a file written (" + types.ExprString(call.Fun) + ")"
		}
	case fn.Signature().Recv() != nil && match.IsNamed(fn.Signature().Recv().Type(), "os/exec", "Cmd"):
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && c.usesAny(sel.X, under) {
			return "a process started (" + types.ExprString(call.Fun) + ")"
		}
	}
	return ""
}

// recvIsTest reports whether fn is a method of testing's T, B, F or TB.
func recvIsTest(fn *types.Func) bool {
	r := fn.Signature().Recv()
	return r != nil && match.IsNamed(r.Type(), "testing", "T", "B", "F", "TB", "common")
}
