package intent

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"strconv"
	"strings"
)

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
		if f, ok := callee(p.info, e).(*types.Func); ok && f.Pkg() != nil && f.Pkg().Path() == "fmt" && f.Name() == "Sprintf" && len(e.Args) > 0 {
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

// callee returns the function or method a call calls statically,
// or nil.
func callee(info *types.Info, call *ast.CallExpr) types.Object {
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
