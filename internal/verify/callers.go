package verify

import (
	"go/ast"
	"go/types"
)

// A write the test awaits may sit in a function that more than one place
// calls: a config store's publish, called once by New for the first
// version and again by Reload's goroutine for the next. A late mutant of
// the write makes every call late, New's too, and the version counting
// that follows from it goes wrong in the original and the rewrite alike:
// a kill that says nothing about lateness (red team batch 20, hotreload,
// where a reload made 300ms late passed an 800ms deadline while the only
// late mutants were killed by both). So each statement that calls a
// function holding an awaited write is a late target of its own: the
// reload made late, New left alone.

// callerTargets returns the statements of fd that call a function or
// method of the package (a call statement, its callee's name in calls),
// as late targets.
func (c *collector) callerTargets(fd *ast.FuncDecl) []*target {
	var out []*target
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		es, ok := n.(*ast.ExprStmt)
		if !ok {
			return true
		}
		call, ok := ast.Unparen(es.X).(*ast.CallExpr)
		if !ok {
			return true
		}
		var id *ast.Ident
		switch fun := ast.Unparen(call.Fun).(type) {
		case *ast.Ident:
			id = fun
		case *ast.SelectorExpr:
			id = fun.Sel
		}
		if id == nil {
			return true
		}
		fn, ok := c.info.Uses[id].(*types.Func)
		if !ok || fn.Pkg() == nil || fn.Pkg().Scope() != c.scope {
			return true
		}
		out = append(out, &target{file: c.file, src: c.src, pkgEnd: c.pkgEnd,
			start: c.fset.Position(es.Pos()).Offset, end: c.fset.Position(es.End()).Offset, line: c.fset.Position(es.Pos()).Line,
			kind: signals, encl: fd.Name.Name, calls: fn.Name()})
		return true
	})
	return out
}

// keepCallers drops the caller targets that overlap a target or an aimed
// site: a schema splices each place once.
func keepCallers(callers, targets, aims []*target) []*target {
	var out []*target
	for _, c := range callers {
		overlaps := false
		for _, ts := range [][]*target{targets, aims} {
			for _, t := range ts {
				if t.file == c.file && t.start < c.end && c.start < t.end {
					overlaps = true
				}
			}
		}
		if !overlaps {
			out = append(out, c)
		}
	}
	return out
}

// lateCallers returns the statements that call a function holding one of
// the relevant targets (rel) from another function: where the awaited
// write is reached on the path the test waits on, and not on every
// other.
func (c *codeUnderTest) lateCallers(rel []*target) []*target {
	holds := map[string]bool{}
	for _, t := range rel {
		holds[t.encl] = true
	}
	var out []*target
	for _, t := range c.callers {
		if holds[t.calls] && !holds[t.encl] {
			out = append(out, t)
		}
	}
	return out
}
