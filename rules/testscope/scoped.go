package testscope

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rule/effect"
)

// tmpdirSet names where the test function sets TMPDIR before at (t.Setenv
// or os.Setenv of the constant "TMPDIR"), or "" (red team batch 20,
// tmpreaper: a reaper of os.TempDir() pointed at the test's root missed
// its bug once the job's directories moved under t.TempDir's own).
func (c *checker) tmpdirSet(at ast.Node) string {
	found := ""
	ast.Inspect(c.fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found != "" || call.Pos() >= at.Pos() {
			return found == ""
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if ok && sel.Sel.Name == "Setenv" && len(call.Args) == 2 && (match.IsPkgFunc(c.info, call, "os", "Setenv") || match.IsMethod(c.info, call, "testing", "Setenv")) {
			if k, ok := match.ConstString(c.info, call.Args[0]); ok && k == "TMPDIR" {
				found = fmt.Sprintf("%s at %s", types.ExprString(call.Fun), c.line(call))
			}
		}
		return true
	})
	return found
}

// tempDirs rewrites os.MkdirTemp("", p) removed at the end of the test to
// t.TempDir(), and reports os.TempDir() used by a test.
func (c *checker) tempDirs(sc *scope, sites []site) {
	parents := map[ast.Node]bool{}
	for _, s := range sites {
		a, ok := s.stmt.(*ast.AssignStmt)
		if !ok || len(a.Lhs) != 2 || len(a.Rhs) != 1 {
			continue
		}
		call, ok := ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
		if !ok || len(call.Args) != 2 || !(match.IsPkgFunc(c.info, call, "os", "MkdirTemp") || match.IsPkgFunc(c.info, call, "io/ioutil", "TempDir")) {
			continue
		}
		if !c.defaultTempRoot(call.Args[0]) {
			continue // the test chose where the directory lives
		}
		parents[call.Args[0]] = true
		dirID, ok := a.Lhs[0].(*ast.Ident)
		if !ok || dirID.Name == "_" {
			continue
		}
		dir, _ := c.info.ObjectOf(dirID).(*types.Var)
		list := match.StmtList(s.parent)
		idx := indexOf(list, s.stmt)
		// The directory is removed at the end: defer os.RemoveAll(dir).
		var remove ast.Stmt
		for _, st := range list[idx+1:] {
			if rc := c.restoreCall(st); rc != nil && len(rc.Args) == 1 && match.IsPkgFunc(c.info, rc, "os", "RemoveAll") && c.used(rc.Args[0]) == dir {
				remove = st
				break
			}
		}
		if remove == nil {
			continue // never removed: it may be meant to outlive the test
		}
		if !c.reads(c.fd.Body, dir, []ast.Node{s.stmt, remove}) {
			continue // only removed: there is nothing to scope
		}
		d := rule.Diagnostic{
			Pos:     call.Pos(),
			End:     call.End(),
			Message: fmt.Sprintf("%s creates a directory the test must remove itself", types.ExprString(call.Fun)),
		}
		dels := []ast.Stmt{remove}
		var why, declareErr string
		if !isBlank(a.Lhs[1]) {
			errV, _ := c.info.ObjectOf(a.Lhs[1].(*ast.Ident)).(*types.Var)
			var check ast.Stmt
			if idx+1 < len(list) && errV != nil && c.errCheck(list[idx+1], errV) {
				check = list[idx+1]
				dels = append(dels, check)
			}
			skip := []ast.Node{s.stmt}
			if check != nil {
				skip = append(skip, check)
			}
			readElsewhere := errV != nil && c.reads(c.fd.Body, errV, skip)
			definedHere := c.info.Defs[a.Lhs[1].(*ast.Ident)] != nil
			switch {
			case errV == nil:
				why = "the error is not assigned to a variable"
			case definedHere && readElsewhere:
				// The fix keeps err declared: a later err := of the same
				// block declares it when that is its next use, else a
				// var err error before the statement does.
				if !c.declaredLater(list[idx+1:], errV, skip) {
					declareErr = errV.Name()
				}
			case definedHere && c.mentions(c.fd.Body, errV, skip):
				why = fmt.Sprintf("%s is assigned after it but read only by the check the fix removes", errV.Name())
			case !definedHere && !readElsewhere && !match.IsPackageLevel(errV):
				why = fmt.Sprintf("%s would be left unused", errV.Name())
			}
		}
		if why == "" && !c.atLeast("go1.15") {
			why = c.tooOld("t.TempDir", "go1.15")
		}
		if why == "" && !c.resolves(sc.t.Name(), s.stmt.Pos(), sc.t) {
			why = fmt.Sprintf("%s does not name the test's t here", sc.t.Name())
		}
		if why == "" {
			if at := c.socketHazard(c.fd.Body, dir); at != "" {
				why = fmt.Sprintf("a unix socket may be made under the directory (%s): t.TempDir's path is about 60 bytes longer, and a socket path past the 108-byte limit fails to bind on correct code; how long depends on TMPDIR, so running the test here cannot tell", at)
			}
		}
		if why == "" {
			if at := c.lengthHazard(c.fd.Body, dir); at != "" {
				why = fmt.Sprintf("the directory's path length may be checked (%s): t.TempDir's path is about 60 bytes longer than os.MkdirTemp's, so a limit of the code's own (a fixed-width field, a name limit) refuses it on correct code; how long depends on TMPDIR, so running the test here cannot tell", at)
			}
		}
		if why == "" {
			if at := c.modeHazard(c.fd.Body, dir); at != "" {
				why = fmt.Sprintf("the directory's mode may be read (%s): t.TempDir's directory is made with mode 0777 less the umask (0755 under the usual 022) where os.MkdirTemp's is 0700, so code that refuses a directory others can read refuses it; how it turns out depends on the umask, so running the test here cannot tell", at)
			}
		}
		if _, isDefer := remove.(*ast.DeferStmt); why == "" && isDefer && !sc.test {
			// A helper's deferred RemoveAll runs when the helper returns;
			// t.TempDir's removal runs when the test ends. Code that must
			// be done with the directory by then (a Load that reads the
			// file up front, not lazily) passes either way, and a bug
			// that reads it later passes only under t.TempDir.
			why = fmt.Sprintf("the deferred RemoveAll (%s) removes the directory when the helper returns; t.TempDir would keep it until the test ends, so code that still reads the directory after the helper returns (a lazy load) would pass", c.line(remove))
		}
		if why == "" {
			why = c.orderHazard(sc, s.stmt, remove, "with the directory still there")
		}
		if why == "" {
			why = c.patternHazard(call.Args[1])
		}
		if why == "" {
			if p, ok := match.ConstString(c.info, call.Args[1]); ok {
				why = c.patternInCode(p)
			}
		}
		if why == "" {
			if at := c.tmpdirSet(s.stmt); at != "" {
				why = fmt.Sprintf("the test sets TMPDIR (%s) before it: os.MkdirTemp(\"\", ...) puts the directory straight in the temporary directory the test chose, where code that walks that directory (os.TempDir(), a reaper, a cleaner) finds it; t.TempDir puts it one level down, in a directory named after the test, which such code sees as one fresh entry", at)
			}
		}
		if why == "" {
			if at := c.parentRead(c.fd.Body, dir); at != "" {
				why = fmt.Sprintf("the directory's parent is taken (%s): os.MkdirTemp's parent is the shared temporary directory, t.TempDir's is one of the test's own, so code that lists the parent finds other entries", at)
			}
		}
		if why == "" {
			if at := c.nameRead(c.fd.Body, dir); at != "" {
				why = fmt.Sprintf("the directory's name may be inspected (%s): t.TempDir's directory is named 001, 002, ... under one named after the test, not after the pattern, and every test and subtest has its own 001, so code that tells directories apart by name sees another name, and code that names something after it (a session, a lock) meets a clash where os.MkdirTemp's names were unique", at)
			}
		}
		if why == "" {
			why = c.nameHazard(sc)
		}
		if _, isDefer := remove.(*ast.DeferStmt); why == "" && isDefer {
			if at := c.parallelSubtest(sc); at != "" {
				why = fmt.Sprintf("the deferred RemoveAll removes the directory before the parallel subtests (%s) resume; t.TempDir would keep it for them", at)
			}
		}
		if why == "" {
			why = c.sharedParent(c.fd.Body, dir, call)
		}
		if why == "" {
			if at := c.codeListsTemp(); at != "" {
				why = fmt.Sprintf("the code under test reads the shared temporary directory or the process's open files (%s): os.MkdirTemp(\"\", ...) puts the directory straight in it, where code that lists it finds the directory by its name or a file inside (a reaper, a recovery of spools), without the test handing it over; t.TempDir puts it one level down, in a directory named after the test, where such code does not look", at)
			}
		}
		if why == "" && dropsError(remove) {
			if at := c.goroutineAt(c.fd.Body); at != "" {
				why = fmt.Sprintf("the test starts goroutines that may outlive it (%s), and the original drops RemoveAll's error (%s): a goroutine still writing in the directory when the test ends makes the removal fail, which t.TempDir's cleanup reports as a failure of a test whose checks all passed", at, c.line(remove))
			} else if at := c.processAt(c.fd.Body); at != "" {
				why = fmt.Sprintf("the test starts processes that may outlive it (%s), and the original drops RemoveAll's error (%s): a process still writing in the directory when the test ends makes the removal fail, which t.TempDir's cleanup reports as a failure of a test whose checks all passed", at, c.line(remove))
			}
		}
		if why != "" {
			d.NotFixed = why
			c.pass.Report(d)
			continue
		}
		tok := token.DEFINE
		if c.info.Defs[dirID] == nil {
			tok = token.ASSIGN
		}
		var delNodes []ast.Node
		for _, st := range dels {
			delNodes = append(delNodes, c.deletes(s.parent, st)...)
		}
		s, t := s, sc.t.Name()
		msg := "use t.TempDir, which the test removes when it ends; remove the RemoveAll"
		if declareErr != "" {
			if !c.resolves("error", s.stmt.Pos(), types.Universe.Lookup("error")) {
				d.NotFixed = fmt.Sprintf("%s is read after it, and error does not name the built-in type here to declare it", declareErr)
				c.pass.Report(d)
				continue
			}
			msg += fmt.Sprintf("; declare %s, which the test reads later, with var %s error", declareErr, declareErr)
		}
		d.Fix = &rule.Fix{
			Message: msg,
			Changes: []rule.Change{{Kind: rule.Paths, What: "the directory is the test's own, removed when it ends, under a longer path named after the test, with the umask's mode", Checked: []string{
				"no unix socket under the directory",
				"no code reads the directory's mode",
				"no test or subtest name puts characters other than ASCII letters, digits, - . _ in the path",
				"the pattern is a plain prefix, and no code (the package's, or the module's packages it reaches) inspects the directory's name",
				"the package's code holds no string with the pattern's prefix (code that finds its own temporary directories by name)",
				"no code takes the directory's parent",
				"no other test's os.MkdirTemp directory, and no code's own use of the shared temporary directory, shares the parent while the directory reaches code under test (as an argument, or through the environment, a package-level variable, a field of a value whose method it calls, a file written, a channel send, a process started)",
				"the directory lives until the test ends in the original too (not removed by a helper's defer)",
				"no parallel subtest runs after a deferred removal",
				"no call deferred before the removal, and no cleanup registered after the directory is made (by t.Cleanup or code given t), that would now run before the removal",
			}}},
			Deletes: append(delNodes, call),
			Apply: func() error {
				da := c.pass.Dst(a).(*dst.AssignStmt)
				da.Lhs = da.Lhs[:1]
				da.Tok = tok
				da.Rhs = []dst.Expr{tCall(t, "TempDir")}
				if err := c.deleteStmts(s.parent, dels...); err != nil {
					return err
				}
				if declareErr != "" {
					return c.insertBefore(s.parent, s.stmt, &dst.DeclStmt{Decl: &dst.GenDecl{Tok: token.VAR, Specs: []dst.Spec{
						&dst.ValueSpec{Names: []*dst.Ident{dst.NewIdent(declareErr)}, Type: dst.NewIdent("error")},
					}}})
				}
				return nil
			},
		}
		c.pass.Report(d)
	}
	// os.TempDir() elsewhere: the test may write into the shared directory.
	for _, s := range sites {
		ast.Inspect(s.stmt, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit, *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
				return n == s.stmt // nested statements are sites of their own
			case *ast.CallExpr:
				if match.IsPkgFunc(c.info, n, "os", "TempDir") && !parents[n] {
					c.pass.Report(rule.Diagnostic{
						Pos:      n.Pos(),
						End:      n.End(),
						Message:  "os.TempDir() is shared by every test and process; what the test writes there outlives it",
						NotFixed: "the rule cannot tell whether the test writes there; t.TempDir() gives the test its own directory, removed when it ends",
					})
				}
			}
			return true
		})
	}
}

// declaredLater reports whether the next mention of v (outside skip) is
// on the left of a := among list's statements that gives it an error: with
// the first declaration gone, that := declares v itself, of the same type.
func (c *checker) declaredLater(list []ast.Stmt, v *types.Var, skip []ast.Node) bool {
	var first *ast.Ident
	for _, st := range list {
		ast.Inspect(st, func(n ast.Node) bool {
			if first != nil || n == nil {
				return false
			}
			for _, s := range skip {
				if n == s {
					return false
				}
			}
			if id, ok := n.(*ast.Ident); ok && c.info.Uses[id] == types.Object(v) {
				first = id
			}
			return first == nil
		})
		if first == nil {
			continue
		}
		a, ok := st.(*ast.AssignStmt)
		if !ok || a.Tok != token.DEFINE {
			return false
		}
		for i, l := range a.Lhs {
			if l != ast.Expr(first) {
				continue
			}
			var t types.Type
			switch {
			case len(a.Rhs) == len(a.Lhs):
				t = c.info.TypeOf(a.Rhs[i])
			case len(a.Rhs) == 1:
				if tup, ok := c.info.TypeOf(a.Rhs[0]).(*types.Tuple); ok && i < tup.Len() {
					t = tup.At(i).Type()
				}
			}
			return t != nil && types.Identical(t, v.Type())
		}
		return false
	}
	return false
}

// mentions reports whether root names v outside the nodes in skip.
func (c *checker) mentions(root ast.Node, v *types.Var, skip []ast.Node) bool {
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		if found || n == nil {
			return false
		}
		for _, s := range skip {
			if n == s {
				return false
			}
		}
		if id, ok := n.(*ast.Ident); ok && c.info.Uses[id] == types.Object(v) {
			found = true
		}
		return !found
	})
	return found
}

// defaultTempRoot reports whether e is "" or os.TempDir(): the system's
// temporary directory, where t.TempDir creates its directories too.
func (c *checker) defaultTempRoot(e ast.Expr) bool {
	if s, ok := match.ConstString(c.info, e); ok {
		return s == ""
	}
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	return ok && len(call.Args) == 0 && match.IsPkgFunc(c.info, call, "os", "TempDir")
}

// chdirs reports os.Chdir in a test, with the reason t.Chdir is not a
// fix; its restore is found only to say what else stands in the way.
func (c *checker) chdirs(sc *scope, sites []site) {
	type chdir struct {
		site
		call  *ast.CallExpr
		ifErr bool
	}
	var cds []*chdir
	for _, s := range sites {
		switch st := s.stmt.(type) {
		case *ast.ExprStmt:
			if call, ok := ast.Unparen(st.X).(*ast.CallExpr); ok && match.IsPkgFunc(c.info, call, "os", "Chdir") && len(call.Args) == 1 {
				cds = append(cds, &chdir{site: s, call: call})
			}
		case *ast.IfStmt:
			if call := callOfStmt(st); call != nil && match.IsPkgFunc(c.info, call, "os", "Chdir") && len(call.Args) == 1 && c.errIf(st, call) != nil {
				cds = append(cds, &chdir{site: s, call: call, ifErr: true})
			}
		}
	}
	if len(cds) == 0 {
		return
	}
	mine := map[ast.Node]bool{}
	for _, cd := range cds {
		mine[cd.call] = true
	}
	type restore struct {
		stmt    ast.Stmt
		capture *capture
	}
	restores := map[*chdir]*restore{}
	claimed := map[ast.Stmt]bool{}
	for _, cd := range cds {
		list := match.StmtList(cd.parent)
		idx := indexOf(list, cd.stmt)
		for _, st := range list {
			rc := c.restoreCall(st)
			if claimed[st] || rc == nil || len(rc.Args) != 1 || !match.IsPkgFunc(c.info, rc, "os", "Chdir") {
				continue
			}
			wd := c.used(rc.Args[0])
			if wd == nil {
				continue
			}
			cp := c.findCapture(list, idx, wd, func(call *ast.CallExpr) bool {
				return match.IsPkgFunc(c.info, call, "os", "Getwd")
			})
			if cp == nil {
				continue
			}
			claimed[st] = true
			mine[rc] = true
			restores[cd] = &restore{stmt: st, capture: cp}
			break
		}
	}
	// Any other change of directory in the test, or in a function of
	// another package it names whose summary shows one.
	var others []ast.Node
	via, direct := "", false
	ast.Inspect(sc.body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if !mine[n] && match.IsPkgFunc(c.info, n, "os", "Chdir") {
				others = append(others, n)
				direct = true
			}
		case *ast.Ident:
			if fn, ok := c.info.Uses[n].(*types.Func); ok {
				if e := c.otherWrite(fn, effect.WritesWd); e != nil {
					others = append(others, n)
					if via == "" {
						via = e.Why()
					}
				}
			}
		}
		return true
	})
	for _, cd := range cds {
		d := rule.Diagnostic{
			Pos:     cd.call.Pos(),
			End:     cd.call.End(),
			Message: "os.Chdir changes the working directory of every later test",
		}
		var why string
		if r := restores[cd]; r != nil {
			if _, ok := c.removable(r.capture, r.stmt); !ok {
				why = "the value saved for the restore is needed elsewhere"
			}
		}
		// A reason the rule would have without $PWD comes first: it is
		// what the user must change before t.Chdir could even be tried.
		switch {
		case why != "":
		case len(others) > 0 && !direct:
			why = "the test also calls " + via + "; it may change directory in a way the rule does not recognise as a restore"
		case len(others) > 0:
			why = "the test also changes directory in a way the rule does not recognise as a restore"
		case sc.inParallel():
			why = "the test runs in parallel; t.Chdir would panic"
		case !c.atLeast("go1.24"):
			why = c.tooOld("t.Chdir", "go1.24")
		case !c.resolves(sc.t.Name(), cd.stmt.Pos(), sc.t):
			why = fmt.Sprintf("%s does not name the test's t here", sc.t.Name())
		default:
			// t.Chdir also sets $PWD to the new directory (on all but
			// Windows and Plan 9), where os.Chdir leaves it as it was:
			// code that locates files through $PWD, a bug the original
			// catches when PWD is set (the go command sets it), would
			// pass. The bug is not in the correct code the rule reads,
			// so no check can rule it out, and os.Chdir is never fixed.
			why = "t.Chdir also sets $PWD to the new directory, where os.Chdir leaves it as it was: code that reads $PWD instead of the working directory (a bug the test catches now) would pass"
		}
		d.NotFixed = why
		c.pass.Report(d)
	}
}

// contexts rewrites ctx, cancel := context.WithCancel(context.Background())
// with defer cancel() in a test to ctx := t.Context() (go1.24).
func (c *checker) contexts(sc *scope, sites []site) {
	if !sc.test {
		return // a helper's ctx would outlive the helper
	}
	for _, s := range sites {
		a, ok := s.stmt.(*ast.AssignStmt)
		if !ok || a.Tok != token.DEFINE || len(a.Lhs) != 2 || len(a.Rhs) != 1 {
			continue
		}
		call, ok := ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
		if !ok || len(call.Args) != 1 || !match.IsPkgFunc(c.info, call, "context", "WithCancel") {
			continue
		}
		parent, ok := ast.Unparen(call.Args[0]).(*ast.CallExpr)
		if !ok || !match.IsPkgFunc(c.info, parent, "context", "Background", "TODO") {
			continue
		}
		ctx, cancel := c.defined(a.Lhs[0]), c.defined(a.Lhs[1])
		if ctx == nil || cancel == nil {
			continue
		}
		// cancel is used once, in defer cancel() in the same list.
		list := match.StmtList(s.parent)
		var deferStmt ast.Stmt
		for _, st := range list {
			if ds, ok := st.(*ast.DeferStmt); ok && len(ds.Call.Args) == 0 && c.used(ds.Call.Fun) == cancel {
				deferStmt = ds
			}
		}
		if deferStmt == nil || c.reads(c.fd.Body, cancel, []ast.Node{deferStmt}) {
			continue
		}
		d := rule.Diagnostic{
			Pos:     call.Pos(),
			End:     call.End(),
			Message: "the test builds its own context, cancelled by a defer, where t.Context() is the test's",
		}
		var why string
		switch {
		case c.usedInCleanup(sc, ctx):
			why = fmt.Sprintf("%s is used in a t.Cleanup, and t.Context() is cancelled before cleanups run", ctx.Name())
		case !c.atLeast("go1.24"):
			why = c.tooOld("t.Context", "go1.24")
		case !c.resolves(sc.t.Name(), s.stmt.Pos(), sc.t):
			why = fmt.Sprintf("%s does not name the test's t here", sc.t.Name())
		case c.otherContext(sc, call) != "":
			why = c.otherContext(sc, call)
		case c.usedElsewhere(c.fd) != "":
			why = fmt.Sprintf("%s is also run from other code (at %s): there its t is the caller's, and t.Context() the caller's context, cancelled only when the caller ends", c.fd.Name.Name, c.usedElsewhere(c.fd))
		}
		if at := c.parallelSubtest(sc); why == "" && at != "" {
			why = fmt.Sprintf("the deferred cancel runs before the parallel subtests (%s) resume, so they see %s cancelled; t.Context() is cancelled only after them", at, ctx.Name())
		}
		waits, unproven := c.deferredAfter(sc, deferStmt)
		if why == "" {
			why = waits
		}
		if why != "" {
			d.NotFixed = why
			c.pass.Report(d)
			continue
		}
		s, t := s, sc.t.Name()
		d.Fix = &rule.Fix{
			Message:    "use t.Context(), cancelled when the test ends; remove the cancel",
			Changes:    []rule.Change{{Kind: rule.Ownership, What: "the test's context is cancelled when the test ends, after its cleanups start, not where the cancel was", Unseen: sc.test && unproven == "" && c.unseenDir(c.fd.Body, ctx)}},
			Hypothesis: rule.Unproven(unproven),
			Deletes:    append(c.deletes(s.parent, deferStmt), call),
			Apply: func() error {
				da := c.pass.Dst(a).(*dst.AssignStmt)
				da.Lhs = da.Lhs[:1]
				da.Rhs = []dst.Expr{tCall(t, "Context")}
				return c.deleteStmts(s.parent, deferStmt)
			},
		}
		c.pass.Report(d)
	}
}

// deferredAfter looks at the calls the scope defers before `defer
// cancel()`, which run after it: t.Context() is cancelled only once the
// test function and all its deferred calls have returned (just before the
// cleanups), so a deferred call that waits for what the cancel ends (a
// goroutine that returns on <-ctx.Done(), joined by `defer wg.Wait()`)
// would wait forever. waits says why the fix is refused: the deferred code
// waits (a receive, a select without default, a Wait call) or may wait
// (a Close or Stop the rule cannot tell does not join a goroutine).
// unproven is no longer used: a hang there shows only when a goroutine is
// blocked on the context, which running cannot reliably bring about.
func (c *checker) deferredAfter(sc *scope, cancelDefer ast.Stmt) (waits, unproven string) {
	ast.Inspect(sc.body, func(n ast.Node) bool {
		if waits != "" || n == nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // runs at another time
		case *ast.DeferStmt:
			if n.Pos() >= cancelDefer.Pos() {
				return false
			}
			text := types.ExprString(n.Call)
			if _, lit := ast.Unparen(n.Call.Fun).(*ast.FuncLit); lit {
				text = "func() { ... }()"
			} else if len(text) > 40 {
				text = text[:37] + "..."
			}
			if what := c.waitIn(n.Call); what != "" {
				waits = fmt.Sprintf("defer %s, deferred before the cancel, runs after it and %s: t.Context() is cancelled only after the test's deferred calls return, so it would wait forever", text, what)
				return false
			}
			// Running cannot tell: a Stop that joins a worker blocked on
			// the context hangs only when the worker is blocked there.
			if follows, blocks := c.followWaits(n.Call); follows && blocks == "" {
				if unproven == "" {
					unproven = fmt.Sprintf("defer %s, deferred before the cancel, runs after it: t.Context() is cancelled only after the test's deferred calls return", text)
				}
			} else if follows {
				waits = fmt.Sprintf("defer %s at %s, deferred before the cancel, runs after it and %s: t.Context() is cancelled only after the test's deferred calls return, so it may wait forever", text, c.line(n), blocks)
			} else if !c.neverWaits(n.Call) {
				waits = fmt.Sprintf("defer %s at %s, deferred before the cancel, runs after it and may wait for what the cancel ends (a Stop, Close or Wait that joins a goroutine returning on the context): t.Context() is cancelled only after the test's deferred calls return", text, c.line(n))
			}
			return false
		}
		return true
	})
	return waits, unproven
}

// waitIn says how the deferred call waits, or "": it receives from a
// channel, ranges over one, selects without a default, or calls a Wait
// method (sync.WaitGroup, errgroup.Group), itself or in the function
// literal it calls.
func (c *checker) waitIn(call *ast.CallExpr) string {
	what := ""
	check := func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				what = "receives from a channel"
			}
		case *ast.RangeStmt:
			if _, ok := c.info.TypeOf(n.X).Underlying().(*types.Chan); ok {
				what = "ranges over a channel"
			}
		case *ast.SelectStmt:
			hasDefault := false
			for _, cl := range n.Body.List {
				if cc, ok := cl.(*ast.CommClause); ok && cc.Comm == nil {
					hasDefault = true
				}
			}
			if !hasDefault {
				what = "waits in a select"
			}
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Wait" {
				what = "waits (" + types.ExprString(sel) + ")"
			}
		}
		return what == ""
	}
	if lit, ok := ast.Unparen(call.Fun).(*ast.FuncLit); ok {
		ast.Inspect(lit.Body, check)
		return what
	}
	check(call)
	return what
}

// followWaits follows a deferred call of a package function or method
// (and the package functions it reaches). follows is false when the call
// is not one; blocks says how the code may block, or "": a wait (see
// waitIn), a channel send, or a call the rule cannot follow (a function
// value, an interface method, another package's code that may wait).
func (c *checker) followWaits(call *ast.CallExpr) (follows bool, blocks string) {
	fn := match.Callee(c.info, call)
	if fn == nil || c.decls[fn.Origin()] == nil || c.decls[fn.Origin()].Body == nil {
		return false, ""
	}
	bodies := []ast.Node{c.decls[fn.Origin()].Body}
	for f := range c.reachable(bodies[0], nil) {
		bodies = append(bodies, c.decls[f].Body)
	}
	for _, b := range bodies {
		ast.Inspect(b, func(n ast.Node) bool {
			if blocks != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.FuncLit:
				return false // runs at another time, or is called: a call of a value below
			case *ast.GoStmt:
				return false
			case *ast.SendStmt:
				blocks = "sends on a channel at " + c.line(n)
			case *ast.UnaryExpr, *ast.RangeStmt, *ast.SelectStmt:
				if w := c.waitInNode(n); w != "" {
					blocks = w + " at " + c.line(n)
				}
			case *ast.CallExpr:
				if tv, ok := c.info.Types[n.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
					return true
				}
				if w := c.waitInNode(n); w != "" {
					blocks = w + " at " + c.line(n)
					return false
				}
				f := match.Callee(c.info, n)
				if f == nil || (f.Pkg() != c.pass.Pkg && !c.neverWaits(n)) {
					blocks = "calls " + types.ExprString(n.Fun) + " at " + c.line(n) + ", which the rule cannot tell does not wait"
				} else if f.Pkg() == c.pass.Pkg && c.decls[f.Origin()] == nil {
					blocks = "calls " + types.ExprString(n.Fun) + " at " + c.line(n) + ", which the rule cannot follow"
				}
			}
			return blocks == ""
		})
		if blocks != "" {
			break
		}
	}
	return true, blocks
}

// waitInNode is waitIn for one node, not followed into its children.
func (c *checker) waitInNode(n ast.Node) string {
	switch n := n.(type) {
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			return "receives from a channel"
		}
	case *ast.RangeStmt:
		if _, ok := c.info.TypeOf(n.X).Underlying().(*types.Chan); ok {
			return "ranges over a channel"
		}
	case *ast.SelectStmt:
		for _, cl := range n.Body.List {
			if cc, ok := cl.(*ast.CommClause); ok && cc.Comm == nil {
				return ""
			}
		}
		return "waits in a select"
	case *ast.CallExpr:
		if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Wait" {
			return "waits (" + types.ExprString(sel) + ")"
		}
	}
	return ""
}

// neverWaits reports whether a deferred call surely does not wait for a
// goroutine: a builtin (close), or a standard library function or method
// that does not block (os.RemoveAll, mu.Unlock, fmt and log output, the
// test's own t.Log).
func (c *checker) neverWaits(call *ast.CallExpr) bool {
	if match.IsBuiltin(c.info, call.Fun, "close", "delete", "print", "println", "recover") {
		return true
	}
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	switch fn.Pkg().Path() {
	case "os", "fmt", "log", "testing":
		return true
	case "sync":
		return fn.Name() == "Unlock" || fn.Name() == "RUnlock"
	}
	return false
}

// usedInCleanup reports whether v is read inside the function passed to a
// t.Cleanup in the test.
func (c *checker) usedInCleanup(sc *scope, v *types.Var) bool {
	found := false
	ast.Inspect(c.fd.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && match.IsMethod(c.info, call, "testing", "Cleanup") {
			for _, arg := range call.Args {
				if c.reads(arg, v, nil) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// parentRead says where body takes the parent of dir itself
// (filepath.Dir(dir), path.Dir(dir)), or "": the parent of os.MkdirTemp's
// directory is the shared temporary directory, t.TempDir's is the
// test's own.
func (c *checker) parentRead(body *ast.BlockStmt, dir *types.Var) string {
	var why string
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || why != "" || len(call.Args) != 1 {
			return why == ""
		}
		if !match.IsPkgFunc(c.info, call, "path/filepath", "Dir") && !match.IsPkgFunc(c.info, call, "path", "Dir") {
			return true
		}
		if id, ok := ast.Unparen(call.Args[0]).(*ast.Ident); ok && c.info.Uses[id] == dir {
			why = fmt.Sprintf("%s at %s", types.ExprString(call.Fun), c.line(call))
		}
		return why == ""
	})
	return why
}

// sharedParent returns why the directory call makes (held in dir) shares
// its parent with other tests' directories in a way the code under test
// may see, or "": the test hands the directory (or a path built from it)
// to code under test, and another function of the package's tests makes
// an os.MkdirTemp directory in the same shared temporary directory. Every
// such directory has $TMPDIR as its parent, where each t.TempDir has a
// parent of its own test: code that keeps something beside the directory
// (a cache in its parent, a lock file next to it, "..") shares it between
// the tests in the original, and a bug in that sharing (a cache keyed by
// nothing) shows there and hides under t.TempDir. The correct code may
// not take the parent at all; the bug does, in a build the analysis does
// not see.
func (c *checker) sharedParent(body *ast.BlockStmt, dir *types.Var, call *ast.CallExpr) string {
	if !c.sharedTemp(call) {
		return ""
	}
	under := c.derived(body, dir)
	var to string
	ast.Inspect(body, func(n ast.Node) bool {
		cl, ok := n.(*ast.CallExpr)
		if !ok || to != "" {
			return to == ""
		}
		if runsNoCode(c.info, cl) || !c.reachesCodeUnderTest(match.Callee(c.info, cl)) {
			return true // a conversion hands nothing over by itself
		}
		for _, a := range cl.Args {
			if c.usesAny(a, under) {
				to = fmt.Sprintf("%s at %s", types.ExprString(cl.Fun), c.line(cl))
			}
		}
		return to == ""
	})
	if to == "" {
		to = c.indirectHandover(body, under)
	}
	if to == "" {
		return ""
	}
	for _, f := range c.pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd == c.fd {
				continue
			}
			var other *ast.CallExpr
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if o, ok := n.(*ast.CallExpr); ok && other == nil && match.IsPkgFunc(c.info, o, "os", "MkdirTemp") && c.sharedTemp(o) {
					other = o
				}
				return other == nil
			})
			if other != nil {
				return fmt.Sprintf("the test hands the directory to %s, and %s makes its own os.MkdirTemp directory (%s) in the same shared temporary directory: in the original the two share a parent, and code that keeps something beside the directory (a cache in its parent) shares it between the tests; each t.TempDir has a parent of its own, which would hide a bug in that sharing", to, fd.Name.Name, c.line(other))
			}
		}
	}
	if at := c.sharedTempHere(call); at != "" {
		return fmt.Sprintf("the test hands the directory to %s, and %s uses the shared temporary directory too: in the original the two share a parent, and code that keeps something beside the directory (a cache in its parent) meets what is kept there; t.TempDir's parent is the test's (or subtest's) own, which would hide a bug in that sharing", to, at)
	}
	if at := c.sharedTempUser(); at != "" {
		return fmt.Sprintf("the test hands the directory to %s, and %s uses the shared temporary directory itself: in the original the directory's parent is that same directory, so code that keeps something beside the directory (a cache in its parent) meets what is kept there; t.TempDir's parent is the test's own, which would hide a bug in that sharing", to, at)
	}
	return ""
}

// sharedTempHere says where the test being fixed itself uses the shared
// temporary directory other than by call, or "": os.TempDir() (but as
// call's parent), $TMPDIR, os.CreateTemp or ioutil.TempFile with the
// parent "", and an os.MkdirTemp (ioutil.TempDir) directory there made
// in another subtest: two directories of one test or subtest that both
// become t.TempDir's still share a parent, those of two subtests do not.
func (c *checker) sharedTempHere(call *ast.CallExpr) string {
	runOf := func(stack []ast.Node) ast.Node {
		for i := len(stack) - 1; i >= 0; i-- {
			if lit, ok := stack[i].(*ast.FuncLit); ok && i > 0 {
				if run, ok := stack[i-1].(*ast.CallExpr); ok && match.IsMethod(c.info, run, "testing", "Run") {
					return lit
				}
			}
		}
		return nil
	}
	var stack []ast.Node
	var home ast.Node
	found := false
	ast.Inspect(c.fd.Body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		stack = append(stack, n)
		if n == call {
			home, found = runOf(stack), true
		}
		return true
	})
	if !found {
		return ""
	}
	var at string
	ast.Inspect(c.fd.Body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		if at != "" || n == call {
			return false // call and its parent argument are the fix's own
		}
		stack = append(stack, n)
		o, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch {
		case match.IsPkgFunc(c.info, o, "os", "TempDir"):
		case match.IsPkgFunc(c.info, o, "os", "CreateTemp") || match.IsPkgFunc(c.info, o, "io/ioutil", "TempFile"):
			if !c.sharedTemp(o) {
				return true
			}
		case match.IsPkgFunc(c.info, o, "os", "Getenv") || match.IsPkgFunc(c.info, o, "os", "LookupEnv"):
			if k, ok := match.ConstString(c.info, o.Args[0]); !ok || k != "TMPDIR" {
				return true
			}
		case match.IsPkgFunc(c.info, o, "os", "MkdirTemp") || match.IsPkgFunc(c.info, o, "io/ioutil", "TempDir"):
			if !c.sharedTemp(o) || runOf(stack) == home {
				return true
			}
		default:
			return true
		}
		at = fmt.Sprintf("%s at %s", types.ExprString(o.Fun), c.line(o))
		return false
	})
	return at
}

// sharedTempUser says where code of the package (every build, its tests
// but the function being fixed) or of a module package it imports uses
// the shared temporary directory, read from its syntax: os.TempDir(),
// $TMPDIR, or a temporary directory or file made there (os.MkdirTemp or
// os.CreateTemp, ioutil's TempDir or TempFile, with the parent "");
// or "". Not only another test's os.MkdirTemp shares the parent of the
// directory with the original: the code under test may keep something in
// the temporary directory itself (a cache of resolutions made without a
// project), and a bug that climbs from the project to its parent meets
// it there, in real runs, and not under t.TempDir (red team batch 19,
// pincache). The bug takes the parent in its own build, which the typed
// analysis does not see, so the use counts wherever it is.
func (c *checker) sharedTempUser() string {
	e := c.module()
	self := c.pass.Fset.Position(c.fd.Pos())
	for _, p := range e.mod.Packages {
		for _, f := range p.Files {
			if f.Syntax == nil {
				continue
			}
			var at string
			for _, d := range f.Syntax.Decls {
				fd, isFunc := d.(*ast.FuncDecl)
				if isFunc && p == e.self() && filepath.Base(f.Path) == filepath.Base(self.Filename) && fd.Name.Name == c.fd.Name.Name && fd.Recv == nil {
					continue // the test being fixed
				}
				ast.Inspect(d, func(n ast.Node) bool {
					if at != "" {
						return false
					}
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					x, ok := sel.X.(*ast.Ident)
					if !ok {
						return true
					}
					first := ""
					if len(call.Args) > 0 {
						if lit, ok := call.Args[0].(*ast.BasicLit); ok {
							first = lit.Value
						}
					}
					switch f.Imports[x.Name] + "." + sel.Sel.Name {
					case "os.TempDir":
					case "os.MkdirTemp", "os.CreateTemp", "io/ioutil.TempDir", "io/ioutil.TempFile":
						if first != `""` && first != "``" {
							return true
						}
					case "os.Getenv", "os.LookupEnv", "syscall.Getenv":
						if first != `"TMPDIR"` {
							return true
						}
					default:
						return true
					}
					where := fmt.Sprintf("%s at %s:%d", types.ExprString(call.Fun), filepath.Base(f.Path), e.mod.Fset.Position(call.Pos()).Line)
					if isFunc {
						where += ", in " + fd.Name.Name
					}
					at = where
					return false
				})
				if at != "" {
					return "the code (" + at + ")"
				}
			}
		}
	}
	return ""
}

// sharedTemp reports whether the os.MkdirTemp call makes its directory in
// the shared temporary directory: a parent of "" or os.TempDir().
func (c *checker) sharedTemp(call *ast.CallExpr) bool {
	if len(call.Args) != 2 {
		return false
	}
	if s, ok := match.ConstString(c.info, call.Args[0]); ok {
		return s == ""
	}
	inner, ok := ast.Unparen(call.Args[0]).(*ast.CallExpr)
	return ok && match.IsPkgFunc(c.info, inner, "os", "TempDir")
}

// reachesCodeUnderTest reports whether a call of fn may run code under
// test: fn is not the standard library's and is not a helper of the
// test files whose body (and the package functions it reaches) calls
// only the standard library and other such helpers. A function value
// (nil fn) may run anything.
func (c *checker) reachesCodeUnderTest(fn *types.Func) bool {
	if fn == nil {
		return true
	}
	if fn.Pkg() != nil && match.IsStd(fn.Pkg().Path()) {
		return false
	}
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || !strings.HasSuffix(c.pass.Fset.Position(fd.Pos()).Filename, "_test.go") {
		return true
	}
	roots := []*ast.FuncDecl{fd}
	for g := range c.reachable(fd.Body, nil) {
		roots = append(roots, c.decls[g])
	}
	for _, r := range roots {
		if !strings.HasSuffix(c.pass.Fset.Position(r.Pos()).Filename, "_test.go") {
			return true
		}
		found := false
		ast.Inspect(r.Body, func(n ast.Node) bool {
			if cl, ok := n.(*ast.CallExpr); ok && !found {
				g := match.Callee(c.info, cl)
				if g == nil && !runsNoCode(c.info, cl) || g != nil && g.Pkg() != nil && !match.IsStd(g.Pkg().Path()) && c.decls[g.Origin()] == nil {
					found = true // a function value, or another package's code
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// runsNoCode reports whether call converts a value to a type or calls a
// built-in function (len, append): neither runs code.
func runsNoCode(info *types.Info, call *ast.CallExpr) bool {
	tv, ok := info.Types[call.Fun]
	return match.IsConversion(info, call) || ok && tv.IsBuiltin()
}

// dropsError reports whether the removal statement discards RemoveAll's
// error: os.RemoveAll(dir) or defer os.RemoveAll(dir).
func dropsError(remove ast.Stmt) bool {
	switch remove.(type) {
	case *ast.ExprStmt, *ast.DeferStmt:
		return true
	}
	return false
}

// bodiesFrom returns body, then the bodies of the package's functions it
// reaches, in source order: what a search of them names is the same on
// every run.
func (c *checker) bodiesFrom(body *ast.BlockStmt) []ast.Node {
	var reached []ast.Node
	for f := range c.reachable(body, nil) {
		reached = append(reached, c.decls[f].Body)
	}
	sort.Slice(reached, func(i, j int) bool { return reached[i].Pos() < reached[j].Pos() })
	return append([]ast.Node{body}, reached...)
}

// goroutineAt says where the test, or the package code it reaches,
// starts a goroutine (a go statement), or calls code of another package
// whose effect summary starts one; or "".
func (c *checker) goroutineAt(body *ast.BlockStmt) string {
	at := ""
	for _, b := range c.bodiesFrom(body) {
		ast.Inspect(b, func(n ast.Node) bool {
			if at != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.GoStmt:
				at = "a go statement at " + c.line(n)
			case *ast.CallExpr:
				fn := match.Callee(c.info, n)
				if fn == nil || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg || match.IsStd(fn.Pkg().Path()) {
					return true
				}
				if sum := c.pass.Effects.Of(fn); sum != nil {
					for _, e := range sum.Effects {
						if e.Kind == effect.GoroutineEnds || e.Kind == effect.GoroutineForever {
							at = types.ExprString(n.Fun) + " at " + c.line(n) + ", which starts one"
						}
					}
				}
			}
			return at == ""
		})
		if at != "" {
			break
		}
	}
	return at
}

// processAt says where the test, or the package code it reaches, runs a
// process, or calls code of another package whose effect summary runs
// one; or "". A process may outlive the test as a goroutine does: a
// detached, self-reexec'd background gc (docker's pkg/reexec, os.StartProcess
// then Release) still writing in the directory when the test ends makes
// t.TempDir's removal fail (red team batch 17, bggc). Waiting for it is
// not enough: a command that Run or Wait waits for may leave a detached
// child behind (git gc --auto, a daemon, a shell's &), so every process
// counts: os.StartProcess, syscall.ForkExec and StartProcess, and
// exec.Cmd's Start, Run, Output and CombinedOutput. A summary says only
// that a function runs or signals a process, so any Process effect of
// another package's code counts too.
func (c *checker) processAt(body *ast.BlockStmt) string {
	at := ""
	for _, b := range c.bodiesFrom(body) {
		ast.Inspect(b, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if at != "" || !ok {
				return at == ""
			}
			fn := match.Callee(c.info, call)
			switch {
			case fn == nil || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg:
			case match.IsPkgFunc(c.info, call, "os", "StartProcess") || match.IsPkgFunc(c.info, call, "syscall", "ForkExec", "StartProcess"):
				at = types.ExprString(call.Fun) + " at " + c.line(call) + ", which nothing may wait for"
			case match.IsMethod(c.info, call, "os/exec", "Start", "Run", "Output", "CombinedOutput"):
				at = types.ExprString(call.Fun) + " at " + c.line(call) + ", whose process, or a child it leaves running as git gc --auto does, may still write in the directory"
			case !match.IsStd(fn.Pkg().Path()):
				if sum := c.pass.Effects.Of(fn); sum != nil {
					for _, e := range sum.Effects {
						if e.Kind == effect.Process {
							at = fmt.Sprintf("%s at %s (%s)", types.ExprString(call.Fun), c.line(call), e.Why())
							break
						}
					}
				}
			}
			return at == ""
		})
		if at != "" {
			break
		}
	}
	return at
}

// otherContext says why ctx's own context cannot become t.Context():
// the test has another context besides it, its own or t.Context(), and
// t.Context() is one value on every call, so code that keys or owns by
// context (a per-request memo, a session per context) would see the two
// as one (red team batch 23, reqmemo). "" when call makes the test's
// only context.
func (c *checker) otherContext(sc *scope, call *ast.CallExpr) string {
	found := ""
	ast.Inspect(sc.body, func(n ast.Node) bool {
		if _, lit := n.(*ast.FuncLit); lit {
			return false // a subtest's contexts are its own t's
		}
		other, ok := n.(*ast.CallExpr)
		if !ok || other == call || found != "" {
			return found == ""
		}
		if match.IsPkgFunc(c.info, other, "context", "WithCancel", "WithCancelCause", "WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause", "WithValue", "WithoutCancel") || match.IsMethod(c.info, other, "testing", "Context") {
			found = fmt.Sprintf("the test has another context (%s at %s), and t.Context() is one value on every call: code that keys or owns by context (a memo per request, a session per context) would see the two as one", types.ExprString(other.Fun), c.line(other))
		}
		return found == ""
	})
	return found
}

// codeListsTemp returns where the code under test (the package's files
// other than its tests, in any build it compiles here, and the module's
// packages they import, by their syntax) reads the shared temporary
// directory: os.TempDir(), TMPDIR from the environment, a string that
// names /tmp or /var/tmp itself, or the process's open files and
// working directory under /proc/self (a key agent auditing the
// directories of its open files: red team batch 33, fdaudit,
// tmpcleaner); or "". Such code may find a directory os.MkdirTemp("",
// ...) made there by listing it, by a marker file inside or a regexp on
// its name, though the test never hands it over (red team batch 31,
// heartbeat, outbox).
func (c *checker) codeListsTemp() string {
	if c.listsTemp != nil {
		return *c.listsTemp
	}
	at := ""
	for _, f := range c.pass.AllFiles {
		if strings.HasSuffix(c.pass.Fset.File(f.Pos()).Name(), "_test.go") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && at == "" && sharedRootLit(lit) {
				at = c.line(lit)
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || at != "" {
				return at == ""
			}
			switch {
			case match.IsPkgFunc(c.info, call, "os", "TempDir"):
				at = c.line(call)
			case match.IsPkgFunc(c.info, call, "os", "Getenv", "LookupEnv") && len(call.Args) == 1:
				if k, ok := match.ConstString(c.info, call.Args[0]); !ok || k == "TMPDIR" {
					at = c.line(call)
				}
			}
			return at == ""
		})
	}
	if at == "" {
		for _, p := range c.module().mod.Packages {
			if p.ImportPath == c.pass.Pkg.Path() {
				continue
			}
			for _, f := range p.Files {
				if strings.HasSuffix(f.Path, "_test.go") || f.Syntax == nil {
					continue
				}
				if fileReadsEnv(f, key("c:TMPDIR")) || fileCallsTempDir(f) || fileNamesSharedRoot(f) {
					at = p.ImportPath
					break
				}
			}
			if at != "" {
				break
			}
		}
	}
	c.listsTemp = &at
	return at
}

// fileCallsTempDir reports whether f calls os.TempDir.
func fileCallsTempDir(f *modsrc.File) bool {
	found := false
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && f.Imports[x.Name] == "os" && sel.Sel.Name == "TempDir" {
				found = true
			}
		}
		return !found
	})
	return found
}

// sharedRootLit reports whether lit is a string naming the shared
// temporary directories or the process's own files: "/tmp", "/var/tmp"
// or "/proc/self", alone or with more after a slash.
func sharedRootLit(lit *ast.BasicLit) bool {
	if lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return false
	}
	for _, root := range []string{"/tmp", "/var/tmp", "/proc/self"} {
		if s == root || strings.HasPrefix(s, root+"/") {
			return true
		}
	}
	return false
}

// fileNamesSharedRoot reports whether f holds a sharedRootLit string.
func fileNamesSharedRoot(f *modsrc.File) bool {
	found := false
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && sharedRootLit(lit) {
			found = true
		}
		return !found
	})
	return found
}

// usedElsewhere says where the package names fd's function other than in
// its declaration (a test called by another test, TestA(t) in TestB;
// one handed to t.Run or stored), or "" (red team batch 35, evicthook).
func (c *checker) usedElsewhere(fd *ast.FuncDecl) string {
	obj := c.info.Defs[fd.Name]
	if obj == nil {
		return ""
	}
	at := token.NoPos
	for id, o := range c.info.Uses {
		if o == obj && (at == token.NoPos || id.Pos() < at) {
			at = id.Pos()
		}
	}
	if at != token.NoPos {
		p := c.pass.Fset.Position(at)
		return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
	}
	// The test files the pass does not type (the external test package,
	// which runs in the same binary and sees an exported test function;
	// another build's) are read by their syntax: any mention of the name
	// but its own declaration counts (red team batch 37, leasexpoll).
	typed := map[string]bool{}
	for _, f := range c.pass.AllFiles {
		typed[c.pass.Fset.Position(f.Pos()).Filename] = true
	}
	dir := filepath.Dir(c.pass.Fset.Position(fd.Pos()).Filename)
	if found := match.MentionInUntypedTests(dir, fd.Name.Name, func(p string) bool { return typed[p] }); found != "" {
		return found + ", a file the analysis reads by its syntax"
	}
	return ""
}
