package leak

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// An errStyle is how a package's tests handle the error of a method that
// ends a value, so that a cleanup the rule adds handles it the same way.
type errStyle struct {
	kind   styleKind
	method string      // for report: "Error", "Fatal" or "Log"
	assert *types.Func // for assert: require.NoError, assert.NoError, ...
}

type styleKind int

const (
	// report: if err := x.Close(); err != nil { t.Error(err) }
	report styleKind = iota
	// assert: require.NoError(t, x.Close())
	assert
	// drop: x.Close() or defer x.Close(), the error ignored
	drop
	// dropBlank: _ = x.Close()
	dropBlank
)

// closeStyle finds the most common way the package's test files handle
// the error of Close, Stop, Shutdown and the like. Ties go to the form
// that reports the error; a package that never shows one reports it with
// t.Error: an error from ending a value the test made is a failure the
// test should see, and the cases where such an error is expected (a parent
// already ended the value, the test stopped it by hand) are left alone by
// endedParent and endedByTest.
func (c *checker) closeStyle() errStyle {
	type key struct {
		kind   styleKind
		method string
		assert *types.Func
	}
	count := map[key]int{}
	var order []key
	errType := types.Universe.Lookup("error").Type()
	for _, f := range c.pass.AllFiles {
		if !strings.HasSuffix(c.pass.Fset.File(f.Pos()).Name(), "_test.go") {
			continue
		}
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(stack) == 0 {
				return true
			}
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok || !isEndName(sel.Sel.Name) {
				return true
			}
			if t := c.info.TypeOf(call); t == nil || !types.Identical(t, errType) {
				return true
			}
			var k key
			found := false
			switch p := stack[len(stack)-1].(type) {
			case *ast.ExprStmt, *ast.DeferStmt:
				k, found = key{kind: drop}, true
			case *ast.AssignStmt:
				if len(p.Lhs) == 1 {
					if id, ok := p.Lhs[0].(*ast.Ident); ok && id.Name == "_" {
						k, found = key{kind: dropBlank}, true
						break
					}
				}
				if len(stack) >= 2 {
					if ifs, ok := stack[len(stack)-2].(*ast.IfStmt); ok && ifs.Init == p && c.errNotNil(ifs.Cond, p) {
						if m := c.reportCall(ifs.Body); m != "" {
							k, found = key{kind: report, method: m}, true
						}
					}
				}
			case *ast.CallExpr:
				if fn := match.Callee(c.info, p); fn != nil && fn.Pkg() != nil && (fn.Name() == "NoError" || fn.Name() == "Nil") &&
					strings.HasPrefix(fn.Pkg().Path(), "github.com/stretchr/testify/") && len(p.Args) == 2 && p.Args[1] == n {
					k, found = key{kind: assert, assert: fn}, true
				}
			}
			if found {
				if count[k] == 0 {
					order = append(order, k)
				}
				count[k]++
			}
			return true
		})
	}
	best := key{kind: report, method: "Error"}
	n := 0
	for _, k := range order {
		if count[k] > n || count[k] == n && k.kind < best.kind {
			best, n = k, count[k]
		}
	}
	return errStyle{kind: best.kind, method: best.method, assert: best.assert}
}

// reportCall returns how the block reports an error through testing: Error
// (for Error and Errorf), Fatal (Fatal, Fatalf) or Log (Log, Logf), or "".
func (c *checker) reportCall(b *ast.BlockStmt) string {
	out := ""
	ast.Inspect(b, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || out != "" {
			return out == ""
		}
		switch {
		case match.IsMethod(c.info, call, "testing", "Error", "Errorf"):
			out = "Error"
		case match.IsMethod(c.info, call, "testing", "Fatal", "Fatalf"):
			out = "Fatal"
		case match.IsMethod(c.info, call, "testing", "Log", "Logf"):
			out = "Log"
		}
		return out == ""
	})
	return out
}

// errNotNil reports whether cond is `err != nil` for the variable the
// assignment a declares: if err := x.Close(); err != nil { ... } reports
// the error, while `err == nil` expects one.
func (c *checker) errNotNil(cond ast.Expr, a *ast.AssignStmt) bool {
	b, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok || b.Op != token.NEQ || len(a.Lhs) != 1 {
		return false
	}
	x, ok := ast.Unparen(b.X).(*ast.Ident)
	l, ok2 := a.Lhs[0].(*ast.Ident)
	if !ok || !ok2 || c.info.ObjectOf(x) == nil || c.info.ObjectOf(x) != c.info.ObjectOf(l) {
		return false
	}
	y, ok := ast.Unparen(b.Y).(*ast.Ident)
	return ok && y.Name == "nil"
}
