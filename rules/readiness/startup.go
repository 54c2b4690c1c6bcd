package readiness

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"time"

	"github.com/unflake/unflake/internal/contract"
	"github.com/unflake/unflake/internal/match"
)

// Start-up hazards: the readiness line follows the handler's install,
// while the sleep it replaces covered the child's whole start-up, up to
// its wait for the signal (its steady state). Two kinds of start-up work
// change meaning when the signal comes sooner:
//
//   - work that reads the signal channel, or what the signal cancels (a
//     replay that polls the channel and aborts, a select on it with a
//     default, a context a goroutine cancels on the signal, the context
//     of signal.NotifyContext): the signal now lands during that work and
//     takes its abort path, a path the sleep never let the test reach. A
//     correct daemon that aborts its recovery fails the test, or a test
//     that checks the recovery's output passes on a bug it no longer
//     reaches. Running the test cannot reliably tell (it depends on how
//     long the start-up takes), so such a site is not fixed.
//   - timed work of the child's (its tickers, timers, sleeps, deadlines,
//     its own or the code's it calls) running before it waits for the
//     signal, of a duration shorter than the sleep: the sleep is the
//     window that work runs in (heartbeats counted over a second), and
//     the handshake removes it. Not fixed either.

// startupChecked and timedChecked are the Checked entries of a fix: the
// hazards excluded.
const (
	startupChecked = "a buffered signal channel, and the child reads neither the signal channel nor what the signal cancels between installing its handler and waiting for the signal"
	timedChecked   = "the child runs no timer, ticker, sleep or deadline shorter than the sleep before it waits for the signal"
)

// A span is the child's start-up as the walker follows it: what runs
// before the readiness point and what runs after it, up to the child's
// steady wait for the signal.
type span struct {
	found  bool       // the readiness point is on the helper's path
	before []ast.Node // the helper's top-level statements up to the one holding the readiness point
	ran    []ast.Node // the statements after the readiness point, up to the steady wait
	waited bool       // the last of ran is the steady wait
	wait   *walker    // the walker, whose taint names the signal channel and what it cancels
}

// startup follows the child's start-up from the readiness point n to its
// steady wait; why says why the line would come before work that reads
// the signal, naming the work and its line, or is "".
func (c *checker) startup(helper *ast.FuncDecl, n *notify) (sp span, why string) {
	w := &walker{c: c, taint: map[types.Object]bool{}, helper: helper}
	sp.wait = w
	for _, call := range c.allNotify(helper.Body, 0, map[*ast.FuncDecl]bool{helper: true}) {
		if len(call.Args) > 0 {
			w.seed(call.Args[0])
			if at := c.unbuffered(call.Args[0]); at != "" {
				return sp, fmt.Sprintf("the child's signal channel is unbuffered (make at %s): signal.Notify drops a signal the child is not receiving at that moment, and the readiness line comes before the child receives, where the sleep let it get there; buffer the channel (make(chan os.Signal, 1)), as go vet asks", at)
			}
		}
	}
	// The context of signal.NotifyContext is cancelled by the signal.
	ast.Inspect(helper.Body, func(m ast.Node) bool {
		if a, ok := m.(*ast.AssignStmt); ok {
			for _, r := range a.Rhs {
				if call, ok := ast.Unparen(r).(*ast.CallExpr); ok && match.IsPkgFunc(c.info, call, "os/signal", "NotifyContext") {
					for _, l := range a.Lhs {
						w.seed(l)
					}
				}
			}
		}
		return true
	})

	// What runs after the readiness point: the statements after it in its
	// block and the enclosing ones; when it is in a function the helper
	// calls, then the helper's statements after that call, which also
	// receive the channel that function returns.
	var rest []ast.Stmt
	top := -1
	if helper.Body.Pos() <= n.stmt.Pos() && n.stmt.End() <= helper.Body.End() {
		rest, top = after(helper.Body, n.stmt)
		if a, ok := n.stmt.(*ast.AssignStmt); ok { // c := setupSignals()
			for _, l := range a.Lhs {
				w.seed(l)
			}
		}
	} else if fd := c.enclosingDecl(n.stmt); fd != nil {
		rest, _ = after(fd.Body, n.stmt)
		for i, st := range helper.Body.List {
			if c.reachesDecl(st, fd, 0, map[*ast.FuncDecl]bool{}) {
				top = i
				if a, ok := st.(*ast.AssignStmt); ok {
					for _, l := range a.Lhs {
						w.seed(l)
					}
				}
				rest = append(rest, helper.Body.List[i+1:]...)
				break
			}
		}
	}
	if top < 0 {
		return sp, ""
	}
	sp.found = true
	for _, st := range helper.Body.List[:top+1] {
		sp.before = append(sp.before, st)
		// A goroutine started before the handler runs during start-up too.
		if g, ok := st.(*ast.GoStmt); ok {
			if v := w.goStmt(g, 0); v.why != "" {
				return sp, w.reason(v.why)
			}
		}
	}
	w.ran = &sp.ran
	v := w.seq(rest, 0, true)
	w.ran = nil
	if v.why != "" {
		return sp, w.reason(v.why)
	}
	sp.waited = v.waited
	return sp, ""
}

// timedHazard says why the sleep of s is the window of timed work the
// child runs before its steady wait, naming the work and its line; or "".
func (c *checker) timedHazard(s *site, helper *ast.FuncDecl, sp span) string {
	if !sp.found {
		return ""
	}
	// Timed work before the steady wait, of the order of the sleep.
	window, known := c.sleepLength(s)
	find := contract.NewFinder(c.pass.Fset, c.info, c.decls, c.pass.AllFiles)
	for _, d := range find.Timed(helper, sp.before, sp.ran) {
		if d.Known && (d.Value <= 0 || known && d.Value >= window) {
			continue
		}
		what := "a duration of unknown length"
		if d.Known {
			what = match.FormatDuration(d.Value)
		}
		return fmt.Sprintf("the child runs timed work of %s (%s at %s) before it waits for the signal, and the sleep is the window it runs in: a readiness line ends the wait as soon as the handler is installed, so what the test counts or checks of that work after the signal (ticks, beats, a timeout) would no longer have happened, on correct code or a bug; keep the sleep, or have the test wait for the work it checks", what, d.Site, d.Where)
	}
	return ""
}

// unbuffered returns where the channel e names is made without a buffer
// (make(chan os.Signal) or a size of 0), or "".
func (c *checker) unbuffered(e ast.Expr) string {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return ""
	}
	obj := c.info.ObjectOf(id)
	if obj == nil {
		return ""
	}
	var at string
	check := func(r ast.Expr) {
		call, ok := ast.Unparen(r).(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return
		}
		if b, ok := c.info.Uses[identOf(call.Fun)].(*types.Builtin); !ok || b.Name() != "make" {
			return
		}
		if len(call.Args) == 1 {
			at = c.line(call)
			return
		}
		if v := c.info.Types[call.Args[1]].Value; v != nil && constant.Sign(v) == 0 {
			at = c.line(call)
		}
	}
	for _, f := range c.pass.AllFiles {
		if f.Pos() > obj.Pos() || obj.Pos() > f.End() {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						if lid, ok := ast.Unparen(l).(*ast.Ident); ok && c.info.ObjectOf(lid) == obj {
							check(n.Rhs[i])
						}
					}
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if c.info.Defs[name] == obj && i < len(n.Values) {
						check(n.Values[i])
					}
				}
			}
			return at == ""
		})
	}
	return at
}

// identOf returns e as an identifier, or nil.
func identOf(e ast.Expr) *ast.Ident {
	id, _ := ast.Unparen(e).(*ast.Ident)
	return id
}

// reason words the signal hazard at why.
func (w *walker) reason(why string) string {
	return fmt.Sprintf("the child reads the signal (or what it cancels) during start-up, after installing its handler and before it waits for the signal (%s): the readiness line would come before that work, so the signal could land during it and take its abort path, which the sleep never let the test reach; write the line once the child is fully started, and wait for it", why)
}

// sleepLength returns the constant length of the sleep of s.
func (c *checker) sleepLength(s *site) (time.Duration, bool) {
	es, ok := s.list[s.sleep].(*ast.ExprStmt)
	if !ok {
		return 0, false
	}
	call, ok := ast.Unparen(es.X).(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return 0, false
	}
	tv := c.info.Types[call.Args[0]]
	if tv.Value == nil {
		return 0, false
	}
	n, exact := constant.Int64Val(constant.ToInt(tv.Value))
	return time.Duration(n), exact
}

// after returns the statements that run after st in body (those after it
// in its list, then after each enclosing statement), and the index in
// body.List of the statement holding st; -1 when st is not in body.
func after(body *ast.BlockStmt, st ast.Stmt) ([]ast.Stmt, int) {
	var path []ast.Node
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		if path != nil || n.Pos() > st.Pos() || n.End() < st.End() {
			return false
		}
		if n == ast.Node(st) {
			path = append(append([]ast.Node{}, stack...), n)
			return false
		}
		return true
	})
	if len(path) < 2 {
		return nil, -1
	}
	var rest []ast.Stmt
	top := -1
	for i := len(path) - 1; i >= 1; i-- {
		list := match.StmtList(path[i-1])
		for j, x := range list {
			if ast.Node(x) == path[i] {
				rest = append(rest, list[j+1:]...)
				if path[i-1] == ast.Node(body) {
					top = j
				}
			}
		}
	}
	return rest, top
}

// A verdict is what a walk of the child's start-up found.
type verdict struct {
	waited bool   // it reached a blocking wait for the signal: the steady state
	why    string // it reads the signal before that: what and where
}

// A walker follows the signal channel, and what it cancels, through the
// child's start-up.
type walker struct {
	c      *checker
	taint  map[types.Object]bool // the signal channel, the contexts and functions it cancels
	helper *ast.FuncDecl
	ran    *[]ast.Node // the helper's statements run up to the steady wait, for the timed work
}

// seed adds what e names (a variable, a field) to the taint.
func (w *walker) seed(e ast.Expr) {
	if o := w.objOf(e); o != nil && o.Name() != "_" {
		w.taint[o] = true
	}
}

// objOf returns the variable or field e names, or nil.
func (w *walker) objOf(e ast.Expr) types.Object {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		return w.c.info.ObjectOf(x)
	case *ast.SelectorExpr:
		if sel, ok := w.c.info.Selections[x]; ok && sel.Kind() == types.FieldVal {
			return sel.Obj()
		}
	case *ast.UnaryExpr:
		if x.Op == token.AND {
			return w.objOf(x.X)
		}
	}
	return nil
}

// mentions reports whether n names something tainted, and where.
func (w *walker) mentions(n ast.Node) (string, bool) {
	var at string
	ast.Inspect(n, func(m ast.Node) bool {
		if id, ok := m.(*ast.Ident); ok && at == "" && w.taint[w.c.info.ObjectOf(id)] {
			at = id.Name + " at " + w.c.line(id)
		}
		return at == ""
	})
	return at, at != ""
}

// seq walks the statements of one sequence up to its steady wait or a
// hazard. record adds the statements to ran (the helper's sequence).
func (w *walker) seq(list []ast.Stmt, depth int, record bool) verdict {
	for _, st := range list {
		if record && w.ran != nil {
			*w.ran = append(*w.ran, st)
		}
		if v := w.stmt(st, depth); v.why != "" || v.waited {
			return v
		}
	}
	return verdict{}
}

// stmt walks one statement.
func (w *walker) stmt(st ast.Stmt, depth int) verdict {
	switch x := st.(type) {
	case *ast.DeferStmt:
		return verdict{} // runs at exit
	case *ast.LabeledStmt:
		return w.stmt(x.Stmt, depth)
	case *ast.GoStmt:
		return w.goStmt(x, depth)
	case *ast.ReturnStmt:
		plain := true
		for _, r := range x.Results {
			switch ast.Unparen(r).(type) {
			case *ast.Ident, *ast.SelectorExpr:
			default:
				plain = false
			}
		}
		if plain {
			return verdict{} // hands the channel back: the caller goes on
		}
	case *ast.ForStmt:
		// for { select { case <-c: ... } }: a loop whose body first waits.
		if x.Init == nil && x.Cond == nil && x.Post == nil {
			return w.seq(x.Body.List, depth, false)
		}
	}
	if w.blockingWait(st) {
		return verdict{waited: true}
	}
	return w.generic(st, depth)
}

// blockingWait reports whether st blocks until the signal (or what it
// cancels) comes: <-c, v := <-c, return <-c, <-ctx.Done(), a select with no default
// on it, a range over it, wg.Wait() of a group its waiter is part of.
func (w *walker) blockingWait(st ast.Stmt) bool {
	recv := func(e ast.Expr) bool {
		u, ok := ast.Unparen(e).(*ast.UnaryExpr)
		if !ok || u.Op != token.ARROW {
			return false
		}
		_, ok = w.mentions(u.X)
		return ok
	}
	switch x := st.(type) {
	case *ast.ExprStmt:
		if recv(x.X) {
			return true
		}
		if call, ok := ast.Unparen(x.X).(*ast.CallExpr); ok && match.IsMethod(w.c.info, call, "sync", "Wait") {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
				_, m := w.mentions(sel.X)
				return m
			}
		}
	case *ast.AssignStmt:
		return len(x.Rhs) == 1 && recv(x.Rhs[0])
	case *ast.ReturnStmt:
		// return <-c: a main loop's stand-in that hands the signal back.
		return len(x.Results) == 1 && recv(x.Results[0])
	case *ast.SelectStmt:
		on := false
		for _, cl := range x.Body.List {
			cc := cl.(*ast.CommClause)
			if cc.Comm == nil {
				return false // a default: it polls
			}
			if _, ok := w.mentions(cc.Comm); ok {
				on = true
			}
		}
		return on
	case *ast.RangeStmt:
		o := w.objOf(x.X)
		return o != nil && w.taint[o]
	}
	return false
}

// goStmt walks a goroutine: its body is a sequence of its own; once it
// waits for the signal, what it then touches of the helper's (a cancel
// function, a flag, a channel it closes) is what the signal cancels.
func (w *walker) goStmt(g *ast.GoStmt, depth int) verdict {
	lit, ok := ast.Unparen(g.Call.Fun).(*ast.FuncLit)
	if !ok {
		return w.generic(g, depth)
	}
	for _, a := range g.Call.Args {
		if at, ok := w.mentions(a); ok {
			return verdict{why: "a goroutine at " + w.c.line(g) + " is handed " + at}
		}
	}
	v := w.seq(lit.Body.List, depth, false)
	if v.why != "" {
		return verdict{why: "a goroutine at " + w.c.line(g) + " that " + v.why}
	}
	if !v.waited {
		return verdict{}
	}
	var outer []types.Object
	ast.Inspect(lit.Body, func(m ast.Node) bool {
		if id, ok := m.(*ast.Ident); ok {
			if o, ok := w.c.info.Uses[id].(*types.Var); ok && !w.taint[o] && (o.Pos() < lit.Pos() || o.Pos() > lit.End()) && o.Pkg() == w.c.pass.Pkg {
				outer = append(outer, o)
			}
		}
		return true
	})
	for _, o := range outer {
		w.taint[o] = true
		w.siblings(o)
	}
	return verdict{}
}

// siblings taints the variables the helper defines with o in one
// statement: ctx of ctx, cancel := context.WithCancel(...).
func (w *walker) siblings(o types.Object) {
	ast.Inspect(w.helper.Body, func(m ast.Node) bool {
		if a, ok := m.(*ast.AssignStmt); ok {
			hit := false
			for _, l := range a.Lhs {
				if w.objOf(l) == o {
					hit = true
				}
			}
			if hit {
				for _, l := range a.Lhs {
					w.seed(l)
				}
			}
		}
		return true
	})
}

// generic walks a statement that is no wait: a call of a package
// function that is handed the signal (or reaches a field or package
// variable holding it) is followed; any other mention is a hazard.
func (w *walker) generic(st ast.Node, depth int) verdict {
	var v verdict
	var visit func(m ast.Node) bool
	visit = func(m ast.Node) bool {
		if v.why != "" || v.waited {
			return false
		}
		switch m := m.(type) {
		case *ast.FuncLit:
			if at, ok := w.mentions(m); ok {
				v.why = "a function literal at " + w.c.line(m) + " uses " + at
			}
			return false
		case *ast.Ident:
			if w.taint[w.c.info.ObjectOf(m)] {
				v.why = "reads " + m.Name + " at " + w.c.line(m)
			}
		case *ast.CallExpr:
			fn := match.Callee(w.c.info, m)
			if fn == nil {
				return true
			}
			fd := w.c.decls[fn.Origin()]
			if fd == nil || fd.Body == nil {
				return true // its arguments are checked as they are
			}
			inner := &walker{c: w.c, taint: map[types.Object]bool{}, helper: w.helper}
			for o := range w.taint {
				if vr, ok := o.(*types.Var); !ok || vr.IsField() || match.IsPackageLevel(vr) {
					inner.taint[o] = true
				}
			}
			params := paramsOf(w.c.info, fd)
			var others []ast.Node
			handed := false
			for i, a := range m.Args {
				if o := w.objOf(a); o != nil && w.taint[o] && i < len(params) && params[i] != nil {
					inner.taint[params[i]] = true
					handed = true
					continue
				}
				others = append(others, a)
			}
			if sel, ok := ast.Unparen(m.Fun).(*ast.SelectorExpr); ok {
				if o := w.objOf(sel.X); o != nil && w.taint[o] && fd.Recv != nil && len(fd.Recv.List) == 1 && len(fd.Recv.List[0].Names) == 1 {
					inner.taint[w.c.info.Defs[fd.Recv.List[0].Names[0]]] = true
					handed = true
				} else {
					others = append(others, sel.X)
				}
			}
			for _, a := range others {
				ast.Inspect(a, visit)
			}
			if v.why != "" || len(inner.taint) == 0 {
				return false
			}
			if depth >= maxDepth {
				if handed {
					v.why = fmt.Sprintf("%s at %s is handed the signal, deeper than the rule follows", types.ExprString(m.Fun), w.c.line(m))
				}
				return false
			}
			sv := inner.seq(fd.Body.List, depth+1, false)
			switch {
			case sv.why != "":
				v.why = fmt.Sprintf("%s at %s, which %s", types.ExprString(m.Fun), w.c.line(m), sv.why)
			case sv.waited:
				v.waited = true
			}
			return false
		}
		return true
	}
	ast.Inspect(st, visit)
	return v
}

// paramsOf returns the parameter objects of fd, one per argument
// position (nil for a blank or unnamed one).
func paramsOf(info *types.Info, fd *ast.FuncDecl) []types.Object {
	var out []types.Object
	for _, f := range fd.Type.Params.List {
		if len(f.Names) == 0 {
			out = append(out, nil)
			continue
		}
		for _, n := range f.Names {
			out = append(out, info.Defs[n])
		}
	}
	return out
}

// processChecked is the Checked entry of a fix: the hazard excluded.
const processChecked = "the child starts no process before it writes the readiness line (the line's code unsets " + envVar + " as it reads it, so a process started later does not inherit it)"

// processHazard says why a process the child starts before its readiness
// line would inherit the readiness variable and descriptor: a worker
// running the same helper would write the line on the parent's pipe, or
// on whatever its own descriptor of that number is (its status pipe),
// changing what the test reads; or "". The generated line unsets the
// variable as it reads it, so only processes started before it matter.
func (c *checker) processHazard(sp span) string {
	for _, st := range sp.before {
		if what, at := c.startsProcess(st, 0, map[*ast.FuncDecl]bool{}); what != "" {
			return fmt.Sprintf("the child starts a process (%s at %s) before it writes the readiness line: that process inherits %s and the descriptor, and one running the same helper would write its own line on the parent's pipe or on its own descriptor of that number, a pipe of the child's, changing what the test reads; keep the sleep, or start the process after the handler is installed", what, at, envVar)
		}
	}
	return ""
}

// startsProcess returns the first call in n (following calls into the
// package a few deep) that starts a process, and its line.
func (c *checker) startsProcess(n ast.Node, depth int, seen map[*ast.FuncDecl]bool) (what, at string) {
	return c.reachesCall(n, depth, seen, func(fn *types.Func, _ *ast.CallExpr) (string, bool) { return match.ProcessStart(fn) })
}

// reachesCall returns the first call in n (following calls into the
// package a few deep) that is reports true for, with its name, and its line.
func (c *checker) reachesCall(n ast.Node, depth int, seen map[*ast.FuncDecl]bool, is func(*types.Func, *ast.CallExpr) (string, bool)) (what, at string) {
	ast.Inspect(n, func(m ast.Node) bool {
		if what != "" {
			return false
		}
		call, ok := m.(*ast.CallExpr)
		if !ok {
			return true
		}
		callee := match.Callee(c.info, call)
		if callee == nil {
			return true
		}
		if name, ok := is(callee, call); ok {
			what, at = name, c.line(call)
			return false
		}
		if d := c.decls[callee.Origin()]; d != nil && d.Body != nil && depth < maxDepth && !seen[d] {
			seen[d] = true
			what, at = c.reachesCall(d.Body, depth+1, seen, is)
		}
		return what == ""
	})
	return what, at
}
