package testscope

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rule/effect"
)

// A key identifies an environment variable name in the code: a constant,
// or a variable; "" when unknown.
type key string

func (c *checker) keyOf(e ast.Expr) key {
	if s, ok := match.ConstString(c.info, e); ok {
		return key("c:" + s)
	}
	if v := c.used(e); v != nil {
		return key(fmt.Sprintf("v:%p", v))
	}
	return ""
}

// An envWrite is a change to the process environment in a scope: a call,
// or a package function named there that makes one.
type envWrite struct {
	node ast.Node // the call, or the identifier of the function
	k    key
	all  bool // os.Clearenv, or a name the analysis cannot tell
	// via, for a function of another package, is how it writes the
	// environment ("lib.Reset, which sets the environment variable
	// (os.Setenv)"), from its effect summary.
	via string
}

func (w envWrite) touches(k key) bool {
	return w.all || k == "" || w.k == k
}

// envWrites returns the environment writes in root (closures included),
// following the package functions it names.
func (c *checker) envWrites(root ast.Node, seen map[*types.Func]bool, fn string) []envWrite {
	var out []envWrite
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if f, ok := c.info.Uses[n].(*types.Func); ok {
				if e := c.otherWrite(f, effect.WritesEnv); e != nil {
					out = append(out, envWrite{node: n, all: true, via: e.Why()})
					break
				}
				for _, w := range c.funcWrites(f.Origin(), seen) {
					w.node = n
					out = append(out, w)
				}
			}
		case *ast.CallExpr:
			switch {
			case match.IsPkgFunc(c.info, n, "os", "Setenv", "Unsetenv") || match.IsPkgFunc(c.info, n, "syscall", "Setenv", "Unsetenv"):
				w := envWrite{node: n}
				if len(n.Args) > 0 {
					w.k = c.keyOf(n.Args[0])
				}
				// Inside another function a variable key is not the
				// caller's variable.
				if w.k == "" || fn != "" && w.k[0] == 'v' {
					w.all = true
				}
				out = append(out, w)
			case match.IsPkgFunc(c.info, n, "os", "Clearenv") || match.IsPkgFunc(c.info, n, "syscall", "Clearenv"):
				out = append(out, envWrite{node: n, all: true})
			}
		}
		return true
	})
	return out
}

func (c *checker) funcWrites(fn *types.Func, seen map[*types.Func]bool) []envWrite {
	if ws, ok := c.memo[fn]; ok {
		return ws
	}
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil || seen[fn] {
		return nil
	}
	seen[fn] = true
	ws := c.envWrites(fd.Body, seen, fn.Name())
	delete(seen, fn)
	c.memo[fn] = ws
	return ws
}

// A restore is the statement that undoes an os.Setenv: defer
// os.Unsetenv(k), defer os.Setenv(k, old) with its capture.
type restore struct {
	stmt    ast.Stmt
	call    *ast.CallExpr
	capture *capture
}

// A setenv is an os.Setenv statement of a scope.
type setenv struct {
	site
	call  *ast.CallExpr
	k     key
	ifErr bool // if err := os.Setenv(...); err != nil { ... }
}

// env rewrites os.Setenv to t.Setenv and reports os.Unsetenv.
func (c *checker) env(sc *scope, sites []site) {
	var sets []*setenv
	for _, s := range sites {
		switch st := s.stmt.(type) {
		case *ast.ExprStmt:
			call, ok := ast.Unparen(st.X).(*ast.CallExpr)
			if !ok {
				continue
			}
			if match.IsPkgFunc(c.info, call, "os", "Setenv") && len(call.Args) == 2 {
				sets = append(sets, &setenv{site: s, call: call, k: c.keyOf(call.Args[0])})
			}
			if match.IsPkgFunc(c.info, call, "os", "Unsetenv") && len(call.Args) == 1 {
				c.pass.Report(rule.Diagnostic{
					Pos:      call.Pos(),
					End:      call.End(),
					Message:  fmt.Sprintf("os.Unsetenv(%s) changes the environment of every later test", c.text(call.Args[0])),
					NotFixed: "unsetting is not scoped to the test; t.Setenv(k, \"\") empties it for the test",
				})
			}
		case *ast.IfStmt:
			call := callOfStmt(st)
			if call != nil && match.IsPkgFunc(c.info, call, "os", "Setenv") && len(call.Args) == 2 && c.errIf(st, call) != nil {
				sets = append(sets, &setenv{site: s, call: call, k: c.keyOf(call.Args[0]), ifErr: true})
			}
		}
	}
	if len(sets) == 0 {
		return
	}
	writes := c.envWrites(sc.body, map[*types.Func]bool{}, "")
	mine := map[ast.Node]bool{}
	for _, s := range sets {
		mine[s.call] = true
	}
	// The restores, each claimed by the first os.Setenv of its name.
	restores := map[*setenv][]restore{}
	claimed := map[ast.Stmt]bool{}
	for _, s := range sets {
		list := match.StmtList(s.parent)
		idx := indexOf(list, s.stmt)
		for _, st := range list {
			if claimed[st] {
				continue
			}
			call := c.restoreCall(st)
			if call == nil || len(call.Args) == 0 || s.k == "" || c.keyOf(call.Args[0]) != s.k {
				continue
			}
			r := restore{stmt: st, call: call}
			switch {
			case match.IsPkgFunc(c.info, call, "os", "Unsetenv") && len(call.Args) == 1:
			case match.IsPkgFunc(c.info, call, "os", "Setenv") && len(call.Args) == 2:
				old := c.used(call.Args[1])
				if old == nil {
					continue
				}
				r.capture = c.findCapture(list, idx, old, func(call *ast.CallExpr) bool {
					return match.IsPkgFunc(c.info, call, "os", "Getenv", "LookupEnv") && len(call.Args) == 1 && c.keyOf(call.Args[0]) == s.k
				})
				if r.capture == nil {
					continue
				}
			default:
				continue
			}
			claimed[st] = true
			mine[call] = true
			restores[s] = append(restores[s], r)
		}
	}
	for _, s := range sets {
		name := c.text(s.call.Args[0])
		d := rule.Diagnostic{
			Pos:     s.call.Pos(),
			End:     s.call.End(),
			Message: fmt.Sprintf("os.Setenv(%s, ...) changes the environment of every later test", name),
		}
		var why string
		for _, w := range writes {
			if !mine[w.node] && w.touches(s.k) {
				why = fmt.Sprintf("the test also changes %s in a way the rule does not recognise as a restore", name)
				if w.via != "" {
					why = fmt.Sprintf("the test also calls %s; it may change %s in a way the rule does not recognise as a restore", w.via, name)
				}
				break
			}
		}
		var dels []ast.Stmt
		var delNodes []ast.Node
		for _, r := range restores[s] {
			dels = append(dels, r.stmt)
			if r.capture != nil {
				more, ok := c.removable(r.capture, r.stmt)
				if !ok {
					why = "the value saved for the restore is needed elsewhere"
				}
				dels = append(dels, more...)
			}
		}
		for _, st := range dels {
			delNodes = append(delNodes, c.deletes(s.parent, st)...)
		}
		switch {
		case why != "":
		case sc.inParallel():
			why = "the test runs in parallel; t.Setenv would panic"
		case deferred(restores[s]) != nil && c.parallelSubtest(sc) != "":
			// A deferred restore runs when the test function returns,
			// before its parallel subtests resume; t.Setenv's runs after
			// them.
			why = fmt.Sprintf("the deferred restore (%s) runs before the parallel subtests (%s) resume, so they run with %s restored; t.Setenv would keep it set for them", c.line(deferred(restores[s])), c.parallelSubtest(sc), name)
		case !c.atLeast("go1.17"):
			why = c.tooOld("t.Setenv", "go1.17")
		case !s.ifErr && c.mayBeRefused(s.call):
			// os.Setenv refuses a value with a NUL byte, or a key with
			// '=' or a NUL byte (EINVAL), and the statement drops the
			// error; t.Setenv fails the test on it (red team batch 21,
			// nulenv: a table row that relies on the refusal).
			why = fmt.Sprintf("os.Setenv's error is dropped and its key or value (%s) is data the analysis cannot read (a table row's field, a parameter): os.Setenv refuses a value with a NUL byte or a key with '=', which the test ignores, and t.Setenv fails the test on it", c.text(s.call.Args[1]))
		case c.restoreBefore(restores[s], s) != "":
			why = c.restoreBefore(restores[s], s)
		case !c.resolves(sc.t.Name(), s.stmt.Pos(), sc.t):
			why = fmt.Sprintf("%s does not name the test's %s here", sc.t.Name(), types.TypeString(sc.t.Type(), types.RelativeTo(c.pass.Pkg)))
		}
		if why == "" {
			undo := deferred(restores[s])
			if undo == nil && len(restores[s]) > 0 {
				undo = restores[s][0].stmt
			}
			why = c.orderHazard(sc, s.stmt, undo, fmt.Sprintf("with %s still set", name))
			if undo == nil && why != "" {
				why = fmt.Sprintf("the test never restores %s; %s", name, why)
			}
		}
		// What the test leaves for the tests after it changes. Without
		// a restore, running the package shows whether a later test
		// needed the leaked value; a restore that leaves the variable
		// other than it found it differs only by the environment the
		// tests start in, which only the machine that runs them knows.
		// A later test that relied on the leaked value (a short period)
		// runs with the default after the restore and misses what it
		// caught: not fixed.
		var later string
		who, after := c.laterRead(sc, c.envReadOf(s.k), c.envRead(s.k), c.envSetOf(s.k), nil)
		if lit, ok := strings.CutPrefix(string(s.k), "c:"); who == "" && ok {
			who, after = c.leftOutReader(lit, func() map[string]bool { return c.readingFuncs(c.envReadOf(s.k)) }, true), true
		}
		if who == "" {
			// A process a later test starts reads it too (child.go).
			who, after = c.childReader(sc, s.k)
		}
		if why == "" && who != "" {
			if after || len(restores[s]) > 0 {
				why = c.leftFor(restores[s], name, who)
			} else {
				// A test that runs before it sees the leak only under
				// -count or -shuffle: running the package shows whether
				// it needs it.
				later = c.leftFor(nil, name, who)
			}
		}
		if why != "" {
			d.NotFixed = why
			c.pass.Report(d)
			continue
		}
		msg := fmt.Sprintf("use t.Setenv, which restores %s when the test ends", name)
		if len(restores[s]) > 0 {
			msg += "; remove the restore"
		}
		s, t := s, sc.t.Name()
		if s.ifErr {
			delNodes = append(delNodes, s.stmt.(*ast.IfStmt).Body)
		}
		d.Fix = &rule.Fix{
			Message: msg,
			Changes: []rule.Change{{Kind: rule.Paths, What: "the variable is set for this test only and restored when it ends", Checked: checked(later,
				"no later test reads the variable without setting it, through the package's code or a package of the module it names, or starts a process that inherits it (what the restore leaves differs)",
				"no parallel subtest runs after a deferred restore",
				"no call deferred before the restore, and no cleanup registered after the change (by t.Cleanup or code given t), that would now run before the restore",
			)}},
			Deletes:    delNodes,
			Hypothesis: rule.Unproven(joinReasons(mayPanic(sc, "t.Setenv"), later)),
			Apply: func() error {
				call := c.pass.Dst(s.call).(*dst.CallExpr)
				call.Fun = &dst.SelectorExpr{X: dst.NewIdent(t), Sel: dst.NewIdent("Setenv")}
				if s.ifErr {
					// t.Setenv fails the test itself.
					old := c.pass.Dst(s.stmt).(*dst.IfStmt)
					es := &dst.ExprStmt{X: call}
					es.Decs.NodeDecs = old.Decs.NodeDecs
					if err := c.replaceStmt(s.parent, s.stmt, es); err != nil {
						return err
					}
				}
				return c.deleteStmts(s.parent, dels...)
			},
		}
		c.pass.Report(d)
	}
}

// deferred returns the first restore made by a defer statement (not a
// t.Cleanup), or nil.
func deferred(rs []restore) ast.Stmt {
	for _, r := range rs {
		if _, ok := r.stmt.(*ast.DeferStmt); ok {
			return r.stmt
		}
	}
	return nil
}

// leftFor says how what the original leaves for the tests after it
// differs from what t.Setenv leaves (the value the test found, unset
// included), when who may read it.
func (c *checker) leftFor(rs []restore, name, who string) string {
	if len(rs) == 0 {
		return fmt.Sprintf("the test leaves %s set for the tests after it, and %s may read it without setting it: t.Setenv's restore would change what it sees", name, who)
	}
	if match.IsPkgFunc(c.info, rs[0].call, "os", "Unsetenv") {
		return fmt.Sprintf("the restore (%s) leaves %s unset, where t.Setenv puts back the value it had before the test, and %s may read it without setting it", c.line(rs[0].stmt), name, who)
	}
	return fmt.Sprintf("the restore (%s) leaves %s set (to \"\" when it was unset), where t.Setenv unsets it again, and %s may read it without setting it (os.LookupEnv tells them apart)", c.line(rs[0].stmt), name, who)
}

// checked lists the hazards a fix excludes: all of them, or, when the
// fix is unproven because a later test may read what it restores (later),
// all but the first, which it does not exclude.
func checked(later string, hazards ...string) []string {
	if later != "" {
		return hazards[1:]
	}
	return hazards
}

// joinReasons joins the reasons that are not empty.
func joinReasons(rs ...string) string {
	var out []string
	for _, r := range rs {
		if r != "" {
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}

// mayPanic says why api (t.Setenv, t.Chdir), which panics in a parallel
// test, may run in one from sc although the rule cannot see it does, or "".
func mayPanic(sc *scope, api string) string {
	if why := sc.maybeParallel(); why != "" {
		return fmt.Sprintf("%s; %s would panic there", why, api)
	}
	return ""
}

func indexOf(list []ast.Stmt, st ast.Stmt) int {
	for i, s := range list {
		if s == st {
			return i
		}
	}
	return -1
}

// text returns the source of e, shortened to a constant's value when it is
// one.
func (c *checker) text(e ast.Expr) string {
	if s, ok := match.ConstString(c.info, e); ok {
		if _, lit := e.(*ast.BasicLit); lit {
			return strconv.Quote(s)
		}
	}
	return types.ExprString(e)
}

var _ = token.ASSIGN

// otherWrite returns the first effect of kind in the summary of fn, a
// function of another package outside the standard library, or nil when
// it has none or is unknown: the rule does not judge code it cannot see,
// as before summaries. A method called through an interface stays
// unknown.
func (c *checker) otherWrite(fn *types.Func, kind effect.Kind) *effect.Effect {
	fn = fn.Origin()
	if fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg || match.IsStd(fn.Pkg().Path()) {
		return nil
	}
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		return nil
	}
	s := c.pass.Effects.Of(fn)
	if s == nil {
		return nil
	}
	for _, e := range s.Effects {
		if e.Kind == kind {
			return &e
		}
	}
	return nil
}

// mayBeRefused reports whether os.Setenv(k, v) may fail on what its
// arguments hold: a constant with a NUL byte (or, for the key, '=' or
// nothing), or data the analysis cannot read (a field, an element, a
// parameter, a range variable: a table row). A value a call computes (a
// temporary directory, a joined path, a formatted number) is taken to
// hold none.
func (c *checker) mayBeRefused(call *ast.CallExpr) bool {
	var refused func(e ast.Expr, isKey bool, depth int) bool
	refused = func(e ast.Expr, isKey bool, depth int) bool {
		if tv, ok := c.info.Types[e]; ok && tv.Value != nil {
			if tv.Value.Kind() != constant.String {
				return false
			}
			v := constant.StringVal(tv.Value)
			return strings.ContainsRune(v, 0) || isKey && (v == "" || strings.ContainsRune(v, '='))
		}
		switch e := ast.Unparen(e).(type) {
		case *ast.CallExpr:
			return false
		case *ast.BinaryExpr:
			return refused(e.X, isKey, depth) || refused(e.Y, isKey, depth)
		case *ast.Ident:
			v, ok := c.info.Uses[e].(*types.Var)
			if !ok || depth > 3 {
				return true
			}
			// A local set once from something that holds no such byte.
			var rhs []ast.Expr
			n := 0
			for id, obj := range c.info.Defs {
				if obj == v {
					if vs, ok := c.definingValue(id); ok {
						rhs = append(rhs, vs)
					}
					n++
				}
			}
			if n == 1 && len(rhs) == 1 {
				return refused(rhs[0], isKey, depth+1)
			}
			// A helper's parameter: what every call in the package
			// hands it.
			args := c.paramArgs(v)
			if len(args) == 0 {
				return true
			}
			for _, a := range args {
				if refused(a, isKey, depth+1) {
					return true
				}
			}
			return false
		}
		return true
	}
	return refused(call.Args[0], true, 0) || refused(call.Args[1], false, 0)
}

// definingValue returns the value a := or var declaration gives id,
// when it gives one of its own (not a range clause's, a parameter's).
func (c *checker) definingValue(id *ast.Ident) (ast.Expr, bool) {
	for _, f := range c.pass.Files {
		if id.Pos() < f.Pos() || id.Pos() >= f.End() {
			continue
		}
		var out ast.Expr
		ast.Inspect(f, func(n ast.Node) bool {
			if out != nil {
				return false
			}
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					break
				}
				for i, l := range n.Lhs {
					switch {
					case l != ast.Expr(id):
					case len(n.Lhs) == len(n.Rhs):
						out = n.Rhs[i]
					case len(n.Rhs) == 1:
						// dir, err := os.MkdirTemp(...): one of a call's
						// results, which the call computes.
						if _, isCall := ast.Unparen(n.Rhs[0]).(*ast.CallExpr); isCall {
							out = n.Rhs[0]
						}
					}
				}
			case *ast.ValueSpec:
				if len(n.Names) == len(n.Values) {
					for i, nm := range n.Names {
						if nm == id {
							out = n.Values[i]
						}
					}
				}
			}
			return true
		})
		return out, out != nil
	}
	return nil, false
}

// restoreBefore says why a restore registered before the set (a
// t.Cleanup or defer that unsets it, ahead of the os.Setenv) cannot
// become t.Setenv's: the cleanups and defers registered between the two
// run with the variable still set in the original, and after t.Setenv's
// restore, which is registered at the set, in the rewrite (red team
// batch 21, profstop: a profiler's Stop that reads where to write). ""
// when no restore comes first, or nothing registers between.
func (c *checker) restoreBefore(rs []restore, s *setenv) string {
	list := match.StmtList(s.parent)
	at := indexOf(list, s.stmt)
	for _, r := range rs {
		from := indexOf(list, r.stmt)
		if from < 0 || at < 0 || from > at {
			continue
		}
		for _, st := range list[from+1 : at] {
			if c.registers(st) {
				return fmt.Sprintf("the restore (%s) is registered before the set, and %s, between them, registers a cleanup that runs with the variable still set; t.Setenv's restore, registered at the set, would run before it", c.line(r.stmt), c.line(st))
			}
		}
	}
	return ""
}

// registers reports whether st registers something that runs at the
// test's end: a defer, a t.Cleanup, or a call handed the test (a helper
// or the code may register cleanups on it).
func (c *checker) registers(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.DeferStmt:
			found = true
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Cleanup" {
				found = true
			}
			for _, a := range n.Args {
				if t := c.info.TypeOf(a); t != nil && match.IsNamed(t, "testing", "T", "B", "TB", "F") {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// paramArgs returns the arguments every call in the package's files
// hands the parameter v of a function declared there, or nil when v is
// no such parameter or a call cannot be read (a variadic one, the
// function used as a value).
func (c *checker) paramArgs(v *types.Var) []ast.Expr {
	var fn *types.Func
	index := -1
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Type.Params == nil || v.Pos() < fd.Type.Params.Pos() || v.Pos() >= fd.Type.Params.End() {
				continue
			}
			fn, _ = c.info.Defs[fd.Name].(*types.Func)
			i := 0
			for _, field := range fd.Type.Params.List {
				for _, name := range field.Names {
					if c.info.Defs[name] == v {
						index = i
					}
					i++
				}
			}
		}
	}
	if fn == nil || index < 0 || fn.Type().(*types.Signature).Variadic() {
		return nil
	}
	var out []ast.Expr
	called := map[*ast.Ident]bool{}
	ok := true
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if match.Callee(c.info, n) == fn {
					if id, isID := ast.Unparen(n.Fun).(*ast.Ident); isID {
						called[id] = true
					}
					if index < len(n.Args) {
						out = append(out, n.Args[index])
					}
				}
			case *ast.Ident:
				// fn used other than in a call of it: its callers are
				// not all here.
				if c.info.Uses[n] == fn && !called[n] {
					ok = false
				}
			}
			return true
		})
	}
	if !ok {
		return nil
	}
	return out
}
