package readiness

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// The readiness line says the handler is installed: an earlier point than
// the end of the sleep it replaces. A child that goes on to make
// something after signal.Notify (a pid file, a socket, a directory), and
// only then waits for the signal, has not made it yet when the parent
// reads the line. If the test later checks what the child made ("the pid
// file is gone after the signal"), the signal now lands before the file
// exists: the child exits without ever making it, and the check passes on
// code that never removes it. Running the test cannot tell (it passes,
// blind), so such a site is reported, not fixed.

// madeBy are the standard functions by which a child makes something a
// parent can look at.
var madeBy = map[string][]string{
	"os":        {"Create", "CreateTemp", "WriteFile", "OpenFile", "Mkdir", "MkdirAll", "MkdirTemp", "Rename", "Symlink", "Link", "Remove", "RemoveAll", "Chmod", "Chtimes", "Truncate"},
	"io/ioutil": {"WriteFile", "TempFile", "TempDir"},
	"net":       {"Listen", "ListenPacket", "ListenTCP", "ListenUDP", "ListenUnix", "ListenUnixgram"},
	"net/http":  {"ListenAndServe", "ListenAndServeTLS"},
}

// lookedAtBy are the standard functions by which a test looks at what a
// child made.
var lookedAtBy = map[string][]string{
	"os":            {"Stat", "Lstat", "ReadFile", "Open", "OpenFile", "ReadDir", "Readlink", "DirFS"},
	"io/ioutil":     {"ReadFile", "ReadDir"},
	"path/filepath": {"Glob", "Walk", "WalkDir"},
	"net":           {"Dial", "DialTimeout", "DialTCP", "DialUDP", "DialUnix"},
	"net/http":      {"Get", "Post", "Head", "PostForm"},
}

// syncHazard says why the readiness line at n comes too early for what
// the test checks after the sleep of s, naming both lines, or "". checked
// names what the rule excluded, for the fix's change.
func (c *checker) syncHazard(s *site, helper *ast.FuncDecl, n *notify) (why, checked string) {
	made, madeAt := c.madeAfter(helper, n)
	if made == "" {
		return "", "the child makes nothing between installing its handler and waiting for the signal"
	}
	var look, lookAt string
	for _, st := range s.list[s.sleep+1:] {
		if look, lookAt = c.calls(st, lookedAtBy, effect.Network, 0, map[*ast.FuncDecl]bool{}); look != "" {
			break
		}
	}
	if look == "" {
		return "", "the test checks nothing the child makes after start-up"
	}
	return fmt.Sprintf("the test later looks at what the child makes (%s at %s), and the child makes it after installing its handler (%s at %s): the readiness line would come first, so the signal could land before it exists and a check that it is gone would pass on a bug; write the line after %s, once the child is fully started, and wait for it", look, lookAt, made, madeAt, strings.SplitN(made, " (", 2)[0]), ""
}

// madeAfter returns the first call by which the child makes something
// after the readiness point n and before it first waits (a channel
// operation, a select, a loop), and where; "" when none. When n is in a
// function the helper calls, the helper's statements after that call
// run before the wait too.
func (c *checker) madeAfter(helper *ast.FuncDecl, n *notify) (string, string) {
	list := match.StmtList(n.owner)
	idx := -1
	for i, st := range list {
		if st == ast.Stmt(n.stmt) {
			idx = i
		}
	}
	if idx < 0 {
		return "", ""
	}
	what, at, waited := c.makesBeforeWait(list[idx+1:])
	if what != "" || waited || helper.Body.Pos() <= n.stmt.Pos() && n.stmt.End() <= helper.Body.End() {
		return what, at
	}
	// n is in a function the helper calls: go on after that call.
	fd := c.enclosingDecl(n.stmt)
	for i, st := range helper.Body.List {
		if fd != nil && c.reachesDecl(st, fd, 0, map[*ast.FuncDecl]bool{}) {
			what, at, _ = c.makesBeforeWait(helper.Body.List[i+1:])
			return what, at
		}
	}
	return "", ""
}

// makesBeforeWait scans stmts up to the first that waits; it returns the
// first call that makes something, its place, and whether a wait was met.
func (c *checker) makesBeforeWait(stmts []ast.Stmt) (what, at string, waited bool) {
	for _, st := range stmts {
		if c.waitsHere(st) {
			return "", "", true
		}
		// A goroutine the child starts after its handler (go func() {
		// Init(pidfile) }()) makes its things while the parent already
		// reads the line: its work is start-up too.
		if g, ok := st.(*ast.GoStmt); ok {
			var body ast.Node = g.Call
			if lit, ok := ast.Unparen(g.Call.Fun).(*ast.FuncLit); ok {
				body = lit.Body
			}
			if what, at = c.calls(body, madeBy, effect.Network, 0, map[*ast.FuncDecl]bool{}); what != "" {
				return what + " in a goroutine", at, false
			}
			continue
		}
		if what, at = c.calls(st, madeBy, effect.Network, 0, map[*ast.FuncDecl]bool{}); what != "" {
			return what, at, false
		}
	}
	return "", "", false
}

// waitsHere reports whether st waits for something another goroutine or
// process does: a channel operation, a select, a loop.
func (c *checker) waitsHere(st ast.Stmt) bool {
	waits := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.SendStmt, *ast.SelectStmt, *ast.ForStmt, *ast.RangeStmt:
			waits = true
		case *ast.UnaryExpr:
			waits = waits || n.Op == token.ARROW
		}
		return !waits
	})
	return waits
}

// calls returns the first call in n (not in function literals, which run
// later if ever) of one of the standard functions in table, or of a
// package function that makes one (a few calls deep), or of a function of
// another package whose effect summary has kind; and where it is.
func (c *checker) calls(n ast.Node, table map[string][]string, kind effect.Kind, depth int, seen map[*ast.FuncDecl]bool) (string, string) {
	var what, at string
	ast.Inspect(n, func(m ast.Node) bool {
		if what != "" {
			return false
		}
		switch m := m.(type) {
		case *ast.FuncLit, *ast.GoStmt:
			return false
		case *ast.CallExpr:
			for pkg, names := range table {
				if match.IsPkgFunc(c.info, m, pkg, names...) {
					what, at = types.ExprString(m.Fun), c.line(m)
					return false
				}
			}
			fn := match.Callee(c.info, m)
			if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
				return true
			}
			if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil {
				if depth < maxDepth && !seen[fd] {
					seen[fd] = true
					if w, _ := c.calls(fd.Body, table, kind, depth+1, seen); w != "" {
						what, at = types.ExprString(m.Fun)+" ("+w+")", c.line(m)
						return false
					}
				}
				return true
			}
			if r := fn.Type().(*types.Signature).Recv(); r != nil && types.IsInterface(r.Type()) {
				return true
			}
			if sum := c.pass.Effects.Of(fn.Origin()); sum != nil {
				for _, e := range sum.Effects {
					if e.Kind == kind {
						what, at = e.Why(), c.line(m)
						return false
					}
				}
			}
		}
		return true
	})
	return what, at
}

// enclosingDecl returns the function declaration of the package holding n.
func (c *checker) enclosingDecl(n ast.Node) *ast.FuncDecl {
	for _, fd := range c.decls {
		if fd.Body != nil && fd.Body.Pos() <= n.Pos() && n.End() <= fd.Body.End() {
			return fd
		}
	}
	return nil
}

// reachesDecl reports whether n calls fd, directly or through package
// functions, a few calls deep.
func (c *checker) reachesDecl(n ast.Node, fd *ast.FuncDecl, depth int, seen map[*ast.FuncDecl]bool) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if found {
			return false
		}
		switch m := m.(type) {
		case *ast.FuncLit, *ast.GoStmt:
			return false
		case *ast.CallExpr:
			callee := match.Callee(c.info, m)
			if callee == nil {
				return true
			}
			d := c.decls[callee.Origin()]
			switch {
			case d == fd:
				found = true
			case d != nil && d.Body != nil && depth < maxDepth && !seen[d]:
				seen[d] = true
				found = c.reachesDecl(d.Body, fd, depth+1, seen)
			}
		}
		return !found
	})
	return found
}

// line says where n is: "app_test.go:14".
func (c *checker) line(n ast.Node) string {
	p := c.pass.Fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}
