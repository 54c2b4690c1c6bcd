package waitfor

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/types"
	"strings"
	"time"

	"github.com/unflake/unflake/internal/bubble"
	"github.com/unflake/unflake/internal/contract"
	"github.com/unflake/unflake/internal/handover"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/polls"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule finds sleeps that wait for the state the next checks assert and
// polls for those checks' conditions instead.
var Rule = &rule.Rule{
	Name:      "waitfor",
	Doc:       doc,
	Default:   true,
	Prefilter: prefilter,
	Run:       run,
	Requires:  []*rule.Analysis{handover.Analysis, match.Decls},
	// sleep and wallclock run first: a sleep that a bubble holds is on
	// the virtual clock, and a poll is the cure only for the others (a
	// poll is never kept inside a bubble another rule added).
	After: []string{"sleep", "wallclock"},
}

// prefilter: a file that sleeps names Sleep or After (a sleep-only helper
// is found where it is declared, in a test file of the package).
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, "Sleep", "After")
}

// A wait is a statement that waits on the real clock for a fixed time:
// time.Sleep(d), <-time.After(d), or a call of a sleep-only helper.
type wait struct {
	stmt   *ast.ExprStmt
	d      ast.Expr      // the duration, as written at the wait (nil for a helper)
	dur    time.Duration // its value when constant
	known  bool          // dur is known
	helper *types.Func   // the sleep-only helper called, or nil
	call   *ast.CallExpr // the time.Sleep, time.After or helper call
	after  bool
}

// describe names the wait for a message: "time.Sleep(10ms)", "yield()
// (a 250ms sleep)".
func (w *wait) describe() string {
	d := "?"
	if w.known {
		d = match.FormatDuration(w.dur)
	} else if w.d != nil {
		d = types.ExprString(w.d)
	}
	switch {
	case w.helper != nil:
		return fmt.Sprintf("%s() (a %s sleep)", w.helper.Name(), d)
	case w.after:
		return fmt.Sprintf("<-time.After(%s)", d)
	}
	return fmt.Sprintf("time.Sleep(%s)", d)
}

// checker runs the rule on one package.
type checker struct {
	pass    *rule.Pass
	info    *types.Info
	hands   *handover.Finder
	helpers map[*types.Func]*wait // sleep-only helpers: their one wait
	bubbled map[*types.Func]bool  // functions synctest.Test runs (the function form of a wrap)
	bubbles *bubble.Runner        // which arguments a call runs in a bubble
	decls   map[*types.Func]*ast.FuncDecl
	bodies  map[*types.Func]string       // bodyWhy's answers
	taken   map[ast.Node]map[string]bool // per block, the names the fixes of this run declare there
	timeout time.Duration
	said    *intent.Package // what the tests say they exercise (intent.go)

	contracts *contract.Finder // the durations tests set (contract.go), made on first use
	counter   *string          // where the package's tests count goroutines (goroutineCounter), once known
}

func run(pass *rule.Pass) error {
	c := &checker{
		pass:    pass,
		info:    pass.TypesInfo,
		hands:   handover.Of(pass),
		timeout: polls.Timeout.Get(pass),
		bubbles: bubble.NewRunner(pass.TypesInfo, pass.Effects),
		said:    intent.NewPackage(pass.Fset, pass.Pkg, pass.TypesInfo, pass.AllFiles),
	}
	c.decls = match.DeclsOf(pass)
	c.bodies = map[*types.Func]string{}
	c.taken = map[ast.Node]map[string]bool{}
	c.findHelpers()
	for _, f := range pass.Files {
		name := pass.Fset.File(f.Pos()).Name()
		if !strings.HasSuffix(name, "_test.go") || ast.IsGenerated(f) {
			continue
		}
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok && c.inBubble(lit, stack) {
				c.resolved(lit.Body) // on a bubble's virtual clock: the sleep rule's
				return false
			}
			if fd, ok := n.(*ast.FuncDecl); ok && c.bubbled[c.funcOf(fd)] {
				c.resolved(fd.Body)
				return false
			}
			if list := match.StmtList(n); list != nil {
				for i, s := range list {
					if w := c.waitOf(s); w != nil {
						enclosing := append(append([]ast.Node(nil), stack...), n)
						if match.PollWait(c.info, s, enclosing) {
							continue // the rest of the window a poll of ours keeps
						}
						c.check(f, n, list, i, w, enclosing)
					}
				}
			}
			return true
		})
	}
	return nil
}

// resolved tells the engine that the waits in a bubble's body are on the
// virtual clock: a finding made on one before the sleep rule's fix moved
// it into the bubble was fixed by that fix, not lost.
func (c *checker) resolved(body *ast.BlockStmt) {
	if body == nil {
		return
	}
	ast.Inspect(body, func(n ast.Node) bool {
		if s, ok := n.(ast.Stmt); ok {
			if w := c.waitOf(s); w != nil {
				c.pass.Report(rule.Diagnostic{Pos: s.Pos(), End: s.End(), Resolved: "the wait is now on a bubble's virtual clock"})
			}
		}
		return true
	})
}

func (c *checker) funcOf(fd *ast.FuncDecl) *types.Func {
	fn, _ := c.info.Defs[fd.Name].(*types.Func)
	return fn
}

// inBubble reports whether lit is a function synctest.Test or
// synctest.Run runs, directly or through a helper of the module that
// hands it to them (its sleeps are on virtual time already).
func (c *checker) inBubble(lit *ast.FuncLit, stack []ast.Node) bool {
	if len(stack) == 0 {
		return false
	}
	call, ok := stack[len(stack)-1].(*ast.CallExpr)
	return ok && ast.Unparen(call.Fun) != lit && c.bubbles.Runs(call, lit)
}

// findHelpers finds the package's sleep-only helpers (a function of its
// test files whose body is one constant wait, after an optional
// t.Helper()) and the functions synctest.Test runs by name.
func (c *checker) findHelpers() {
	c.helpers = map[*types.Func]*wait{}
	c.bubbled = map[*types.Func]bool{}
	for _, f := range c.pass.AllFiles {
		if !strings.HasSuffix(c.pass.Fset.File(f.Pos()).Name(), "_test.go") {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Type.Results != nil || fd.Type.TypeParams != nil {
				continue
			}
			body := fd.Body.List
			if len(body) == 2 && isHelperCall(c.info, body[0]) {
				body = body[1:]
			}
			if len(body) != 1 {
				continue
			}
			s, ok := body[0].(*ast.ExprStmt)
			if !ok {
				continue
			}
			call, after := bubble.Wait(c.info, s)
			if call == nil {
				continue
			}
			d, known := match.ConstDuration(c.info, call.Args[0])
			if !known || d <= 0 {
				continue
			}
			if fn := c.funcOf(fd); fn != nil {
				c.helpers[fn] = &wait{dur: d, known: true, after: after}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			for _, arg := range c.bubbles.Args(call) {
				if fn := match.FuncOf(c.info, arg); fn != nil {
					c.bubbled[fn] = true
				}
			}
			return true
		})
	}
}

// isHelperCall reports whether s is t.Helper().
func isHelperCall(info *types.Info, s ast.Stmt) bool {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	return ok && len(call.Args) == 0 && match.IsMethod(info, call, "testing", "Helper")
}

// waitOf returns the wait s is, or nil.
func (c *checker) waitOf(s ast.Stmt) *wait {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return nil
	}
	if call, after := bubble.Wait(c.info, es); call != nil {
		w := &wait{stmt: es, d: call.Args[0], call: call, after: after}
		w.dur, w.known = match.ConstDuration(c.info, w.d)
		return w
	}
	call, ok := ast.Unparen(es.X).(*ast.CallExpr)
	if !ok {
		return nil
	}
	fn := match.Callee(c.info, call)
	h := c.helpers[fn]
	if h == nil {
		return nil
	}
	return &wait{stmt: es, dur: h.dur, known: true, helper: fn, call: call}
}

// check reports the wait list[i] of parent, enclosed by stack, when the
// statements after it check state.
func (c *checker) check(file *ast.File, parent ast.Node, list []ast.Stmt, i int, w *wait, stack []ast.Node) {
	var fn ast.Node
	for k := len(stack) - 1; k >= 0 && fn == nil; k-- {
		switch stack[k].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			fn = stack[k]
		}
	}
	if fn == nil {
		return
	}
	g := c.group(w, fn, list[i+1:])
	if g == nil {
		return // nothing checked right after the wait: not this rule's
	}
	if match.InGoroutine(c.info, stack) || c.goOnly(stack) {
		return // a goroutine's pause, not the test waiting
	}
	if v := c.hands.Enclosing(stack); v.Kind != handover.Own {
		return // the code under test's behaviour (a handler), or unknown
	}
	acts := g.cutAtAction()
	if len(g.checks) == 0 || !g.readsState() {
		// The test acts again before any check reads the awaited state.
		c.pass.Report(rule.Diagnostic{
			Pos:      w.stmt.Pos(),
			End:      w.stmt.End(),
			Message:  fmt.Sprintf("%s holds the statements after it back for a fixed time on the real clock", w.describe()),
			NotFixed: fmt.Sprintf("no check reads the awaited state before the test acts again: it calls %s, which a poll must not repeat, so nothing is left to poll", acts),
		})
		return
	}
	// The message claims no wait for a change: the state may hold
	// already when the sleep starts.
	d := rule.Diagnostic{
		Pos:     w.stmt.Pos(),
		End:     w.stmt.End(),
		Message: fmt.Sprintf("%s holds the next %s of state back for a fixed time on the real clock", w.describe(), g.noun()),
	}
	if why := c.keepsTime(file, w, stack); why != "" {
		d.NotFixed = why
		c.pass.Report(d)
		return
	}
	if why := g.notPollable(); why != "" {
		d.NotFixed = why
		c.pass.Report(d)
		return
	}
	why, checked := c.timing(w, stack, g)
	if why != "" {
		d.NotFixed = why
		c.pass.Report(d)
		return
	}
	p := &poll{c: c, file: file, parent: parent, wait: w, group: g, stack: stack, checked: checked}
	fix, why := p.fix()
	if fix == nil {
		d.NotFixed = why
	} else {
		d.Fix = fix
	}
	c.pass.Report(d)
}

// goOnly reports whether the innermost function literal among stack is
// kept in a local variable that is only ever called by go statements
// (worker := func(id int) { ... }; go worker(1)): its body runs on other
// goroutines only, never on the test's.
func (c *checker) goOnly(stack []ast.Node) bool {
	var lit *ast.FuncLit
	k := len(stack) - 1
	for ; k >= 1 && lit == nil; k-- {
		lit, _ = stack[k].(*ast.FuncLit)
	}
	if lit == nil {
		return false
	}
	// Have: lit, and stack[k] is the node holding it.
	var v *types.Var
	var def *ast.Ident
	switch p := stack[k].(type) {
	case *ast.AssignStmt:
		for i, r := range p.Rhs {
			if r == lit && len(p.Lhs) == len(p.Rhs) {
				def, _ = p.Lhs[i].(*ast.Ident)
			}
		}
	case *ast.ValueSpec:
		for i, r := range p.Values {
			if r == lit && len(p.Names) == len(p.Values) {
				def = p.Names[i]
			}
		}
	}
	if def == nil {
		return false
	}
	v, _ = c.info.ObjectOf(def).(*types.Var)
	if v == nil || v.Parent() == nil || v.Pkg() == nil || v.Parent() == v.Pkg().Scope() {
		return false // not a local: other code may call it
	}
	// Every other use of v is the function of a go statement's call.
	calls, only := 0, true
	match.WithStack(stack[0], func(n ast.Node, st []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || id == def || c.info.Uses[id] != v || !only {
			return only
		}
		if len(st) < 2 {
			only = false
			return false
		}
		call, isCall := st[len(st)-1].(*ast.CallExpr)
		_, isGo := st[len(st)-2].(*ast.GoStmt)
		if !isCall || call.Fun != ast.Expr(id) || !isGo {
			only = false
			return false
		}
		calls++
		return true
	})
	return only && calls > 0
}

func sIf(b bool) string {
	if b {
		return "s"
	}
	return ""
}
