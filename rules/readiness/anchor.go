package readiness

import (
	"go/ast"
	"go/token"

	"github.com/unflake/unflake/internal/match"
)

// A helper often installs its handler through a function of the package
// under test that returns once it has (stop := setupSignals(), then the
// helper waits): the readiness line can then go right after that call, in
// the test file, with no change to the code under test. That holds only
// when the call returns once signal.Notify has run and without waiting
// for anything: signal.Notify on the call's own path (not in a goroutine,
// not deferred), followed, in each function down to it, by statements
// that cannot block. A function that installs the handler and then serves
// (Serve: signal.Notify, then <-c) never returns to the helper: it keeps
// the production change (productionChange).

// anchor returns where the helper, in a test file unflake may edit, calls
// a function that installs the handler n and returns, as a notify to write
// the readiness line after; or nil.
func (c *checker) anchor(helper *ast.FuncDecl, n *notify) *notify {
	var out *notify
	match.WithStack(helper.Body, func(node ast.Node, stack []ast.Node) bool {
		if out != nil {
			return false
		}
		switch node := node.(type) {
		case *ast.FuncLit, *ast.GoStmt, *ast.DeferStmt:
			return false // runs later, or apart
		case *ast.CallExpr:
			fn := match.Callee(c.info, node)
			if fn == nil {
				return true
			}
			fd := c.decls[fn.Origin()]
			if fd == nil || fd.Body == nil || !c.installsAndReturns(fd, n, 0) {
				return true
			}
			// Have: a call that returns once the handler is installed.
			// It must be a statement of its own (setupSignals(), or
			// stop := setupSignals()) in a statement list.
			for k := len(stack) - 1; k >= 1; k-- {
				st, ok := stack[k].(ast.Stmt)
				if !ok {
					continue
				}
				switch st.(type) {
				case *ast.ExprStmt, *ast.AssignStmt, *ast.DeclStmt:
					if match.StmtList(stack[k-1]) != nil {
						out = &notify{stmt: st, owner: stack[k-1], file: c.fileOf(st)}
					}
				}
				break
			}
			return false
		}
		return true
	})
	if out == nil || !c.editable(out.file) {
		return nil
	}
	return out
}

// installsAndReturns reports whether fd's body reaches the signal.Notify
// of n by a top-level statement (the notify itself, or a plain call of a
// package function that does the same), and nothing after that statement
// may block.
func (c *checker) installsAndReturns(fd *ast.FuncDecl, n *notify, depth int) bool {
	if depth > maxDepth {
		return false
	}
	for i, st := range fd.Body.List {
		if !c.reaches(st, n, depth) {
			continue
		}
		return !c.mayBlock(fd.Body.List[i+1:])
	}
	return false
}

// reaches reports whether the top-level statement st is n's signal.Notify
// or calls, as a plain call, a package function that installs n and
// returns.
func (c *checker) reaches(st ast.Stmt, n *notify, depth int) bool {
	if st == ast.Stmt(n.stmt) {
		return true
	}
	var call *ast.CallExpr
	switch st := st.(type) {
	case *ast.ExprStmt:
		call, _ = ast.Unparen(st.X).(*ast.CallExpr)
	case *ast.AssignStmt:
		if len(st.Rhs) == 1 {
			call, _ = ast.Unparen(st.Rhs[0]).(*ast.CallExpr)
		}
	}
	if call == nil {
		return false
	}
	fn := match.Callee(c.info, call)
	if fn == nil {
		return false
	}
	fd := c.decls[fn.Origin()]
	return fd != nil && fd.Body != nil && c.installsAndReturns(fd, n, depth+1)
}

// quickStd are the standard packages whose functions return without
// waiting for anything another goroutine or process does.
var quickStd = map[string]bool{
	"os/signal": true, "fmt": true, "log": true, "log/slog": true, "errors": true,
	"strings": true, "strconv": true, "syscall": true, "context": true,
}

// mayBlock reports whether running stmts may wait: a channel operation, a
// select, a loop, or a call other than of a quick standard function (a
// function literal's body and a go statement's call run apart).
func (c *checker) mayBlock(stmts []ast.Stmt) bool {
	blocks := false
	for _, st := range stmts {
		ast.Inspect(st, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit, *ast.GoStmt:
				return false
			case *ast.SendStmt, *ast.SelectStmt, *ast.ForStmt, *ast.RangeStmt:
				blocks = true
			case *ast.UnaryExpr:
				blocks = blocks || n.Op == token.ARROW
			case *ast.CallExpr:
				if tv, ok := c.info.Types[n.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
					break // a conversion, make, len
				}
				fn := match.Callee(c.info, n)
				if fn == nil || fn.Pkg() == nil || !quickStd[fn.Pkg().Path()] {
					blocks = true
				}
				if fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "context" && fn.Name() != "WithCancel" {
					blocks = true
				}
			}
			return !blocks
		})
		if blocks {
			return true
		}
	}
	return false
}
