package readiness

import (
	"fmt"
	"go/ast"
	"go/build"
	"path/filepath"
)

// The typed analysis reads one build of the code under test, but every
// build of the package's directory, and of the module's packages the
// child calls, is an implementation the tests run against (a variant
// behind a build tag, a _linux.go file). One that starts work that runs on
// by itself (a goroutine, a timer, a ticker, a deadline: a watchdog that
// exits the daemon 400ms after start when nothing pings it) runs it in the
// window the sleep gave, and the sleep was the window in which the test,
// or a later test reading what the child left, saw it. The rule reads
// those builds from their syntax only: it cannot tell when such work
// starts (before or after the handler), whether it ends, or what it does,
// so such a site is not fixed, whoever looks at the child.

// otherBuildsChecked is the Checked entry of a fix: the hazard excluded.
const otherBuildsChecked = "no build the analysis does not type starts a goroutine, a timer, a ticker or a deadline in what the child runs"

// backgroundFuncs are the standard functions that start work running on
// by itself, by package path.
var backgroundFuncs = map[string]map[string]bool{
	"time":    {"After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true},
	"context": {"WithTimeout": true, "WithDeadline": true, "WithTimeoutCause": true, "WithDeadlineCause": true},
}

// otherBuilds says why the child may run work of its own in the sleep's
// window in a build the typed analysis leaves out, naming it and its
// line; or "".
func (c *checker) otherBuilds(helper string) string {
	if len(c.pass.AllFiles) == 0 {
		return ""
	}
	w := newAgeWalker(filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name()))
	w.background = true
	w.built = map[string]bool{}
	for _, f := range c.pass.AllFiles {
		w.built[c.pass.Fset.File(f.Pos()).Name()] = true
	}
	at := w.fromHelper(helper)
	if at == "" {
		return ""
	}
	return fmt.Sprintf("the child may run work of its own in the window the sleep gave it, in a build the analysis does not type (%s): the rule reads that build from its syntax and cannot tell when the work starts, whether it ends, or what it does before the signal (a watchdog that exits the child, a write, a print); the sleep let it run before the signal, and the test, or a later test reading what the child leaves, saw it, which a readiness line would cut short; keep the sleep", at)
}

// leftOut reports whether f is a file the typed build leaves out: of the
// package's directory, one the pass does not hold; of another package,
// one the default build context does not select.
func (w *ageWalker) leftOut(f *ast.File) bool {
	if f == nil {
		return false
	}
	name := w.fset.File(f.Pos()).Name()
	if filepath.Dir(name) == w.dir {
		return !w.built[name]
	}
	ok, err := build.Default.MatchFile(filepath.Dir(name), filepath.Base(name))
	return err != nil || !ok
}

// backgroundAt returns where n starts work that runs on by itself (a go
// statement, a timer, a ticker, a deadline), or "".
func (w *ageWalker) backgroundAt(n ast.Node, imports map[string]string, where string) string {
	switch n := n.(type) {
	case *ast.GoStmt:
		return fmt.Sprintf("go at %s%s", w.line(n), where)
	case *ast.SelectorExpr:
		if x, ok := n.X.(*ast.Ident); ok && backgroundFuncs[imports[x.Name]][n.Sel.Name] {
			return fmt.Sprintf("%s.%s at %s%s", x.Name, n.Sel.Name, w.line(n), where)
		}
	}
	return ""
}
