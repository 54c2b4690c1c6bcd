package intent

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"sort"
	"strconv"
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
		reached: map[ast.Node][]*ast.FuncDecl{}, apart: map[ast.Node][]string{}}
	for _, f := range files {
		if !p.testFile(f.Pos()) {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := info.Defs[fd.Name].(*types.Func); ok {
					p.helpers[fn] = fd
					p.fileOf[fd] = f
				}
			}
		}
	}
	return p
}

func (p *Package) testFile(pos token.Pos) bool {
	f := p.fset.File(pos)
	return f != nil && strings.HasSuffix(f.Name(), "_test.go")
}

// A Label is a name the code gives a test: its text, or the part of it
// the analysis can read, and how the code writes it when that is not a
// literal.
type Label struct {
	Text string
	Via  string // the expression ("wallName", "tc.name"), or "" for a literal
	In   string // where the value comes from ("the table's case \"real clock\""), or ""
}

// says returns the evidence that n says c, or false; apart holds the
// names of the code under test the test refers to, whose words are not
// a claim.
func (n Label) says(c Claim, apart []string) (Said, bool) {
	w := Name(blank(n.Text, c, apart), c)
	if w == "" {
		return Said{}, false
	}
	where := "its name says " + w
	if n.Via != "" {
		where = "its name, " + n.Via + ", says " + w
		if n.In != "" {
			where += " in " + n.In
		}
	}
	return Said{Claim: c, Where: where}, true
}

// blank blanks out of name each name of apart that says c: TestFormat
// WallClock holds no claim when the test calls FormatWallClock.
func blank(name string, c Claim, apart []string) string {
	for _, a := range apart {
		if Name(a, c) != "" {
			name = strings.ReplaceAll(name, a, strings.Repeat(" ", len(a)))
		}
	}
	return name
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
	return Said{}, false
}

// Helper returns the evidence that the helper fd, which a test calls,
// claims c in its name or its comments, worded for the test.
func (p *Package) Helper(c Claim, fd *ast.FuncDecl) (Said, bool) {
	name := fd.Name.Name
	if w := Name(name, c); w != "" {
		return Said{Claim: c, Where: "the name of " + name + ", which it calls, says " + w}, true
	}
	for _, g := range Comments(p.fset, p.fileOf[fd], fd) {
		if ph := Comment(g.Text(), c); ph != "" {
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

// Labels returns the names e, a subtest's name, may have: its value when
// constant (a literal, wallName), the text of a fmt.Sprintf format, the
// constant parts of a concatenation, and for a variable or a field of
// one, what the code assigns it: every case of a ranged table
// (for _, tc := range tests { t.Run(tc.name, ...) }).
func (p *Package) Labels(e ast.Expr) []Label {
	return p.names(e, 0)
}

// verbs matches a format's verbs, which hold no word of a name.
var verbs = regexp.MustCompile(`%[-+# 0-9.*\[\]]*[a-zA-Z%]`)

func (p *Package) names(e ast.Expr, depth int) []Label {
	if depth > 4 {
		return nil
	}
	e = ast.Unparen(e)
	via := types.ExprString(e)
	if tv, ok := p.info.Types[e]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		n := Label{Text: constant.StringVal(tv.Value)}
		if _, lit := e.(*ast.BasicLit); !lit {
			n.Via = via
		}
		return []Label{n}
	}
	switch e := e.(type) {
	case *ast.CallExpr:
		if f, ok := typeutilCallee(p.info, e).(*types.Func); ok && f.Pkg() != nil && f.Pkg().Path() == "fmt" && f.Name() == "Sprintf" && len(e.Args) > 0 {
			// The format's text, and the constant strings it formats.
			var out []Label
			for _, n := range p.names(e.Args[0], depth+1) {
				text := verbs.ReplaceAllString(n.Text, " ")
				for _, a := range e.Args[1:] {
					if tv, ok := p.info.Types[a]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
						text += " / " + constant.StringVal(tv.Value)
					}
				}
				out = append(out, Label{Text: text, Via: via, In: n.In})
			}
			return out
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			var out []Label
			for _, x := range append(p.names(e.X, depth+1), p.names(e.Y, depth+1)...) {
				out = append(out, Label{Text: x.Text, Via: via, In: x.In})
			}
			return out
		}
	case *ast.Ident:
		v, ok := p.info.Uses[e].(*types.Var)
		if !ok {
			return nil
		}
		p.index()
		var out []Label
		for _, x := range p.values[v] {
			out = append(out, p.named(via, p.names(x, depth+1))...)
		}
		if rs := p.ranges[v]; rs != nil {
			key := rs.Key != nil && p.info.Defs[identOf(rs.Key)] == v
			for _, el := range p.elements(rs.X, depth+1) {
				x := el.Value
				if key {
					x = el.Key
				}
				if x == nil {
					continue
				}
				for _, n := range p.named(via, p.names(x, depth+1)) {
					if n.In == "" {
						n.In = "the table's case " + quote(n.Text)
					}
					out = append(out, n)
				}
			}
		}
		return out
	case *ast.SelectorExpr:
		sel := p.info.Selections[e]
		if sel == nil || sel.Kind() != types.FieldVal || len(sel.Index()) != 1 {
			return nil
		}
		field := sel.Obj().(*types.Var)
		var out []Label
		for _, lit := range p.structs(e.X, depth+1) {
			if x := fieldOf(lit, field, sel.Index()[0]); x != nil {
				for _, n := range p.names(x, depth+1) {
					out = append(out, Label{Text: n.Text, Via: via, In: "the table's case " + caseName(lit)})
				}
			}
		}
		return out
	}
	return nil
}

// named gives the names ns the expression via that holds them.
func (p *Package) named(via string, ns []Label) []Label {
	out := make([]Label, 0, len(ns))
	for _, n := range ns {
		if n.In == "" && n.Via != "" && n.Via != via {
			n.In = n.Via
		}
		n.Via = via
		out = append(out, n)
	}
	return out
}

// caseName names a case of a table for a message: its first string
// constant ("real clock 100ms"), or its position.
func caseName(lit *ast.CompositeLit) string {
	for _, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			el = kv.Value
		}
		if b, ok := el.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if s, err := strconv.Unquote(b.Value); err == nil {
				return quote(s)
			}
		}
	}
	return types.ExprString(lit)
}

// An element is one element of a composite literal: its key (a map's),
// and its value.
type element struct{ Key, Value ast.Expr }

// elements returns the elements of the composite literal e is, or that
// the variable e names is assigned.
func (p *Package) elements(e ast.Expr, depth int) []element {
	if depth > 4 {
		return nil
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		var out []element
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				out = append(out, element{kv.Key, kv.Value})
			} else {
				out = append(out, element{nil, el})
			}
		}
		return out
	case *ast.Ident:
		v, ok := p.info.Uses[e].(*types.Var)
		if !ok {
			return nil
		}
		p.index()
		var out []element
		for _, x := range p.values[v] {
			out = append(out, p.elements(x, depth+1)...)
		}
		return out
	}
	return nil
}

// structs returns the struct literals the expression x (a variable, a
// range's value) may hold: each case of a ranged table.
func (p *Package) structs(x ast.Expr, depth int) []*ast.CompositeLit {
	id, ok := ast.Unparen(x).(*ast.Ident)
	if !ok {
		return nil
	}
	v, ok := p.info.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	p.index()
	var exprs []ast.Expr
	exprs = append(exprs, p.values[v]...)
	if rs := p.ranges[v]; rs != nil && rs.Value != nil && p.info.Defs[identOf(rs.Value)] == v {
		for _, el := range p.elements(rs.X, depth) {
			exprs = append(exprs, el.Value)
		}
	}
	var out []*ast.CompositeLit
	for _, x := range exprs {
		x = ast.Unparen(x)
		if u, ok := x.(*ast.UnaryExpr); ok && u.Op == token.AND {
			x = ast.Unparen(u.X)
		}
		if lit, ok := x.(*ast.CompositeLit); ok {
			out = append(out, lit)
		}
	}
	return out
}

// fieldOf returns the value lit gives field, the index-th field of its
// struct type, or nil.
func fieldOf(lit *ast.CompositeLit, field *types.Var, index int) ast.Expr {
	for i, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == field.Name() {
				return kv.Value
			}
			continue
		}
		if i == index {
			return el
		}
	}
	return nil
}

func identOf(e ast.Expr) *ast.Ident {
	id, _ := e.(*ast.Ident)
	return id
}

// index records, once, the expressions assigned to each variable of the
// files and the range statements declaring one.
func (p *Package) index() {
	if p.indexed {
		return
	}
	p.indexed = true
	p.values = map[types.Object][]ast.Expr{}
	p.ranges = map[types.Object]*ast.RangeStmt{}
	obj := func(e ast.Expr) types.Object {
		id := identOf(e)
		if id == nil {
			return nil
		}
		if o := p.info.Defs[id]; o != nil {
			return o
		}
		return p.info.Uses[id]
	}
	for _, f := range p.files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						if o := obj(l); o != nil {
							p.values[o] = append(p.values[o], n.Rhs[i])
						}
					}
				}
			case *ast.ValueSpec:
				if len(n.Names) == len(n.Values) {
					for i, id := range n.Names {
						if o := p.info.Defs[id]; o != nil {
							p.values[o] = append(p.values[o], n.Values[i])
						}
					}
				}
			case *ast.RangeStmt:
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if o := obj(e); o != nil {
						p.ranges[o] = n
					}
				}
			}
			return true
		})
	}
}

// typeutilCallee returns the function or method a call calls statically,
// or nil.
func typeutilCallee(info *types.Info, call *ast.CallExpr) types.Object {
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return info.Uses[fun]
	case *ast.SelectorExpr:
		if sel := info.Selections[fun]; sel != nil {
			return sel.Obj()
		}
		return info.Uses[fun.Sel]
	}
	return nil
}
