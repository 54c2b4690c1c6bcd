package spawn

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"

	"github.com/unflake/unflake/internal/match"
)

// The typed children's code is read for the same places as the package's
// other builds and the module's packages (sharedPlaceIn): a build the
// analysis types may keep a journal in os/user's home keyed by
// os.Getppid as well as one it does not. The working directory
// (os.Getwd, filepath.Abs) is left to ancestorUse, which follows the
// typed value to a climb above the child's root.

// typedSkip are the calls ancestorUse checks in the typed code.
var typedSkip = map[string]bool{"os.Getwd": true, "path/filepath.Abs": true}

// typedPlaceUse says where the typed code a child runs names a place
// every child shares whatever view it is given, or "".
func (c *checker) typedPlaceUse(code []*ast.FuncDecl) string {
	const why = "the children's code names %s (%s), a place every child shares whatever view it is given: a child may keep a cache, a session or a journal there that one after another the next child reads, and run together none does, so the test would pass a bug it catches now"
	var decls []climbDecl
	for _, fd := range code {
		f := c.fileOf(fd)
		if f == nil || fd.Body == nil {
			continue
		}
		imports := match.ImportNames(f)
		if at := sharedPlaceIn(fd.Body, imports, typedSkip); at != nil {
			return fmt.Sprintf(why, at.what, c.posLine(at.pos))
		}
		decls = append(decls, climbDecl{fd, imports, fileConsts(f)})
	}
	// The climbs, with the functions read together: what one is given as
	// a path its callees are too.
	if at := climbInDecls(decls, typedSkip["os.Getwd"]); at != nil {
		return fmt.Sprintf(why, at.what, c.posLine(at.pos))
	}
	return ""
}

// posLine says where pos is: "app.go:14".
func (c *checker) posLine(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// fileOf returns the file of the package that holds fd, or nil.
func (c *checker) fileOf(fd *ast.FuncDecl) *ast.File {
	for _, f := range c.pass.AllFiles {
		if f.Pos() <= fd.Pos() && fd.End() <= f.End() {
			return f
		}
	}
	return nil
}
