package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A cleanup that ends a value must be the value's only end: a test that
// already stops it by hand (p.stop <- struct{}{}; <-p.done), or ends a
// parent that owns it (defer srv.Exit()), would get a second end, and a
// second Close that sends on an unbuffered channel nobody reads any more
// hangs the test; one that closes a closed channel panics; one behind a
// closed flag returns an error ("exiting") that means nothing. This file
// tells those cases apart: what the test does to the value's fields and
// methods, what the lifecycle method does, and whether it is safe twice.

// endWords are the methods whose call ends a value, whichever of them its
// lifecycle method is: a test that calls srv.Exit() ends srv.
var endWords = []string{"Close", "Stop", "Shutdown", "Exit", "Cancel", "Quit", "Terminate", "Kill", "Destroy", "Dispose", "Teardown"}

// isEndName reports whether a method named name ends its receiver: an end
// word alone, or with a common prefix or suffix (GracefulStop, CloseNow,
// StopAndWait). Closed, IsClosed and Stopped ask; they do not end.
func isEndName(name string) bool {
	for _, w := range endWords {
		switch {
		case name == w:
			return true
		case strings.HasPrefix(name, w):
			switch name[len(w):] {
			case "Now", "All", "Async", "Wait", "AndWait", "Gracefully", "WithError", "WithContext", "Context", "Ctx", "Sync":
				return true
			}
		case strings.HasSuffix(name, w):
			switch name[:len(name)-len(w)] {
			case "Graceful", "Force", "Must", "Try", "Safe", "Hard", "Soft":
				return true
			}
		}
	}
	return false
}

// An action is what code does to a channel, function or flag field.
type action uint8

const (
	acSend  action = 1 << iota // f <- x
	acClose                    // close(f)
	acRecv                     // <-f, for range f
	acCall                     // f() of a func-typed field (a cancel)
	acEnd                      // f.Close() and the like, on a field
	acSet                      // f = x, f.Store(x), atomic.StoreInt32(&f, x)
)

// A summary is what a method's body, and the methods it calls on its own
// receiver, do: the receiver's fields it acts on, the operations a second
// call could block or panic on, and whether it calls a method that ends
// the receiver.
type summary struct {
	fields map[*types.Var]action
	risky  []string // "sends on p.stop", "closes p.quit", "panics"
	ends   bool     // it may call a method that ends the receiver
	always bool     // it calls one on every path (a statement of its body)

	// starts: it has a go statement. A method that stops the loop and
	// starts it again (a cache's Clear) does what Close does to the stop
	// channel without ending the value.
	starts bool

	// errTwice: a guard makes a second call return an error at once
	// (if !atomic.CompareAndSwapInt32(&c.exitFlag, 0, 1) { return
	// errExiting }): a cleanup reporting it would fail the test.
	errTwice bool
}

// summarize returns the summary of a method declared in the package, or
// nil when its body is not in the package's syntax (another package, or
// a method reached again through recursion).
func (c *checker) summarize(fn *types.Func) *summary {
	fn = fn.Origin()
	if s, ok := c.sums[fn]; ok {
		return s
	}
	c.sums[fn] = nil // in progress: a recursive call adds nothing
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil || fd.Recv == nil || len(fd.Recv.List) != 1 || len(fd.Recv.List[0].Names) != 1 {
		return nil
	}
	recv, _ := c.info.Defs[fd.Recv.List[0].Names[0]].(*types.Var)
	s := &summary{fields: map[*types.Var]action{}}
	if recv != nil {
		w := &walker{c: c, recv: recv, s: s}
		w.stmts(fd.Body.List, false)
		s.always = w.endsAlways(fd.Body.List)
	}
	c.sums[fn] = s
	return s
}

// visible reports whether the body of fn is in the package's syntax.
func (c *checker) visible(fn *types.Func) bool {
	fd := c.decls[fn.Origin()]
	return fd != nil && fd.Body != nil
}

// A walker summarizes one method body. guarded, passed down, says that a
// statement runs at most once however often the method is called: inside
// sync.Once.Do, after `if p.closed { return }`, under `if
// atomic.CompareAndSwapInt32(&p.state, 0, 1)`, or in a select with a
// default case.
type walker struct {
	c    *checker
	recv *types.Var
	s    *summary
}

func (w *walker) stmts(list []ast.Stmt, guarded bool) {
	for _, st := range list {
		w.node(st, guarded)
		if ifs, ok := st.(*ast.IfStmt); ok && ifs.Else == nil && w.flag(ifs.Init, ifs.Cond) && endsWithReturn(ifs.Body.List) {
			guarded = true // if p.closed { return }: what follows runs once
			ret := ifs.Body.List[len(ifs.Body.List)-1].(*ast.ReturnStmt)
			for _, r := range ret.Results {
				if id, ok := ast.Unparen(r).(*ast.Ident); !ok || id.Name != "nil" {
					if t := w.c.info.TypeOf(r); t != nil && types.Implements(t, errorType()) {
						w.s.errTwice = true
					}
				}
			}
		}
	}
}

// endsAlways reports whether a statement of list (a method body, not a
// branch of it) calls a method that ends the receiver, itself or through
// another method of the receiver that always does.
func (w *walker) endsAlways(list []ast.Stmt) bool {
	for _, st := range list {
		var call *ast.CallExpr
		switch st := st.(type) {
		case *ast.ExprStmt:
			call, _ = ast.Unparen(st.X).(*ast.CallExpr)
		case *ast.DeferStmt:
			call = st.Call
		case *ast.AssignStmt:
			if len(st.Rhs) == 1 {
				call, _ = ast.Unparen(st.Rhs[0]).(*ast.CallExpr)
			}
		case *ast.IfStmt:
			if a, ok := st.Init.(*ast.AssignStmt); ok && len(a.Rhs) == 1 {
				call, _ = ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
			}
		}
		if call == nil {
			continue
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			continue
		}
		id, ok := ast.Unparen(sel.X).(*ast.Ident)
		if !ok || w.c.info.Uses[id] != types.Object(w.recv) {
			continue
		}
		if isEndName(sel.Sel.Name) {
			return true
		}
		if fn, ok := w.c.info.Uses[sel.Sel].(*types.Func); ok {
			if s := w.c.summarize(fn); s != nil && s.always {
				return true
			}
		}
	}
	return false
}

func errorType() *types.Interface {
	return types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
}

// flag reports whether one of the expressions or statements reads a field
// of the receiver: the closed flag or state word a guard tests.
func (w *walker) flag(nodes ...ast.Node) bool {
	found := false
	for _, n := range nodes {
		if n == nil {
			continue
		}
		ast.Inspect(n, func(m ast.Node) bool {
			if sel, ok := m.(*ast.SelectorExpr); ok && w.field(sel) != nil {
				found = true
			}
			return !found
		})
	}
	return found
}

// field returns the receiver's field that e selects (p.stop), or nil.
func (w *walker) field(e ast.Expr) *types.Var {
	return fieldOf(w.c.info, e, w.recv)
}

// fieldOf returns the field of v that e selects (v.f), or nil.
func fieldOf(info *types.Info, e ast.Expr, v *types.Var) *types.Var {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok || info.Uses[id] != types.Object(v) {
		return nil
	}
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.FieldVal {
		return nil
	}
	f, _ := s.Obj().(*types.Var)
	if f == nil {
		return nil
	}
	// A field of an instance (policy[int].stop) is the field of the
	// generic type's methods (policy[V].stop).
	return f.Origin()
}

func (w *walker) risky(guarded bool, format string, args ...any) {
	if !guarded {
		w.s.risky = append(w.s.risky, fmt.Sprintf(format, args...))
	}
}

func (w *walker) node(n ast.Node, guarded bool) {
	if n == nil {
		return
	}
	info := w.c.info
	ast.Inspect(n, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.GoStmt:
			w.s.starts = true
			return false // runs on another goroutine
		case *ast.FuncLit:
			return false // runs later
		case *ast.BlockStmt:
			w.stmts(m.List, guarded)
			return false
		case *ast.IfStmt:
			if !w.flag(m.Init, m.Cond) {
				return true
			}
			w.node(m.Init, guarded)
			w.node(m.Cond, guarded)
			w.stmts(m.Body.List, true)
			w.node(m.Else, true)
			return false
		case *ast.SelectStmt:
			for _, cc := range m.Body.List {
				if cc.(*ast.CommClause).Comm == nil {
					w.node(m.Body, true) // a default case: nothing blocks
					return false
				}
			}
		case *ast.SendStmt:
			if f := w.field(m.Chan); f != nil {
				w.s.fields[f] |= acSend
			}
			w.risky(guarded, "sends on %s", types.ExprString(m.Chan))
		case *ast.UnaryExpr:
			switch m.Op {
			case token.ARROW:
				if f := w.field(m.X); f != nil {
					w.s.fields[f] |= acRecv
				}
			case token.AND:
				if f := w.field(m.X); f != nil {
					w.s.fields[f] |= acSet
				}
			}
		case *ast.RangeStmt:
			if f := w.field(m.X); f != nil {
				w.s.fields[f] |= acRecv
			}
		case *ast.AssignStmt:
			for _, l := range m.Lhs {
				if f := w.field(l); f != nil {
					w.s.fields[f] |= acSet
				}
			}
		case *ast.CallExpr:
			return w.call(m, guarded, info)
		}
		return true
	})
}

// call records one call; it returns whether to look inside the call.
func (w *walker) call(m *ast.CallExpr, guarded bool, info *types.Info) bool {
	if id, ok := ast.Unparen(m.Fun).(*ast.Ident); ok {
		if _, ok := info.Uses[id].(*types.Builtin); ok {
			switch id.Name {
			case "close":
				if len(m.Args) == 1 {
					if f := w.field(m.Args[0]); f != nil {
						w.s.fields[f] |= acClose
					}
					w.risky(guarded, "closes %s", types.ExprString(m.Args[0]))
				}
			case "panic":
				w.risky(guarded, "panics")
			}
			return true
		}
	}
	if match.IsMethod(info, m, "sync", "Do") {
		// once.Do(func() { close(p.stop) }): the body runs once.
		for _, a := range m.Args {
			switch a := ast.Unparen(a).(type) {
			case *ast.FuncLit:
				w.stmts(a.Body.List, true)
			default:
				w.methodValue(a, true)
			}
		}
		return false
	}
	sel, ok := ast.Unparen(m.Fun).(*ast.SelectorExpr)
	if !ok {
		return true
	}
	if f := w.field(sel); f != nil {
		w.s.fields[f] |= acCall // p.cancel()
		return true
	}
	if f := w.field(sel.X); f != nil {
		// A method of a field: p.ticker.Stop(), p.closed.Store(true).
		switch name := sel.Sel.Name; {
		case isEndName(name):
			w.s.fields[f] |= acEnd
		case name == "Store" || name == "Swap" || name == "CompareAndSwap" || name == "Add":
			w.s.fields[f] |= acSet
		}
		return true
	}
	w.methodValue(sel, guarded)
	return true
}

// methodValue follows a method of the receiver (p.shutdown, called or
// passed to once.Do) into its body.
func (w *walker) methodValue(e ast.Expr, guarded bool) {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok || w.c.info.Uses[id] != types.Object(w.recv) {
		return
	}
	s, ok := w.c.info.Selections[sel]
	if !ok || s.Kind() != types.MethodVal {
		return
	}
	if isEndName(sel.Sel.Name) {
		w.s.ends = true
	}
	fn, _ := s.Obj().(*types.Func)
	if fn == nil {
		return
	}
	inner := w.c.summarize(fn)
	if inner == nil {
		return
	}
	for f, a := range inner.fields {
		w.s.fields[f] |= a
	}
	w.s.ends = w.s.ends || inner.ends
	if !guarded {
		for _, r := range inner.risky {
			w.s.risky = append(w.s.risky, r)
		}
	}
}

// A touch is one thing the test does to a field of the value.
type touch struct {
	field *types.Var
	act   action
	expr  string // p.stop, for the report
}

// touches returns what the test function does to the fields of v, and the
// methods of v it calls or takes as values.
func (c *checker) touches(v *types.Var) (fields []touch, methods []*ast.SelectorExpr) {
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || len(stack) == 0 {
			return true
		}
		id, ok := ast.Unparen(sel.X).(*ast.Ident)
		if !ok || c.info.Uses[id] != types.Object(v) {
			return true
		}
		s, ok := c.info.Selections[sel]
		if !ok {
			return true
		}
		if s.Kind() == types.MethodVal {
			methods = append(methods, sel)
			return true
		}
		f, _ := s.Obj().(*types.Var)
		if f == nil {
			return true
		}
		f = f.Origin()
		var act action
		switch p := stack[len(stack)-1].(type) {
		case *ast.SendStmt:
			if p.Chan == sel {
				act = acSend
			}
		case *ast.CallExpr:
			if p.Fun == sel {
				act = acCall
			} else if id, ok := ast.Unparen(p.Fun).(*ast.Ident); ok && id.Name == "close" {
				if _, ok := c.info.Uses[id].(*types.Builtin); ok {
					act = acClose
				}
			}
		case *ast.UnaryExpr:
			switch p.Op {
			case token.ARROW:
				act = acRecv
			case token.AND:
				act = acSet
			}
		case *ast.RangeStmt:
			if p.X == sel {
				act = acRecv
			}
		case *ast.AssignStmt:
			for _, l := range p.Lhs {
				if l == sel {
					act = acSet
				}
			}
		case *ast.IncDecStmt:
			act = acSet
		case *ast.SelectorExpr:
			if len(stack) >= 2 {
				if call, ok := stack[len(stack)-2].(*ast.CallExpr); ok && call.Fun == p {
					switch name := p.Sel.Name; {
					case isEndName(name):
						act = acEnd
					case name == "Store" || name == "Swap" || name == "CompareAndSwap" || name == "Add":
						act = acSet
					}
				}
			}
		}
		if act != 0 {
			fields = append(fields, touch{f, act, types.ExprString(sel)})
		}
		return true
	})
	return fields, methods
}

// mirrors reports whether doing a to a field ends the value the way its
// lifecycle method's doing l to it does: a send where Close sends (the
// loop's stop signal), a close where Close sends or closes, a call of the
// func field Close calls (a cancel), an end of the field Close ends.
func mirrors(a, l action) bool {
	return a&acSend != 0 && l&acSend != 0 ||
		a&acClose != 0 && l&(acSend|acClose) != 0 ||
		a&acCall != 0 && l&acCall != 0 ||
		a&acEnd != 0 && l&acEnd != 0 ||
		a&acSet != 0 && l&acSet != 0 && l&(acSend|acClose|acCall|acEnd) == 0
}

// endedByTest says how the test already ends the value other than with
// the lifecycle method usesOf looks for, or "": it stops it by hand
// through the fields the lifecycle method uses (p.stop <- struct{}{}), or
// calls another method that ends it (Exit, or one whose body ends it).
// always is false when that method ends it on some paths only (a Send
// that closes the connection when it fails).
func (c *checker) endedByTest(s *site) (how string, always bool) {
	fields, methods := c.touches(s.v)
	lc := c.summarize(s.lc.fn)
	seen := lc != nil || c.visible(s.lc.fn)
	for _, t := range fields {
		switch {
		case lc != nil && mirrors(t.act, lc.fields[t.field]):
			return fmt.Sprintf("the test %s %s, as %s does", actVerb(t.act), t.expr, s.lc.method), true
		case !seen && t.act&(acSend|acClose|acCall|acEnd) != 0:
			return fmt.Sprintf("the test %s %s", actVerb(t.act), t.expr), true
		}
	}
	for _, sel := range methods {
		name := sel.Sel.Name
		if isLifecycleName(name) {
			continue // usesOf's business
		}
		if isEndName(name) {
			return fmt.Sprintf("the test calls %s.%s", s.v.Name(), name), true
		}
		fn, _ := c.info.Selections[sel].Obj().(*types.Func)
		if fn == nil {
			continue
		}
		m := c.summarize(fn)
		if m == nil {
			continue
		}
		if m.always {
			return fmt.Sprintf("%s.%s", s.v.Name(), name), true
		}
		if m.ends && how == "" {
			how = fmt.Sprintf("%s.%s", s.v.Name(), name)
		}
		if lc != nil && !m.starts {
			for f, a := range m.fields {
				if mirrors(a&^acSet, lc.fields[f]) && how == "" {
					how = fmt.Sprintf("%s.%s", s.v.Name(), name)
				}
			}
		}
	}
	return how, false
}

// unsafeTwice says why a second call of the lifecycle method may block,
// panic or fail ("Close closes s.quit without a guard"), or "" when it
// cannot: its body is in the package, does nothing risky outside a
// guard, and its guard returns no error (or the method returns none).
func (c *checker) unsafeTwice(s *site) string {
	lc := c.summarize(s.lc.fn)
	switch {
	case lc == nil:
		return fmt.Sprintf("the analysis cannot see what a second %s does", s.lc.method)
	case len(lc.risky) > 0:
		return fmt.Sprintf("a second %s may block or panic: it %s without a guard", s.lc.method, lc.risky[0])
	case lc.errTwice && s.lc.result == "error" && c.style.kind != drop && c.style.kind != dropBlank && c.errDropped(s) == "":
		// An error the cleanup drops (errDropped) fails nothing; one it
		// reports, or checks with the package's style, fails the test.
		return fmt.Sprintf("a second %s returns an error", s.lc.method)
	}
	return ""
}

func actVerb(a action) string {
	switch {
	case a&acClose != 0:
		return "closes"
	case a&acSend != 0:
		return "sends on"
	case a&acCall != 0:
		return "calls"
	case a&acEnd != 0:
		return "ends"
	case a&acSet != 0:
		return "sets"
	}
	return "receives from"
}

// secondEnd says why a cleanup that calls the lifecycle method once more
// might not be its only call: notFixed when the method may block or panic
// on a second call and something may already call it; unproven when the
// method's body cannot be seen and the test touches its fields.
func (c *checker) secondEnd(s *site) (notFixed, unproven string) {
	fields, methods := c.touches(s.v)
	lc := c.summarize(s.lc.fn)
	if lc == nil {
		if c.visible(s.lc.fn) || isStdType(s.v.Type()) || len(fields) == 0 {
			return "", ""
		}
		return "", fmt.Sprintf("the test %s %s, and the analysis cannot see whether %s may block or panic after that", actVerb(fields[0].act), fields[0].expr, s.lc.method)
	}
	if len(lc.risky) == 0 {
		return "", ""
	}
	twice := fmt.Sprintf("%s %s without a guard (sync.Once, a closed flag), so a second call may block or panic", s.lc.method, lc.risky[0])
	for _, sel := range methods {
		if fn, _ := c.info.Selections[sel].Obj().(*types.Func); fn != nil && !isLifecycleName(sel.Sel.Name) && c.summarize(fn) == nil && !c.visible(fn) {
			return fmt.Sprintf("%s, and the test calls %s.%s, whose body the analysis cannot see", twice, s.v.Name(), sel.Sel.Name), ""
		}
	}
	if pos := c.otherCall(s.lc.fn); pos.IsValid() {
		p := c.pass.Fset.Position(pos)
		return fmt.Sprintf("%s, and the package calls it too (%s:%d)", twice, baseName(p.Filename), p.Line), ""
	}
	return "", ""
}

// otherCall returns the position of a call (or method value) of fn in the
// package's own code other than fn itself and the methods that end a
// value: code under test that may end the value on its own.
func (c *checker) otherCall(fn *types.Func) token.Pos {
	fn = fn.Origin()
	if pos, ok := c.others[fn]; ok {
		return pos
	}
	pos := c.findOtherCall(fn)
	c.others[fn] = pos
	return pos
}

func (c *checker) findOtherCall(fn *types.Func) token.Pos {
	for _, f := range c.pass.AllFiles {
		if strings.HasSuffix(c.pass.Fset.File(f.Pos()).Name(), "_test.go") {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || isEndName(fd.Name.Name) {
				continue
			}
			var at token.Pos
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && at == token.NoPos {
					if g, ok := c.info.Uses[sel.Sel].(*types.Func); ok && g.Origin() == fn {
						at = sel.Pos()
					}
				}
				return at == token.NoPos
			})
			if at.IsValid() {
				return at
			}
		}
	}
	return token.NoPos
}

func baseName(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}

// isStdType reports whether t (or what it points to) is a standard
// library type, whose lifecycle methods tolerate a second call.
func isStdType(t types.Type) bool {
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && match.IsStd(n.Obj().Pkg().Path())
}

// endedParent returns the variable of a value the test ends that made
// the site's value through one of its methods, directly (ch :=
// srv.NewChannel(); defer srv.Exit()) or through other values it made
// (topic := srv.Topic("t"); ch := topic.Channel("c")): a parent that owns
// what it makes ends it. Standard library methods are not taken as owners:
// closing a net.Listener does not close the connections it accepted.
func (c *checker) endedParent(call *ast.CallExpr, depth int) *types.Var {
	if depth > 3 {
		return nil
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	s, ok := c.info.Selections[sel]
	if !ok || s.Kind() != types.MethodVal {
		return nil
	}
	if fn := s.Obj(); fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return nil
	}
	if inner, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok {
		return c.endedParent(inner, depth+1)
	}
	pv := match.Root(c.info, sel.X)
	if pv == nil {
		return nil
	}
	if c.testEnds(pv) {
		return pv
	}
	if def := c.defCall(pv); def != nil && c.lifecycleOf(pv.Type()) != nil {
		// The test made the parent, which has a lifecycle method: the
		// rule reports the parent, and ending it ends this value too.
		return pv
	}
	if def := c.defCall(pv); def != nil {
		return c.endedParent(def, depth+1)
	}
	return nil
}

// testEnds reports whether the test function ends v: it calls (or passes
// on) a method of v that ends it, or v was made by a helper given the
// test's t, which ends it at cleanup by convention.
func (c *checker) testEnds(v *types.Var) bool {
	found := false
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && isEndName(sel.Sel.Name) {
			if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && c.info.Uses[id] == types.Object(v) {
				if s, ok := c.info.Selections[sel]; ok && s.Kind() == types.MethodVal {
					found = true
				}
			}
		}
		return !found
	})
	if found {
		return true
	}
	def := c.defCall(v)
	return def != nil && c.takesT(def)
}

// defCall returns the call whose result the test function assigns to v
// (v := f(), v, err := f(), var v = f()), or nil.
func (c *checker) defCall(v *types.Var) *ast.CallExpr {
	var out *ast.CallExpr
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if out != nil {
			return false
		}
		if st, ok := n.(ast.Stmt); ok {
			for _, d := range c.decls0(st) {
				for _, l := range d.lhs {
					if id, ok := l.(*ast.Ident); ok && c.info.Defs[id] == types.Object(v) {
						out = d.call
					}
				}
			}
		}
		return true
	})
	return out
}
