package spawn

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"math/bits"
	"slices"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// What the rule reads of a child is its command, not what the child
// computes: a correct tool may name a snapshot after the clock, a counter,
// its pid or a file it finds, and one after another two runs get
// different, ordered names where run together they may collide or swap.
// The analysis cannot tell these implementations apart, and the buggy
// variants a test exists to catch are the ones it never sees. So running
// children together is only invisible to a test when no check relates
// what two of them produced: a check that compares, orders or
// de-duplicates the results of two children (their outputs, what the test
// builds from them, files they may have written, what package state holds
// of them) observes their order or overlap for some implementation, and
// the site is not fixed, naming the check's line.
//
// relation follows, through the statements from the first child to the
// end of the function, which children each variable's value derives from
// (a bit per child), and finds the first check that reads values of two.
// A value's children are those of the variables and results it is built
// from: assignments, range, calls (a call's result derives from its
// arguments; what it may write through a pointer, a slice, a map or its
// receiver absorbs them: fmt.Sscanf(out, "%s", &name), seen[id] = true).
// A variable a child's statement assigns whole (out, err := cmd.Output())
// is that child's alone from there on; each child's err is its own.

// kids is a set of children, a bit each; the 64th stands for the rest.
type kids uint64

func kid(i int) kids { return 1 << min(i, 63) }

// many reports whether k holds two children at least.
func (k kids) many() bool { return k&(k-1) != 0 }

// pair returns the first two children of k.
func (k kids) pair() (int, int) {
	i := bits.TrailingZeros64(uint64(k))
	j := bits.TrailingZeros64(uint64(k &^ kid(i)))
	return i, j
}

// A relation follows the children's results through the test's code.
type relation struct {
	c     *checker
	state map[*types.Var]kids // the children a variable's value derives from
	given map[*types.Var]kids // the children whose commands read a variable (a directory)
	all   kids                // every child
	// pkg is what package-level state may hold of the children's results:
	// a package function the checks call with them may keep them there.
	pkg   kids
	units map[ast.Stmt]int // a child's statements, by child

	site ast.Node // the first check that reads values of two children
	who  kids
}

func (c *checker) newRelation(units map[ast.Stmt]int, all kids) *relation {
	return &relation{c: c, state: map[*types.Var]kids{}, given: map[*types.Var]kids{}, all: all, units: units}
}

// relateChain says which check, from the first child of ch to the end of
// the function, relates the results of two of its children, or "".
func (c *checker) relateChain(ch *chain) string {
	units := map[ast.Stmt]int{}
	var all kids
	for i, u := range ch.units {
		all |= kid(i)
		for _, s := range u.stmts {
			units[s] = i
		}
	}
	r := c.newRelation(units, all)
	seq, inLoop := c.following(ch.list[ch.start])
	passes := 1
	if inLoop {
		// What the end of one iteration keeps (prev = b) the next
		// iteration's checks compare with its own children's results.
		passes = 2
	}
	for p := 0; p < passes && r.site == nil; p++ {
		for _, s := range seq {
			r.stmt(s)
			if r.site != nil {
				break
			}
		}
	}
	if r.site == nil {
		return ""
	}
	i, j := r.who.pair()
	if call, ok := r.site.(*ast.CallExpr); ok && c.runsChild(call) {
		return fmt.Sprintf("a later child (%s at %s) may read what the %s and %s children left (a listing of their snapshots): whatever a correct child writes, run together the two may leave the same name or the other order, where one after another they do not", short(call), c.line(call), ordinal(i), ordinal(j))
	}
	return fmt.Sprintf("the test relates what the %s and %s children produce (%s at %s): whatever a correct child computes it from (the clock, a counter, its pid, a file), run together two children may get the same value or the other order, where one after another they do not", ordinal(i), ordinal(j), short(r.site), c.line(r.site))
}

// relateLoop says which check relates the result of one iteration's child
// to an earlier one's (prev, seen[id], ids = append(ids, id) compared
// later), in the loop or after it, or "".
func (c *checker) relateLoop(ls *loopSite) string {
	const cur, earlier = kids(1), kids(2)
	units := map[ast.Stmt]int{}
	for _, s := range ls.u.stmts {
		units[s] = 0
	}
	// A file no child was given by name may hold what any child left,
	// this iteration's or an earlier one's.
	r := c.newRelation(units, cur|earlier)
	// Variables declared outside the body carry an iteration's values to
	// the next: a value of this iteration's child is, the next time
	// round, an earlier child's.
	carried := func(v *types.Var) bool {
		return !declaredIn(v, ls.rs.Body) && !declaredIn(v, ls.rs)
	}
	for pass := 0; pass < 4; pass++ {
		changed := false
		for _, s := range ls.rs.Body.List {
			r.stmt(s)
			if r.site != nil {
				return fmt.Sprintf("the checks relate what one iteration's child produces to what an earlier one's did (%s at %s): whatever a correct child computes it from (the clock, a counter, its pid, a file), run together two children may get the same value or the other order, where one after another they do not", short(r.site), c.line(r.site))
			}
		}
		for v, k := range r.state {
			if carried(v) && k&cur != 0 && k&earlier == 0 {
				r.state[v] |= earlier
				changed = true
			}
		}
		if r.pkg&cur != 0 && r.pkg&earlier == 0 {
			r.pkg |= earlier
			changed = true
		}
		if !changed {
			break
		}
	}
	// After the loop, what it kept holds every child's results.
	for v, k := range r.state {
		if carried(v) && k != 0 {
			r.state[v] = cur | earlier
		}
	}
	if r.pkg != 0 {
		r.pkg = cur | earlier
	}
	seq, _ := c.following(ls.rs)
	for _, s := range seq[1:] {
		r.stmt(s)
		if r.site != nil {
			return fmt.Sprintf("the checks after the loop relate what its children produced (%s at %s): whatever a correct child computes it from (the clock, a counter, its pid, a file), run together two children may get the same value or the other order, where one after another they do not", short(r.site), c.line(r.site))
		}
	}
	return ""
}

// following returns stmt and the statements that run after it in the
// function: the rest of its list, then of each enclosing list, to the end
// of the function's body, and last the function literals that stand
// before stmt (a t.Cleanup or defer registered earlier runs after it).
// inLoop says a loop or a function literal encloses stmt.
func (c *checker) following(stmt ast.Stmt) (seq []ast.Stmt, inLoop bool) {
	var path []ast.Node
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		if path != nil {
			return false
		}
		if n == stmt {
			path = append(append([]ast.Node{}, stack...), n)
			return false
		}
		return true
	})
	if path == nil {
		return []ast.Stmt{stmt}, false
	}
	first := true // the innermost list holds stmt itself
	for k := len(path) - 2; k >= 0; k-- {
		switch p := path[k].(type) {
		case *ast.ForStmt, *ast.RangeStmt, *ast.FuncLit:
			// A closure may run more than once (t.Run in a loop), and
			// what it sets is checked after the statement that holds it.
			inLoop = true
		default:
			list := match.StmtList(p)
			for i, s := range list {
				if s != path[k+1] {
					continue
				}
				if first {
					seq = append(seq, list[i:]...)
					first = false
				} else {
					seq = append(seq, list[i+1:]...)
				}
				break
			}
		}
	}
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if n != nil && n.Pos() >= stmt.Pos() {
			return false
		}
		if fl, ok := n.(*ast.FuncLit); ok && fl.End() <= stmt.Pos() {
			seq = append(seq, fl.Body)
			return false
		}
		return true
	})
	return seq, inLoop
}

// stmt follows the children's results through s and looks for a check
// that relates two.
func (r *relation) stmt(s ast.Stmt) {
	if i, ok := r.units[s]; ok {
		// A child's own statements: what they set is the child's.
		for v, rs := range refs(r.c.info, s) {
			if ignored(v) {
				continue
			}
			if !written(rs) {
				r.given[v] |= kid(i)
				continue
			}
			if rs[0].whole {
				r.state[v] = kid(i)
			} else {
				r.state[v] |= kid(i)
			}
		}
		if is, ok := s.(*ast.IfStmt); ok {
			// The check of the child's result in the same statement.
			r.flow(is.Cond)
			r.flow(is.Body)
			if is.Else != nil {
				r.flow(is.Else)
			}
			r.checks(is.Cond)
			r.checks(is.Body)
			if is.Else != nil {
				r.checks(is.Else)
			}
			r.cond(is.Cond)
		}
		return
	}
	if a, ok := s.(*ast.AssignStmt); ok && (a.Tok == token.ASSIGN || a.Tok == token.DEFINE) && len(a.Lhs) == len(a.Rhs) {
		// s = string(out2) after a check of s = string(out1): the
		// variable holds the second child's result alone.
		ks := make([]kids, len(a.Rhs))
		for i, e := range a.Rhs {
			ks[i] = r.of(e)
		}
		for i, l := range a.Lhs {
			if id, ok := ast.Unparen(l).(*ast.Ident); ok {
				if v, ok := r.c.info.ObjectOf(id).(*types.Var); ok {
					r.state[v] = ks[i]
				}
			}
		}
	}
	r.flow(s)
	r.checks(s)
}

// flow spreads the children's results through the assignments and calls
// of n until nothing changes (within n, order is not followed).
func (r *relation) flow(n ast.Node) {
	for range 8 {
		changed := false
		add := func(v *types.Var, k kids) {
			if v != nil && !ignored(v) && r.state[v]|k != r.state[v] {
				r.state[v] |= k
				changed = true
			}
		}
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				var all kids
				for _, e := range n.Rhs {
					all |= r.of(e)
				}
				for i, l := range n.Lhs {
					k := all
					if len(n.Lhs) == len(n.Rhs) {
						k = r.of(n.Rhs[i])
					}
					add(r.root(l), k|r.inner(l))
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					var k kids
					if len(n.Values) == len(n.Names) {
						k = r.of(n.Values[i])
					} else {
						for _, e := range n.Values {
							k |= r.of(e)
						}
					}
					add(r.root(name), k)
				}
			case *ast.RangeStmt:
				k := r.of(n.X)
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if e != nil {
						add(r.root(e), k)
					}
				}
			case *ast.SendStmt:
				add(r.root(n.Chan), r.of(n.Value))
			case *ast.CallExpr:
				if r.pure(n) || r.reporter(n) {
					return true
				}
				k := r.input(n)
				for _, v := range r.written(n) {
					add(v, k)
				}
				if fn := match.Callee(r.c.info, n); fn != nil && r.c.pkgState(fn, 0) && r.pkg|k != r.pkg {
					r.pkg |= k // a package function may keep them
					changed = true
				}
			}
			return true
		})
		if !changed {
			return
		}
	}
}

// of returns the children the value of e derives from.
func (r *relation) of(e ast.Node) kids {
	if e == nil {
		return 0
	}
	var k kids
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if v, ok := r.c.info.Uses[n].(*types.Var); ok {
				k |= r.state[v]
			}
		case *ast.CallExpr:
			k |= r.extra(n)
		}
		return true
	})
	return k
}

// input returns the children what a call reads derives from: its
// arguments, its receiver, and what it reads beyond them.
func (r *relation) input(call *ast.CallExpr) kids {
	k := r.extra(call)
	for _, a := range call.Args {
		k |= r.of(a)
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		if _, isMethod := r.c.info.Selections[sel]; isMethod {
			k |= r.of(sel.X)
		}
	}
	return k
}

// extra returns what a call reads of the children beyond its arguments:
// files they may have written (every child's, unless the path names a
// variable only some children were given, such as each one's directory),
// which a later child reads too, and for a package function, what
// package-level state holds of them.
func (r *relation) extra(call *ast.CallExpr) kids {
	fn := match.Callee(r.c.info, call)
	if fn == nil {
		return 0
	}
	var k kids
	// A later child (restic snapshots after two backups) reads what the
	// children left, as a file read does.
	files := r.c.readsFiles(fn, 0) || r.c.runsChild(call)
	if r.c.pkgState(fn, 0) {
		k |= r.pkg
	}
	if files && r.fixture(call) {
		files = false
	}
	if files {
		var named kids
		for _, a := range call.Args {
			ast.Inspect(a, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					if v, ok := r.c.info.Uses[id].(*types.Var); ok {
						named |= r.given[v]
					}
				}
				return true
			})
		}
		if named == 0 {
			named = r.all
		}
		k |= named
	}
	return k
}

// fixture reports whether call reads a file of the package's testdata
// by a constant path (os.ReadFile("testdata/want.txt"),
// filepath.Join("testdata", "want.txt")): the test's own, which no child
// is given (sharedConstant would have seen it) and whose code writes no
// file (childEffect).
func (r *relation) fixture(call *ast.CallExpr) bool {
	if len(call.Args) == 0 {
		return false
	}
	e := ast.Unparen(call.Args[0])
	if j, ok := e.(*ast.CallExpr); ok && match.IsPkgFunc(r.c.info, j, "path/filepath", "Join") && len(j.Args) > 0 {
		for _, a := range j.Args {
			if _, ok := match.ConstString(r.c.info, a); !ok {
				return false
			}
		}
		e = j.Args[0]
	}
	p, ok := match.ConstString(r.c.info, e)
	return ok && (p == "testdata" || strings.HasPrefix(p, "testdata/"))
}

// runsChild reports whether call runs a child: Run, Output,
// CombinedOutput or Wait of an *exec.Cmd, or a package function that does.
func (c *checker) runsChild(call *ast.CallExpr) bool {
	if match.IsMethod(c.info, call, "os/exec", "Run", "Output", "CombinedOutput", "Wait") {
		return true
	}
	fn := match.Callee(c.info, call)
	return fn != nil && fn.Pkg() == c.pass.Pkg && c.spawner(fn) != nil
}

// fileReads are the functions of the standard library that read the file
// system.
var fileReads = map[string][]string{
	"os":            {"ReadFile", "Open", "OpenFile", "ReadDir", "Stat", "Lstat", "DirFS", "Readlink"},
	"io/ioutil":     {"ReadFile", "ReadDir"},
	"io/fs":         {"ReadFile", "ReadDir", "Glob", "WalkDir", "Stat"},
	"path/filepath": {"Glob", "Walk", "WalkDir", "EvalSymlinks"},
}

// readsFiles reports whether fn reads the file system: a function of
// fileReads, or a package function that calls one (three levels deep).
func (c *checker) readsFiles(fn *types.Func, depth int) bool {
	fn = fn.Origin()
	if fn.Pkg() == nil {
		return false
	}
	if names, ok := fileReads[fn.Pkg().Path()]; ok && fn.Type().(*types.Signature).Recv() == nil {
		for _, n := range names {
			if n == fn.Name() {
				return true
			}
		}
		return false
	}
	if fn.Pkg() != c.pass.Pkg || depth > 2 {
		return false
	}
	fd := c.allDecls()[fn]
	if fd == nil || fd.Body == nil {
		return false
	}
	found := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && !found {
			if callee := match.Callee(c.info, call); callee != nil && callee.Origin() != fn && c.readsFiles(callee, depth+1) {
				found = true
			}
		}
		return !found
	})
	return found
}

// pkgState reports whether the package function fn mentions a
// package-level variable of the package, itself or through the package
// functions it calls (three levels deep): a helper that records each
// child's result (record(out)) and one that checks them all
// (checkRecords(t)) relate the children through it. A function of
// another package keeps state as otherPkgState says.
func (c *checker) pkgState(fn *types.Func, depth int) bool {
	fn = fn.Origin()
	if fn.Pkg() != c.pass.Pkg {
		return c.otherPkgState(fn) // pkgstate.go
	}
	if depth > 2 {
		return false
	}
	fd := c.allDecls()[fn]
	if fd == nil || fd.Body == nil {
		return false
	}
	found := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if v, ok := c.info.Uses[n].(*types.Var); ok && match.IsPackageLevel(v) && v.Pkg() == c.pass.Pkg {
				found = true
			}
		case *ast.CallExpr:
			if callee := match.Callee(c.info, n); callee != nil && callee.Origin() != fn && c.pkgState(callee, depth+1) {
				found = true
			}
		}
		return !found
	})
	return found
}

// root returns the variable an assignment to e changes: x in x, x[i],
// x.f, *x, &x (match.Root, with the address taken and no field).
func (r *relation) root(e ast.Expr) *types.Var {
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok {
		if u.Op != token.AND {
			return nil
		}
		e = u.X
	}
	v := match.Root(r.c.info, e)
	if v != nil && v.IsField() {
		return nil
	}
	return v
}

// inner returns the children the indexes of an assignment's left side
// derive from: seen[id] = true keeps id in seen.
func (r *relation) inner(e ast.Expr) kids {
	var k kids
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.IndexExpr:
			k |= r.of(x.Index)
		case *ast.IndexListExpr:
			for _, i := range x.Indices {
				k |= r.of(i)
			}
		}
		return true
	})
	return k
}

// written returns the variables a call may change: its receiver, what its
// arguments point to (&x, a slice, a map, a pointer).
func (r *relation) written(call *ast.CallExpr) []*types.Var {
	var out []*types.Var
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		if _, isMethod := r.c.info.Selections[sel]; isMethod {
			if v := r.root(sel.X); v != nil {
				out = append(out, v)
			}
		}
	}
	for _, a := range call.Args {
		if u, ok := ast.Unparen(a).(*ast.UnaryExpr); ok && u.Op == token.AND {
			if v := r.root(u.X); v != nil {
				out = append(out, v)
			}
			continue
		}
		switch types.Unalias(r.c.info.TypeOf(a)).Underlying().(type) {
		case *types.Pointer, *types.Slice, *types.Map, *types.Chan, *types.Interface:
			if v := r.root(a); v != nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// builders are the packages whose functions (not methods) build a value
// from their arguments and change nothing else (but those that write
// through a pointer: fmt.Sscanf, json.Unmarshal, which flow handles as
// any call): their result derives from their arguments, and a check is
// where it is compared or tested, not where it is built. A message
// (fmt.Sprintf of both results for t.Errorf) relates nothing.
var builders = map[string]bool{
	"fmt": true, "strings": true, "bytes": true, "strconv": true, "path": true,
	"path/filepath": true, "unicode": true, "unicode/utf8": true, "errors": true,
	"encoding/hex": true, "encoding/base64": true, "log": true,
}

// pure reports whether call builds a value and changes nothing: a
// conversion, a builtin that does not write (len, append, min), a builder
// function whose arguments hold no pointer to write through.
func (r *relation) pure(call *ast.CallExpr) bool {
	if tv, ok := r.c.info.Types[call.Fun]; ok {
		if tv.IsType() {
			return true
		}
		if tv.IsBuiltin() {
			return !match.IsBuiltin(r.c.info, call.Fun, "copy", "delete", "clear", "close")
		}
	}
	fn := match.Callee(r.c.info, call)
	if fn == nil || fn.Pkg() == nil || fn.Type().(*types.Signature).Recv() != nil {
		return false
	}
	if names, ok := fileReads[fn.Pkg().Path()]; ok && slices.Contains(names, fn.Name()) && fn.Name() != "OpenFile" {
		return true // what it reads is checked where it is used
	}
	if !builders[fn.Pkg().Path()] {
		return false
	}
	for _, a := range call.Args {
		if u, ok := ast.Unparen(a).(*ast.UnaryExpr); ok && u.Op == token.AND {
			return false
		}
	}
	return !strings.HasPrefix(fn.Name(), "Fprint") && !strings.HasPrefix(fn.Name(), "Sscan") && !strings.HasPrefix(fn.Name(), "Fscan")
}

// reporter reports whether call only reports: a method of package
// testing (t.Errorf, t.Log), a print of fmt or log.
func (r *relation) reporter(call *ast.CallExpr) bool {
	fn := match.Callee(r.c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	switch fn.Pkg().Path() {
	case "testing":
		return true
	case "fmt", "log":
		return strings.HasPrefix(fn.Name(), "Print") || strings.HasPrefix(fn.Name(), "Fatal") || strings.HasPrefix(fn.Name(), "Panic")
	}
	return false
}

// checks looks in n for a check that reads values of two children: a
// comparison, a condition (each operand of &&, || and ! on its own), a
// switch's tag with a case, or a call that is neither a builder nor a
// report (an assertion, a helper, a sort).
func (r *relation) checks(n ast.Node) {
	if n == nil || r.site != nil {
		return
	}
	ast.Inspect(n, func(n ast.Node) bool {
		if r.site != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.BinaryExpr:
			switch n.Op {
			case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
				r.found(n, r.of(n.X)|r.of(n.Y))
			}
		case *ast.CallExpr:
			if !r.pure(n) && !r.reporter(n) {
				r.found(n, r.input(n))
			}
		case *ast.IfStmt:
			r.cond(n.Cond)
		case *ast.ForStmt:
			r.cond(n.Cond)
		case *ast.SwitchStmt:
			tag := r.of(n.Tag)
			for _, cl := range n.Body.List {
				for _, e := range cl.(*ast.CaseClause).List {
					if n.Tag == nil {
						r.cond(e)
					} else {
						r.found(e, tag|r.of(e))
					}
				}
			}
		}
		return r.site == nil
	})
}

// cond looks for a condition's operand that reads values of two children:
// !bytes.Equal(a, b), seen[id].
func (r *relation) cond(e ast.Expr) {
	if e == nil || r.site != nil {
		return
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.BinaryExpr:
		if x.Op == token.LAND || x.Op == token.LOR {
			r.cond(x.X)
			r.cond(x.Y)
			return
		}
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			r.cond(x.X)
			return
		}
	}
	r.found(e, r.of(e))
}

func (r *relation) found(n ast.Node, k kids) {
	if r.site == nil && k.many() {
		r.site, r.who = n, k
	}
}

// short is the text of a check in a reason, cut to a line.
func short(n ast.Node) string {
	var s string
	switch n := n.(type) {
	case ast.Expr:
		s = types.ExprString(n)
	default:
		s = fmt.Sprintf("%T", n)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
