package effects

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"

	"github.com/unflake/unflake/internal/match"
)

// A busy-wait on the clock (for time.Since(start) < d {}, or for
// time.Now().Before(deadline) { if ready() { break } }) never blocks, so
// inside a synctest bubble, whose clock moves only when every goroutine
// is durably blocked, the clock never reaches the loop's deadline: the
// test hangs. A loop spins on the clock when its exit depends on a read
// of the clock and nothing in it blocks durably.

// SpinsOnClock reports whether loop spins on the real clock: a condition
// that ends it (the loop's own, or that of an if whose body breaks or
// returns) reads the clock (time.Now, time.Since, time.Until, or a
// variable the loop sets from them), and nothing in the loop blocks
// durably: no channel operation, no select without a default, no
// time.Sleep, no wait on a sync.WaitGroup or sync.Cond, and no call of a
// function for which blocks reports true (nil: none does). What a
// function literal or a go statement in the loop does is not the loop's.
func SpinsOnClock(info *types.Info, loop *ast.ForStmt, blocks func(*types.Func) bool) bool {
	callees, ok := clockLoop(info, loop)
	if !ok {
		return false
	}
	if blocks != nil {
		for _, fn := range callees {
			if blocks(fn) {
				return false
			}
		}
	}
	return true
}

// clockLoop reports whether loop waits for the clock and, seen alone,
// never blocks; callees are the functions it calls, which may block.
func clockLoop(info *types.Info, loop *ast.ForStmt) (callees []*types.Func, ok bool) {
	clockVars := map[*types.Var]bool{}
	readsClock := func(e ast.Node) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.CallExpr:
				if match.IsPkgFunc(info, n, "time", "Now", "Since", "Until") {
					found = true
				}
			case *ast.Ident:
				if v, ok := info.Uses[n].(*types.Var); ok && clockVars[v] {
					found = true
				}
			}
			return !found
		})
		return found
	}
	// The variables the loop sets from the clock (now := time.Now()),
	// in its init, post or body, to a fixed point: elapsed := now.Sub(start).
	for changed := true; changed; {
		changed = false
		ast.Inspect(loop, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.AssignStmt:
				if len(n.Lhs) != len(n.Rhs) {
					return true
				}
				for i, l := range n.Lhs {
					id, ok := ast.Unparen(l).(*ast.Ident)
					if !ok {
						continue
					}
					v, _ := info.ObjectOf(id).(*types.Var)
					if v != nil && !clockVars[v] && timeValued(v.Type()) && readsClock(n.Rhs[i]) {
						clockVars[v] = true
						changed = true
					}
				}
			}
			return true
		})
	}
	exit := loop.Cond != nil && readsClock(loop.Cond)
	ast.Inspect(loop.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit, *ast.GoStmt:
			return false
		case *ast.IfStmt:
			if !exit && leaves(info, n.Body) && (readsClock(n.Cond) || n.Init != nil && readsClock(n.Init)) {
				exit = true
			}
		}
		return true
	})
	if !exit {
		return nil, false
	}
	var blocked bool
	callees, blocked = blocksIn(info, loop)
	if blocked {
		return nil, false
	}
	return callees, true
}

// timeValued reports whether a variable of type t can hold what a read
// of the clock gives or what is computed from it (a time, a duration, an
// elapsed count, a comparison): not an error or a value a call made from
// its arguments (err := q.insert(&w{lastUsed: time.Now()}) holds no time).
func timeValued(t types.Type) bool {
	if match.IsNamed(t, "time", "Time", "Duration") {
		return true
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&(types.IsNumeric|types.IsBoolean) != 0
}

// leaves reports whether body may leave the loop it is in: a break (not
// of an inner loop, switch or select), a goto, a return, or a call that
// ends the goroutine or the process (t.Fatal, t.FailNow, t.Skip, panic,
// os.Exit, log.Fatal): a test's busy-poll often ends in t.Fatal.
func leaves(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	var visit func(n ast.Node, inner bool) bool
	visit = func(n ast.Node, inner bool) bool {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt:
				found = true
			case *ast.CallExpr:
				found = match.IsMethod(info, n, "testing", "Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow") ||
					match.IsPkgFunc(info, n, "os", "Exit") || match.IsPkgFunc(info, n, "log", "Fatal", "Fatalf", "Fatalln", "Panic", "Panicf", "Panicln") ||
					match.IsBuiltin(info, n.Fun, "panic")
			case *ast.BranchStmt:
				switch {
				case n.Tok == token.GOTO, n.Tok == token.BREAK && (!inner || n.Label != nil):
					found = true
				}
			case *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
				if !inner {
					visit(n, true)
					return false
				}
			}
			return !found
		})
		return found
	}
	return visit(body, false)
}

func hasDefault(s *ast.SelectStmt) bool {
	for _, c := range s.Body.List {
		if cc, ok := c.(*ast.CommClause); ok && cc.Comm == nil {
			return true
		}
	}
	return false
}

// stdBlocks reports whether fn, a function of the standard library,
// blocks durably in a synctest bubble: a sleep, or a wait on a wait group
// or condition variable. A mutex and runtime.Gosched do not.
func stdBlocks(fn *types.Func) bool {
	if fn.Pkg() == nil || !inTable(fn.Pkg().Path(), nil) {
		return false
	}
	e, _ := stdLookup(fn)
	return e.blocks
}

// spinSite is a loop of a scanned function that spins on the clock unless
// one of the functions it calls blocks.
type spinSite struct {
	where   string // "file.go:12", or "" when the summariser has no file set
	callees []*types.Func
}

// spins records the loops of body (the function's own and those of the
// goroutines it starts: a goroutine that spins holds the clock as much)
// that spin on the clock.
func (s *summariser) spins(sc *scan, body ast.Node) {
	ast.Inspect(body, func(n ast.Node) bool {
		loop, ok := n.(*ast.ForStmt)
		if !ok {
			return true
		}
		if callees, ok := clockLoop(s.info, loop); ok {
			where := ""
			if s.fset != nil {
				p := s.fset.Position(loop.For)
				where = filepath.Base(p.Filename) + ":" + strconv.Itoa(p.Line)
			}
			sc.spinning = append(sc.spinning, spinSite{where: where, callees: callees})
		}
		return true
	})
}

// blocksIn reports whether n, run on one goroutine, may block durably by
// itself: a channel operation (outside a select with a default), a select
// without a default, a range over a channel, or a standard wait
// (time.Sleep, sync.WaitGroup.Wait, sync.Cond.Wait). A channel held in a
// package-level variable was made outside any bubble (by its initializer):
// blocking on it is not durable. callees are the
// other functions it calls, which may block too: a rule decides from
// their summaries. Function literals and go statements are not n's.
func blocksIn(info *types.Info, n ast.Node) (callees []*types.Func, blocked bool) {
	var visit func(n ast.Node)
	visit = func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if blocked {
				return false
			}
			switch n := n.(type) {
			case *ast.FuncLit, *ast.GoStmt:
				return false
			case *ast.SendStmt:
				blocked = !outsideChan(info, n.Chan)
			case *ast.UnaryExpr:
				blocked = n.Op == token.ARROW && !outsideChan(info, n.X)
			case *ast.SelectStmt:
				if !hasDefault(n) {
					blocked = true
					return false
				}
				// Its communications never block; what its cases
				// run may.
				for _, c := range n.Body.List {
					for _, st := range c.(*ast.CommClause).Body {
						visit(st)
					}
				}
				return false
			case *ast.RangeStmt:
				if tv, ok := info.Types[n.X]; ok {
					if _, ch := tv.Type.Underlying().(*types.Chan); ch {
						blocked = !outsideChan(info, n.X)
					}
				}
			case *ast.CallExpr:
				switch fn := match.Callee(info, n); {
				case fn == nil:
				case stdBlocks(fn):
					blocked = true
				default:
					callees = append(callees, fn.Origin())
				}
			}
			return !blocked
		})
	}
	visit(n)
	return callees, blocked
}

// outsideChan reports whether the channel e is a package-level variable
// (ch, pkg.Events): made outside any synctest bubble by its initializer,
// so that blocking on it is not durable.
func outsideChan(info *types.Info, e ast.Expr) bool {
	var id *ast.Ident
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		if _, field := info.Selections[x]; !field {
			id = x.Sel // a qualified identifier
		}
	}
	if id == nil {
		return false
	}
	v, _ := info.Uses[id].(*types.Var)
	return match.IsPackageLevel(v)
}
