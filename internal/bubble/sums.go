package bubble

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"time"

	"github.com/unflake/unflake/internal/match"
)

// On a bubble's exact clock a run of waits ends exactly on the sum of
// their durations: consecutive sleeps, the iterations of a counted loop
// of sleeps, the code's own backoffs. When that sum equals a duration the
// code decides at (a TTL, a budget), the decision is taken exactly on the
// boundary, where a strict and a non-strict comparison differ; on the
// real clock every wait overshoots and the boundary is never met. The
// exact-deadline hazard therefore sums runs of waits, not single ones.

// maxUnrolled bounds how many waits a counted loop is unrolled into: a
// longer sequence is cut, and what follows it is unknown.
const maxUnrolled = 4096

// A wait is one wait of a sequence: its constant duration when known.
type wait struct {
	stmt  *ast.ExprStmt
	d     time.Duration
	known bool
	obj   types.Object // the variable slept on, if any
	// at is where the wait runs in the test's order: the wait's own
	// position, or the call of the test's helper that waits.
	at token.Pos

	// restart tells that a call of the code under test that may set its
	// deadline again (a touch, a reset: mayRestart) comes between this
	// wait and the one before, so a run of waits may start here.
	restart bool
}

// waitSeq returns the test's waits (time.Sleep, <-time.After) in body in
// the order they run, a counted loop's body repeated its constant count
// (for i := 0; i < N; i++, for range N): a loop of unknown count gives one
// unknown wait, which ends every run of known ones. Branches are taken
// one after another, which can only add runs, never hide one. Each wait
// says whether a call of the code under test comes before it since the
// previous wait (restart).
func (c *clockScan) waitSeq(body ast.Node) []wait {
	info := c.a.info
	var seq []wait
	called := false // a call of the code since the last wait
	// The test's helpers it is in (their waits run where it calls them).
	var helpers []*types.Func
	var site token.Pos
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		c.inspect(n, func(n ast.Node, _ []ast.Node) bool {
			switch n := n.(type) {
			case *ast.ExprStmt:
				if call, _ := Wait(info, n); call != nil {
					w := wait{stmt: n, obj: c.objOf(call.Args[0]), restart: called, at: n.Pos()}
					if len(helpers) > 0 {
						w.at = site
					}
					w.d, w.known = match.ConstDuration(info, call.Args[0])
					seq = append(seq, w)
					called = false
					return false
				}
			case *ast.CallExpr:
				if h := c.waitingHelper(n); h != nil && !slices.Contains(helpers, h) {
					// tick(t), a helper of the test files that sleeps:
					// its waits are the test's, in its order.
					for _, arg := range n.Args {
						walk(arg)
					}
					if len(helpers) == 0 {
						site = n.Pos()
					}
					helpers = append(helpers, h)
					walk(c.a.decls[h].Body)
					helpers = helpers[:len(helpers)-1]
					return false
				}
				if !match.IsStd(calleePath(info, n)) && !match.IsConversion(info, n) && c.mayRestart(n) {
					called = true
				}
			case *ast.ForStmt:
				count, ok := forTrips(info, n)
				c.unroll(n.Body, count, ok, &seq, &called, walk)
				return false
			case *ast.RangeStmt:
				tv := info.Types[n.X]
				if tv.Value != nil && tv.Value.Kind() == constant.Int {
					count, _ := constant.Int64Val(tv.Value)
					c.unroll(n.Body, max(count, 0), true, &seq, &called, walk)
				} else {
					c.unroll(n.Body, 0, false, &seq, &called, walk)
				}
				return false
			}
			return true
		})
	}
	walk(body)
	return seq
}

// waitingHelper is the function of the test files call runs when it
// waits (a sleep or time.After in its body, or in a helper it calls),
// or nil.
func (c *clockScan) waitingHelper(call *ast.CallExpr) *types.Func {
	fn := match.Callee(c.a.info, call)
	if fn == nil || fn.Pkg() != c.a.pass.Pkg {
		return nil
	}
	fn = fn.Origin()
	d := c.a.decls[fn]
	if d == nil || d.Body == nil || !c.a.testCode(d) {
		return nil
	}
	if !c.waitsIn(d, map[*ast.FuncDecl]bool{}) {
		return nil
	}
	return fn
}

// waitsIn reports whether d, a function of the test files, or one of
// them it calls, waits; seen guards against recursion.
func (c *clockScan) waitsIn(d *ast.FuncDecl, seen map[*ast.FuncDecl]bool) bool {
	if seen[d] {
		return false
	}
	seen[d] = true
	waits := false
	c.inspect(d.Body, func(n ast.Node, _ []ast.Node) bool {
		switch n := n.(type) {
		case *ast.ExprStmt:
			if call, _ := Wait(c.a.info, n); call != nil {
				waits = true
			}
		case *ast.CallExpr:
			if g := match.Callee(c.a.info, n); g != nil && g.Pkg() == c.a.pass.Pkg {
				if gd := c.a.decls[g.Origin()]; gd != nil && gd.Body != nil && c.a.testCode(gd) {
					waits = waits || c.waitsIn(gd, seen)
				}
			}
		}
		return !waits
	})
	return waits
}

// unroll appends the waits of a loop's body count times (known), or, for
// a loop of unknown count that waits, one unknown wait. A body that calls
// the code under test after its last wait restarts at the first wait of
// each later iteration.
func (c *clockScan) unroll(body *ast.BlockStmt, count int64, known bool, seq *[]wait, called *bool, walk func(ast.Node)) {
	start := len(*seq)
	walk(body)
	one := append([]wait(nil), (*seq)[start:]...)
	if len(one) == 0 {
		return
	}
	if !known || count*int64(len(one)) > maxUnrolled {
		*seq = append((*seq)[:start], wait{stmt: one[0].stmt, restart: true})
		*called = true
		return
	}
	*seq = (*seq)[:start]
	for i := range count {
		if i == 1 {
			one[0].restart = *called
		}
		*seq = append(*seq, one...)
	}
}

// forTrips returns the trip count of a loop counted between constants:
// for i := A; i < B; i++ (<=, i += 1, i = i + 1), or down, for i := A;
// i > B; i-- (>=, i -= 1). Another step or a bound that is not a
// constant is unknown.
func forTrips(info *types.Info, loop *ast.ForStmt) (int64, bool) {
	init, ok := loop.Init.(*ast.AssignStmt)
	cond, ok2 := loop.Cond.(*ast.BinaryExpr)
	if !ok || !ok2 || len(init.Lhs) != 1 || len(init.Rhs) != 1 {
		return 0, false
	}
	v := info.ObjectOf(identOf(init.Lhs[0]))
	step, ok := unitStep(info, loop.Post, v)
	if v == nil || !ok || info.ObjectOf(identOf(cond.X)) != v {
		return 0, false
	}
	from, ok := match.ConstInt(info, init.Rhs[0])
	to, ok2 := match.ConstInt(info, cond.Y)
	if !ok || !ok2 {
		return 0, false
	}
	switch {
	case step > 0 && cond.Op == token.LSS:
	case step > 0 && cond.Op == token.LEQ:
		to++
	case step < 0 && cond.Op == token.GTR:
		from, to = to+1, from+1
	case step < 0 && cond.Op == token.GEQ:
		from, to = to, from+1
	default:
		return 0, false
	}
	return max(to-from, 0), true
}

// unitStep returns +1 or -1 when post steps v by one (v++, v--, v += 1,
// v -= 1, v = v + 1, v = v - 1).
func unitStep(info *types.Info, post ast.Stmt, v types.Object) (int, bool) {
	switch p := post.(type) {
	case *ast.IncDecStmt:
		if info.ObjectOf(identOf(p.X)) != v {
			return 0, false
		}
		if p.Tok == token.INC {
			return 1, true
		}
		return -1, true
	case *ast.AssignStmt:
		if len(p.Lhs) != 1 || len(p.Rhs) != 1 || info.ObjectOf(identOf(p.Lhs[0])) != v {
			return 0, false
		}
		rhs, tok := p.Rhs[0], p.Tok
		if tok == token.ASSIGN {
			b, ok := ast.Unparen(rhs).(*ast.BinaryExpr)
			if !ok || info.ObjectOf(identOf(b.X)) != v {
				return 0, false
			}
			rhs = b.Y
			tok = map[token.Token]token.Token{token.ADD: token.ADD_ASSIGN, token.SUB: token.SUB_ASSIGN}[b.Op]
		}
		if one, ok := match.ConstInt(info, rhs); !ok || one != 1 {
			return 0, false
		}
		switch tok {
		case token.ADD_ASSIGN:
			return 1, true
		case token.SUB_ASSIGN:
			return -1, true
		}
	}
	return 0, false
}

// identOf returns e as an identifier, or a blank one.
func identOf(e ast.Expr) *ast.Ident {
	if id, ok := ast.Unparen(e).(*ast.Ident); ok {
		return id
	}
	return &ast.Ident{Name: "_"}
}

// runSums calls f with the start and end of every run of consecutive
// known waits of seq from index from on, and their sum, until f returns
// true; it reports whether one did. With restarts, a run starts only at
// from or at a wait a call of the code comes before.
func runSums(seq []wait, from int, restarts bool, f func(start, end int, sum time.Duration) bool) bool {
	for i := from; i < len(seq); i++ {
		if restarts && i > from && !seq[i].restart {
			continue
		}
		var sum time.Duration
		for j := i; j < len(seq) && seq[j].known; j++ {
			sum += seq[j].d
			if f(i, j, sum) {
				return true
			}
		}
	}
	return false
}

// codeWaits returns where the code under test the bubble would hold (its
// non-test roots) waits on the clock, and the constant durations of those
// waits: a sleep, a timer, a ticker, time.After or AfterFunc, a timer's
// Reset, a context's timeout. unknown names the first wait whose
// duration is not a constant (a backoff that doubles, a computed
// remainder): its runs may add up to any duration.
func (c *clockScan) codeWaits() (consts []time.Duration, first, unknown string) {
	info := c.a.info
	for i, r := range c.rootList {
		if i == 0 || c.a.testCode(r) {
			continue // the test's body (its position may be unknown: the statements after a lead) and its helpers
		}
		c.inspect(r, func(n ast.Node, _ []ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var arg ast.Expr
			switch {
			case match.IsPkgFunc(info, call, "time", "Sleep", "After", "NewTimer", "AfterFunc", "NewTicker", "Tick") && len(call.Args) > 0:
				arg = call.Args[0]
			case match.IsMethod(info, call, "time", "Reset") && len(call.Args) == 1:
				arg = call.Args[0]
			case match.IsPkgFunc(info, call, "context", "WithTimeout", "WithTimeoutCause") && len(call.Args) > 1:
				arg = call.Args[1]
			default:
				return true
			}
			what := c.at(types.ExprString(call), call)
			if first == "" {
				first = what
			}
			if d, ok := match.ConstDuration(info, arg); ok {
				if d > 0 {
					consts = append(consts, d)
				}
			} else if unknown == "" {
				unknown = what
			}
			return true
		})
	}
	return consts, first, unknown
}

// sumOf reports whether d is a sum of the durations parts, each taken any
// number of times (the code's waits may repeat in its loops); a d too
// large to decide counts as one.
func sumOf(d time.Duration, parts []time.Duration) bool {
	if d <= 0 || len(parts) == 0 {
		return false
	}
	g := parts[0]
	for _, p := range parts[1:] {
		g = gcd(g, p)
	}
	if d%g != 0 {
		return false
	}
	n := int64(d / g)
	if n > 1<<16 {
		return true
	}
	can := make([]bool, n+1)
	can[0] = true
	for i := int64(1); i <= n; i++ {
		for _, p := range parts {
			if k := int64(p / g); k <= i && can[i-k] {
				can[i] = true
				break
			}
		}
	}
	return can[n]
}

func gcd(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// mayRestart reports whether call may set a deadline of the code under
// test again (a touch, a reset), so that a run of waits may start after
// it: a call of the package's own function that, or a function of the
// package it calls, stores a reading of the clock (s.seen[k] =
// time.Now(), c.last = now) other than in a local variable; a call of
// code the analysis does not read (another package's, an interface
// method, a function value) may. A read (Valid, Alive) sets nothing.
func (c *clockScan) mayRestart(call *ast.CallExpr) bool {
	fn := match.Callee(c.a.info, call)
	if fn == nil || fn.Pkg() != c.a.pass.Pkg {
		return true
	}
	if c.restarts == nil {
		c.restarts = map[*types.Func]bool{}
	}
	return c.storesReading(fn, c.restarts)
}

// storesReading reports whether fn, or a function of the package it
// calls, stores a reading of the clock outside a local variable; memo
// holds the answers (false while one is being computed: a recursion
// adds nothing).
func (c *clockScan) storesReading(fn *types.Func, memo map[*types.Func]bool) bool {
	fn = fn.Origin()
	if v, ok := memo[fn]; ok {
		return v
	}
	memo[fn] = false
	decl := c.a.decls[fn]
	if decl == nil || decl.Body == nil {
		memo[fn] = fn.Pkg() != c.a.pass.Pkg // not read: it may
		return memo[fn]
	}
	info := c.a.info
	found := false
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if v, ok := c.objOf(l).(*types.Var); ok && !v.IsField() && v.Parent() != nil && v.Pkg() != nil && v.Parent() != v.Pkg().Scope() {
					if _, plain := ast.Unparen(l).(*ast.Ident); plain {
						continue // a local variable
					}
				}
				if i < len(n.Rhs) && c.readsClockExpr(n.Rhs[i]) || len(n.Rhs) == 1 && c.readsClockExpr(n.Rhs[0]) {
					found = true
				}
			}
		case *ast.CallExpr:
			if callee := match.Callee(info, n); callee != nil && callee.Pkg() == c.a.pass.Pkg && c.storesReading(callee, memo) {
				found = true
			}
		}
		return true
	})
	memo[fn] = found
	return found
}

// readsClockExpr reports whether e reads the clock: time.Now, a
// variable or field set to a reading, or any time.Time (a parameter may
// be a reading the caller made).
func (c *clockScan) readsClockExpr(e ast.Expr) bool {
	if match.IsNamed(c.a.info.TypeOf(e), "time", "Time") {
		return true
	}
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if match.IsPkgFunc(c.a.info, n, "time", "Now") {
				found = true
			}
		case *ast.Ident:
			if obj := c.a.info.Uses[n]; obj != nil && c.readings[obj] {
				found = true
			}
		}
		return !found
	})
	return found
}
