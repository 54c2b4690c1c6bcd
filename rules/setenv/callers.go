package setenv

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"

	"github.com/unflake/unflake/internal/match"
)

// calledFrom says where a test function is used other than by its
// declaration: called by another test (TestLockPathDefault(t)), run as
// a subtest (t.Run("default", TestDirDefault)) or handed to a helper
// (inSession(t, TestConfigFileDefault)). The test then also runs under
// whatever its caller set, and a clear of a variable the caller set is
// not redundant however well TestMain sealed it (red team batch 19,
// cachematrix, lockrerun, sessionhelper). It returns "" when the
// function is only declared.
func (c *checker) calledFrom(fd *ast.FuncDecl) string {
	obj := c.info.Defs[fd.Name]
	if obj == nil {
		return ""
	}
	for _, f := range c.pass.AllFiles {
		found := ""
		ast.Inspect(f, func(n ast.Node) bool {
			if found != "" {
				return false
			}
			if id, ok := n.(*ast.Ident); ok && c.info.Uses[id] == obj {
				p := c.pass.Fset.Position(id.Pos())
				found = fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
			}
			return true
		})
		if found != "" {
			return fmt.Sprintf("%s is also run from other code (at %s: a call, a subtest or a helper it is handed to), which may set the variable before it runs", fd.Name.Name, found)
		}
	}
	return ""
}

// mAsInterface says where TestMain hands its *testing.M on as a value of
// another type (an interface such as interface{ Run() int }): a call of
// Run through it is not seen as m.Run, so a round of tests that runs
// before the seal would pass for sealed (red team batch 19, tworounds).
// It returns "" when m is used only as a *testing.M.
func (c *checker) mAsInterface(main *ast.FuncDecl) string {
	found := ""
	ast.Inspect(main.Body, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			if as, ok := n.(*ast.AssignStmt); ok {
				for i, r := range as.Rhs {
					if i < len(as.Lhs) && match.IsNamed(c.info.TypeOf(r), "testing", "M") && !match.IsNamed(c.info.TypeOf(as.Lhs[i]), "testing", "M") {
						found = c.at(r.Pos())
					}
				}
			}
			return true
		}
		sig, ok := c.info.TypeOf(call.Fun).Underlying().(*types.Signature)
		if !ok {
			return true
		}
		for i, a := range call.Args {
			if !match.IsNamed(c.info.TypeOf(a), "testing", "M") {
				continue
			}
			var pt types.Type
			switch {
			case sig.Variadic() && i >= sig.Params().Len()-1:
				pt = sig.Params().At(sig.Params().Len() - 1).Type()
				if s, ok := pt.(*types.Slice); ok {
					pt = s.Elem()
				}
			case i < sig.Params().Len():
				pt = sig.Params().At(i).Type()
			}
			if pt == nil || !match.IsNamed(pt, "testing", "M") {
				found = c.at(a.Pos())
			}
		}
		return true
	})
	if found == "" {
		return ""
	}
	return fmt.Sprintf("TestMain hands its *testing.M on as a value of another type at %s, so the rule cannot tell when the tests run against the seal", found)
}
