package effects

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// withoutBodies keeps every declaration of real files: those of a few
// standard packages parse the same with their function bodies blanked.
func TestWithoutBodies(t *testing.T) {
	for _, dir := range []string{"net/http", "go/types", "runtime"} {
		files, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", dir, "*.go"))
		if len(files) == 0 {
			t.Fatalf("no files in %s", dir)
		}
		for _, name := range files {
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			want, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
			if err != nil {
				continue
			}
			got, err := parser.ParseFile(fset, name, withoutBodies(fset, src), parser.SkipObjectResolution)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if decls(got) != decls(want) {
				t.Errorf("%s: %d declarations without bodies, %d with", name, decls(got), decls(want))
			}
		}
	}
}

func decls(f *ast.File) int {
	n := 0
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			n += len(d.Specs)
		case *ast.FuncDecl:
			n++
		}
	}
	return n
}
