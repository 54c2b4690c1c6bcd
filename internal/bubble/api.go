package bubble

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// SynctestVersion is the first go version with testing/synctest.Test.
const SynctestVersion = "go1.25"

// Targets returns the tests and subtests found by Analyze, in source
// order of discovery.
func (a *Analysis) Targets() []*Target { return a.targets }

// InBubble reports whether fn, a *ast.FuncLit or a *ast.FuncDecl, is
// run by synctest.Test or synctest.Run: a literal passed to it, or a
// function of the package it names (synctest.Test(t, testX)).
func (a *Analysis) InBubble(fn ast.Node) bool { return a.bubbles[fn] }

// funcBody is the body of a *ast.FuncLit or *ast.FuncDecl.
func funcBody(fn ast.Node) *ast.BlockStmt {
	switch fn := fn.(type) {
	case *ast.FuncLit:
		return fn.Body
	case *ast.FuncDecl:
		return fn.Body
	}
	panic(fmt.Sprintf("bubble: a function of type %T", fn))
}

// Bubbled reports whether an existing bubble reaches the wait stmt.
func (a *Analysis) Bubbled(stmt *ast.ExprStmt) bool { return a.bubbled[stmt] }

// Editable reports whether f is a test file a rule may rewrite: a
// _test.go file that is not generated.
func (a *Analysis) Editable(f *ast.File) bool {
	name := a.pass.Fset.File(f.Pos()).Name()
	return strings.HasSuffix(name, "_test.go") && !ast.IsGenerated(f)
}

// TargetOf returns the innermost target whose body holds pos, or nil.
func (a *Analysis) TargetOf(pos token.Pos) *Target {
	var best *Target
	for _, t := range a.targets {
		if t.body.Pos() <= pos && pos < t.body.End() && (best == nil || best.body.Pos() <= t.body.Pos()) {
			best = t
		}
	}
	return best
}

// VersionReason says why synctest is not available to f, or "".
func (a *Analysis) VersionReason(f *ast.File) string {
	v := a.pass.FileVersion(f)
	switch {
	case v == "":
		return "the module's go version is unknown; synctest needs " + SynctestVersion
	case !a.pass.FileUsesGo(f, SynctestVersion):
		return "the module's go version is " + v + "; synctest needs " + SynctestVersion
	}
	return ""
}

// Name names the test ("TestX" or "TestX/sub").
func (t *Target) Name() string { return t.name }

// Fn is the *ast.FuncDecl or *ast.FuncLit of the test.
func (t *Target) Fn() ast.Node { return t.fn }

// Body is the test's body.
func (t *Target) Body() *ast.BlockStmt { return t.body }

// File is the file holding the test.
func (t *Target) File() *ast.File { return t.file }

// Reaches reports whether the test reaches the wait stmt, in its body or
// in a function of the package it calls.
func (t *Target) Reaches(stmt *ast.ExprStmt) bool { return t.sites[stmt] }

// Sites returns the waits on the real clock the test reaches (in its body
// and the package's functions it calls), in source order: what a wrap
// puts on the virtual clock.
func (t *Target) Sites() []*ast.ExprStmt {
	out := make([]*ast.ExprStmt, 0, len(t.sites))
	for s := range t.sites {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *ast.ExprStmt) int { return int(a.Pos() - b.Pos()) })
	return out
}

// Blocked says why the test cannot run in a bubble, the first reason the
// walk met, or "". Blockers gives every reason.
func (t *Target) Blocked() string {
	t.resolve()
	return first(t.blocked)
}

// Unproven says why the analysis cannot show the test can run in a
// bubble, the first reason the walk met, or "". Blockers gives every
// reason.
func (t *Target) Unproven() string {
	t.resolve()
	return first(t.unproven)
}

func first(r reasons) string {
	if len(r.list) == 0 {
		return ""
	}
	return r.list[0]
}

// Blockers returns all that stands between targets (the tests that reach
// one site) and a bubble, each reason once: blocked, why they cannot run
// in one, the go version first (VersionReason), then each target's
// reasons in the order the walk met them; and unproven, why the analysis
// cannot show that they can, in the same order. qualify, when not nil,
// rewrites a target's reason for the site (naming the test it is about,
// say); a reason two targets share is given once, qualified by the first.
func (a *Analysis) Blockers(targets []*Target, qualify func(t *Target, why string) string) (blocked, unproven []string) {
	seen := map[string]bool{}
	add := func(list *[]string, t *Target, why string) {
		if why == "" || seen[why] {
			return
		}
		seen[why] = true
		if qualify != nil {
			why = qualify(t, why)
		}
		*list = append(*list, why)
	}
	for _, t := range targets {
		add(&blocked, t, a.VersionReason(t.File()))
	}
	for _, t := range targets {
		t.resolve()
		for _, why := range t.blocked.list {
			add(&blocked, t, why)
		}
	}
	for _, t := range targets {
		for _, why := range t.unproven.list {
			add(&unproven, t, why)
		}
	}
	return blocked, unproven
}

// Spawn names the first goroutine start seen in the test, in its body or
// in a function of the package it calls ("a go statement in Start",
// "time.AfterFunc"), or is "". A sleep in such a test may be letting
// that goroutine run.
func (t *Target) Spawn() string {
	t.resolve()
	return t.spawn
}

// Wait returns the time.Sleep or time.After call of a wait statement
// (time.Sleep(d) or <-time.After(d)), or nil; after reports the latter.
func Wait(info *types.Info, stmt *ast.ExprStmt) (call *ast.CallExpr, after bool) {
	switch x := ast.Unparen(stmt.X).(type) {
	case *ast.CallExpr:
		if len(x.Args) == 1 && match.IsPkgFunc(info, x, "time", "Sleep") {
			return x, false
		}
	case *ast.UnaryExpr:
		if call, ok := ast.Unparen(x.X).(*ast.CallExpr); ok && x.Op == token.ARROW && len(call.Args) == 1 && match.IsPkgFunc(info, call, "time", "After") {
			return call, true
		}
	}
	return nil, false
}

// SleepHelper returns the call of stmt when it calls a sleep helper of the
// module (testutil.Sleep(d), sleeping d times a scale the repository
// sets), and the argument that is its duration: a function outside the
// package's test files, taking one time.Duration (beside a *testing.T or
// testing.TB) and returning nothing, whose one effect is a sleep on the
// real clock of its own (its summary). Its call is a wait as time.Sleep's
// is: in a bubble the sleep inside it is virtual. Nil otherwise.
func (a *Analysis) SleepHelper(stmt *ast.ExprStmt) (call *ast.CallExpr, dur ast.Expr) {
	call, ok := ast.Unparen(stmt.X).(*ast.CallExpr)
	if !ok {
		return nil, nil
	}
	fn := match.Callee(a.info, call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return nil, nil
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() != nil || sig.Results().Len() != 0 || sig.Variadic() || sig.Params().Len() != len(call.Args) {
		return nil, nil
	}
	for i := range sig.Params().Len() {
		switch t := sig.Params().At(i).Type(); {
		case match.IsNamed(t, "time", "Duration") && dur == nil:
			dur = call.Args[i]
		case match.IsNamed(t, "testing", "T", "TB"):
		default:
			return nil, nil
		}
	}
	if dur == nil {
		return nil, nil
	}
	if fn.Pkg() == a.pass.Pkg && strings.HasSuffix(a.pass.Fset.Position(fn.Pos()).Filename, "_test.go") {
		return nil, nil // a helper of the test files: the sleep in it is the wait
	}
	sum := a.pass.Effects.Of(fn.Origin())
	if sum == nil || sum.Opaque != "" || sum.RunsBubble || sum.Spin != nil || sum.RealClock != nil || len(sum.Effects) != 1 {
		return nil, nil
	}
	if e := sum.Effects[0]; e.Kind != effect.Timer || len(e.Via) > 2 || !strings.HasPrefix(e.What, "sleeps") {
		return nil, nil
	}
	return call, dur
}

// UsesClock reports whether root, or a function of the package it calls
// (transitively), waits on the time package: time.Sleep, After, Tick,
// NewTimer, NewTicker, AfterFunc, or a context with a timeout or deadline.
func (a *Analysis) UsesClock(root ast.Node) bool {
	seen := map[*ast.FuncDecl]bool{}
	var uses func(n ast.Node) bool
	uses = func(root ast.Node) bool {
		found := false
		ast.Inspect(root, func(n ast.Node) bool {
			if found {
				return false
			}
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			fn, ok := a.info.Uses[id].(*types.Func)
			if !ok || fn.Pkg() == nil {
				return true
			}
			fn = fn.Origin()
			switch path, name := fn.Pkg().Path(), fn.Name(); {
			case path == "time" && fn.Type().(*types.Signature).Recv() == nil:
				switch name {
				case "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc":
					found = true
				}
			case path == "context":
				switch name {
				case "WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause":
					found = true
				}
			case fn.Pkg() == a.pass.Pkg:
				if decl := a.decls[fn]; decl != nil && decl.Body != nil && !seen[decl] {
					seen[decl] = true
					found = uses(decl.Body)
				}
			}
			return !found
		})
		return found
	}
	return uses(root)
}

// Opaque returns the first call root makes, directly or through functions
// of the package, into code the analysis cannot see (a function of another
// non-standard package, a method called through an interface, a function
// value), described for a message, or "" when it can see everything root
// runs. Such code may wait on the clock without UsesClock knowing.
func (a *Analysis) Opaque(root ast.Node) string {
	seen := map[*ast.FuncDecl]bool{}
	var opaque func(n ast.Node) string
	opaque = func(root ast.Node) string {
		found := ""
		ast.Inspect(root, func(n ast.Node) bool {
			if found != "" {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if tv, ok := a.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
				return true // a conversion or a builtin
			}
			fn := match.Callee(a.info, call)
			switch {
			case fn == nil:
				found = "a function value (" + types.ExprString(call.Fun) + ")"
			case fn.Pkg() == nil:
			case fn.Pkg() == a.pass.Pkg:
				recv := fn.Type().(*types.Signature).Recv()
				if recv != nil && types.IsInterface(recv.Type()) {
					found = match.PkgFuncName(fn) + " through an interface"
				} else if decl := a.decls[fn.Origin()]; decl != nil && decl.Body != nil && !seen[decl] {
					seen[decl] = true
					found = opaque(decl.Body)
				}
			case match.IsStd(fn.Pkg().Path()):
				if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
					found = match.PkgFuncName(fn) + " through an interface"
				}
			case match.IsAssertion(fn.Pkg().Path(), fn.Name()):
			default:
				found = match.PkgFuncName(fn)
			}
			return found == ""
		})
		return found
	}
	return opaque(root)
}

// InlineMax is the longest body, in lines, that Wrap moves into a
// func literal. A longer body of a top-level test moves into a function
// of its own, so that its lines keep their indentation and the diff is
// as long as the change, not as long as the test.
const InlineMax = 10

// Wrap runs the body of t, after a leading t.Parallel() and the skips
// that follow it (a skip inside a bubble makes the test pass, not skip), in a synctest
// bubble. A top-level test function whose body is longer than InlineMax
// lines keeps its name, doc and directives and runs its body, moved
// unchanged into an unexported function declared right after it:
//
//	func TestX(t *testing.T) {
//		synctest.Test(t, testX)
//	}
//
//	func testX(t *testing.T) {
//		body
//	}
//
// A shorter body, a subtest's func literal (which may capture the
// enclosing test's variables) and a test method (whose body uses its
// receiver) are wrapped in place instead:
//
//	synctest.Test(t, func(t *testing.T) { body })
func (a *Analysis) Wrap(t *Target) error {
	var body *dst.BlockStmt
	var decl *dst.FuncDecl
	switch fn := a.pass.Dst(t.fn).(type) {
	case *dst.FuncDecl:
		body, decl = fn.Body, fn
	case *dst.FuncLit:
		body = fn.Body
	default:
		return fmt.Errorf("a test of type %T", fn)
	}
	start := t.lead
	moved := append([]dst.Stmt(nil), body.List[start:]...)
	if len(moved) == 0 {
		return nil
	}
	a.overshoot(t)
	a.overshootTimers(t)
	if decl != nil && decl.Recv == nil && a.lines(t) > InlineMax {
		return a.wrapFunc(t, decl, start)
	}
	lead := moved[0].Decorations().Before
	moved[0].Decorations().Before = dst.NewLine
	lit := &dst.FuncLit{
		Type: &dst.FuncType{Func: true, Params: a.testParams(t)},
		Body: &dst.BlockStmt{List: moved},
	}
	call := &dst.ExprStmt{X: &dst.CallExpr{
		Fun:  &dst.Ident{Path: "testing/synctest", Name: "Test"},
		Args: []dst.Expr{dst.NewIdent(t.param), lit},
	}}
	call.Decs.Before = lead
	body.List = append(body.List[:start:start], call)
	return nil
}

// lines counts the lines of t's body that a wrap moves: from the first
// statement after a leading t.Parallel() to the closing brace.
func (a *Analysis) lines(t *Target) int {
	first := t.body.List[t.lead]
	return a.pass.Fset.Position(t.body.Rbrace).Line - a.pass.Fset.Position(first.Pos()).Line
}

// testParams is the parameter list (t *testing.T), with t's own name.
func (a *Analysis) testParams(t *Target) *dst.FieldList {
	return &dst.FieldList{List: []*dst.Field{{
		Names: []*dst.Ident{dst.NewIdent(t.param)},
		Type:  &dst.StarExpr{X: &dst.Ident{Path: "testing", Name: "T"}},
	}}}
}

// wrapFunc is Wrap's function form: the body of decl after its first
// start statements moves, block and all, into a new unexported function
// declared after decl, and decl runs it with synctest.Test. The moved
// block keeps its comments, and its lines keep their indentation.
func (a *Analysis) wrapFunc(t *Target, decl *dst.FuncDecl, start int) error {
	name := a.freeName(t)
	file, ok := a.pass.Dst(t.file).(*dst.File)
	if !ok {
		return errors.New("a test file that does not decorate to a *dst.File")
	}
	body := decl.Body
	kept := append([]dst.Stmt(nil), body.List[:start]...)
	body.List = body.List[start:]
	lead := body.List[0].Decorations().Before
	body.List[0].Decorations().Before = dst.NewLine
	fn := &dst.FuncDecl{
		Name: dst.NewIdent(name),
		Type: &dst.FuncType{Func: true, Params: a.testParams(t)},
		Body: body,
	}
	fn.Decs.Before = dst.EmptyLine
	fn.Decs.After = dst.EmptyLine
	// A comment on the line of the test's closing brace stays with the
	// test; comments on the lines below it (the end of the file, say)
	// stay below the body, after the new function.
	end := decl.Decs.End.All()
	for i, d := range end {
		if d == "\n" {
			fn.Decs.End.Replace(end[i:]...)
			decl.Decs.End.Replace(end[:i]...)
			break
		}
	}
	call := &dst.ExprStmt{X: &dst.CallExpr{
		Fun:  &dst.Ident{Path: "testing/synctest", Name: "Test"},
		Args: []dst.Expr{dst.NewIdent(t.param), dst.NewIdent(name)},
	}}
	call.Decs.Before = lead
	call.Decs.After = dst.NewLine
	decl.Body = &dst.BlockStmt{List: append(kept, call)}
	for i, d := range file.Decls {
		if d == decl {
			file.Decls = append(file.Decls[:i+1], append([]dst.Decl{fn}, file.Decls[i+1:]...)...)
			return nil
		}
	}
	return errors.New("a test not among its file's declarations")
}

// freeName returns a name for the function that runs t's body: t's name
// with a lower-case first letter (TestX: testX), followed by the first
// number that makes it free in the package (and in its files the build
// leaves out), in the file's imports and among the names earlier wraps
// declared.
func (a *Analysis) freeName(t *Target) string {
	base := "t" + t.name[1:]
	taken := func(name string) bool {
		if a.named[name] || a.pass.Pkg.Scope().Lookup(name) != nil {
			return true
		}
		if a.pass.Excluded != nil && a.pass.Excluded(name) {
			return true
		}
		for _, imp := range t.file.Imports {
			if pn := a.info.PkgNameOf(imp); pn != nil && pn.Name() == name {
				return true
			}
		}
		return false
	}
	name := base
	for i := 2; taken(name); i++ {
		name = base + strconv.Itoa(i)
	}
	a.named[name] = true
	return name
}

// subtestName names a subtest for messages: Parent/name.
func subtestName(parent string, call *ast.CallExpr) string {
	if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
		if s, err := strconv.Unquote(lit.Value); err == nil {
			return parent + "/" + s
		}
	}
	return parent + "/…"
}
