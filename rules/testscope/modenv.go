package testscope

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
)

// A later test may read an environment variable through a package of the
// module (a config subpackage's TTL(), a settings loader), not only
// through the package's own code: the restore then takes the value the
// test leaked away from it as surely. The typed analysis sees the
// package only, so the module's packages a root names (a function,
// method, variable or constant of theirs) are read from their syntax,
// every build, with the module's packages they import: a call there
// that reads the variable (os.Getenv or os.LookupEnv of its name or of a
// name the syntax does not tell, os.Environ, os.ExpandEnv, syscall's)
// makes the root a reader. (Dependencies of other modules are not read:
// the effect summaries do not record environment reads.)

// modEnv is the module's packages read from their syntax, and per
// package import path, whether its code (or the module code it imports)
// reads each variable.
type modEnv struct {
	mod   *modsrc.Module
	byPkg map[string]*modsrc.Package
	memo  map[string]map[key]bool
	// names: per import path, where the package (or the module code it
	// imports) inspects a path's name, or "" (modname.go).
	names map[string]string
}

// modReadsIn reports whether root (skip left out) names code of a module
// package other than this one that reads k.
func (c *checker) modReadsIn(root, skip ast.Node, k key) bool {
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		if found || n == nil || skip != nil && n == skip {
			return false
		}
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		obj := c.info.Uses[id]
		if obj == nil || obj.Pkg() == nil || obj.Pkg() == c.pass.Pkg || match.IsStd(obj.Pkg().Path()) {
			return true // the standard library's reads are matched by envRead
		}
		if _, ok := obj.(*types.PkgName); ok {
			return true
		}
		found = c.pkgReadsEnv(obj.Pkg().Path(), k)
		return !found
	})
	return found
}

// pkgReadsEnv reports whether the module package path, or a module
// package it imports, reads k; false for a package of another module.
func (c *checker) pkgReadsEnv(path string, k key) bool {
	return c.module().reads(path, k, map[string]bool{})
}

// module returns the module's packages the package reaches, read from
// their syntax once per package.
func (c *checker) module() *modEnv {
	if c.modEnv == nil {
		m := modsrc.Reach(c.pass.Fset, c.pass.AllFiles)
		c.modEnv = &modEnv{mod: m, byPkg: map[string]*modsrc.Package{}, memo: map[string]map[key]bool{}}
		for _, p := range m.Packages {
			if p.ImportPath != "" {
				c.modEnv.byPkg[p.ImportPath] = p
			}
		}
	}
	return c.modEnv
}

func (e *modEnv) reads(path string, k key, visiting map[string]bool) bool {
	p := e.byPkg[path]
	if p == nil || visiting[path] {
		return false
	}
	if got, ok := e.memo[path][k]; ok {
		return got
	}
	visiting[path] = true
	got := false
	for _, f := range p.Files {
		if strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		if f.Syntax == nil || fileReadsEnv(f, k) {
			got = true // a file that does not parse may read anything
			break
		}
		for _, imp := range f.Imports {
			if e.reads(imp, k, visiting) {
				got = true
				break
			}
		}
		if got {
			break
		}
	}
	if e.memo[path] == nil {
		e.memo[path] = map[key]bool{}
	}
	e.memo[path][k] = got
	return got
}

// fileReadsEnv reports whether f calls what reads k: os.Getenv,
// os.LookupEnv or syscall.Getenv of k's name, or of a name that is no
// string literal; os.Environ, os.ExpandEnv, syscall.Environ.
func fileReadsEnv(f *modsrc.File, k key) bool {
	name, named := strings.CutPrefix(string(k), "c:")
	found := false
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		if found {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch f.Imports[x.Name] + "." + sel.Sel.Name {
		case "os.Environ", "os.ExpandEnv", "syscall.Environ":
			found = true
		case "os.Getenv", "os.LookupEnv", "syscall.Getenv":
			if len(call.Args) != 1 {
				found = true
				break
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || !named {
				found = true // a name the syntax does not tell
				break
			}
			s, err := strconv.Unquote(lit.Value)
			found = err != nil || s == name
		}
		return !found
	})
	return found
}
