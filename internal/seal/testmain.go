package seal

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
	"github.com/dave/dst/decorator/resolver/gotypes"
	"github.com/unflake/unflake/internal/load"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/output"
	"golang.org/x/tools/go/packages"
)

// comment is the marker comment above the seal block.
var comment = []string{
	Marker + " the test process starts from an empty value",
	"// of every variable the package's code reads.",
}

// sealPackage returns the change that makes the TestMain of the test
// binary of plain empty names, or nil when it already does. tests are the
// package's test variants (in-package and external).
func sealPackage(plain *packages.Package, tests []*packages.Package, names []string) (*output.Change, error) {
	for _, v := range tests {
		for _, f := range v.Syntax {
			filename := v.Fset.File(f.Pos()).Name()
			if !strings.HasSuffix(filename, "_test.go") {
				continue
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" && fd.Body != nil {
					if ast.IsGenerated(f) {
						return nil, &load.PosError{Pos: v.Fset.Position(fd.Pos()).String(), Msg: "seal: TestMain is in a generated file; not sealed"}
					}
					if why := match.BuildConstraint(filename); why != "" {
						// Sealed here, it would hold in this build only:
						// another (go test -race, another GOOS) runs
						// another TestMain, or none.
						return nil, &load.PosError{Pos: v.Fset.Position(fd.Pos()).String(), Msg: fmt.Sprintf("seal: TestMain is in a file not every build compiles (%s), so a seal there holds in its build only; not sealed: seal each build's TestMain, or move it to a file every build compiles", why)}
					}
					return updateTestMain(v, f, filename, names)
				}
			}
		}
	}
	if at := leftOutTestMain(tests); at != "" {
		// A new TestMain would be a second one in that build, which
		// then does not compile.
		return nil, fmt.Errorf("%s: seal: another build of the package declares a TestMain; a new one would not compile there: not sealed", at)
	}
	return newTestMain(plain, names)
}

// leftOutTestMain returns where a file of the package's directory that
// the loaded build leaves out (a //go:build race file, a _windows_test.go
// file) declares a TestMain, or "".
func leftOutTestMain(tests []*packages.Package) string {
	var files []*ast.File
	var built *token.FileSet
	for _, v := range tests {
		files = append(files, v.Syntax...)
		built = v.Fset
	}
	if built == nil {
		return ""
	}
	fset := token.NewFileSet()
	left, err := match.LeftOutFiles(fset, built, files)
	if err != nil {
		return ""
	}
	for _, lf := range left {
		if lf.File == nil || !strings.HasSuffix(lf.Path, "_test.go") {
			continue
		}
		for _, d := range lf.File.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" {
				return fset.Position(fd.Pos()).String()
			}
		}
	}
	return ""
}

// newTestMain writes a new in-package file holding a TestMain with the
// seal block.
func newTestMain(p *packages.Package, names []string) (*output.Change, error) {
	path := filepath.Join(p.Dir, SealFile)
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s exists but holds no TestMain", path)
	}
	// Name the imports so that a package-level os or testing in the
	// package does not collide with them.
	osName, testingName := "os", "testing"
	if p.Types.Scope().Lookup("os") != nil {
		osName = "sealos"
	}
	if p.Types.Scope().Lookup("testing") != nil {
		testingName = "sealtesting"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "package %s\n\nimport (\n", p.Name)
	for _, imp := range []struct{ name, path string }{{osName, "os"}, {testingName, "testing"}} {
		if imp.name != imp.path {
			fmt.Fprintf(&b, "\t%s %q\n", imp.name, imp.path)
		} else {
			fmt.Fprintf(&b, "\t%q\n", imp.path)
		}
	}
	fmt.Fprintf(&b, ")\n\nfunc TestMain(m *%s.M) {\n", testingName)
	for _, c := range comment {
		fmt.Fprintf(&b, "\t%s\n", c)
	}
	fmt.Fprintf(&b, "\tfor _, name := range []string{%s} {\n\t\t%s.Setenv(name, \"\")\n\t}\n\n", quoted(names), osName)
	fmt.Fprintf(&b, "\t%s.Exit(m.Run())\n}\n", osName)
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("internal error: formatting %s: %v", path, err)
	}
	return &output.Change{Path: path, New: src, Mode: 0o644}, nil
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// updateTestMain puts the seal block at the start of the TestMain of f:
// it replaces the names of a block an earlier run wrote, or inserts one.
func updateTestMain(v *packages.Package, f *ast.File, path string, names []string) (*output.Change, error) {
	old, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	dec := decorator.NewDecoratorWithImports(v.Fset, v.PkgPath, gotypes.New(v.TypesInfo.Uses))
	df, err := dec.DecorateFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: decorating: %v", path, err)
	}
	var body *dst.BlockStmt
	for _, d := range df.Decls {
		if fd, ok := d.(*dst.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" {
			body = fd.Body
		}
	}
	if body == nil {
		return nil, fmt.Errorf("internal error: %s: TestMain lost in decoration", path)
	}
	lits := make([]dst.Expr, len(names))
	for i, n := range names {
		lits[i] = &dst.BasicLit{Kind: token.STRING, Value: strconv.Quote(n)}
	}
	if lit := sealBlock(body); lit != nil {
		if slices.Equal(litNames(lit), names) {
			return nil, nil
		}
		lit.Elts = lits
	} else {
		body.List = append([]dst.Stmt{newBlock(lits)}, body.List...)
	}
	src, err := output.Restore(v.PkgPath, v.Types.Imports(), df)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if bytes.Equal(src, old) {
		return nil, nil
	}
	return &output.Change{Path: path, Old: old, New: src, Mode: info.Mode().Perm()}, nil
}

// sealBlock returns the names literal of the seal block in body: a range
// statement marked by the Marker comment, over a composite literal.
func sealBlock(body *dst.BlockStmt) *dst.CompositeLit {
	for _, s := range body.List {
		rs, ok := s.(*dst.RangeStmt)
		if !ok || !slices.ContainsFunc(rs.Decs.Start, func(c string) bool { return strings.HasPrefix(c, Marker) }) {
			continue
		}
		if lit, ok := rs.X.(*dst.CompositeLit); ok {
			return lit
		}
	}
	return nil
}

// litNames returns the string values of lit's elements.
func litNames(lit *dst.CompositeLit) []string {
	var out []string
	for _, e := range lit.Elts {
		b, ok := e.(*dst.BasicLit)
		if !ok {
			return nil
		}
		s, err := strconv.Unquote(b.Value)
		if err != nil {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// newBlock builds the seal block:
//
//	for _, name := range []string{...} {
//		os.Setenv(name, "")
//	}
func newBlock(lits []dst.Expr) *dst.RangeStmt {
	rs := &dst.RangeStmt{
		Key:   dst.NewIdent("_"),
		Value: dst.NewIdent("name"),
		Tok:   token.DEFINE,
		X:     &dst.CompositeLit{Type: &dst.ArrayType{Elt: dst.NewIdent("string")}, Elts: lits},
		Body: &dst.BlockStmt{List: []dst.Stmt{&dst.ExprStmt{X: &dst.CallExpr{
			Fun:  &dst.Ident{Path: "os", Name: "Setenv"},
			Args: []dst.Expr{dst.NewIdent("name"), &dst.BasicLit{Kind: token.STRING, Value: `""`}},
		}}}},
	}
	rs.Decs.Before = dst.NewLine
	rs.Decs.Start = append(dst.Decorations{}, comment...)
	rs.Decs.After = dst.EmptyLine
	return rs
}
