package parallel

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The package's own files (package x, its tests included) and its
// external test package (package x_test, in the same directory) compile
// into one test binary and run in one process: the external tests run
// after the package's own, in the same process. A process-wide change one
// half makes (time.Local = time.UTC, os.Setenv, os.Chdir, a variable of
// the package under test or of another package, a setting through a call
// whose summary writes one) is there for every test of the other half
// that runs after it, and a test made parallel runs after every
// sequential test of the binary, the other half's too (red team batch
// 17, shiftroster: an external test switched the process to UTC for
// good, and the package's test, made parallel, ran after it and no
// longer saw the zone its bug shows in). The analysis types one half
// only, so the rule reads the other half's files from their syntax (see
// variants.sibling) and counts what they change as the typed code's own
// changes: shared state (sharedState), and the settings the standard
// library reads once (zoneSetter).

// siblingState records in s what the other half of the test binary may
// change of the state the tests share, as scan and scanCall do for the
// typed code. Without types, an identifier is resolved through the
// packages the typed code imports (transitively): a package the typed
// code cannot reach has no state it reads, but for the environment and
// the working directory, which os and syscall name.
func (c *checker) siblingState(s *shared) {
	v := c.variantsOf()
	if len(v.sibling) == 0 {
		return
	}
	// The package's own variables, named without a qualifier, for the
	// external test package's pass: the package it imports under test.
	var own *types.Package
	if base, ok := strings.CutSuffix(c.pass.Pkg.Path(), "_test"); ok {
		own = c.importedPkg(base)
	}
	top := map[*ast.ValueSpec]bool{}
	for _, f := range v.sibling {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, sp := range gd.Specs {
					top[sp.(*ast.ValueSpec)] = true
				}
			}
		}
	}
	for _, f := range v.sibling {
		imports := match.ImportNames(f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body != nil {
					c.siblingScan(s, v, d.Body, d.Name.Name, setup(d), imports, own, top)
				}
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					c.siblingScan(s, v, d, "a package-level declaration", false, imports, own, top)
				}
			}
		}
	}
}

// siblingScan records in s what root, the body of the function fn of the
// other half of the test binary (or a package-level declaration), may
// change. As in scan, the writes of setup code (init, TestMain) do not
// count, but for those of its function literals.
func (c *checker) siblingScan(s *shared, v *variants, root ast.Node, fn string, init bool, imports map[string]string, own *types.Package, top map[*ast.ValueSpec]bool) {
	where := func(n ast.Node) func() string {
		return func() string { return c.siblingWhere(v, fn, n) }
	}
	sels := map[*ast.Ident]bool{}
	match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
		later := init && inFuncLit(stack)
		switch n := n.(type) {
		case *ast.SelectorExpr:
			sels[n.Sel] = true
			x, ok := n.X.(*ast.Ident)
			if !ok || x.Obj != nil || imports[x.Name] == "" {
				return true
			}
			sels[x] = true
			// pkg.V: another package's variable, or the package under
			// test's, written by its external tests.
			if pv, ok := c.lookupIn(imports[x.Name], n.Sel.Name).(*types.Var); ok {
				kind, how := c.synKind(pv, n, stack)
				c.note(s, pv, kind, how, where(n), init && !later)
			}
		case *ast.Ident:
			// The package's own variable, named in its own files, for
			// the external test package's pass.
			if own == nil || sels[n] || !siblingTop(n, top) || declares(n, stack) {
				return true
			}
			if pv, ok := own.Scope().Lookup(n.Name).(*types.Var); ok {
				kind, how := c.synKind(pv, n, stack)
				c.note(s, pv, kind, how, where(n), init && !later)
			}
		case *ast.CallExpr:
			if init && !later {
				return true
			}
			sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || x.Obj != nil || imports[x.Name] == "" {
				return true
			}
			if callee := c.siblingFunc(imports[x.Name], sel.Sel.Name); callee != nil {
				c.noteCall(s, callee, where(n)())
			}
		}
		return true
	})
}

// siblingTop reports whether id, in a file of the other half of the test
// binary, may name a package-level variable: the parser resolved it to
// one of its file's, or to nothing in its file (another file's, or the
// universe's).
func siblingTop(id *ast.Ident, top map[*ast.ValueSpec]bool) bool {
	if id.Obj == nil {
		return true
	}
	vs, ok := id.Obj.Decl.(*ast.ValueSpec)
	return ok && id.Obj.Kind == ast.Var && top[vs]
}

// declares reports whether id, whose enclosing nodes are stack, is a name
// its parent, a variable's declaration, declares.
func declares(id *ast.Ident, stack []ast.Node) bool {
	if len(stack) == 0 {
		return false
	}
	vs, ok := stack[len(stack)-1].(*ast.ValueSpec)
	return ok && slices.Contains(vs.Names, id)
}

// synKind classifies, as useOf does for typed code, the use e of v, a
// package-level variable whose type is known but whose use the syntax
// alone shows: a method call is a write when the method has a pointer
// receiver and v is no pointer, an alias when v is a pointer or the
// receiver a value that shares memory, a read otherwise. A method the
// lookup does not find (one of a field) counts as a write.
func (c *checker) synKind(v *types.Var, e ast.Expr, stack []ast.Node) (useKind, string) {
	use := synUse(e, stack)
	switch {
	case use == "":
		return read, ""
	case use == "writes it":
		return write, ""
	case use == "takes its address":
		// The typed analysis knows where the address goes; the syntax
		// does not: a write through it.
		return write, ""
	case strings.HasPrefix(use, "calls its method "):
		name := strings.TrimPrefix(use, "calls its method ")
		m, _, _ := types.LookupFieldOrMethod(v.Type(), true, v.Pkg(), name)
		fn, ok := m.(*types.Func)
		if !ok {
			return write, ""
		}
		_, ptrVar := types.Unalias(v.Type()).Underlying().(*types.Pointer)
		if _, ptrRecv := fn.Type().(*types.Signature).Recv().Type().(*types.Pointer); ptrRecv {
			if ptrVar {
				return alias, "calls its method " + name + ", which may change what it points to"
			}
			return write, ""
		}
		if c.valueOnly(v.Type()) {
			return read, ""
		}
		return alias, "calls its method " + name + ", whose value receiver shares what it refers to"
	}
	if c.valueOnly(v.Type()) {
		return read, ""
	}
	return alias, use + ", and it refers to memory it shares"
}

// siblingFunc returns the function name of the package at path, as the
// typed code's imports know it, or else a stand-in whose Key is its (the
// summaries of a loader find it by that), or nil for the package under
// test itself, whose code the typed analysis scans already.
func (c *checker) siblingFunc(path, name string) *types.Func {
	if path == c.pass.Pkg.Path() {
		return nil
	}
	if fn, ok := c.lookupIn(path, name).(*types.Func); ok {
		return fn
	}
	if c.importedPkg(path) != nil {
		return nil // a type, a conversion, a variable's function value
	}
	pkg := types.NewPackage(path, path[strings.LastIndexByte(path, '/')+1:])
	return types.NewFunc(token.NoPos, pkg, name, types.NewSignatureType(nil, nil, nil, nil, nil, false))
}

// lookupIn returns the package-level object name of the package at path,
// if the typed code reaches that package, or nil.
func (c *checker) lookupIn(path, name string) types.Object {
	if path == c.pass.Pkg.Path() {
		return c.pass.Pkg.Scope().Lookup(name)
	}
	if p := c.importedPkg(path); p != nil {
		return p.Scope().Lookup(name)
	}
	return nil
}

// importedPkg returns the package at path among those the typed package
// imports, transitively, or nil.
func (c *checker) importedPkg(path string) *types.Package {
	seen := map[*types.Package]bool{}
	queue := []*types.Package{c.pass.Pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range p.Imports() {
			if q.Path() == path {
				return q
			}
			if !seen[q] {
				seen[q] = true
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// siblingWhere names the function fn of the other half of the test
// binary and the position of n: "TestStampForExport (export_test.go:11,
// in the external test package, which runs in the same test binary)".
func (c *checker) siblingWhere(v *variants, fn string, n ast.Node) string {
	return fmt.Sprintf("%s (%s, %s)", fn, v.base(n), c.siblingName())
}

// siblingName says what the other half of the test binary is.
func (c *checker) siblingName() string {
	if strings.HasSuffix(c.pass.Pkg.Name(), "_test") {
		return "in the package's own files, which run in the same test binary"
	}
	return "in the external test package, which runs in the same test binary"
}

// A setter is a place where a test or helper (not TestMain or init, which
// run before every test) sets an environment variable (env, when known
// is true; else expr is its name's expression) or assigns time.Local
// (local).
type setter struct {
	fn, where string
	local     bool
	env, expr string
	known     bool
}

// siblingSetters calls found for each setter of the other half of the
// test binary, as far as the syntax says: t.Setenv (any method named
// Setenv counts as t's), os.Setenv, os.Unsetenv, syscall's, with the
// variable's name when it is a string literal; an assignment to
// time.Local. It stops when found returns true.
func (c *checker) siblingSetters(found func(setter) bool) {
	v := c.variantsOf()
	for _, f := range v.sibling {
		imports := match.ImportNames(f)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || setup(fd) {
				continue
			}
			done := false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr)
					if !ok || len(n.Args) < 1 {
						break
					}
					x, _ := sel.X.(*ast.Ident)
					imported := x != nil && x.Obj == nil && imports[x.Name] != ""
					setenv := imported && (imports[x.Name] == "os" || imports[x.Name] == "syscall") && (sel.Sel.Name == "Setenv" || sel.Sel.Name == "Unsetenv") ||
						!imported && sel.Sel.Name == "Setenv"
					if !setenv {
						break
					}
					st := setter{fn: fd.Name.Name, where: c.siblingWhere(v, fd.Name.Name, n), expr: types.ExprString(n.Args[0])}
					if lit, ok := ast.Unparen(n.Args[0]).(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if k, err := strconv.Unquote(lit.Value); err == nil {
							st.env, st.known = k, true
						}
					}
					done = found(st)
				case *ast.AssignStmt:
					for _, l := range n.Lhs {
						sel, ok := ast.Unparen(l).(*ast.SelectorExpr)
						if !ok || sel.Sel.Name != "Local" || done {
							continue
						}
						if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && imports[x.Name] == "time" {
							done = found(setter{fn: fd.Name.Name, where: c.siblingWhere(v, fd.Name.Name, n), local: true})
						}
					}
				}
				return !done
			})
			if done {
				return
			}
		}
	}
}
