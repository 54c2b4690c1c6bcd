package testscope

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// vars saves and restores, with t.Cleanup, the package-level variables a
// test assigns and never restores.
func (c *checker) vars(sc *scope, sites []site) {
	type write struct {
		s  site
		id *ast.Ident
	}
	first := map[*types.Var]write{}
	var order []*types.Var
	for _, s := range sites {
		a, ok := s.stmt.(*ast.AssignStmt)
		if !ok || a.Tok != token.ASSIGN {
			continue
		}
		for _, l := range a.Lhs {
			var id *ast.Ident
			switch l := ast.Unparen(l).(type) {
			case *ast.Ident:
				id = l
			case *ast.SelectorExpr:
				if _, isField := c.info.Selections[l]; !isField {
					id = l.Sel // pkg.V
				}
			}
			if id == nil {
				continue
			}
			v, _ := c.info.Uses[id].(*types.Var)
			if !match.IsPackageLevel(v) {
				continue
			}
			if _, seen := first[v]; !seen {
				first[v] = write{s, id}
				order = append(order, v)
			}
		}
	}
	for _, v := range order {
		w := first[v]
		if c.restored(sc, v) {
			continue
		}
		name := v.Name()
		if v.Pkg() != c.pass.Pkg {
			name = v.Pkg().Name() + "." + v.Name()
		}
		d := rule.Diagnostic{
			Pos:     w.s.stmt.Pos(),
			End:     w.s.stmt.End(),
			Message: fmt.Sprintf("the test changes the package-level variable %s and never restores it", name),
		}
		top := topStmt(sc.body, w.s.stmt)
		var why string
		switch {
		case v.Pkg() != c.pass.Pkg:
			why = fmt.Sprintf("%s belongs to package %s; the rule restores only the package's own variables", name, v.Pkg().Path())
		case sc.inParallel():
			why = "the test runs in parallel; restoring the variable would not make the write safe"
		case c.goroutineRead(sc, v) != "":
			why = fmt.Sprintf("the test starts %s, which may still read %s when the cleanup restores it: the restore would race with it", c.goroutineRead(sc, v), name)
		case hasLock(v.Type(), 0):
			why = fmt.Sprintf("saving %s would copy a lock", name)
		case c.addressKept(v) != "":
			why = c.addressKept(v)
		case top == nil:
			why = "the write is not in the test's statements"
		case !c.atLeast("go1.14"):
			why = c.tooOld("t.Cleanup", "go1.14")
		case !c.resolves(sc.t.Name(), top.Pos(), sc.t) || !c.resolves(v.Name(), top.Pos(), v):
			why = fmt.Sprintf("%s or %s does not name what it should where the save would go", sc.t.Name(), v.Name())
		}
		if why != "" {
			d.NotFixed = why
			c.pass.Report(d)
			continue
		}
		// Running the package shows whether a later test needed the
		// leaked value (the order is the source's, unless -shuffle).
		var later string
		var before string
		who, after := c.laterRead(sc, c.varReadOf(v), func(n ast.Node) bool { id, ok := n.(*ast.Ident); return ok && c.info.Uses[id] == types.Object(v) }, c.varSetOf(v), c.varSave(v))
		if who == "" {
			who, after = c.leftOutReader("", func() map[string]bool { return c.readingFuncs(c.varReadOf(v), v.Name()) }, false), true
		}
		if who != "" {
			if after {
				later = fmt.Sprintf("the test leaves %s changed for the tests after it, and %s may read it without setting it first: a restore would change what it sees (a short period it relied on)", name, who)
			} else {
				// A test that runs before it sees the leak only under
				// -count or -shuffle: running the package shows whether
				// it needs it.
				before = fmt.Sprintf("the test leaves %s changed for the tests after it, and %s may read it without setting it: a restore would change what it sees", name, who)
			}
		}
		// Cleanups run last registered, first run: one the test registered
		// before the save (by hand, or through a helper or constructor
		// given t) runs after the restore, and saw the test's value in the
		// original. The save then goes first in the test, so that its
		// restore runs after every cleanup the test registers. In a
		// helper, the caller's cleanups run after it whatever the helper
		// does: not fixed.
		at := top
		if early := c.cleanupBefore(sc, top, v); early != "" {
			first := sc.body.List[0]
			switch {
			case !sc.test:
				why = fmt.Sprintf("%s, registered before the helper's restore would be, runs after it and may read %s, which it saw as the test left it", early, name)
			case !c.resolves(sc.t.Name(), first.Pos(), sc.t) || !c.resolves(v.Name(), first.Pos(), v):
				why = fmt.Sprintf("%s, registered before the restore would be, runs after it and may read %s; %s or %s does not name what it should at the start of the test, where the save would have to go", early, name, sc.t.Name(), v.Name())
			default:
				at = first
			}
			if why == "" && c.cleanupReadsInCallers(sc, v) != "" {
				why = c.cleanupReadsInCallers(sc, v)
			}
		} else if !sc.test {
			if w := c.cleanupReadsInCallers(sc, v); w != "" {
				why = w
			}
		}
		if why == "" {
			// A later test that relied on the leaked value (a short
			// period) would run with the restored one and miss what it
			// caught: running cannot tell a pass that sees nothing.
			why = later
		}
		if why != "" {
			d.NotFixed = why
			c.pass.Report(d)
			continue
		}
		saved := c.freshName(v.Name())
		t := sc.t.Name()
		d.Fix = &rule.Fix{
			Message: fmt.Sprintf("save %s first and restore it with t.Cleanup", name),
			Changes: []rule.Change{{Kind: rule.Paths, What: "the package variable is restored when the test ends", Checked: checked(before,
				"no later test reads the variable without setting it",
				"no goroutine the test starts reads the variable",
				"the restore runs after every cleanup the test registered that may read the variable",
			)}},
			Apply: func() error {
				save := &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(saved)}, Tok: token.DEFINE, Rhs: []dst.Expr{dst.NewIdent(v.Name())}}
				body := &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(v.Name())}, Tok: token.ASSIGN, Rhs: []dst.Expr{dst.NewIdent(saved)}}
				cleanup := &dst.ExprStmt{X: tCall(t, "Cleanup", &dst.FuncLit{Type: &dst.FuncType{Params: &dst.FieldList{}}, Body: &dst.BlockStmt{List: []dst.Stmt{body}}})}
				return c.insertBefore(sc.body, at, save, cleanup)
			},
		}
		c.pass.Report(d)
	}
}

// topStmt returns the statement of body's list that holds st.
func topStmt(body *ast.BlockStmt, st ast.Stmt) ast.Stmt {
	for _, s := range body.List {
		if s.Pos() <= st.Pos() && st.End() <= s.End() {
			return s
		}
	}
	return nil
}

// restored reports whether the code puts v back: an assignment to it in
// a deferred call or a t.Cleanup (or a package function they name) of the
// test or a test enclosing it; for a helper, anywhere in the package,
// since a restore in the caller would run before the helper's cleanup.
func (c *checker) restored(sc *scope, v *types.Var) bool {
	roots := []ast.Node{}
	if sc.test {
		for s := sc; s != nil; s = s.parent {
			roots = append(roots, s.body)
		}
	} else {
		for _, f := range c.pass.AllFiles {
			roots = append(roots, f)
		}
	}
	found := false
	for _, root := range roots {
		ast.Inspect(root, func(n ast.Node) bool {
			if found {
				return false
			}
			var at ast.Node
			switch n := n.(type) {
			case *ast.DeferStmt:
				at = n.Call
			case *ast.CallExpr:
				if match.IsMethod(c.info, n, "testing", "Cleanup") {
					at = n
				}
			}
			if at != nil && c.assigns(at, v, 0) {
				found = true
			}
			return !found
		})
	}
	return found
}

// assigns reports whether root (or a package function it names, two levels
// deep) assigns v.
func (c *checker) assigns(root ast.Node, v *types.Var, depth int) bool {
	if match.Modifies(c.info, root, []*types.Var{v}) != nil {
		return true
	}
	if depth >= 2 {
		return false
	}
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if fn, ok := c.info.Uses[id].(*types.Func); ok {
				if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil && c.assigns(fd.Body, v, depth+1) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// freshName returns a name for the saved value of v that nothing in the
// function uses.
func (c *checker) freshName(v string) string {
	used := map[string]bool{}
	ast.Inspect(c.fd, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			used[id.Name] = true
		}
		return true
	})
	for i := 0; ; i++ {
		name := "saved"
		switch {
		case i == 1:
			name = "saved" + strings.ToUpper(v[:1]) + v[1:]
		case i > 1:
			name = fmt.Sprintf("saved%d", i)
		}
		if !used[name] && !c.taken[name] && c.pass.Pkg.Scope().Lookup(name) == nil {
			c.taken[name] = true
			return name
		}
	}
}

// hasLock reports whether a value of type t holds a sync lock.
func hasLock(t types.Type, depth int) bool {
	if depth > 8 {
		return false
	}
	if match.IsNamed(t, "sync", "Mutex", "RWMutex", "WaitGroup", "Once", "Cond", "Map", "Pool") {
		return true
	}
	switch u := t.Underlying().(type) {
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			if hasLock(u.Field(i).Type(), depth+1) {
				return true
			}
		}
	case *types.Array:
		return hasLock(u.Elem(), depth+1)
	}
	return false
}

// cleanupBefore says where the test registers, in its statements before
// top, a cleanup that may read v ("the t.Cleanup at store_test.go:9"), or
// "": a t.Cleanup whose function reads it, directly or through the package
// functions it reaches (a function value the rule cannot follow counts),
// or a call given a testing value, which may register one (a package
// helper that reaches a t.Cleanup, or code of another package). Deferred
// calls run before every cleanup, so before the restore, as they did.
func (c *checker) cleanupBefore(sc *scope, top ast.Stmt, v *types.Var) string {
	var why string
	for _, st := range sc.body.List {
		if st == top || why != "" {
			break
		}
		ast.Inspect(st, func(n ast.Node) bool {
			if why != "" {
				return false
			}
			if _, ok := n.(*ast.DeferStmt); ok {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if match.IsMethod(c.info, call, "testing", "Cleanup") && len(call.Args) == 1 {
				if c.mayRead(call.Args[0], v) {
					why = "the t.Cleanup at " + c.line(call)
				}
				return false
			}
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.IsNamed(c.info.TypeOf(sel.X), "testing", "T", "B", "F", "TB") {
				return true // Run, Log, Fatal, ...: not a helper
			}
			given := false
			for _, a := range call.Args {
				given = given || match.IsNamed(c.info.TypeOf(a), "testing", "T", "B", "F", "TB")
			}
			if !given {
				return true
			}
			fn := match.Callee(c.info, call)
			if fn == nil || c.decls[fn.Origin()] == nil {
				if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "testing" {
					why = fmt.Sprintf("%s at %s, given the test's t, which may register a cleanup", types.ExprString(call.Fun), c.line(call))
				}
				return true
			}
			fd := c.decls[fn.Origin()]
			roots := []ast.Node{fd.Body}
			for g := range c.reachable(fd.Body, nil) {
				roots = append(roots, c.decls[g].Body)
			}
			for _, r := range roots {
				ast.Inspect(r, func(m ast.Node) bool {
					if in, ok := m.(*ast.CallExpr); ok && why == "" && match.IsMethod(c.info, in, "testing", "Cleanup") && len(in.Args) == 1 && c.mayRead(in.Args[0], v) {
						why = fmt.Sprintf("%s at %s, which registers a cleanup (%s)", types.ExprString(call.Fun), c.line(call), c.line(in))
					}
					return why == ""
				})
			}
			return true
		})
	}
	return why
}

// cleanupReadsInCallers says, for a helper, where a t.Cleanup of the
// package (a caller's, registered before the helper runs, runs after its
// restore) may read v, or "".
func (c *checker) cleanupReadsInCallers(sc *scope, v *types.Var) string {
	if sc.test {
		return ""
	}
	var why string
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && why == "" && (call.Pos() < c.fd.Pos() || call.End() > c.fd.End()) && match.IsMethod(c.info, call, "testing", "Cleanup") && len(call.Args) == 1 && c.mayRead(call.Args[0], v) {
				why = fmt.Sprintf("the t.Cleanup at %s may run after the helper's restore (a caller's cleanup registered before it runs later) and may read %s", c.line(call), v.Name())
			}
			return why == ""
		})
	}
	return why
}

// mayRead reports whether the function e (a literal, a package function
// or method value, or a value the rule cannot follow) may read v.
func (c *checker) mayRead(e ast.Expr, v *types.Var) bool {
	if c.reads(e, v, nil) {
		return true
	}
	for fn := range c.reachable(e, nil) {
		if c.reads(c.decls[fn].Body, v, nil) {
			return true
		}
	}
	if _, lit := ast.Unparen(e).(*ast.FuncLit); lit {
		return false
	}
	if fn := match.Callee(c.info, &ast.CallExpr{Fun: e}); fn != nil {
		return c.decls[fn.Origin()] == nil && (fn.Pkg() == nil || !match.IsStd(fn.Pkg().Path()))
	}
	return true // a function value: who knows what it reads
}

// addressKept says where the package hands v's address to a function
// (flag.DurationVar(&interval, ...), a registry given &cfg), which may
// keep the pointer: code reads v through it (flag.Lookup(name).Value)
// where the rule's search for later readers of v does not look, so a
// restore may take away a value a later test relied on (red team batch
// 23, flagalias). "" when v's address goes nowhere.
func (c *checker) addressKept(v *types.Var) string {
	found := ""
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found != "" {
				return found == ""
			}
			// The standard library keeps an address only in its flag
			// sets; json.Unmarshal or atomic.StoreInt64 given &v use it
			// and let go.
			if fn := match.Callee(c.info, call); fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) && fn.Pkg().Path() != "flag" {
				return true
			}
			for _, a := range call.Args {
				u, ok := ast.Unparen(a).(*ast.UnaryExpr)
				if !ok || u.Op != token.AND {
					continue
				}
				if id, ok := ast.Unparen(u.X).(*ast.Ident); ok && c.info.Uses[id] == types.Object(v) {
					found = fmt.Sprintf("the package hands the address of %s to %s at %s, which may keep it: code reads %s through that pointer where the rule does not look for later readers, and a restore may take away a value a later test relied on", v.Name(), types.ExprString(call.Fun), c.line(call), v.Name())
				}
			}
			return found == ""
		})
	}
	return found
}
