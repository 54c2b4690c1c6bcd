package waitfor

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"
	"unicode"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
)

// A group is what a wait is followed by: statements that read state (x :=
// read()) and checks of it, up to the first statement that is neither.
type group struct {
	c    *checker
	wait *wait
	fn   ast.Node // the function the wait is in

	stmts  []ast.Stmt // the defines and checks, in order
	checks []*check
}

// A check is one statement that fails the test unless a condition holds.
type check struct {
	stmt ast.Stmt
	// An if statement that fails the test: if init; fails { t.Fatal() }.
	init  *ast.AssignStmt
	fails ast.Expr
	// A testify assertion: require.Equal(t, 2, n), or a.Equal(2, n) on
	// an *assert.Assertions or *require.Assertions.
	assert *ast.CallExpr
	fn     *types.Func
	args   []ast.Expr // the assertion's arguments after the testing.T
}

func (g *group) noun() string {
	if len(g.checks) == 1 {
		return "check"
	}
	return fmt.Sprintf("%d checks", len(g.checks))
}

// testifyPaths are the assertion packages whose assertions count as checks.
const (
	assertPath  = "github.com/stretchr/testify/assert"
	requirePath = "github.com/stretchr/testify/require"
)

// notAssertions are testify functions that are not checks of a state: they
// poll on their own, run a function, or fail unconditionally.
var notAssertions = []string{"Eventually", "Never", "Panics", "NotPanics", "Fail", "Condition", "WithinDuration", "WithinRange", "CallerInfo", "New", "ObjectsAre", "HTTP"}

// group returns the defines and checks that start list, or nil when list
// does not start with a check of state (after defines).
func (c *checker) group(w *wait, fn ast.Node, list []ast.Stmt) *group {
	g := &group{c: c, wait: w, fn: fn}
	for _, s := range list {
		if a, ok := s.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
			g.stmts = append(g.stmts, s)
			continue
		}
		ck := c.checkOf(s)
		if ck == nil {
			break
		}
		g.stmts = append(g.stmts, s)
		g.checks = append(g.checks, ck)
	}
	// Defines after the last check are not the group's.
	for len(g.stmts) > 0 {
		if _, ok := g.stmts[len(g.stmts)-1].(*ast.AssignStmt); !ok {
			break
		}
		g.stmts = g.stmts[:len(g.stmts)-1]
	}
	if len(g.checks) == 0 || !g.readsState() {
		return nil
	}
	return g
}

// checkOf returns the check s is, or nil.
func (c *checker) checkOf(s ast.Stmt) *check {
	switch s := s.(type) {
	case *ast.IfStmt:
		if s.Else != nil || len(s.Body.List) == 0 || !c.failsOnly(s.Body.List) {
			return nil
		}
		ck := &check{stmt: s, fails: s.Cond}
		if s.Init != nil {
			a, ok := s.Init.(*ast.AssignStmt)
			if !ok || a.Tok != token.DEFINE {
				return nil
			}
			ck.init = a
		}
		return ck
	case *ast.ExprStmt:
		call, ok := ast.Unparen(s.X).(*ast.CallExpr)
		if !ok {
			return nil
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil || !c.isAssertion(fn) {
			return nil
		}
		ck := &check{stmt: s, assert: call, fn: fn, args: call.Args}
		if sig := fn.Type().(*types.Signature); sig.Recv() == nil {
			if len(call.Args) == 0 {
				return nil
			}
			ck.args = call.Args[1:]
		}
		return ck
	}
	return nil
}

// isAssertion reports whether fn is a testify assertion of a state.
func (c *checker) isAssertion(fn *types.Func) bool {
	path := fn.Pkg().Path()
	if path != assertPath && path != requirePath {
		return false
	}
	sig := fn.Type().(*types.Signature)
	if recv := sig.Recv(); recv != nil && !match.IsNamed(recv.Type(), path, "Assertions") {
		return false
	}
	for _, p := range notAssertions {
		if strings.HasPrefix(fn.Name(), p) {
			return false
		}
	}
	return true
}

// A directCond is a testify assertion's condition written in Go: x (op
// ""), !x ("!"), x == y or x != y (y nil: nil), len(x) == y ("len").
type directCond struct {
	op   string
	x, y ast.Expr
}

// direct returns the condition of the assertion ck in plain Go, where
// that is exactly testify's: True, False, NoError, Error, Equal and
// NotEqual of two values of one basic type (testify compares with
// ObjectsAreEqual, which for those is ==), Len of a slice, map, string,
// array or channel. Otherwise nil: the poll asks assert itself.
func (c *checker) direct(ck *check) *directCond {
	args := ck.args
	switch name := ck.fn.Name(); {
	case name == "True" && len(args) > 0:
		return &directCond{x: args[0]}
	case name == "False" && len(args) > 0:
		return &directCond{op: "!", x: args[0]}
	case name == "NoError" && len(args) > 0:
		return &directCond{op: "==", x: args[0]}
	case name == "Error" && len(args) > 0:
		return &directCond{op: "!=", x: args[0]}
	case (name == "Equal" || name == "NotEqual") && len(args) > 1:
		a, b := c.info.TypeOf(args[0]), c.info.TypeOf(args[1])
		ba, okA := a.(*types.Basic)
		if !okA || !types.Identical(a, b) || ba.Info()&types.IsUntyped != 0 {
			return nil
		}
		op := "=="
		if name == "NotEqual" {
			op = "!="
		}
		return &directCond{op: op, x: args[1], y: args[0]}
	case name == "Len" && len(args) > 1:
		t := c.info.TypeOf(args[0])
		if t == nil {
			return nil
		}
		switch t.Underlying().(type) {
		case *types.Slice, *types.Map, *types.Array, *types.Chan:
		case *types.Basic:
			if t.Underlying().(*types.Basic).Info()&types.IsString == 0 {
				return nil
			}
		default:
			return nil
		}
		if n := c.info.TypeOf(args[1]); n == nil || !types.Identical(n.Underlying(), types.Typ[types.Int]) && !isUntypedInt(n) {
			return nil
		}
		return &directCond{op: "len", x: args[0], y: args[1]}
	}
	return nil
}

func isUntypedInt(t types.Type) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Kind() == types.UntypedInt
}

// canAsk reports whether the poll can ask assert's assertion name through
// a collector: the package reaches testify's assert, and it has
// assert.CollectT (testify v1.8.3) and the assertion.
func (c *checker) canAsk(name string) bool {
	pkg := c.assertPkg()
	if pkg == nil {
		return false
	}
	if pkg.Scope().Lookup(name) != nil {
		return true
	}
	// Found through require's export data, assert's scope holds only what
	// require's API names; require is generated from assert, one function
	// for each.
	req := c.importOf(c.pass.Pkg, requirePath)
	return req != nil && req.Scope().Lookup(name) != nil
}

// assertPkg returns testify's assert package as this package sees it, or
// nil: imported directly, or named by require's API, whose
// EventuallyWithT takes a func(*assert.CollectT). Either way CollectT
// exists.
func (c *checker) assertPkg() *types.Package {
	if a := c.importOf(c.pass.Pkg, assertPath); a != nil {
		if a.Scope().Lookup("CollectT") != nil {
			return a
		}
		return nil
	}
	req := c.importOf(c.pass.Pkg, requirePath)
	if req == nil {
		return nil
	}
	fn, ok := req.Scope().Lookup("EventuallyWithT").(*types.Func)
	if !ok {
		return nil
	}
	params := fn.Type().(*types.Signature).Params()
	for i := 0; i < params.Len(); i++ {
		cond, ok := params.At(i).Type().Underlying().(*types.Signature)
		if !ok || cond.Params().Len() != 1 {
			continue
		}
		if ptr, ok := cond.Params().At(0).Type().(*types.Pointer); ok {
			if n, ok := types.Unalias(ptr.Elem()).(*types.Named); ok && n.Obj().Name() == "CollectT" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == assertPath {
				return n.Obj().Pkg()
			}
		}
	}
	return nil
}

// importOf returns the package with path that p imports directly, or nil.
func (c *checker) importOf(p *types.Package, path string) *types.Package {
	for _, imp := range p.Imports() {
		if imp.Path() == path {
			return imp
		}
	}
	return nil
}

// failingMethods are the testing methods a check's body calls to fail.
var failingMethods = []string{"Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow"}

// failsOnly reports whether the statements fail the test: at least one
// calls a failing method of testing (or log.Fatal, panic), and the others
// only log or return.
func (c *checker) failsOnly(list []ast.Stmt) bool {
	fails := false
	for _, s := range list {
		switch s := s.(type) {
		case *ast.ReturnStmt:
			continue
		case *ast.ExprStmt:
			call, ok := ast.Unparen(s.X).(*ast.CallExpr)
			if !ok {
				return false
			}
			switch {
			case match.IsMethod(c.info, call, "testing", failingMethods...),
				match.IsPkgFunc(c.info, call, "log", "Fatal", "Fatalf", "Fatalln", "Panic", "Panicf", "Panicln"),
				match.IsBuiltin(c.info, call.Fun, "panic"):
				fails = true
			case match.IsMethod(c.info, call, "testing", "Log", "Logf", "Helper"):
			default:
				if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() != nil && (fn.Pkg().Path() == requirePath || fn.Pkg().Path() == assertPath) && strings.HasPrefix(fn.Name(), "Fail") {
					fails = true
					continue
				}
				return false
			}
		default:
			return false
		}
	}
	return fails
}

// exprs returns the expressions the poll evaluates again: the defines'
// right-hand sides, the ifs' inits and conditions, the assertions'
// arguments.
func (g *group) exprs() []ast.Expr {
	var out []ast.Expr
	for _, s := range g.stmts {
		if a, ok := s.(*ast.AssignStmt); ok {
			out = append(out, a.Rhs...)
		}
	}
	for _, ck := range g.checks {
		if ck.init != nil {
			out = append(out, ck.init.Rhs...)
		}
		if ck.fails != nil {
			out = append(out, ck.fails)
		}
		out = append(out, ck.args...)
	}
	return out
}

// readsState reports whether the group reads something another goroutine
// may change: a call, a field, a package-level variable, a dereference.
// Checks of locals alone (err from before the wait) are not waits for a
// state.
func (g *group) readsState() bool {
	found := false
	for _, e := range g.exprs() {
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if tv, ok := g.c.info.Types[n.Fun]; !ok || !tv.IsType() && !tv.IsBuiltin() {
					found = true
				}
			case *ast.SelectorExpr:
				if _, ok := g.c.info.Uses[n.Sel].(*types.Var); ok {
					found = true
				}
			case *ast.StarExpr:
				found = true
			case *ast.Ident:
				if v, ok := g.c.info.Uses[n].(*types.Var); ok && match.IsPackageLevel(v) {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// notPollable returns why the group's expressions cannot be evaluated
// again and again, or "".
func (g *group) notPollable() string {
	for _, s := range g.stmts {
		if a, ok := s.(*ast.AssignStmt); ok {
			if why := g.defineWhy(a); why != "" {
				return why
			}
		}
	}
	// guards are the lengths the checks so far require (len(x) == 2):
	// the poll's conditions are joined with &&, in order, so a later
	// condition may index x below that length.
	guards := map[string]int64{}
	for _, ck := range g.checks {
		if ck.assert != nil && g.c.direct(ck) == nil && !g.c.canAsk(ck.fn.Name()) {
			return "the poll would ask testify's assert." + ck.fn.Name() + " through assert.CollectT, which this package cannot reach (it needs testify v1.8.3 and an import of assert)"
		}
		if ck.init != nil {
			if why := g.defineWhy(ck.init); why != "" {
				return why
			}
		}
		for _, e := range append([]ast.Expr{ck.fails}, ck.args...) {
			if e == nil {
				continue
			}
			if why := g.readWhy(e, guards); why != "" {
				return why
			}
		}
		if x, n, ok := g.c.lenGuard(ck); ok {
			guards[x] = max(guards[x], n)
		}
	}
	return ""
}

// lenGuard returns the length of x the check requires to pass, when it
// requires one: if len(x) != n, if len(x) < n, if len(x) == 0, if
// len(x) <= n-1, testify's Len(t, x, n) and NotEmpty(t, x).
func (c *checker) lenGuard(ck *check) (string, int64, bool) {
	lenOf := func(e ast.Expr) (string, bool) {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok || len(call.Args) != 1 || !match.IsBuiltin(c.info, call.Fun, "len") {
			return "", false
		}
		return types.ExprString(call.Args[0]), true
	}
	if ck.fails != nil && ck.init == nil {
		b, ok := ast.Unparen(ck.fails).(*ast.BinaryExpr)
		if !ok {
			return "", 0, false
		}
		x, ok := lenOf(b.X)
		n, isConst := match.ConstInt(c.info, b.Y)
		if !ok || !isConst {
			return "", 0, false
		}
		switch b.Op {
		case token.NEQ, token.LSS:
			return x, n, true
		case token.LEQ:
			return x, n + 1, true
		case token.EQL:
			if n == 0 {
				return x, 1, true
			}
		}
		return "", 0, false
	}
	if ck.assert != nil {
		switch {
		case ck.fn.Name() == "Len" && len(ck.args) > 1:
			if n, ok := match.ConstInt(c.info, ck.args[1]); ok {
				return types.ExprString(ck.args[0]), n, true
			}
		case ck.fn.Name() == "NotEmpty" && len(ck.args) > 0:
			return types.ExprString(ck.args[0]), 1, true
		}
	}
	return "", 0, false
}

// defineWhy returns why the define a cannot be evaluated again, or "".
// Defines run before any condition of the poll: no guard applies.
func (g *group) defineWhy(a *ast.AssignStmt) string {
	if len(a.Rhs) == 1 && len(a.Lhs) == 2 {
		if ta, ok := ast.Unparen(a.Rhs[0]).(*ast.TypeAssertExpr); ok {
			return g.readWhy(ta.X, nil) // v, ok := x.(T) cannot panic
		}
		if ix, ok := ast.Unparen(a.Rhs[0]).(*ast.IndexExpr); ok {
			if why := g.readWhy(ix.X, nil); why != "" {
				return why
			}
			return g.readWhy(ix.Index, nil)
		}
	}
	for _, e := range a.Rhs {
		if why := g.readWhy(e, nil); why != "" {
			return why
		}
	}
	return ""
}

// readWhy returns why evaluating e again and again, before the awaited
// state has arrived, could do something that evaluating it once after the
// wait does not (change state, consume a value, panic), or "". guards
// are the lengths earlier conditions of the poll require.
func (g *group) readWhy(e ast.Expr, guards map[string]int64) string {
	c := g.c
	why := ""
	ast.Inspect(e, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			why = "a check holds a function literal"
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				why = fmt.Sprintf("a check receives from a channel (%s), which a poll would repeat", types.ExprString(n))
			}
		case *ast.IndexExpr:
			t := c.info.TypeOf(n.X)
			if t == nil {
				break
			}
			if tv, ok := c.info.Types[n.X]; ok && tv.IsType() {
				break // a generic instantiation
			}
			switch t.Underlying().(type) {
			case *types.Map, *types.Signature:
				break
			case *types.Array:
				if _, ok := match.ConstInt(c.info, n.Index); !ok {
					why = c.indexWhy(n)
				}
			default:
				if !g.safeIndex(n, guards) {
					why = c.indexWhy(n)
				}
			}
		case *ast.SliceExpr:
			why = fmt.Sprintf("a check slices %s, which may be shorter before the state arrives: a poll could panic", types.ExprString(n.X))
		case *ast.TypeAssertExpr:
			why = fmt.Sprintf("a check asserts the type of %s, which may panic before the state arrives", types.ExprString(n.X))
		case *ast.SelectorExpr:
			why = g.nilWhy(n.X, e)
		case *ast.StarExpr:
			why = g.nilWhy(n.X, e)
		case *ast.CallExpr:
			why = c.callWhy(n)
		}
		return why == ""
	})
	return why
}

// nilWhy says why reading through x, a pointer a call returns
// (c.Leader().ID, *p.Current()), may panic when a poll evaluates it
// before the state arrives: the pointer is nil until then (a leader not
// yet elected), which the check after the wait never saw (red team batch
// 21, electnil). "" when x is no call returning a pointer, or the check
// (within) tests it against nil first.
func (g *group) nilWhy(x, within ast.Expr) string {
	call, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok {
		return ""
	}
	if _, ok := types.Unalias(g.c.info.TypeOf(call)).Underlying().(*types.Pointer); !ok {
		return ""
	}
	text := types.ExprString(call)
	guarded := false
	for _, e := range append(g.exprs(), within) {
		ast.Inspect(e, func(n ast.Node) bool {
			if b, ok := n.(*ast.BinaryExpr); ok && (b.Op == token.NEQ || b.Op == token.EQL) {
				for _, pair := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
					if id, ok := ast.Unparen(pair[1]).(*ast.Ident); ok && id.Name == "nil" && types.ExprString(pair[0]) == text {
						guarded = true
					}
				}
			}
			return !guarded
		})
	}
	if guarded {
		return ""
	}
	return fmt.Sprintf("a check reads through the pointer %s returns, which may be nil before the state arrives: a poll could panic", text)
}

// safeIndex reports whether x[i] can be evaluated in the poll without a
// panic the check after the wait would not have: an earlier condition
// requires len(x) > i (i constant), or x is a local the test set before
// the wait and nothing changes while the poll runs (no function literal
// writes it, its address is not taken).
func (g *group) safeIndex(n *ast.IndexExpr, guards map[string]int64) bool {
	if i, ok := match.ConstInt(g.c.info, n.Index); ok && i >= 0 && guards[types.ExprString(n.X)] > i {
		return true
	}
	id, ok := ast.Unparen(n.X).(*ast.Ident)
	if !ok || !match.IsPure(g.c.info, n.Index) {
		return false
	}
	v, ok := g.c.info.Uses[id].(*types.Var)
	if !ok || match.IsPackageLevel(v) || v.Pos() >= g.wait.stmt.Pos() {
		return false
	}
	return !g.changesApart(v)
}

// changesApart reports whether local v may change while the test polls:
// a function literal of the function writes it, or its address is taken.
func (g *group) changesApart(v *types.Var) bool {
	info := g.c.info
	changes := false
	match.WithStack(g.fn, func(n ast.Node, stack []ast.Node) bool {
		if changes {
			return false
		}
		inLit := false
		for _, s := range stack {
			if _, ok := s.(*ast.FuncLit); ok {
				inLit = true
			}
		}
		is := func(e ast.Expr) bool {
			id, ok := ast.Unparen(e).(*ast.Ident)
			return ok && info.Uses[id] == v
		}
		switch n := n.(type) {
		case *ast.UnaryExpr:
			changes = n.Op == token.AND && is(n.X)
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				changes = changes || inLit && is(l)
			}
		case *ast.IncDecStmt:
			changes = inLit && is(n.X)
		}
		return !changes
	})
	return changes
}

func (c *checker) indexWhy(n *ast.IndexExpr) string {
	return fmt.Sprintf("a check indexes %s, which may be shorter before the state arrives: a poll could panic", types.ExprString(n.X))
}

// pureBuiltins are the builtins a poll may call again.
var pureBuiltins = []string{"len", "cap", "min", "max", "real", "imag", "complex"}

// callWhy returns why the call may not be repeated, or "".
func (c *checker) callWhy(call *ast.CallExpr) string {
	if tv, ok := c.info.Types[call.Fun]; ok && tv.IsType() {
		return "" // a conversion
	}
	if match.IsBuiltin(c.info, call.Fun, pureBuiltins...) {
		return ""
	}
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if _, ok := c.info.Uses[id].(*types.Builtin); ok {
			return fmt.Sprintf("a check calls %s, which a poll would repeat", id.Name)
		}
	}
	fn := match.Callee(c.info, call)
	if fn == nil {
		return fmt.Sprintf("a check calls the function value %s, which may change state: a poll would repeat it", types.ExprString(call.Fun))
	}
	name := fn.Name()
	if fn.Pkg() != nil && match.IsStd(fn.Pkg().Path()) {
		if stdReader(fn) {
			return ""
		}
		return fmt.Sprintf("a check calls %s, which may change state or wait: a poll would repeat it", match.PkgFuncName(fn))
	}
	if fn.Pkg() != nil && (fn.Pkg().Path() == assertPath || fn.Pkg().Path() == requirePath) {
		return "" // the assertion itself (its arguments are checked apart)
	}
	if v := verb(name); mutating[v] {
		return fmt.Sprintf("a check calls %s, whose name says it changes state (%s): a poll would repeat it", types.ExprString(call.Fun), v)
	}
	if fn.Pkg() != nil && fn.Pkg() != c.pass.Pkg && c.decls[fn] == nil {
		// Its body is not read here: a name that reads as a getter
		// (Snapshot, Stats) may read and reset, and a poll that calls it
		// again loses what the first call took.
		return fmt.Sprintf("a check calls %s, code of %s whose body the rule does not read, so it may change state (a read that resets, a snapshot that starts the next interval): a poll would repeat it", types.ExprString(call.Fun), fn.Pkg().Path())
	}
	sig := fn.Type().(*types.Signature)
	for i := 0; i < sig.Params().Len(); i++ {
		if match.IsNamed(sig.Params().At(i).Type(), "context", "Context") {
			return fmt.Sprintf("a check calls %s with a context: an operation (a request, an RPC), which a poll would repeat", types.ExprString(call.Fun))
		}
	}
	if why := c.bodyWhy(fn, 0); why != "" {
		if !strings.HasSuffix(why, "repeat it") && !strings.HasSuffix(why, "repeat") {
			why += ": a poll would repeat it"
		}
		return fmt.Sprintf("a check calls %s, which %s", types.ExprString(call.Fun), why)
	}
	return ""
}

// writeWhy returns why the assignment to l in the body of fd writes
// something outside it (a package variable, a field, an element of
// something the function did not make), or "".
func (c *checker) writeWhy(fd *ast.FuncDecl, l ast.Expr) string {
	root := l
	for {
		switch x := ast.Unparen(root).(type) {
		case *ast.SelectorExpr:
			root = x.X
			continue
		case *ast.IndexExpr:
			root = x.X
			continue
		case *ast.StarExpr:
			root = x.X
			continue
		}
		break
	}
	id, ok := ast.Unparen(root).(*ast.Ident)
	if !ok {
		return "writes " + types.ExprString(l)
	}
	v, ok := c.info.Uses[id].(*types.Var)
	if !ok {
		return "" // a name it declares, or _
	}
	if match.IsPackageLevel(v) {
		return "sets the package variable " + id.Name
	}
	if _, plain := ast.Unparen(l).(*ast.Ident); !plain && (v.Pos() < fd.Body.Pos() || v.Pos() >= fd.Body.End()) {
		return "writes " + types.ExprString(l)
	}
	return ""
}

// maxBodyDepth bounds how deep bodyWhy follows the package's functions.
const maxBodyDepth = 3

// bodyWhy returns why calling fn, a function of this package whose body
// the rule sees, is not a read ("calls client.NewStream, whose name says
// it changes state"), or "". A function it cannot see is judged by its
// name alone (callWhy).
func (c *checker) bodyWhy(fn *types.Func, depth int) string {
	if why, ok := c.bodies[fn]; ok {
		return why
	}
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil || depth >= maxBodyDepth {
		return ""
	}
	c.bodies[fn] = "" // a recursive call reads as the rest does
	why := ""
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			why = "starts a goroutine"
		case *ast.SendStmt:
			why = "sends on a channel"
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				why = "receives from a channel"
			}
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				why = c.writeWhy(fd, l)
			}
		case *ast.IncDecStmt:
			why = c.writeWhy(fd, n.X)
		case *ast.CallExpr:
			// A reader may lock (and unlock) to read, and build what it
			// returns.
			if match.IsMethod(c.info, n, "sync", "Lock", "Unlock", "RLock", "RUnlock") || match.IsBuiltin(c.info, n.Fun, "append", "make", "new", "copy", "panic") ||
				match.IsMethod(c.info, n, "testing", "Helper", "Log", "Logf", "Name") {
				return true
			}
			inner := c.callWhy(n)
			if inner == "" {
				if f := match.Callee(c.info, n); f != nil && c.decls[f] != nil {
					if deeper := c.bodyWhy(f, depth+1); deeper != "" {
						inner = deeper
					}
				}
			}
			if inner != "" {
				why = strings.TrimPrefix(inner, "a check ")
			}
		}
		return why == ""
	})
	c.bodies[fn] = why
	return why
}

// verb returns the first word of a function name, capitalised: "Members"
// of Members, "Get" of GetState, "Send" of sendAll.
func verb(name string) string {
	r := []rune(name)
	if len(r) == 0 {
		return ""
	}
	r[0] = unicode.ToUpper(r[0])
	end := 1
	for end < len(r) && !unicode.IsUpper(r[end]) && r[end] != '_' {
		end++
	}
	return string(r[:end])
}

// mutating are the verbs that start the names of functions that change
// state, consume it or wait: a poll must not repeat them.
var mutating = map[string]bool{}

func init() {
	for _, v := range strings.Fields(`Accept Acquire Add Advance Append Apply Broadcast Call Cancel Clean Cleanup Clear Close Collect Commit Compact Del Expire Kick Mark Prune Rotate Sweep Trim Wake
		Connect Consume Create Dec Decrement Delete Dequeue Dial Dispatch Do Drain Drop Emit Enqueue Evict Exec Execute
		Fetch Fire Flush Handle Inc Increment Init Insert Invoke Join Kill Leave Listen Lock Must New Next Notify Open
		Pause Poll Pop Post Process Publish Pull Purge Push Put Read Receive Recv Register Release Reload Remove Replace
		Request Reset Restart Resume Retry Run Scan Schedule Send Serve Set Shutdown Signal Sleep Start Step Stop Store
		Submit Subscribe Swap Sync Take Tick Trigger Truncate Unlock Unregister Unsubscribe Update Upsert Wait Write`) {
		mutating[v] = true
	}
}

// stdPure are the standard packages whose functions only compute from
// their arguments; stdReaders are the functions and methods of others
// that only read.
var (
	stdPure = map[string]bool{
		"bytes": true, "errors": true, "math": true, "math/bits": true, "path": true, "path/filepath": true,
		"strconv": true, "strings": true, "unicode": true, "unicode/utf8": true, "maps": true, "slices": true,
		"reflect": true, "cmp": true, "net/netip": true,
	}
	stdReaders = map[string]bool{
		"os.Stat": true, "os.Lstat": true, "os.ReadFile": true, "os.ReadDir": true,
		"fmt.Sprint": true, "fmt.Sprintf": true, "fmt.Sprintln": true,
		"runtime.NumGoroutine": true,
	}
	// stdMethods are the methods of standard types a poll may repeat:
	// atomic loads, sync.Map's Load, and accessors.
	stdMethods = map[string]bool{
		"Load": true, "String": true, "Len": true, "Cap": true, "Bytes": true, "Error": true, "Err": true,
		"Name": true, "Size": true, "Mode": true, "IsDir": true, "ModTime": true, "Value": true, "Range": true,
	}
)

// stdReader reports whether the standard function or method fn only reads.
func stdReader(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	path := fn.Pkg().Path()
	if recv := sig.Recv(); recv != nil {
		// Values of time are data: t.Sub(u), d.Milliseconds().
		if path == "time" && match.IsNamed(recv.Type(), "time", "Time", "Duration", "Month", "Weekday") {
			return !strings.HasPrefix(fn.Name(), "Unmarshal") && !strings.HasPrefix(fn.Name(), "Gob")
		}
		return stdMethods[fn.Name()]
	}
	if path == "sync/atomic" {
		return strings.HasPrefix(fn.Name(), "Load")
	}
	if stdPure[path] {
		// Not the few that write through their arguments.
		for _, p := range []string{"Sort", "Reverse", "Insert", "Delete", "Grow", "Clip", "Compact", "Replace", "Copy", "Insert", "DeleteFunc", "Set", "Unsetenv"} {
			if strings.HasPrefix(fn.Name(), p) && (path == "slices" || path == "maps" || path == "reflect") {
				return false
			}
		}
		return true
	}
	return stdReaders[match.PkgFuncName(fn)] || effects.StdRead(fn)
}

// possessive names the group's checks as owners: "check's", "2 checks'".
func (g *group) possessive() string {
	if len(g.checks) == 1 {
		return "check's"
	}
	return fmt.Sprintf("%d checks'", len(g.checks))
}
