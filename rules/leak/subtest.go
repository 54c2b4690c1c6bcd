package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A cleanup registered in a subtest runs when the subtest ends, before
// the enclosing test's statements after t.Run and its later subtests.
// What ending a value changes is not confined to package state the rule
// can trace (observedLater): closing a connection to a server the test
// runs ends the server's session (a presence list drops the member the
// later subtests look for), closing a file releases its locks and wakes
// its watchers, a client's Close tells its server goodbye. The code under
// test observes the end, and the later checks see what the original,
// which kept the value open, never showed them. No reading of the value's
// type rules that out (a net.Conn is the standard library's, its peer is
// not), so a value ended in a subtest that code of the enclosing test
// follows is not fixed, whatever its type.

// endedBeforeLater says why ending s at cleanup would change what code
// after its subtest sees, or "": s is made in a subtest (a function
// literal given to t.Run, or a function of the test files that may run
// as one or be called from one) that other code of the test follows.
func (c *checker) endedBeforeLater(s *site) string {
	if at := c.initUseOf(c.fn); at != nil {
		return fmt.Sprintf("%s.%s would run when %s, called in the package's initialisation at %s, is done, before every test that uses what it made: the code under test would see %s ended (a listener refusing connections, a server gone) where the original kept it open for the whole process", s.v.Name(), s.lc.method, c.fn.Name.Name, c.lineOf(at), s.v.Name())
	}
	after := c.codeAfterSubtest(s)
	if after == "" {
		after = c.mayRunAsSubtest(c.fn, map[*ast.FuncDecl]bool{}, 0)
	}
	if after == "" {
		return ""
	}
	return fmt.Sprintf("a cleanup's %s.%s would run when the subtest ends, before %s: the code under test may observe the end (a server sees its connection close, a watcher its file, a peer its client leave), and that code would see what the original, which kept %s open, never showed it; end it by hand where the test is done with it", s.v.Name(), s.lc.method, after, s.v.Name())
}

// mayRunAsSubtest says where fd, a function of the test files, may run
// as a subtest or inside one whose enclosing test goes on after it ("the
// code after the subtest that may run testJoin (handed on as a value at line 31)"), or "" when every
// use of it is a call made directly in a test's body (whose cleanups run
// when that test ends). A function handed as a value (t.Run("x",
// testJoin)), called from a function literal (a subtest's body), or from
// a helper that may itself run so, may have its cleanups run early.
func (c *checker) mayRunAsSubtest(fd *ast.FuncDecl, seen map[*ast.FuncDecl]bool, depth int) string {
	if topTest(fd) || seen[fd] || depth > maxKeepDepth {
		return ""
	}
	seen[fd] = true
	return c.firstUse(fd, func(caller *ast.FuncDecl, id *ast.Ident, call *ast.CallExpr, stack []ast.Node) string {
		line := c.pass.Fset.Position(id.Pos()).Line
		inLit := false
		for _, up := range stack {
			if _, ok := up.(*ast.FuncLit); ok {
				inLit = true
			}
		}
		switch {
		case call == nil:
			return fmt.Sprintf("the code after the subtest that may run %s (handed on as a value at line %d)", fd.Name.Name, line)
		case inLit:
			return fmt.Sprintf("the code after the subtest that may call %s (line %d)", fd.Name.Name, line)
		}
		return c.mayRunAsSubtest(caller, seen, depth+1)
	})
}

// firstUse calls visit on each use of fd, the function a test file
// declares, in the package's functions (call is the call it is the
// function of, nil when it is handed on as a value; stack holds its
// ancestors in caller's body) and returns the first answer that is not
// "".
func (c *checker) firstUse(fd *ast.FuncDecl, visit func(caller *ast.FuncDecl, id *ast.Ident, call *ast.CallExpr, stack []ast.Node) string) string {
	obj := c.info.Defs[fd.Name]
	if obj == nil {
		return ""
	}
	out := ""
	for _, f := range c.pass.Files {
		for _, d := range f.Decls {
			if out != "" {
				break
			}
			// A use in the package's initialisation (a package-level
			// variable's value, an init function) runs before every
			// test, and every test that reads what it made runs after
			// it: whatever fd ends when it returns or its caller's
			// cleanups run, those tests see ended (red team batch 18,
			// hungupstream: var hungAddr = listenHung()).
			if init := initUse(d, obj, c.info); init != nil {
				out = fmt.Sprintf("the tests that run after the package's initialisation, which uses %s at %s", fd.Name.Name, c.lineOf(init))
				break
			}
			caller, ok := d.(*ast.FuncDecl)
			if !ok || caller.Body == nil {
				continue
			}
			match.WithStack(caller.Body, func(n ast.Node, stack []ast.Node) bool {
				if out != "" {
					return false
				}
				id, ok := n.(*ast.Ident)
				if !ok || c.info.Uses[id] != obj {
					return true
				}
				var call *ast.CallExpr
				if len(stack) > 0 {
					if cl, ok := stack[len(stack)-1].(*ast.CallExpr); ok && ast.Unparen(cl.Fun) == ast.Expr(id) {
						call = cl
					}
				}
				out = visit(caller, id, call, stack)
				return out == ""
			})
		}
	}
	return out
}

// topTest reports whether fd is a top-level test, func TestX(t
// *testing.T): the go command runs it, and its cleanups run after all of
// its code.
func topTest(fd *ast.FuncDecl) bool {
	return fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") && fd.Type.Params.NumFields() == 1
}

// initUseOf returns a use of fd, a function of the test files, in the
// package's initialisation, or nil.
func (c *checker) initUseOf(fd *ast.FuncDecl) *ast.Ident {
	obj := c.info.Defs[fd.Name]
	if obj == nil {
		return nil
	}
	for _, f := range c.pass.Files {
		for _, d := range f.Decls {
			if at := initUse(d, obj, c.info); at != nil {
				return at
			}
		}
	}
	return nil
}

// initUse returns a use of obj in d when d is part of the package's
// initialisation: a package-level variable's value, or the body of an
// init function; or nil.
func initUse(d ast.Decl, obj types.Object, info *types.Info) *ast.Ident {
	var roots []ast.Node
	switch d := d.(type) {
	case *ast.GenDecl:
		if d.Tok != token.VAR {
			return nil
		}
		for _, spec := range d.Specs {
			if vs, ok := spec.(*ast.ValueSpec); ok {
				for _, v := range vs.Values {
					roots = append(roots, v)
				}
			}
		}
	case *ast.FuncDecl:
		if d.Recv != nil || d.Name.Name != "init" || d.Body == nil {
			return nil
		}
		roots = append(roots, d.Body)
	}
	var found *ast.Ident
	for _, r := range roots {
		ast.Inspect(r, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && found == nil && info.Uses[id] == obj {
				found = id
			}
			return found == nil
		})
	}
	return found
}
