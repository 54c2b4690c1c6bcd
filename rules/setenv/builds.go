package setenv

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"

	"github.com/unflake/unflake/internal/match"
)

// The pass types one build of the test package, and the seal is
// evaluated in it. But the tests also run in the package's other builds
// (go test -race, which many CIs run, another GOOS or GOARCH, a tag), and
// a clear is redundant only if the seal holds in each. A TestMain in a
// file with a build constraint (//go:build !race) is that build's only:
// another build compiles another TestMain, one that may only tune the GC,
// or none, and the variable is the environment's there. The same holds
// for what the seal reads: a helper TestMain calls, a constant naming the
// variable, a list it ranges over, declared in a file of one build only,
// may be declared differently in another (seal_linux_test.go beside
// seal_other_test.go). So the seal is trusted only when TestMain and every
// declaration of the package it reaches (its functions and package
// variables, transitively) are in files that every build compiles;
// otherwise it seals nothing. A constant is judged where it names a
// variable the seal empties (constBuilds): one of a single build names
// no variable the seal can trust. A
// TestMain in an unconstrained file leaves no build another TestMain: a
// second one would not compile.

// sealBuilds says why TestMain's seal may not hold in every build of the
// test package, naming the declaration and its file's constraint, or "".
func (c *checker) sealBuilds(main *ast.FuncDecl) string {
	if why := c.constrained(main.Pos()); why != "" {
		return fmt.Sprintf("TestMain is in %s, which not every build of the package compiles (%s): a build that leaves it out (go test -race, another GOOS or GOARCH, another tag) runs the tests under another TestMain, or none, which need not empty the variable", c.fileOf(main.Pos()), why)
	}
	seen := map[types.Object]bool{}
	work := []ast.Node{main.Body}
	for len(work) > 0 {
		n := work[0]
		work = work[1:]
		var why string
		ast.Inspect(n, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || why != "" {
				return why == ""
			}
			obj := c.info.Uses[id]
			if obj == nil || seen[obj] {
				return true
			}
			seen[obj] = true
			var decl ast.Node // what the declaration reads in turn
			switch obj := obj.(type) {
			case *types.Func:
				fd := c.decls[obj.Origin()]
				if fd == nil {
					return true // another package's: judged by its effects
				}
				if fd.Body != nil {
					decl = fd.Body
				}
			case *types.Var:
				if !match.IsPackageLevel(obj) || obj.Pkg() != c.pass.Pkg {
					return true
				}
				if vs := c.valueSpec(obj); vs != nil {
					decl = vs
				}
			default:
				// A constant that names a variable is judged where the
				// seal evaluates the name (constBuilds): one used for
				// anything else (os.DevNull) seals nothing.
				return true
			}
			if w := c.constrained(obj.Pos()); w != "" {
				why = fmt.Sprintf("TestMain's seal reads %s, declared in %s, which not every build of the package compiles (%s): another build (go test -race, another GOOS or GOARCH, another tag) may declare it differently, or not at all and run the tests under another TestMain, which need not empty the variable", obj.Name(), c.fileOf(obj.Pos()), w)
				return false
			}
			if decl != nil {
				work = append(work, decl)
			}
			return true
		})
		if why != "" {
			return why
		}
	}
	return ""
}

// constrained says why not every build compiles the file declaring pos
// (match.BuildConstraint), or "". A declaration whose file is not known
// (no position) is of export data the analysis cannot read: it says so.
func (c *checker) constrained(pos token.Pos) string {
	name := c.pass.Fset.Position(pos).Filename
	if name == "" {
		return "its file is not known"
	}
	return match.BuildConstraint(name)
}

// fileOf names the file holding pos: by its base name for the package's
// own files, with its directory for another package's.
func (c *checker) fileOf(pos token.Pos) string {
	name := c.pass.Fset.Position(pos).Filename
	for _, f := range c.pass.AllFiles {
		if c.pass.Fset.File(f.Pos()).Name() == name {
			return filepath.Base(name)
		}
	}
	return filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(name)), filepath.Base(name)))
}

// valueSpec returns the declaration of the package-level variable v, or
// nil.
func (c *checker) valueSpec(v *types.Var) *ast.ValueSpec {
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, id := range vs.Names {
					if c.info.Defs[id] == v {
						return vs
					}
				}
			}
		}
	}
	return nil
}

// constBuilds says why the name e evaluates to may differ in another
// build: a constant in e declared in a file not every build compiles
// (const home = "HOME" in env_unix_test.go, "USERPROFILE" in
// env_windows_test.go), naming it and the constraint; or "".
func (c *checker) constBuilds(e ast.Expr) string {
	var why string
	ast.Inspect(e, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || why != "" {
			return why == ""
		}
		if k, ok := c.info.Uses[id].(*types.Const); ok {
			if w := c.constrained(k.Pos()); w != "" {
				why = fmt.Sprintf("the constant %s, declared in %s, which not every build of the package compiles (%s), so another build may name another variable", k.Name(), c.fileOf(k.Pos()), w)
			}
		}
		return why == ""
	})
	return why
}
