package parallel

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A test made parallel leaves its place in the order the original fixes:
// it runs after every test that stays sequential and beside the other
// parallel ones. The shared-state analysis (shared.go) looks at the
// correct code, which may keep no package state at all; a bug may add
// some (a lazy default warmed by the first caller, a cache, a sync.Once),
// and then which test reaches the code first decides which test catches
// it. So the rule keeps the order in which tests first reach each
// function of the code under test, as far as a rewrite can:
//
//   - a test that a later test, staying sequential, reaches the same
//     function as, stays sequential: made parallel, it would run after
//     that test instead of before it;
//   - the first test (in run order) to reach a function another test
//     reaches too stays sequential: it is the one that sees that code
//     fresh, and made parallel it would run after, or beside, the others.
//
// Tests made parallel still run beside each other: what one leaves in
// bug-only state another may see in either order (a limit, see doc.md).

// A test is a top-level test of the package, in run order.
type test struct {
	fd   *ast.FuncDecl
	t    *types.Var
	file string
	// edit is false for a test the rule may not rewrite (a generated
	// file, or one outside pass.Files): it keeps its mode.
	edit bool
	// parallel is true for a test that calls t.Parallel already; fixed
	// for one the rule makes parallel.
	parallel, fixed bool
	// reach is the set of functions of the code under test (the
	// package's non-test files) the test reaches, transitively; nil
	// until computed.
	reach map[*types.Func]bool
}

// tests returns the package's top-level tests in the order go test runs
// them: files by name, then declaration order.
func (c *checker) tests() []*test {
	editable := map[*ast.File]bool{}
	for _, f := range c.pass.Files {
		editable[f] = true
	}
	var ts []*test
	for _, f := range c.pass.AllFiles {
		name := c.pass.Fset.File(f.Pos()).Name()
		if !strings.HasSuffix(name, "_test.go") {
			continue
		}
		gen := ast.IsGenerated(f)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			t := c.testParam(fd)
			if t == nil || fd.Body == nil {
				continue
			}
			ts = append(ts, &test{
				fd: fd, t: t, file: name,
				edit:     editable[f] && !gen,
				parallel: c.callsParallel(fd.Body, t),
			})
		}
	}
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].file != ts[j].file {
			return ts[i].file < ts[j].file
		}
		return ts[i].fd.Pos() < ts[j].fd.Pos()
	})
	return ts
}

// name names ts as "TestX (x_test.go:12)".
func (c *checker) name(ts *test) string {
	return c.where(ts.fd.Name.Name, ts.fd.Name)
}

// order says why making tests[i] parallel would change the order in which
// tests first reach a function of the code under test, or "". Tests after
// i are decided already.
func (c *checker) order(tests []*test, i int) string {
	me := tests[i]
	mine := c.sorted(c.reachOf(me))
	if len(mine) == 0 {
		return ""
	}
	for _, other := range tests[i+1:] {
		if other.parallel || other.fixed {
			continue
		}
		if fn := common(mine, c.reachOf(other)); fn != nil {
			return fmt.Sprintf("calls %s, which %s, later in the run order, calls too and stays sequential: made parallel, the test would run after that test instead of before it, and see the package as that test leaves it (a lazy default, a cache, a sync.Once, even one only a bug adds)", fn.Name(), c.name(other))
		}
	}
	xs := c.variantsOf().xtests
	for _, xt := range xs {
		if xt.parallel {
			continue
		}
		if fn := commonKey(mine, xt.reach); fn != nil {
			return fmt.Sprintf("calls %s, which %s, a test of the external test package that runs after the package's own in the same binary, calls too and stays sequential: made parallel, the test would run after that test instead of before it, and see the package as that test leaves it (a lazy default, a cache, a sync.Once, even one only a bug adds)", fn.Name(), c.xname(xt))
		}
	}
	for _, fn := range mine {
		first := true
		for _, other := range tests[:i] {
			if !other.parallel && c.reachOf(other)[fn] {
				first = false
				break
			}
		}
		if !first {
			continue
		}
		for j, other := range tests {
			if j != i && c.reachOf(other)[fn] {
				return fmt.Sprintf("is the first test in the run order to call %s, which %s calls too: made parallel, the test would run after or beside it, and state the package keeps from the first call (a lazy default, a cache, a sync.Once, even one only a bug adds) would come from that test", fn.Name(), c.name(other))
			}
		}
		for _, xt := range xs {
			if xt.reach[typedKey(fn)] {
				return fmt.Sprintf("is the first test in the run order to call %s, which %s, a test of the external test package in the same binary, calls too: made parallel, the test would run after or beside it, and state the package keeps from the first call (a lazy default, a cache, a sync.Once, even one only a bug adds) would come from that test", fn.Name(), c.xname(xt))
			}
		}
	}
	return ""
}

// common returns the first of fns (sorted) in set, or nil.
func common(fns []*types.Func, set map[*types.Func]bool) *types.Func {
	for _, fn := range fns {
		if set[fn] {
			return fn
		}
	}
	return nil
}

// commonKey returns the first of fns (sorted) whose name (see funcKey)
// is in names, or nil.
func commonKey(fns []*types.Func, names map[string]bool) *types.Func {
	for _, fn := range fns {
		if names[typedKey(fn)] {
			return fn
		}
	}
	return nil
}

// xname names xt, a test of the external test package, as name does.
func (c *checker) xname(xt *xtest) string {
	return fmt.Sprintf("%s (%s)", xt.fd.Name.Name, c.variantsOf().base(xt.fd.Name))
}

// sorted returns the functions of set in source order.
func (c *checker) sorted(set map[*types.Func]bool) []*types.Func {
	fns := make([]*types.Func, 0, len(set))
	for fn := range set {
		fns = append(fns, fn)
	}
	sort.Slice(fns, func(i, j int) bool {
		pi, pj := c.pass.Fset.Position(fns[i].Pos()), c.pass.Fset.Position(fns[j].Pos())
		if pi.Filename != pj.Filename {
			return pi.Filename < pj.Filename
		}
		return pi.Offset < pj.Offset
	})
	return fns
}

// reachOf returns the functions of the code under test ts reaches: those
// it names (calls or takes as a value), directly or through the package's
// functions it names, test helpers included. A method called through an
// interface reaches every method of the package with its name.
func (c *checker) reachOf(ts *test) map[*types.Func]bool {
	if ts.reach == nil {
		ts.reach = map[*types.Func]bool{}
		c.reachIn(ts.fd.Body, ts.reach, map[*types.Func]bool{})
	}
	return ts.reach
}

func (c *checker) reachIn(root ast.Node, out, seen map[*types.Func]bool) {
	ast.Inspect(root, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		fn, ok := c.info.Uses[id].(*types.Func)
		if !ok || fn.Pkg() == nil {
			return true
		}
		fn = fn.Origin()
		if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
			for m := range c.decls {
				if m.Name() == fn.Name() && m.Type().(*types.Signature).Recv() != nil {
					c.follow(m, out, seen)
				}
			}
			return true
		}
		if fn.Pkg() == c.pass.Pkg {
			c.follow(fn, out, seen)
		}
		return true
	})
	// Methods code outside the package may call on values root hands it.
	for _, h := range c.handoffs(root) {
		c.follow(h.method, out, seen)
	}
}

// follow adds fn to out if it is code under test, and what it reaches.
func (c *checker) follow(fn *types.Func, out, seen map[*types.Func]bool) {
	if seen[fn] {
		return
	}
	seen[fn] = true
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil {
		return
	}
	if !strings.HasSuffix(c.pass.Fset.Position(fd.Pos()).Filename, "_test.go") {
		out[fn] = true
	}
	c.reachIn(fd.Body, out, seen)
}

// clockFuncs are the functions of package time that read or wait on the
// real clock.
var clockFuncs = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// clock says how root, a test body or a function it calls, uses the real
// clock outside a synctest bubble ("waits on the real clock (time.After at
// deb_test.go:12)", "calls New, which ..."), or "". A test whose checks
// depend on elapsed real time (a sleep then a check, a deadline in a
// select, a timer of the code under test that the test waits a window
// for, a rate the code computes from time.Now) would, beside other tests,
// see its windows stretched by their load: a deadline passes on correct
// code, or a "not yet" check passes a bug that fires early. The rule
// cannot tell which uses the checks depend on, so any use counts. Code in
// a synctest bubble (synctest.Test, synctest.Run) runs on virtual time,
// which no neighbour stretches.
func (c *checker) clock(root ast.Node) string {
	found := ""
	ast.Inspect(root, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			if match.IsPkgFunc(c.info, n, "testing/synctest", "Test", "Run") {
				return false // virtual time, for the code it calls too
			}
			what := ""
			switch {
			case match.IsPkgFunc(c.info, n, "time", clockFuncs...):
				what = match.PkgFuncName(match.Callee(c.info, n))
			case match.IsPkgFunc(c.info, n, "context", "WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause"):
				what = match.PkgFuncName(match.Callee(c.info, n))
			case match.IsMethod(c.info, n, "testing", "Deadline"):
				what = "t.Deadline"
			}
			if what != "" {
				p := c.pass.Fset.Position(n.Pos())
				found = fmt.Sprintf("uses the real clock (%s at %s:%d)", what, filepath.Base(p.Filename), p.Line)
			}
		case *ast.Ident:
			switch obj := c.info.Uses[n].(type) {
			case *types.Func:
				if obj.Pkg() != c.pass.Pkg {
					return true
				}
				if inner := c.funcClock(obj.Origin()); inner != "" {
					found = "calls " + obj.Name() + ", which " + inner
				}
			case *types.Var:
				if how := c.clockVarsOf()[obj]; how != "" {
					found = "reads package-level variable " + obj.Name() + ", " + how
				}
			}
		}
		return true
	})
	for _, h := range c.handoffs(root) {
		if found != "" {
			break
		}
		if inner := c.funcClock(h.method); inner != "" {
			found = h.how() + ", which " + inner
		}
	}
	return found
}

// funcClock returns clock for the body of the package function fn; ""
// while fn is being followed.
func (c *checker) funcClock(fn *types.Func) string {
	if s, ok := c.clockMemo[fn]; ok {
		return s
	}
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil {
		return ""
	}
	c.clockMemo[fn] = ""
	s := c.clock(fd.Body)
	c.clockMemo[fn] = s
	return s
}

// clockVarsOf returns the package-level variables of the package whose
// value comes from the real clock, each with a phrase saying where ("set
// from the real clock at package initialisation (time.Now at
// health.go:9)"): a variable whose initialiser reads the clock, or that
// code reading the clock writes (init stamping a start time, a goroutine
// counting ticks, a sync.Once keeping the time of its first call). Such a
// stamp is state every test shares through the order: a test that reads
// it (an uptime, a grace period since start) sees another value when,
// made parallel, it runs after the sequential tests instead of first.
// Writes outside init are shared state already (shared.go); this also
// catches those of init and of package-level declarations, which happen
// once, before or as the first test runs.
func (c *checker) clockVarsOf() map[*types.Var]string {
	if c.clockVars != nil {
		return c.clockVars // complete, or partial while computing
	}
	c.clockVars = map[*types.Var]string{}
	mark := func(v *types.Var, how string) bool {
		if v == nil || v.Pkg() != c.pass.Pkg || !match.IsPackageLevel(v) || c.clockVars[v] != "" {
			return false
		}
		c.clockVars[v] = how
		return true
	}
	// A stamp may come from another one (var deadline = started.Add(d)):
	// repeat until no variable is added, forgetting what funcClock
	// computed from the smaller set.
	for changed := true; changed; {
		changed = false
		for _, f := range c.pass.AllFiles {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					if d.Tok != token.VAR {
						continue
					}
					for _, spec := range d.Specs {
						vs := spec.(*ast.ValueSpec)
						for i, name := range vs.Names {
							var value ast.Expr
							switch {
							case len(vs.Values) == len(vs.Names):
								value = vs.Values[i]
							case len(vs.Values) == 1:
								value = vs.Values[0]
							default:
								continue
							}
							if w := c.clock(value); w != "" {
								v, _ := c.info.Defs[name].(*types.Var)
								changed = mark(v, "set at package initialisation from code that "+w) || changed
							}
						}
					}
				case *ast.FuncDecl:
					if d.Body == nil {
						continue
					}
					w := c.clock(d.Body)
					if w == "" {
						continue
					}
					match.ModifiesFunc(c.info, d.Body, func(v *types.Var) bool {
						changed = mark(v, "which "+d.Name.Name+" writes, and "+d.Name.Name+" "+w) || changed
						return false
					})
				}
			}
		}
		if changed {
			clear(c.clockMemo)
		}
	}
	return c.clockVars
}
