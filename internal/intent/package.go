package intent

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"
)

// A Package reads what its tests say beyond their own words: the names
// the code computes for subtests (a constant, a format, a field of a
// ranged table), the helpers of the test files a test calls, whose names
// and comments speak for the test too, and the names of the code under
// test, which a test's name may repeat without claiming anything
// (TestFormatWallClock tests FormatWallClock).
type Package struct {
	fset  *token.FileSet
	pkg   *types.Package
	info  *types.Info
	files []*ast.File

	helpers map[*types.Func]*ast.FuncDecl // the functions of the test files
	fileOf  map[*ast.FuncDecl]*ast.File
	// notes holds the comments of the package-level variables and
	// constants of the test files ("refillWait is spent on the wall
	// clock"): a test that uses one is said to by them.
	notes map[types.Object][]*ast.CommentGroup

	// Answers kept: a package's tests ask them many times.
	reached map[ast.Node][]*ast.FuncDecl
	apart   map[ast.Node][]string

	// Built on first use (index): the expressions assigned to each
	// variable, and the range statement declaring a key or a value.
	indexed bool
	values  map[types.Object][]ast.Expr
	ranges  map[types.Object]*ast.RangeStmt
}

// NewPackage prepares reading the tests of pkg, whose files (test files
// and the code under test) info describes.
func NewPackage(fset *token.FileSet, pkg *types.Package, info *types.Info, files []*ast.File) *Package {
	p := &Package{fset: fset, pkg: pkg, info: info, files: files,
		helpers: map[*types.Func]*ast.FuncDecl{}, fileOf: map[*ast.FuncDecl]*ast.File{},
		notes:   map[types.Object][]*ast.CommentGroup{},
		reached: map[ast.Node][]*ast.FuncDecl{}, apart: map[ast.Node][]string{}}
	for _, f := range files {
		if !p.testFile(f.Pos()) {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if fn, ok := info.Defs[d.Name].(*types.Func); ok && d.Body != nil {
					p.helpers[fn] = d
					p.fileOf[d] = f
				}
			case *ast.GenDecl:
				p.addNotes(d)
			}
		}
	}
	return p
}

func (p *Package) testFile(pos token.Pos) bool {
	f := p.fset.File(pos)
	return f != nil && strings.HasSuffix(f.Name(), "_test.go")
}

// Says returns the first evidence that the test fn (a test function or a
// subtest's literal), with these names and the comments attached to it,
// claims c: its names (less the names of the code under test it calls),
// its comments, then the names and comments of the helpers of the test
// files it calls, directly or not.
func (p *Package) Says(c Claim, fn ast.Node, names []Label, notes []*ast.CommentGroup) (Said, bool) {
	apart := p.tested(fn)
	for _, n := range names {
		if s, ok := n.says(c, apart); ok {
			return s, true
		}
	}
	if s, ok := Of(c, nil, notes); ok {
		return s, true
	}
	for _, fd := range p.Reached(fn) {
		if s, ok := p.Helper(c, fd); ok {
			return s, true
		}
	}
	return p.valueSays(c, fn)
}

// addNotes records the comments of d's variables and constants: the
// declaration's doc, a spec's own doc and its line comment.
func (p *Package) addNotes(d *ast.GenDecl) {
	if d.Tok != token.VAR && d.Tok != token.CONST {
		return
	}
	for _, spec := range d.Specs {
		vs, ok := spec.(*ast.ValueSpec)
		if !ok {
			continue
		}
		var gs []*ast.CommentGroup
		for _, g := range []*ast.CommentGroup{d.Doc, vs.Doc, vs.Comment} {
			if g != nil {
				gs = append(gs, g)
			}
		}
		if len(gs) == 0 {
			continue
		}
		for _, id := range vs.Names {
			if obj := p.info.Defs[id]; obj != nil {
				p.notes[obj] = gs
			}
		}
	}
}

// valueSays returns the evidence that a package-level variable or
// constant of the test files that fn, or a helper it calls, uses claims
// c in its comments.
func (p *Package) valueSays(c Claim, fn ast.Node) (Said, bool) {
	if fn == nil || len(p.notes) == 0 {
		return Said{}, false
	}
	var said Said
	found := false
	look := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || found {
				return !found
			}
			obj := p.info.Uses[id]
			for _, g := range p.notes[obj] {
				if ph := Comment(Prose(g), c); ph != "" {
					said, found = Said{Claim: c, Where: "a comment on " + obj.Name() + ", which it uses, says " + quote(ph)}, true
					return false
				}
			}
			return true
		})
	}
	look(fn)
	for _, fd := range p.Reached(fn) {
		if found {
			break
		}
		look(fd.Body)
	}
	return said, found
}

// Helper returns the evidence that the helper fd, which a test calls,
// claims c in its name or its comments, worded for the test.
func (p *Package) Helper(c Claim, fd *ast.FuncDecl) (Said, bool) {
	name := fd.Name.Name
	if w := Name(name, c); w != "" {
		return Said{Claim: c, Where: "the name of " + name + ", which it calls, says " + w}, true
	}
	for _, g := range Comments(p.fset, p.fileOf[fd], fd) {
		if ph := Comment(Prose(g), c); ph != "" {
			return Said{Claim: c, Where: "a comment on " + name + ", which it calls, says " + quote(ph)}, true
		}
	}
	return Said{}, false
}

// Reached returns the functions of the test files that fn refers to,
// directly or through one another, in source order, fn excluded.
func (p *Package) Reached(fn ast.Node) []*ast.FuncDecl {
	if fn == nil {
		return nil
	}
	if r, ok := p.reached[fn]; ok {
		return r
	}
	seen := map[*ast.FuncDecl]bool{}
	var out []*ast.FuncDecl
	var visit func(n ast.Node)
	visit = func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			f, _ := p.info.Uses[id].(*types.Func)
			if fd := p.helpers[f]; fd != nil && fd != fn && !seen[fd] {
				seen[fd] = true
				out = append(out, fd)
				visit(fd.Body)
			}
			return true
		})
	}
	visit(fn)
	sort.Slice(out, func(i, j int) bool { return out[i].Pos() < out[j].Pos() })
	p.reached[fn] = out
	return out
}

// Callers returns the tests (top-level Test functions of the test files)
// that reach fd, in source order.
func (p *Package) Callers(fd *ast.FuncDecl) []*ast.FuncDecl {
	var out []*ast.FuncDecl
	for _, t := range p.helpers {
		if !strings.HasPrefix(t.Name.Name, "Test") || t == fd {
			continue
		}
		for _, r := range p.Reached(t) {
			if r == fd {
				out = append(out, t)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pos() < out[j].Pos() })
	return out
}

// FileOf returns the test file declaring fd, or nil.
func (p *Package) FileOf(fd *ast.FuncDecl) *ast.File { return p.fileOf[fd] }

// tested returns the names of the functions, methods and types of the
// code under test (this package or the one an external test package
// tests, outside the test files) that fn, or the function declaring it
// (for a subtest's literal, whose names include its test's), refers to.
func (p *Package) tested(fn ast.Node) []string {
	if fn == nil || p.pkg == nil {
		return nil
	}
	if _, ok := fn.(*ast.FuncLit); ok {
		for _, f := range p.files {
			if f.Pos() <= fn.Pos() && fn.End() <= f.End() {
				for _, d := range f.Decls {
					if d.Pos() <= fn.Pos() && fn.End() <= d.End() {
						fn = d
					}
				}
			}
		}
	}
	if a, ok := p.apart[fn]; ok {
		return a
	}
	path := strings.TrimSuffix(p.pkg.Path(), "_test")
	seen := map[string]bool{}
	var out []string
	ast.Inspect(fn, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		obj := p.info.Uses[id]
		switch obj.(type) {
		case *types.Func, *types.TypeName:
		default:
			return true
		}
		if obj.Pkg() == nil || obj.Pkg().Path() != path && obj.Pkg() != p.pkg || p.testFile(obj.Pos()) {
			return true
		}
		if !seen[obj.Name()] {
			seen[obj.Name()] = true
			out = append(out, obj.Name())
		}
		return true
	})
	// Longer names first: FormatWallClock before WallClock.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	p.apart[fn] = out
	return out
}
