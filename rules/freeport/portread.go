package freeport

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The flow (flow.go) follows the address through the typed build's
// functions and fields. A file of the package that the build leaves out
// (another build tag, another GOOS) is another implementation of those
// functions, and the tests also run against it: if it reads the port's
// text (net.SplitHostPort, a URL's Port, a strings, bytes, strconv or
// regexp function, a slice or an index of the address, a comparison with
// a literal), the port's value is part of what the test exercises. A
// fixed port ending in "80" makes code that strips a "default port" by
// suffix fail; a port the system picks almost never does. So the
// functions and fields the flow reached are looked up in those files by
// name, and a read of the address's text there keeps the port fixed.

// reached is what the flow of one use entered: the package's functions
// with the parameter the address landed in, and the fields it was stored
// in.
type reached struct {
	params map[string][]int // function or method name -> parameter indexes
	fields map[string]bool
}

// textOps are the packages whose functions read a string's text.
var textOps = map[string]bool{"strings": true, "bytes": true, "strconv": true, "regexp": true, "unicode/utf8": true}

// otherBuildReads says where a file of the package that the typed build
// leaves out reads the text of the address the flow carried into r, or
// "".
func (c *checker) otherBuildReads(r *reached) string {
	if r == nil || len(r.params) == 0 && len(r.fields) == 0 {
		return ""
	}
	if c.leftOut == nil {
		c.leftOutFset = token.NewFileSet()
		files, err := match.LeftOutFiles(c.leftOutFset, c.pass.Fset, c.pass.AllFiles)
		if err != nil {
			files = []match.LeftOutFile{{Path: "the package's directory", Err: err}}
		}
		c.leftOut = files
	}
	for _, f := range c.leftOut {
		if strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		if f.File == nil {
			return fmt.Sprintf("%s, a file of another build that does not parse (%v)", filepath.Base(f.Path), f.Err)
		}
		imports := match.ImportNames(f.File)
		for _, d := range f.File.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			tainted := map[string]bool{}
			for _, i := range r.params[fd.Name.Name] {
				if id := paramAt(fd, i); id != nil && id.Name != "_" {
					tainted[id.Name] = true
				}
			}
			if at := c.readsText(fd.Body, tainted, r.fields, imports); at.IsValid() {
				p := c.leftOutFset.Position(at)
				return fmt.Sprintf("%s at %s:%d, in a file the build leaves out (another build, whose code the tests also run)", fd.Name.Name, filepath.Base(p.Filename), p.Line)
			}
		}
	}
	return ""
}

// paramAt returns the i'th parameter's name of fd (the last for a
// variadic call past it), or nil.
func paramAt(fd *ast.FuncDecl, i int) *ast.Ident {
	var params []*ast.Ident
	for _, f := range fd.Type.Params.List {
		if len(f.Names) == 0 {
			params = append(params, nil)
		}
		params = append(params, f.Names...)
	}
	if len(params) == 0 {
		return nil
	}
	if i >= len(params) {
		i = len(params) - 1
	}
	return params[i]
}

// readsText returns where body reads the text of a value in tainted (local
// names) or in a field named in fields, from its syntax; or NoPos. Local
// variables assigned from such a value are tainted too.
func (c *checker) readsText(body *ast.BlockStmt, tainted, fields map[string]bool, imports map[string]string) token.Pos {
	carries := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				found = found || tainted[n.Name]
			case *ast.SelectorExpr:
				found = found || fields[n.Sel.Name]
			case *ast.FuncLit:
				return false
			}
			return !found
		})
		return found
	}
	// Taint the locals assigned from a tainted value, to a fixed point.
	for changed := true; changed; {
		changed = false
		ast.Inspect(body, func(n ast.Node) bool {
			a, ok := n.(*ast.AssignStmt)
			if !ok || len(a.Lhs) != len(a.Rhs) {
				return true
			}
			for i, l := range a.Lhs {
				if id, ok := l.(*ast.Ident); ok && !tainted[id.Name] && carries(a.Rhs[i]) {
					tainted[id.Name], changed = true, true
				}
			}
			return true
		})
	}
	at := token.NoPos
	ast.Inspect(body, func(n ast.Node) bool {
		if at.IsValid() {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if sel.Sel.Name == "Port" && len(n.Args) == 0 {
				at = n.Pos() // a URL's port
				return false
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			path := imports[x.Name]
			if !textOps[path] && !(path == "net" && sel.Sel.Name == "SplitHostPort") {
				return true
			}
			for _, a := range n.Args {
				if carries(a) {
					at = n.Pos()
				}
			}
		case *ast.SliceExpr:
			if carries(n.X) {
				at = n.Pos()
			}
		case *ast.IndexExpr:
			if carries(n.X) {
				at = n.Pos()
			}
		case *ast.BinaryExpr:
			if n.Op != token.ADD && (carries(n.X) || carries(n.Y)) {
				at = n.Pos()
			}
		case *ast.SwitchStmt:
			if n.Tag != nil && carries(n.Tag) {
				at = n.Pos()
			}
		}
		return true
	})
	return at
}

// enter records, for otherBuildReads, that the flow carried the address
// into parameter i of fn.
func (c *checker) enter(fn *types.Func, i int) {
	if c.reach == nil {
		return
	}
	if c.reach.params == nil {
		c.reach.params = map[string][]int{}
	}
	c.reach.params[fn.Name()] = append(c.reach.params[fn.Name()], i)
}

// storeIn records that the flow stored the address in field v.
func (c *checker) storeIn(v types.Object) {
	if c.reach == nil {
		return
	}
	if v, ok := v.(*types.Var); ok && v.IsField() {
		if c.reach.fields == nil {
			c.reach.fields = map[string]bool{}
		}
		c.reach.fields[v.Name()] = true
	}
}
