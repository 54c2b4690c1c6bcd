package spawn

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// A child is given paths: an argument (its project, its output), an
// environment variable (HOME, a tool's own), a flag, a field of a config it
// loads. The rule sees the view the test gives a child (view.go), not what
// level of it a given path names: the project path root/work is one level
// below the child's root, HOME=root is the root itself. A climb above such
// a path (filepath.Dir(filepath.Dir(project)), filepath.Dir(home)) may land
// in the parent every t.TempDir of one test shares, where a cache or a
// session is every child's: one after another the next child reads what
// the earlier one left (a key that collides), run together none does, and
// a bug only a hit shows passes the rewrite. So every climb from a path
// that is not a constant is taken as reaching there: filepath.Dir or
// path.Dir, a ".." joined to it, filepath.Split, a cut at its last
// separator (strings.LastIndex of "/"); unless the rule sees the path go
// down by constant elements at least as far first
// (filepath.Dir(filepath.Join(dir, "sub", "f.txt")) is dir/sub). The
// climb is read from the syntax, in the typed children's code, the
// package's other builds and the module's packages alike.

// pathLevel is where a path expression stands: based on a value the rule
// cannot see (an argument, the environment), down by steps elements below
// it; or a constant (not based).
type pathLevel struct {
	based bool
	steps int
}

// climbReader finds climbs in the syntax of one file.
type climbReader struct {
	imports map[string]string // local name -> package path
	consts  map[string]bool   // the file's package-level string constants
	ownWd   bool              // the working directory (os.Getwd, filepath.Abs) is followed elsewhere
}

// climbIn returns the first climb above a path that is not a constant in
// root, syntax of a file importing imports (file, when known, gives its
// package-level constants); or nil.
func climbIn(root ast.Node, file *ast.File, imports map[string]string, ownWd bool) *placeAt {
	r := &climbReader{imports: imports, consts: map[string]bool{}, ownWd: ownWd}
	if file != nil {
		for _, d := range file.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						r.consts[n.Name] = true
					}
				}
			}
		}
	}
	var at *placeAt
	// Each function on its own: a local's level is what its last
	// assignment in source order gave it.
	ast.Inspect(root, func(n ast.Node) bool {
		if at != nil {
			return false
		}
		if fd, ok := n.(*ast.FuncDecl); ok {
			if fd.Body != nil {
				at = r.body(fd.Body)
			}
			return false
		}
		if b, ok := n.(*ast.BlockStmt); ok && b == root {
			at = r.body(b)
			return false
		}
		return true
	})
	return at
}

// body returns the first climb in b, or nil.
func (r *climbReader) body(b *ast.BlockStmt) *placeAt {
	locals := map[string]pathLevel{}
	var at *placeAt
	var level func(e ast.Expr) pathLevel
	climbed := func(e ast.Expr, l pathLevel) pathLevel {
		if at == nil && l.based && l.steps < 0 {
			at = &placeAt{"a climb above a path it is given (" + types.ExprString(e) + ": an argument, an environment variable, a flag or a field may name the child's root, and the directories t.TempDir gives one test share their parent)", e.Pos()}
		}
		return l
	}
	level = func(e ast.Expr) pathLevel {
		switch e := ast.Unparen(e).(type) {
		case *ast.BasicLit:
			return pathLevel{}
		case *ast.Ident:
			if l, ok := locals[e.Name]; ok {
				return l
			}
			if r.consts[e.Name] || e.Name == "nil" {
				return pathLevel{}
			}
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				x, y := level(e.X), level(e.Y)
				switch {
				case x.based:
					return climbed(e, pathLevel{true, x.steps + r.elems(e.Y)})
				case y.based:
					return y
				}
				return pathLevel{}
			}
		case *ast.CallExpr:
			fn := r.pkgFunc(e.Fun)
			switch fn {
			case "path/filepath.Dir", "path.Dir":
				if len(e.Args) == 1 {
					l := level(e.Args[0])
					if !l.based {
						return l
					}
					return climbed(e, pathLevel{true, l.steps - 1})
				}
			case "path/filepath.Join", "path.Join":
				l := pathLevel{}
				for _, a := range e.Args {
					switch la := level(a); {
					case la.based && !l.based:
						l = la
					case l.based:
						l.steps += r.elems(a)
					}
				}
				return climbed(e, l)
			case "path/filepath.Clean", "path.Clean", "path/filepath.ToSlash", "path/filepath.FromSlash", "path/filepath.EvalSymlinks":
				if len(e.Args) == 1 {
					return level(e.Args[0])
				}
			case "path/filepath.Abs":
				// Of a constant (relative) path: the working directory,
				// which ancestorUse follows in the typed code. Of a path
				// the child is given: that path, which may be absolute
				// (HOME, its project) and climbs like one.
				if len(e.Args) == 1 {
					if l := level(e.Args[0]); l.based || !r.ownWd {
						return l
					}
				}
				return pathLevel{}
			case "os.Getwd":
				if r.ownWd {
					return pathLevel{}
				}
			case "path/filepath.Split", "path.Split":
				if len(e.Args) == 1 {
					if l := level(e.Args[0]); l.based {
						return climbed(e, pathLevel{true, l.steps - 1})
					}
				}
			case "strings.LastIndex", "strings.LastIndexByte", "strings.LastIndexAny":
				if len(e.Args) == 2 && r.separator(e.Args[1]) && level(e.Args[0]).based {
					climbed(e, pathLevel{true, -1})
				}
			}
		}
		return pathLevel{based: true}
	}
	ast.Inspect(b, func(n ast.Node) bool {
		if at != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, e := range n.Rhs {
				ast.Inspect(e, func(m ast.Node) bool {
					if e, ok := m.(ast.Expr); ok && at == nil {
						level(e)
					}
					return at == nil
				})
			}
			for i, l := range n.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || id.Name == "_" {
					continue
				}
				switch {
				case n.Tok != token.ASSIGN && n.Tok != token.DEFINE:
					delete(locals, id.Name) // p += "/..": not followed, a path the child computes
				case len(n.Rhs) == len(n.Lhs):
					locals[id.Name] = level(n.Rhs[i])
				case i == 0:
					locals[id.Name] = level(n.Rhs[0]) // p, err := filepath.Abs(q)
				default:
					delete(locals, id.Name)
				}
			}
			return false
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i < len(n.Values) {
					locals[name.Name] = level(n.Values[i])
				} else {
					delete(locals, name.Name)
				}
			}
		case ast.Expr:
			level(n)
		}
		return true
	})
	return at
}

// elems counts the path elements a constant part adds (a ".." takes one
// away); a part that is not a constant adds none the rule can count.
func (r *climbReader) elems(e ast.Expr) int {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return 0
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return 0
	}
	n := 0
	for _, el := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		switch el {
		case ".":
		case "..":
			n--
		default:
			n++
		}
	}
	return n
}

// separator reports whether e names a path separator: "/", '/', `\`,
// filepath.Separator, os.PathSeparator, or a string of one.
func (r *climbReader) separator(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return err == nil && (s == "/" || s == `\` || s == `/\` || s == `\/`)
	case *ast.SelectorExpr:
		n := r.pkgFunc(e)
		return n == "path/filepath.Separator" || n == "os.PathSeparator"
	case *ast.CallExpr:
		return len(e.Args) == 1 && r.separator(e.Args[0])
	}
	return false
}

// pkgFunc returns "path.Name" for a selector of an imported package, or "".
func (r *climbReader) pkgFunc(e ast.Expr) string {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	p, ok := r.imports[x.Name]
	if !ok {
		return ""
	}
	return p + "." + sel.Sel.Name
}
