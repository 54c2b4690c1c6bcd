package testscope

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
)

// t.TempDir names every directory it makes 001, 002, ... under one named
// after the test, so two tests, or a test and its subtest, get
// directories with the same base name, where os.MkdirTemp's names are
// unique. Code that names something after a directory's base name (a
// session, a container, a lock) then meets a clash the original never
// did: a session manager that refuses a second project whose directory
// has the same name refuses the subtest's "001" after the parent test's
// t.TempDir "001" (red team batch 19, sessname). nameRead looks for the
// name inspection in the package's own code; the code may as well take
// it in another package of the module (naming.FromDir), read here from
// its syntax, every build, with the module packages it imports.

// modNameIn says where code of a module package other than this one
// that root names (a function, method, type or variable of it), or a
// module package that one imports, inspects a path's name, or "".
func (c *checker) modNameIn(root ast.Node) string {
	var at string
	ast.Inspect(root, func(n ast.Node) bool {
		if at != "" {
			return false
		}
		if id, ok := n.(*ast.Ident); ok {
			if obj := c.info.Uses[id]; obj != nil && obj.Pkg() != nil && obj.Pkg() != c.pass.Pkg {
				if _, isPkg := obj.(*types.PkgName); !isPkg {
					at = c.modNameOf(obj.Pkg().Path())
				}
			}
		}
		return at == ""
	})
	return at
}

// modNameOf says where the module package path, or a module package it
// imports, inspects a path's name ("naming.go:17 (filepath.Base)"), or
// ""; "" for a package of another module.
func (c *checker) modNameOf(path string) string {
	e := c.module()
	if e.names == nil {
		e.names = map[string]string{}
	}
	return e.nameIn(path, map[string]bool{})
}

func (e *modEnv) nameIn(path string, visiting map[string]bool) string {
	p := e.byPkg[path]
	if p == nil || visiting[path] || p == e.self() {
		return ""
	}
	if got, ok := e.names[path]; ok {
		return got
	}
	visiting[path] = true
	got := ""
	for _, f := range p.Files {
		if strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		if f.Syntax == nil {
			got = fmt.Sprintf("%s, which does not parse (%v)", e.mod.Rel(f.Path), f.Err)
			break
		}
		if got = e.fileNameRead(f); got != "" {
			break
		}
		for _, imp := range f.Imports {
			if got = e.nameIn(imp, visiting); got != "" {
				break
			}
		}
		if got != "" {
			break
		}
	}
	e.names[path] = got
	return got
}

// self is the package being checked: its own code is typed, and
// nameRead follows what the directory reaches there.
func (e *modEnv) self() *modsrc.Package {
	if len(e.mod.Packages) == 0 {
		return nil
	}
	return e.mod.Packages[0]
}

// fileNameRead says where f takes a path's last element, from its
// syntax: path/filepath's or path's Base, Ext, Match, Split or Glob,
// strings.LastIndex (LastIndexByte, LastIndexAny: splitting by hand), or
// the Name() of what a file importing os or io/fs holds (an fs.FileInfo,
// an fs.DirEntry); or "".
func (e *modEnv) fileNameRead(f *modsrc.File) string {
	files := false
	for _, imp := range f.Imports {
		files = files || imp == "os" || imp == "io/fs"
	}
	var at string
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if at != "" || !ok {
			return at == ""
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		what := ""
		if x, ok := sel.X.(*ast.Ident); ok {
			switch f.Imports[x.Name] + "." + sel.Sel.Name {
			case "path/filepath.Base", "path/filepath.Ext", "path/filepath.Match", "path/filepath.Split", "path/filepath.Glob",
				"path.Base", "path.Ext", "path.Match", "path.Split",
				"strings.LastIndex", "strings.LastIndexByte", "strings.LastIndexAny":
				what = x.Name + "." + sel.Sel.Name
			}
		}
		if what == "" && files && sel.Sel.Name == "Name" && len(call.Args) == 0 {
			what = types.ExprString(call.Fun)
		}
		if what != "" {
			at = fmt.Sprintf("%s at %s:%d", what, filepath.Base(f.Path), e.mod.Fset.Position(call.Pos()).Line)
		}
		return at == ""
	})
	return at
}

// modCalleeName says where the module package (other than this one)
// whose function call runs inspects a path's name, or "".
func (c *checker) modCalleeName(call *ast.CallExpr) string {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg || match.IsStd(fn.Pkg().Path()) {
		return ""
	}
	return c.modNameOf(fn.Pkg().Path())
}
