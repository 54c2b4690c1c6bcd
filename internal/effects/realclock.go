package effects

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"

	"github.com/unflake/unflake/internal/match"
)

// A package may keep its own idea of now: a coarse clock (VictoriaMetrics'
// fasttime, fasthttp's coarse time) is an atomic that a goroutine the
// package's init starts refreshes from a ticker every millisecond, so a
// hot path reads an atomic instead of calling time.Now. That goroutine
// runs outside every synctest bubble, on the real clock: in a bubble a
// 200ms wait passes in no real time, the coarse clock does not move, and
// a lease that wrongly lapses early has not lapsed for the code (red team
// batch 20, coarseclock). Reading such a variable is a reading of the
// real clock that no bubble controls, whatever package holds it.

// initClockKeepers returns the package-level variables of the package
// that a goroutine started during its initialisation writes with a value
// taken from the clock, each with a phrase naming the goroutine. A
// goroutine is started during initialisation when a go statement is in
// an init function, in a package-level variable's initialiser, or in a
// function of the package they call; what it runs includes the functions
// of the package it calls. A value is taken from the clock when it comes
// from time.Now, from a receive of a time.Time (a ticker's channel, by
// <- or range), or from a local variable set from one.
func (s *summariser) initClockKeepers() map[*types.Var]string {
	if s.realClock != nil {
		return s.realClock
	}
	s.realClock = map[*types.Var]string{}
	// The code that runs at initialisation: init bodies, initialisers,
	// and the package's functions they call.
	var roots []ast.Node
	for _, f := range s.files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name == "init" && d.Recv == nil && d.Body != nil {
					roots = append(roots, d.Body)
				}
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					for _, sp := range d.Specs {
						for _, v := range sp.(*ast.ValueSpec).Values {
							roots = append(roots, v)
						}
					}
				}
			}
		}
	}
	if len(roots) == 0 {
		return s.realClock
	}
	// The go statements initialisation reaches, and where.
	type started struct {
		body ast.Node
		at   string
	}
	var gos []started
	seen := map[*types.Func]bool{}
	var visit func(n ast.Node)
	visit = func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				at := s.where(n.Pos())
				if lit, ok := ast.Unparen(n.Call.Fun).(*ast.FuncLit); ok {
					gos = append(gos, started{lit.Body, at})
				} else if fn := match.Callee(s.info, n.Call); fn != nil && s.decls[fn.Origin()] != nil {
					gos = append(gos, started{s.decls[fn.Origin()].Body, at})
				}
				return false
			case *ast.CallExpr:
				if fn := match.Callee(s.info, n); fn != nil && fn.Pkg() == s.pkg && !seen[fn.Origin()] {
					if d := s.decls[fn.Origin()]; d != nil && d.Body != nil {
						seen[fn.Origin()] = true
						visit(d.Body)
					}
				}
			}
			return true
		})
	}
	for _, r := range roots {
		visit(r)
	}
	for _, g := range gos {
		bodies := []ast.Node{g.body}
		inGo := map[*types.Func]bool{}
		for i := 0; i < len(bodies); i++ {
			ast.Inspect(bodies[i], func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if fn := match.Callee(s.info, call); fn != nil && fn.Pkg() == s.pkg && !inGo[fn.Origin()] {
						if d := s.decls[fn.Origin()]; d != nil && d.Body != nil {
							inGo[fn.Origin()] = true
							bodies = append(bodies, d.Body)
						}
					}
				}
				return true
			})
		}
		for _, b := range bodies {
			for v := range s.clockWrites(b) {
				if _, ok := s.realClock[v]; !ok {
					at := ""
					if g.at != "" {
						at = " (" + g.at + ")"
					}
					s.realClock[v] = "kept from the real clock by a goroutine " + s.pkg.Name() + "'s initialisation starts" + at + ", outside every synctest bubble"
				}
			}
		}
	}
	return s.realClock
}

// clockWrites returns the package-level variables of the package that
// body writes with a value taken from the clock (see initClockKeepers):
// assigned one, or handed one by a method call on them or a call handed
// their address (now.Store(t.UnixNano()), atomic.StoreInt64(&now, n)).
func (s *summariser) clockWrites(body ast.Node) map[*types.Var]bool {
	derived := map[types.Object]bool{}
	isTimeChan := func(e ast.Expr) bool {
		ch, ok := s.info.TypeOf(e).Underlying().(*types.Chan)
		return ok && isTimeType(ch.Elem())
	}
	from := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.CallExpr:
				found = found || match.IsPkgFunc(s.info, n, "time", "Now")
			case *ast.UnaryExpr:
				found = found || n.Op == token.ARROW && isTimeChan(n.X)
			case *ast.Ident:
				found = found || derived[s.info.ObjectOf(n)]
			}
			return !found
		})
		return found
	}
	mark := func(e ast.Expr) bool {
		if id, ok := ast.Unparen(e).(*ast.Ident); ok {
			if obj := s.info.ObjectOf(id); obj != nil && !derived[obj] {
				derived[obj] = true
				return true
			}
		}
		return false
	}
	// Locals to a fixed point; each round only adds marks.
	for changed := true; changed; {
		changed = false
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if len(n.Lhs) == len(n.Rhs) && from(n.Rhs[i]) || len(n.Rhs) == 1 && from(n.Rhs[0]) {
						changed = mark(l) || changed
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if len(n.Values) == len(n.Names) && from(n.Values[i]) || len(n.Values) == 1 && from(n.Values[0]) {
						changed = mark(id) || changed
					}
				}
			case *ast.RangeStmt:
				if n.Key != nil && isTimeChan(n.X) {
					changed = mark(n.Key) || changed
				}
			}
			return true
		})
	}
	out := map[*types.Var]bool{}
	global := func(target ast.Expr) {
		if v := match.Root(s.info, target); match.IsPackageLevel(v) && v.Pkg() == s.pkg {
			out[v] = true
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if len(n.Lhs) == len(n.Rhs) && from(n.Rhs[i]) || len(n.Rhs) == 1 && from(n.Rhs[0]) {
					global(l)
				}
			}
		case *ast.CallExpr:
			hasReading := false
			for _, a := range n.Args {
				hasReading = hasReading || from(a)
			}
			if !hasReading {
				return true
			}
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
				if _, isMethod := s.info.Selections[sel]; isMethod {
					global(sel.X)
				}
			}
			for _, a := range n.Args {
				if u, ok := ast.Unparen(a).(*ast.UnaryExpr); ok && u.Op == token.AND {
					global(u.X)
				}
			}
		}
		return true
	})
	return out
}

// isTimeType reports whether t is time.Time.
func isTimeType(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time"
}

// realClockReads records whether body reads a variable a goroutine of
// the package's initialisation keeps from the real clock, and which.
func (s *summariser) realClockReads(sc *scan, body *ast.BlockStmt) {
	keepers := s.initClockKeepers()
	if len(keepers) == 0 {
		return
	}
	ast.Inspect(body, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || sc.realClock != "" {
			return sc.realClock == ""
		}
		if v, ok := s.info.Uses[id].(*types.Var); ok {
			if why, ok := keepers[v]; ok {
				sc.realClock = "reads " + s.pkg.Name() + "." + v.Name()
				if at := s.where(id.Pos()); at != "" {
					sc.realClock += " (" + at + ")"
				}
				sc.realClock += ", " + why
			}
		}
		return true
	})
}

// realClockOf returns the first read of real-clock state (realClockReads)
// in sc's function, in its own code or in a function it calls or
// references, or nil.
func (s *summariser) realClockOf(sc *scan) *Effect {
	if sc.realClock != "" {
		return &Effect{Kind: ReadsRealClock, Via: []string{sc.name}, What: sc.realClock}
	}
	for _, st := range sc.sites {
		if cs := s.lookup(st.fn); cs != nil && cs.RealClock != nil {
			e := *cs.RealClock
			e.Via = append([]string{sc.name}, e.Via...)
			return &e
		}
	}
	return nil
}

// where is "file.go:12" for pos, or "" when the file set is not known.
func (s *summariser) where(pos token.Pos) string {
	if s.fset == nil || !pos.IsValid() {
		return ""
	}
	p := s.fset.Position(pos)
	return filepath.Base(p.Filename) + ":" + strconv.Itoa(p.Line)
}
