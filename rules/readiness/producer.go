package readiness

import (
	"fmt"
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
)

// The producer hazard. The sleep is a window for the parent too: a
// goroutine the test starts before the sleep (clients queueing jobs for
// the child a little apart, a feeder writing to its stdin, a timer's
// function) runs on in it, and the test's checks after the signal count
// what it did in that window ("processed 5"). A readiness line ends the
// window as soon as the child's handler is installed, so the signal comes
// before the producer is done, and correct code fails (or a bug that
// loses late work passes unseen). Running the test cannot reliably tell
// (it depends on how fast the child starts), so such a site is not
// fixed. A goroutine that only waits on the child (cmd.Wait, reading its
// pipes, then a send or close) is driven by the child, not by time, and
// does not count.

// producerChecked is the Checked entry of a fix: the hazard excluded.
const producerChecked = "the test starts no goroutine or timer of its own before the sleep that may still be at work in its window, other than one that only waits on the child"

// producerHazard says why a goroutine or timer the test starts before the
// sleep may still be at work in the sleep's window, naming it and its
// line; or "".
func (c *checker) producerHazard(s *site) string {
	sleep := s.list[s.sleep]
	var why string
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if why != "" || n == nil || n.Pos() >= sleep.Pos() {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			if !c.waitsOnChild(n.Call) {
				why = fmt.Sprintf("a goroutine (go at %s)", c.line(n))
			}
			return false
		case *ast.CallExpr:
			if what := c.startsBeside(n, 0, map[*ast.FuncDecl]bool{}); what != "" {
				why = what
				return false
			}
		}
		return true
	})
	if why == "" {
		return ""
	}
	return fmt.Sprintf("the test starts %s before the sleep, which may still be at work in the sleep's window: the sleep gave it that time before the signal, and a readiness line would signal the child as soon as its handler is installed, before that work is done, so what the test checks after the signal would change, on correct code or a bug; keep the sleep, or have the test wait for its own work before it signals", why)
}

// startsBeside returns what call starts that runs beside the test (a
// timer's function, a goroutine of a function of the package it calls, a
// few calls deep), with its line; or "".
func (c *checker) startsBeside(call *ast.CallExpr, depth int, seen map[*ast.FuncDecl]bool) string {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	if fn.Pkg().Path() == "time" {
		switch fn.Name() {
		case "AfterFunc", "NewTicker", "Tick":
			return fmt.Sprintf("a timer (time.%s at %s)", fn.Name(), c.line(call))
		}
		return ""
	}
	d := c.decls[fn.Origin()]
	if d == nil || d.Body == nil || depth >= maxDepth || seen[d] {
		return ""
	}
	seen[d] = true
	var out string
	ast.Inspect(d.Body, func(n ast.Node) bool {
		if out != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			if !c.waitsOnChild(n.Call) {
				out = fmt.Sprintf("a goroutine (go at %s, in %s called at %s)", c.line(n), d.Name.Name, c.line(call))
			}
			return false
		case *ast.CallExpr:
			out = c.startsBeside(n, depth+1, seen)
		}
		return out == ""
	})
	return out
}

// waitsOnChild reports whether the goroutine of call only waits on the
// child: a function literal whose calls are of os/exec and os.Process
// (Wait), reading (io, bufio), sync's Done, the testing types' logging,
// and builtins, with channel operations beside them.
func (c *checker) waitsOnChild(call *ast.CallExpr) bool {
	lit, ok := ast.Unparen(call.Fun).(*ast.FuncLit)
	if !ok {
		return false
	}
	ok = true
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt, *ast.FuncLit:
			ok = false
		case *ast.CallExpr:
			if tv, found := c.info.Types[n.Fun]; found && (tv.IsType() || tv.IsBuiltin()) {
				return true
			}
			fn := match.Callee(c.info, n)
			if fn == nil || fn.Pkg() == nil {
				ok = false
				return false
			}
			switch path := fn.Pkg().Path(); {
			case path == "os/exec", path == "io", path == "bufio":
			case path == "os" && isProcessMethod(fn):
			case path == "sync" && fn.Name() == "Done":
			case path == "testing":
			default:
				ok = false
			}
		}
		return ok
	})
	return ok
}

// isProcessMethod reports whether fn is a method of os.Process or
// os.ProcessState, or of os.File (reading the child's pipes).
func isProcessMethod(fn *types.Func) bool {
	r := fn.Type().(*types.Signature).Recv()
	return r != nil && match.IsNamed(r.Type(), "os", "Process", "ProcessState", "File")
}
