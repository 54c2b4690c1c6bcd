package rewrite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"sync"
)

// excludedNames lists the package-level names declared by the Go files of
// a package's directory that its build leaves out (another GOOS, a build
// tag) and that belong to the same package (same package clause, and
// _test files only for a test variant). A name a fix declares must not be
// among them, or the package stops building where those files are in.
type excludedNames struct {
	once  sync.Once
	names map[string]bool
}

func (e *excludedNames) has(j *job, name string) bool {
	e.once.Do(func() { e.names = j.excludedDecls() })
	return e.names[name]
}

func (j *job) excludedDecls() map[string]bool {
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range j.pkg.IgnoredFiles {
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil || f.Name.Name != j.pkg.Name {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}
