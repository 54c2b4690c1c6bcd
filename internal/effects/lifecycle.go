package effects

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A goroutine that loops ends by a lifecycle method of a value the
// function returns (or of its receiver) when the goroutine waits on a
// struct field that the method closes, sends on, cancels or signals:
//
//   - a channel field it receives from, ranges over or selects on, which
//     the method closes or sends on (NewServer starts go s.loop(), the
//     loop selects on s.done, Close closes s.done);
//   - a context field whose Done it waits on, whose cancel function field
//     the method calls: the two fields are one lifecycle when they are
//     set together from context.WithCancel, WithTimeout or WithDeadline
//     (p.ctx, p.stop = context.WithCancel(...), or through two locals
//     stored in the fields, by assignment or in a composite literal);
//   - a sync.Cond field it waits on, which the method broadcasts or
//     signals, when the method also writes a field the goroutine reads
//     (the flag its loop checks).
//
// A local variable the goroutine copies a field to, and assigns nothing
// else (purgeCtx := p.purgeCtx, done := p.ctx.Done()), is the field. The
// lifecycle methods are those of the type's method set, promoted ones
// included: Release of an embedded *poolCommon ends what poolCommon's
// goroutines wait on for the Pool that embeds it. Anything less visible
// (a channel handed to the goroutine as an argument, another package's
// value) counts as never ending.

// fields is what code does to struct fields: on the waiting side, the
// channel, context and condition fields it waits on and the fields it
// reads; on the ending side, the channel fields it closes or sends on,
// the context fields whose cancel functions it calls, the condition
// fields it signals and the fields it writes.
type fields struct {
	chans map[*types.Var]bool
	ctxs  map[*types.Var]bool
	conds map[*types.Var]bool
	// touched: the fields read (waiting side) or written (ending side).
	touched map[*types.Var]bool
}

func newFields() *fields {
	return &fields{chans: map[*types.Var]bool{}, ctxs: map[*types.Var]bool{}, conds: map[*types.Var]bool{}, touched: map[*types.Var]bool{}}
}

// waits reports whether f, a waiting side, waits on anything a method
// could end.
func (f *fields) waits() bool {
	return f != nil && (len(f.chans) > 0 || len(f.ctxs) > 0 || len(f.conds) > 0)
}

// meets reports whether g, an ending side, ends something f, a waiting
// side, waits on.
func (f *fields) meets(g *fields) bool {
	if f == nil || g == nil {
		return false
	}
	if overlaps(f.chans, g.chans) || overlaps(f.ctxs, g.ctxs) {
		return true
	}
	// A broadcast wakes the waiter, which waits again unless the
	// method changed what its loop checks.
	return overlaps(f.conds, g.conds) && overlaps(f.touched, g.touched)
}

func overlaps(a, b map[*types.Var]bool) bool {
	for v := range a {
		if b[v] {
			return true
		}
	}
	return false
}

func (f *fields) add(g *fields) {
	if g == nil {
		return
	}
	for _, p := range [][2]map[*types.Var]bool{{f.chans, g.chans}, {f.ctxs, g.ctxs}, {f.conds, g.conds}, {f.touched, g.touched}} {
		for v := range p[1] {
			p[0][v] = true
		}
	}
}

// lifecycleNames are tried first, in this order, among the exported
// methods of a returned type.
var lifecycleNames = []string{"Close", "Stop", "Shutdown", "Cancel", "Quit", "Terminate"}

// lifecycle returns the method that ends the goroutine gs, which sc's
// function starts, and the type it belongs to, or "", "".
func (s *summariser) lifecycle(sc *scan, gs goSite) (ends, typ string) {
	var w *fields
	switch {
	case gs.lit != nil:
		w = s.fieldsIn(gs.lit.Body, true, 2)
	case gs.callee != nil:
		w = s.fieldsOf(gs.callee, true, 2)
	}
	if !w.waits() {
		return "", ""
	}
	var types_ []string
	for t := range sc.returns {
		types_ = append(types_, t)
	}
	sort.Strings(types_)
	if sc.recv != "" && !sc.returns[sc.recv] {
		// A method starting a goroutine on its receiver (Start,
		// Clear restarting a worker), which another method ends.
		types_ = append(types_, sc.recv)
	}
	for _, key := range types_ {
		named := s.namedType(key)
		if named == nil {
			continue
		}
		for _, m := range lifecycleOrder(named) {
			if w.meets(s.fieldsOf(m, false, 3)) {
				return m.Name(), key
			}
		}
	}
	return "", ""
}

// namedType returns the package's named type with the given key.
func (s *summariser) namedType(key string) *types.Named {
	path := s.pkg.Path()
	if len(key) <= len(path)+1 || key[:len(path)] != path || key[len(path)] != '.' {
		return nil
	}
	tn, _ := s.pkg.Scope().Lookup(key[len(path)+1:]).(*types.TypeName)
	if tn == nil {
		return nil
	}
	n, _ := tn.Type().(*types.Named)
	return n
}

// lifecycleOrder returns the exported methods of n's method set (a
// pointer's: promoted methods of embedded fields too), lifecycle names
// first.
func lifecycleOrder(n *types.Named) []*types.Func {
	var first, rest []*types.Func
	ms := types.NewMethodSet(types.NewPointer(n))
	for i := 0; i < ms.Len(); i++ {
		m, ok := ms.At(i).Obj().(*types.Func)
		switch {
		case !ok || !m.Exported():
		case slices.Contains(lifecycleNames, m.Name()):
			first = append(first, m)
		default:
			rest = append(rest, m)
		}
	}
	sort.Slice(first, func(i, j int) bool {
		return slices.Index(lifecycleNames, first[i].Name()) < slices.Index(lifecycleNames, first[j].Name())
	})
	return append(first, rest...)
}

// fieldsOf returns what fn's body waits on (wait) or ends (!wait),
// following the package's own calls depth levels deep.
func (s *summariser) fieldsOf(fn *types.Func, wait bool, depth int) *fields {
	fn = fn.Origin()
	memo := s.ends
	if wait {
		memo = s.waits
	}
	if f, ok := memo[fn]; ok {
		return f
	}
	fd := s.decls[fn]
	if fd == nil || fd.Body == nil || depth < 0 {
		return nil
	}
	memo[fn] = nil // a recursive call adds nothing
	f := s.fieldsIn(fd.Body, wait, depth)
	if depth == 0 {
		delete(memo, fn) // not followed fully: do not keep
		return f
	}
	memo[fn] = f
	return f
}

func (s *summariser) fieldsIn(body *ast.BlockStmt, wait bool, depth int) *fields {
	f := newFields()
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.UnaryExpr:
			switch {
			case wait && n.Op == token.ARROW:
				s.waitOn(f, n.X)
			case !wait && n.Op == token.AND:
				if v := s.field(n.X); v != nil {
					f.touched[v] = true // atomic.StoreInt32(&p.state, 1)
				}
			}
		case *ast.RangeStmt:
			if wait {
				s.waitOn(f, n.X)
			}
		case *ast.SendStmt:
			if v := s.field(n.Chan); !wait && v != nil {
				f.chans[v] = true
			}
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if v := s.field(l); !wait && v != nil {
					f.touched[v] = true
				}
			}
		case *ast.IncDecStmt:
			if v := s.field(n.X); !wait && v != nil {
				f.touched[v] = true
			}
		case *ast.SelectorExpr:
			if v := s.field(n); wait && v != nil {
				f.touched[v] = true
			}
		case *ast.CallExpr:
			s.fieldCall(f, n, wait, depth)
		}
		return true
	})
	return f
}

// waitOn records the channel field that e, which the code receives from
// or ranges over, is: the field itself, a local copy of it, or the Done
// channel of a context field (directly or through a local copy).
func (s *summariser) waitOn(f *fields, e ast.Expr) {
	if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
		if v := s.doneOf(call); v != nil {
			f.ctxs[v] = true
		}
		return
	}
	v := s.fieldOrCopy(e)
	if v == nil {
		return
	}
	if match.IsNamed(v.Type(), "context", "Context") {
		f.ctxs[v] = true // done := p.ctx.Done(): the copy stands for the context
		return
	}
	if _, ok := v.Type().Underlying().(*types.Chan); ok {
		f.chans[v] = true
	}
}

// doneOf returns the context field whose Done method call calls (p.ctx.Done(),
// or ctx.Done() on a local copy of p.ctx), or nil.
func (s *summariser) doneOf(call *ast.CallExpr) *types.Var {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Done" || len(call.Args) != 0 {
		return nil
	}
	if v := s.fieldOrCopy(sel.X); v != nil && match.IsNamed(v.Type(), "context", "Context") {
		return v
	}
	return nil
}

func (s *summariser) fieldCall(f *fields, call *ast.CallExpr, wait bool, depth int) {
	fun := ast.Unparen(call.Fun)
	if id, ok := fun.(*ast.Ident); ok && !wait && len(call.Args) == 1 {
		if b, ok := s.info.Uses[id].(*types.Builtin); ok && b.Name() == "close" {
			if v := s.fieldOrCopy(call.Args[0]); v != nil {
				f.chans[v] = true
			}
			return
		}
	}
	if sel, ok := fun.(*ast.SelectorExpr); ok {
		v := s.fieldOrCopy(sel.X)
		if fv := s.fieldOrCopy(sel); fv != nil && !wait {
			if _, isFunc := fv.Type().Underlying().(*types.Signature); isFunc {
				for ctx := range s.cancelled(fv) {
					f.ctxs[ctx] = true // p.stopPurge() cancels p.purgeCtx
				}
				return
			}
		}
		if v != nil && match.IsNamed(v.Type(), "sync", "Cond") {
			switch name := sel.Sel.Name; {
			case wait && name == "Wait", !wait && (name == "Broadcast" || name == "Signal"):
				f.conds[v] = true
			}
		}
		if v != nil && !wait && writes(sel.Sel.Name) {
			f.touched[v] = true // p.closed.Store(true)
		}
	}
	if fn := match.Callee(s.info, call); fn != nil && fn.Pkg() == s.pkg && depth > 0 {
		f.add(s.fieldsOf(fn, wait, depth-1))
	}
}

// writes reports whether a method of that name changes its receiver, as
// sync/atomic's types' do.
func writes(name string) bool {
	for _, p := range []string{"Store", "Swap", "CompareAndSwap", "Add", "Or", "And"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// field returns the struct field e selects (x.f), or nil.
func (s *summariser) field(e ast.Expr) *types.Var {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	if x, ok := s.info.Selections[sel]; ok && x.Kind() == types.FieldVal {
		if v, ok := x.Obj().(*types.Var); ok {
			return v.Origin()
		}
	}
	return nil
}

// fieldOrCopy returns the struct field e selects, or that the local
// variable e holds (see copies), or nil.
func (s *summariser) fieldOrCopy(e ast.Expr) *types.Var {
	if v := s.field(e); v != nil {
		return v
	}
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return nil
	}
	v, ok := s.info.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	s.findCopies()
	return s.copies[v]
}

// findCopies fills s.copies, the local variables of the package whose
// every assignment copies one struct field (purgeCtx := p.purgeCtx) or
// the Done channel of one context field (done := p.ctx.Done()), mapped to
// that field; s.pairs, the cancel function fields mapped to the context
// fields set together with them; and s.cancelOnly, the function fields
// that hold nothing but such cancel functions.
func (s *summariser) findCopies() {
	if s.copies != nil {
		return
	}
	s.copies = map[*types.Var]*types.Var{}
	s.pairs = map[*types.Var]map[*types.Var]bool{}
	s.cancelOnly = map[*types.Var]bool{}
	other := map[*types.Var]bool{} // locals assigned anything else
	writes := map[*types.Var]int{} // assignments of each local
	local := func(e ast.Expr) *types.Var {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok || id.Name == "_" {
			return nil
		}
		v, _ := s.info.ObjectOf(id).(*types.Var)
		if v == nil || v.IsField() || match.IsPackageLevel(v) {
			return nil
		}
		return v
	}
	written := func(e ast.Expr) {
		if v := local(e); v != nil {
			writes[v]++
		}
	}
	copyOf := func(l, r ast.Expr) {
		v := local(l)
		if v == nil {
			return
		}
		from := s.field(r)
		if call, ok := ast.Unparen(r).(*ast.CallExpr); ok && from == nil {
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if ok && sel.Sel.Name == "Done" && len(call.Args) == 0 {
				if c := s.field(sel.X); c != nil && match.IsNamed(c.Type(), "context", "Context") {
					from = c
				}
			}
		}
		switch {
		case from == nil:
			other[v] = true
		case s.copies[v] != nil && s.copies[v] != from:
			other[v] = true
		default:
			s.copies[v] = from
		}
	}
	// Context and cancel function pairs: made by one call of
	// context.WithCancel and the like, into fields directly or into
	// locals that are then stored in fields.
	type pair struct{ ctx, cancel ast.Expr }
	type store struct {
		field *types.Var
		value ast.Expr
	}
	var made []pair
	var stores []store // fields assigned one value each
	for _, file := range s.files {
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					written(l)
				}
				if len(n.Lhs) == 2 && len(n.Rhs) == 1 && isWithCancel(s.info, n.Rhs[0]) {
					made = append(made, pair{n.Lhs[0], n.Lhs[1]})
					for _, l := range n.Lhs {
						if v := local(l); v != nil {
							other[v] = true
						}
					}
					return true
				}
				if len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						copyOf(l, n.Rhs[i])
						if f := s.field(l); f != nil {
							stores = append(stores, store{f, n.Rhs[i]})
						}
					}
					return true
				}
				for _, l := range n.Lhs {
					if v := local(l); v != nil {
						other[v] = true
					}
					if f := s.field(l); f != nil {
						stores = append(stores, store{f, nil}) // a, b = f(): unknown
					}
				}
			case *ast.ValueSpec:
				for _, name := range n.Names {
					if len(n.Values) > 0 {
						written(name)
					}
				}
				if len(n.Names) == 2 && len(n.Values) == 1 && isWithCancel(s.info, n.Values[0]) {
					made = append(made, pair{n.Names[0], n.Names[1]})
					return true
				}
				for i, name := range n.Names {
					if i < len(n.Values) && len(n.Values) == len(n.Names) {
						copyOf(name, n.Values[i])
					} else if v := local(name); v != nil {
						other[v] = true
					}
				}
			case *ast.RangeStmt:
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if v := local(e); v != nil {
						other[v] = true
						writes[v] += 2
					}
				}
			case *ast.UnaryExpr:
				if v := local(n.X); n.Op == token.AND && v != nil {
					other[v] = true // written through a pointer
					writes[v] += 2
				}
				if f := s.field(n.X); n.Op == token.AND && f != nil {
					stores = append(stores, store{f, nil})
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok {
					if f, ok := s.info.Uses[id].(*types.Var); ok && f.IsField() {
						stores = append(stores, store{f.Origin(), n.Value})
					}
				}
			}
			return true
		})
	}
	for v := range other {
		delete(s.copies, v)
	}
	// A local made by the pair's call and assigned nothing else stands
	// for its value wherever it is stored.
	stored := map[*types.Var][]*types.Var{}
	for _, st := range stores {
		if v := local(st.value); v != nil {
			stored[v] = append(stored[v], st.field)
		}
	}
	cancels := map[*types.Var]bool{} // locals holding a cancel function
	fieldsOf := func(e ast.Expr) []*types.Var {
		if f := s.field(e); f != nil {
			return []*types.Var{f}
		}
		if v := local(e); v != nil && writes[v] == 1 {
			return stored[v]
		}
		return nil
	}
	// Each assignment of a cancel field pairs it with the context fields
	// its call's context went to; it cancels those every assignment
	// names, and only when it holds nothing but such cancel functions
	// (or nil).
	sets := map[*types.Var][]map[*types.Var]bool{}
	for _, p := range made {
		if v := local(p.cancel); v != nil && writes[v] == 1 {
			cancels[v] = true
		}
		for _, c := range fieldsOf(p.cancel) {
			ctxs := map[*types.Var]bool{}
			for _, x := range fieldsOf(p.ctx) {
				ctxs[x] = true
			}
			sets[c] = append(sets[c], ctxs)
		}
	}
	invalid := map[*types.Var]bool{}
	for _, st := range stores {
		if len(sets[st.field]) == 0 {
			continue
		}
		if v := local(st.value); v != nil && cancels[v] {
			continue
		}
		if id, ok := ast.Unparen(st.value).(*ast.Ident); ok && s.info.Uses[id] == types.Universe.Lookup("nil") {
			continue
		}
		invalid[st.field] = true // holds another function too
	}
	for c, list := range sets {
		if invalid[c] {
			continue
		}
		s.cancelOnly[c] = true
		both := map[*types.Var]bool{}
		for x := range list[0] {
			every := true
			for _, other := range list[1:] {
				every = every && other[x]
			}
			if every {
				both[x] = true
			}
		}
		s.pairs[c] = both
	}
}

// cancelled returns the context fields that calling the function field
// fn cancels: those set together with it (see findCopies).
func (s *summariser) cancelled(fn *types.Var) map[*types.Var]bool {
	s.findCopies()
	return s.pairs[fn]
}

// isCancelField reports whether e selects a function field that holds
// nothing but the cancel functions of contexts (see findCopies): calling
// it has no effect but ending what waits on them.
func (s *summariser) isCancelField(e ast.Expr) bool {
	f := s.field(e)
	if f == nil {
		return false
	}
	s.findCopies()
	return s.cancelOnly[f]
}

// isWithCancel reports whether e calls one of the context functions that
// return a context and the function that cancels it.
func isWithCancel(info *types.Info, e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := match.Callee(info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "context" {
		return false
	}
	switch fn.Name() {
	case "WithCancel", "WithCancelCause", "WithTimeout", "WithTimeoutCause", "WithDeadline", "WithDeadlineCause":
		return true
	}
	return false
}

// passOn returns what e, goroutines a callee starts that method e.Ends of
// a value of type e.Type ends, means for sc's function: still ended the
// same way when the function returns such a value or is a method of that
// type; ended by a lifecycle method of a value the function returns when
// that method calls e.Ends (Cache.Close calling its policy's Close); not
// there at all when the function ends them itself (it calls or refers to
// e.Ends, or is e.Ends); ended by the same method promoted to a type the
// function returns, which embeds e.Type; else never ending. ok is false when there is no
// effect left.
func (s *summariser) passOn(sc *scan, e Effect) (_ Effect, ok bool) {
	method := e.Type + "." + e.Ends
	switch {
	case sc.refs[method] || sc.key == method:
		return e, false
	case sc.returns[e.Type] || sc.recv == e.Type:
		return e, true
	}
	var keys []string
	for t := range sc.returns {
		keys = append(keys, t)
	}
	sort.Strings(keys)
	for _, key := range keys {
		named := s.namedType(key)
		if named == nil {
			continue
		}
		for _, m := range lifecycleOrder(named) {
			// The method itself, promoted from an embedded field
			// (Pool embeds *poolCommon, whose Release ends them),
			// or one that calls it.
			if Key(m) == method || s.calls(m, e.Ends, method, 3, map[*types.Func]bool{}) {
				return Effect{Kind: GoroutineEnds, Via: e.Via,
					What: "starts a goroutine that " + m.Name() + " of the " + s.typeName(key) + " it returns ends",
					Ends: m.Name(), Type: key}, true
			}
		}
	}
	return Effect{Kind: GoroutineForever, Via: e.Via, What: "starts a goroutine that never ends"}, true
}

// calls reports whether fn's body, or the package's functions it calls
// (depth levels deep), calls the method with the given key, or a method
// of that name through an interface.
func (s *summariser) calls(fn *types.Func, name, key string, depth int, seen map[*types.Func]bool) bool {
	fn = fn.Origin()
	fd := s.decls[fn]
	if fd == nil || fd.Body == nil || seen[fn] {
		return false
	}
	seen[fn] = true
	found := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if found || !ok {
			return !found
		}
		g, ok := s.info.Uses[id].(*types.Func)
		if !ok {
			return true
		}
		recv := g.Type().(*types.Signature).Recv()
		switch {
		case Key(g) == key:
			found = true
		case recv != nil && types.IsInterface(recv.Type()) && g.Name() == name:
			found = true
		case depth > 0 && g.Pkg() == s.pkg:
			found = s.calls(g, name, key, depth-1, seen)
		}
		return !found
	})
	return found
}

// typeName names the named type with the given key for a message, by its
// package's name: "ristretto.Cache" for github.com/dgraph-io/ristretto/v2.Cache.
func (s *summariser) typeName(key string) string {
	if n := s.namedType(key); n != nil {
		return n.Obj().Pkg().Name() + "." + n.Obj().Name()
	}
	return key[strings.LastIndex(key, "/")+1:]
}
