package setenv

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"

	"golang.org/x/tools/go/types/typeutil"

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
	// The test files the pass does not type (the external test package,
	// which sees an exported test function; another build) are read by
	// their syntax: any mention of the name but its declaration counts.
	dir := filepath.Dir(c.pass.Fset.Position(fd.Pos()).Filename)
	if found := match.MentionInUntypedTests(dir, fd.Name.Name, c.typedFile); found != "" {
		return fmt.Sprintf("%s is also run from other code (at %s, a file the analysis reads by its syntax: a call, a subtest or a helper it is handed to), which may set the variable before it runs", fd.Name.Name, found)
	}
	return ""
}

// typedFile reports whether path is one of the files the pass types.
func (c *checker) typedFile(path string) bool {
	for _, f := range c.pass.AllFiles {
		if c.pass.Fset.Position(f.Pos()).Filename == path {
			return true
		}
	}
	return false
}

// mAsInterface says where TestMain hands its *testing.M on as a value of
// another type (an interface such as interface{ Run() int }, assigned,
// returned, stored): a call of Run through it is not seen as m.Run, so a
// round of tests that runs before the seal would pass for sealed (red
// team batch 19, tworounds). A use as m.Run, or as an argument of a
// *testing.M parameter (which rerun follows), is not one. It returns ""
// when m is used only so.
func (c *checker) mAsInterface(main *ast.FuncDecl) string {
	ps := main.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) != 1 {
		return ""
	}
	m := c.info.Defs[ps[0].Names[0]]
	found := ""
	match.WithStack(main.Body, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if found != "" || !ok || m == nil || c.info.Uses[id] != m || len(stack) == 0 {
			return found == ""
		}
		switch p := stack[len(stack)-1].(type) {
		case *ast.SelectorExpr:
			if p.X == id {
				return true // m.Run
			}
		case *ast.CallExpr:
			if paramOf(c.info, p, id) {
				return true
			}
		}
		found = c.at(id.Pos())
		return false
	})
	if found == "" {
		return ""
	}
	return fmt.Sprintf("TestMain hands its *testing.M on as a value of another type at %s, so the rule cannot tell when the tests run against the seal", found)
}

// paramOf reports whether arg is an argument of call whose parameter is
// a *testing.M.
func paramOf(info *types.Info, call *ast.CallExpr, arg ast.Expr) bool {
	sig, ok := info.TypeOf(call.Fun).Underlying().(*types.Signature)
	if !ok {
		return false
	}
	// A generic function's parameter as declared: one of a type
	// parameter instantiated with *testing.M is a value of another type
	// inside the body (r.Run() on an R is not seen as m.Run), so the
	// call hands m on (red team batch 34, genericround).
	if fn, ok := typeutil.Callee(info, call).(*types.Func); ok {
		sig = fn.Origin().Signature()
	}
	for i, a := range call.Args {
		if a != arg {
			continue
		}
		n := sig.Params().Len()
		switch {
		case sig.Variadic() && i >= n-1:
			if s, ok := sig.Params().At(n - 1).Type().(*types.Slice); ok {
				return match.IsNamed(s.Elem(), "testing", "M")
			}
		case i < n:
			return match.IsNamed(sig.Params().At(i).Type(), "testing", "M")
		}
	}
	return false
}
