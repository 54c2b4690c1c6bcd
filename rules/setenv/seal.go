package setenv

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"maps"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// maxDepth bounds how deep the seal follows calls of package functions.
const maxDepth = 4

// seal returns the variables the package's TestMain sets to "" before its
// first m.Run call, and whether the package has a TestMain.
func (c *checker) seal() (map[string]bool, bool) {
	var main *ast.FuncDecl
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "TestMain" && fd.Body != nil && c.takesM(fd) {
				main = fd
			}
		}
	}
	if main == nil {
		return nil, false
	}
	if why := c.sealBuilds(main); why != "" {
		// The seal of this build may not be the seal of the build the
		// tests also run in (go test -race): it seals nothing.
		c.distrust = why
		return map[string]bool{}, true
	}
	if why := c.mAsInterface(main); why != "" {
		c.distrust = why
		return map[string]bool{}, true
	}
	s := &sealer{c: c, sealed: map[string]bool{}, why: map[string]string{}}
	s.stmts(main.Body.List, nil)
	s.meetRounds()
	if at := c.rerun(main); at != "" {
		// TestMain may run the tests again (go.dev/issue/23129 lets
		// m.Run be called more than once): what it writes after the
		// first round is what the later rounds run under, so the seal
		// holds only if no statement of it changes the variable. All of
		// TestMain is evaluated as statements that may run before a
		// round: a clear to "" again keeps the seal, any other write of
		// a name undoes it, a write the analysis cannot name undoes all.
		s.rounds = at
		s.taint(main.Body)
	}
	c.unsealed, c.distrust = s.why, s.distrust
	return s.sealed, true
}

// takesM reports whether fd's only parameter is a *testing.M.
func (c *checker) takesM(fd *ast.FuncDecl) bool {
	ps := fd.Type.Params.List
	return len(ps) == 1 && len(ps[0].Names) <= 1 && match.IsNamed(c.info.TypeOf(ps[0].Type), "testing", "M")
}

// A binding is what the seal knows of a variable: a string, or a list of
// strings (a nil element is unknown).
type binding struct {
	s      *string
	list   []*string
	isList bool
}

// sealer evaluates TestMain's statements before m.Run.
type sealer struct {
	c      *checker
	sealed map[string]bool
	depth  int

	// cond is set while the statements evaluated may not run (a branch
	// of an if or switch, a for body, what follows a continue, break or
	// return): an os.Setenv(NAME, "") there may leave NAME unset, which
	// os.LookupEnv tells from the empty value the clear sets, so it seals
	// nothing; a write there still undoes the seal.
	cond bool
	// why says, by name, why TestMain does not seal a variable: a
	// conditional seal, or a write after it.
	why map[string]string
	// distrust, when not empty, says why nothing is sealed: a call the
	// seal cannot see into may write any variable after the seal.
	distrust string
	// rounds, when not empty, says where TestMain may run the tests
	// more than once; the reasons of what it undoes then name it.
	rounds string
	// early holds, per round of tests reached in a branch, what was
	// sealed when it ran.
	early []map[string]bool
}

// stmts evaluates list in order and reports whether it reached m.Run (then
// the statement holding it, and everything after, is not evaluated).
func (s *sealer) stmts(list []ast.Stmt, env map[*types.Var]binding) bool {
	was := s.cond
	defer func() { s.cond = was }()
	for _, st := range list {
		if s.stmt(st, env) {
			return true
		}
		if jumps(st) {
			s.cond = true // what follows may not run
		}
	}
	return false
}

// condStmts evaluates list as statements that may not run. When they
// reach m.Run (a round in a branch, or in a helper a branch calls), what
// TestMain had emptied by then is what that round runs under, though
// the statements after the branch go on to seal more (red team batch
// 37, sandboxchild2): the round's seal is kept, to be met at the end.
func (s *sealer) condStmts(list []ast.Stmt, env map[*types.Var]binding) bool {
	was := s.cond
	s.cond = true
	defer func() { s.cond = was }()
	reached := s.stmts(list, env)
	if reached {
		s.early = append(s.early, maps.Clone(s.sealed))
	}
	return reached
}

// meetRounds keeps sealed only what every round reached in a branch ran
// under too.
func (s *sealer) meetRounds() {
	for name, ok := range s.sealed {
		if !ok {
			continue
		}
		for _, r := range s.early {
			if !r[name] {
				s.sealed[name] = false
				s.why[name] = fmt.Sprintf("TestMain may run the tests (m.Run in a branch or a loop, or in a function one calls) before it empties %s", name)
				break
			}
		}
	}
}

// jumps reports whether st may leave the statement list it is in, outside
// a function literal: a return, a continue, break or goto, or a panic.
func jumps(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt, *ast.BranchStmt:
			found = true
		case *ast.CallExpr:
			if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok && id.Name == "panic" {
				found = true
			}
		}
		return !found
	})
	return found
}

func (s *sealer) stmt(st ast.Stmt, env map[*types.Var]binding) bool {
	if s.runsTests(st) {
		return s.beforeRun(st, env)
	}
	// Have: a statement before m.Run.
	switch st := st.(type) {
	case *ast.ExprStmt:
		if call, ok := ast.Unparen(st.X).(*ast.CallExpr); ok {
			return s.call(call, env)
		}
	case *ast.AssignStmt:
		for _, e := range st.Rhs {
			if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
				if s.call(call, env) {
					return true
				}
			} else {
				s.taint(e)
			}
		}
		return false
	case *ast.BlockStmt:
		return s.stmts(st.List, env)
	case *ast.IfStmt:
		if st.Init != nil {
			s.stmt(st.Init, env)
		}
		s.taint(st.Cond)
		s.condStmts(st.Body.List, env)
		if st.Else != nil {
			s.condStmts([]ast.Stmt{st.Else}, env)
		}
		return false
	case *ast.ForStmt:
		if st.Init != nil {
			s.stmt(st.Init, env)
		}
		s.taint(st.Cond)
		if st.Post != nil {
			s.taint(st.Post)
		}
		s.condStmts(st.Body.List, env) // may run no time
		return false
	case *ast.RangeStmt:
		var v *types.Var
		if id, ok := st.Value.(*ast.Ident); ok && st.Tok == token.DEFINE {
			v, _ = s.c.info.Defs[id].(*types.Var)
		}
		list, ok := s.list(st.X, env)
		if !ok || v == nil || reassigned(s.c.info, st.Body, v) {
			s.taint(st.X)
			s.condStmts(st.Body.List, env) // the names are unknown
			return false
		}
		// Have: a range over a list of known length: the body runs once
		// per element, unconditionally unless it jumps.
		// A body that may break or return may end the loop early: only
		// its first element runs for sure.
		jump := jumps(st.Body)
		for i, e := range list {
			if i > 0 && jump {
				s.condStmts(st.Body.List, with(env, v, binding{s: e}))
				continue
			}
			s.stmts(st.Body.List, with(env, v, binding{s: e}))
		}
		return false
	}
	// Any other statement (switch, select, defer, go, a declaration...)
	// is not evaluated: its writes undo the seal, it seals nothing.
	s.taint(st)
	return false
}

// beforeRun evaluates st, which calls m.Run, as far as the seal can tell
// what runs before the tests: a call's arguments, or the statements of a
// block before the one holding m.Run. It reports true: m.Run is reached.
func (s *sealer) beforeRun(st ast.Stmt, env map[*types.Var]binding) bool {
	switch st := st.(type) {
	case *ast.BlockStmt:
		if s.stmts(st.List, env) {
			return true
		}
	case *ast.IfStmt:
		// m.Run in a branch: the init, the condition and the statements
		// of the branch before it run first.
		if st.Init != nil {
			s.taint(st.Init)
		}
		s.taint(st.Cond)
		s.condStmts(st.Body.List, env)
		if st.Else != nil {
			s.condStmts([]ast.Stmt{st.Else}, env)
		}
	default:
		// os.Exit(m.Run()), or m.Run in a loop or a switch: what the
		// statement writes may run before the tests.
		s.taint(st)
	}
	return true
}

// runsTests reports whether st calls m.Run.
func (s *sealer) runsTests(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && match.IsMethod(s.c.info, call, "testing", "Run") {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.IsNamed(s.c.info.TypeOf(sel.X), "testing", "M") {
				found = true
			}
		}
		return !found
	})
	return found
}

// call evaluates a call before m.Run and reports whether it reached m.Run
// (in a package function it follows).
func (s *sealer) call(call *ast.CallExpr, env map[*types.Var]binding) bool {
	info := s.c.info
	at := s.c.pass.Fset.Position(call.Pos())
	where := fmt.Sprintf("%s:%d", filepath.Base(at.Filename), at.Line)
	switch {
	case isEnvFunc(info, call, "Setenv") && len(call.Args) == 2:
		name, ok := s.str(call.Args[0], env)
		val, vok := s.str(call.Args[1], env)
		empty := vok && *val == ""
		switch {
		case ok && empty && !s.cond:
			s.sealed[*name] = true
		case ok && empty:
			if !s.sealed[*name] {
				s.why[*name] = fmt.Sprintf("TestMain empties %s only under a condition (%s), so it may leave it unset, which os.LookupEnv tells from the empty value the clear sets", *name, where)
			}
		case ok && s.sealed[*name]:
			s.unseal(*name, fmt.Sprintf("TestMain sets %s after emptying it (%s)", *name, where))
		case ok:
			s.unseal(*name, fmt.Sprintf("TestMain sets %s (%s)", *name, where))
		case !empty:
			s.distrustAll(fmt.Sprintf("TestMain sets a variable the analysis cannot name (%s)", where))
		}
		s.taintArgs(call)
	case isEnvFunc(info, call, "Unsetenv") && len(call.Args) == 1:
		// Unset is not empty: os.LookupEnv tells them apart.
		if name, ok := s.str(call.Args[0], env); ok {
			s.unseal(*name, fmt.Sprintf("TestMain unsets %s (%s), which os.LookupEnv tells from the empty value the clear sets", *name, where))
		} else {
			s.distrustAll(fmt.Sprintf("TestMain unsets a variable the analysis cannot name (%s)", where))
		}
		s.taintArgs(call)
	case isEnvFunc(info, call, "Clearenv"):
		s.distrustAll(fmt.Sprintf("TestMain clears the environment (%s), leaving every variable unset", where))
	default:
		// The arguments run first: os.Exit(runSandbox(m)) runs the
		// tests in runSandbox before os.Exit (red team batch 37,
		// sandboxchild2).
		for _, a := range call.Args {
			if inner, ok := ast.Unparen(a).(*ast.CallExpr); ok && s.call(inner, env) {
				return true
			}
		}
		fn := match.Callee(info, call)
		var fd *ast.FuncDecl
		if fn != nil {
			fd = s.c.decls[fn.Origin()]
		}
		if fd == nil || fd.Body == nil || s.depth >= maxDepth {
			s.taint(call)
			return false
		}
		// Have: a function of the package: evaluate its body with the
		// arguments bound.
		s.taintArgs(call)
		inner := s.bind(fd, call, env)
		s.depth++
		defer func() { s.depth-- }()
		if recovers(s.c.info, fd.Body) {
			// A panic before the seal, recovered here, returns
			// normally with the rest of the body skipped (red team
			// batch 38, helperrecover): every statement may not run.
			return s.condStmts(fd.Body.List, inner)
		}
		return s.stmts(fd.Body.List, inner)
	}
	return false
}

// isEnvFunc reports whether call calls the function name of os or
// syscall.
func isEnvFunc(info *types.Info, call *ast.CallExpr, name string) bool {
	return match.IsPkgFunc(info, call, "os", name) || match.IsPkgFunc(info, call, "syscall", name)
}

// unseal records that name is not sealed, and why.
func (s *sealer) unseal(name, why string) {
	s.sealed[name] = false
	s.why[name] = why + s.roundsNote()
}

// distrustAll records that nothing sealed so far can be trusted, and why.
func (s *sealer) distrustAll(why string) {
	s.sealed = map[string]bool{}
	if s.distrust == "" {
		s.distrust = why + s.roundsNote()
	}
}

// roundsNote is what a reason adds when TestMain runs the tests more than
// once: a write after the first round is one a later round runs under.
func (s *sealer) roundsNote() string {
	if s.rounds == "" {
		return ""
	}
	return fmt.Sprintf(", and TestMain may run the tests more than once (%s), so a later round may run under that write", s.rounds)
}

func (s *sealer) taintArgs(call *ast.CallExpr) {
	for _, a := range call.Args {
		s.taint(a)
	}
}

// taint undoes the seal of what n may write: n runs before m.Run but the
// seal does not evaluate it. A write of a known name unseals it; a write
// the analysis cannot name, a call of a function value, or a call into
// another package that may write the environment (or whose effects are
// unknown) unseals everything.
func (s *sealer) taint(n ast.Node) {
	if n == nil {
		return
	}
	info := s.c.info
	called := map[*ast.Ident]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if tv, ok := info.Types[n.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
				return true
			}
			if isEnvFunc(info, n, "Setenv") || isEnvFunc(info, n, "Unsetenv") || isEnvFunc(info, n, "Clearenv") {
				// A write that may not run: it undoes, never seals.
				was := s.cond
				s.cond = true
				s.call(n, nil)
				s.cond = was
				if id := calleeIdent(n); id != nil {
					called[id] = true // os.Setenv, or a dot-imported Setenv
				}
				return true
			}
			if _, lit := ast.Unparen(n.Fun).(*ast.FuncLit); !lit && match.Callee(info, n) == nil {
				at := s.c.pass.Fset.Position(n.Pos())
				s.distrustAll(fmt.Sprintf("TestMain calls the function value %s (%s:%d), which may write the environment", types.ExprString(n.Fun), filepath.Base(at.Filename), at.Line))
			}
		case *ast.Ident:
			fn, ok := info.Uses[n].(*types.Func)
			if !ok || called[n] {
				return true
			}
			at := s.c.pass.Fset.Position(n.Pos())
			where := fmt.Sprintf("%s:%d", filepath.Base(at.Filename), at.Line)
			if w := s.c.foreignWrite(fn, false); w != "" {
				s.distrustAll(fmt.Sprintf("TestMain %s (%s)", w, where))
				return true
			}
			for _, w := range s.c.funcWrites(fn.Origin(), map[*types.Func]bool{}) {
				switch {
				case w.all || !w.known:
					s.distrustAll(fmt.Sprintf("TestMain calls %s, which writes a variable the analysis cannot name (%s)", fn.Name(), where))
				default:
					s.unseal(w.name, fmt.Sprintf("TestMain calls %s, which writes %s (%s)", fn.Name(), w.name, where))
				}
			}
		}
		return true
	})
}

// bind binds the parameters of fd to the arguments of call that the seal
// can evaluate.
func (s *sealer) bind(fd *ast.FuncDecl, call *ast.CallExpr, env map[*types.Var]binding) map[*types.Var]binding {
	inner := map[*types.Var]binding{}
	i := 0
	for _, field := range fd.Type.Params.List {
		_, variadic := field.Type.(*ast.Ellipsis)
		names := field.Names
		if len(names) == 0 {
			i++
			continue
		}
		for _, id := range names {
			v, _ := s.c.info.Defs[id].(*types.Var)
			switch {
			case v == nil || i >= len(call.Args) && !variadic || reassigned(s.c.info, fd.Body, v):
			case variadic && listTouched(s.c.info, fd.Body, v):
			case variadic && call.Ellipsis.IsValid():
				if list, ok := s.list(call.Args[i], env); ok {
					inner[v] = binding{list: list, isList: true}
				}
			case variadic:
				var list []*string
				for _, a := range call.Args[min(i, len(call.Args)):] {
					e, _ := s.str(a, env)
					list = append(list, e)
				}
				inner[v] = binding{list: list, isList: true}
			default:
				if e, ok := s.str(call.Args[i], env); ok {
					inner[v] = binding{s: e}
				}
			}
			i++
		}
	}
	return inner
}

// str evaluates e to a string: a constant, or a variable the seal bound.
func (s *sealer) str(e ast.Expr, env map[*types.Var]binding) (*string, bool) {
	if v, ok := match.ConstString(s.c.info, e); ok {
		if why := s.c.constBuilds(e); why != "" {
			// The name is this build's only: unknown to the seal.
			if !s.sealed[v] && s.why[v] == "" {
				s.why[v] = fmt.Sprintf("TestMain names %s through %s", v, why)
			}
			return nil, false
		}
		return &v, true
	}
	if id, ok := ast.Unparen(e).(*ast.Ident); ok {
		if v, ok := s.c.info.Uses[id].(*types.Var); ok {
			if b, ok := env[v]; ok && !b.isList && b.s != nil {
				return b.s, true
			}
		}
	}
	return nil, false
}

// list evaluates e to a list of strings: a composite literal, a list the
// seal bound, or a package-level variable initialised with a composite
// literal and never changed (listWrite: by any file, in any way).
func (s *sealer) list(e ast.Expr, env map[*types.Var]binding) ([]*string, bool) {
	e = ast.Unparen(e)
	if lit, ok := e.(*ast.CompositeLit); ok {
		if _, ok := s.c.info.TypeOf(lit).Underlying().(*types.Map); ok {
			return nil, false
		}
		var out []*string
		for _, el := range lit.Elts {
			if _, ok := el.(*ast.KeyValueExpr); ok {
				return nil, false // indexed elements: another order, gaps
			}
			v, _ := s.str(el, env)
			out = append(out, v)
		}
		return out, true
	}
	var v *types.Var
	switch x := e.(type) {
	case *ast.Ident:
		v, _ = s.c.info.Uses[x].(*types.Var)
	case *ast.SelectorExpr:
		return nil, false
	}
	if v == nil {
		return nil, false
	}
	if b, ok := env[v]; ok && b.isList {
		return b.list, true
	}
	if !match.IsPackageLevel(v) || v.Pkg() != s.c.pass.Pkg {
		return nil, false
	}
	init := s.c.initializer(v)
	if init == nil {
		return nil, false
	}
	if why := s.c.listWrite(v); why != "" {
		// The names TestMain empties are not the initialiser's: a
		// copy in another file's init may put any name there.
		s.distrustAll(fmt.Sprintf("TestMain ranges over %s, a package-level list the package may change (%s): the names it empties are not those of its initialiser", v.Name(), why))
		return nil, false
	}
	return s.list(init, nil)
}

// initializer returns the composite literal that initialises the
// package-level variable v, or nil.
func (c *checker) initializer(v *types.Var) *ast.CompositeLit {
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok || len(vs.Values) != len(vs.Names) {
					continue
				}
				for i, id := range vs.Names {
					if c.info.Defs[id] == v {
						lit, _ := ast.Unparen(vs.Values[i]).(*ast.CompositeLit)
						return lit
					}
				}
			}
		}
	}
	return nil
}

// with returns env with v bound to b.
// reassigned reports whether body assigns v, or takes its address (a
// write through the pointer): the name v was bound to no longer holds
// after it (red team batch 34, prefixseal: n = "CLICACHE_" + n in the
// loop over the names).
func reassigned(info *types.Info, body ast.Node, v *types.Var) bool {
	found := false
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && !found && info.Uses[id] == v && len(stack) > 0 {
			found = writes(stack[len(stack)-1], id)
		}
		return !found
	})
	return found
}

// listTouched reports whether body uses the list v other than to read
// it: by a range over it, len, or an element read. An element assigned
// (keys[i] = "LEASE_" + k), the list handed to a call (copy, sort, a
// helper), sliced, or its address taken may change the names it holds
// (red team batch 35, elemqualify).
func listTouched(info *types.Info, body ast.Node, v *types.Var) bool {
	touched := false
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if touched || !ok || info.Uses[id] != v {
			return !touched
		}
		var child ast.Node = id
		i := len(stack) - 1
		for i >= 0 {
			if _, ok := stack[i].(*ast.ParenExpr); !ok {
				break
			}
			child = stack[i]
			i--
		}
		if i < 0 {
			return true
		}
		switch p := stack[i].(type) {
		case *ast.RangeStmt:
			if p.X == child {
				return true
			}
		case *ast.CallExpr:
			if fn, ok := ast.Unparen(p.Fun).(*ast.Ident); ok && fn.Name == "len" && info.Uses[fn] == types.Universe.Lookup("len") {
				return true
			}
		case *ast.IndexExpr:
			if p.X == child && i > 0 && !writes(stack[i-1], p) {
				return true
			}
		}
		touched = true
		return false
	})
	return touched
}

// writes reports whether parent writes e: e is an assignment's left side,
// incremented, or has its address taken.
func writes(parent ast.Node, e ast.Expr) bool {
	switch p := parent.(type) {
	case *ast.AssignStmt:
		for _, l := range p.Lhs {
			if l == e {
				return true
			}
		}
	case *ast.IncDecStmt:
		return p.X == e
	case *ast.UnaryExpr:
		return p.Op == token.AND
	}
	return false
}

func with(env map[*types.Var]binding, v *types.Var, b binding) map[*types.Var]binding {
	out := map[*types.Var]binding{v: b}
	for k, x := range env {
		if k != v {
			out[k] = x
		}
	}
	return out
}

// rerun says where TestMain may call m.Run more than once, or returns "":
// two calls (in TestMain or the package functions it calls), a call in a
// loop, a function literal or after a goto, or a *testing.M handed to code
// the analysis does not follow (a function value, another package, a call
// too deep).
func (c *checker) rerun(main *ast.FuncDecl) string {
	r := &runs{c: c, stack: map[*types.Func]bool{}}
	r.walk(main.Body, 0, false, "")
	switch {
	case r.again != "":
		return r.again
	case len(r.sites) > 1:
		return "m.Run at " + strings.Join(r.sites, " and ")
	}
	return ""
}

// runs collects where TestMain runs the tests.
type runs struct {
	c     *checker
	sites []string // file:line of each m.Run reached once
	again string   // why a call may run the tests more than once
	stack map[*types.Func]bool
}

func (r *runs) where(at token.Pos) string {
	p := r.c.pass.Fset.Position(at)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// walk looks for m.Run in n, following the package's functions; many says
// n may run more than once; via names the call of TestMain that reached n.
func (r *runs) walk(n ast.Node, depth int, many bool, via string) {
	c := r.c
	ast.Inspect(n, func(n ast.Node) bool {
		if r.again != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.ForStmt:
			for _, x := range []ast.Node{n.Init, n.Cond, n.Post} {
				if x != nil {
					r.walk(x, depth, many, via)
				}
			}
			r.walk(n.Body, depth, true, via)
			return false
		case *ast.RangeStmt:
			r.walk(n.X, depth, many, via)
			r.walk(n.Body, depth, true, via)
			return false
		case *ast.FuncLit:
			r.walk(n.Body, depth, true, via) // may be called any number of times
			return false
		case *ast.BranchStmt:
			if n.Tok == token.GOTO {
				many = true // conservative: a goto may jump back
			}
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" && match.IsNamed(c.info.TypeOf(sel.X), "testing", "M") {
				if many {
					r.again = fmt.Sprintf("m.Run at %s%s, in a loop, a function literal or after a goto", r.where(n.Pos()), via)
				} else {
					r.sites = append(r.sites, r.where(n.Pos())+via)
				}
				return true
			}
			fn := match.Callee(c.info, n)
			var fd *ast.FuncDecl
			if fn != nil {
				fd = c.decls[fn.Origin()]
			}
			switch {
			case fd != nil && fd.Body != nil && !r.stack[fn.Origin()] && depth < maxDepth:
				// A function of the package: what it runs, it runs
				// at each call.
				r.stack[fn.Origin()] = true
				in := via
				if in == "" {
					in = fmt.Sprintf(" through %s at %s", fn.Name(), r.where(n.Pos()))
				}
				r.walk(fd.Body, depth+1, many, in)
				delete(r.stack, fn.Origin())
			case passesM(c.info, n):
				// Code the analysis does not follow may run the tests
				// any number of times (its own writes are judged by
				// the seal's taint).
				r.again = fmt.Sprintf("%s at %s, given the *testing.M, may call m.Run more than once", types.ExprString(n.Fun), r.where(n.Pos()))
			}
		}
		return true
	})
}

// passesM reports whether call is given a *testing.M, or a value built
// from one, as an argument.
func passesM(info *types.Info, call *ast.CallExpr) bool {
	found := false
	for _, a := range call.Args {
		ast.Inspect(a, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && match.IsNamed(info.TypeOf(sel.X), "testing", "M") {
				return false // m.Run(): a call of its method, not m given away
			}
			if e, ok := n.(ast.Expr); ok && !found && match.IsNamed(info.TypeOf(e), "testing", "M") {
				found = true
			}
			return !found
		})
	}
	return found
}

// recovers reports whether body calls the built-in recover (in a deferred
// literal, typically).
func recovers(info *types.Info, body ast.Node) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && match.IsBuiltin(info, call.Fun, "recover") {
			found = true
		}
		return !found
	})
	return found
}
