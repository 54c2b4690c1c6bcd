package attemptloop

import (
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// usedAfter reports whether the counter, declared outside the loop, is
// used after it.
func (c *checker) usedAfter(l *loop) bool {
	var scope ast.Node = c.file
	for _, n := range l.stack {
		switch n.(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			scope = n
		}
	}
	found := false
	ast.Inspect(scope, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Pos() >= l.stmt.End() && c.info.Uses[id] == l.counter {
			found = true
		}
		return !found
	})
	return found
}

// scope returns the scope the loop statement is in.
func (c *checker) scope(l *loop) *types.Scope {
	s := c.pass.Pkg.Scope().Innermost(l.stmt.Pos())
	if s != nil && s == c.info.Scopes[l.stmt] {
		s = s.Parent()
	}
	return s
}

// resolvesTo reports whether name denotes obj at the loop.
func (c *checker) resolvesTo(l *loop, name string, obj types.Object) bool {
	s := c.scope(l)
	if s == nil {
		return false
	}
	_, got := s.LookupParent(name, l.stmt.Pos())
	return got == obj
}

// timePackage checks that the fix can name the time package at the loop:
// the file imports it once, under a name that is not shadowed there. It
// returns why not, or "".
func (c *checker) timePackage(l *loop) string {
	name, n := match.ImportName(c.file, "time", "time")
	switch {
	case n == 0:
		return "the file does not import time"
	case n > 1:
		return "the file imports time more than once"
	case name == ".":
		return "the file dot-imports time"
	case name == "_":
		return "the file imports time only for its side effects"
	}
	s := c.scope(l)
	if s == nil {
		return "the loop's scope is unknown"
	}
	if !match.Denotes(s, l.stmt.Pos(), name, "time") {
		if name == "time" {
			return "time is shadowed at the loop"
		}
		return name + " (the time package) is shadowed at the loop"
	}
	return ""
}

// freshName returns base, or base2, base3, ... if base is used in the loop
// body, is the counter's name, or is declared in scope at the loop.
func (c *checker) freshName(l *loop, base string) string {
	used := match.Idents(l.body)
	if l.counter != nil {
		used[l.counter.Name()] = true
	}
	return match.FreshName(c.scope(l), l.stmt.Pos(), used, base)
}
