// Package handover tells whether a function literal in a test is the
// test's own code or code the test hands to the code under test.
//
// A loop or a sleep inside a handler, a callback or a job that the test
// gives to the code under test is that code's behaviour (a handler that
// simulates 500ms of work), not the test waiting for something: a rule
// that replaces waits must leave it alone. What the test runs itself is
// its own: the body of t.Run, t.Cleanup, synctest.Test, testify's
// Eventually, a goroutine it starts (go func, wg.Go, errgroup's Go), and
// a literal it calls directly or through a local variable or a helper of
// its own test files. The decision follows the literal's value through
// the type checker (where it is passed, converted, stored or called), not
// names.
package handover

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// A Kind says whose code a function literal is.
type Kind int

const (
	// Own: the test runs the literal itself.
	Own Kind = iota
	// Unknown: the analysis cannot tell.
	Unknown
	// Handed: the test gives the literal to the code under test.
	Handed
)

// A Verdict is whose code a function literal is, and why.
type Verdict struct {
	Kind Kind
	// Lit is the literal the verdict is about (the outermost one handed
	// over, or one whose fate is unknown), nil for Own.
	Lit *ast.FuncLit
	// To says where the literal goes, for a message: "an argument of
	// App.Get", "the field Handler of http.Server", "a
	// http.HandlerFunc".
	To string
}

// maxDepth bounds how many holders (variables, fields, parameters) the
// analysis follows from a literal.
const maxDepth = 6

// A Finder answers for the function literals of one package.
type Finder struct {
	info  *types.Info
	fset  *token.FileSet
	files []*ast.File
	decls map[*types.Func]*ast.FuncDecl // functions of the test files

	uses  map[types.Object][]use      // uses of func-typed variables and of the test files' functions, built on first need
	lits  map[*types.Var]*ast.FuncLit // local variables set once, to a literal
	memo  map[*ast.FuncLit]Verdict
	holds map[*types.Var]Verdict
	funcs map[*types.Func]Verdict
}

// A use is an expression reading a func-typed variable (an identifier, or
// a selector for a field), with its enclosing nodes, outermost first.
type use struct {
	expr  ast.Expr
	stack []ast.Node
}

// Analysis is the analysis whose result is the package's Finder (New over
// Pass.AllFiles), shared by the rules that require it: read it with Of.
// A Finder's answers do not depend on the order it is asked in.
var Analysis = &rule.Analysis{
	Name: "handover",
	Doc:  "finds the function literals and functions of the test files that are handed to the code under test",
	Run: func(pass *rule.Pass) (any, error) {
		return New(pass.TypesInfo, pass.Fset, pass.AllFiles), nil
	},
}

// Of returns the result of Analysis for pass, whose rule requires it.
func Of(pass *rule.Pass) *Finder { return pass.ResultOf[Analysis].(*Finder) }

// New returns a Finder for a package whose files (test files and others)
// are files.
func New(info *types.Info, fset *token.FileSet, files []*ast.File) *Finder {
	f := &Finder{info: info, fset: fset, memo: map[*ast.FuncLit]Verdict{}, holds: map[*types.Var]Verdict{}, funcs: map[*types.Func]Verdict{}}
	for _, file := range files {
		if f.isTestPos(file.Pos()) {
			f.files = append(f.files, file)
		}
	}
	f.decls = match.FuncDecls(info, f.files)
	return f
}

// Enclosing returns whose code the function around a node is, given the
// node's enclosing nodes, outermost first: Handed when any function
// literal around it is handed to the code under test, or when the
// function of the test files it is in is only ever handed over or called
// from code handed over (a handler declared as a function); else Unknown
// when the fate of one is unknown; else Own.
func (f *Finder) Enclosing(stack []ast.Node) Verdict {
	return f.enclosing(stack, 0)
}

func (f *Finder) enclosing(stack []ast.Node, depth int) Verdict {
	best := Verdict{Kind: Own}
	for k := 1; k < len(stack); k++ {
		lit, ok := stack[k].(*ast.FuncLit)
		if !ok {
			continue
		}
		v := f.Lit(lit, stack[:k])
		if v.Kind > best.Kind {
			best = v
		}
		if best.Kind == Handed {
			return best // the outermost literal handed over decides
		}
	}
	if len(stack) > 1 {
		// A test function is the test's own; only helpers are followed.
		if fd, ok := stack[1].(*ast.FuncDecl); ok && !match.IsTestFunc(f.info, fd) {
			if fn, ok := f.info.Defs[fd.Name].(*types.Func); ok && f.decls[fn] == fd {
				if v := f.fn(fn, depth); v.Kind > best.Kind {
					best = v
				}
			}
		}
	}
	return best
}

// fn says whose code the function fn of the test files is, from its
// uses: a call runs it where the call is, a value goes where it goes. A
// function never used in the package (a test) is Own.
func (f *Finder) fn(fn *types.Func, depth int) Verdict {
	if got, ok := f.funcs[fn]; ok {
		return got
	}
	if depth > maxDepth {
		return Verdict{Kind: Unknown, To: "a place the analysis does not follow"}
	}
	f.funcs[fn] = Verdict{Kind: Own} // a recursion adds nothing
	f.index()
	best := Verdict{Kind: Own}
	for _, u := range f.uses[fn] {
		got := f.classifyUse(u, depth+1)
		if got.Kind != Own {
			got.To = fn.Name() + ", " + got.To
		}
		if got.Kind > best.Kind {
			best = got
		}
		if best.Kind == Handed {
			break
		}
	}
	f.funcs[fn] = best
	return best
}

// Lit returns whose code lit is, given its enclosing nodes, outermost
// first.
func (f *Finder) Lit(lit *ast.FuncLit, stack []ast.Node) Verdict {
	if v, ok := f.memo[lit]; ok {
		return v
	}
	v := f.classify(lit, stack, 0)
	if v.Kind != Own && v.Lit == nil {
		v.Lit = lit
	}
	if v.Kind == Own {
		v = Verdict{Kind: Own}
	}
	f.memo[lit] = v
	return v
}

// classify says whose code the function value e is, from where it
// stands: stack holds its enclosing nodes, outermost first.
func (f *Finder) classify(e ast.Expr, stack []ast.Node, depth int) Verdict {
	if depth > maxDepth || len(stack) == 0 {
		return Verdict{Kind: Unknown, To: "a place the analysis does not follow"}
	}
	parent := stack[len(stack)-1]
	up := stack[:len(stack)-1]
	switch p := parent.(type) {
	case *ast.ParenExpr:
		return f.classify(p, up, depth)
	case *ast.CallExpr:
		if ast.Unparen(p.Fun) == e {
			return Verdict{Kind: Own} // called right here
		}
		return f.argument(p, e, up, depth)
	case *ast.SelectorExpr:
		// A method of the function's named type (h.ServeHTTP): the
		// type's own package runs it.
		if sel, ok := f.info.Selections[p]; ok && sel.Kind() != types.FieldVal {
			if fn, ok := sel.Obj().(*types.Func); ok && !f.isTestPos(fn.Pos()) {
				return Verdict{Kind: Handed, To: "the receiver of " + match.PkgFuncName(fn)}
			}
		}
		return Verdict{Kind: Unknown, To: "a selector"}
	case *ast.KeyValueExpr:
		if p.Value != e || len(up) == 0 {
			return Verdict{Kind: Unknown, To: "a map key"}
		}
		lit, ok := up[len(up)-1].(*ast.CompositeLit)
		if !ok {
			return Verdict{Kind: Unknown, To: "a composite literal"}
		}
		if key, ok := p.Key.(*ast.Ident); ok {
			if fv, ok := f.info.Uses[key].(*types.Var); ok && fv.IsField() {
				return f.field(fv, lit, depth)
			}
		}
		return f.element(lit, depth)
	case *ast.CompositeLit:
		if s, ok := under(f.info.TypeOf(p)).(*types.Struct); ok {
			for i, el := range p.Elts {
				if el == e && i < s.NumFields() {
					return f.field(s.Field(i), p, depth)
				}
			}
		}
		return f.element(p, depth)
	case *ast.AssignStmt:
		for i, r := range p.Rhs {
			if r == e && len(p.Lhs) == len(p.Rhs) {
				return f.store(p.Lhs[i], depth)
			}
		}
		return Verdict{Kind: Unknown, To: "an assignment"}
	case *ast.ValueSpec:
		for i, r := range p.Values {
			if r == e && i < len(p.Names) {
				return f.store(p.Names[i], depth)
			}
		}
		return Verdict{Kind: Unknown, To: "a declaration"}
	case *ast.BinaryExpr:
		return Verdict{Kind: Own} // compared (f != nil): not run
	case *ast.ReturnStmt:
		return f.returned(up)
	}
	return Verdict{Kind: Unknown, To: "a place the analysis does not follow"}
}

// argument classifies e, an argument of call (or the operand of a
// conversion).
func (f *Finder) argument(call *ast.CallExpr, e ast.Expr, stack []ast.Node, depth int) Verdict {
	if tv, ok := f.info.Types[call.Fun]; ok && tv.IsType() {
		// A conversion, http.HandlerFunc(func...): a function type of
		// the code under test says who calls it.
		if n := typeObj(tv.Type); n != nil && n.Pkg() != nil && !f.isTestPos(n.Pos()) {
			return Verdict{Kind: Handed, To: "a " + typeName(n)}
		}
		return f.classify(call, stack, depth)
	}
	fn := match.Callee(f.info, call)
	if fn == nil {
		if tv, ok := f.info.Types[call.Fun]; ok && tv.IsBuiltin() {
			return Verdict{Kind: Unknown, To: "a builtin"}
		}
		// A closure of the test's own (waitFor := func(cond func()
		// bool) { ... }): follow its parameter.
		if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
			if v, ok := f.info.Uses[id].(*types.Var); ok {
				f.index()
				if lit := f.lits[v]; lit != nil {
					if p := litParam(f.info, lit, call, e); p != nil {
						return f.holder(p, depth+1)
					}
				}
			}
		}
		return Verdict{Kind: Unknown, To: "a call of a function value"}
	}
	fn = fn.Origin()
	if runsOwn(fn) {
		return Verdict{Kind: Own}
	}
	if decl := f.decls[fn]; decl != nil {
		// A helper of the test files: follow the parameter.
		if p := param(f.info, decl, call, e); p != nil {
			return f.holder(p, depth+1)
		}
		return Verdict{Kind: Unknown, To: "an argument of " + match.PkgFuncName(fn)}
	}
	if f.isTestPos(fn.Pos()) || takesTB(fn) {
		// A test helper the analysis cannot read (another package's
		// test file, a test utility package): it may run the literal
		// itself or hand it on.
		return Verdict{Kind: Unknown, To: "an argument of " + match.PkgFuncName(fn)}
	}
	return Verdict{Kind: Handed, To: "an argument of " + match.PkgFuncName(fn)}
}

// field classifies a literal stored in the field fv of the composite lit.
func (f *Finder) field(fv *types.Var, lit *ast.CompositeLit, depth int) Verdict {
	if !f.isTestPos(fv.Pos()) {
		return Verdict{Kind: Handed, To: "the field " + fv.Name() + " of " + f.typeString(f.info.TypeOf(lit))}
	}
	return f.holder(fv, depth+1)
}

// element classifies a literal that is an element of a slice, array or
// map literal.
func (f *Finder) element(lit *ast.CompositeLit, depth int) Verdict {
	if n := typeObj(f.info.TypeOf(lit)); n != nil && n.Pkg() != nil && !f.isTestPos(n.Pos()) {
		return Verdict{Kind: Handed, To: "an element of a " + typeName(n)}
	}
	return Verdict{Kind: Unknown, To: "an element of a " + f.typeString(f.info.TypeOf(lit))}
}

// store classifies a literal assigned to lhs.
func (f *Finder) store(lhs ast.Expr, depth int) Verdict {
	switch l := ast.Unparen(lhs).(type) {
	case *ast.Ident:
		if l.Name == "_" {
			return Verdict{Kind: Own}
		}
		obj := f.info.Defs[l]
		if obj == nil {
			obj = f.info.Uses[l]
		}
		if v, ok := obj.(*types.Var); ok {
			return f.holder(v, depth+1)
		}
	case *ast.SelectorExpr:
		if sel, ok := f.info.Selections[l]; ok && sel.Kind() == types.FieldVal {
			fv := sel.Obj().(*types.Var)
			if !f.isTestPos(fv.Pos()) {
				return Verdict{Kind: Handed, To: "the field " + fv.Name() + " of " + f.typeString(sel.Recv())}
			}
			return f.holder(fv, depth+1)
		}
		if v, ok := f.info.Uses[l.Sel].(*types.Var); ok {
			if !f.isTestPos(v.Pos()) {
				return Verdict{Kind: Handed, To: "the variable " + l.Sel.Name + " of the code under test"}
			}
			return f.holder(v, depth+1)
		}
	}
	return Verdict{Kind: Unknown, To: "an assignment the analysis does not follow"}
}

// returned classifies a literal returned by the function around it:
// stack holds the return statement's enclosing nodes.
func (f *Finder) returned(stack []ast.Node) Verdict {
	for k := len(stack) - 1; k >= 0; k-- {
		ft := match.FuncType(stack[k])
		if ft == nil {
			continue
		}
		if ft.Results != nil && len(ft.Results.List) > 0 {
			if n := typeObj(f.info.TypeOf(ft.Results.List[0].Type)); n != nil && n.Pkg() != nil && !f.isTestPos(n.Pos()) {
				return Verdict{Kind: Handed, To: "a returned " + typeName(n)}
			}
		}
		break
	}
	return Verdict{Kind: Unknown, To: "a function result"}
}

// holder classifies a function value held by v (a local variable, a
// parameter of a test helper, a field of a test type): Handed when any
// use hands it over, else Unknown when any use is unknown, else Own.
func (f *Finder) holder(v *types.Var, depth int) Verdict {
	if depth > maxDepth {
		return Verdict{Kind: Unknown, To: "a place the analysis does not follow"}
	}
	if got, ok := f.holds[v]; ok {
		return got
	}
	f.holds[v] = Verdict{Kind: Own} // a cycle adds nothing
	f.index()
	best := Verdict{Kind: Own}
	for _, u := range f.uses[v] {
		got := f.classifyUse(u, depth)
		if got.Kind > best.Kind {
			best = got
		}
		if best.Kind == Handed {
			break
		}
	}
	f.holds[v] = best
	return best
}

// classifyUse classifies one use of a function value: a call runs it as the code
// around the call, any other use sends it where it goes.
func (f *Finder) classifyUse(u use, depth int) Verdict {
	if call, ok := u.stack[len(u.stack)-1].(*ast.CallExpr); ok && ast.Unparen(call.Fun) == u.expr {
		return f.enclosing(u.stack, depth+1)
	}
	return f.classify(u.expr, u.stack, depth)
}

// index records the uses of func-typed variables in the test files.
func (f *Finder) index() {
	if f.uses != nil {
		return
	}
	f.uses = map[types.Object][]use{}
	f.lits = map[*types.Var]*ast.FuncLit{}
	sets := map[*types.Var]int{}
	for _, file := range f.files {
		match.WithStack(file, func(n ast.Node, stack []ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, l := range as.Lhs {
					id, ok := ast.Unparen(l).(*ast.Ident)
					if !ok {
						continue
					}
					v, _ := f.info.Defs[id].(*types.Var)
					if v == nil {
						v, _ = f.info.Uses[id].(*types.Var)
					}
					if v == nil {
						continue
					}
					sets[v]++
					if lit, ok := ast.Unparen(as.Rhs[i]).(*ast.FuncLit); ok {
						f.lits[v] = lit
					}
				}
			}
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			var obj types.Object
			switch o := f.info.Uses[id].(type) {
			case *types.Var:
				if isFunc(o.Type()) {
					obj = o
				}
			case *types.Func:
				if f.decls[o.Origin()] != nil {
					obj = o.Origin()
				}
			}
			if obj == nil || len(stack) == 0 {
				return true
			}
			var expr ast.Expr = id
			if sel, ok := stack[len(stack)-1].(*ast.SelectorExpr); ok && sel.Sel == id {
				expr, stack = sel, stack[:len(stack)-1]
			} else if kv, ok := stack[len(stack)-1].(*ast.KeyValueExpr); ok && kv.Key == id {
				return true // a key of a composite literal: stores, does not read
			}
			if len(stack) == 0 || assigned(stack[len(stack)-1], expr) {
				return true
			}
			f.uses[obj] = append(f.uses[obj], use{expr: expr, stack: append([]ast.Node(nil), stack...)})
			return true
		})
	}
	for v := range f.lits {
		if sets[v] != 1 {
			delete(f.lits, v) // set again: which literal a call runs is not known
		}
	}
}

// assigned reports whether e is on the left of the assignment parent.
func assigned(parent ast.Node, e ast.Expr) bool {
	as, ok := parent.(*ast.AssignStmt)
	if !ok {
		return false
	}
	for _, l := range as.Lhs {
		if l == e {
			return true
		}
	}
	return false
}

// runsOwn reports whether fn runs a function it is given as the test's
// own code: the testing package (t.Run, t.Cleanup, b.Run, f.Fuzz),
// synctest, the goroutine starters sync.WaitGroup.Go and errgroup's Go,
// sync.Once, and the assertions of testify (Eventually's condition,
// Panics) and gomega (Eventually, Consistently).
func runsOwn(fn *types.Func) bool {
	if fn.Pkg() == nil {
		return false
	}
	path := fn.Pkg().Path()
	switch path {
	case "testing", "testing/synctest":
		return true
	case "sync":
		return fn.Name() == "Go" || fn.Name() == "Do" || strings.HasPrefix(fn.Name(), "Once")
	case "golang.org/x/sync/errgroup":
		return fn.Name() == "Go" || fn.Name() == "TryGo"
	case "github.com/onsi/gomega":
		return true // Eventually(func() ...), Consistently
	}
	return strings.HasSuffix(path, "/testify/assert") || strings.HasSuffix(path, "/testify/require")
}

// takesTB reports whether fn has a parameter of type *testing.T, B, F or
// testing.TB: a test helper.
func takesTB(fn *types.Func) bool {
	params := fn.Type().(*types.Signature).Params()
	for i := 0; i < params.Len(); i++ {
		if match.IsNamed(params.At(i).Type(), "testing", "T", "B", "F", "TB") {
			return true
		}
	}
	return false
}

// param returns the parameter of decl that receives the argument e of
// call, or nil.
func param(info *types.Info, decl *ast.FuncDecl, call *ast.CallExpr, e ast.Expr) *types.Var {
	var params []*types.Var
	for _, field := range decl.Type.Params.List {
		for _, name := range field.Names {
			v, _ := info.Defs[name].(*types.Var)
			params = append(params, v)
		}
		if len(field.Names) == 0 {
			params = append(params, nil)
		}
	}
	for i, a := range call.Args {
		if a != e {
			continue
		}
		if i >= len(params) {
			i = len(params) - 1 // variadic
		}
		if i < 0 || call.Ellipsis.IsValid() {
			return nil
		}
		return params[i]
	}
	return nil
}

// litParam returns the parameter of lit that receives the argument e of
// call, or nil.
func litParam(info *types.Info, lit *ast.FuncLit, call *ast.CallExpr, e ast.Expr) *types.Var {
	return param(info, &ast.FuncDecl{Type: lit.Type}, call, e)
}

// isTestPos reports whether pos is in a _test.go file.
func (f *Finder) isTestPos(pos token.Pos) bool {
	file := f.fset.File(pos)
	return file != nil && strings.HasSuffix(file.Name(), "_test.go")
}

func (f *Finder) typeString(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string { return p.Name() })
}

// typeObj returns the name of the defined type or alias t is, or that
// t points to, or nil. An alias of a function type (type Handler =
// func(Ctx) error) names its package as well as a defined type does.
func typeObj(t types.Type) *types.TypeName {
	if t == nil {
		return nil
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch t := t.(type) {
	case *types.Alias:
		return t.Obj()
	case *types.Named:
		return t.Obj()
	}
	return nil
}

func typeName(obj *types.TypeName) string {
	if obj.Pkg() == nil {
		return obj.Name()
	}
	return obj.Pkg().Name() + "." + obj.Name()
}

func under(t types.Type) types.Type {
	if t == nil {
		return nil
	}
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	return t.Underlying()
}

func isFunc(t types.Type) bool {
	_, ok := under(t).(*types.Signature)
	return ok
}
