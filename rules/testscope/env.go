package testscope

import (
	"fmt"
	"go/ast"
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
