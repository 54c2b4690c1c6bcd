package spawn

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A child's view (view.go) is a working directory root/work whose parent
// root is its own. Above root the children meet: the directories t.TempDir
// gives one test are siblings. A child that derives a place from its
// working directory (os.Getwd, filepath.Abs of a relative path) and climbs
// above its root (filepath.Dir twice, a ".." joined to its parent) keeps
// a cache or a journal every child shares: one after another the later
// child reads what the earlier one left (a key that collides), and run
// together none does, so a bug only a hit shows passes the rewrite, while
// the correct code passes either way. The typed children's code is read
// for such a climb here; the builds the analysis does not type and the
// module's packages are kept in order by any os.Getwd or filepath.Abs
// (moduleShared), since their values cannot be followed.

// ancestorUse says where the code the units run derives a directory above
// its own root from its working directory, or "".
func (c *checker) ancestorUse(code []*ast.FuncDecl) string {
	for _, fd := range code {
		if at := c.climbs(fd.Body); at != nil {
			return fmt.Sprintf("the children's code derives a directory above its own root from its working directory (%s at %s): the directories t.TempDir gives one test share their parent, so a cache or a journal kept there is every child's, which one after another the next child reads and run together none does; a bug only a hit shows (a key that collides) would pass the rewrite", types.ExprString(at), c.line(at))
		}
	}
	return ""
}

// climbs returns the first expression of body whose value is a directory
// two or more levels above the working directory, or nil. Local variables
// given such a value (wd, _ := os.Getwd()) carry their level.
func (c *checker) climbs(body *ast.BlockStmt) ast.Expr {
	levels := map[types.Object]int{}
	var level func(e ast.Expr) int
	level = func(e ast.Expr) int {
		switch e := ast.Unparen(e).(type) {
		case *ast.Ident:
			if l, ok := levels[c.info.Uses[e]]; ok {
				return l
			}
		case *ast.CallExpr:
			switch {
			case match.IsPkgFunc(c.info, e, "os", "Getwd"):
				return 0
			case match.IsPkgFunc(c.info, e, "path/filepath", "Abs") && len(e.Args) == 1:
				if l := level(e.Args[0]); l >= 0 {
					return l
				}
				if s, ok := c.constString(e.Args[0]); ok {
					if filepath.IsAbs(s) {
						return -1
					}
					return ups(s) // relative to the working directory
				}
				// A path the child is given or computes: relative to its
				// working directory as far as the rule can tell.
				return 0
			case match.IsPkgFunc(c.info, e, "path/filepath", "Dir") && len(e.Args) == 1,
				match.IsPkgFunc(c.info, e, "path", "Dir") && len(e.Args) == 1:
				if l := level(e.Args[0]); l >= 0 {
					return l + 1
				}
			case match.IsPkgFunc(c.info, e, "path/filepath", "Clean", "EvalSymlinks", "ToSlash", "FromSlash") && len(e.Args) == 1:
				return level(e.Args[0])
			case match.IsPkgFunc(c.info, e, "path/filepath", "Join") && len(e.Args) > 0,
				match.IsPkgFunc(c.info, e, "path", "Join") && len(e.Args) > 0:
				return c.joined(level(e.Args[0]), e.Args[1:])
			}
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				if l := level(e.X); l >= 0 {
					return c.joined(l, []ast.Expr{e.Y})
				}
			}
		}
		return -1
	}
	// One pass in source order: a local's level is what its last
	// assignment gave it (d = filepath.Dir(d) climbs one each time). In a
	// loop such a climb repeats: it is taken to reach above the root.
	var at ast.Expr
	check := func(root ast.Node) {
		ast.Inspect(root, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok && at == nil && level(e) >= 2 {
				at = e
			}
			return at == nil
		})
	}
	set := func(id *ast.Ident, l int, inLoop bool) {
		obj := c.info.ObjectOf(id)
		if obj == nil {
			return
		}
		if old, ok := levels[obj]; ok && inLoop && l > old {
			l = old + 2 // the loop climbs again
		}
		levels[obj] = l
	}
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		if at != nil {
			return false
		}
		inLoop := false
		for _, s := range stack {
			switch s.(type) {
			case *ast.ForStmt, *ast.RangeStmt:
				inLoop = true
			}
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, r := range n.Rhs {
				check(r)
			}
			if at == nil && len(n.Rhs) == 1 && len(n.Lhs) >= 1 {
				if id := firstIdent(n.Lhs[0]); id != nil {
					if l := level(n.Rhs[0]); l >= 0 {
						set(id, l, inLoop)
						if l2 := levels[c.info.ObjectOf(id)]; l2 >= 2 {
							at = n.Rhs[0]
						}
					} else if obj := c.info.ObjectOf(id); obj != nil {
						delete(levels, obj)
					}
				}
			}
			return false
		case *ast.ValueSpec:
			for _, v := range n.Values {
				check(v)
			}
			if at == nil && len(n.Values) == 1 && len(n.Names) >= 1 {
				if l := level(n.Values[0]); l >= 0 {
					set(n.Names[0], l, false)
				}
			}
			return false
		case ast.Expr:
			check(n)
			return false
		}
		return true
	})
	// Name the innermost such expression: the climb, not what it is
	// joined to.
	for at != nil {
		var inner ast.Expr
		ast.Inspect(at, func(n ast.Node) bool {
			if _, ok := n.(*ast.Ident); ok {
				return true
			}
			if e, ok := n.(ast.Expr); ok && n != at && inner == nil && level(e) >= 2 {
				inner = e
			}
			return inner == nil
		})
		if inner == nil {
			break
		}
		at = inner
	}
	return at
}

// joined returns the level of a path at level l (or -1) joined with
// parts: each ".." element of a constant part climbs one. Other elements
// do not bring it back: parent/x, beside the children's roots, is
// outside each of them.
func (c *checker) joined(l int, parts []ast.Expr) int {
	if l < 0 {
		return -1
	}
	for _, p := range parts {
		if s, ok := c.constString(p); ok {
			l += strings.Count("/"+filepath.ToSlash(s)+"/", "/../")
		}
	}
	return l
}

// ups counts how far above the working directory the relative path s
// reaches ("../.." is 2).
func ups(s string) int {
	return strings.Count("/"+filepath.ToSlash(filepath.Clean(s))+"/", "/../")
}

// constString returns e's value when it is a constant string.
func (c *checker) constString(e ast.Expr) (string, bool) {
	tv, ok := c.info.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(tv.Value), true
}

// firstIdent returns e as an identifier, or nil.
func firstIdent(e ast.Expr) *ast.Ident {
	id, _ := ast.Unparen(e).(*ast.Ident)
	return id
}
