package effects

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"sort"

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
