// Package bubble decides which tests can run in a testing/synctest bubble
// and wraps them in one. The sleep and wallclock rules share it.
package bubble

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rule/effect"
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
	// impls holds the same for the methods walked as what a call
	// through an interface runs, whose reasons name the interface.
	impls map[*ast.FuncDecl][]event

	// named holds the package-level names Wrap has declared in this
	// pass, so two wraps never pick the same one.
	named map[string]bool
	// overshot holds the waits a wrap has made end a nanosecond late
	// (overshoot.go), so a wait two wrapped tests reach moves once.
	overshot map[*ast.ExprStmt]bool
	// overshotTimers holds the timers of the test's own flow a wrap has
	// made end a nanosecond late (overshootTimers).
	overshotTimers map[*ast.CallExpr]bool

	net netState // the helpers matched as connection pairs (network.go)

	lockWait  *string      // lockwait.go's answer, once read
	goStarts  *bool        // codeStartsGoroutines' answer, once read
	coarse    *string      // builds.go's coarsened reading, once read
	monotonic *string      // monotonic.go's comparison of times by value, once read
	files     *[]*lockFile // the package's non-test files of every build, once parsed (codeFiles)
	modCode   *[]modFile   // those and the module's packages it imports, every build, once read (modbuilds.go)

	said *intent.Package // what the tests say beyond their own words (intent.go)

	owned *string // what of the package makes values a bubble owns, once computed (kept.go)

	fromClockSet *clockDerived // what the package sets from a reading of the clock, once computed (derived.go)
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
	// lead is how many leading statements stay outside the bubble: the
	// t.Parallel() and the skips that follow it (see leadingSkips).
	lead  int
	sites map[*ast.ExprStmt]bool

	// blocked says why the body cannot run in a bubble; unproven why the
	// analysis cannot show that it can: every reason, once each, in the
	// order the walk met them, so that a finding can say all that stands
	// between it and a fix, not only the first.
	blocked, unproven reasons

	// checked lists the clock hazards a bubble's clock brings that the
	// analysis excluded (clock.go), once resolved.
	checked []string

	// spawn names the first goroutine start the walk saw ("a go
	// statement in Start", "time.AfterFunc"), whatever else made the
	// test unproven or blocked, or is "".
	spawn string

	net targetNet // network calls whose hazard depends on the connections' origin

	// notes are the comments attached to the test (package intent): its
	// doc and body, an enclosing test's for a subtest; labels its names,
	// an enclosing test's too, as the code computes them. reached holds
	// the package's functions it calls, transitively.
	notes   []*ast.CommentGroup
	labels  []intent.Label
	reached map[*ast.FuncDecl]bool

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
	w.settleNetwork()
	if why := t.a.lockWaitHazard(); why != "" && (t.spawn != "" || t.a.codeStartsGoroutines()) {
		t.blocked.add(lockWaitKey{}, why)
	}
	if why := t.a.otherBuildGoroutine(t.a.otherBuildDecls(t)); why != "" {
		t.blocked.add(buildGoKey{}, why)
	}
	t.a.clockHazards(t)
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
		pass:           pass,
		info:           pass.TypesInfo,
		decls:          sc.decls,
		subtests:       map[*ast.FuncLit]*Target{},
		bubbles:        sc.bubbles,
		bubbleRefs:     sc.bubbleRefs,
		helperVars:     sc.helperVars,
		bubbled:        map[*ast.ExprStmt]bool{},
		helpers:        map[*ast.FuncDecl][]event{},
		impls:          map[*ast.FuncDecl][]event{},
		named:          map[string]bool{},
		overshot:       map[*ast.ExprStmt]bool{},
		overshotTimers: map[*ast.CallExpr]bool{},
		cgo:            sc.cgo,
		said:           intent.NewPackage(pass.Fset, pass.Pkg, pass.TypesInfo, pass.AllFiles),

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
				t.labels = []intent.Label{{Text: fd.Name.Name}}
				a.intend(t, intent.Comments(a.pass.Fset, f, fd))
				a.findSubtests(f, t, fd.Body)
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
func (a *Analysis) findSubtests(f *ast.File, parent *Target, root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 || !match.IsMethod(a.info, call, "testing", "Run") {
			return true
		}
		lit, ok := call.Args[1].(*ast.FuncLit)
		if !ok {
			return true
		}
		name := subtestName(parent.name, call)
		if t := a.newTarget(f, name, lit, lit.Type, lit.Body); t != nil {
			a.targets = append(a.targets, t)
			a.subtests[lit] = t
			// What the enclosing test says holds for its subtests; a
			// name the code computes may be any of the values it reads
			// (each case of a table).
			t.labels = append(slices.Clip(parent.labels), a.said.Labels(call.Args[0])...)
			a.intend(t, append(slices.Clip(parent.notes), intent.Comments(a.pass.Fset, f, call)...))
			a.findSubtests(f, t, lit.Body)
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
	t := &Target{name: name, fn: fn, body: body, file: f, sites: map[*ast.ExprStmt]bool{}, a: a}
	switch {
	case len(p.Names) == 1 && p.Names[0].Name != "_":
		t.param = p.Names[0].Name
	default:
		t.blocked.add(nil, "the test's *testing.T parameter has no name")
	}
	if !a.Editable(f) {
		t.blocked.add(nil, "the test is in a generated file")
	}
	if a.cgo {
		t.blocked.add(nil, "the package uses cgo, which a synctest bubble cannot follow")
	}
	if len(body.List) > 0 {
		if es, ok := body.List[0].(*ast.ExprStmt); ok {
			if call, ok := es.X.(*ast.CallExpr); ok && len(call.Args) == 0 && match.IsMethod(a.info, call, "testing", "Parallel") {
				t.parallel = es
				t.lead = 1
			}
		}
	}
	t.lead += a.leadingSkips(body.List[t.lead:])
	return t
}

func (a *Analysis) walkTarget(t *Target) {
	evs := []event{}
	w := &walker{a: a, rec: &evs}
	if decl, ok := t.fn.(*ast.FuncDecl); ok {
		w.in = decl // a test that makes a pair itself is one too
	}
	w.endedAt(t.body)
	w.certainAt(t.body)
	// The leading statements a wrap keeps outside the bubble run on the
	// real clock, as they did.
	for _, s := range t.body.List[t.lead:] {
		w.walk(s, "")
	}
	if lit, ok := t.fn.(*ast.FuncLit); ok {
		w.captures(lit)
	}
	t.a, t.events, t.reached = a, evs, map[*ast.FuncDecl]bool{}
	a.collectSites(t, evs, t.reached)
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
	in   *ast.FuncDecl // the helper whose body a recording walker walks

	// key, when not nil, is what the reasons block and unprove give
	// stand for (see blockAs), instead of their text.
	key any

	// at, when not empty, is where in the package the reasons block and
	// unprove give were met (" in helper"): they stand for their text
	// without it, so that a call of the same function met in several
	// helpers is one blocker.
	at string

	// ended holds, for the function identifier of a call whose result
	// the walked code assigns to a variable, the methods of that
	// variable it calls at cleanup (see endedAt). A call and its cleanup
	// are in the same body, so a helper's events can be recorded once.
	ended map[*ast.Ident]map[string]bool
	// concrete holds, for the method identifier of a call through an
	// interface on a value whose type is certain, that type's method
	// (see certainAt).
	concrete map[*ast.Ident]*types.Func

	seenWeak map[*ast.FuncDecl]bool // helpers applied while weak

	// weak is set while the walk applies what one of several methods a
	// call through an interface may run does: a reason to block the test
	// leaves it unproven instead.
	weak bool
}

// An event is one thing walking a helper's body tells a target, or a call
// of another helper whose events follow at that point.
type event struct {
	kind   eventKind
	why    string          // block, spawn, unprove; where, for other
	key    any             // block, unprove: what the reason stands for (blockAs)
	site   *ast.ExprStmt   // site
	decl   *ast.FuncDecl   // call
	fn     *types.Func     // other
	iface  bool            // other: fn is called through an interface
	ended  map[string]bool // other: the methods its result is ended by
	pair   *Pair           // pipe
	server *Server         // server
	// parallel: an unproven that holds only when the target runs in
	// parallel with other tests.
	parallel bool
}

type eventKind uint8

const (
	evBlock eventKind = iota
	evSpawn
	evUnprove
	evSite
	evCall
	evOther
	evPipe   // a network call a Pair's rewrite makes in-memory
	evNetUse // a network interface's method: real only if the value is
	evNetMem // net.Pipe: connections in memory
	evNetFar // another package's function uses the network deep down
	evServer // an httptest server's call its rewrite makes in-memory
)

func (w *walker) block(why string) { w.blockAs(w.keyOf(why), why) }

// keyOf is what why, a reason met now, stands for: w.key, or why without
// where it was met (w.at), or nil (why itself).
func (w *walker) keyOf(why string) any {
	if w.key == nil && w.at != "" {
		return strings.Replace(why, w.at, "", 1)
	}
	return w.key
}

// blockAs blocks the target for why, a reason that stands for key: a
// target lists one reason per key (the first), so that the same
// obstacle met again (another call into the real network, the same
// package-level channel in another helper) is one blocker, not several.
// A nil key is the reason's text.
func (w *walker) blockAs(key any, why string) {
	if w.weak && w.rec == nil {
		// In an implementation that may not be the one that runs, a
		// block is evidence enough only to leave the test unproven.
		w.unproveAs(key, why)
		return
	}
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evBlock, why: why, key: key})
		return
	}
	w.t.blocked.add(key, why)
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

func (w *walker) unprove(why string) { w.unproveAs(w.keyOf(why), why) }

// unproveAs is blockAs for a reason the test is unproven.
func (w *walker) unproveAs(key any, why string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evUnprove, why: why, key: key})
		return
	}
	w.t.unproven.add(key, why)
}

// unproveParallel makes the target unproven when it runs in parallel
// with other tests (a leading t.Parallel()).
func (w *walker) unproveParallel(key any, why string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evUnprove, why: why, key: key, parallel: true})
		return
	}
	if w.t.parallel != nil {
		w.unproveAs(key, why)
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
	seen := w.visited()
	if seen[decl] {
		return
	}
	seen[decl] = true
	w.replay(w.a.events(decl))
}

// visited returns the helpers already applied: apart for those applied
// as one of the methods a call through an interface may run (weak), so
// that a later direct call still applies them in full.
func (w *walker) visited() map[*ast.FuncDecl]bool {
	if !w.weak {
		return w.seen
	}
	if w.seenWeak == nil {
		w.seenWeak = map[*ast.FuncDecl]bool{}
	}
	return w.seenWeak
}

// implHelper walks decl, a method a call through an interface may run,
// as helper does, its reasons saying where (" in T.M (as pkg.I.M)").
func (w *walker) implHelper(decl *ast.FuncDecl, where string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evCall, decl: decl, why: where})
		return
	}
	weak := w.weak
	w.weak = true
	seen := w.visited()
	w.weak = weak
	if seen[decl] {
		return
	}
	seen[decl] = true
	// decl is one of the methods the call may run, maybe not the one
	// that does: what would block the test leaves it unproven.
	w.weak = true
	w.replay(w.a.implEvents(decl, where))
	w.weak = weak
}

// replay applies recorded events to the walker's target, in order.
func (w *walker) replay(evs []event) {
	for _, e := range evs {
		switch e.kind {
		case evBlock:
			w.blockAs(e.key, e.why)
		case evSpawn:
			w.spawned(e.why)
		case evUnprove:
			if e.parallel {
				w.unproveParallel(e.key, e.why)
			} else {
				w.unproveAs(e.key, e.why)
			}
		case evSite:
			w.site(e.site)
		case evCall:
			if e.why != "" {
				w.implHelper(e.decl, e.why)
			} else {
				w.helper(e.decl)
			}
		case evOther:
			w.other(e.fn, e.iface, e.ended, e.why)
		case evPipe:
			w.pipe(e.pair)
		case evNetUse:
			w.netUse(e.why)
		case evNetMem:
			w.netMem(e.why)
		case evNetFar:
			w.netFar()
		case evServer:
			w.server(e.server)
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
	rw := &walker{a: a, rec: &evs, in: decl}
	rw.endedAt(decl.Body)
	rw.certainAt(decl.Body)
	rw.walk(decl.Body, " in "+decl.Name.Name)
	a.helpers[decl] = evs
	return evs
}

// implEvents returns what walking decl's body tells a target, where
// names decl as a method run through an interface; recorded on first
// use.
func (a *Analysis) implEvents(decl *ast.FuncDecl, where string) []event {
	if evs, ok := a.impls[decl]; ok {
		return evs
	}
	evs := []event{}
	rw := &walker{a: a, rec: &evs}
	rw.endedAt(decl.Body)
	rw.certainAt(decl.Body)
	rw.walk(decl.Body, where)
	a.impls[decl] = evs
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
			} else if call, _ := a.SleepHelper(n); call != nil {
				w.site(n)
			}
		case *ast.CallExpr:
			w.call(n, where)
			w.tinyDuration(n, where)
		case *ast.ForStmt:
			w.spin(n, where)
			w.zeroWait(n, where)
		case *ast.Ident:
			if a.bubbleRefs[n] {
				return false // synctest.Test(t, testX): testX runs in the bubble, not in the test
			}
			switch obj := a.info.Uses[n].(type) {
			case *types.Func:
				w.fn(obj, n, where)
			case *types.Var:
				// One blocker per variable, whichever helper uses it.
				w.key = obj
				w.global(obj, where)
				w.key = nil
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
	if match.IsConversion(w.a.info, call) {
		// time.Duration(30) in time.Duration(30) * time.Second: go/types
		// gives the converted constant the type time.Duration and the
		// value 30, but it is a factor, not a duration handed to code.
		return
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
				w.blockAs(tRun, "the test calls t.Run; its subtests are wrapped instead")
				return
			}
		}
		w.blockAs(tRun, "the test calls t.Run, which a synctest bubble does not allow"+where)
	case match.IsMethod(a.info, call, "testing", "Parallel"):
		w.block("the test calls t.Parallel other than as its first statement, which a synctest bubble does not allow" + where)
	case match.IsMethod(a.info, call, "testing", "Deadline"):
		w.block("the test calls t.Deadline, which a synctest bubble does not allow" + where)
	default:
		if kept := a.keptByStd(call); kept != "" {
			w.block("the code hands " + kept + " to " + types.ExprString(call.Fun) + where + ", which the standard library keeps for the whole process: a channel, timer or wait group of the bubble it holds outlives the bubble, and a later test that logs, serves or reads it from outside the bubble meets a fatal error on correct code")
		}
	}
}

// stdKeepers are the standard library functions that keep what they are
// handed for the whole process, by package path and name.
var stdKeepers = map[[2]string]bool{
	{"log", "SetOutput"}: true, {"log/slog", "SetDefault"}: true, {"expvar", "Publish"}: true,
	{"net/http", "Handle"}: true, {"net/http", "HandleFunc"}: true,
	{"net/rpc", "Register"}: true, {"net/rpc", "RegisterName"}: true,
}

// keptByStd names a value call hands to a standard library function
// that keeps it for the whole process (log.SetOutput, expvar.Publish,
// http.HandleFunc on the default mux) when the value holds something a
// synctest bubble owns (a channel, a timer, a wait group, by its type):
// made in the bubble and kept past it, it is met from outside by the
// next test (red team batch 21, logship, ratemeter, healthz). "" for
// anything else.
func (a *Analysis) keptByStd(call *ast.CallExpr) string {
	fn := match.Callee(a.info, call)
	if fn == nil || fn.Pkg() == nil || !stdKeepers[[2]string{fn.Pkg().Path(), fn.Name()}] {
		return ""
	}
	found := ""
	for _, arg := range call.Args {
		ast.Inspect(arg, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if !ok || found != "" {
				return found == ""
			}
			if t := a.info.TypeOf(e); t != nil {
				if key, _ := bound(t, false, map[types.Type]bool{}); key != "" {
					found = types.ExprString(e)
				}
			}
			return found == ""
		})
	}
	return found
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
		var key any = why // one per kind: the first call into the network stands for all
		if strings.HasPrefix(why, "the test uses the real network") || strings.HasPrefix(why, "the test starts a real server") {
			key = realNetworkKey // a server and the requests to it are one obstacle
		}
		why = fmt.Sprintf(why, match.PkgFuncName(fn)+where)
		if !w.netHazard(fn, id, why) {
			w.blockAs(key, w.networkReason(why, fn, id, where))
		}
		return
	}
	if starter(fn) {
		w.spawned(match.PkgFuncName(fn) + where)
		w.unprove("the test starts goroutines the analysis cannot show end (" + match.PkgFuncName(fn) + where + ")")
		return
	}
	if name := fn.Name(); name == "ModTime" && (path == "io/fs" || path == "os") || name == "Chtimes" && path == "os" {
		// A bubble's clock starts at midnight UTC 2000-01-01; a file's
		// modification time is real, so an age computed from it is
		// decades off: the comparison flips on correct code or hides
		// a bug, and no run tells which. Not fixed.
		w.block("the test reads or sets a file's modification time (" + match.PkgFuncName(fn) + where + "), which is real time, not the bubble's: an age computed from it against the virtual clock (from 2000-01-01) is decades off")
		return
	}
	if fn.Name() == "Pipe" && path == "os" {
		// A goroutine reading a pipe waits in the operating system, not
		// durably blocked: the virtual clock stops while it waits, and
		// a sleep in the bubble never ends.
		w.block("the test uses an os.Pipe (" + match.PkgFuncName(fn) + where + "): a goroutine blocked reading a pipe or a file waits in the operating system, which a synctest bubble does not count as durably blocked, so the virtual clock stops while it waits")
		return
	}
	recv := fn.Type().(*types.Signature).Recv()
	iface := recv != nil && types.IsInterface(recv.Type())
	if iface {
		if m := w.concrete[id]; m != nil {
			// The value called is one the walked code made: its
			// type, and so the method, is certain.
			w.fn(m, id, where)
			return
		}
	}
	if pkg == w.a.pass.Pkg {
		if decl := w.a.decls[fn]; decl != nil && decl.Body != nil {
			w.helper(decl)
			return
		}
		if iface && !w.implementations(fn, where) {
			w.unproveAs(fn, "the test calls "+match.PkgFuncName(fn)+" through an interface the analysis cannot follow"+where)
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
// are replayed (when a rule reads the target's outcome), and asks even
// when the target is blocked already: a finding lists every blocker.
func (w *walker) other(fn *types.Func, iface bool, ended map[string]bool, where string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evOther, fn: fn, iface: iface, ended: ended, why: where})
		return
	}
	// What calling fn does is the same whichever helper calls it.
	w.at = where
	defer func() { w.at = "" }()
	if !iface {
		if s := w.a.pass.Effects.Of(fn); s != nil {
			w.summary(fn, ended, s, where)
			return
		}
	} else if impls, _ := effects.Implementations(w.a.pass.Effects, fn); impls != nil {
		// Few types implement the interface: the call does what the
		// worst of their methods does.
		for _, m := range impls {
			if s := w.a.pass.Effects.Of(m); s != nil {
				w.summary(m, nil, viaIface(s, match.PkgFuncName(fn)), where)
			} else {
				w.unprove("the test calls " + match.PkgFuncName(m) + " (as " + match.PkgFuncName(fn) + "), whose code the analysis cannot see" + where)
			}
		}
		return
	}
	w.unproveAs(fn, "the test calls "+match.PkgFuncName(fn)+", whose code the analysis cannot see"+where)
}

// viaIface returns s, the summary of one implementation of the
// interface method iface, with its effects' chains starting at iface:
// one hop more, since the implementation may not be the one that runs,
// so an effect of its own code is evidence enough only to leave the test
// unproven (near).
func viaIface(s *effect.Summary, iface string) *effect.Summary {
	c := *s
	c.Effects = make([]effect.Effect, len(s.Effects))
	for i, e := range s.Effects {
		e.Via = append([]string{iface}, e.Via...)
		c.Effects[i] = e
	}
	return &c
}

// implementations walks, as helpers, the methods a call of m, a method
// of an interface the package declares, may run, when they are few
// (effects.Implementations), and reports whether it found them.
func (w *walker) implementations(m *types.Func, where string) bool {
	impls, _ := effects.Implementations(w.a.pass.Effects, m)
	if impls == nil {
		return false
	}
	for _, fn := range impls {
		if decl := w.a.decls[fn]; decl != nil && decl.Body != nil {
			w.implHelper(decl, " in "+recvName(fn)+decl.Name.Name+" (as "+match.PkgFuncName(m)+")")
			continue
		}
		w.other(fn, false, nil, where)
	}
	return true
}

// recvName returns "T." for a method of T or *T, or "".
func recvName(fn *types.Func) string {
	r := fn.Type().(*types.Signature).Recv()
	if r == nil {
		return ""
	}
	t := types.Unalias(r.Type())
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name() + "."
	}
	return ""
}

// reasons are the reasons of one kind a target has, one per key, in the
// order they were added.
type reasons struct {
	list []string
	keys map[any]bool
}

// add appends why, which stands for key (nil: why itself), unless a
// reason for key is there already.
func (r *reasons) add(key any, why string) {
	if key == nil {
		key = why
	}
	if r.keys[key] {
		return
	}
	if r.keys == nil {
		r.keys = map[any]bool{}
	}
	r.keys[key] = true
	r.list = append(r.list, why)
}

// global checks a package-level variable by synctest's rules for values
// made outside the bubble (see outside); a time.Time read outside the
// bubble is real time, not the bubble's.
func (w *walker) global(v *types.Var, where string) {
	if v.IsField() || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return
	}
	if key, via := bound(v.Type(), false, map[types.Type]bool{}); key != "" {
		// A []*Client is no context because each Client holds one:
		// the reason names the variable's own type.
		name := v.Name() + strings.Replace(where, " in", ", in", 1)
		why := fmt.Sprintf("the test uses a package-level %s (%s)", effects.SharedName(key), name)
		if typ, held := holder(v.Type(), v.Pkg(), key, via); typ != "" {
			why = fmt.Sprintf("the test uses a package-level %s (%s), which holds %s", typ, name, held)
		}
		switch verdict, rule := outside(key); verdict {
		case blocks:
			w.block(why + rule)
			return
		case unsure:
			w.unprove(why + rule)
			return
		case inParallel:
			w.unproveParallel(w.keyOf(why+rule), why+rule)
		}
	}
	if why := w.a.poolBlock(v, where); why != "" {
		w.block(why)
		return
	}
	w.keptState(v, where)
	switch stamped := w.a.stampedGlobal(v); {
	case holdsTime(v.Type(), map[types.Type]bool{}):
		// Its times were set on the real clock (at init, or by another
		// test), decades after the bubble's 2000-01-01: a deadline or an
		// age computed from them never comes or is always past, and a
		// run may not show it (a bug it hides). Not fixed.
		w.block(fmt.Sprintf("the test uses a package-level value holding a time (%s), which the package's init or another test may have set on the real clock, outside the bubble: the virtual clock (from 2000-01-01) never reaches a time set there", v.Name()+strings.Replace(where, " in", ", in", 1)))
	case stamped != "":
		// The same time kept by another type: a process start in an
		// atomic.Int64 of UnixNano, stamped at init or by the first
		// caller, which may be an earlier test on the real clock (red
		// team batch 17, uptimeinit and uptimelazy). Whatever holds it,
		// a reading made outside the bubble is 26 years after the
		// bubble's clock.
		w.block(fmt.Sprintf("the test uses a package-level value holding a time (%s, set from a reading of the clock: %s), which the package's init, its first caller or another test may have set on the real clock, outside the bubble: the virtual clock (from 2000-01-01) never reaches a time set there, so an age or a deadline computed from it is decades off", v.Name()+strings.Replace(where, " in", ", in", 1), stamped))
	}
}

// A verdict is what synctest's rules make of a synchronising value made
// outside the bubble that the bubble's code uses.
type verdict uint8

const (
	fine       verdict = iota
	inParallel         // unproven when the test runs in parallel with others
	unsure             // unproven: it depends on what happens outside
	blocks             // the bubble cannot use it
)

// outside applies testing/synctest's rules to a value of the kind key
// (effects.SharedKey) made outside the bubble, and says which rule
// applies, as a phrase that completes "the test uses a package-level
// channel (x)" (", made outside the bubble: ..."). Channels, timers and tickers are associated with the
// bubble they were made in, and blocking on one made outside is not
// durable; a WaitGroup is associated with the bubble that first calls
// Add on it, except one held in a package variable itself, which cannot
// be; sync.Cond.Wait is durable wherever the Cond was made, but a
// goroutine outside the bubble that wakes a waiter inside is a fatal
// error; a mutex is none of these and fine.
func outside(key string) (verdict, string) {
	const clock = "so the virtual clock would not advance"
	switch key {
	case effects.SharedChan:
		return blocks, ", made outside the bubble: blocking on it is not durable in a synctest bubble, " + clock
	case effects.SharedTimer, effects.SharedTicker:
		return blocks, ", made outside the bubble: it runs on the real clock, and blocking on its channel is not durable in a synctest bubble, " + clock
	case effects.SharedContext:
		return blocks, ", made outside the bubble: its Done channel belongs to no bubble or to another one, so blocking on it is not durable in a synctest bubble and the virtual clock would not advance"
	case effects.SharedWaitGroup:
		return blocks, ", which synctest cannot associate with a bubble (a WaitGroup held in a package variable): waiting on it is not durable, " + clock
	case effects.SharedWaitPtr:
		return unsure, ", which becomes associated with the first synctest bubble that calls Add on it: an Add from outside that bubble while it counts (another test, or a count left from before) is a fatal error"
	case effects.SharedCond:
		return inParallel, ", and the test runs in parallel with others: a goroutine outside its synctest bubble that wakes one of the bubble's waiters is a fatal error"
	}
	// A kind this code does not know (a summary made by another
	// version): made outside, as it always counted.
	return blocks, ", made outside the bubble"
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
		verdict, rule := fine, ""
		key, via := bound(v.Type(), true, map[types.Type]bool{})
		if key != "" {
			verdict, rule = outside(key)
		}
		switch {
		case verdict == blocks:
			what := "a " + effects.SharedName(key)
			if typ, held := holder(v.Type(), v.Pkg(), key, via); typ != "" {
				what = "a " + typ + " holding " + held + ", which"
			}
			w.block(fmt.Sprintf("the subtest uses %s, %s the enclosing test created outside the bubble%s", v.Name(), what, strings.TrimPrefix(rule, ", made outside the bubble")))
		case holdsTime(v.Type(), map[types.Type]bool{}) || w.a.readsClock(v.Type()):
			// An entry the enclosing test made expires at a real-clock
			// time the subtest's virtual clock (from 2000-01-01) never
			// reaches: "gone after its TTL" fails on correct code, and
			// "still there" passes on a bug. A run does not tell the
			// second, so not fixed.
			w.block(fmt.Sprintf("the subtest uses %s, which the enclosing test created outside the bubble and which holds a time or whose methods read the clock: times set there are the real clock's, which the bubble's virtual clock (from 2000-01-01) never reaches", v.Name()))
		case !plain(v.Type(), map[types.Type]bool{}):
			w.unprove(fmt.Sprintf("the subtest uses %s, which the enclosing test created outside the bubble", v.Name()))
		}
		return true
	})
}

// bound returns the kind (effects.SharedKey) of the first synchronising
// value a value of type t holds, on which synctest rules (see outside),
// or "": a channel, a timer or ticker, a wait group, a condition variable
// or a context. heap tells whether the value is reached through a
// pointer, slice or map, or is a local variable (which synctest can
// associate with a bubble), not held in a package variable itself. via
// is the path of fields that holds it ("ctx", "opts.ctx"), or "" when t
// is that value, or holds it without a field (a slice of channels).
func bound(t types.Type, heap bool, seen map[types.Type]bool) (key, via string) {
	t = types.Unalias(t)
	if seen[t] {
		return "", ""
	}
	seen[t] = true
	if key := effects.SharedKey(t); key != "" {
		if key == effects.SharedWaitGroup && heap {
			key = effects.SharedWaitPtr
		}
		return key, ""
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return bound(u.Elem(), true, seen)
	case *types.Slice:
		return bound(u.Elem(), true, seen)
	case *types.Array:
		return bound(u.Elem(), heap, seen)
	case *types.Map:
		if k, via := bound(u.Key(), true, seen); k != "" {
			return k, via
		}
		return bound(u.Elem(), true, seen)
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			k, via := bound(f.Type(), heap, seen)
			if k == "" {
				continue
			}
			if via == "" {
				return k, f.Name()
			}
			return k, f.Name() + "." + via
		}
	}
	return "", ""
}

// holder words, for a message, a value of type t that holds a
// synchronising value of kind key through via (bound) without being one:
// typ is t ("[]*Client") and held what it holds ("a context
// (Client.ctx)"). Both are "" when t is that value itself.
func holder(t types.Type, pkg *types.Package, key, via string) (typ, held string) {
	if effects.SharedKey(t) != "" {
		return "", ""
	}
	held = "a " + effects.SharedName(key)
	if via != "" {
		if n := firstNamed(t); n != nil {
			via = n.Obj().Name() + "." + via
		}
		held += " (" + via + ")"
	}
	return types.TypeString(t, types.RelativeTo(pkg)), held
}

// firstNamed returns the named struct type t is, or holds through
// pointers, slices, arrays and map values, or nil.
func firstNamed(t types.Type) *types.Named {
	for range 8 {
		t = types.Unalias(t)
		if n, ok := t.(*types.Named); ok {
			if _, ok := n.Underlying().(*types.Struct); ok {
				return n
			}
		}
		switch u := t.Underlying().(type) {
		case *types.Pointer:
			t = u.Elem()
		case *types.Slice:
			t = u.Elem()
		case *types.Array:
			t = u.Elem()
		case *types.Map:
			t = u.Elem()
		default:
			return nil
		}
	}
	return nil
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
		case "IP", "IPMask", "IPNet", "HardwareAddr", "AddrError", "ParseError", "DNSError", "OpError", "UnknownNetworkError", "InvalidAddrError",
			"TCPAddr", "UDPAddr", "IPAddr", "UnixAddr": // values: their methods format or compare them
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

// tRun is the key of the reasons a test's t.Run calls give: one blocker
// however many subtests it runs.
const tRun = "testing.T.Run"

// realNetworkKey is the key of the reasons the test's own calls into the
// real network give (a server, a dial, a request): one blocker.
const realNetworkKey = "the real network"

// readsClock reports whether a method of t (a named type of the package,
// or a pointer to one), or a function of the package it calls, reads the
// clock: a value of it made outside a bubble may hold real-clock times
// behind an interface (a list.Element's Value) that holdsTime cannot see.
func (a *Analysis) readsClock(t types.Type) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok || named.Obj().Pkg() != a.pass.Pkg {
		return false
	}
	seen := map[*ast.FuncDecl]bool{}
	var reads func(fd *ast.FuncDecl) bool
	reads = func(fd *ast.FuncDecl) bool {
		if fd == nil || fd.Body == nil || seen[fd] {
			return false
		}
		seen[fd] = true
		found := false
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found {
				return !found
			}
			if readsClock(a.info, call) {
				found = true
			} else if fn := match.Callee(a.info, call); fn != nil && fn.Pkg() == a.pass.Pkg {
				found = reads(a.decls[fn.Origin()])
			}
			return !found
		})
		return found
	}
	for i := range named.NumMethods() {
		if reads(a.decls[named.Method(i)]) {
			return true
		}
	}
	return false
}
