package match

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
)

// MentionInUntypedTests says where a _test.go file of dir that typed does
// not hold (the external test package, which runs in the same binary and
// sees an exported test function; another build's files) names the
// top-level function name, read by its syntax, as "file:line", or "". Its
// own declaration is no mention; a mention inside another build's
// declaration of it is.
func MentionInUntypedTests(dir, name string, typed func(path string) bool) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, path := range paths {
		if typed(path) {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		found := ""
		at := func(pos token.Pos) string {
			return fmt.Sprintf("%s:%d", filepath.Base(path), fset.Position(pos).Line)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv == nil && n.Name.Name == name {
					if n.Body != nil {
						ast.Inspect(n.Body, func(m ast.Node) bool {
							if id, ok := m.(*ast.Ident); ok && id.Name == name && found == "" {
								found = at(id.Pos())
							}
							return found == ""
						})
					}
					return false // another build's declaration of the same test
				}
			case *ast.Ident:
				if n.Name == name && found == "" {
					found = at(n.Pos())
				}
			}
			return found == ""
		})
		if found != "" {
			return found
		}
	}
	return ""
}

// HandleMay reports whether a value of type t, a parameter's, may start a
// subtest or go parallel through a method named one of names: t is
// testing.TB (which code asserts back to *testing.T), or an interface
// with such a method. An assertion library's TestingT has none.
func HandleMay(t types.Type, names ...string) bool {
	if IsNamed(t, "testing", "TB") {
		return true
	}
	ms := types.NewMethodSet(t)
	for i := range ms.Len() {
		if oneOf(ms.At(i).Obj().Name(), names) {
			return true
		}
	}
	return false
}
