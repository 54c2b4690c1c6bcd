package readiness

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// The test is not the only one to look at the child. A child leaves
// things behind when it stops (a pid file removed, a "clean" marker, a
// state directory, a socket), and another test of the package may read
// them: a test later in the run order, an earlier one in -count's next
// round, the external test package's tests, TestMain after m.Run. A
// function that looks at nothing after the signal still passes what the
// child leaves to them, and the sleep was their window too: an
// implementation that exits on its own inside it (a watchdog) never runs
// the clean stop in the original, whose later check catches it, while a
// readiness line signals it before that. So the test counts as looking at
// the child after the signal when any of them looks at files or the
// network (see lookedAtBy).

// laterLook returns, as a phrase for looksAfter, the first look at what
// the child of s may leave by the test before it starts the child, by
// another test of the package, by TestMain after m.Run or by a file of
// the external test package; or "".
func (c *checker) laterLook(s *site) string {
	// The test itself, before it starts the child: in -count's next
	// round it reads what this round's child left.
	start := s.list[s.start].Pos()
	var before []ast.Stmt
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		st, ok := n.(ast.Stmt)
		if !ok || n == ast.Node(c.fn.Body) {
			return true
		}
		if st.End() <= start {
			before = append(before, st)
			return false
		}
		return st.Pos() < start
	})
	for _, st := range before {
		if what, at := c.looksIn(st); what != "" {
			return "the test itself, before it starts the child, which in -count's next round looks at what this round's child left (" + what + " at " + at + ")"
		}
	}
	helpers := map[*ast.FuncDecl]bool{}
	for _, fds := range c.helpers {
		for _, fd := range fds {
			helpers[fd] = true
		}
	}
	for _, fd := range c.testFuncs() {
		if fd == c.fn || helpers[fd] {
			continue
		}
		if what, at := c.looksIn(fd.Body); what != "" {
			return fd.Name.Name + ", another test of the package, which runs in the same process after it (or before it, in -count's next round) and looks at what the child leaves (" + what + " at " + at + ")"
		}
	}
	if what, at := c.testMainLooks(); what != "" {
		return "TestMain, which looks after m.Run at what the child leaves (" + what + " at " + at + ")"
	}
	return c.externalLooks()
}

// looksIn returns the first look at files or the network in body, in its
// function literals too (subtests, cleanups), and where.
func (c *checker) looksIn(body ast.Node) (string, string) {
	if what, at := c.calls(body, lookedAtBy, effect.Network, 0, map[*ast.FuncDecl]bool{}); what != "" {
		return what, at
	}
	var what, at string
	ast.Inspect(body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok && what == "" && lit != body {
			what, at = c.looksIn(lit.Body)
		}
		return what == ""
	})
	return what, at
}

// testMainLooks returns the first look of TestMain at files or the
// network after its call of m.Run, and where.
func (c *checker) testMainLooks() (string, string) {
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "TestMain" || fd.Recv != nil || fd.Body == nil {
				continue
			}
			ran := false
			for _, st := range fd.Body.List {
				if !ran {
					ran = mentionsRun(st)
					if !ran {
						continue
					}
				}
				if what, at := c.looksIn(st); what != "" {
					return what, at
				}
			}
		}
	}
	return "", ""
}

// mentionsRun reports whether st calls a method Run (m.Run()).
func mentionsRun(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" {
			found = true
		}
		return !found
	})
	return found
}

// externalLooks reads the external test package's files (package x_test,
// in the same directory and binary) from their syntax, and returns where
// one of them looks at files or the network, or "".
func (c *checker) externalLooks() string {
	if len(c.pass.AllFiles) == 0 {
		return ""
	}
	dir := filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name())
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			if f == nil || f.Name.Name == c.pass.Pkg.Name()+"_test" {
				return "the external test package's file " + e.Name() + ", which the rule cannot parse, and which may look at what the child leaves"
			}
			continue
		}
		if f.Name.Name != c.pass.Pkg.Name()+"_test" {
			continue
		}
		imports := match.ImportNames(f)
		at := ""
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || at != "" {
				return at == ""
			}
			if x, ok := sel.X.(*ast.Ident); ok {
				for _, name := range lookedAtBy[imports[x.Name]] {
					if sel.Sel.Name == name {
						at = x.Name + "." + name + " at " + fmt.Sprintf("%s:%d", e.Name(), fset.Position(sel.Pos()).Line)
					}
				}
			}
			return at == ""
		})
		if at != "" {
			return "the external test package, whose tests run in the same process after it and look at what the child leaves (" + at + ")"
		}
	}
	return ""
}
