package waitfor

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// "The rest of the test" after a monotone poll is more than the
// statements after it in its own function (laterWhy). The window also
// held back (red team batch 19):
//
//   - the cleanups a helper the test called registered before the wait:
//     they run when the test ends, after the whole window (a pool's
//     cleanup that closes it and checks no job ran twice; cleanupdupes);
//   - when the wait is in a function literal (a subtest's body), what
//     the enclosing function does after it returns, in a loop around it,
//     or in its own defers and cleanups (a parent that checks, after its
//     subtests, that nothing was redelivered; subtestbus);
//   - the tests after this one, when the state the code holds is
//     reachable from a package-level variable (a bus fixture TestMain
//     keeps in a variable of the test files, which the next test checks;
//     sharedbus).
//
// The rule cannot see all of that rest, so where any of it may hold a
// check, it does not make the poll.

// restWhy says which part of the test's rest beyond the wait's own
// function depends on the time the sleep let pass (naming its line), or
// "".
func (p *poll) restWhy() string {
	c := p.group.c
	waitPos := p.wait.stmt.Pos()
	var outer *ast.FuncDecl
	for _, n := range p.stack {
		if fd, ok := n.(*ast.FuncDecl); ok {
			outer = fd
			break
		}
	}
	if outer == nil {
		return ""
	}
	if why := c.earlierCleanup(outer, waitPos); why != "" {
		return why
	}
	if why := p.enclosingLater(); why != "" {
		return why
	}
	return c.sharedFixture(outer)
}

// earlierCleanup names a cleanup that a function of the package the test
// calls before pos registers and that checks something (or runs a
// function value the rule cannot read), or "". The test's own t.Cleanup
// literals are laterWhy's: they are in its body.
func (c *checker) earlierCleanup(outer *ast.FuncDecl, pos token.Pos) string {
	found := ""
	ast.Inspect(outer.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if found != "" || !ok || call.Pos() >= pos {
			return found == ""
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() != c.pass.Pkg {
			return true
		}
		c.reach(fn, 3, func(fd *ast.FuncDecl) bool {
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				reg, ok := n.(*ast.CallExpr)
				if found != "" || !ok || !match.IsMethod(c.info, reg, "testing", "Cleanup") || len(reg.Args) != 1 {
					return found == ""
				}
				var body ast.Node
				switch a := ast.Unparen(reg.Args[0]).(type) {
				case *ast.FuncLit:
					body = a.Body
				case *ast.Ident, *ast.SelectorExpr:
					// A function or method value (t.Cleanup(p.Close)):
					// read its body when the package declares it; one of
					// another package is not handed the test and cannot
					// fail it.
					var id *ast.Ident
					if sel, ok := a.(*ast.SelectorExpr); ok {
						id = sel.Sel
					} else {
						id = a.(*ast.Ident)
					}
					if f, ok := c.info.Uses[id].(*types.Func); ok {
						if fd := c.decls[f.Origin()]; fd != nil && fd.Body != nil {
							body = fd.Body
						} else {
							return true
						}
					}
				}
				if body == nil {
					found = fmt.Sprintf("%s, called at %s before the wait, registers a cleanup at %s that runs a function value the rule does not follow, after the whole window", fn.Name(), c.line(call), c.line(reg))
					return false
				}
				if s := c.checkIn(body); s != nil {
					found = fmt.Sprintf("%s, called at %s before the wait, registers a cleanup at %s whose check at %s (%s) runs when the test ends, after the whole window", fn.Name(), c.line(call), c.line(reg), c.line(s), c.short(s))
					return false
				}
				return true
			})
			return found == ""
		})
		return found == ""
	})
	return found
}

// checkIn returns the first statement under root that checks, fails the
// test or hands the test to a checking helper, or nil.
func (c *checker) checkIn(root ast.Node) ast.Stmt {
	var found ast.Stmt
	ast.Inspect(root, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		s, ok := n.(ast.Stmt)
		if !ok {
			return true
		}
		if c.checkOf(s) != nil || c.failsHere(s) {
			found = s
			return false
		}
		if es, ok := s.(*ast.ExprStmt); ok {
			if call, ok := ast.Unparen(es.X).(*ast.CallExpr); ok && c.checkingHelper(call) != "" {
				found = s
				return false
			}
		}
		return true
	})
	return found
}

// enclosingLater names a check that a function enclosing the wait's
// function literal (a subtest's parent) runs after the literal: after it
// in the text, in a loop around it, or in a deferred function, a cleanup
// or a goroutine. A parent's t.Run returns when the subtest ends, which
// the poll now makes sooner, so such a check runs before what the window
// let happen (a redelivery the subtest's deferred cancel then drops).
func (p *poll) enclosingLater() string {
	c := p.group.c
	var lit ast.Node = p.group.fn
	for k := len(p.stack) - 1; k >= 0; k-- {
		if p.stack[k] != lit {
			continue
		}
		if _, ok := lit.(*ast.FuncLit); !ok {
			return ""
		}
		// The function around lit.
		var encl ast.Node
		for j := k - 1; j >= 0; j-- {
			switch p.stack[j].(type) {
			case *ast.FuncLit, *ast.FuncDecl:
				encl = p.stack[j]
			}
			if encl != nil {
				break
			}
		}
		if encl == nil {
			return ""
		}
		var loop ast.Node
		for _, n := range p.stack[:k] {
			switch n.(type) {
			case *ast.ForStmt, *ast.RangeStmt:
				if n.Pos() > encl.Pos() && n.End() <= encl.End() {
					loop = n
				}
			}
		}
		found := ""
		match.WithStack(encl, func(n ast.Node, stack []ast.Node) bool {
			if found != "" || n == lit {
				return false
			}
			s, ok := n.(ast.Stmt)
			if !ok {
				return true
			}
			after := s.Pos() >= lit.End() || loop != nil && s.Pos() >= loop.Pos() && s.End() <= loop.End() || c.runsLast(stack)
			if !after {
				return true
			}
			if ck := c.checkOf(s); ck != nil {
				lg := &group{c: c, wait: p.group.wait, fn: encl, stmts: []ast.Stmt{s}, checks: []*check{ck}}
				if !lg.readsSince(lit.Pos()) || lg.errOnly() {
					return false
				}
				found = fmt.Sprintf("the check at %s (%s) in the function around the wait's function literal runs after it returns, which the poll makes sooner", c.line(s), c.short(s))
				return false
			}
			if es, ok := s.(*ast.ExprStmt); ok {
				if call, ok := ast.Unparen(es.X).(*ast.CallExpr); ok {
					if h := c.checkingHelper(call); h != "" {
						found = fmt.Sprintf("the helper %s(...) at %s in the function around the wait's function literal runs after it returns, which the poll makes sooner, and checks what may still change", h, c.line(s))
						return false
					}
				}
			}
			return true
		})
		if found != "" {
			return found
		}
		lit = encl
	}
	return ""
}

// sharedFixture names a package-level variable that the test (or a
// function of the package it calls) reads and that may hold state of the
// code under test (a pointer, an interface, a channel, a map, a value of
// a type of the module), or "". What the code does to that state in the
// rest of the window, the tests after this one see (a fixture TestMain
// keeps, which the next test checks for redeliveries), and a poll that
// ends the window at the first event ends this test sooner, whose
// deferred cancel then keeps it from happening. The rule does not follow
// which tests read the variable after this one, so any such read counts.
func (c *checker) sharedFixture(outer *ast.FuncDecl) string {
	found := ""
	look := func(body ast.Node) {
		ast.Inspect(body, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if found != "" || !ok {
				return found == ""
			}
			v, ok := c.info.Uses[id].(*types.Var)
			if !ok || v.Pkg() == nil || v.IsField() || v.Parent() != v.Pkg().Scope() || match.IsStd(v.Pkg().Path()) {
				return true
			}
			if holdsState(v.Type(), map[types.Type]bool{}) {
				found = fmt.Sprintf("the test reads the package-level variable %s at %s, which may hold state of the code under test (%s): later tests may check what the code does to it", v.Name(), c.line(id), types.TypeString(v.Type(), types.RelativeTo(c.pass.Pkg)))
				return false
			}
			return true
		})
	}
	look(outer.Body)
	if fn, ok := c.info.Defs[outer.Name].(*types.Func); ok {
		c.reach(fn, 3, func(fd *ast.FuncDecl) bool {
			if fd != outer {
				look(fd.Body)
			}
			return found == ""
		})
	}
	return found
}

// holdsState reports whether a value of type t may hold (or point to)
// state the code under test changes: a pointer to such state, an
// interface, a channel, or a type of a package outside the standard
// library that has methods. Function values (a table's check) and plain
// data (numbers, strings, a table's rows) do not.
func holdsState(t types.Type, seen map[types.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if n, ok := t.(*types.Named); ok {
		if _, basic := n.Underlying().(*types.Basic); basic {
			return false
		}
		// A type of the module with methods is an object of the code (a
		// bus, a pool); one without (a test table's row) is data.
		if n.Obj().Pkg() != nil && !match.IsStd(n.Obj().Pkg().Path()) && types.NewMethodSet(types.NewPointer(n)).Len() > 0 {
			return true
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return holdsState(u.Elem(), seen)
	case *types.Slice:
		return holdsState(u.Elem(), seen)
	case *types.Array:
		return holdsState(u.Elem(), seen)
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			if holdsState(u.Field(i).Type(), seen) {
				return true
			}
		}
		return false
	case *types.Map:
		return holdsState(u.Key(), seen) || holdsState(u.Elem(), seen)
	case *types.Interface, *types.Chan:
		return true
	}
	return false
}

// reach calls visit with the declaration of fn and of each function of
// the package it calls, to depth calls deep, until visit returns false.
func (c *checker) reach(fn *types.Func, depth int, visit func(*ast.FuncDecl) bool) {
	seen := map[*types.Func]bool{}
	var walk func(fn *types.Func, depth int) bool
	walk = func(fn *types.Func, depth int) bool {
		fn = fn.Origin()
		fd := c.decls[fn]
		if seen[fn] || fd == nil || fd.Body == nil || fn.Pkg() != c.pass.Pkg {
			return true
		}
		seen[fn] = true
		if !visit(fd) {
			return false
		}
		if depth == 0 {
			return true
		}
		more := true
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && more {
				if f := match.Callee(c.info, call); f != nil {
					more = walk(f, depth-1)
				}
			}
			return more
		})
		return more
	}
	walk(fn, depth)
}
