package readiness

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// fix builds the handshake: the parent passes a pipe as an extra file and
// names its descriptor in UNFLAKE_READY_FD; the child writes a line on it
// right after signal.Notify; the parent waits for the line where it
// slept, at most the sleep's length.
func (c *checker) fix(s *site, n *notify, t string) *rule.Fix {
	start := s.list[s.start]
	pos := start.Pos()
	ready := c.freshName(pos, "ready", "readyR", "readyPipe")
	w := c.freshName(pos, "w", "readyW", "readyWriter")
	errName := c.errName(s, pos)
	env, envNonNil := c.envForm(s)
	fdFixed := c.extraFilesUnset(s)
	childDone := c.childHasHandshake(n)
	cmd := s.cmd.Name()
	sleep := s.list[s.sleep]
	sleepArg := ast.Unparen(sleep.(*ast.ExprStmt).X).(*ast.CallExpr).Args[0]

	deletes := append([]ast.Node{sleep}, match.AdjacentComments(c.file, s.owner, sleep)...)
	return &rule.Fix{
		Message: "wait for the child to say its signal handler is installed instead of sleeping",
		Changes: []rule.Change{{Kind: rule.Sync, What: "the parent goes on when the child says its signal handler is installed, not after a fixed sleep"}},
		Deletes: deletes,
		Apply: func() error {
			// The parent: the pipe and the variable before Start.
			var before []dst.Stmt
			pipe := &dst.AssignStmt{
				Lhs: []dst.Expr{dst.NewIdent(ready), dst.NewIdent(w), dst.NewIdent(errName)},
				Tok: token.DEFINE,
				Rhs: []dst.Expr{call(&dst.Ident{Name: "Pipe", Path: "os"})},
			}
			pipe.Decs.Start.Append("// The child says on this pipe when its signal handler is installed.")
			pipe.Decs.Before = dst.EmptyLine
			before = append(before, pipe, fatalIf(t, errName))
			fdValue := func() dst.Expr {
				if fdFixed {
					return strLit(envVar + "=3")
				}
				// The pipe is appended to ExtraFiles: descriptor 3 is the first.
				n := &dst.BinaryExpr{X: intLit(3), Op: token.ADD, Y: call(dst.NewIdent("len"), sel(dst.NewIdent(cmd), "ExtraFiles"))}
				return &dst.BinaryExpr{X: strLit(envVar + "="), Op: token.ADD, Y: call(&dst.Ident{Name: "Itoa", Path: "strconv"}, n)}
			}
			envSel := func() dst.Expr { return sel(dst.NewIdent(cmd), "Env") }
			// The environment the child gets with a nil Env: since Go
			// 1.19 that is cmd.Environ(), which adds PWD=cmd.Dir when
			// Dir is set, as Start does for a nil Env; os.Environ()
			// would hand the child the parent's PWD (pwdHazard keeps
			// older modules whose test sets Dir out).
			inherited := func() dst.Expr {
				if c.pass.FileUsesGo(c.file, "go1.19") {
					return call(sel(dst.NewIdent(cmd), "Environ"))
				}
				return call(&dst.Ident{Name: "Environ", Path: "os"})
			}
			// The test's Env may share its array with another slice of the
			// test (first.Env = env; second.Env = append(env, "X=1")):
			// appending in place would write over what the other holds
			// (red team batch 19, envalias). The line goes on a copy.
			clipped := func() dst.Expr {
				if c.pass.FileUsesGo(c.file, "go1.21") && c.pkgNameFree(pos, "slices") {
					return call(&dst.Ident{Name: "Clip", Path: "slices"}, envSel())
				}
				n := func() dst.Expr { return call(dst.NewIdent("len"), envSel()) }
				return &dst.SliceExpr{X: envSel(), High: n(), Max: n(), Slice3: true}
			}
			switch {
			case env == envUnset:
				before = append(before, assign(envSel(), call(dst.NewIdent("append"), inherited(), fdValue())))
			case env == envSet && envNonNil:
				before = append(before, assign(envSel(), call(dst.NewIdent("append"), clipped(), fdValue())))
			default:
				// A nil Env means the parent's environment: keep it.
				before = append(before, &dst.IfStmt{
					Cond: &dst.BinaryExpr{X: envSel(), Op: token.EQL, Y: dst.NewIdent("nil")},
					Body: &dst.BlockStmt{List: []dst.Stmt{assign(envSel(), inherited())}},
				})
				before = append(before, assign(envSel(), call(dst.NewIdent("append"), clipped(), fdValue())))
			}
			extra := func() dst.Expr { return sel(dst.NewIdent(cmd), "ExtraFiles") }
			before = append(before, assign(extra(), call(dst.NewIdent("append"), extra(), dst.NewIdent(w))))

			// After Start: the parent's copy of the write end goes, so a
			// child that dies gives end of file rather than a hang.
			closeW := exprStmt(call(sel(dst.NewIdent(w), "Close")))
			closeW.Decs.Before = dst.NewLine
			closeW.Decs.End.Append("// the child has its own copy")

			// Where the test slept: the wait for the line, bounded by the
			// sleep's own window, so it never waits longer than the test
			// did. Past the window the test goes on and signals, as it
			// did: a handler later than the window fails the test's own
			// checks as before.
			window := dst.Clone(c.pass.Dst(sleepArg).(dst.Expr)).(dst.Expr)
			match.StripDecorations(window)
			deadline := exprStmt(call(sel(dst.NewIdent(ready), "SetReadDeadline"),
				call(sel(call(&dst.Ident{Name: "Now", Path: "time"}), "Add"), window)))
			deadline.Decs.Before = dst.EmptyLine
			deadline.Decs.Start.Append("// Wait until the child has installed its signal handler, at most as long as the test slept;")
			deadline.Decs.Start.Append("// past that, signal it as the test did.")
			read := &dst.IfStmt{
				Init: &dst.AssignStmt{
					Lhs: []dst.Expr{dst.NewIdent("_"), dst.NewIdent("err")},
					Tok: token.DEFINE,
					Rhs: []dst.Expr{call(sel(call(&dst.Ident{Name: "NewReader", Path: "bufio"}, dst.NewIdent(ready)), "ReadString"), &dst.BasicLit{Kind: token.CHAR, Value: `'\n'`})},
				},
				Cond: &dst.BinaryExpr{X: dst.NewIdent("err"), Op: token.NEQ, Y: dst.NewIdent("nil")},
				Body: &dst.BlockStmt{List: []dst.Stmt{exprStmt(call(sel(dst.NewIdent(t), "Logf"), strLit("the child did not say it was ready within the sleep's window: %v"), dst.NewIdent("err")))}},
			}
			closeR := exprStmt(call(sel(dst.NewIdent(ready), "Close")))
			closeR.Decs.After = dst.EmptyLine
			wait := []dst.Stmt{deadline, read, closeR}

			list := match.DstStmtList(c.pass.Dst(s.owner))
			dStart := c.pass.Dst(start).(dst.Stmt)
			dAfter := c.pass.Dst(s.list[s.after]).(dst.Stmt)
			dSleep := c.pass.Dst(sleep).(dst.Stmt)
			var out []dst.Stmt
			for _, st := range *list {
				switch st {
				case dStart:
					out = append(out, before...)
				case dSleep:
					out = append(out, wait...)
					continue
				}
				out = append(out, st)
				if st == dAfter {
					out = append(out, closeW)
				}
			}
			*list = out

			if !childDone {
				c.insertChild(n)
			}
			return nil
		},
	}
}

// insertChild writes the readiness line into the helper, right after its
// signal.Notify, once per helper.
func (c *checker) insertChild(n *notify) {
	list := match.DstStmtList(c.pass.Dst(n.owner))
	at := c.pass.Dst(n.stmt).(dst.Stmt)
	for i, st := range *list {
		if st != at {
			continue
		}
		if i+1 < len(*list) && c.inserted[(*list)[i+1]] {
			return // another test's fix wrote it
		}
		fd := call(&dst.Ident{Name: "Atoi", Path: "strconv"}, call(&dst.Ident{Name: "Getenv", Path: "os"}, strLit(envVar)))
		f := dst.NewIdent("f")
		// The variable is consumed here: a process the child starts
		// later (a worker running the same helper) would otherwise write
		// its line on whatever its own descriptor of that number is.
		unset := exprStmt(call(&dst.Ident{Name: "Unsetenv", Path: "os"}, strLit(envVar)))
		unset.Decs.End.Append("// said once: a process this one starts must not write the line")
		body := []dst.Stmt{
			unset,
			&dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent("f")}, Tok: token.DEFINE, Rhs: []dst.Expr{
				call(&dst.Ident{Name: "NewFile", Path: "os"}, call(dst.NewIdent("uintptr"), dst.NewIdent("fd")), strLit("ready")),
			}},
			exprStmt(call(sel(f, "Write"), call(&dst.ArrayType{Elt: dst.NewIdent("byte")}, strLit("ready\n")))),
			exprStmt(call(sel(dst.NewIdent("f"), "Close"))),
		}
		stmt := &dst.IfStmt{
			Init: &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent("fd"), dst.NewIdent("err")}, Tok: token.DEFINE, Rhs: []dst.Expr{fd}},
			Cond: &dst.BinaryExpr{X: dst.NewIdent("err"), Op: token.EQL, Y: dst.NewIdent("nil")},
			Body: &dst.BlockStmt{List: body},
		}
		stmt.Decs.Before = dst.NewLine
		stmt.Decs.Start.Append("// Tell a parent that passed a pipe (" + envVar + ") that the handler is installed.")
		stmt.Decs.After = dst.NewLine
		c.inserted[stmt] = true
		*list = append((*list)[:i+1], append([]dst.Stmt{stmt}, (*list)[i+1:]...)...)
		return
	}
}

// childHasHandshake reports whether the statement after the helper's
// signal.Notify already writes the readiness line (an earlier run).
func (c *checker) childHasHandshake(n *notify) bool {
	list := match.StmtList(n.owner)
	for i, st := range list {
		if st != ast.Stmt(n.stmt) || i+1 >= len(list) {
			continue
		}
		found := false
		ast.Inspect(list[i+1], func(m ast.Node) bool {
			if e, ok := m.(ast.Expr); ok {
				if s, ok := match.ConstString(c.info, e); ok && s == envVar {
					found = true
				}
			}
			return !found
		})
		return found
	}
	return false
}

// How the test sets cmd.Env before Start.
const (
	envUnset = iota // never: the child inherits the environment
	envSet          // by plain statements of the block, before Start
	envUnknown
)

// envForm tells how the test sets cmd.Env before Start and, for envSet,
// whether the last assignment is surely not nil: cmd.Env =
// append(os.Environ(), ...).
func (c *checker) envForm(s *site) (int, bool) {
	if c.escapes(s.cmd, s.list[s.start].Pos()) {
		return envUnknown, false
	}
	mentions := c.fieldMentions(s.cmd, "Env", s.list[s.start].Pos())
	if len(mentions) == 0 {
		return envUnset, false
	}
	var last ast.Stmt
	for _, m := range mentions {
		var in ast.Stmt
		for _, st := range s.list[:s.start] {
			if st.Pos() <= m.Pos() && m.End() <= st.End() {
				in = st
			}
		}
		if in == nil {
			return envUnknown, false // in a nested block or closure
		}
		last = in
	}
	a, ok := last.(*ast.AssignStmt)
	if !ok || a.Tok != token.ASSIGN || len(a.Lhs) != 1 || len(a.Rhs) != 1 {
		return envUnknown, false
	}
	if sl, ok := ast.Unparen(a.Lhs[0]).(*ast.SelectorExpr); !ok || sl.Sel.Name != "Env" {
		return envUnknown, false
	}
	app, ok := ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
	if !ok || len(app.Args) < 2 || !match.IsBuiltin(c.info, app.Fun, "append") {
		return envSet, false
	}
	first, ok := ast.Unparen(app.Args[0]).(*ast.CallExpr)
	return envSet, ok && match.IsPkgFunc(c.info, first, "os", "Environ")
}

// extraFilesUnset reports whether the test surely passes no extra files
// before Start, so the pipe is descriptor 3.
func (c *checker) extraFilesUnset(s *site) bool {
	return !c.escapes(s.cmd, s.list[s.start].Pos()) && len(c.fieldMentions(s.cmd, "ExtraFiles", s.list[s.start].Pos())) == 0
}

// escapes reports whether cmd is used before pos other than through a
// field or method selector (passed to a function, assigned, its address
// taken): other code could set its Env or ExtraFiles.
func (c *checker) escapes(cmd *types.Var, pos token.Pos) bool {
	found := false
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || id.Pos() >= pos || c.info.Uses[id] != types.Object(cmd) || len(stack) == 0 {
			return !found
		}
		switch p := stack[len(stack)-1].(type) {
		case *ast.SelectorExpr:
			if p.X == id {
				return true
			}
		case *ast.AssignStmt:
			for _, l := range p.Lhs {
				if l == id {
					return true // cmd = exec.Command(...)
				}
			}
		}
		found = true
		return false
	})
	return found
}

// fieldMentions returns the selectors cmd.field before pos.
func (c *checker) fieldMentions(cmd *types.Var, field string, pos token.Pos) []*ast.SelectorExpr {
	var out []*ast.SelectorExpr
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		sl, ok := n.(*ast.SelectorExpr)
		if !ok || sl.Pos() >= pos || sl.Sel.Name != field {
			return true
		}
		if id, ok := ast.Unparen(sl.X).(*ast.Ident); ok && c.info.Uses[id] == types.Object(cmd) {
			out = append(out, sl)
		}
		return true
	})
	return out
}

// freshName returns the first candidate that the function never uses and
// that names nothing at pos, so declaring it shadows nothing.
func (c *checker) freshName(pos token.Pos, candidates ...string) string {
	used := map[string]bool{}
	ast.Inspect(c.fn, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			used[id.Name] = true
		}
		return true
	})
	scope := c.pass.Pkg.Scope().Innermost(pos)
	free := func(name string) bool {
		if used[name] {
			return false
		}
		if scope != nil {
			if _, obj := scope.LookupParent(name, pos); obj != nil {
				return false
			}
		}
		return true
	}
	for _, name := range candidates {
		if free(name) {
			return name
		}
	}
	base := candidates[0]
	for i := 2; ; i++ {
		if name := base + strconv.Itoa(i); free(name) {
			return name
		}
	}
}

// errName returns the name for the error of os.Pipe: err when the block
// already declared an error named err before Start (:= reuses it), or
// when err is declared nowhere in the block or around it; else a fresh
// name, so no later `err :=` of the block loses its new variable and no
// outer err is shadowed.
func (c *checker) errName(s *site, pos token.Pos) string {
	scope := c.blockScope(s.owner)
	if scope != nil {
		if obj := scope.Lookup("err"); obj != nil {
			if v, ok := obj.(*types.Var); ok && obj.Pos() < pos && types.Identical(v.Type(), types.Universe.Lookup("error").Type()) {
				return "err"
			}
		} else if _, obj := scope.LookupParent("err", pos); obj == nil {
			return "err"
		}
	}
	return c.freshName(pos, "pipeErr", "readyErr")
}

// blockScope returns the scope of the block or clause owner.
func (c *checker) blockScope(owner ast.Node) *types.Scope {
	var at token.Pos
	switch o := owner.(type) {
	case *ast.BlockStmt:
		at = o.Lbrace + 1
	case *ast.CaseClause:
		at = o.Colon + 1
	case *ast.CommClause:
		at = o.Colon + 1
	default:
		return nil
	}
	return c.pass.Pkg.Scope().Innermost(at)
}

func fatalIf(t, errName string) dst.Stmt {
	return &dst.IfStmt{
		Cond: &dst.BinaryExpr{X: dst.NewIdent(errName), Op: token.NEQ, Y: dst.NewIdent("nil")},
		Body: &dst.BlockStmt{List: []dst.Stmt{exprStmt(call(sel(dst.NewIdent(t), "Fatal"), dst.NewIdent(errName)))}},
	}
}

func assign(lhs, rhs dst.Expr) dst.Stmt {
	return &dst.AssignStmt{Lhs: []dst.Expr{lhs}, Tok: token.ASSIGN, Rhs: []dst.Expr{rhs}}
}

func exprStmt(x dst.Expr) *dst.ExprStmt { return &dst.ExprStmt{X: x} }

func call(fun dst.Expr, args ...dst.Expr) *dst.CallExpr {
	return &dst.CallExpr{Fun: fun, Args: args}
}

func sel(x dst.Expr, name string) *dst.SelectorExpr {
	return &dst.SelectorExpr{X: x, Sel: dst.NewIdent(name)}
}

func intLit(n int) *dst.BasicLit {
	return &dst.BasicLit{Kind: token.INT, Value: strconv.Itoa(n)}
}

func strLit(s string) *dst.BasicLit {
	return &dst.BasicLit{Kind: token.STRING, Value: strconv.Quote(s)}
}

// pwdChecked is what pwdHazard checked, for the fix's account.
const pwdChecked = "the child keeps the PWD it had: with a nil cmd.Env, Start sets PWD to cmd.Dir, and the fix builds the child's environment with cmd.Environ(), which does the same"

// pwdHazard reports why the fix cannot give the child the environment
// it had: a nil cmd.Env makes Start add PWD=cmd.Dir (Go 1.19 and later),
// and the fix sets Env, after which only cmd.Environ() (Go 1.19) adds it.
// A module older than that whose test may set Dir would hand the child
// the parent's PWD, which a child that keeps a logical working directory
// (as shells do) reads instead of its directory.
func (c *checker) pwdHazard(s *site) string {
	if c.pass.FileUsesGo(c.file, "go1.19") {
		return ""
	}
	if env, nonNil := c.envForm(s); env == envSet && nonNil {
		return "" // the test's own Env: no PWD was added before either
	}
	pos := s.list[s.start].Pos()
	if !c.escapes(s.cmd, pos) && len(c.fieldMentions(s.cmd, "Dir", pos)) == 0 {
		return ""
	}
	p := c.pass.Fset.Position(s.list[s.start].Pos())
	return fmt.Sprintf("the child at %s:%d may run in cmd.Dir, where Start gives it PWD=Dir only while cmd.Env is nil; the fix sets Env, and cmd.Environ(), which keeps PWD, needs go 1.19 (the module says %s)", filepath.Base(p.Filename), p.Line, c.pass.FileVersion(c.file))
}
