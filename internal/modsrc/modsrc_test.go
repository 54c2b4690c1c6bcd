package modsrc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/unflake/unflake/internal/modsrc"
)

// Reach reads the package's every build and tests, and the module's
// packages its files import (every build, no tests), all the way down;
// not testdata, nor a nested module, nor another module's packages.
func TestReachFollowsTheModulesImports(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                "module example.com/m\n\ngo 1.22\n",
		"app.go":                "package app\n\nimport _ \"example.com/m/config\"\n",
		"app_other.go":          "//go:build other\n\npackage app\n\nimport _ \"example.com/m/lock\"\n",
		"app_test.go":           "package app\n\nimport _ \"example.com/m/testutil\"\n",
		"config/config.go":      "package config\n\nimport _ \"example.com/m/config/deep\"\n",
		"config/config_test.go": "package config\n\nimport _ \"example.com/m/unused\"\n",
		"config/deep/deep.go":   "package deep\n\nimport _ \"example.com/other\"\n",
		"lock/lock.go":          "package lock\n",
		"testutil/util.go":      "package testutil\n\nimport _ \"example.com/m/nested\"\n",
		"nested/go.mod":         "module example.com/m/nested\n",
		"nested/n.go":           "package nested\n",
		"unused/u.go":           "package unused\n",
	}
	for name, src := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "app.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := modsrc.Reach(fset, []*ast.File{f})
	if m.Path != "example.com/m" || m.Broken != "" {
		t.Fatalf("module %q (broken %q), want example.com/m", m.Path, m.Broken)
	}
	var got []string
	for _, p := range m.Packages {
		got = append(got, p.ImportPath)
	}
	slices.Sort(got)
	want := []string{"example.com/m", "example.com/m/config", "example.com/m/config/deep", "example.com/m/lock", "example.com/m/testutil"}
	if !slices.Equal(got, want) {
		t.Errorf("packages %q, want %q", got, want)
	}
	if n := len(m.Packages[0].Files); n != 3 {
		t.Errorf("the package's own directory gave %d files, want 3 (every build, tests too)", n)
	}
}
