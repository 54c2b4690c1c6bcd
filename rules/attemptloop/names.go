package attemptloop

import (
	"go/ast"
	"go/types"
	"strconv"
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
	name, n := "", 0
	for _, imp := range c.file.Imports {
		if path, err := strconv.Unquote(imp.Path.Value); err != nil || path != "time" {
			continue
		}
		n++
		name = "time"
		if imp.Name != nil {
			name = imp.Name.Name
		}
	}
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
	_, obj := s.LookupParent(name, l.stmt.Pos())
	if pn, ok := obj.(*types.PkgName); !ok || pn.Imported().Path() != "time" {
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
	used := map[string]bool{}
	ast.Inspect(l.body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			used[id.Name] = true
		}
		return true
	})
	if l.counter != nil {
		used[l.counter.Name()] = true
	}
	s := c.scope(l)
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name += strconv.Itoa(i)
		}
		if used[name] {
			continue
		}
		if s != nil {
			if _, obj := s.LookupParent(name, l.stmt.Pos()); obj != nil {
				continue
			}
		}
		return name
	}
}
