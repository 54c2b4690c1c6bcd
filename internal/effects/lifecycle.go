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
// function returns when the goroutine waits on a struct field (a channel
// it receives from or ranges over, a context whose Done it selects on)
// that the method closes, sends on or cancels: NewServer starts
// go s.loop(), the loop selects on s.done, and s.Close closes s.done.
// Anything less visible (the channel passed through a local variable,
// another package's value) counts as never ending.

// fields is what code does to struct fields: the channel fields it waits
// on (or closes and sends on), and whether it waits on a context field
// (or calls a cancel function field).
type fields struct {
	chans map[*types.Var]bool
	ctx   bool
}

func (f *fields) meets(g *fields) bool {
	if f == nil || g == nil {
		return false
	}
	if f.ctx && g.ctx {
		return true
	}
	for v := range f.chans {
		if g.chans[v] {
			return true
		}
	}
	return false
}

func (f *fields) add(g *fields) {
	if g == nil {
		return
	}
	f.ctx = f.ctx || g.ctx
	for v := range g.chans {
		f.chans[v] = true
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
	if w == nil || !w.ctx && len(w.chans) == 0 {
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

// lifecycleOrder returns the exported methods of n, lifecycle names first.
func lifecycleOrder(n *types.Named) []*types.Func {
	var first, rest []*types.Func
	for i := 0; i < n.NumMethods(); i++ {
		m := n.Method(i)
		switch {
		case !m.Exported():
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
	f := &fields{chans: map[*types.Var]bool{}}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.UnaryExpr:
			if wait && n.Op == token.ARROW {
				if v := s.field(n.X); v != nil {
					f.chans[v] = true
				}
			}
		case *ast.RangeStmt:
			if v := s.field(n.X); wait && v != nil {
				f.chans[v] = true
			}
		case *ast.SendStmt:
			if v := s.field(n.Chan); !wait && v != nil {
				f.chans[v] = true
			}
		case *ast.CallExpr:
			s.fieldCall(f, n, wait, depth)
		}
		return true
	})
	return f
}

func (s *summariser) fieldCall(f *fields, call *ast.CallExpr, wait bool, depth int) {
	fun := ast.Unparen(call.Fun)
	if id, ok := fun.(*ast.Ident); ok && !wait && len(call.Args) == 1 {
		if b, ok := s.info.Uses[id].(*types.Builtin); ok && b.Name() == "close" {
			if v := s.field(call.Args[0]); v != nil {
				f.chans[v] = true
			}
			return
		}
	}
	if sel, ok := fun.(*ast.SelectorExpr); ok {
		if v := s.field(sel); v != nil && !wait {
			if _, isFunc := v.Type().Underlying().(*types.Signature); isFunc {
				f.ctx = true // s.cancel()
				return
			}
		}
		if wait && sel.Sel.Name == "Done" {
			if v := s.field(sel.X); v != nil && match.IsNamed(v.Type(), "context", "Context") {
				f.ctx = true // <-s.ctx.Done()
				return
			}
		}
	}
	if fn := match.Callee(s.info, call); fn != nil && fn.Pkg() == s.pkg && depth > 0 {
		f.add(s.fieldsOf(fn, wait, depth-1))
	}
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

// passOn returns what e, goroutines a callee starts that method e.Ends of
// a value of type e.Type ends, means for sc's function: still ended the
// same way when the function returns such a value or is a method of that
// type; ended by a lifecycle method of a value the function returns when
// that method calls e.Ends (Cache.Close calling its policy's Close); not
// there at all when the function ends them itself (it calls or refers to
// e.Ends, or is e.Ends); else never ending. ok is false when there is no
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
			if s.calls(m, e.Ends, method, 3, map[*types.Func]bool{}) {
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
