// Package match holds small matchers over type-checked Go syntax that
// unflake's rules share: which function a call calls, constant values,
// side-effect-free expressions, the variables an expression reads and
// whether a statement may change them, and time.Duration values built as
// decorated (dst) syntax.
//
// Everything here answers questions through go/types, never by name: a
// local function called Sleep is not time.Sleep, and time.Sleep imported
// under an alias still is.
package match

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/rule"
)

// Callee returns the function or method that call statically names, or nil
// when call is a conversion, a builtin call, or a call of a function value.
func Callee(info *types.Info, call *ast.CallExpr) *types.Func {
	return FuncOf(info, call.Fun)
}

// FuncOf returns the function or method the expression e names (f, pkg.F,
// x.M, f[T]), or nil.
func FuncOf(info *types.Info, e ast.Expr) *types.Func {
	e = ast.Unparen(e)
	// A generic function with explicit type arguments: f[T].
	switch ix := e.(type) {
	case *ast.IndexExpr:
		e = ix.X
	case *ast.IndexListExpr:
		e = ix.X
	}
	var id *ast.Ident
	switch f := e.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return nil
	}
	fn, _ := info.Uses[id].(*types.Func)
	return fn
}

// IsPkgFunc reports whether call calls the package-level function of the
// package with import path pkgPath whose name is one of names.
func IsPkgFunc(info *types.Info, call *ast.CallExpr, pkgPath string, names ...string) bool {
	fn := Callee(info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != pkgPath {
		return false
	}
	if fn.Type().(*types.Signature).Recv() != nil {
		return false
	}
	return oneOf(fn.Name(), names)
}

// IsMethod reports whether call calls a method declared in the package with
// import path pkgPath whose name is one of names. For pkgPath "testing" this
// matches the methods of T, B, F and TB alike (t.Errorf, tb.Fatal, ...).
func IsMethod(info *types.Info, call *ast.CallExpr, pkgPath string, names ...string) bool {
	fn := Callee(info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != pkgPath {
		return false
	}
	if fn.Type().(*types.Signature).Recv() == nil {
		return false
	}
	return oneOf(fn.Name(), names)
}

func oneOf(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}

// ConstInt returns the value of e if it is an integer constant (of any
// integer type, time.Duration included, or untyped) that fits in an int64.
func ConstInt(info *types.Info, e ast.Expr) (int64, bool) {
	tv, ok := info.Types[e]
	if !ok || tv.Value == nil {
		return 0, false
	}
	v := constant.ToInt(tv.Value)
	if v.Kind() != constant.Int {
		return 0, false
	}
	return constant.Int64Val(v)
}

// ConstDuration returns the value of e if it is a constant duration, such
// as the argument of time.Sleep(5 * time.Millisecond).
func ConstDuration(info *types.Info, e ast.Expr) (time.Duration, bool) {
	n, ok := ConstInt(info, e)
	return time.Duration(n), ok
}

// IsPure reports whether evaluating e has no side effects and gives the same
// value each time as long as the variables it reads keep their values: it
// is built from constants, identifiers, field selections and qualified
// identifiers, arithmetic and comparison operators, and conversions. Calls
// other than conversions, receives, dereferences and indexing are not pure.
func IsPure(info *types.Info, e ast.Expr) bool {
	if tv, ok := info.Types[e]; ok && tv.Value != nil {
		return true
	}
	switch e := e.(type) {
	case *ast.Ident:
		switch info.Uses[e].(type) {
		case *types.Var, *types.Const, *types.Nil:
			return true
		}
		return false
	case *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return IsPure(info, e.X)
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[e]; ok {
			return sel.Kind() == types.FieldVal && IsPure(info, e.X)
		}
		// A qualified identifier: pkg.Name.
		switch info.Uses[e.Sel].(type) {
		case *types.Var, *types.Const:
			return true
		}
		return false
	case *ast.UnaryExpr:
		switch e.Op {
		case token.ADD, token.SUB, token.XOR, token.NOT:
			return IsPure(info, e.X)
		}
		return false
	case *ast.BinaryExpr:
		return IsPure(info, e.X) && IsPure(info, e.Y)
	case *ast.CallExpr:
		if tv, ok := info.Types[e.Fun]; ok && tv.IsType() && len(e.Args) == 1 && e.Ellipsis == token.NoPos {
			return IsPure(info, e.Args[0])
		}
		return false
	}
	return false
}

// Vars returns the variables whose values e reads: for a field selection
// x.f.g that is x, for a qualified identifier pkg.V it is V.
func Vars(info *types.Info, e ast.Expr) []*types.Var {
	var vars []*types.Var
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if _, ok := info.Selections[n]; !ok {
				// A qualified identifier: the variable is the selected name.
				if v, ok := info.Uses[n.Sel].(*types.Var); ok {
					vars = append(vars, v)
				}
				return false
			}
			// A field selection: the variable is the root of X.
			return true
		case *ast.Ident:
			if v, ok := info.Uses[n].(*types.Var); ok && !v.IsField() {
				vars = append(vars, v)
			}
		}
		return true
	})
	return vars
}

// Root returns the variable an assignable expression (x, x.f, x[i], *x,
// pkg.V, and parenthesized forms) writes into, or nil.
func Root(info *types.Info, e ast.Expr) *types.Var {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			v, _ := info.ObjectOf(x).(*types.Var)
			return v
		case *ast.SelectorExpr:
			if _, ok := info.Selections[x]; !ok {
				v, _ := info.Uses[x.Sel].(*types.Var)
				return v
			}
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// Modifies returns the first node within root (func literals included) that
// may change one of vars: an assignment or increment whose target is rooted
// in it, taking its address, or calling a pointer method on it. It returns
// nil when there is none. It is syntactic and conservative for the cases it
// sees (x.f = 1 counts as changing x), but it does not see writes through
// pointers held elsewhere.
func Modifies(info *types.Info, root ast.Node, vars []*types.Var) ast.Node {
	if len(vars) == 0 {
		return nil
	}
	return ModifiesFunc(info, root, func(v *types.Var) bool {
		for _, w := range vars {
			if v == w {
				return true
			}
		}
		return false
	})
}

// ModifiesFunc is Modifies for the variables for which want returns true:
// it returns the first node within root that may change such a variable,
// or nil.
func ModifiesFunc(info *types.Info, root ast.Node, want func(*types.Var) bool) ast.Node {
	in := func(e ast.Expr) bool {
		v := Root(info, e)
		return v != nil && want(v)
	}
	var found ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if in(l) {
					found = n
				}
			}
		case *ast.IncDecStmt:
			if in(n.X) {
				found = n
			}
		case *ast.RangeStmt:
			if n.Tok == token.ASSIGN && (n.Key != nil && in(n.Key) || n.Value != nil && in(n.Value)) {
				found = n
			}
		case *ast.UnaryExpr:
			if n.Op == token.AND && in(n.X) {
				found = n
			}
		case *ast.SelectorExpr:
			if sel, ok := info.Selections[n]; ok && sel.Kind() == types.MethodVal && in(n.X) {
				if _, ptr := sel.Obj().Type().(*types.Signature).Recv().Type().(*types.Pointer); ptr {
					found = n
				}
			}
		}
		return found == nil
	})
	return found
}

// Conjuncts splits a && b && c into its operands; nil gives none.
func Conjuncts(e ast.Expr) []ast.Expr {
	if b, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && b.Op == token.LAND {
		return append(Conjuncts(b.X), Conjuncts(b.Y)...)
	}
	if e == nil {
		return nil
	}
	return []ast.Expr{e}
}

// WithStack calls f for each node of root in depth-first order with the
// nodes enclosing it, outermost first (root's stack is empty). If f returns
// false, the children of the node are skipped. The stack is reused: copy
// it to keep it.
func WithStack(root ast.Node, f func(n ast.Node, stack []ast.Node) bool) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if !f(n, stack) {
			return false
		}
		stack = append(stack, n)
		return true
	})
}

// AddDuration returns a+b and whether the sum overflows.
func AddDuration(a, b time.Duration) (time.Duration, bool) {
	s := a + b
	return s, (b > 0 && s < a) || (b < 0 && s > a)
}

// MulDuration returns d×n for d, n ≥ 0 and whether the product overflows
// (or an operand is negative).
func MulDuration(d time.Duration, n int64) (time.Duration, bool) {
	if d < 0 || n < 0 {
		return 0, true
	}
	hi, lo := bits.Mul64(uint64(d), uint64(n))
	return time.Duration(lo), hi != 0 || lo > math.MaxInt64
}

// timeUnits are the units DurationExpr and FormatDuration use, largest first.
var timeUnits = []struct {
	d    time.Duration
	name string
}{
	{time.Hour, "Hour"},
	{time.Minute, "Minute"},
	{time.Second, "Second"},
	{time.Millisecond, "Millisecond"},
	{time.Microsecond, "Microsecond"},
	{time.Nanosecond, "Nanosecond"},
}

// DurationExpr returns d as a constant expression in the largest unit that
// divides it: 10 * time.Second, 1500 * time.Millisecond, time.Minute. The
// time identifiers carry Path "time", so a restorer with import management
// writes them with the file's name for the time package.
func DurationExpr(d time.Duration) dst.Expr {
	if d == 0 {
		return &dst.BasicLit{Kind: token.INT, Value: "0"}
	}
	for _, u := range timeUnits {
		if d%u.d != 0 {
			continue
		}
		unit := &dst.Ident{Path: "time", Name: u.name}
		n := int64(d / u.d)
		if n == 1 {
			return unit
		}
		var x dst.Expr = &dst.BasicLit{Kind: token.INT, Value: strconv.FormatInt(n, 10)}
		if n < 0 {
			x = &dst.UnaryExpr{Op: token.SUB, X: &dst.BasicLit{Kind: token.INT, Value: strconv.FormatInt(-n, 10)}}
			if n == -1 {
				return &dst.UnaryExpr{Op: token.SUB, X: unit}
			}
		}
		return &dst.BinaryExpr{X: x, Op: token.MUL, Y: unit}
	}
	panic("unreachable: time.Nanosecond divides every duration")
}

// FormatDuration formats d like time.Duration.String without trailing zero
// units: "100ms", "1.5s", "1m", "1h30m".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// StripDecorations removes the comments and line breaks attached to n and
// to every node inside it, for an expression cloned into a new place.
func StripDecorations(n dst.Node) {
	dst.Inspect(n, func(n dst.Node) bool {
		if n != nil {
			d := n.Decorations()
			d.Before, d.After = dst.None, dst.None
			d.Start, d.End = nil, nil
		}
		return true
	})
}

// IsNamed reports whether t, or the type t points to, is the named type
// pkgPath.name for one of names (aliases resolved): IsNamed(t, "testing",
// "T") holds for testing.T and *testing.T.
func IsNamed(t types.Type, pkgPath string, names ...string) bool {
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	n, ok := t.(*types.Named)
	if !ok {
		return false
	}
	obj := n.Obj()
	return obj.Pkg() != nil && obj.Pkg().Path() == pkgPath && oneOf(obj.Name(), names)
}

// IsStd reports whether the import path belongs to the standard library:
// its first element has no dot (the go command's rule for module paths
// it downloads) and GOROOT has its directory. A module may still have a
// dot-less path (module shipenv, replaced by ./shipenv; red team batch
// 39, dotlessdep): its packages are not GOROOT's, and reading them as
// the standard library's would hide what they do. Without a GOROOT to
// look in, the dot alone decides.
func IsStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	if strings.Contains(first, ".") || path == "C" {
		return false
	}
	if v, ok := stdPaths.Load(path); ok {
		return v.(bool)
	}
	std := true
	if root := runtime.GOROOT(); root != "" {
		fi, err := os.Stat(filepath.Join(root, "src", filepath.FromSlash(path)))
		std = err == nil && fi.IsDir()
	}
	stdPaths.Store(path, std)
	return std
}

// stdPaths caches IsStd's answers by import path.
var stdPaths sync.Map

// PkgFuncName names fn for a message as its package name and name:
// "net.Listen", "httptest.Server.Close" for a method.
func PkgFuncName(fn *types.Func) string {
	name := fn.Name()
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil {
		t := types.Unalias(recv.Type())
		if p, ok := t.(*types.Pointer); ok {
			t = types.Unalias(p.Elem())
		}
		if n, ok := t.(*types.Named); ok {
			name = n.Obj().Name() + "." + name
		}
	}
	if fn.Pkg() != nil {
		name = fn.Pkg().Name() + "." + name
	}
	return name
}

// ConstString returns the value of e if it is a string constant (a literal
// or a named constant, resolved through the type checker).
func ConstString(info *types.Info, e ast.Expr) (string, bool) {
	tv, ok := info.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(tv.Value), true
}

// IsPackageLevel reports whether v is a package-level variable (of any
// package).
func IsPackageLevel(v *types.Var) bool {
	return v != nil && v.Pkg() != nil && v.Parent() == v.Pkg().Scope()
}

// Decls is the analysis whose result is FuncDecls of the whole package
// (Pass.AllFiles), shared by the rules that require it: read it with
// DeclsOf. Rules only read the map.
var Decls = &rule.Analysis{
	Name: "funcdecls",
	Doc:  "maps the functions and methods declared in the package to their declarations",
	Run: func(pass *rule.Pass) (any, error) {
		return FuncDecls(pass.TypesInfo, pass.AllFiles), nil
	},
}

// DeclsOf returns the result of Decls for pass, whose rule requires it.
func DeclsOf(pass *rule.Pass) map[*types.Func]*ast.FuncDecl {
	return pass.ResultOf[Decls].(map[*types.Func]*ast.FuncDecl)
}

// FuncDecls maps the functions and methods declared in files to their
// declarations.
func FuncDecls(info *types.Info, files []*ast.File) map[*types.Func]*ast.FuncDecl {
	decls := map[*types.Func]*ast.FuncDecl{}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if fn, ok := info.Defs[fd.Name].(*types.Func); ok {
					decls[fn] = fd
				}
			}
		}
	}
	return decls
}

// DeleteStmt removes stmt from the statement list of parent (a block, case
// clause or comm clause) and reports whether it was there.
func DeleteStmt(parent dst.Node, stmt dst.Stmt) bool {
	del := func(list *[]dst.Stmt) bool {
		for i, s := range *list {
			if s == stmt {
				*list = append((*list)[:i:i], (*list)[i+1:]...)
				return true
			}
		}
		return false
	}
	switch p := parent.(type) {
	case *dst.BlockStmt:
		return del(&p.List)
	case *dst.CaseClause:
		return del(&p.Body)
	case *dst.CommClause:
		return del(&p.Body)
	}
	return false
}

// DstStmtList returns a pointer to the statement list of a decorated
// block, case clause or comm clause, so a fix can splice it; nil for
// other nodes.
func DstStmtList(n dst.Node) *[]dst.Stmt {
	switch p := n.(type) {
	case *dst.BlockStmt:
		return &p.List
	case *dst.CaseClause:
		return &p.Body
	case *dst.CommClause:
		return &p.Body
	}
	return nil
}

// StmtList returns the statement list of parent (a block, case clause or
// comm clause), or nil.
func StmtList(parent ast.Node) []ast.Stmt {
	switch p := parent.(type) {
	case *ast.BlockStmt:
		return p.List
	case *ast.CaseClause:
		return p.Body
	case *ast.CommClause:
		return p.Body
	}
	return nil
}

// AdjacentComments returns the comment groups of file that lie between
// stmt and its neighbours in the statement list of parent (or parent's
// bounds): the comments a printer may attach to stmt, which go when stmt
// is deleted.
func AdjacentComments(file *ast.File, parent ast.Node, stmt ast.Stmt) []ast.Node {
	from, to := parent.Pos(), parent.End()
	list := StmtList(parent)
	for i, s := range list {
		if s != stmt {
			continue
		}
		if i > 0 {
			from = list[i-1].End()
		}
		if i+1 < len(list) {
			to = list[i+1].Pos()
		}
	}
	var out []ast.Node
	for _, g := range file.Comments {
		if from <= g.Pos() && g.End() <= to {
			out = append(out, g)
		}
	}
	return out
}

// IsAssertion reports whether the function or method name of package path
// belongs to a widely used assertion or comparison library and neither
// starts goroutines, touches a clock nor changes anything outside its
// arguments: testify's assert and require (but Eventually and Never,
// which poll on a ticker from a goroutine) and go-cmp.
func IsAssertion(path, name string) bool {
	switch path {
	case "github.com/stretchr/testify/assert", "github.com/stretchr/testify/require":
		return !strings.HasPrefix(name, "Eventually") && !strings.HasPrefix(name, "Never")
	case "github.com/google/go-cmp/cmp", "github.com/google/go-cmp/cmp/cmpopts":
		return true
	}
	return false
}

// IsTestFunc reports whether fd is a top-level test, benchmark or fuzz
// target: func TestX(t *testing.T), BenchmarkX(b *testing.B),
// FuzzX(f *testing.F), named as the go command requires.
func IsTestFunc(info *types.Info, fd *ast.FuncDecl) bool {
	if fd.Recv != nil || fd.Type.Params == nil || len(fd.Type.Params.List) != 1 || len(fd.Type.Params.List[0].Names) > 1 {
		return false
	}
	t := info.TypeOf(fd.Type.Params.List[0].Type)
	for _, k := range []struct{ prefix, typ string }{{"Test", "T"}, {"Benchmark", "B"}, {"Fuzz", "F"}} {
		if hasTestPrefix(fd.Name.Name, k.prefix) && IsNamed(t, "testing", k.typ) {
			_, ptr := types.Unalias(t).(*types.Pointer)
			return ptr
		}
	}
	return false
}

// hasTestPrefix reports whether name is prefix followed by nothing or by a
// character that is not a lower-case letter, as the go command requires.
func hasTestPrefix(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	rest := name[len(prefix):]
	return rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z')
}

// InGoroutine reports whether the innermost function literal among stack
// (enclosing nodes, outermost first) is started as a goroutine: go
// func() { ... }(), wg.Go(func() { ... }) or errgroup's g.Go(func() error
// { ... }). A node outside function literals, or in one the code calls or
// passes elsewhere, is not.
func InGoroutine(info *types.Info, stack []ast.Node) bool {
	for k := len(stack) - 1; k >= 1; k-- {
		lit, ok := stack[k].(*ast.FuncLit)
		if !ok {
			continue
		}
		call, ok := stack[k-1].(*ast.CallExpr)
		if !ok {
			return false
		}
		if ast.Unparen(call.Fun) == lit {
			if k < 2 {
				return false
			}
			_, isGo := stack[k-2].(*ast.GoStmt)
			return isGo
		}
		return IsMethod(info, call, "sync", "Go") || IsMethod(info, call, "golang.org/x/sync/errgroup", "Go")
	}
	return false
}

// IsBuiltin reports whether fun names one of the builtin functions names
// (resolved through the type checker, so a local len is not the builtin).
func IsBuiltin(info *types.Info, fun ast.Expr, names ...string) bool {
	id, ok := ast.Unparen(fun).(*ast.Ident)
	if !ok {
		return false
	}
	b, ok := info.Uses[id].(*types.Builtin)
	return ok && slices.Contains(names, b.Name())
}

// ImportName returns the name under which file imports the package path
// (its alias, or name, the package's own name, when it has none) and how
// many times the file imports it.
func ImportName(file *ast.File, path, name string) (string, int) {
	n := 0
	for _, imp := range file.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err != nil || p != path {
			continue
		}
		n++
		if imp.Name != nil {
			name = imp.Name.Name
		}
	}
	return name, n
}

// Denotes reports whether name, looked up at pos from scope s, is the
// import of package path.
func Denotes(s *types.Scope, pos token.Pos, name, path string) bool {
	_, obj := s.LookupParent(name, pos)
	pn, ok := obj.(*types.PkgName)
	return ok && pn.Imported().Path() == path
}

// FreshName returns base, or base2, base3, ...: the first that used does
// not hold and that names nothing at pos from scope s (a nil s is not
// consulted), so declaring it there shadows nothing and captures no use.
func FreshName(s *types.Scope, pos token.Pos, used map[string]bool, base string) string {
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name += strconv.Itoa(i)
		}
		if used[name] {
			continue
		}
		if s != nil {
			if _, obj := s.LookupParent(name, pos); obj != nil {
				continue
			}
		}
		return name
	}
}

// Idents returns the names of the identifiers in the nodes.
func Idents(nodes ...ast.Node) map[string]bool {
	used := map[string]bool{}
	for _, root := range nodes {
		ast.Inspect(root, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				used[id.Name] = true
			}
			return true
		})
	}
	return used
}

// PollWait reports whether stmt, a wait whose parent is the last node of
// stack (enclosing nodes, outermost first), is a deadline poll's own
// rather than a guess of how long something takes: the interval between
// two looks, as the post statement of
//
//	for deadline := ...; time.Now().Before(deadline); time.Sleep(d) {
//
// or, right after such a loop, a sleep until a point in time,
// time.Sleep(time.Until(t)) or time.Sleep(t.Sub(time.Now())): the rest of
// a window the poll keeps. These are the shapes waitfor writes; a rule
// that reports waits leaves them alone, so a second run finds nothing.
func PollWait(info *types.Info, stmt ast.Stmt, stack []ast.Node) bool {
	if len(stack) == 0 {
		return false
	}
	parent := stack[len(stack)-1]
	if loop, ok := parent.(*ast.ForStmt); ok {
		return loop.Post == stmt && deadlinePoll(info, loop)
	}
	es, ok := stmt.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := ast.Unparen(es.X).(*ast.CallExpr)
	if !ok || len(call.Args) != 1 || !IsPkgFunc(info, call, "time", "Sleep") {
		return false
	}
	until, ok := ast.Unparen(call.Args[0]).(*ast.CallExpr)
	if !ok {
		return false
	}
	if !IsPkgFunc(info, until, "time", "Until") {
		sub, isSel := ast.Unparen(until.Fun).(*ast.SelectorExpr)
		if !isSel || sub.Sel.Name != "Sub" || len(until.Args) != 1 || !isTimeNow(info, until.Args[0]) || !IsMethod(info, until, "time", "Sub") {
			return false
		}
	}
	list := StmtList(parent)
	for i, s := range list {
		if s == stmt {
			loop, ok := list[max(i-1, 0)].(*ast.ForStmt)
			return i > 0 && ok && deadlinePoll(info, loop)
		}
	}
	return false
}

// deadlinePoll reports whether loop is `for ...; time.Now().Before(x);
// time.Sleep(d) { ... }`.
func deadlinePoll(info *types.Info, loop *ast.ForStmt) bool {
	cond, ok := ast.Unparen(loop.Cond).(*ast.CallExpr)
	if !ok || len(cond.Args) != 1 || !IsMethod(info, cond, "time", "Before") {
		return false
	}
	sel, ok := ast.Unparen(cond.Fun).(*ast.SelectorExpr)
	if !ok || !isTimeNow(info, sel.X) {
		return false
	}
	post, ok := loop.Post.(*ast.ExprStmt)
	if !ok {
		return false
	}
	sleep, ok := ast.Unparen(post.X).(*ast.CallExpr)
	return ok && IsPkgFunc(info, sleep, "time", "Sleep")
}

func isTimeNow(info *types.Info, e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	return ok && len(call.Args) == 0 && IsPkgFunc(info, call, "time", "Now")
}

// IsConversion reports whether call converts a value to a type
// (time.Duration(n), []byte(s)) rather than calling a function.
func IsConversion(info *types.Info, call *ast.CallExpr) bool {
	tv, ok := info.Types[call.Fun]
	return ok && tv.IsType()
}

// ProcessStart reports whether f starts a process, with its name: an
// exec.Cmd's Start, Run, Output or CombinedOutput, os.StartProcess, or
// syscall's (or x/sys/unix's) ForkExec, StartProcess or Exec.
func ProcessStart(f *types.Func) (string, bool) {
	if f.Pkg() == nil {
		return "", false
	}
	switch path := f.Pkg().Path(); path {
	case "os/exec":
		switch f.Name() {
		case "Start", "Run", "Output", "CombinedOutput":
			return "exec.Cmd." + f.Name(), true
		}
	case "os":
		if f.Name() == "StartProcess" {
			return "os.StartProcess", true
		}
	case "syscall", "golang.org/x/sys/unix":
		switch f.Name() {
		case "ForkExec", "StartProcess", "Exec":
			return path + "." + f.Name(), true
		}
	}
	return "", false
}

// FuncType returns the type of n when n is a function declaration or
// literal, or nil: what a walk up a stack of enclosing nodes asks of each
// to find the parameters in scope.
func FuncType(n ast.Node) *ast.FuncType {
	switch fn := n.(type) {
	case *ast.FuncDecl:
		return fn.Type
	case *ast.FuncLit:
		return fn.Type
	}
	return nil
}
