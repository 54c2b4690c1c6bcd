// Package bubble decides which tests can run in a testing/synctest bubble
// and wraps them in one. The sleep and wallclock rules share it.
package bubble

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"strings"
	"time"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// An Analysis decides, for each test of a package, whether its body can
// run in a synctest bubble.
type Analysis struct {
	pass  *rule.Pass
	info  *types.Info
	decls map[*types.Func]*ast.FuncDecl // every function declared in the package

	targets  []*Target
	subtests map[*ast.FuncLit]*Target // subtest bodies that are targets themselves
	bubbles  map[ast.Node]bool        // func literals and declared functions run by synctest.Test or synctest.Run
	// bubbleRefs holds the identifiers naming a declared function as
	// synctest.Test's body: a reference that runs it in the bubble, not
	// in the test.
	bubbleRefs map[*ast.Ident]bool
	bubbled    map[*ast.ExprStmt]bool // waits a bubble reaches
	helperVars map[*types.Var][]int   // package-level variables holding a bubble helper (varHelpers)
	cgo        bool
	runner     *Runner // which arguments a call runs in a bubble

	// helpers holds what walking each helper's body tells a target, in
	// the order the walk meets it: a package helper is walked once, not
	// once per test that reaches it (fiber's tests reach most of fiber).
	helpers map[*ast.FuncDecl][]event

	// named holds the package-level names Wrap has declared in this
	// pass, so two wraps never pick the same one.
	named map[string]bool
}

// A Target is a body a rule may wrap in synctest.Test: a top-level test
// function or a subtest's func literal.
type Target struct {
	name     string
	fn       ast.Node // *ast.FuncDecl or *ast.FuncLit
	body     *ast.BlockStmt
	file     *ast.File
	param    string   // the name of its *testing.T parameter
	parallel ast.Stmt // a leading t.Parallel(), kept outside the bubble
	sites    map[*ast.ExprStmt]bool

	// blocked says why the body cannot run in a bubble; unproven why the
	// analysis cannot show that it can.
	blocked, unproven string

	// spawn names the first goroutine start the walk saw ("a go
	// statement in Start", "time.AfterFunc"), whatever else made the
	// test unproven or blocked, or is "".
	spawn string

	// events is what walking the test told it, not yet applied: the
	// waits it reaches are known at once (sites), its outcome (blocked,
	// unproven, spawn) only when read (resolve), because deciding a call
	// into another package may load that package from source, and most
	// tests reach no wait a rule reports.
	a      *Analysis
	events []event
}

// resolve applies the target's recorded events, in order, once.
func (t *Target) resolve() {
	if t.events == nil {
		return
	}
	evs := t.events
	t.events = nil
	w := &walker{a: t.a, t: t, seen: map[*ast.FuncDecl]bool{}}
	w.replay(evs)
}

// Scan is the analysis whose result is what the package already runs in
// synctest bubbles (and whether it uses cgo), shared by the rules that
// require it: New reads it.
var Scan = &rule.Analysis{
	Name:     "bubbles",
	Doc:      "finds the function literals and functions the package already runs in synctest bubbles",
	Requires: []*rule.Analysis{match.Decls},
	Run:      func(pass *rule.Pass) (any, error) { return scan(pass), nil },
}

// A scanned package is the result of Scan. Rules only read it.
type scanned struct {
	decls      map[*types.Func]*ast.FuncDecl // every function declared in the package
	bubbles    map[ast.Node]bool
	bubbleRefs map[*ast.Ident]bool
	cgo        bool
	helperVars map[*types.Var][]int // package-level variables holding a bubble helper (varHelpers)
}

func scan(pass *rule.Pass) *scanned {
	sc := &scanned{
		decls:      match.DeclsOf(pass),
		bubbles:    map[ast.Node]bool{},
		bubbleRefs: map[*ast.Ident]bool{},
	}
	runner := NewRunner(pass.TypesInfo, pass.Effects)
	var runs []*ast.Ident                                         // functions named as synctest.Test's body
	vars, varRuns := map[*types.Var]bool{}, map[*ast.Ident]bool{} // variables and fields named as a bubble's body
	helperVars := varHelpers(pass.AllFiles, pass.TypesInfo)
	sc.helperVars = helperVars
	for _, f := range pass.AllFiles {
		for _, imp := range f.Imports {
			// import "C" in the source; in the files cgo compiled
			// from it (what the loader parses), runtime/cgo.
			if imp.Path.Value == `"C"` || imp.Path.Value == `"runtime/cgo"` {
				sc.cgo = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				args := runner.Args(call)
				if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
					if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok {
						for _, i := range helperVars[v] {
							if i < len(call.Args) {
								args = append(args, call.Args[i])
							}
						}
					}
				}
				for _, arg := range args {
					switch arg := ast.Unparen(arg).(type) {
					case *ast.FuncLit:
						sc.bubbles[arg] = true
					case *ast.Ident:
						runs = append(runs, arg) // synctest.Test(t, testX), Wrap's function form
					}
					if v, id := bubbleVar(pass.TypesInfo, arg); v != nil {
						vars[v], varRuns[id] = true, true
					}
				}
			}
			return true
		})
	}
	for _, lit := range flows(pass.AllFiles, pass.TypesInfo, vars, varRuns) {
		sc.bubbles[lit] = true
	}
	for _, id := range runs {
		if fn, ok := pass.TypesInfo.Uses[id].(*types.Func); ok && sc.decls[fn] != nil && sc.decls[fn].Body != nil {
			sc.bubbles[sc.decls[fn]] = true
			sc.bubbleRefs[id] = true
		}
	}
	return sc
}

// New prepares the analysis of pass, whose rule requires Scan: the
// bubbles the package already has. Analyze walks the tests.
func New(pass *rule.Pass) *Analysis {
	sc := pass.ResultOf[Scan].(*scanned)
	return &Analysis{
		pass:       pass,
		info:       pass.TypesInfo,
		decls:      sc.decls,
		subtests:   map[*ast.FuncLit]*Target{},
		bubbles:    sc.bubbles,
		bubbleRefs: sc.bubbleRefs,
		helperVars: sc.helperVars,
		bubbled:    map[*ast.ExprStmt]bool{},
		helpers:    map[*ast.FuncDecl][]event{},
		named:      map[string]bool{},
		cgo:        sc.cgo,

		runner: NewRunner(pass.TypesInfo, pass.Effects),
	}
}

// takesTest reports whether t is a function type with a *testing.T or
// testing.TB parameter.
func takesTest(t types.Type) bool {
	sig, ok := t.Underlying().(*types.Signature)
	if !ok {
		return false
	}
	for i := 0; i < sig.Params().Len(); i++ {
		if match.IsNamed(sig.Params().At(i).Type(), "testing", "T", "TB") {
			return true
		}
	}
	return false
}

// Analyze finds the targets in the test files and walks each.
func (a *Analysis) Analyze() {
	for _, f := range a.pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			// Test methods with a *testing.T parameter count too: suites such
			// as grpc's (func (s) TestX(t *testing.T)) run them as subtests.
			if !ok || fd.Body == nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Name.Name == "TestMain" {
				continue
			}
			if t := a.newTarget(f, fd.Name.Name, fd, fd.Type, fd.Body); t != nil {
				a.targets = append(a.targets, t)
				a.findSubtests(f, t.name, fd.Body)
			}
		}
	}
	for _, t := range a.targets {
		a.walkTarget(t)
	}
	// The waits a bubble reaches are on the virtual clock already.
	for fn := range a.bubbles {
		body := funcBody(fn)
		b := &Target{name: "bubble", fn: fn, body: body, sites: map[*ast.ExprStmt]bool{}}
		evs := []event{}
		w := &walker{a: a, rec: &evs}
		w.walk(body, "")
		a.collectSites(b, evs, map[*ast.FuncDecl]bool{})
		for s := range b.sites {
			a.bubbled[s] = true
		}
	}
}

// findSubtests adds the subtests run from root, t.Run(name, func(t
// *testing.T) { ... }), as targets, nested ones too.
func (a *Analysis) findSubtests(f *ast.File, parent string, root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 || !match.IsMethod(a.info, call, "testing", "Run") {
			return true
		}
		lit, ok := call.Args[1].(*ast.FuncLit)
		if !ok {
			return true
		}
		name := subtestName(parent, call)
		if t := a.newTarget(f, name, lit, lit.Type, lit.Body); t != nil {
			a.targets = append(a.targets, t)
			a.subtests[lit] = t
			a.findSubtests(f, name, lit.Body)
			return false
		}
		return true
	})
}

// newTarget returns the target for a function with a single *testing.T
// parameter, or nil.
func (a *Analysis) newTarget(f *ast.File, name string, fn ast.Node, typ *ast.FuncType, body *ast.BlockStmt) *Target {
	if typ.Params == nil || len(typ.Params.List) != 1 || typ.Results != nil && len(typ.Results.List) > 0 {
		return nil
	}
	p := typ.Params.List[0]
	if tv, ok := a.info.Types[p.Type]; !ok || !match.IsNamed(tv.Type, "testing", "T") {
		return nil
	}
	if _, ptr := p.Type.(*ast.StarExpr); !ptr {
		return nil
	}
	t := &Target{name: name, fn: fn, body: body, file: f, sites: map[*ast.ExprStmt]bool{}}
	switch {
	case len(p.Names) == 1 && p.Names[0].Name != "_":
		t.param = p.Names[0].Name
	default:
		t.blocked = "the test's *testing.T parameter has no name"
	}
	if !a.Editable(f) {
		t.blocked = "the test is in a generated file"
	}
	if a.cgo {
		t.blocked = "the package uses cgo, which a synctest bubble cannot follow"
	}
	if len(body.List) > 0 {
		if es, ok := body.List[0].(*ast.ExprStmt); ok {
			if call, ok := es.X.(*ast.CallExpr); ok && len(call.Args) == 0 && match.IsMethod(a.info, call, "testing", "Parallel") {
				t.parallel = es
			}
		}
	}
	return t
}

func (a *Analysis) walkTarget(t *Target) {
	evs := []event{}
	w := &walker{a: a, rec: &evs}
	w.endedAt(t.body)
	for _, s := range t.body.List {
		if s != t.parallel {
			w.walk(s, "")
		}
	}
	if lit, ok := t.fn.(*ast.FuncLit); ok {
		w.captures(lit)
	}
	t.a, t.events = a, evs
	a.collectSites(t, evs, map[*ast.FuncDecl]bool{})
}

// collectSites marks the waits that events, and the helpers they call,
// reach.
func (a *Analysis) collectSites(t *Target, evs []event, seen map[*ast.FuncDecl]bool) {
	for _, e := range evs {
		switch e.kind {
		case evSite:
			t.sites[e.site] = true
		case evCall:
			if !seen[e.decl] {
				seen[e.decl] = true
				a.collectSites(t, a.events(e.decl), seen)
			}
		}
	}
}

// walker walks a target's body and, transitively, the functions of the
// package it refers to. A walker with rec set records what a helper's body
// tells any target instead (Analysis.events).
type walker struct {
	a    *Analysis
	t    *Target
	seen map[*ast.FuncDecl]bool
	rec  *[]event

	// ended holds, for the function identifier of a call whose result
	// the walked code assigns to a variable, the methods of that
	// variable it calls at cleanup (see endedAt). A call and its cleanup
	// are in the same body, so a helper's events can be recorded once.
	ended map[*ast.Ident]map[string]bool
}

// An event is one thing walking a helper's body tells a target, or a call
// of another helper whose events follow at that point.
type event struct {
	kind  eventKind
	why   string          // block, spawn, unprove; where, for other
	site  *ast.ExprStmt   // site
	decl  *ast.FuncDecl   // call
	fn    *types.Func     // other
	iface bool            // other: fn is called through an interface
	ended map[string]bool // other: the methods its result is ended by
}

type eventKind uint8

const (
	evBlock eventKind = iota
	evSpawn
	evUnprove
	evSite
	evCall
	evOther
)

func (w *walker) block(why string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evBlock, why: why})
		return
	}
	if w.t.blocked == "" {
		w.t.blocked = why
	}
}

func (w *walker) spawned(what string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evSpawn, why: what})
		return
	}
	if w.t.spawn == "" {
		w.t.spawn = what
	}
}

func (w *walker) unprove(why string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evUnprove, why: why})
		return
	}
	if w.t.unproven == "" {
		w.t.unproven = why
	}
}

func (w *walker) site(s *ast.ExprStmt) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evSite, site: s})
		return
	}
	w.t.sites[s] = true
}

// helper walks the body of the package's function decl, once per target:
// the events of its body, recorded on first use, replayed in order, and
// the helpers it calls at the points it calls them, exactly as walking
// the body again would.
func (w *walker) helper(decl *ast.FuncDecl) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evCall, decl: decl})
		return
	}
	if w.seen[decl] {
		return
	}
	w.seen[decl] = true
	w.replay(w.a.events(decl))
}

// replay applies recorded events to the walker's target, in order.
func (w *walker) replay(evs []event) {
	for _, e := range evs {
		switch e.kind {
		case evBlock:
			w.block(e.why)
		case evSpawn:
			w.spawned(e.why)
		case evUnprove:
			w.unprove(e.why)
		case evSite:
			w.site(e.site)
		case evCall:
			w.helper(e.decl)
		case evOther:
			w.other(e.fn, e.iface, e.ended, e.why)
		}
	}
}

// events returns what walking decl's body tells a target, recording it
// on first use.
func (a *Analysis) events(decl *ast.FuncDecl) []event {
	if evs, ok := a.helpers[decl]; ok {
		return evs
	}
	evs := []event{}
	rw := &walker{a: a, rec: &evs}
	rw.endedAt(decl.Body)
	rw.walk(decl.Body, " in "+decl.Name.Name)
	a.helpers[decl] = evs
	return evs
}

// walk walks root; where names the helper it is in (" in helper"), or is
// empty in the test itself.
func (w *walker) walk(root ast.Node, where string) {
	a := w.a
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			if a.subtests[n] != nil || a.bubbles[n] {
				return false // a target of its own, or already in a bubble
			}
		case *ast.GoStmt:
			w.spawned("a go statement" + where)
			w.unprove("the test starts goroutines the analysis cannot show end (a go statement" + where + ")")
		case *ast.ExprStmt:
			if call, _ := Wait(a.info, n); call != nil {
				w.site(n)
			}
		case *ast.CallExpr:
			w.call(n, where)
			w.tinyDuration(n, where)
		case *ast.ForStmt:
			w.spin(n, where)
		case *ast.Ident:
			if a.bubbleRefs[n] {
				return false // synctest.Test(t, testX): testX runs in the bubble, not in the test
			}
			switch obj := a.info.Uses[n].(type) {
			case *types.Func:
				w.fn(obj, n, where)
			case *types.Var:
				w.global(obj, where)
			}
		}
		return true
	})
}

// spin makes the test unproven when loop, in the test or a helper of the
// package, waits for the real clock without ever blocking (for
// time.Since(start) < d {}): in a bubble the clock moves only while every
// goroutine is blocked, so the loop would never end and the test would
// hang. A function the loop calls may block; its summary says.
func (w *walker) spin(loop *ast.ForStmt, where string) {
	blocks := func(fn *types.Func) bool {
		s := w.a.pass.Effects.Of(fn)
		return s != nil && s.Blocks
	}
	if !effects.SpinsOnClock(w.a.info, loop, blocks) {
		return
	}
	p := w.a.pass.Fset.Position(loop.For)
	w.unprove(fmt.Sprintf("the test spins on the real clock in a loop that never blocks (%s:%d%s); %s",
		filepath.Base(p.Filename), p.Line, where, spinHangs))
}

// spinHangs says why a loop spinning on the clock stops a bubble.
const spinHangs = "in a synctest bubble the clock moves only while every goroutine is blocked, so the loop would never end"

// tinyDuration makes the test unproven when a call is given a constant
// duration under a millisecond (a time.Nanosecond TTL, say): such code
// often relies on real time passing between two statements, which it does
// not on a virtual clock, where only waits move time.
func (w *walker) tinyDuration(call *ast.CallExpr, where string) {
	if match.IsPkgFunc(w.a.info, call, "time", "Sleep", "After") {
		return // a wait moves the virtual clock by exactly that much
	}
	for _, arg := range call.Args {
		d, ok := match.ConstDuration(w.a.info, arg)
		if !ok || d <= 0 || d >= time.Millisecond {
			continue
		}
		if tv := w.a.info.Types[arg]; tv.Type == nil || !match.IsNamed(tv.Type, "time", "Duration") {
			continue
		}
		w.unprove(fmt.Sprintf("the test passes a %v duration%s, which may count on real time passing between statements; on a virtual clock only waits move time", d, where))
		return
	}
}

// call checks the calls the testing packages restrict.
func (w *walker) call(call *ast.CallExpr, where string) {
	a := w.a
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if v, ok := a.info.Uses[id].(*types.Var); ok && a.helperVars[v] != nil {
			// var synctestRun = func(...) { synctest.Test(t, f) }: bubbles do not nest.
			w.block("the test already runs code in a synctest bubble (through " + id.Name + ")" + where)
			return
		}
	}
	switch {
	case match.IsPkgFunc(a.info, call, "testing/synctest", "Test", "Run"):
		w.block("the test already runs code in a synctest bubble" + where)
	case match.IsMethod(a.info, call, "testing", "Run"):
		if len(call.Args) == 2 {
			if lit, ok := call.Args[1].(*ast.FuncLit); ok && a.subtests[lit] != nil {
				w.block("the test calls t.Run; its subtests are wrapped instead")
				return
			}
		}
		w.block("the test calls t.Run, which a synctest bubble does not allow" + where)
	case match.IsMethod(a.info, call, "testing", "Parallel"):
		w.block("the test calls t.Parallel other than as its first statement, which a synctest bubble does not allow" + where)
	case match.IsMethod(a.info, call, "testing", "Deadline"):
		w.block("the test calls t.Deadline, which a synctest bubble does not allow" + where)
	}
}

// fn checks a reference (the identifier id) to the function or method
// fn: a call, or a function value that may be called.
func (w *walker) fn(fn *types.Func, id *ast.Ident, where string) {
	fn = fn.Origin()
	pkg := fn.Pkg()
	if pkg == nil {
		return // error.Error
	}
	path := pkg.Path()
	if path == "testing" || path == "testing/synctest" {
		return // checked by call
	}
	if why := hazard(fn); why != "" {
		w.block(fmt.Sprintf(why, match.PkgFuncName(fn)+where))
		return
	}
	if starter(fn) {
		w.spawned(match.PkgFuncName(fn) + where)
		w.unprove("the test starts goroutines the analysis cannot show end (" + match.PkgFuncName(fn) + where + ")")
		return
	}
	if name := fn.Name(); name == "ModTime" && (path == "io/fs" || path == "os") {
		// A bubble's clock starts at midnight UTC 2000-01-01; a file's
		// modification time is real.
		w.unprove("the test reads a file's modification time (" + match.PkgFuncName(fn) + where + "), which is real time, not the bubble's")
		return
	}
	recv := fn.Type().(*types.Signature).Recv()
	iface := recv != nil && types.IsInterface(recv.Type())
	if pkg == w.a.pass.Pkg {
		if decl := w.a.decls[fn]; decl != nil && decl.Body != nil {
			w.helper(decl)
			return
		}
		if iface {
			w.unprove("the test calls " + match.PkgFuncName(fn) + " through an interface the analysis cannot follow" + where)
		}
		return
	}
	if match.IsStd(path) || match.IsAssertion(path, fn.Name()) {
		return
	}
	// A function of another package: its summary decides, when known.
	// A method called through an interface stays unknown: which code
	// runs depends on the value.
	w.other(fn, iface, w.ended[id], where)
}

// other decides a call of fn, a function of another package; ended holds
// the methods of the value it returns that the calling block ends at
// cleanup. Asking for a summary may load fn's package from source, so a
// helper's walk records the call and each target asks when the events
// are replayed, and not at all once nothing the answer could say would
// change the target's outcome.
func (w *walker) other(fn *types.Func, iface bool, ended map[string]bool, where string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evOther, fn: fn, iface: iface, ended: ended, why: where})
		return
	}
	if w.settled() {
		return
	}
	if !iface {
		if s := w.a.pass.Effects.Of(fn); s != nil {
			w.summary(fn, ended, s, where)
			return
		}
	}
	w.unprove("the test calls " + match.PkgFuncName(fn) + ", whose code the analysis cannot see" + where)
}

// settled reports whether nothing more the walk finds can change what the
// target's users read of it: it is blocked (which outranks any reason to
// leave it unproven) and knows the goroutines it starts; both keep their
// first value.
func (w *walker) settled() bool { return w.t.blocked != "" && w.t.spawn != "" }

// global checks a package-level variable: values made outside the bubble
// that belong to the real clock or to no bubble cannot be used inside.
func (w *walker) global(v *types.Var, where string) {
	if v.IsField() || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return
	}
	if kind := bound(v.Type(), map[types.Type]bool{}); kind != "" {
		w.block(fmt.Sprintf("the test uses a package-level %s (%s) made outside the bubble", kind, v.Name()+strings.Replace(where, " in", ", in", 1)))
		return
	}
	if holdsTime(v.Type(), map[types.Type]bool{}) {
		w.unprove(fmt.Sprintf("the test uses a package-level time (%s) read outside the bubble", v.Name()+strings.Replace(where, " in", ", in", 1)))
	}
}

// captures checks the variables a subtest body uses from the enclosing
// test: they were made outside the bubble.
func (w *walker) captures(lit *ast.FuncLit) {
	seen := map[*types.Var]bool{}
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		v, ok := w.a.info.Uses[id].(*types.Var)
		if !ok || v.IsField() || seen[v] || v.Pkg() == nil || v.Parent() == v.Pkg().Scope() {
			return true
		}
		if lit.Pos() <= v.Pos() && v.Pos() < lit.End() {
			return true // declared inside the subtest
		}
		seen[v] = true
		switch {
		case bound(v.Type(), map[types.Type]bool{}) != "":
			w.block(fmt.Sprintf("the subtest uses %s, a %s the enclosing test created outside the bubble", v.Name(), bound(v.Type(), map[types.Type]bool{})))
		case !plain(v.Type(), map[types.Type]bool{}):
			w.unprove(fmt.Sprintf("the subtest uses %s, which the enclosing test created outside the bubble", v.Name()))
		}
		return true
	})
}

// bound returns what kind of value bound to the bubble it was made in (or
// to none) a value of type t holds: a channel, a timer, a wait group, a
// condition variable or a context; or "".
func bound(t types.Type, seen map[types.Type]bool) string {
	t = types.Unalias(t)
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch {
	case match.IsNamed(t, "time", "Timer", "Ticker"):
		return "timer"
	case match.IsNamed(t, "sync", "WaitGroup"):
		return "wait group"
	case match.IsNamed(t, "sync", "Cond"):
		return "condition variable"
	case match.IsNamed(t, "context", "Context"):
		return "context"
	}
	switch u := t.Underlying().(type) {
	case *types.Chan:
		return "channel"
	case *types.Pointer:
		return bound(u.Elem(), seen)
	case *types.Slice:
		return bound(u.Elem(), seen)
	case *types.Array:
		return bound(u.Elem(), seen)
	case *types.Map:
		if k := bound(u.Key(), seen); k != "" {
			return k
		}
		return bound(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if k := bound(u.Field(i).Type(), seen); k != "" {
				return k
			}
		}
	}
	return ""
}

// holdsTime reports whether a value of type t holds a time.Time.
func holdsTime(t types.Type, seen map[types.Type]bool) bool {
	t = types.Unalias(t)
	if seen[t] {
		return false
	}
	seen[t] = true
	if match.IsNamed(t, "time", "Time") {
		return true
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return holdsTime(u.Elem(), seen)
	case *types.Slice:
		return holdsTime(u.Elem(), seen)
	case *types.Array:
		return holdsTime(u.Elem(), seen)
	case *types.Map:
		return holdsTime(u.Key(), seen) || holdsTime(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if holdsTime(u.Field(i).Type(), seen) {
				return true
			}
		}
	}
	return false
}

// plain reports whether a value of type t is plain data: numbers,
// strings, booleans, errors, and structs, arrays, slices and maps of them.
func plain(t types.Type, seen map[types.Type]bool) bool {
	t = types.Unalias(t)
	if seen[t] {
		return true
	}
	seen[t] = true
	if types.Identical(t, types.Universe.Lookup("error").Type()) {
		return true
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return true
	case *types.Slice:
		return plain(u.Elem(), seen)
	case *types.Array:
		return plain(u.Elem(), seen)
	case *types.Map:
		return plain(u.Key(), seen) && plain(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if !plain(u.Field(i).Type(), seen) {
				return false
			}
		}
		return true
	}
	return false
}

// hazard returns, as a format for the function's name, why a test calling
// fn cannot run in a bubble, or "".
func hazard(fn *types.Func) string {
	path, name := fn.Pkg().Path(), fn.Name()
	recv := ""
	if r := fn.Type().(*types.Signature).Recv(); r != nil {
		t := types.Unalias(r.Type())
		if p, ok := t.(*types.Pointer); ok {
			t = types.Unalias(p.Elem())
		}
		if n, ok := t.(*types.Named); ok {
			recv = n.Obj().Name()
		}
	}
	switch path {
	case "net":
		switch recv {
		case "IP", "IPMask", "IPNet", "HardwareAddr", "AddrError", "ParseError", "DNSError", "OpError", "UnknownNetworkError", "InvalidAddrError":
			return ""
		case "":
			switch name {
			case "ParseIP", "ParseCIDR", "ParseMAC", "JoinHostPort", "SplitHostPort", "IPv4", "IPv4Mask", "CIDRMask":
				return ""
			}
		}
		return "the test uses the real network (%s)"
	case "net/http":
		switch recv {
		case "Client", "Transport", "Server":
			return "the test uses the real network (%s)"
		case "":
			switch name {
			case "Get", "Head", "Post", "PostForm", "ListenAndServe", "ListenAndServeTLS", "Serve", "ServeTLS":
				return "the test uses the real network (%s)"
			}
		}
	case "net/http/httptest":
		if recv == "Server" || strings.HasSuffix(name, "Server") {
			return "the test starts a real server (%s)"
		}
	case "net/rpc", "net/smtp", "log/syslog":
		return "the test uses the real network (%s)"
	case "os/exec":
		return "the test runs a real process (%s)"
	case "os/signal":
		return "the test waits on real signals (%s)"
	case "syscall", "plugin", "runtime/cgo":
		return "the test uses %s, which a synctest bubble cannot follow"
	}
	return ""
}

// starter reports whether the standard library function fn starts a
// goroutine of its own.
func starter(fn *types.Func) bool {
	path, name := fn.Pkg().Path(), fn.Name()
	switch {
	case path == "time" && name == "AfterFunc",
		path == "context" && name == "AfterFunc",
		path == "sync" && name == "Go",
		path == "database/sql":
		return true
	}
	return false
}
