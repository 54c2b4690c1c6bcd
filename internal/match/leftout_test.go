package match_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"testing"

	"github.com/unflake/unflake/internal/match"
)

// LeftOutFiles gives the directory's Go files the typed build does not
// hold, each parsed or with its error, and nothing for a package whose
// files are not on disk.
func TestLeftOutFiles(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"a.go":      "package p\n",
		"b_bug.go":  "//go:build bug\n\npackage p\n\nvar x = \"/tmp/x\"\n",
		"broken.go": "package p\n\nfunc {\n",
		"notes.txt": "not go\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	built := token.NewFileSet()
	a, err := parser.ParseFile(built, filepath.Join(dir, "a.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	files, err := match.LeftOutFiles(token.NewFileSet(), built, []*ast.File{a})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || filepath.Base(files[0].Path) != "b_bug.go" || files[0].File == nil || files[0].Err != nil ||
		filepath.Base(files[1].Path) != "broken.go" || files[1].File != nil || files[1].Err == nil {
		t.Errorf("got %+v, want b_bug.go parsed and broken.go with its error", files)
	}

	madeUp := token.NewFileSet()
	m, err := parser.ParseFile(madeUp, "m.go", "package p\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	if files, err := match.LeftOutFiles(token.NewFileSet(), madeUp, []*ast.File{m}); files != nil || err != nil {
		t.Errorf("a made-up package: got %+v, %v, want nothing", files, err)
	}
}

func TestImportNames(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package p\n\nimport (\n\t\"net/http\"\n\tyaml \"gopkg.in/yaml.v3\"\n)\n", parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	got := match.ImportNames(f)
	if len(got) != 2 || got["http"] != "net/http" || got["yaml"] != "gopkg.in/yaml.v3" {
		t.Errorf("got %v", got)
	}
}
