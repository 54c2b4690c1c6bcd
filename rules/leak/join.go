package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// goroutines reports the go statements of fd whose goroutine the test
// never waits for: it joins those that end when the test ends something,
// and reports those that never end.
func (c *checker) goroutines(fd *ast.FuncDecl) {
	match.WithStack(fd.Body, func(n ast.Node, stack []ast.Node) bool {
		g, ok := n.(*ast.GoStmt)
		if !ok || len(stack) == 0 {
			return true
		}
		lit, ok := g.Call.Fun.(*ast.FuncLit)
		if !ok || len(g.Call.Args) > 0 {
			return true
		}
		switch stack[len(stack)-1].(type) {
		case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
			c.checkGo(g, lit, stack[len(stack)-1])
		}
		return true
	})
}

// checkGo reports one go statement.
func (c *checker) checkGo(g *ast.GoStmt, lit *ast.FuncLit, owner ast.Node) {
	typ, body, _ := c.enclosingFunc(g)
	t := c.testParam(typ)
	if t == "" || c.waited(lit, body) {
		return
	}
	d := rule.Diagnostic{Pos: g.Pos(), End: g.Go + token.Pos(len("go")), Message: "the goroutine is never waited for; it outlives the test"}
	end, why := c.endOf(lit, body, g)
	switch {
	case why == "never":
		d.Message = "the goroutine never ends; it outlives the test"
		d.NotFixed = "nothing the test does stops its loop: give it a way to stop (t.Context(), a channel the test closes) and wait for it at cleanup"
	case why != "":
		d.NotFixed = why
	case end != "":
		d.Fix = c.joinFix(g, lit, owner, body, t, end)
	default:
		return // the analysis cannot tell when it ends: say nothing
	}
	c.pass.Report(d)
}

// waited reports whether the test waits for the goroutine: it calls Done
// on a sync.WaitGroup, or sends on or closes a channel the test receives
// from.
func (c *checker) waited(lit *ast.FuncLit, body *ast.BlockStmt) bool {
	var chans []types.Object
	done := false
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if match.IsMethod(c.info, n, "sync", "Done") {
				done = true
			}
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "close" && len(n.Args) == 1 {
				if o := rootObj(c.info, n.Args[0]); o != nil {
					chans = append(chans, o)
				}
			}
		case *ast.SendStmt:
			if o := rootObj(c.info, n.Chan); o != nil {
				chans = append(chans, o)
			}
		}
		return true
	})
	if done {
		return true
	}
	received := false
	ast.Inspect(body, func(n ast.Node) bool {
		if n == lit {
			return false
		}
		var ch ast.Expr
		switch n := n.(type) {
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				ch = n.X
			}
		case *ast.RangeStmt:
			ch = n.X
		}
		if ch != nil {
			o := rootObj(c.info, ch)
			for _, w := range chans {
				if o == w {
					received = true
				}
			}
		}
		return !received
	})
	return received
}

func rootObj(info *types.Info, e ast.Expr) types.Object {
	if v := match.Root(info, e); v != nil {
		return v
	}
	return nil
}

// endOf says how the goroutine ends: end names what ends it ("the test's
// context", "cancel", "close(done)"); why says why it cannot be joined
// ("never" for a loop nothing stops); both empty when the analysis cannot
// tell.
func (c *checker) endOf(lit *ast.FuncLit, body *ast.BlockStmt, g *ast.GoStmt) (end, why string) {
	stmts := lit.Body.List
	var defers []ast.Stmt
	for len(stmts) > 0 {
		if _, ok := stmts[0].(*ast.DeferStmt); ok {
			defers = append(defers, stmts[0])
			stmts = stmts[1:]
			continue
		}
		break
	}
	if len(stmts) != 1 {
		return "", ""
	}
	// The goroutine's deferred calls run before it ends, so the join
	// waits for them too: one of code under test (a lease's Release
	// that waits for its keeper) may block under a bug the loop's end
	// does not reach (red team batch 21, leasedefer).
	if len(defers) > 0 {
		if why := c.mayBlock(&ast.BlockStmt{List: defers}); why != "" {
			return "", strings.Replace(why, "the goroutine calls", "the goroutine defers a call of", 1)
		}
	}
	switch loop := stmts[0].(type) {
	case *ast.ForStmt:
		if loop.Cond != nil || loop.Init != nil || loop.Post != nil {
			return "", ""
		}
		sel := onlySelect(loop.Body)
		if sel == nil {
			if !leaves(loop.Body) {
				return "", "never"
			}
			return "", ""
		}
		var exit ast.Expr
		for _, cc := range sel.Body.List {
			comm := cc.(*ast.CommClause)
			if recv := recvOf(comm.Comm); recv != nil && endsWithReturn(comm.Body) {
				exit = recv
			}
		}
		if exit == nil {
			if !leaves(loop.Body) {
				return "", "never"
			}
			return "", ""
		}
		if chanOps(loop.Body, sel) {
			return "", ""
		}
		if why := c.mayBlock(loop.Body); why != "" {
			return "", why
		}
		if why := c.heldAcrossStop(lit); why != "" {
			return "", why
		}
		return c.endedBy(exit, body, g)
	case *ast.RangeStmt:
		if _, ok := types.Unalias(c.info.TypeOf(loop.X)).Underlying().(*types.Chan); !ok {
			return "", ""
		}
		if chanOps(loop.Body, nil) {
			return "", ""
		}
		if why := c.mayBlock(loop.Body); why != "" {
			return "", why
		}
		if why := c.heldAcrossStop(lit); why != "" {
			return "", why
		}
		return c.endedBy(loop.X, body, g)
	}
	return "", ""
}

// onlySelect returns the select statement that is the loop body's only
// statement, or nil.
func onlySelect(b *ast.BlockStmt) *ast.SelectStmt {
	if len(b.List) != 1 {
		return nil
	}
	s, _ := b.List[0].(*ast.SelectStmt)
	return s
}

// recvOf returns the channel expression of a receive case (<-X, v := <-X,
// v, ok := <-X), or nil.
func recvOf(comm ast.Stmt) ast.Expr {
	var e ast.Expr
	switch s := comm.(type) {
	case *ast.ExprStmt:
		e = s.X
	case *ast.AssignStmt:
		if len(s.Rhs) == 1 {
			e = s.Rhs[0]
		}
	}
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		return u.X
	}
	return nil
}

func endsWithReturn(list []ast.Stmt) bool {
	if len(list) == 0 {
		return false
	}
	_, ok := list[len(list)-1].(*ast.ReturnStmt)
	return ok
}

// leaves reports whether a loop body has a way out: return, a break or
// goto that may leave it, or a call that may not return (panic, Goexit).
func leaves(b *ast.BlockStmt) bool {
	found := false
	ast.Inspect(b, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			found = true
		case *ast.BranchStmt:
			if n.Tok == token.BREAK || n.Tok == token.GOTO {
				found = true
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "panic" {
				found = true
			}
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Goexit" || sel.Sel.Name == "Fatal" || sel.Sel.Name == "Fatalf" || sel.Sel.Name == "Exit") {
				found = true
			}
		}
		return !found
	})
	return found
}

// chanOps reports whether the loop body sends or receives outside the
// select's cases: such a goroutine may block forever once the test stops
// reading, and a join would then hang.
func chanOps(b *ast.BlockStmt, sel *ast.SelectStmt) bool {
	found := false
	ast.Inspect(b, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CommClause:
			if sel != nil {
				// The case itself is the select's; its body is not.
				for _, s := range n.Body {
					if chanOps(&ast.BlockStmt{List: []ast.Stmt{s}}, nil) {
						found = true
					}
				}
				return false
			}
		case *ast.SendStmt:
			found = true
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				found = true
			}
		case *ast.SelectStmt:
			if n != sel {
				found = true
			}
		}
		return !found
	})
	return found
}

// endedBy says whether the test ends what ch (a channel or X.Done())
// stands for, and how, once the test function returns.
func (c *checker) endedBy(ch ast.Expr, body *ast.BlockStmt, g *ast.GoStmt) (end, why string) {
	// t.Context().Done(), ctx.Done()
	if call, ok := ast.Unparen(ch).(*ast.CallExpr); ok {
		if !match.IsMethod(c.info, call, "context", "Done") {
			return "", ""
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return "", ""
		}
		if inner, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok && match.IsMethod(c.info, inner, "testing", "Context") {
			return "the test's context", ""
		}
		v := match.Root(c.info, sel.X)
		if v == nil {
			return "", ""
		}
		return c.ctxEnd(v, body, g)
	}
	v := match.Root(c.info, ch)
	if v == nil {
		return "", ""
	}
	return c.closedBy(v, body, g)
}

// ctxEnd says how the context variable v is cancelled.
func (c *checker) ctxEnd(v *types.Var, body *ast.BlockStmt, g *ast.GoStmt) (end, why string) {
	var cancel *types.Var
	never := false
	fromT := false
	ast.Inspect(body, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok || len(a.Rhs) != 1 {
			return true
		}
		call, ok := ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
		if !ok || len(a.Lhs) == 0 {
			return true
		}
		if id, ok := a.Lhs[0].(*ast.Ident); !ok || c.info.ObjectOf(id) != types.Object(v) {
			return true
		}
		switch {
		case match.IsPkgFunc(c.info, call, "context", "WithCancel", "WithTimeout", "WithDeadline", "WithCancelCause") && len(a.Lhs) == 2:
			if id, ok := a.Lhs[1].(*ast.Ident); ok {
				cancel, _ = c.info.ObjectOf(id).(*types.Var)
			}
		case match.IsPkgFunc(c.info, call, "context", "Background", "TODO"):
			never = true
		case match.IsMethod(c.info, call, "testing", "Context"):
			fromT = true
		}
		return true
	})
	switch {
	case fromT:
		return "the test's context", ""
	case never:
		return "", "never"
	case cancel == nil:
		return "", ""
	}
	return c.calledAtEnd(cancel, body, g, func(call *ast.CallExpr) bool {
		id, ok := ast.Unparen(call.Fun).(*ast.Ident)
		return ok && c.info.Uses[id] == types.Object(cancel)
	}, cancel.Name()+"()")
}

// closedBy says how the channel variable v is closed.
func (c *checker) closedBy(v *types.Var, body *ast.BlockStmt, g *ast.GoStmt) (end, why string) {
	return c.calledAtEnd(v, body, g, func(call *ast.CallExpr) bool {
		id, ok := call.Fun.(*ast.Ident)
		if !ok || id.Name != "close" || len(call.Args) != 1 {
			return false
		}
		a, ok := ast.Unparen(call.Args[0]).(*ast.Ident)
		return ok && c.info.Uses[a] == types.Object(v)
	}, "close("+v.Name()+")")
}

// calledAtEnd looks for the call that ends the goroutine (is(call)) where
// it surely runs before a cleanup registered at the go statement: deferred,
// a statement of the test body after the go statement, or a t.Cleanup
// registered after it (cleanups run last registered first).
func (c *checker) calledAtEnd(v *types.Var, body *ast.BlockStmt, g *ast.GoStmt, is func(*ast.CallExpr) bool, what string) (end, why string) {
	early := false
	for _, st := range body.List {
		switch st := st.(type) {
		case *ast.DeferStmt:
			if is(st.Call) {
				return what, ""
			}
			if lit, ok := st.Call.Fun.(*ast.FuncLit); ok && callsIn(lit.Body, is) {
				return what, ""
			}
		case *ast.ExprStmt:
			call, ok := ast.Unparen(st.X).(*ast.CallExpr)
			if !ok {
				continue
			}
			if is(call) && st.Pos() > g.End() {
				return what, ""
			}
			if match.IsMethod(c.info, call, "testing", "Cleanup") && len(call.Args) == 1 {
				registers := false
				if lit, ok := call.Args[0].(*ast.FuncLit); ok && callsIn(lit.Body, is) {
					registers = true
				}
				if id, ok := call.Args[0].(*ast.Ident); ok && c.info.Uses[id] == types.Object(v) {
					registers = true // t.Cleanup(cancel)
				}
				if registers {
					if st.Pos() > g.End() {
						return what, ""
					}
					early = true
				}
			}
		}
	}
	if early {
		return "", fmt.Sprintf("%s is registered with t.Cleanup before the goroutine starts, so it would run after a join registered there: move it after the go statement", what)
	}
	return "", ""
}

func callsIn(b *ast.BlockStmt, is func(*ast.CallExpr) bool) bool {
	found := false
	ast.Inspect(b, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && is(call) {
			found = true
		}
		return !found
	})
	return found
}

// joinFix waits for the goroutine at cleanup:
//
//	var wg sync.WaitGroup
//	t.Cleanup(wg.Wait)
//	wg.Go(func() { ... })   // go1.25; before: wg.Add(1); go func() { defer wg.Done(); ... }()
//
// Cleanups run after the test function returns (and its deferred calls),
// so the goroutine has been told to stop by then.
func (c *checker) joinFix(g *ast.GoStmt, lit *ast.FuncLit, owner ast.Node, body *ast.BlockStmt, t, end string) *rule.Fix {
	name := c.freshName("wg")
	wgGo := c.pass.FileUsesGo(c.file, "go1.25")
	return &rule.Fix{
		Message: fmt.Sprintf("wait for it at cleanup with a sync.WaitGroup (it ends when %s)", endPhrase(end)),
		Changes: []rule.Change{{Kind: rule.Ownership, What: "the test waits, when it ends, for the goroutine it starts", Checked: []string{
			"the goroutine calls no code under test and nothing that may block, and locks no mutex of the code under test (no bug can hang the join)",
			"the test never leaves a mutex the goroutine locks held across a failure (each section that locks it unlocks it with defer, or before anything that may stop the test)",
		}}},
		Apply: func() error {
			list := match.DstStmtList(c.pass.Dst(owner))
			if list == nil {
				return nil
			}
			dg := c.pass.Dst(g).(*dst.GoStmt)
			dlit := c.pass.Dst(lit).(*dst.FuncLit)
			before, start := dg.Decs.Before, dg.Decs.Start
			dg.Decs.Start = nil
			decl := &dst.DeclStmt{Decl: &dst.GenDecl{Tok: token.VAR, Specs: []dst.Spec{&dst.ValueSpec{Names: []*dst.Ident{dst.NewIdent(name)}, Type: &dst.Ident{Name: "WaitGroup", Path: "sync"}}}}}
			cleanup := &dst.ExprStmt{X: &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(t), Sel: dst.NewIdent("Cleanup")}, Args: []dst.Expr{&dst.SelectorExpr{X: dst.NewIdent(name), Sel: dst.NewIdent("Wait")}}}}
			var repl []dst.Stmt
			if wgGo {
				st := &dst.ExprStmt{X: &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(name), Sel: dst.NewIdent("Go")}, Args: []dst.Expr{dlit}}}
				st.Decs.Before = dst.NewLine
				st.Decs.End = dg.Decs.End
				repl = []dst.Stmt{st}
			} else {
				add := &dst.ExprStmt{X: &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(name), Sel: dst.NewIdent("Add")}, Args: []dst.Expr{&dst.BasicLit{Kind: token.INT, Value: "1"}}}}
				done := &dst.DeferStmt{Call: &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(name), Sel: dst.NewIdent("Done")}}}
				done.Decs.Before = dst.NewLine
				dlit.Body.List = append([]dst.Stmt{done}, dlit.Body.List...)
				add.Decs.Before = dst.NewLine
				dg.Decs.Before = dst.NewLine
				repl = []dst.Stmt{add, dg}
			}
			decl.Decs.Before, decl.Decs.Start = before, start
			cleanup.Decs.Before = dst.NewLine
			for i, st := range *list {
				if st == dst.Stmt(dg) {
					out := append([]dst.Stmt(nil), (*list)[:i]...)
					out = append(out, decl, cleanup)
					out = append(out, repl...)
					out = append(out, (*list)[i+1:]...)
					*list = out
					return nil
				}
			}
			return nil
		},
	}
}

func endPhrase(end string) string {
	if end == "the test's context" {
		return "the test's context is done"
	}
	return end + " runs"
}

// freshName returns base, or base2, base3, ..., the first not used in the
// function or the package.
func (c *checker) freshName(base string) string {
	used := map[string]bool{}
	ast.Inspect(c.fn, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			used[id.Name] = true
		}
		return true
	})
	name := base
	for k := 2; used[name] || c.pass.Pkg.Scope().Lookup(name) != nil; k++ {
		name = fmt.Sprintf("%s%d", base, k)
	}
	return name
}

// mayBlock says why the loop body may block outside its select, or "":
// it calls code that may wait on the state of the code under test (p.Submit
// blocking while a bug keeps a slot taken, a mutex a bug never unlocks).
// The test's own checks catch such a bug with their timeout; a join at
// cleanup would then wait for ever, and turn a clean failure into a hang
// of the whole binary. Only calls known not to block are allowed:
// builtins, conversions, the testing types' methods, and standard
// library packages that compute without waiting.
func (c *checker) mayBlock(b *ast.BlockStmt) string {
	out := ""
	ast.Inspect(b, func(n ast.Node) bool {
		if out != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CommClause:
			// The case's own operation (<-ctx.Done(), <-time.After(d)) is
			// the select's: it does not block the loop while another case
			// can run. Its body may.
			for _, st := range n.Body {
				ast.Inspect(st, func(m ast.Node) bool {
					if call, ok := m.(*ast.CallExpr); ok && out == "" {
						out = c.blockingCall(call)
					}
					_, lit := m.(*ast.FuncLit)
					return out == "" && !lit
				})
			}
			return false
		case *ast.CallExpr:
			out = c.blockingCall(n)
		}
		return out == ""
	})
	return out
}

// blockingCall says why call may block, or "".
func (c *checker) blockingCall(call *ast.CallExpr) string {
	if mu := c.sharedLock(call); mu != "" {
		return fmt.Sprintf("the goroutine locks %s at %s, a mutex the code under test locks too: a bug that returns still holding it (a path that forgets to unlock) blocks the goroutine, where the original failed at its check; a join at cleanup would then wait for ever and turn that failure into a hang: end it with a bounded wait by hand", mu, c.lineOf(call))
	}
	if !c.mayWait(call, map[*types.Func]bool{}, 0) {
		if fn := c.underTest(call, map[*types.Func]bool{}); fn != nil {
			return fmt.Sprintf("the goroutine calls %s, code under test: a bug may make it block (a receive that never comes), which running the correct code cannot show; a join at cleanup would then wait for ever and turn the failure the test reports into a hang: end it with a bounded wait by hand", types.ExprString(fn))
		}
		return ""
	}
	return fmt.Sprintf("the goroutine calls %s, which may block on the state of the code under test; a join at cleanup would then wait for ever and turn the failure the test reports into a hang: end it with a bounded wait by hand", types.ExprString(call.Fun))
}

// sharedLock names the mutex call locks (Lock, RLock) when it is not the
// test's own, or "". A mutex is the test's own when the variable holding
// it and every field on the way to it are declared in the test files (a
// local sync.Mutex, a field of a type of the test's); a field of a value
// of the package's type (c.mu of the cache under test, or the cache's
// embedded mutex), a package-level mutex of the package, or one reached
// through anything else is one the code under test may lock too, and a
// bug may return still holding it.
func (c *checker) sharedLock(call *ast.CallExpr) string {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "sync" || fn.Name() != "Lock" && fn.Name() != "RLock" {
		return ""
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	// A promoted Lock (c.Lock() of a type embedding sync.Mutex): the
	// receiver's type is the package's.
	if t := c.info.TypeOf(sel.X); t != nil && !c.testDeclared(namedObj(t)) && !isSyncLock(t) {
		return "the mutex " + types.ExprString(sel.X) + " embeds"
	}
	for e := ast.Unparen(sel.X); ; {
		switch x := e.(type) {
		case *ast.Ident:
			if !c.testDeclared(c.info.Uses[x]) {
				return types.ExprString(sel.X)
			}
			// A pointer to a mutex or a sync.Locker held in the test's
			// variable may point at the package's (mu := &c.mu).
			if t := c.info.TypeOf(x); t != nil && x == ast.Unparen(sel.X) && !isOwnValue(t) {
				return types.ExprString(sel.X)
			}
			return ""
		case *ast.SelectorExpr:
			if !c.testDeclared(c.info.Uses[x.Sel]) {
				return types.ExprString(sel.X)
			}
			if t := c.info.TypeOf(x.X); t != nil && !c.testDeclared(namedObj(t)) {
				return types.ExprString(sel.X)
			}
			e = ast.Unparen(x.X)
		case *ast.StarExpr:
			e = ast.Unparen(x.X)
		case *ast.UnaryExpr:
			e = ast.Unparen(x.X)
		default:
			return types.ExprString(sel.X) // an index, a call: the rule cannot tell whose
		}
	}
}

// testDeclared reports whether o is declared in the package's test files
// (or is nil: a type with no name, the test's own literal).
func (c *checker) testDeclared(o types.Object) bool {
	if o == nil {
		return true
	}
	if o.Pkg() == nil || o.Pkg() != c.pass.Pkg {
		// The standard library's (sync.Mutex itself) is nobody's; another
		// package's is code under test.
		return o.Pkg() == nil || match.IsStd(o.Pkg().Path())
	}
	return strings.HasSuffix(c.pass.Fset.Position(o.Pos()).Filename, "_test.go")
}

// namedObj returns the type name of t (through a pointer), or nil.
func namedObj(t types.Type) types.Object {
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj()
	}
	return nil
}

// isOwnValue reports whether a variable of type t holds its mutex by
// value (sync.Mutex, sync.RWMutex): not a pointer to one, nor an
// interface such as sync.Locker, which may lead to the package's.
func isOwnValue(t types.Type) bool {
	t = types.Unalias(t)
	if _, ok := t.(*types.Pointer); ok {
		return false
	}
	return !types.IsInterface(t)
}

// isSyncLock reports whether t is sync.Mutex or sync.RWMutex (or a
// pointer to one).
func isSyncLock(t types.Type) bool {
	return match.IsNamed(t, "sync", "Mutex", "RWMutex")
}

// mayWait reports whether call may wait on another goroutine: a call of
// code out of sight (another package's, an interface method, a function
// value), of sync.Cond.Wait, WaitGroup.Wait or time.Sleep, or of a
// function of the package whose body sends, receives, selects without a
// default, or makes such a call. Builtins, conversions, the testing
// types' methods, the test's own mutexes and the standard
// library packages that compute without waiting are not.
func (c *checker) mayWait(call *ast.CallExpr, seen map[*types.Func]bool, depth int) bool {
	if tv, ok := c.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
		return false
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.IsNamed(c.info.TypeOf(sel.X), "testing", "T", "B", "F", "TB") {
		return false
	}
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		c.waitedAt(call, "a call of the function value "+types.ExprString(call.Fun))
		return true // a function value
	}
	path := fn.Pkg().Path()
	switch {
	case path == "fmt" && c.fmtWaits(call):
		// fmt runs the String, Error or Format method of what it is
		// given (code under test, which may take a lock a bug leaves
		// held), and Fprint writes to a writer that may block (a pipe
		// whose reader a bug stopped): red team batch 23,
		// statusstringer and framefeeder.
		c.waitedAt(call, types.ExprString(call.Fun))
		return true
	case nonBlocking[path]:
		return false
	case path == "sync":
		// A mutex the goroutine's own code takes is the test's; one taken
		// inside the code under test is held as long as that code holds
		// it, and a bug may return still holding it.
		//
		// A lifecycle method (locksFree) is held to the same: the test's
		// own calls of the value take its mutex too, but a bug that wedges
		// the code holding it (a flush that locks twice) makes the test
		// fail at its check with the lock held, and only the cleanup's
		// Close then blocks, to the test's timeout.
		w := fn.Name() == "Wait" || (fn.Name() == "Do" && !c.locksFree) || (depth > 0 && (fn.Name() == "Lock" || fn.Name() == "RLock"))
		if w {
			c.waitedAt(call, types.ExprString(call.Fun))
		}
		return w
	case path == "time":
		if fn.Name() == "Sleep" {
			c.waitedAt(call, types.ExprString(call.Fun))
		}
		return fn.Name() == "Sleep"
	case c.locksFree && match.IsStd(path):
		// A lifecycle method's own resources of the standard library
		// (a file, a listener) end without the code under test.
		return false
	}
	if r := fn.Type().(*types.Signature).Recv(); r != nil && types.IsInterface(r.Type()) {
		c.waitedAt(call, "the interface method "+types.ExprString(call.Fun))
		return true
	}
	if c.decls[fn.Origin()] == nil {
		c.waitedAt(call, types.ExprString(call.Fun)+", out of sight")
	}
	return c.bodyWaits(fn, seen, depth)
}

// bodyWaits reports whether the body of fn, a function of the package,
// may wait on another goroutine (see mayWait); a function out of sight
// may.
func (c *checker) bodyWaits(fn *types.Func, seen map[*types.Func]bool, depth int) bool {
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil {
		return true
	}
	if seen[fn.Origin()] || depth > maxKeepDepth {
		return seen[fn.Origin()] == false // too deep: say it may
	}
	seen[fn.Origin()] = true
	waits := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if waits {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			return false // what it starts runs beside the caller
		case *ast.FuncLit:
			return false
		case *ast.SendStmt:
			waits = true
			c.waitedAt(n, "a send on "+types.ExprString(n.Chan))
		case *ast.UnaryExpr:
			waits = n.Op == token.ARROW
			if waits {
				c.waitedAt(n, "a receive from "+types.ExprString(n.X))
			}
		case *ast.SelectStmt:
			def := false
			for _, cc := range n.Body.List {
				if cc.(*ast.CommClause).Comm == nil {
					def = true
				}
			}
			waits = !def
			if waits {
				c.waitedAt(n, "a select")
			}
		case *ast.RangeStmt:
			if _, ok := types.Unalias(c.info.TypeOf(n.X)).Underlying().(*types.Chan); ok {
				waits = true
				c.waitedAt(n, "a range over "+types.ExprString(n.X))
			}
		case *ast.CallExpr:
			waits = c.mayWait(n, seen, depth+1)
		}
		return !waits
	})
	return waits
}

// nonBlocking lists the standard library packages whose functions and
// methods compute without waiting on other goroutines.
var nonBlocking = map[string]bool{
	"fmt": true, "strings": true, "strconv": true, "bytes": true, "sort": true, "slices": true,
	"maps": true, "math": true, "errors": true, "sync/atomic": true, "unicode": true,
	"unicode/utf8": true, "encoding/json": true, "encoding/hex": true, "encoding/base64": true,
	"path": true, "path/filepath": true, "reflect": true, "math/rand": true, "math/rand/v2": true,
}

// waitedAt records the first operation found that may wait ("b.mu.Lock at
// batch.go:41"), for the reason endWaits gives.
func (c *checker) waitedAt(n ast.Node, what string) {
	if c.waitAt == "" {
		p := c.pass.Fset.Position(n.Pos())
		c.waitAt = fmt.Sprintf("%s at %s:%d", what, filepath.Base(p.Filename), p.Line)
	}
}

// underTest returns the function expression of the call of code under
// test that call makes (itself, or through the test files' own helpers
// it reaches), or nil: a function of the package outside its _test.go
// files, or of another package outside the standard library. What such
// code waits on in the correct build says nothing of the buggy one (a
// Renew that waits for a grant only under the bug), so a goroutine that
// calls it may block under a bug the test catches, and joining it would
// hang the test instead.
func (c *checker) underTest(call *ast.CallExpr, seen map[*types.Func]bool) ast.Expr {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return nil
	}
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || !strings.HasSuffix(c.pass.Fset.Position(fd.Pos()).Filename, "_test.go") {
		return call.Fun
	}
	if seen[fn.Origin()] {
		return nil
	}
	seen[fn.Origin()] = true
	var out ast.Expr
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if inner, ok := n.(*ast.CallExpr); ok && out == nil {
			out = c.underTest(inner, seen)
		}
		return out == nil
	})
	return out
}

// fmtWaits reports whether a call of the fmt package may wait on the
// code under test: an Fprint of a writer other than an in-memory buffer
// (bytes.Buffer, strings.Builder), or any print of a value whose type
// is declared outside the standard library and has methods (String,
// Error, Format, GoString) that fmt would call.
func (c *checker) fmtWaits(call *ast.CallExpr) bool {
	args := call.Args
	if name := match.Callee(c.info, call).Name(); strings.HasPrefix(name, "Fprint") || name == "Fscan" || name == "Fscanf" || name == "Fscanln" {
		if len(args) == 0 {
			return true
		}
		if !match.IsNamed(c.info.TypeOf(args[0]), "bytes", "Buffer") && !match.IsNamed(c.info.TypeOf(args[0]), "strings", "Builder") {
			return true
		}
		args = args[1:]
	}
	for _, a := range args {
		t := c.info.TypeOf(a)
		if t == nil {
			continue
		}
		if p, ok := types.Unalias(t).(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := types.Unalias(t).(*types.Named)
		if !ok || n.Obj().Pkg() == nil || match.IsStd(n.Obj().Pkg().Path()) {
			continue
		}
		ms := types.NewMethodSet(types.NewPointer(n))
		for _, m := range []string{"String", "Error", "Format", "GoString"} {
			if ms.Lookup(n.Obj().Pkg(), m) != nil {
				return true
			}
		}
	}
	return false
}
