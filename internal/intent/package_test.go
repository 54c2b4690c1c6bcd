package intent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
)

// TestValueSays: a package-level variable or constant of the test files
// whose comment claims the wall clock speaks for the tests that use it,
// directly or through a helper; one whose comment claims nothing does
// not.
func TestValueSays(t *testing.T) {
	const src = `package p

// refillWait is spent on the wall clock: tests using it must keep real time.
var refillWait = 120

const (
	// pause is how long the test waits.
	pause = 10
	strict = 5 // measured on the real clock, deliberately
)

func wait(n int) {}

func helper() { wait(strict) }

func TestVar()    { wait(refillWait) }
func TestConst()  { wait(pause) }
func TestHelper() { helper() }
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{}).Check("p", fset, []*ast.File{file}, info)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPackage(fset, pkg, info, []*ast.File{file})
	want := map[string]string{
		"TestVar":    "a comment on refillWait, which it uses, says",
		"TestConst":  "",
		"TestHelper": "a comment on strict, which it uses, says",
	}
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || want[fd.Name.Name] == "" && fd.Name.Name != "TestConst" {
			continue
		}
		s, ok := p.Says(Clock, fd, nil, nil)
		switch w := want[fd.Name.Name]; {
		case w == "" && ok:
			t.Errorf("%s: claims the clock (%s), want not", fd.Name.Name, s.Where)
		case w != "" && (!ok || !strings.HasPrefix(s.Where, w)):
			t.Errorf("%s: got %q (%v), want %q…", fd.Name.Name, s.Where, ok, w)
		}
	}
}
