// Package contract finds the timing contracts of a test: the durations
// the test sets that reach the code under test (a flush interval passed to
// a constructor, a TTL in a config struct, a cooldown set through an
// option or a package variable), and the time bounds its names and
// failure messages state ("within 100ms", "every", "after the TTL").
//
// A rule that replaces a fixed wait by a budget (waitfor's poll,
// attemptloop's deadline) reads it: when the code under test runs on a
// period the test sets and the wait is of the order of that period, the
// wait is the window that checks the period, and a poll with a 10s
// budget passes a period many times too long. Keeping the rest of the
// window does not help: the poll has already waited past it. Only
// virtual time (a synctest bubble, the sleep rule's) keeps such a window
// exact, so the budget rules report the wait instead of fixing it.
package contract

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"time"

	"github.com/unflake/unflake/internal/match"
)

// Factor bounds "of the order of": a duration d the test sets binds a
// wait w when w <= Factor×d (the window holds Factor periods or fewer,
// so a period a few times too long shows in it) and d is shorter than
// the budget that would replace the wait (a budget that runs out before
// d cannot wait for it either). A wait of more than Factor periods only
// catches a period more than Factor times too long: a poll loses little
// there, and such waits (a 1s settle over a 5ms tick) are common.
const Factor = 20

// A Duration is a time.Duration value the test sets that reaches the code
// under test.
type Duration struct {
	Value time.Duration
	Known bool   // Value is known (a constant, or a local that holds one)
	Role  string // what the code calls it: the parameter, field or variable name ("flushEvery")
	Site  string // how the test sets it: "NewBatcher(..., 50 * time.Millisecond)"
	Where string // "batch_test.go:12"
	// Own marks a duration of the code under test's own (Finder.Own):
	// Site is the wait or deadline that uses it, Role is empty.
	Own bool
}

// describe words d for a reason: "the 50ms the test sets as flushEvery
// (NewBatcher(..., 50 * time.Millisecond) at batch_test.go:12)".
func (d Duration) describe() string {
	if d.Own {
		if d.Known {
			return fmt.Sprintf("its own %s (%s at %s)", match.FormatDuration(d.Value), d.Site, d.Where)
		}
		return fmt.Sprintf("a duration of its own (%s at %s)", d.Site, d.Where)
	}
	v := "the duration"
	if d.Known {
		v = "the " + match.FormatDuration(d.Value)
	}
	// A one-letter parameter (d, t) names nothing a reader knows.
	as := ""
	if len(d.Role) > 1 {
		as = " as " + d.Role
	}
	return fmt.Sprintf("%s the test sets%s (%s at %s)", v, as, d.Site, d.Where)
}

// A Finder finds the durations the tests of one package set.
type Finder struct {
	fset  *token.FileSet
	info  *types.Info
	decls map[*types.Func]*ast.FuncDecl
	files []*ast.File
	calls map[*ast.FuncDecl][]*ast.FuncDecl // callee → the declarations that call it (built on first use)
	seams map[*types.Var]string             // function variables and fields → the clock function of the time package they may hold (built on first use)
}

// NewFinder returns a Finder over the package's files (every file: the
// code under test's declarations tell test helpers from it).
func NewFinder(fset *token.FileSet, info *types.Info, decls map[*types.Func]*ast.FuncDecl, files []*ast.File) *Finder {
	return &Finder{fset: fset, info: info, decls: decls, files: files}
}

// helperDepth bounds how deep Set follows the test files' helpers.
const helperDepth = 3

// Set returns the durations the function fn (a test, a subtest's literal
// or a helper) sets before the position before (token.NoPos: anywhere in
// it) that reach the code under test, directly or through the helpers of
// the test files it calls.
func (f *Finder) Set(fn ast.Node, before token.Pos) []Duration {
	var out []Duration
	f.scan(fn, before, 0, map[ast.Node]bool{}, &out)
	return out
}

// scan adds to out the durations root sets before the position before.
func (f *Finder) scan(root ast.Node, before token.Pos, depth int, seen map[ast.Node]bool, out *[]Duration) {
	if root == nil || seen[root] {
		return
	}
	seen[root] = true
	ev := &evaluator{info: f.info, root: root}
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil || before.IsValid() && n.Pos() >= before {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			f.call(ev, n, before, depth, seen, out)
		case *ast.CompositeLit:
			f.composite(ev, n, out)
		case *ast.AssignStmt:
			f.assign(ev, n, out)
		}
		return true
	})
}

// call adds the duration arguments of call when it calls the code under
// test, and follows a helper of the test files.
func (f *Finder) call(ev *evaluator, call *ast.CallExpr, before token.Pos, depth int, seen map[ast.Node]bool, out *[]Duration) {
	if tv, ok := f.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
		return // a conversion or a builtin: not code under test
	}
	fn := match.Callee(f.info, call)
	var sig *types.Signature
	switch {
	case fn == nil:
		// A function value: it may be the code under test's.
		if t := f.info.TypeOf(call.Fun); t != nil {
			sig, _ = t.Underlying().(*types.Signature)
		}
	case fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) || framework(fn.Pkg().Path()):
		return
	case f.inTest(fn.Pos()):
		if depth < helperDepth {
			if fd := f.decls[fn.Origin()]; fd != nil {
				f.scan(fd.Body, token.NoPos, depth+1, seen, out)
			}
		}
		return
	default:
		sig = fn.Type().(*types.Signature)
	}
	for i, a := range call.Args {
		role := ""
		if sig != nil && sig.Params().Len() > 0 {
			role = sig.Params().At(min(i, sig.Params().Len()-1)).Name()
		}
		if isDuration(f.info.TypeOf(a)) {
			*out = append(*out, f.duration(ev, a, role, callSite(call, i), a.Pos()))
		} else if d, ok := spec(f.info, a); ok {
			*out = append(*out, Duration{Value: d, Known: true, Role: role, Site: callSite(call, i), Where: f.where(a.Pos())})
		}
	}
}

// composite adds the duration fields of a struct literal of the code
// under test (a config, an options struct).
func (f *Finder) composite(ev *evaluator, lit *ast.CompositeLit, out *[]Duration) {
	t := f.info.TypeOf(lit)
	if t == nil || !f.underTest(t) {
		return
	}
	st, ok := deref(t).Underlying().(*types.Struct)
	if !ok {
		return
	}
	for i, e := range lit.Elts {
		v, role := e, ""
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			v = kv.Value
			if id, ok := kv.Key.(*ast.Ident); ok {
				role = id.Name
			}
		} else if i < st.NumFields() {
			role = st.Field(i).Name()
		}
		if !isDuration(f.info.TypeOf(v)) {
			continue
		}
		site := fmt.Sprintf("%s{%s: %s}", types.ExprString(lit.Type), role, types.ExprString(v))
		if lit.Type == nil {
			site = fmt.Sprintf("{%s: %s}", role, types.ExprString(v))
		}
		*out = append(*out, f.duration(ev, v, role, site, v.Pos()))
	}
}

// assign adds a duration the test assigns to a field of the code under
// test's type (s.Interval = d) or to one of its package variables
// (reapInterval = d, pkg.Period = d).
func (f *Finder) assign(ev *evaluator, a *ast.AssignStmt, out *[]Duration) {
	if a.Tok == token.DEFINE || len(a.Lhs) != len(a.Rhs) {
		return
	}
	for i, l := range a.Lhs {
		r := a.Rhs[i]
		if !isDuration(f.info.TypeOf(r)) {
			continue
		}
		var obj types.Object
		switch l := ast.Unparen(l).(type) {
		case *ast.Ident:
			obj = f.info.Uses[l]
		case *ast.SelectorExpr:
			obj = f.info.Uses[l.Sel]
			if sel, ok := f.info.Selections[l]; ok && sel.Kind() == types.FieldVal {
				if !f.underTest(sel.Recv()) {
					continue
				}
				*out = append(*out, f.duration(ev, r, obj.Name(), types.ExprString(l)+" = "+types.ExprString(r), r.Pos()))
				continue
			}
		}
		v, ok := obj.(*types.Var)
		if !ok || !match.IsPackageLevel(v) || v.Pkg() == nil || match.IsStd(v.Pkg().Path()) || f.inTest(v.Pos()) {
			continue
		}
		*out = append(*out, f.duration(ev, r, v.Name(), types.ExprString(l)+" = "+types.ExprString(r), r.Pos()))
	}
}

func (f *Finder) duration(ev *evaluator, e ast.Expr, role, site string, pos token.Pos) Duration {
	d := Duration{Role: role, Site: site, Where: f.where(pos)}
	d.Value, d.Known = ev.value(e, 0)
	return d
}

func (f *Finder) where(pos token.Pos) string {
	p := f.fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// inTest reports whether pos is in a _test.go file: a helper of the tests,
// not code under test.
func (f *Finder) inTest(pos token.Pos) bool {
	if !pos.IsValid() {
		return false
	}
	tf := f.fset.File(pos)
	return tf != nil && strings.HasSuffix(tf.Name(), "_test.go")
}

// underTest reports whether t (or what it points to) is a named type of
// the code under test: declared outside the standard library, the test
// frameworks and the test files.
func (f *Finder) underTest(t types.Type) bool {
	n, ok := types.Unalias(deref(t)).(*types.Named)
	if !ok {
		return false
	}
	obj := n.Obj()
	return obj.Pkg() != nil && !match.IsStd(obj.Pkg().Path()) && !framework(obj.Pkg().Path()) && !f.inTest(obj.Pos())
}

// Callers returns the declarations of the package that call fd's function
// (a helper's tests), in file order.
func (f *Finder) Callers(fd *ast.FuncDecl) []*ast.FuncDecl {
	if f.calls == nil {
		f.calls = map[*ast.FuncDecl][]*ast.FuncDecl{}
		for _, file := range f.files {
			for _, d := range file.Decls {
				caller, ok := d.(*ast.FuncDecl)
				if !ok || caller.Body == nil {
					continue
				}
				called := map[*ast.FuncDecl]bool{}
				ast.Inspect(caller.Body, func(n ast.Node) bool {
					if call, ok := n.(*ast.CallExpr); ok {
						if fn := match.Callee(f.info, call); fn != nil {
							if callee := f.decls[fn.Origin()]; callee != nil && callee != caller && !called[callee] {
								called[callee] = true
								f.calls[callee] = append(f.calls[callee], caller)
							}
						}
					}
					return true
				})
			}
		}
	}
	return f.calls[fd]
}

// framework reports whether path is a test framework's (testify, go-cmp,
// gomock), whose calls take durations for their own polls, or a fake
// clock's, whose Add(d) and Advance(d) move the test's own clock: the
// code under test's periods then run on it, and a real sleep beside it
// only lets goroutines react.
func framework(path string) bool {
	for _, p := range []string{
		"github.com/stretchr/testify", "github.com/google/go-cmp", "go.uber.org/mock", "github.com/golang/mock",
		"github.com/onsi/gomega", "github.com/onsi/ginkgo", "gotest.tools",
		"github.com/benbjohnson/clock", "github.com/jonboulle/clockwork", "k8s.io/utils/clock/testing",
		"github.com/coder/quartz", "code.cloudfoundry.org/clock/fakeclock",
	} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// spec returns the period a string constant argument spells: a
// schedule "@every 1s" (robfig/cron and its kin) or a duration the code
// parses ("500ms").
func spec(info *types.Info, e ast.Expr) (time.Duration, bool) {
	s, ok := match.ConstString(info, e)
	if !ok {
		return 0, false
	}
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "@every"))
	if s == "" || !strings.ContainsAny(s, "0123456789") {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

func isDuration(t types.Type) bool { return t != nil && match.IsNamed(t, "time", "Duration") }

func deref(t types.Type) types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// callSite names the argument i of call for a reason: "NewBatcher(...,
// 50 * time.Millisecond)".
func callSite(call *ast.CallExpr, i int) string {
	var b strings.Builder
	b.WriteString(types.ExprString(call.Fun))
	b.WriteString("(")
	if i > 0 {
		b.WriteString("..., ")
	}
	b.WriteString(types.ExprString(call.Args[i]))
	if i < len(call.Args)-1 {
		b.WriteString(", ...")
	}
	b.WriteString(")")
	return b.String()
}

// A Window is the wait a budget fix would replace.
type Window struct {
	Wait   time.Duration // the wait's length (a sleep, an attempt loop's total)
	Known  bool          // Wait is known
	Budget time.Duration // the budget that would replace it
	What   string        // the wait, for a reason: "the sleep", "the attempts (3 × 100ms)"
}

// Binds returns the first duration of ds the window w checks: one whose
// value is unknown, or of the order of the wait (w.Wait <= Factor×d, or
// the wait is unknown) and shorter than the budget.
func Binds(w Window, ds []Duration) (Duration, bool) {
	for _, d := range ds {
		if !d.Known || d.Value <= 0 {
			if d.Known {
				continue // zero or negative: no period
			}
			return d, true
		}
		if d.Value >= w.Budget {
			continue
		}
		if !w.Known || w.Wait <= Factor*d.Value {
			return d, true
		}
	}
	return Duration{}, false
}

// Reason words why a budget may not replace the window w that checks the
// duration d the test sets.
func Reason(w Window, d Duration, by string) string {
	return fmt.Sprintf("the code under test runs on %s and %s is the window that checks it: %s would pass a period, interval or timeout many times too long; only virtual time (a synctest bubble, the sleep rule) keeps the window exact", d.describe(), w.What, by)
}

// Checked words what the budget fix excluded, for rule.Change.Checked.
func Checked(ds []Duration) string {
	if len(ds) == 0 {
		return "no duration the test sets reaches the code under test"
	}
	return fmt.Sprintf("the durations the test sets are far from the window (a wait of more than %d periods, or beyond the budget)", Factor)
}

// NoBound is the Checked entry of a test whose words state no time bound.
const NoBound = "no time bound in the test's names or failure messages"

// BoundReason words why a budget may not replace the window w when the
// test's words state a time bound: where says which ("its name", "the
// subtest name \"every 50ms\"", "a failure message"), phrase what.
func BoundReason(w Window, where, phrase, by string) string {
	return fmt.Sprintf("%s states a time bound (%q) and %s is the window that checks it: %s would pass code many times too slow; only virtual time (a synctest bubble, the sleep rule) keeps the window exact", where, phrase, w.What, by)
}
