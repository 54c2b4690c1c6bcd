package effects

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A summariser computes the summaries of one package's functions from
// their syntax, bottom-up: a function's summary joins the effects of its
// own body with those of the functions it calls. Functions of the same
// package are followed through their declarations (a cycle of calls is
// solved together, Tarjan's strongly connected components, iterated to a
// fixed point); the standard library comes from a table; other packages
// from other. A summariser is not safe for concurrent use.
type summariser struct {
	pkg   *types.Package
	info  *types.Info
	decls map[*types.Func]*ast.FuncDecl
	// other returns the summary of a function of another package, or nil
	// when unknown.
	other func(*types.Func) *Summary

	scans map[*types.Func]*scan
	sums  map[*types.Func]*Summary // finished
	prov  map[*types.Func]*Summary // provisional, inside the component being solved

	// Tarjan's algorithm.
	index   map[*types.Func]int
	low     map[*types.Func]int
	onStack map[*types.Func]bool
	stack   []*types.Func

	yield map[*types.Var]bool // iterators' yield parameters
	files []*ast.File
	// linknames maps local names to their //go:linkname targets; made
	// on first use.
	linknames map[string]string
	waits     map[*types.Func]*fields
	ends      map[*types.Func]*fields
	// copies and pairs are the local copies of struct fields and the
	// cancel function fields' contexts (see findCopies); made on first
	// use.
	copies     map[*types.Var]*types.Var
	pairs      map[*types.Var]map[*types.Var]bool
	cancelOnly map[*types.Var]bool
	// realClock are the package-level variables a goroutine started at
	// the package's initialisation keeps from the real clock (see
	// initClockKeepers); made on first use.
	realClock map[*types.Var]string
	// fset, when known, places a spinning loop for messages.
	fset *token.FileSet
	// impls, when set, finds the methods a call through an interface
	// may run (Implementer); nil follows no interface.
	impls func(*types.Func) ([]*types.Func, string)
}

func newSummariser(pkg *types.Package, info *types.Info, files []*ast.File, other func(*types.Func) *Summary) *summariser {
	return &summariser{
		pkg: pkg, info: info, files: files, decls: match.FuncDecls(info, files), other: other,
		scans: map[*types.Func]*scan{}, sums: map[*types.Func]*Summary{}, prov: map[*types.Func]*Summary{},
		index: map[*types.Func]int{}, low: map[*types.Func]int{},
		onStack: map[*types.Func]bool{}, yield: map[*types.Var]bool{}, waits: map[*types.Func]*fields{}, ends: map[*types.Func]*fields{},
	}
}

// summary returns the summary of fn, a function declared in the package,
// or nil when the package does not declare it.
func (s *summariser) summary(fn *types.Func) *Summary {
	fn = fn.Origin()
	if sum, ok := s.sums[fn]; ok {
		return sum
	}
	if s.decls[fn] == nil {
		return nil
	}
	s.visit(fn)
	return s.sums[fn]
}

// lookup returns the summary of a function fn calls, or nil when unknown.
func (s *summariser) lookup(fn *types.Func) *Summary {
	if fn.Pkg() == nil {
		return &Summary{} // error.Error
	}
	if fn.Pkg() == s.pkg {
		if sum, ok := s.sums[fn]; ok {
			return sum
		}
		if sum, ok := s.prov[fn]; ok {
			return sum
		}
		if s.decls[fn] == nil {
			return nil
		}
		return s.summary(fn)
	}
	return s.other(fn)
}

func (s *summariser) visit(fn *types.Func) {
	n := len(s.index)
	s.index[fn], s.low[fn] = n, n
	s.stack = append(s.stack, fn)
	s.onStack[fn] = true
	for _, site := range s.scanOf(fn).sites {
		g := site.fn
		if g.Pkg() != s.pkg || s.decls[g] == nil {
			continue
		}
		if _, done := s.sums[g]; done {
			continue
		}
		if _, seen := s.index[g]; !seen {
			s.visit(g)
			s.low[fn] = min(s.low[fn], s.low[g])
		} else if s.onStack[g] {
			s.low[fn] = min(s.low[fn], s.index[g])
		}
	}
	if s.low[fn] != s.index[fn] {
		return
	}
	var comp []*types.Func
	for {
		top := s.stack[len(s.stack)-1]
		s.stack = s.stack[:len(s.stack)-1]
		s.onStack[top] = false
		comp = append(comp, top)
		if top == fn {
			break
		}
	}
	for _, m := range comp {
		s.prov[m] = &Summary{}
	}
	// Summaries only grow from one round to the next, and are bounded
	// (merge caps them): the rounds end.
	for round := 0; round < 20; round++ {
		changed := false
		for _, m := range comp {
			next := s.compute(s.scanOf(m))
			if size(next) != size(s.prov[m]) {
				changed = true
			}
			s.prov[m] = next
		}
		if !changed || len(comp) == 1 && !s.callsItself(fn) {
			break
		}
	}
	for _, m := range comp {
		s.sums[m] = s.prov[m]
		delete(s.prov, m)
	}
}

func (s *summariser) callsItself(fn *types.Func) bool {
	for _, site := range s.scanOf(fn).sites {
		if site.fn == fn {
			return true
		}
	}
	return false
}

func size(s *Summary) int {
	n := len(s.Effects)
	if s.Opaque != "" {
		n++
	}
	if s.Loops {
		n++
	}
	if s.Blocks {
		n++
	}
	if s.Spin != nil {
		n++
	}
	if s.Clock != nil {
		n++
	}
	if s.RealClock != nil {
		n++
	}
	if s.Files != nil {
		n++
	}
	if s.RunsBubble {
		n++
	}
	return n + len(s.Bubbles)
}

// A scan is what one function's body shows, before the summaries of
// its callees are known.
type scan struct {
	fn      *types.Func
	name    string // "pkg.F" for messages
	effects []Effect
	sites   []site
	gos     []goSite
	opaque  []opaqueSite
	loops   []int           // goroutines (own: -1) that run a loop without bound
	refs    map[string]bool // keys of the methods referenced
	returns map[string]bool // keys of the named types returned
	recv    string          // key of the receiver's named type, for a method
	key     string          // Key(fn)

	blocks       bool         // its own goroutine blocks durably by itself
	spinning     []spinSite   // loops that spin on the clock unless a callee blocks
	clock        string       // where it reads the clock itself ("cache.go:30"), or ""
	realClock    string       // what real-clock state it reads itself (realClockReads), or ""
	readsClock   bool         // it reads the clock itself
	runsBubble   bool         // it calls synctest.Test or synctest.Run itself
	bubbleParams []int        // parameters it runs in a synctest bubble itself
	bubbleCalls  []bubbleCall // parameters it hands to other functions
}

// A site is a function called or referenced on goroutine g (-1: the
// function's own).
type site struct {
	fn *types.Func
	g  int
	// iface is the interface method whose call may run fn, one of its
	// implementations, or nil for a call of fn itself.
	iface *types.Func
}

type opaqueSite struct {
	what string
	g    int
}

// A goSite is a go statement: it runs callee or lit.
type goSite struct {
	callee *types.Func
	lit    *ast.FuncLit
	what   string // what it runs, for messages
}

func (s *summariser) scanOf(fn *types.Func) *scan {
	if sc, ok := s.scans[fn]; ok {
		return sc
	}
	sc := &scan{fn: fn, name: match.PkgFuncName(fn), refs: map[string]bool{}, returns: map[string]bool{}, key: Key(fn)}
	s.scans[fn] = sc
	sig := fn.Type().(*types.Signature)
	if r := sig.Recv(); r != nil {
		sc.recv = TypeKey(r.Type())
	}
	for i := 0; i < sig.Results().Len(); i++ {
		if k := TypeKey(sig.Results().At(i).Type()); k != "" {
			sc.returns[k] = true
		}
	}
	fd := s.decls[fn]
	if fd.Body == nil {
		if target := s.linkname(fd.Name.Name); target != "" && match.IsStd(target[:max(strings.LastIndex(target, "."), 0)]) {
			// Linked by name to the standard library (z.memhash to
			// runtime.memhash): the table's rule, pure unless listed.
			return sc
		}
		sc.opaque = append(sc.opaque, opaqueSite{what: "has no Go body the analysis can see", g: -1})
		return sc
	}
	s.yields(fd.Type)
	s.walk(sc, fd.Body, -1)
	_, sc.blocks = blocksIn(s.info, fd.Body)
	s.spins(sc, fd.Body)
	s.clockReads(sc, fd.Body)
	s.realClockReads(sc, fd.Body)
	s.bubbles(sc, sig, fd.Body)
	return sc
}

// linkname returns the target of the package's //go:linkname directive
// for the local function name ("runtime.memhash"), or "".
func (s *summariser) linkname(name string) string {
	if s.linknames == nil {
		s.linknames = map[string]string{}
		for _, f := range s.files {
			for _, g := range f.Comments {
				for _, c := range g.List {
					if rest, ok := strings.CutPrefix(c.Text, "//go:linkname "); ok {
						if fs := strings.Fields(rest); len(fs) == 2 {
							s.linknames[fs[0]] = fs[1]
						}
					}
				}
			}
		}
	}
	return s.linknames[name]
}

// yields records the parameter of ft when ft has the shape of an
// iterator (iter.Seq, iter.Seq2): one parameter, a function returning a
// bool, and no result. Calling it runs the body of the caller's range
// loop, which is summarised where it stands.
func (s *summariser) yields(ft *ast.FuncType) {
	if ft.Results != nil && len(ft.Results.List) > 0 || ft.Params == nil || len(ft.Params.List) != 1 || len(ft.Params.List[0].Names) != 1 {
		return
	}
	v, ok := s.info.Defs[ft.Params.List[0].Names[0]].(*types.Var)
	if !ok {
		return
	}
	sig, ok := v.Type().Underlying().(*types.Signature)
	if !ok || sig.Results().Len() != 1 || !types.Identical(sig.Results().At(0).Type(), types.Typ[types.Bool]) {
		return
	}
	s.yield[v] = true
}

// isYield reports whether fun is an iterator's yield parameter.
func (s *summariser) isYield(fun ast.Expr) bool {
	id, ok := ast.Unparen(fun).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := s.info.Uses[id].(*types.Var)
	return ok && s.yield[v]
}

// walk records what n does on goroutine g.
func (s *summariser) walk(sc *scan, n ast.Node, g int) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			s.goStmt(sc, n, g)
			return false
		case *ast.CallExpr:
			if tv, ok := s.info.Types[n.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
				break
			}
			if match.Callee(s.info, n) == nil && !isCancel(s.info.TypeOf(n.Fun)) && !s.isCancelField(n.Fun) && !s.isYield(n.Fun) {
				if _, lit := ast.Unparen(n.Fun).(*ast.FuncLit); !lit {
					sc.opaque = append(sc.opaque, opaqueSite{what: "calls the function value " + short(n.Fun), g: g})
				}
			}
		case *ast.FuncLit:
			s.yields(n.Type)
		case *ast.Ident:
			s.ident(sc, n, g)
		case *ast.ForStmt:
			if n.Cond == nil || n.Post == nil {
				sc.loops = append(sc.loops, g)
			}
		case *ast.RangeStmt:
			if tv, ok := s.info.Types[n.X]; ok {
				switch tv.Type.Underlying().(type) {
				case *types.Chan, *types.Signature:
					sc.loops = append(sc.loops, g)
				}
			}
			if n.Tok == token.ASSIGN {
				s.write(sc, n.Key)
				s.write(sc, n.Value)
			}
		case *ast.SelectStmt:
			if len(n.Body.List) == 0 {
				sc.loops = append(sc.loops, g)
			}
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				s.write(sc, l)
			}
		case *ast.IncDecStmt:
			s.write(sc, n.X)
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				s.write(sc, n.X)
			}
		case *ast.SelectorExpr:
			if sel, ok := s.info.Selections[n]; ok && sel.Kind() == types.MethodVal {
				if v := match.Root(s.info, n.X); match.IsPackageLevel(v) && v.Pkg() == s.pkg && !isMutex(v.Type()) {
					if _, ptr := sel.Obj().Type().(*types.Signature).Recv().Type().(*types.Pointer); ptr {
						s.addWrite(sc, v)
					}
				}
			}
		}
		return true
	})
}

func (s *summariser) goStmt(sc *scan, gs *ast.GoStmt, g int) {
	call := gs.Call
	for _, a := range call.Args {
		s.walk(sc, a, g)
	}
	i := len(sc.gos)
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.FuncLit:
		sc.gos = append(sc.gos, goSite{lit: fun, what: "a goroutine"})
		s.walk(sc, fun.Body, i)
		return
	}
	if fn := match.Callee(s.info, call); fn != nil {
		sc.gos = append(sc.gos, goSite{callee: fn.Origin(), what: "a goroutine running " + match.PkgFuncName(fn)})
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			s.walk(sc, sel.X, g) // the receiver is evaluated here
		}
		s.walk(sc, call.Fun, i)
		return
	}
	sc.gos = append(sc.gos, goSite{what: "a goroutine running " + short(call.Fun)})
	s.walk(sc, call.Fun, g)
	sc.opaque = append(sc.opaque, opaqueSite{what: "starts a goroutine running the function value " + short(call.Fun), g: i})
}

func (s *summariser) ident(sc *scan, id *ast.Ident, g int) {
	switch obj := s.info.Uses[id].(type) {
	case *types.Func:
		if obj.Pkg() == nil {
			return // error.Error
		}
		sig := obj.Type().(*types.Signature)
		if recv := sig.Recv(); recv != nil && types.IsInterface(recv.Type()) {
			if pureInterfaceMethod(obj, recv.Type()) || s.implementations(sc, obj, g) {
				return
			}
			sc.opaque = append(sc.opaque, opaqueSite{what: "calls " + match.PkgFuncName(obj) + " through an interface", g: g})
			return
		}
		fn := obj.Origin()
		if isCgo(fn) {
			sc.effects = append(sc.effects, Effect{Kind: Cgo, Via: []string{sc.name}, What: "calls C code (cgo)"})
			return
		}
		sc.sites = append(sc.sites, site{fn: fn, g: g})
		if sig.Recv() != nil {
			sc.refs[Key(fn)] = true
		}
	case *types.Var:
		if !match.IsPackageLevel(obj) {
			return
		}
		if key := SharedKey(obj.Type()); key != "" {
			sc.effects = append(sc.effects, Effect{Kind: SharedSync, Via: []string{sc.name},
				What: "uses the package-level " + sharedNames[key] + " " + obj.Pkg().Name() + "." + obj.Name(), Type: key})
		}
	}
}

// implementations records the methods a call of m, a method of an
// interface, may run, as called on goroutine g, and reports whether it
// knows them: the call has the effects of the worst.
func (s *summariser) implementations(sc *scan, m *types.Func, g int) bool {
	if s.impls == nil {
		return false
	}
	impls, _ := s.impls(m)
	if impls == nil {
		return false
	}
	for _, fn := range impls {
		fn = fn.Origin()
		if fn.Pkg() != nil && fn.Pkg().Path() == s.pkg.Path() && fn.Pkg() != s.pkg {
			// The index read the package from export data: its
			// declaration here is the same method.
			if own := lookupKey(s.pkg, Key(fn)); own != nil {
				fn = own
			}
		}
		sc.sites = append(sc.sites, site{fn: fn, g: g, iface: m})
	}
	return true
}

// siteName names the function a site calls, for messages: through an
// interface, the implementation and the interface's method.
func siteName(st site) string {
	name := match.PkgFuncName(st.fn)
	if st.iface != nil {
		name += " (as " + match.PkgFuncName(st.iface) + ")"
	}
	return name
}

// write records that e, an assigned expression, may write a package-level
// variable.
func (s *summariser) write(sc *scan, e ast.Expr) {
	if e == nil {
		return
	}
	if v := match.Root(s.info, e); match.IsPackageLevel(v) {
		s.addWrite(sc, v)
	}
}

func (s *summariser) addWrite(sc *scan, v *types.Var) {
	sc.effects = append(sc.effects, Effect{Kind: WritesGlobal, Via: []string{sc.name},
		What: "writes the package-level variable " + v.Pkg().Name() + "." + v.Name()})
}

// The kinds of synchronising values whose use in a synctest bubble
// synctest rules on, as SharedKey names them: the Effect.Type of a
// SharedSync effect. A bubble decides from them (see
// internal/bubble.outside).
const (
	SharedChan      = "chan"            // a channel
	SharedTimer     = "time.Timer"      // a timer
	SharedTicker    = "time.Ticker"     // a ticker
	SharedWaitGroup = "sync.WaitGroup"  // a WaitGroup in the variable itself
	SharedWaitPtr   = "*sync.WaitGroup" // a WaitGroup the variable points to
	SharedCond      = "sync.Cond"       // a condition variable
	SharedContext   = "context.Context" // a context
)

var sharedNames = map[string]string{
	SharedChan: "channel", SharedTimer: "timer", SharedTicker: "ticker",
	SharedWaitGroup: "wait group", SharedWaitPtr: "wait group",
	SharedCond: "condition variable", SharedContext: "context",
}

// SharedName names the kind of synchronising value key is for a message:
// "channel", "wait group".
func SharedName(key string) string { return sharedNames[key] }

// SharedKey returns the kind of synchronising value a variable of type t
// is (see SharedChan...), or "". A mutex is none: synctest does not
// associate it with a bubble, and nothing else about it matters to one.
func SharedKey(t types.Type) string {
	switch {
	case match.IsNamed(t, "time", "Timer"):
		return SharedTimer
	case match.IsNamed(t, "time", "Ticker"):
		return SharedTicker
	case match.IsNamed(t, "sync", "WaitGroup"):
		if _, ptr := types.Unalias(t).(*types.Pointer); ptr {
			return SharedWaitPtr
		}
		return SharedWaitGroup
	case match.IsNamed(t, "sync", "Cond"):
		return SharedCond
	case match.IsNamed(t, "context", "Context"):
		return SharedContext
	}
	if _, ok := t.Underlying().(*types.Chan); ok {
		return SharedChan
	}
	return ""
}

// isCgo reports whether fn is a C function called through cgo: C.f
// itself, or the _Cfunc_f wrapper cgo writes into the compiled files.
func isCgo(fn *types.Func) bool {
	return fn.Pkg().Path() == "C" || strings.HasPrefix(fn.Name(), "_Cfunc_") || strings.HasPrefix(fn.Name(), "_C2func_")
}

// isCancel reports whether t is a context's cancel function, whose
// effect is known: it ends what waits on the context.
func isCancel(t types.Type) bool {
	return t != nil && match.IsNamed(t, "context", "CancelFunc", "CancelCauseFunc")
}

// isMutex reports whether t is a mutex, once or pool:
// locking a package-level mutex, taking from a package-level pool or
// running a package-level once changes nothing another caller can see
// (what the once runs is summarised as any other call).
func isMutex(t types.Type) bool {
	if match.IsNamed(t, "sync", "Mutex", "RWMutex", "Once") {
		return true
	}
	// A pool (sync.Pool, bytebufferpool.Pool) by contract hands out
	// values nobody else holds.
	n := namedOf(t)
	return n != nil && strings.HasSuffix(n.Obj().Name(), "Pool")
}

// short prints e for a message, cut to a reasonable length.
func short(e ast.Expr) string {
	s := types.ExprString(e)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// compute joins sc's own effects with those of its callees, as far as
// they are known (provisional inside a cycle).
func (s *summariser) compute(sc *scan) *Summary {
	out := &Summary{}
	for _, e := range sc.effects {
		out.Effects = merge(out.Effects, e)
	}
	goLoops := make([]bool, len(sc.gos))
	setLoops := func(g int) {
		if g < 0 {
			out.Loops = true
		} else {
			goLoops[g] = true
		}
	}
	for _, g := range sc.loops {
		setLoops(g)
	}
	for _, o := range sc.opaque {
		if out.Opaque == "" {
			out.Opaque = o.what
		}
		setLoops(o.g)
	}
	for _, st := range sc.sites {
		cs := s.lookup(st.fn)
		name := siteName(st)
		if cs == nil {
			if out.Opaque == "" {
				out.Opaque = "calls " + name + ", whose effects the analysis cannot see"
			}
			setLoops(st.g)
			continue
		}
		if cs.Opaque != "" && out.Opaque == "" {
			out.Opaque = "calls " + name + ", which " + cs.Opaque
		}
		// A function referenced, not called on the spot (a callback),
		// counts as called: its loops too, conservatively, unless it is
		// what a go statement runs.
		if cs.Loops {
			setLoops(st.g)
		}
		for _, e := range cs.Effects {
			if st.iface != nil {
				// One hop more: the interface's method, then the
				// implementation, which may not be the one that runs.
				e.Via = append([]string{sc.name, match.PkgFuncName(st.iface)}, e.Via...)
			} else {
				e.Via = append([]string{sc.name}, e.Via...)
			}
			if e.Kind == GoroutineEnds {
				var ok bool
				if e, ok = s.passOn(sc, e); !ok {
					continue // the function ends them itself
				}
			}
			out.Effects = merge(out.Effects, e)
		}
	}
	out.RunsBubble = sc.runsBubble
	for _, st := range sc.sites {
		if cs := s.lookup(st.fn); cs != nil {
			if st.g < 0 && cs.Blocks {
				out.Blocks = true
			}
			out.RunsBubble = out.RunsBubble || cs.RunsBubble
		}
	}
	out.Blocks = out.Blocks || sc.blocks
	out.Spin = s.spin(sc)
	out.Clock = s.clock(sc)
	out.RealClock = s.realClockOf(sc)
	out.Files = s.fileWrite(sc)
	out.Bubbles = append(out.Bubbles, sc.bubbleParams...)
	for _, bc := range sc.bubbleCalls {
		cs := s.lookup(bc.callee)
		if cs == nil || !slices.Contains(cs.Bubbles, bc.arg) {
			continue
		}
		for _, p := range bc.params {
			if !slices.Contains(out.Bubbles, p) {
				out.Bubbles = append(out.Bubbles, p)
			}
		}
	}
	slices.Sort(out.Bubbles)
	for i, gs := range sc.gos {
		if !goLoops[i] {
			continue // it ends by itself
		}
		if ends, typ := s.lifecycle(sc, gs); ends != "" {
			whose := " it returns"
			if !sc.returns[typ] {
				whose = "" // the receiver's
			}
			out.Effects = merge(out.Effects, Effect{Kind: GoroutineEnds, Via: []string{sc.name},
				What: "starts " + gs.what + " that " + ends + " of the " + s.typeName(typ) + whose + " ends",
				Ends: ends, Type: typ})
			continue
		}
		out.Effects = merge(out.Effects, Effect{Kind: GoroutineForever, Via: []string{sc.name},
			What: "starts " + gs.what + " that never ends"})
	}
	return out
}

// maxPerKind bounds the effects of one kind a summary keeps: a rule needs
// one reason, and summaries must stay small.
const maxPerKind = 3

// merge adds e to list unless an effect of the same kind says the same,
// or the kind is full.
func merge(list []Effect, e Effect) []Effect {
	n := 0
	for _, x := range list {
		if x.Kind != e.Kind {
			continue
		}
		if x.What == e.What && x.Ends == e.Ends && x.Type == e.Type {
			return list
		}
		n++
	}
	if n >= maxPerKind {
		return list
	}
	return append(list, e)
}

// clockReads records whether body reads the clock itself (time.Now,
// Since, Until), and where first.
func (s *summariser) clockReads(sc *scan, body *ast.BlockStmt) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || sc.readsClock || !match.IsPkgFunc(s.info, call, "time", "Now", "Since", "Until") {
			return !sc.readsClock
		}
		sc.readsClock = true
		if s.fset != nil {
			p := s.fset.Position(call.Pos())
			sc.clock = filepath.Base(p.Filename) + ":" + strconv.Itoa(p.Line)
		}
		return false
	})
}

// clock returns the first reading of the clock in sc's function, in its
// own code or in a function it calls or references, or nil.
func (s *summariser) clock(sc *scan) *Effect {
	if sc.readsClock {
		what := "reads the clock"
		if sc.clock != "" {
			what += " (" + sc.clock + ")"
		}
		return &Effect{Kind: ReadsClock, Via: []string{sc.name}, What: what}
	}
	for _, st := range sc.sites {
		if cs := s.lookup(st.fn); cs != nil && cs.Clock != nil {
			e := *cs.Clock
			e.Via = append([]string{sc.name}, e.Via...)
			return &e
		}
	}
	return nil
}

// fileWrite returns the first write of the file system by a function sc's
// function calls, references or starts (the standard library's writes
// come from its table, stdFileWrites), or nil.
func (s *summariser) fileWrite(sc *scan) *Effect {
	for _, st := range sc.sites {
		if cs := s.lookup(st.fn); cs != nil && cs.Files != nil {
			e := *cs.Files
			e.Via = append([]string{sc.name}, e.Via...)
			return &e
		}
	}
	return nil
}

// spin returns the first loop that spins on the clock in sc's function,
// in its own code (a loop none of whose callees blocks) or in a function
// it calls, or nil.
func (s *summariser) spin(sc *scan) *Effect {
	for _, sp := range sc.spinning {
		blocked := false
		for _, fn := range sp.callees {
			if cs := s.lookup(fn); cs != nil && cs.Blocks {
				blocked = true
				break
			}
		}
		if blocked {
			continue
		}
		what := "spins on the real clock in a loop that never blocks"
		if sp.where != "" {
			what += " (" + sp.where + ")"
		}
		return &Effect{Kind: Spins, Via: []string{sc.name}, What: what}
	}
	for _, st := range sc.sites {
		if cs := s.lookup(st.fn); cs != nil && cs.Spin != nil {
			e := *cs.Spin
			e.Via = append([]string{sc.name}, e.Via...)
			return &e
		}
	}
	return nil
}
