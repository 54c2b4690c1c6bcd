package setenv

import (
	_ "embed"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rule/effect"
)

//go:embed doc.md
var doc string

// Rule removes t.Setenv(X, "") clears that the package's TestMain makes
// redundant.
var Rule = &rule.Rule{
	Name:      "setenv",
	Doc:       doc,
	Default:   true,
	Prefilter: prefilter,
	Run:       run,
	Requires:  []*rule.Analysis{match.Decls},
}

// prefilter: a clear calls Setenv.
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, "Setenv")
}

func run(pass *rule.Pass) error {
	c := &checker{
		pass:  pass,
		info:  pass.TypesInfo,
		decls: match.DeclsOf(pass),
		memo:  map[*types.Func][]envWrite{},
	}
	c.sealed, c.hasMain = c.seal()
	for _, f := range pass.Files {
		name := pass.Fset.File(f.Pos()).Name()
		if !strings.HasSuffix(name, "_test.go") || ast.IsGenerated(f) {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil && fd.Name.Name != "TestMain" {
				c.checkFunc(f, fd)
			}
		}
	}
	return nil
}

// checker checks the functions of one package.
type checker struct {
	pass  *rule.Pass
	info  *types.Info
	decls map[*types.Func]*ast.FuncDecl // the package's functions, for following calls
	memo  map[*types.Func][]envWrite    // the environment writes of a package function
	// following holds the function literals of package variables being
	// followed (writes), so that one naming its own variable ends.
	following map[*ast.FuncLit]bool
	// followingVar holds the package-level collections of functions
	// whose stored values are being followed.
	followingVar map[*types.Var]bool

	parallelNamed *bool // whether the package names a Parallel method (mentionsParallel)

	hasMain  bool              // the package has a TestMain
	sealed   map[string]bool   // the variables TestMain empties before m.Run
	unsealed map[string]string // why TestMain does not seal a variable, by name
	distrust string            // why TestMain seals nothing, when it may write any variable

	module []moduleWrite // the environment writes of the module, read on first need
	graph  *modGraph     // which packages of the module reach no other module
	deps   []moduleWrite // the environment writes of the dependencies the test binary links, read on first need
}

// A clear is a t.Setenv(name, "") statement.
type clear struct {
	stmt   *ast.ExprStmt
	file   *ast.File
	call   *ast.CallExpr
	name   string
	parent ast.Node // the block or clause holding stmt
	loop   bool     // inside a loop of the function
	lit    bool     // inside a func literal that is not a t.Run subtest
}

// An envWrite is a change to the process environment: t.Setenv, os.Setenv,
// os.Unsetenv or os.Clearenv, in the code or in a package function it calls
// (then pos is the call's position).
type envWrite struct {
	pos   token.Pos
	call  *ast.CallExpr // the setenv call itself, or nil for a write in a function the code names
	name  string
	known bool // name is known (a constant)
	all   bool // os.Clearenv: every name
	viaT  bool // t.Setenv (restored when the test ends)
	// handle is the variable t.Setenv is called on, when it is one (nil
	// for a field, a call, a write the code names).
	handle types.Object

	// hidden, when not empty, says how a call that names no variable
	// writes this one (t.Chdir sets PWD): effects.StdEnvWrites.
	hidden string

	// foreign, when not empty, says how code the analysis cannot follow
	// by name may write any variable (see foreignWrite).
	foreign string
}

func (w envWrite) touches(name string) bool {
	return w.all || !w.known || w.name == name
}

// checkFunc reports the clears of fd.
func (c *checker) checkFunc(file *ast.File, fd *ast.FuncDecl) {
	var clears []*clear
	match.WithStack(fd.Body, func(n ast.Node, stack []ast.Node) bool {
		es, ok := n.(*ast.ExprStmt)
		if !ok {
			return true
		}
		cl := c.matchClear(es)
		if cl == nil {
			return true
		}
		// Have: t.Setenv(NAME, "") with NAME constant.
		if len(stack) > 0 {
			cl.parent = stack[len(stack)-1]
		}
		for i, s := range stack {
			switch s.(type) {
			case *ast.ForStmt, *ast.RangeStmt:
				cl.loop = true
			case *ast.DeferStmt, *ast.GoStmt:
				// A deferred subtest runs after the statements written
				// below it (red team batch 31, deferstop, defernested,
				// deferchdir), a goroutine's whenever it runs.
				cl.loop = true
			case *ast.FuncLit:
				if !c.isSubtest(stack, i) {
					cl.lit = true
				}
			}
		}
		cl.file = file
		clears = append(clears, cl)
		return true
	})
	if len(clears) == 0 {
		return
	}
	top := match.IsTestFunc(c.info, fd)
	writes := c.writes(fd.Body, map[*types.Func]bool{})
	setenvs := 0
	for _, w := range writes {
		if w.viaT {
			setenvs++
		}
	}
	type result struct {
		cl  *clear
		why string
	}
	var results []result
	removable := 0
	for _, cl := range clears {
		r := result{cl: cl, why: c.keep(fd, top, cl, writes)}
		if r.why == "" {
			r.why = c.elsewhere(fd, cl.name)
		}
		if r.why == "" {
			removable++
		}
		results = append(results, r)
	}
	last := -1 // the index of the clear that removes the test's last t.Setenv
	if top && removable == setenvs {
		for i, r := range results {
			if r.why == "" {
				last = i
			}
		}
	}
	for i, r := range results {
		d := rule.Diagnostic{
			Pos:     r.cl.stmt.Pos(),
			End:     r.cl.stmt.End(),
			Message: fmt.Sprintf("t.Setenv(%s, \"\") empties %s for one test and keeps it from running in parallel", strconv.Quote(r.cl.name), r.cl.name),
		}
		if r.why != "" {
			d.NotFixed = r.why
		} else {
			d.Fix = c.fix(r.cl, i == last)
		}
		c.pass.Report(d)
	}
}

// matchClear returns the clear es is, or nil.
func (c *checker) matchClear(es *ast.ExprStmt) *clear {
	call, ok := ast.Unparen(es.X).(*ast.CallExpr)
	if !ok || len(call.Args) != 2 || !match.IsMethod(c.info, call, "testing", "Setenv") {
		return nil
	}
	name, ok := match.ConstString(c.info, call.Args[0])
	if !ok {
		return nil
	}
	if v, ok := match.ConstString(c.info, call.Args[1]); !ok || v != "" {
		return nil // sets a value: not a clear
	}
	return &clear{stmt: es, call: call, name: name}
}

// isSubtest reports whether stack[i], a func literal, is the function
// argument of a t.Run call.
func (c *checker) isSubtest(stack []ast.Node, i int) bool {
	if i == 0 {
		return false
	}
	call, ok := stack[i-1].(*ast.CallExpr)
	return ok && len(call.Args) == 2 && ast.Unparen(call.Args[1]) == stack[i] && match.IsMethod(c.info, call, "testing", "Run")
}

// keep returns why the clear cl in fd must stay, or "" if it can go.
func (c *checker) keep(fd *ast.FuncDecl, top bool, cl *clear, writes []envWrite) string {
	if !c.hasMain {
		return "the package has no TestMain that seals the environment; unflake seal writes one"
	}
	if !c.sealed[cl.name] {
		if why := c.unsealed[cl.name]; why != "" {
			return fmt.Sprintf("the package's TestMain does not leave %s empty: %s", cl.name, why)
		}
		if c.distrust != "" {
			return fmt.Sprintf("the package's TestMain does not leave %s empty: %s", cl.name, c.distrust)
		}
		return fmt.Sprintf("the package's TestMain does not empty %s", cl.name)
	}
	// Have: TestMain empties the variable before any test runs.
	if !top {
		return fmt.Sprintf("the clear is in %s, not in a test, so a caller may have set %s before it", fd.Name.Name, cl.name)
	}
	if why := c.calledFrom(fd); why != "" {
		return why
	}
	if cl.parent == nil {
		return "the clear is not in a statement list"
	}
	jumps := hasGoto(fd.Body)
	for _, w := range writes {
		if w.call == cl.call || !w.touches(cl.name) {
			continue
		}
		if jumps {
			// A goto back runs the clear again after a write the text
			// puts later (red team batch 28, gotoround).
			return fmt.Sprintf("the test sets %s elsewhere and jumps with goto, so the order of its statements is not the order they run", cl.name)
		}
		if w.foreign != "" {
			return fmt.Sprintf("the test may change %s at line %d: it %s", cl.name, c.pass.Fset.Position(w.pos).Line, w.foreign)
		}
		if w.pos < cl.call.Pos() {
			if w.hidden != "" {
				return fmt.Sprintf("the test set %s earlier (at %s, %s), so clearing it is not redundant", cl.name, c.at(w.pos), w.hidden)
			}
			return fmt.Sprintf("the test set %s earlier, so clearing it is not redundant", cl.name)
		}
		if cl.loop || cl.lit {
			return fmt.Sprintf("the test sets %s elsewhere and the clear, in a loop, a closure or a deferred call, may run after that", cl.name)
		}
		if !w.viaT {
			return fmt.Sprintf("the test changes %s later (os.Setenv, os.Unsetenv or code that writes the environment), and the clear restores it when the test ends", cl.name)
		}
		if h := c.handleOf(cl.call); h == nil || w.handle != h {
			// t.Setenv on the enclosing test's t, or on a T a fixture
			// kept, is restored when that test ends, after the
			// subtests that follow this one (red team batch 35,
			// outerslip).
			return fmt.Sprintf("the test sets %s later at %s on another test's handle, which restores it only when that test ends; the clear restores it when this one does", cl.name, c.at(w.pos))
		}
	}
	if at := c.triesParallel(fd.Body, map[*types.Func]bool{}); at != "" {
		// t.Parallel panics in a test that called t.Setenv; a test
		// that recovers from it stays serial, and with the clear gone
		// would run beside the others (red team batch 37,
		// tryparallel).
		return fmt.Sprintf("the test may call t.Parallel (%s), which the clear's t.Setenv keeps from taking effect: without it the test would run in parallel with the others", at)
	}
	return ""
}

// hasGoto reports whether body has a goto statement.
func hasGoto(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if b, ok := n.(*ast.BranchStmt); ok && b.Tok == token.GOTO {
			found = true
		}
		return !found
	})
	return found
}

// fix removes the clear.
func (c *checker) fix(cl *clear, last bool) *rule.Fix {
	msg := fmt.Sprintf("remove the clear: TestMain already empties %s", cl.name)
	if last {
		msg += "; the test has no t.Setenv left and may now run with t.Parallel"
	}
	return &rule.Fix{
		Message: msg,
		Changes: []rule.Change{{Kind: rule.Process, What: "the package's TestMain clears the variable for the whole test binary, not this test",
			Checked: []string{
				"TestMain, and every declaration of the package its seal reads, is in a file every build compiles (go test -race, another GOOS or GOARCH, a tag), so every build runs the same seal",
				fmt.Sprintf("no code of the module (every build's files, however os is imported, the closures TestMain leaves behind, cgo and go:linkname included) reads or writes %s, so no write of it (an export, a default written back) needs the clear's restore when the test ends", cl.name),
				fmt.Sprintf("no package outside the standard library and the module that the test binary links (its external tests' included) writes %s, a variable the analysis cannot name, or uses cgo", cl.name),
			}}},
		// The comments next to the clear are about it: they may go with it.
		Deletes: append([]ast.Node{cl.stmt}, match.AdjacentComments(cl.file, cl.parent, cl.stmt)...),
		Apply: func() error {
			stmt := c.pass.Dst(cl.stmt).(*dst.ExprStmt)
			if !match.DeleteStmt(c.pass.Dst(cl.parent), stmt) {
				return errors.New("the clear is not in its parent's statement list")
			}
			return nil
		},
	}
}

// writes returns the environment writes in root, following the package
// functions it calls or takes as a value (seen marks the functions being
// followed). os.Setenv and its kin taken as a value (var set = os.Setenv,
// mirror(fs, os.Setenv)) and functions of other packages that may write
// the environment, or whose effects are unknown, write a variable the
// analysis cannot name.
func (c *checker) writes(root ast.Node, seen map[*types.Func]bool) []envWrite {
	var out []envWrite
	called := map[*ast.Ident]bool{} // the env functions called directly
	handles := map[*ast.Ident]types.Object{}
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if v, ok := c.info.Uses[n].(*types.Var); ok && match.IsPackageLevel(v) && v.Pkg() != nil && !match.IsStd(v.Pkg().Path()) {
				// A package-level function value (an export_test.go
				// var UseBin = func(t *testing.T, dir string) {...}):
				// what it holds is not followed, and may write any
				// variable (red team batch 26, exportvar).
				if _, isFunc := v.Type().Underlying().(*types.Signature); !isFunc {
					if !holdsFuncs(v.Type(), map[types.Type]bool{}) {
						return true
					}
					// A collection of functions (a registry map filled
					// in init, a table of fixtures): what is stored in
					// it counts where it is named (red team batch 29,
					// fixtureregistry, methodexpr).
					if v.Pkg() != c.pass.Pkg {
						out = append(out, envWrite{pos: n.Pos(), foreign: fmt.Sprintf("calls a function held in %s.%s, which the analysis does not follow and which may write any variable", v.Pkg().Name(), v.Name())})
						return true
					}
					if !c.followingVar[v] {
						if c.followingVar == nil {
							c.followingVar = map[*types.Var]bool{}
						}
						c.followingVar[v] = true
						for _, e := range c.storedInto(v) {
							for _, inner := range c.writes(e, seen) {
								inner.pos, inner.call = n.Pos(), nil
								out = append(out, inner)
							}
						}
						delete(c.followingVar, v)
					}
					return true
				}
				if v.Pkg() != c.pass.Pkg {
					out = append(out, envWrite{pos: n.Pos(), foreign: fmt.Sprintf("calls the function value %s.%s, which the analysis does not follow and which may write any variable", v.Pkg().Name(), v.Name())})
					return true
				}
				// The package's own: the literal it is declared with
				// counts where it is named (one TestMain assigns is the
				// seal's: sealer).
				if lit := c.funcLitOf(v); lit != nil && !c.following[lit] {
					if c.following == nil {
						c.following = map[*ast.FuncLit]bool{}
					}
					c.following[lit] = true // a literal that names its own variable
					for _, inner := range c.writes(lit.Body, seen) {
						inner.pos, inner.call = n.Pos(), nil
						out = append(out, inner)
					}
					delete(c.following, lit)
				}
				return true
			}
			fn, ok := c.info.Uses[n].(*types.Func)
			if !ok || called[n] {
				return true
			}
			if isTestingEnvMethod(fn) {
				// t.Setenv taken as a method value (enterRepo(t.Setenv,
				// dir)): a write of any variable, where it is named (red
				// team batch 26, methodvalue).
				out = append(out, envWrite{pos: n.Pos(), foreign: fmt.Sprintf("takes t.%s as a function value, which may write any variable", fn.Name())})
				return true
			}
			if what := c.foreignWrite(fn, false); what != "" {
				out = append(out, envWrite{pos: n.Pos(), foreign: what})
				return true
			}
			if ws := c.hiddenWrites(fn, n.Pos()); ws != nil {
				for i := range ws {
					ws[i].handle = handles[n]
				}
				out = append(out, ws...)
				return true
			}
			if what := c.ifaceWrite(fn, seen); what != "" {
				out = append(out, envWrite{pos: n.Pos(), foreign: what})
				return true
			}
			// A package function called or passed on (t.Cleanup(reset)):
			// its writes count where it is named.
			for _, inner := range c.funcWrites(fn.Origin(), seen) {
				inner.pos, inner.call = n.Pos(), nil
				out = append(out, inner)
			}
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					out = append(out, c.handedWrites(n.Rhs[i], c.info.TypeOf(l), seen)...)
				}
			}
		case *ast.CompositeLit:
			out = append(out, c.literalWrites(n, seen)...)
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
				handles[sel.Sel] = c.handleOf(n) // t of t.Chdir, seen next
			}
			if what := reflectCall(c.info, n); what != "" {
				out = append(out, envWrite{pos: n.Pos(), foreign: what})
				return true
			}
			if sig, ok := c.info.TypeOf(n.Fun).(*types.Signature); ok && !c.info.Types[n.Fun].IsType() {
				for i, arg := range n.Args {
					out = append(out, c.handedWrites(arg, paramType(sig, i), seen)...)
				}
			}
			w := envWrite{pos: n.Pos(), call: n}
			switch {
			case match.IsMethod(c.info, n, "testing", "Setenv") && len(n.Args) == 2:
				w.viaT = true
				w.handle = c.handleOf(n)
				w.name, w.known = match.ConstString(c.info, n.Args[0])
			case isEnvFunc(c.info, n, "Setenv") || isEnvFunc(c.info, n, "Unsetenv"):
				if len(n.Args) > 0 {
					w.name, w.known = match.ConstString(c.info, n.Args[0])
				}
			case isEnvFunc(c.info, n, "Clearenv"):
				w.all = true
			default:
				return true
			}
			if id := calleeIdent(n); id != nil {
				called[id] = true // os.Setenv, or a dot-imported Setenv
			}
			out = append(out, w)
		}
		return true
	})
	return out
}

// holdsFuncs reports whether a value of type t may hold a function: t is
// a function type, or a map, slice, array, pointer or struct holding one.
func holdsFuncs(t types.Type, seen map[types.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch u := t.Underlying().(type) {
	case *types.Signature:
		return true
	case *types.Map:
		return holdsFuncs(u.Key(), seen) || holdsFuncs(u.Elem(), seen)
	case *types.Slice:
		return holdsFuncs(u.Elem(), seen)
	case *types.Array:
		return holdsFuncs(u.Elem(), seen)
	case *types.Pointer:
		return holdsFuncs(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if holdsFuncs(u.Field(i).Type(), seen) {
				return true
			}
		}
	}
	return false
}

// storedInto returns the expressions the package stores in the
// package-level variable v, in any of its files: its initialiser, and the
// right-hand sides of assignments to it or into it (v = ..., v[k] = ...,
// v.f = ...).
func (c *checker) storedInto(v *types.Var) []ast.Expr {
	var out []ast.Expr
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if c.info.Defs[name] == v && i < len(n.Values) {
						out = append(out, n.Values[i])
					}
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if match.Root(c.info, l) != v {
						continue
					}
					if len(n.Lhs) == len(n.Rhs) {
						out = append(out, n.Rhs[i])
					} else {
						out = append(out, n.Rhs...)
					}
				}
			case *ast.CallExpr:
				// append(v, f), copy into v: stored through a builtin.
				if match.IsBuiltin(c.info, n.Fun, "append") && len(n.Args) > 1 && match.Root(c.info, n.Args[0]) == v {
					out = append(out, n.Args[1:]...)
				}
			}
			return true
		})
	}
	return out
}

// reflectCall says how call finds a method by reflection
// (reflect.Value.MethodByName, Method, Type.MethodByName), which may be
// t.Setenv, and so writes any variable: a fixture loader that sets
// struct-tagged variables through whatever target it is given (red team
// batch 27, reflectenv); or "".
func reflectCall(info *types.Info, call *ast.CallExpr) string {
	fn := match.Callee(info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "reflect" {
		return ""
	}
	if sig, ok := fn.Type().(*types.Signature); !ok || sig.Recv() == nil || fn.Name() != "MethodByName" && fn.Name() != "Method" {
		return ""
	}
	return "calls a method found by reflection (reflect." + fn.Name() + "), which may be t.Setenv: it may write any variable"
}

// paramType returns the type of sig's parameter that the i-th argument
// goes to, or nil.
func paramType(sig *types.Signature, i int) types.Type {
	n := sig.Params().Len()
	switch {
	case n == 0:
		return nil
	case sig.Variadic() && i >= n-1:
		if s, ok := sig.Params().At(n - 1).Type().(*types.Slice); ok {
			return s.Elem()
		}
		return nil
	case i < n:
		return sig.Params().At(i).Type()
	}
	return nil
}

// literalWrites returns handedWrites for each element of lit that goes
// into an interface-typed field or element.
func (c *checker) literalWrites(lit *ast.CompositeLit, seen map[*types.Func]bool) []envWrite {
	var out []envWrite
	t := c.info.TypeOf(lit)
	if t == nil {
		return nil
	}
	for i, el := range lit.Elts {
		var target types.Type
		v := el
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			v = kv.Value
		}
		switch u := t.Underlying().(type) {
		case *types.Struct:
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok {
					if f, ok := c.info.Uses[id].(*types.Var); ok {
						target = f.Type()
					}
				}
			} else if i < u.NumFields() {
				target = u.Field(i).Type()
			}
		case *types.Slice:
			target = u.Elem()
		case *types.Array:
			target = u.Elem()
		case *types.Map:
			target = u.Elem()
		}
		out = append(out, c.handedWrites(v, target, seen)...)
	}
	return out
}

// handedWrites returns the environment writes of the methods of e's type
// when e is handed on as an interface (target is an interface type): the
// code that gets it may call any of them, the standard library's too
// (flag.FlagSet.Parse calls a flag.Value's Set, which calls tb.Setenv:
// red team batch 27, flagenv), where a call by name would have been
// followed. Nil when target is not an interface or e's type is an
// interface or has no such method.
func (c *checker) handedWrites(e ast.Expr, target types.Type, seen map[*types.Func]bool) []envWrite {
	if target == nil || !types.IsInterface(target) {
		return nil
	}
	t := c.info.TypeOf(e)
	if t == nil || types.IsInterface(t) {
		return nil
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	var out []envWrite
	for _, named := range reachableNamed(t, map[types.Type]bool{}) {
		out = append(out, c.methodWrites(e, named, seen)...)
	}
	return out
}

// reachableNamed returns the named types outside the standard library
// that a value of type t holds: t itself, and through its fields,
// elements and pointers, those of what it holds (a fixture struct whose
// Env field's UnmarshalJSON writes the environment: encoding/json calls
// it when it fills the struct, red team batch 29, jsonfixture).
func reachableNamed(t types.Type, seen map[types.Type]bool) []*types.Named {
	if seen[t] {
		return nil
	}
	seen[t] = true
	var out []*types.Named
	if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && !match.IsStd(n.Obj().Pkg().Path()) {
		out = append(out, n)
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		out = append(out, reachableNamed(u.Elem(), seen)...)
	case *types.Slice:
		out = append(out, reachableNamed(u.Elem(), seen)...)
	case *types.Array:
		out = append(out, reachableNamed(u.Elem(), seen)...)
	case *types.Map:
		out = append(out, reachableNamed(u.Key(), seen)...)
		out = append(out, reachableNamed(u.Elem(), seen)...)
	case *types.Struct:
		for i := range u.NumFields() {
			out = append(out, reachableNamed(u.Field(i).Type(), seen)...)
		}
	}
	return out
}

// methodWrites returns the environment writes of the methods of named
// (and of *named), where e hands a value holding it on.
func (c *checker) methodWrites(e ast.Expr, named *types.Named, seen map[*types.Func]bool) []envWrite {
	var out []envWrite
	ms := types.NewMethodSet(types.NewPointer(named))
	for i := range ms.Len() {
		m, ok := ms.At(i).Obj().(*types.Func)
		if !ok {
			continue
		}
		if what := c.foreignWrite(m, false); what != "" {
			out = append(out, envWrite{pos: e.Pos(), foreign: what})
			continue
		}
		for _, inner := range c.funcWrites(m.Origin(), seen) {
			inner.pos, inner.call = e.Pos(), nil
			out = append(out, inner)
		}
	}
	return out
}

// envFuncs are the functions of os and syscall that write the environment.
var envFuncs = map[string]bool{"Setenv": true, "Unsetenv": true, "Clearenv": true}

// foreignWrite says how naming fn (calling it or taking it as a value)
// may write the environment in a way the analysis cannot follow by name:
// os.Setenv or its kin as a function value, or a function of another
// package whose effect summary writes the environment, is unknown or
// cannot be followed in full (code in another module the test reaches).
// "" when it cannot, or when fn is the package's own (followed instead).
// scanned is set for the module-wide scan, which reads the module's
// syntax and names the writes of its self-contained packages itself.
func (c *checker) foreignWrite(fn *types.Func, scanned bool) string {
	fn = fn.Origin()
	if fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg {
		return ""
	}
	path, name := fn.Pkg().Path(), fn.Name()
	sig, _ := fn.Type().(*types.Signature)
	if match.IsStd(path) {
		if (path == "os" || path == "syscall") && sig != nil && sig.Recv() == nil && envFuncs[name] {
			return fmt.Sprintf("takes %s.%s as a function value, which may write any variable", path, name)
		}
		return "" // the standard library writes the environment only there, by name; t.Setenv and t.Chdir restore theirs (t.Chdir's PWD is a write hiddenWrites names)
	}
	if match.IsAssertion(path, name) {
		return ""
	}
	if scanned && c.selfContained(path) {
		return "" // the module's syntax scan names its writes
	}
	full := fn.Pkg().Name() + "." + name
	sum := c.pass.Effects.Of(fn)
	if sum == nil {
		return fmt.Sprintf("calls %s, whose effects the analysis cannot see", full)
	}
	for _, e := range sum.Effects {
		if e.Kind == effect.WritesEnv {
			return "calls " + e.Why()
		}
	}
	if sum.Opaque != "" {
		return fmt.Sprintf("calls %s, whose effects the analysis cannot see in full (it %s)", full, sum.Opaque)
	}
	return ""
}

// ifaceWrite says how a method of an interface outside the standard
// library, fn, may write the environment when called: its name is one of
// testing's that do (Setenv, Chdir), which *testing.T implements (a
// helper's own interface{ Setenv(k, v string) } given t: red team batch
// 25, hookiface), or a type of the package, or of a package it imports,
// that implements the interface writes it in its method; or "".
func (c *checker) ifaceWrite(fn *types.Func, seen map[*types.Func]bool) string {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || !types.IsInterface(sig.Recv().Type()) || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return ""
	}
	if fn.Name() == "Setenv" || fn.Name() == "Chdir" {
		return fmt.Sprintf("calls %s through an interface, which a *testing.T (whose %s writes the environment) or other code may implement", fn.Name(), fn.Name())
	}
	iface, ok := sig.Recv().Type().Underlying().(*types.Interface)
	if !ok {
		return ""
	}
	// The package's types, and those of the packages it imports (a
	// dependency's (*sandbox.Home).Enter calling tb.Setenv: red team
	// batch 26, depiface), judged by their bodies or their effects.
	var scopes []*types.Scope
	scopes = append(scopes, c.pass.Pkg.Scope())
	for _, imp := range c.pass.Pkg.Imports() {
		if !match.IsStd(imp.Path()) {
			scopes = append(scopes, imp.Scope())
		}
	}
	for _, scope := range scopes {
		if what := c.scopeWrite(scope, iface, fn, seen); what != "" {
			return what
		}
	}
	return ""
}

// scopeWrite says how a type of scope implements fn, a method of iface,
// with a method that writes the environment, or "".
func (c *checker) scopeWrite(scope *types.Scope, iface *types.Interface, fn *types.Func, seen map[*types.Func]bool) string {
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || types.IsInterface(tn.Type()) {
			continue
		}
		for _, t := range []types.Type{tn.Type(), types.NewPointer(tn.Type())} {
			if !types.Implements(t, iface) {
				continue
			}
			obj, _, _ := types.LookupFieldOrMethod(t, true, tn.Pkg(), fn.Name())
			m, ok := obj.(*types.Func)
			if !ok {
				continue
			}
			if c.foreignWrite(m, false) != "" || m.Pkg() == c.pass.Pkg && len(c.funcWrites(m.Origin(), seen)) > 0 {
				return fmt.Sprintf("calls %s through an interface, which %s implements with a method that writes the environment", fn.Name(), tn.Name())
			}
			break
		}
	}
	return ""
}

// hiddenWrites returns the writes of variables that naming fn (at pos)
// makes without naming them: the standard library's (t.Chdir sets PWD,
// effects.StdEnvWrites), and those a function of another package may
// make by an effect that stands for one (a helper that changes the
// working directory may do it with t.Chdir). The testing package's are
// restored when the test ends, as t.Setenv's are; another package's may
// not be. Without them a clear of PWD after a t.Chdir looked redundant,
// and removing it left the test under the link path t.Chdir wrote, where
// os.Getwd answers differently (red team batch 17, symlinkwd).
func (c *checker) hiddenWrites(fn *types.Func, pos token.Pos) []envWrite {
	fn = fn.Origin()
	if fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg {
		return nil // the package's own functions are followed
	}
	var out []envWrite
	add := func(a effects.EnvAccess, why string, viaT bool) {
		for _, v := range a.Vars {
			out = append(out, envWrite{pos: pos, name: v, known: true, viaT: viaT, hidden: why})
		}
	}
	if match.IsStd(fn.Pkg().Path()) {
		if a, ok := effects.StdEnvWrites(fn); ok {
			add(a, a.Why, fn.Pkg().Path() == "testing")
		}
		return out
	}
	if sum := c.pass.Effects.Of(fn); sum != nil {
		for _, e := range sum.Effects {
			if a, ok := effects.KindEnvWrites(e.Kind); ok {
				add(a, fmt.Sprintf("%s.%s: %s", fn.Pkg().Name(), fn.Name(), a.Why), false)
			}
		}
	}
	return out
}

// funcWrites returns the environment writes of the package function fn.
func (c *checker) funcWrites(fn *types.Func, seen map[*types.Func]bool) []envWrite {
	if ws, ok := c.memo[fn]; ok {
		return ws
	}
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil || seen[fn] {
		return nil
	}
	seen[fn] = true
	ws := c.writes(fd.Body, seen)
	delete(seen, fn)
	c.memo[fn] = ws
	return ws
}

// isTestingEnvMethod reports whether fn is package testing's Setenv
// method (Chdir's write of PWD, called or taken as a value, is one
// hiddenWrites names).
func isTestingEnvMethod(fn *types.Func) bool {
	if fn.Pkg() == nil || fn.Pkg().Path() != "testing" {
		return false
	}
	sig, ok := fn.Type().(*types.Signature)
	return ok && sig.Recv() != nil && fn.Name() == "Setenv"
}

// funcLitOf returns the function literal the package-level variable v is
// declared with (var useBin = func(...) {...}), or nil.
func (c *checker) funcLitOf(v *types.Var) *ast.FuncLit {
	vs := c.valueSpec(v)
	if vs == nil {
		return nil
	}
	for i, id := range vs.Names {
		if c.info.Defs[id] == v && i < len(vs.Values) {
			lit, _ := ast.Unparen(vs.Values[i]).(*ast.FuncLit)
			return lit
		}
	}
	return nil
}

// handleOf returns the variable a testing method call is made on (t in
// t.Setenv), or nil when the receiver is not a variable (a field, a call).
func (c *checker) handleOf(call *ast.CallExpr) types.Object {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return nil
	}
	return c.info.Uses[id]
}

// dynamic reports whether call calls a function the syntax does not name:
// a function value (a variable, a field, a map's or a slice's element, a
// call's result) or a method of an interface. fn is its callee, if any.
func (c *checker) dynamic(call *ast.CallExpr, fn *types.Func) bool {
	if fn == nil {
		tv, ok := c.info.Types[call.Fun]
		if !ok || tv.IsType() || tv.IsBuiltin() {
			return false
		}
		_, isSig := tv.Type.Underlying().(*types.Signature)
		return isSig
	}
	recv := fn.Signature().Recv()
	return recv != nil && types.IsInterface(recv.Type()) && !(fn.Pkg() != nil && fn.Pkg().Path() == "testing")
}

// handleArg reports whether call hands a testing handle (*testing.T,
// *testing.B, *testing.F, testing.TB) to a parameter that may call
// Parallel with it (not an interface without Parallel).
func (c *checker) handleArg(call *ast.CallExpr) bool {
	sig, _ := c.info.TypeOf(call.Fun).Underlying().(*types.Signature)
	for i, a := range call.Args {
		if !match.IsNamed(c.info.TypeOf(a), "testing", "T", "B", "F", "TB") {
			continue
		}
		if sig != nil && i < sig.Params().Len() && types.IsInterface(sig.Params().At(i).Type()) && !match.HandleMay(sig.Params().At(i).Type(), "Parallel") {
			continue
		}
		return true
	}
	return false
}

// mentionsParallel reports whether any file of the package names a
// Parallel method of the testing package or of an interface (a call,
// a method value, a method expression): only then may a function value
// the test hands its handle to go parallel.
func (c *checker) mentionsParallel() bool {
	if c.parallelNamed != nil {
		return *c.parallelNamed
	}
	found := false
	for id, obj := range c.info.Uses {
		fn, ok := obj.(*types.Func)
		if !ok || id.Name != "Parallel" {
			continue
		}
		if recv := fn.Signature().Recv(); recv != nil && (fn.Pkg() != nil && fn.Pkg().Path() == "testing" || types.IsInterface(recv.Type())) {
			found = true
			break
		}
	}
	c.parallelNamed = &found
	return found
}

// triesParallel says where root, or a package function it names, calls a
// method Parallel (testing's, or an interface's the test's t may be
// behind), or "".
func (c *checker) triesParallel(root ast.Node, seen map[*types.Func]bool) string {
	at := ""
	ast.Inspect(root, func(n ast.Node) bool {
		if at != "" {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok {
			// The test's handle given to code of another package (a
			// test kit's Parallel(t) that recovers): it may call
			// t.Parallel where the rule cannot read (red team batch
			// 38, depparallel2). An interface without Parallel (an
			// assertion library's TestingT) cannot.
			fn := match.Callee(c.info, call)
			if c.dynamic(call, fn) && c.handleArg(call) && c.mentionsParallel() {
				// A function value or an interface's method given
				// the handle: it may be t.Parallel itself, kept as
				// a method expression in a table or a map that a
				// helper calls and recovers from (red team batch
				// 39, modetable), or a function that calls it.
				at = c.at(call.Pos()) + ", the test's handle given to " + types.ExprString(call.Fun) + ", which may be any function of the package"
				return false
			}
			if fn != nil && fn.Pkg() != nil && fn.Pkg() != c.pass.Pkg && !match.IsStd(fn.Pkg().Path()) && c.handleArg(call) {
				at = c.at(call.Pos()) + ", the test's handle given to " + fn.FullName()
				return false
			}
		}
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		fn, ok := c.info.Uses[id].(*types.Func)
		if !ok {
			return true
		}
		if fn.Name() == "Parallel" {
			if recv := fn.Signature().Recv(); recv != nil && (fn.Pkg() != nil && fn.Pkg().Path() == "testing" || types.IsInterface(recv.Type())) {
				at = c.at(id.Pos())
				return false
			}
		}
		if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil && !seen[fn.Origin()] {
			seen[fn.Origin()] = true
			at = c.triesParallel(fd.Body, seen)
		}
		return at == ""
	})
	return at
}
