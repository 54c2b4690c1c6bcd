package setenv

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"

	"github.com/unflake/unflake/internal/match"
)

// A seal that ranges over a package-level list trusts the list's
// initialiser only when nothing changes the list. An assignment is not
// the only change: copy(sealed, ...), append(sealed[:0], ...),
// clear(sealed), an element write (sealed[0] = ...), an in-place sort
// (sort.Strings, slices.Sort) or any hand-on of the slice to code that
// may write it (a call's argument, an alias x := sealed) changes the
// names TestMain empties without assigning the variable. Any file of
// the package counts, an init of another test file and a file the build
// leaves out included (read by syntax: any mention of the name there,
// since that build may also declare its own list).

// listWrite says where the package may change the package-level list v
// ("copy(sealed, ...) at platform_test.go:5"), or "".
func (c *checker) listWrite(v *types.Var) string {
	for _, f := range c.pass.AllFiles {
		if n := match.Modifies(c.info, f, []*types.Var{v}); n != nil {
			return fmt.Sprintf("a write at %s", c.at(n.Pos()))
		}
		var why string
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			if why != "" {
				return false
			}
			id, ok := n.(*ast.Ident)
			if !ok || c.info.Uses[id] != v || len(stack) == 0 {
				return true
			}
			if !readOnlyUse(c.info, id, stack) {
				why = fmt.Sprintf("%s at %s, which may change its elements", c.useText(id, stack), c.at(id.Pos()))
			}
			return true
		})
		if why != "" {
			return why
		}
	}
	return c.leftOutMention(v.Name())
}

// readOnlyUse reports whether the use id of a list, under stack, only
// reads it: ranged over, indexed for a value, measured by len or cap.
func readOnlyUse(info *types.Info, id *ast.Ident, stack []ast.Node) bool {
	parent := stack[len(stack)-1]
	switch p := parent.(type) {
	case *ast.RangeStmt:
		return p.X == ast.Expr(id)
	case *ast.IndexExpr:
		// An element read; Modifies finds an element write.
		return p.X == ast.Expr(id)
	case *ast.CallExpr:
		return match.IsBuiltin(info, p.Fun, "len", "cap")
	case *ast.ValueSpec:
		for _, name := range p.Names {
			if name == id {
				return true // the declaration
			}
		}
	}
	return false
}

// useText renders the expression holding a use of the list for a reason.
func (c *checker) useText(id *ast.Ident, stack []ast.Node) string {
	for k := len(stack) - 1; k >= 0; k-- {
		if call, ok := stack[k].(*ast.CallExpr); ok {
			return types.ExprString(call.Fun) + "(" + id.Name + ", ...)"
		}
		if _, ok := stack[k].(ast.Stmt); ok {
			break
		}
	}
	return "a hand-on of " + id.Name
}

func (c *checker) at(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// leftOutMention says where a Go file of the package's directory that
// the analysed build leaves out (another build, the external test
// package) names name, or "".
func (c *checker) leftOutMention(name string) string {
	fset := token.NewFileSet()
	files, err := match.LeftOutFiles(fset, c.pass.Fset, c.pass.AllFiles)
	if err != nil {
		return ""
	}
	for _, lf := range files {
		if lf.Err != nil {
			return fmt.Sprintf("%s, a file the build leaves out, does not parse", filepath.Base(lf.Path))
		}
		f := lf.File
		var at token.Pos
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == name && at == token.NoPos {
				at = id.Pos()
			}
			return at == token.NoPos
		})
		if at != token.NoPos {
			return fmt.Sprintf("a mention of %s at %s:%d, in a file the build leaves out, which may change or declare it", name, filepath.Base(lf.Path), fset.Position(at).Line)
		}
	}
	return ""
}
