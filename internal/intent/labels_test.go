package intent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"testing"
)

// TestLabels reads the names subtests get from code: each t.Run's first
// argument, in source order, and the labels that say the wall clock.
func TestLabels(t *testing.T) {
	const src = `package p

import "fmt"

const wallName = "wall clock"

type T struct{}

func (T) Run(name string, f func()) {}

func f(t T, i int, suffix string) {
	t.Run(wallName, nil)
	t.Run(fmt.Sprintf("wall clock %d", i), nil)
	t.Run("on the " + suffix + " wall clock", nil)
	for name := range map[string]int{"fast": 1, "real clock": 2} {
		t.Run(name, nil)
	}
	cases := []*struct{ name string }{{"a"}, &struct{ name string }{name: "real clock 1s"}}
	for _, tc := range cases {
		t.Run(tc.name, nil)
	}
	n := fmt.Sprintf("%s-%d", "system clock", i)
	t.Run(n, nil)
	t.Run(fmt.Sprint(i), nil)
}
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{},
		Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	pkg, err := (&types.Config{Importer: fakeFmt{}}).Check("p", fset, []*ast.File{file}, info)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPackage(fset, pkg, info, []*ast.File{file})
	var got []string
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); !ok || sel.Sel.Name != "Run" {
			return true
		}
		s, ok := p.Says(Clock, nil, p.Labels(call.Args[0]), nil)
		if !ok {
			s.Where = "-"
		}
		got = append(got, s.Where)
		return true
	})
	want := []string{
		"its name, wallName, says wall clock",
		`its name, fmt.Sprintf("wall clock %d", i), says wall clock`,
		`its name, "on the " + suffix + " wall clock", says wall clock`,
		`its name, name, says real clock in the table's case "real clock"`,
		`its name, tc.name, says real clock in the table's case "real clock 1s"`,
		`its name, n, says system clock in fmt.Sprintf("%s-%d", "system clock", i)`,
		"-",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("t.Run %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// fakeFmt imports a package fmt of Sprintf and Sprint alone: the test
// reads no export data of the machine's Go.
type fakeFmt struct{}

func (fakeFmt) Import(path string) (*types.Package, error) {
	pkg := types.NewPackage("fmt", "fmt")
	str := types.Typ[types.String]
	args := types.NewVar(token.NoPos, pkg, "a", types.NewSlice(types.NewInterfaceType(nil, nil)))
	res := types.NewTuple(types.NewVar(token.NoPos, pkg, "", str))
	format := types.NewVar(token.NoPos, pkg, "format", str)
	pkg.Scope().Insert(types.NewFunc(token.NoPos, pkg, "Sprintf", types.NewSignatureType(nil, nil, nil, types.NewTuple(format, args), res, true)))
	pkg.Scope().Insert(types.NewFunc(token.NoPos, pkg, "Sprint", types.NewSignatureType(nil, nil, nil, types.NewTuple(args), res, true)))
	pkg.MarkComplete()
	return pkg, nil
}
