package verify

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"math"
	"time"
)

// Two more mutants aimed at a clock change (aim.go), for what virtual
// time does not see (issue 28, the sixth red-team batch):
//
//   - more work: in a synctest bubble, or on an exact fake clock, CPU
//     work takes no time: the clock moves only when every goroutine
//     waits. A bug that makes the code slow by computing too much (a
//     KDF's cost, a loop's bound a thousand times too high) is late in
//     real time, where the original fails at its check, and on time in
//     the bubble. The mutant makes the bound of a counted loop that only
//     computes (for i := 0; i < N; i++, for range N, with N a constant
//     or derived from one) many times larger.
//   - default 0: a package-level duration of a package that arms timers
//     (a schedule delay, a flush interval; given to a timer directly or
//     through a field or an options struct) made 0 at each of its uses
//     at once, as a bug in the default would be: a timer re-armed with
//     Reset(0) refires at one instant forever, and the bubble, whose
//     clock moves only when every goroutine waits, hangs where the
//     original failed at its check ("nothing exported yet"). Zeroing
//     each use alone (zeroed) misses it: a timer made 0 once fires
//     early, then re-arms with the default. Where 0 is invalid (a
//     ticker's period) the use is made 1ns, which refires as often.

// The work mutant makes a loop run about workIterations times in all,
// its bound made at least minWork and at most maxWork times larger
// (maxWork when the bound is not a constant): enough for a loop of a
// hash or a KDF round to take a second or so of real time, too little
// for a trivial body to hang the original past its timeout (which only
// makes the mutant tell nothing: a hang in both runs is the same catch).
const (
	workIterations = 1 << 22
	minWork        = 16
	maxWork        = 4096
	workTimeout    = 5 * time.Second // the more time a work mutant's runs get (mutateTest)
)

// aimLoop returns the site of a work mutant a loop statement is, or nil:
// the bound of a counted loop (for i := 0; i < N; i++, or N > i; for
// range N) whose bound is a constant or mentions one of the package's,
// and whose body only computes (no channel operation, goroutine, select,
// or call of the time package or of a Wait method: those take virtual
// time, or hang the original where the bubble would too).
func (c *collector) aimLoop(n ast.Node, encl string) *target {
	var bound ast.Expr
	var body *ast.BlockStmt
	switch n := n.(type) {
	case *ast.ForStmt:
		bound, body = c.countedBound(n), n.Body
	case *ast.RangeStmt:
		if tv, ok := c.info.Types[n.X]; ok && tv.Type != nil {
			if b, ok := tv.Type.Underlying().(*types.Basic); ok && b.Info()&types.IsInteger != 0 {
				bound = n.X
			}
		}
		body = n.Body
	}
	if bound == nil || !c.computesOnly(body) {
		return nil
	}
	tv, ok := c.info.Types[bound]
	if !ok || tv.Type == nil {
		return nil
	}
	typ, limit := c.intType(tv.Type)
	if typ == "" {
		return nil
	}
	factor := int64(maxWork)
	if tv.Value != nil {
		n, exact := constant.Int64Val(constant.ToInt(tv.Value))
		if !exact || n <= 0 {
			return nil
		}
		factor = min(max(workIterations/n, minWork), maxWork)
		if n > limit/factor {
			return nil // the larger bound would overflow its type
		}
	} else if !c.mentionsConst(bound) {
		return nil
	}
	a := &aimSite{what: workBound, typ: typ, factor: factor, shown: "loop bound " + c.text(bound)}
	return &target{file: c.file, src: c.src, pkgEnd: c.pkgEnd, form: exprForm, encl: encl, site: a,
		start: c.fset.Position(bound.Pos()).Offset, end: c.fset.Position(bound.End()).Offset, line: c.fset.Position(bound.Pos()).Line}
}

// countedBound returns the bound of for i := ...; i < N; i++ (or i <= N,
// N > i, N >= i; i += k), or nil.
func (c *collector) countedBound(n *ast.ForStmt) ast.Expr {
	cond, ok := n.Cond.(*ast.BinaryExpr)
	if !ok {
		return nil
	}
	var counter *ast.Ident
	var bound ast.Expr
	switch cond.Op {
	case token.LSS, token.LEQ:
		counter, _ = ast.Unparen(cond.X).(*ast.Ident)
		bound = cond.Y
	case token.GTR, token.GEQ:
		counter, _ = ast.Unparen(cond.Y).(*ast.Ident)
		bound = cond.X
	}
	if counter == nil {
		return nil
	}
	v := c.info.Uses[counter]
	same := func(e ast.Expr) bool {
		id, ok := ast.Unparen(e).(*ast.Ident)
		return ok && v != nil && c.info.Uses[id] == v
	}
	switch post := n.Post.(type) {
	case *ast.IncDecStmt:
		if post.Tok == token.INC && same(post.X) {
			return bound
		}
	case *ast.AssignStmt:
		if post.Tok == token.ADD_ASSIGN && len(post.Lhs) == 1 && same(post.Lhs[0]) {
			return bound
		}
	}
	return nil
}

// computesOnly reports whether a loop's body only computes: no channel
// operation, select, goroutine, or call of the time package or of a Wait
// method.
func (c *collector) computesOnly(body *ast.BlockStmt) bool {
	ok := true
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SendStmt, *ast.SelectStmt, *ast.GoStmt:
			ok = false
		case *ast.UnaryExpr:
			ok = ok && n.Op != token.ARROW
		case *ast.RangeStmt:
			if tv, has := c.info.Types[n.X]; has && tv.Type != nil {
				if _, isChan := tv.Type.Underlying().(*types.Chan); isChan {
					ok = false
				}
			}
		case *ast.CallExpr:
			var fn *types.Func
			switch fun := ast.Unparen(n.Fun).(type) {
			case *ast.Ident:
				fn, _ = c.info.Uses[fun].(*types.Func)
			case *ast.SelectorExpr:
				fn, _ = c.info.Uses[fun.Sel].(*types.Func)
			}
			if fn != nil && (fn.Name() == "Wait" || fn.Pkg() != nil && fn.Pkg().Path() == "time") {
				ok = false
			}
		}
		return ok
	})
	return ok
}

// intType returns how a schema spells an integer type t (an untyped
// constant's default type; a named type of the package by its name), and
// the largest value it holds; "" when it is none of those.
func (c *collector) intType(t types.Type) (string, int64) {
	name := ""
	if n, ok := t.(*types.Named); ok {
		if n.Obj().Parent() != c.scope || n.TypeArgs().Len() > 0 {
			return "", 0
		}
		name = n.Obj().Name()
	}
	b, ok := t.Underlying().(*types.Basic)
	if !ok {
		return "", 0
	}
	if b.Info()&types.IsUntyped != 0 {
		b, _ = types.Default(b).(*types.Basic)
		if b == nil {
			return "", 0
		}
	}
	var limit int64
	switch b.Kind() {
	case types.Int, types.Int64, types.Uint, types.Uint64, types.Uintptr:
		limit = math.MaxInt64
	case types.Int32:
		limit = math.MaxInt32
	case types.Uint32:
		limit = math.MaxUint32
	default:
		return "", 0 // too small to hold a larger bound
	}
	if name == "" {
		name = b.Name()
	}
	return name, limit
}

// mentionsConst reports whether e mentions a constant of the package.
func (c *collector) mentionsConst(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if k, ok := c.info.Uses[id].(*types.Const); ok && k.Parent() == c.scope {
				found = true
			}
		}
		return !found
	})
	return found
}

// A durationDefault's uses are gathered over the package's files:
// defaultUses holds them by object, in the order first seen.
type defaultUses struct {
	objs    []types.Object
	uses    map[types.Object][]*target
	atTimer map[types.Object]bool // some use is within a timer's duration
}

// durationUses adds the reads of the package's duration constants and
// variables in fd's body to d: each a site of an expression, 0 valid
// there unless it is within the duration of a timer that takes no 0 (a
// ticker's). timers are the duration sites of the file (aimCall).
func (c *collector) durationUses(fd *ast.FuncDecl, timers []*target, d *defaultUses) {
	skip := map[*ast.Ident]bool{} // writes, and where a constant is needed
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			return n.Tok != token.CONST
		case *ast.ArrayType:
			skipAll(n.Len, skip)
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					skipAll(kv.Key, skip) // an array's index is a constant
				}
			}
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if id, ok := ast.Unparen(l).(*ast.Ident); ok {
					skip[id] = true
				}
			}
		case *ast.IncDecStmt:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok {
				skip[id] = true
			}
		case *ast.UnaryExpr:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && n.Op == token.AND {
				skip[id] = true
			}
		case *ast.Ident:
			obj := c.info.Uses[n]
			switch obj.(type) {
			case *types.Const, *types.Var:
			default:
				return true
			}
			if skip[n] || obj.Parent() != c.scope || !isTimeType(obj.Type(), "Duration") {
				return true
			}
			if _, ptr := obj.Type().(*types.Pointer); ptr {
				return true
			}
			start, end := c.fset.Position(n.Pos()).Offset, c.fset.Position(n.End()).Offset
			u := &aimSite{what: durationUse, typ: mutantTime + ".Duration", zero: true, shown: n.Name}
			for _, t := range timers {
				if t.file == c.file && t.start <= start && end <= t.end {
					u.zero = u.zero && t.site.zero
					d.atTimer[obj] = true
				}
			}
			if d.uses[obj] == nil {
				d.objs = append(d.objs, obj)
			}
			d.uses[obj] = append(d.uses[obj], &target{file: c.file, src: c.src, pkgEnd: c.pkgEnd, form: exprForm, encl: fd.Name.Name, site: u,
				start: start, end: end, line: c.fset.Position(n.Pos()).Line})
		}
		return true
	})
}

// skipAll adds the identifiers of e (nil: none) to skip.
func skipAll(e ast.Expr, skip map[*ast.Ident]bool) {
	if e == nil {
		return
	}
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			skip[id] = true
		}
		return true
	})
}

// sites returns the site of a default-0 mutant of each default of a
// package that arms timers: first those a timer is given directly, then
// the rest, which may reach one through a field, a parameter or an
// options struct (cfg.Delay = defaultDelay; time.NewTimer(cfg.Delay)).
// Not one whose only use is a timer's whole duration where 0 is valid:
// the zeroed mutant of that timer is the same.
func (d *defaultUses) sites(fset *token.FileSet, timers []*target) []*target {
	if len(timers) == 0 {
		return nil
	}
	var direct, rest []*target
	for _, obj := range d.objs {
		uses := d.uses[obj]
		if len(uses) == 1 && uses[0].site.zero {
			same := false
			for _, t := range timers {
				same = same || t.file == uses[0].file && t.start == uses[0].start && t.end == uses[0].end
			}
			if same {
				continue
			}
		}
		pos := fset.Position(obj.Pos())
		t := &target{file: pos.Filename, line: pos.Line, form: exprForm,
			site: &aimSite{what: durationDefault, shown: "default " + obj.Name(), uses: uses}}
		if d.atTimer[obj] {
			direct = append(direct, t)
		} else {
			rest = append(rest, t)
		}
	}
	return append(direct, rest...)
}
