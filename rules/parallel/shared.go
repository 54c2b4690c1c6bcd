package parallel

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

// A test made parallel changes order as well as concurrency: it pauses at
// t.Parallel until every sequential test of the package has finished, then
// runs beside the other parallel tests. So it must share no mutable state
// with any other test of the package, parallel or not: whatever another
// test may write, this one must not read. The rule cannot tell which
// tests reach which code cheaply and soundly (an external test package of
// the same binary is not even in the pass), so it takes every function of
// the package as code some other test runs, and computes once per package
// what that code may change: the shared state.

// shared is what the package's code (the code under test, its tests and
// helpers, every file) may change of the state its tests share.
type shared struct {
	// vars maps a package-level variable (of any package) that the
	// package's code writes, or lets escape so that a write through an
	// alias cannot be ruled out, to a phrase saying where ("is written by
	// TestExpiry (sessions_test.go:21)").
	vars map[*types.Var]string
	// env, wd and foreign say where the package's code changes the
	// environment, the working directory, or state of another package
	// (a call whose effect summary writes a package-level variable or a
	// standard library setting); "" when nowhere.
	env, wd, foreign string
	// pkgs maps the import path of another package whose variable the
	// package's code writes (time.Local = time.UTC, lib.Level = 2) to
	// where: that package's own functions may read it.
	pkgs map[string]string
}

// sharedState computes shared for the package of c.
func (c *checker) sharedState() *shared {
	if c.shared != nil {
		return c.shared
	}
	s := &shared{vars: map[*types.Var]string{}, pkgs: map[string]string{}}
	c.shared = s
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body != nil {
					c.scan(s, d.Body, d.Name.Name, setup(d))
				}
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					c.scan(s, d, "a package-level declaration", false)
				}
			}
		}
	}
	// The other half of the test binary (binary.go) changes the same
	// process.
	c.siblingState(s)
	c.funcState(s)
	// An exported variable can be written by an external test package
	// (package x_test), which runs in the same test binary but is not
	// part of this pass. An error value is taken as immutable: sentinel
	// errors are compared, never written.
	for _, name := range c.pass.Pkg.Scope().Names() {
		v, ok := c.pass.Pkg.Scope().Lookup(name).(*types.Var)
		if ok && v.Exported() && !isErrorType(v.Type()) && s.vars[v] == "" {
			s.vars[v] = "is exported: an external test package (package x_test) may write it"
		}
	}
	return s
}

// setup reports whether fd is an init function or TestMain: what they
// write before the tests run, every test sees in either order (and what
// TestMain does after m.Run no test sees).
func setup(fd *ast.FuncDecl) bool {
	return fd.Recv == nil && (fd.Name.Name == "init" || fd.Name.Name == "TestMain")
}

// scan records in s what root, the body of the function fn (or a
// package-level declaration), may change. The writes of setup code (init,
// TestMain) do not count, but for those of its function literals, which
// may run while the tests do; its aliases do.
func (c *checker) scan(s *shared, root ast.Node, fn string, init bool) {
	match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			v, ok := c.info.Uses[n].(*types.Var)
			if !ok || !match.IsPackageLevel(v) || s.vars[v] != "" {
				return true
			}
			kind, how := c.useOf(n, stack)
			// A function literal of init or TestMain (a goroutine, a
			// timer's or a handler's callback) may run while the tests
			// do: its writes count.
			later := init && inFuncLit(stack)
			c.note(s, v, kind, how, func() string { return c.where(fn, n) }, init && !later)
		case *ast.CallExpr:
			if !init || inFuncLit(stack) {
				c.scanCall(s, n, fn)
			}
		}
		return true
	})
}

// note records in s a use of kind kind of v, a package-level variable,
// by the code where names ("TestExpiry (sessions_test.go:21)"); how says
// how an alias escapes. before is true for a write of setup code that
// runs before every test (init, TestMain), which every test sees in
// either order. An alias of a standard library variable
// (fmt.Fprintln(os.Stderr)) is I/O or a handle, not state a test reads
// back; its writes (os.Stdout = w) and setters (log.SetOutput) count.
func (c *checker) note(s *shared, v *types.Var, kind useKind, how string, where func() string, before bool) {
	if s.vars[v] != "" || kind == read || kind == write && before || kind == alias && match.IsStd(v.Pkg().Path()) {
		return
	}
	at := where()
	verb := "writes"
	if kind == alias {
		verb = "hands on"
	}
	if v.Pkg() != c.pass.Pkg {
		// Another package's state: its functions, and those of any
		// package that calls them, may read it.
		if s.foreign == "" {
			s.foreign = at + ", which " + verb + " " + v.Pkg().Name() + "." + v.Name()
		}
		if s.pkgs[v.Pkg().Path()] == "" {
			s.pkgs[v.Pkg().Path()] = v.Pkg().Name() + "." + v.Name() + ", which " + at + " " + verb
		}
	}
	if kind == write {
		s.vars[v] = at + " writes"
	} else {
		s.vars[v] = "may change through an alias: " + at + " " + how
	}
}

// inFuncLit reports whether stack holds a function literal.
func inFuncLit(stack []ast.Node) bool {
	for _, n := range stack {
		if _, ok := n.(*ast.FuncLit); ok {
			return true
		}
	}
	return false
}

// scanCall records in s a change of the environment, the working
// directory or another package's state that call makes, as far as the
// effect summaries tell. t.Setenv and t.Chdir do not count: they restore
// the value when the test ends, before any parallel test resumes.
func (c *checker) scanCall(s *shared, call *ast.CallExpr, fn string) {
	callee := match.Callee(c.info, call)
	if callee == nil || callee.Pkg() == nil || callee.Pkg() == c.pass.Pkg || callee.Pkg().Path() == "testing" {
		return
	}
	c.noteCall(s, callee, c.where(fn, call))
}

// noteCall records in s a change of the environment, the working
// directory or another package's state that a call of callee, at where,
// makes, as far as the effect summaries tell.
func (c *checker) noteCall(s *shared, callee *types.Func, where string) {
	note := func(field *string, what string) {
		if *field == "" {
			*field = where + ", which " + what
		}
	}
	path, name := callee.Pkg().Path(), callee.Name()
	recv := callee.Type().(*types.Signature).Recv()
	if (path == "os" || path == "syscall") && recv == nil && oneOf(name, osWrites) {
		// Named here too: a driver without summaries still sees them.
		if name == "Chdir" {
			note(&s.wd, "calls "+path+"."+name)
		} else {
			note(&s.env, "calls "+path+"."+name)
		}
		return
	}
	sum := c.pass.Effects.Of(callee)
	if sum == nil {
		return
	}
	for _, e := range sum.Effects {
		switch e.Kind {
		case effect.WritesEnv:
			note(&s.env, "calls "+e.Why())
		case effect.WritesWd:
			note(&s.wd, "calls "+e.Why())
		case effect.WritesGlobal, effect.Signal:
			note(&s.foreign, "calls "+e.Why())
		}
	}
}

// where names the function fn and the position of n: "TestExpiry
// (sessions_test.go:21)".
func (c *checker) where(fn string, n ast.Node) string {
	p := c.pass.Fset.Position(n.Pos())
	return fmt.Sprintf("%s (%s:%d)", fn, filepath.Base(p.Filename), p.Line)
}

// A use of a package-level variable is a read of a value no other code can
// change through it, a write, or an alias that lets other code change
// what the variable holds or refers to.
type useKind int

const (
	read useKind = iota
	write
	alias
)

// useOf classifies the use id of a package-level variable, whose enclosing
// nodes are stack, and for an alias says how it escapes. It follows the
// access path (v.f, v[i], *v, v[i:j]) outwards to the expression the code
// uses, then judges that expression by where it stands and its type: a
// value that holds no reference (a number, a string, a struct or array of
// such, a function, an error) read or copied is a read; the same in a
// write position is a write; a map, slice, pointer, channel or interface
// handed on in any way (returned, assigned, passed, ranged over by a
// loop variable that keeps pointers, a method's value receiver of a map
// type) is an alias.
func (c *checker) useOf(id *ast.Ident, stack []ast.Node) (useKind, string) {
	var e ast.Expr = id
	k := len(stack) - 1
	if k >= 0 {
		if sel, ok := stack[k].(*ast.SelectorExpr); ok && sel.Sel == id {
			e, k = sel, k-1 // pkg.V
		}
	}
	for ; k >= 0; k-- {
		switch p := stack[k].(type) {
		case *ast.ParenExpr, *ast.StarExpr:
			e = p.(ast.Expr)
			continue
		case *ast.SliceExpr:
			if p.X == e {
				e = p
				continue
			}
		case *ast.IndexExpr:
			if p.X == e {
				e = p
				continue
			}
		case *ast.SelectorExpr:
			if p.X != e {
				break
			}
			sel, ok := c.info.Selections[p]
			if !ok || sel.Kind() == types.FieldVal {
				e = p
				continue
			}
			if _, ptr := sel.Obj().Type().(*types.Signature).Recv().Type().(*types.Pointer); ptr {
				if _, isPtr := types.Unalias(c.info.TypeOf(e)).Underlying().(*types.Pointer); isPtr {
					// The method may change what the variable points
					// to, not the variable (os.Stdout.Write).
					return alias, "calls its method " + p.Sel.Name + ", which may change what it points to"
				}
				return write, ""
			}
			if c.valueOnly(c.info.TypeOf(e)) {
				return read, ""
			}
			return alias, "calls its method " + p.Sel.Name + ", whose value receiver shares what it refers to"
		}
		break
	}
	t := c.info.TypeOf(e)
	var parent ast.Node
	if k >= 0 {
		parent = stack[k]
	}
	switch p := parent.(type) {
	case *ast.AssignStmt:
		for _, l := range p.Lhs {
			if l == e {
				return write, ""
			}
		}
	case *ast.IncDecStmt:
		return write, ""
	case *ast.UnaryExpr:
		if p.Op == token.AND {
			return alias, "takes its address"
		}
		if p.Op == token.ARROW {
			return alias, "receives from it"
		}
	case *ast.SendStmt:
		if p.Chan == e {
			return alias, "sends on it"
		}
	case *ast.RangeStmt:
		if p.Key == e || p.Value == e {
			return write, ""
		}
		if c.rangeCopies(t) {
			return read, ""
		}
		return alias, "ranges over it with loop variables that share its elements"
	case *ast.BinaryExpr:
		switch p.Op {
		case token.EQL, token.NEQ:
			return read, "" // a comparison reads, whatever the type
		}
	case *ast.CallExpr:
		if p.Fun == e {
			return read, "" // calling a function value: judged as a call
		}
		if match.IsBuiltin(c.info, p.Fun, "len", "cap") {
			return read, ""
		}
		if match.IsBuiltin(c.info, p.Fun, "append", "delete", "clear", "close") {
			if p.Args[0] == e {
				return write, ""
			}
			if p.Ellipsis.IsValid() && c.rangeCopies(t) {
				return read, "" // append(local, v...) copies v's elements
			}
		}
		if match.IsBuiltin(c.info, p.Fun, "copy") {
			if p.Args[0] == e {
				return write, ""
			}
			if c.rangeCopies(t) {
				return read, ""
			}
		}
	}
	if c.valueOnly(t) {
		return read, ""
	}
	return alias, "hands it on, and it refers to memory it shares"
}

// rangeCopies reports whether ranging over a value of type t gives loop
// variables that share nothing with it: a string, a number, or an array,
// slice or map whose keys and elements hold no references.
func (c *checker) rangeCopies(t types.Type) bool {
	switch u := types.Unalias(t).Underlying().(type) {
	case *types.Basic:
		return true
	case *types.Slice:
		return c.valueOnly(u.Elem())
	case *types.Array:
		return c.valueOnly(u.Elem())
	case *types.Pointer:
		if a, ok := u.Elem().Underlying().(*types.Array); ok {
			return c.valueOnly(a.Elem())
		}
	case *types.Map:
		return c.valueOnly(u.Key()) && c.valueOnly(u.Elem())
	}
	return false
}

// valueOnly reports whether a value of type t holds no reference to
// memory it shares with where it came from: copying it gives an
// independent value. Functions count (their code is judged where they are
// called); so does error, whose values are immutable by convention.
func (c *checker) valueOnly(t types.Type) bool {
	if t == nil {
		return false
	}
	if isErrorType(t) {
		return true
	}
	switch u := types.Unalias(t).Underlying().(type) {
	case *types.Basic:
		return u.Kind() != types.UnsafePointer
	case *types.Signature:
		return true
	case *types.Array:
		return c.valueOnly(u.Elem())
	case *types.Struct:
		for i := range u.NumFields() {
			if !c.valueOnly(u.Field(i).Type()) {
				return false
			}
		}
		return true
	}
	return false
}

func isErrorType(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}

// reads records in eff a read of v, if v is a package-level variable that
// the package's code may change: the test, paused until the sequential
// tests end and then run beside the parallel ones, would read it in
// another state than it did. A variable of another module package is also
// shared when the package's code changes another package's state through
// a call, which may be where v is written.
func (c *checker) reads(eff *obstacle, v *types.Var) {
	if eff.state != "" || eff.shares != "" || !match.IsPackageLevel(v) {
		return
	}
	s := c.sharedState()
	name := v.Name()
	if v.Pkg() != c.pass.Pkg {
		name = v.Pkg().Name() + "." + name
	}
	if how := s.vars[v]; how != "" {
		eff.shares = "reads package-level variable " + name + ", which " + how
		return
	}
	if v.Pkg() != c.pass.Pkg && !match.IsStd(v.Pkg().Path()) && s.foreign != "" {
		eff.shares = "reads package-level variable " + name + ", which may be changed by " + s.foreign
	}
}

// readsProcess records in eff a read of the environment (os.Getenv) or the
// working directory (os.Getwd), named name, when the package's code
// changes it for good (os.Setenv, os.Chdir).
func (c *checker) readsProcess(eff *obstacle, name, fn string) {
	s := c.sharedState()
	if eff.shares != "" {
		return
	}
	switch {
	case fn == "Getwd" && s.wd != "":
		eff.shares = "calls " + name + ", which reads the working directory, changed by " + s.wd
	case fn != "Getwd" && oneOf(fn, envReads) && s.env != "":
		eff.shares = "calls " + name + ", which reads the environment, changed by " + s.env
	}
}

// envReads are the functions of package os that read the environment.
var envReads = []string{"Getenv", "LookupEnv", "Environ", "ExpandEnv"}

// readsForeign records in eff a call of name, a function of another
// package of the module or a dependency, when the package's code changes
// the environment, the working directory or another package's state: the
// summaries say what a function writes, not what it reads, so the call
// may read what the other code writes.
func (c *checker) readsForeign(eff *obstacle, name string) {
	s := c.sharedState()
	for _, w := range []string{s.foreign, s.env, s.wd} {
		if w != "" && eff.shares == "" {
			eff.shares = "calls " + name + ", which may read state changed by " + w
			return
		}
	}
}

// testing records in eff the effect of fn, a function or method of package
// testing. Of the test's own methods, t.Setenv and t.Chdir panic in a
// parallel test and t.Parallel in a helper would be a second call; the
// others act on the test's own state. Of the package's functions,
// AllocsPerRun panics in a parallel test and Benchmark times code that
// tests running beside it would slow; a few only read flags; the rest are
// not judged.
func (c *checker) testing(eff *obstacle, fn *types.Func, test bool) {
	if fn.Type().(*types.Signature).Recv() != nil {
		switch fn.Name() {
		case "Setenv", "Chdir":
			eff.state = "calls t." + fn.Name() + ", which panics in a parallel test"
		case "Parallel":
			if !test && eff.unseen == "" {
				eff.unseen = "calls t.Parallel in a helper"
			}
		}
		return
	}
	switch fn.Name() {
	case "AllocsPerRun":
		eff.state = "calls testing.AllocsPerRun, which panics in a parallel test"
	case "Benchmark":
		eff.state = "calls testing.Benchmark, which measures time that tests running beside it would change"
	case "Short", "Verbose", "CoverMode", "Coverage", "Testing":
	default:
		if eff.unseen == "" {
			eff.unseen = "calls testing." + fn.Name()
		}
	}
}

// readsPkg records in eff a call of fn, a function of another package
// whose variable the package's code writes (time.Now when a test sets
// time.Local): fn may read it.
func (c *checker) readsPkg(eff *obstacle, fn *types.Func) {
	if eff.shares != "" || fn.Pkg() == c.pass.Pkg {
		return
	}
	if w := c.sharedState().pkgs[fn.Pkg().Path()]; w != "" {
		eff.shares = "calls " + match.PkgFuncName(fn) + ", which may read " + w
	}
}

// measures says how call, in a test file, measures elapsed real time
// (time.Since(start), time.Until(deadline), time.Now().Sub(start)), or "".
// A test that asserts on a duration it measures would measure the load of
// the tests running beside it too: running it in parallel changes its
// budget. The code under test's own measurements (a rate limiter's) are
// not judged: the test decides what it checks of them.
func (c *checker) measures(call *ast.CallExpr) string {
	if !strings.HasSuffix(c.pass.Fset.Position(call.Pos()).Filename, "_test.go") {
		return ""
	}
	what := ""
	switch {
	case match.IsPkgFunc(c.info, call, "time", "Since", "Until"):
		what = match.PkgFuncName(match.Callee(c.info, call))
	case match.IsMethod(c.info, call, "time", "Sub"):
		sel := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if now, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok && match.IsPkgFunc(c.info, now, "time", "Now") {
			what = "time.Now().Sub"
		}
	}
	if what == "" {
		return ""
	}
	p := c.pass.Fset.Position(call.Pos())
	return fmt.Sprintf("measures elapsed real time (%s at %s:%d), which the tests running beside it would stretch", what, filepath.Base(p.Filename), p.Line)
}
