package testscope

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// leftOutReader returns where a test file of the package's directory that
// the typed build leaves out may read what a test leaks, or "": a file of
// the external test package (its tests run in the same binary, after or
// before this one), or of another build (a tag, an OS: its tests run with
// these when that build is chosen). (Code under test of another build is
// reached through the tests, which the typed analysis reads.) The typed analysis
// does not see them, so their syntax is read: a string literal equal to
// lit (an environment variable's name), an identifier in idents (a
// package variable, a package function that reads the state; also as
// pkg.Name), or, for the environment (env), a call that reads all of it
// (os.Environ, os.ExpandEnv). A file that does not parse may hold
// anything.
func (c *checker) leftOutReader(lit string, identsOf func() map[string]bool, env bool) string {
	if c.leftOut == nil {
		fset := token.NewFileSet()
		files, err := match.LeftOutFiles(fset, c.pass.Fset, c.pass.AllFiles)
		if err != nil {
			files = []match.LeftOutFile{{Path: "the package's directory", Err: err}}
		}
		c.leftOut = &leftOut{fset: fset, files: files}
	}
	var idents map[string]bool // worked out for the first left-out test file
	for _, f := range c.leftOut.files {
		if !strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		if idents == nil {
			idents = identsOf()
		}
		if f.File == nil {
			return fmt.Sprintf("%s (a file the build leaves out, which does not parse: %v)", filepath.Base(f.Path), f.Err)
		}
		at := token.NoPos
		ast.Inspect(f.File, func(n ast.Node) bool {
			if at.IsValid() {
				return false
			}
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && lit != "" && n.Kind == token.STRING && s == lit {
					at = n.Pos()
				}
			case *ast.Ident:
				if idents[n.Name] {
					at = n.Pos()
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && env && match.ImportNames(f.File)[x.Name] == "os" && (n.Sel.Name == "Environ" || n.Sel.Name == "ExpandEnv") {
					at = n.Pos()
				}
			}
			return true
		})
		if at.IsValid() {
			p := c.leftOut.fset.Position(at)
			return fmt.Sprintf("code at %s:%d (a file the build leaves out: %s)", filepath.Base(p.Filename), p.Line, leftOutWhy(f.File))
		}
	}
	return ""
}

// leftOutWhy says which build holds f: the external test package, or a
// build constraint.
func leftOutWhy(f *ast.File) string {
	if strings.HasSuffix(f.Name.Name, "_test") {
		return "the external test package, whose tests run in the same binary"
	}
	return "another build, whose tests run with these when it is chosen"
}

// leftOut holds the files the typed build leaves out, parsed once per
// package.
type leftOut struct {
	fset  *token.FileSet
	files []match.LeftOutFile
}

// readingFuncs returns the names of the package functions whose bodies
// read the state (reads), directly or through the functions they reach:
// a left-out test that calls one reads it.
func (c *checker) readingFuncs(reads func(root, skip ast.Node) bool, also ...string) map[string]bool {
	names := map[string]bool{}
	for _, n := range also {
		names[n] = true
	}
	for fn, fd := range c.decls {
		if fd.Body == nil {
			continue
		}
		read := reads(fd.Body, nil)
		for g := range c.reachable(fd.Body, nil) {
			if read {
				break
			}
			read = reads(c.decls[g].Body, nil)
		}
		if read {
			names[fn.Name()] = true
		}
	}
	return names
}
