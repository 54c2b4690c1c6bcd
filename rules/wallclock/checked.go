package wallclock

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/bubble"
	"github.com/unflake/unflake/internal/match"
)

// The budget of a timed region is the only check of the region's work
// unless the test checks that work's effect otherwise: the values it
// computes compared with what they should be, or the state it changes (a
// count of operations, a call counter the test reads). A budget whose
// region's effect nothing else checks is the check of that work (a
// config load whose cache key is derived slowly, checked only for being
// set): removing it passes the work made slow, or made wrong in a way
// only its time shows. This is decided per timed region, not per test:
// the test's other checks may be of other calls.

// A product is what a timed region produces: a variable it sets from a
// call (got := Fields(in)), or one a call it makes acts on (c.Get(k),
// Warm(cache)).
type product struct {
	v    *types.Var
	call string // the call, for the reason: "Load(...)"
	pos  token.Pos
	// result: v holds the call's result (its fields are the work's
	// parts); else v is what the call acts on.
	result bool
}

// A seen says how the test's checks read one effect.
type seen struct {
	whole     bool            // compared as a whole (reflect.DeepEqual(c, want), c != want)
	value     bool            // some part compared with a value (len(got) != 1000, doc.Len() != 3)
	fieldVal  map[string]bool // fields compared with a value (c.Values["dir"] != "/tmp")
	fieldZero map[string]bool // fields checked against their zero value only (c.CacheKey == "")
	zero      bool            // the whole checked against its zero value (got != nil)
}

// unchecked says which effect of the timed region of s no check of the
// test t compares with a value (naming the call, its line and the part),
// or "".
func (c *checker) unchecked(s *site, t *bubble.Target) string {
	region := c.region(s)
	var effects []*product
	add := func(id *ast.Ident, call *ast.CallExpr, result bool) {
		v, _ := c.info.ObjectOf(id).(*types.Var)
		if v == nil || id.Name == "_" || c.timings[v] != nil || isError(v.Type()) || match.IsPackageLevel(v) {
			return
		}
		for _, e := range effects {
			if e.v == v {
				return
			}
		}
		effects = append(effects, &product{v: v, call: types.ExprString(call.Fun) + "(...)", pos: call.Pos(), result: result})
	}
	for _, st := range region {
		if st.Pos() <= s.stmt.Pos() && s.stmt.End() <= st.End() {
			continue // the statement holding the assertion
		}
		ast.Inspect(st, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.AssignStmt:
				call := c.workCall(n.Rhs)
				if call == nil {
					return true
				}
				for _, l := range n.Lhs {
					if id, ok := ast.Unparen(l).(*ast.Ident); ok {
						add(id, call, true)
					}
				}
				for _, id := range c.actedOn(call) {
					add(id, call, false)
				}
			case *ast.ExprStmt:
				if call := c.workCall([]ast.Expr{n.X}); call != nil {
					for _, id := range c.actedOn(call) {
						add(id, call, false)
					}
				}
			}
			return true
		})
	}
	if len(effects) == 0 {
		return "the timed region computes nothing the test checks: its only sign is its time"
	}
	seenOf := c.checkReads(t, effects)
	// The region's work is checked when each result it computes is
	// compared, part by part; a call that returns nothing is checked
	// through what it acts on.
	for _, e := range effects {
		if !e.result {
			continue
		}
		if why := c.resultUnchecked(e, seenOf[e.v]); why != "" {
			return why
		}
	}
	for _, e := range effects {
		if e.result {
			continue
		}
		if sn := seenOf[e.v]; sn != nil && (sn.value || sn.whole || len(sn.fieldVal) > 0) {
			return ""
		}
	}
	for _, e := range effects {
		if e.result {
			return "" // the results are compared; what the calls act on need not be
		}
	}
	e := effects[0]
	return fmt.Sprintf("the timed call %s (at %s) returns nothing the test compares, and no check reads what it acts on (a count, a state)", e.call, c.at(e.pos))
}

// resultUnchecked says why the result e is not checked by value, or "".
func (c *checker) resultUnchecked(e *product, sn *seen) string {
	what := fmt.Sprintf("%s, set by the timed call %s (at %s)", e.v.Name(), e.call, c.at(e.pos))
	switch {
	case sn == nil:
		return what + ", is compared by no check"
	case sn.whole:
		return ""
	case !sn.value && len(sn.fieldVal) == 0:
		return what + ", is checked only against its zero value, which says the call ran, not what it computed"
	}
	for f := range sn.fieldZero {
		if !sn.fieldVal[f] {
			return fmt.Sprintf("%s.%s, computed by the timed call %s (at %s), is checked only against its zero value, which says it was set, not what it is", e.v.Name(), f, e.call, c.at(e.pos))
		}
	}
	// A struct of the package: every exported field is a part of the
	// work, and each must be compared (or the whole).
	if st := structOf(e.v.Type(), c.pass.Pkg); st != nil && !sn.value {
		for i := range st.NumFields() {
			if f := st.Field(i); f.Exported() && !sn.fieldVal[f.Name()] {
				return fmt.Sprintf("%s.%s, computed by the timed call %s (at %s), is compared by no check", e.v.Name(), f.Name(), e.call, c.at(e.pos))
			}
		}
	}
	return ""
}

// structOf returns the struct a value of type t is (or points to), when
// its type is declared in pkg, or nil.
func structOf(t types.Type, pkg *types.Package) *types.Struct {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() != pkg {
		return nil
	}
	st, _ := n.Underlying().(*types.Struct)
	return st
}

func isError(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}

// at renders pos as file:line.
func (c *checker) at(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// workCall returns the call in exprs that does the region's work (the
// first call, outermost first, that is not of the time package or a
// conversion: Pad(12) of Pad(12) + ":00"), or nil.
func (c *checker) workCall(exprs []ast.Expr) *ast.CallExpr {
	var out *ast.CallExpr
	for _, e := range exprs {
		ast.Inspect(e, func(n ast.Node) bool {
			if _, lit := n.(*ast.FuncLit); lit || out != nil {
				return false // a literal's calls run later, if ever
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if tv, ok := c.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
				return true
			}
			if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "time" {
				return true
			}
			out = call
			return false
		})
	}
	return out
}

// actedOn returns the local variables a call acts on: its receiver (c
// of c.Get(k)) and its arguments that are variables (Warm(cache),
// Fill(&buf)).
func (c *checker) actedOn(call *ast.CallExpr) []*ast.Ident {
	var out []*ast.Ident
	root := func(e ast.Expr) {
		for {
			switch x := ast.Unparen(e).(type) {
			case *ast.SelectorExpr:
				e = x.X
				continue
			case *ast.UnaryExpr:
				e = x.X
				continue
			case *ast.Ident:
				out = append(out, x)
			}
			return
		}
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		if s := c.info.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
			root(sel.X)
		}
	}
	for _, a := range call.Args {
		root(a)
	}
	return out
}

// checkReads returns how the checks of the test t (outside wall-clock
// assertions) read each effect: if statements that fail the test, and
// testify assertions.
func (c *checker) checkReads(t *bubble.Target, effects []*product) map[*types.Var]*seen {
	vars := map[*types.Var]bool{}
	for _, e := range effects {
		vars[e.v] = true
	}
	out := map[*types.Var]*seen{}
	get := func(v *types.Var) *seen {
		if out[v] == nil {
			out[v] = &seen{fieldVal: map[string]bool{}, fieldZero: map[string]bool{}}
		}
		return out[v]
	}
	sites := map[ast.Node]bool{}
	for _, s := range c.sites {
		sites[s.stmt] = true
	}
	// note records that part (rooted at an effect) is compared: with a
	// value, or with its zero value only.
	note := func(part ast.Expr, zero bool) {
		v, field, whole := c.rootOf(part)
		if v == nil || !vars[v] {
			return
		}
		sn := get(v)
		switch {
		case field != "" && zero:
			sn.fieldZero[field] = true
		case field != "":
			sn.fieldVal[field] = true
		case zero:
			sn.zero = true
		case whole:
			sn.whole = true
		default:
			sn.value = true
		}
	}
	var cond func(e ast.Expr)
	cond = func(e ast.Expr) {
		switch x := ast.Unparen(e).(type) {
		case *ast.BinaryExpr:
			switch x.Op {
			case token.LAND, token.LOR:
				cond(x.X)
				cond(x.Y)
			case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
				note(x.X, c.zeroValue(x.Y))
				note(x.Y, c.zeroValue(x.X))
			}
		case *ast.UnaryExpr:
			if x.Op == token.NOT {
				cond(x.X)
			}
		case *ast.CallExpr:
			// reflect.DeepEqual(got, want), bytes.Equal, cmp.Diff...
			for _, a := range x.Args {
				note(a, false)
			}
		default:
			note(x, false) // a bool part: if !c.Ready
		}
	}
	ast.Inspect(t.Body(), func(n ast.Node) bool {
		if sites[n] {
			return false
		}
		switch n := n.(type) {
		case *ast.IfStmt:
			if c.failsIn(n.Body) {
				cond(n.Cond)
				if n.Init != nil {
					// if got := c.Get(k); got != want
					if as, ok := n.Init.(*ast.AssignStmt); ok {
						for _, r := range as.Rhs {
							note(r, false)
						}
					}
				}
			}
		case *ast.CallExpr:
			if fn := match.Callee(c.info, n); fn != nil && fn.Pkg() == c.pass.Pkg && passesTesting(c.info, n) {
				// A helper of the package handed a testing value
				// (wantLen(t, v, 3)) checks what it is handed, as
				// otherCheck counts it.
				for _, a := range n.Args {
					note(a, false)
				}
				return true
			}
			if !c.assertion(n) {
				return true
			}
			name := strings.TrimSuffix(match.Callee(c.info, n).Name(), "f")
			args := n.Args
			if len(args) > 0 && passesTesting(c.info, &ast.CallExpr{Args: args[:1]}) {
				args = args[1:]
			}
			switch name {
			case "True", "False":
				if len(args) > 0 {
					cond(args[0])
				}
			case "NotNil", "NotEmpty", "NotZero", "Nil", "Empty", "Zero":
				for _, a := range args {
					note(a, true)
				}
			default:
				for _, a := range args {
					note(a, false)
				}
			}
		}
		return true
	})
	return out
}

// failsIn reports whether body calls t.Error*, t.Fatal* or t.Fail* at
// its top level.
func (c *checker) failsIn(body *ast.BlockStmt) bool {
	for _, st := range body.List {
		if es, ok := st.(*ast.ExprStmt); ok {
			if call, ok := es.X.(*ast.CallExpr); ok && match.IsMethod(c.info, call, "testing", "Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow") {
				return true
			}
		}
	}
	return false
}

// zeroValue reports whether e is a constant zero value: nil, "", 0,
// false.
func (c *checker) zeroValue(e ast.Expr) bool {
	tv, ok := c.info.Types[e]
	if !ok {
		return false
	}
	if tv.IsNil() {
		return true
	}
	if tv.Value == nil {
		return false
	}
	switch tv.Value.Kind() {
	case constant.String:
		return constant.StringVal(tv.Value) == ""
	case constant.Bool:
		return !constant.BoolVal(tv.Value)
	case constant.Int, constant.Float:
		return constant.Sign(tv.Value) == 0
	}
	return false
}

// rootOf returns the variable an expression reads a part of, the field
// of it that part is in ("" for the variable itself, a method's result
// or its length), and whether it is the variable itself.
func (c *checker) rootOf(e ast.Expr) (v *types.Var, field string, whole bool) {
	e = ast.Unparen(e)
	if id, ok := e.(*ast.Ident); ok {
		v, _ := c.info.Uses[id].(*types.Var)
		return v, "", true
	}
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.SelectorExpr:
			if s := c.info.Selections[x]; s != nil && s.Kind() == types.FieldVal {
				if id, ok := ast.Unparen(x.X).(*ast.Ident); ok {
					v, _ := c.info.Uses[id].(*types.Var)
					return v, x.Sel.Name, false
				}
			}
			e = x.X
		case *ast.CallExpr:
			if tv, ok := c.info.Types[x.Fun]; ok && tv.IsBuiltin() && len(x.Args) == 1 {
				e = x.Args[0] // len(got)
				continue
			}
			sel, ok := ast.Unparen(x.Fun).(*ast.SelectorExpr)
			if !ok {
				return nil, "", false
			}
			e = sel.X // doc.Len()
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.Ident:
			v, _ := c.info.Uses[x].(*types.Var)
			return v, "", false
		default:
			return nil, "", false
		}
	}
}

// The region's work is "checked otherwise" only when both its result and
// what decides its cost are: a call the test made before the timer
// started, on what the timed call acts on (r.Preload(name), then r.Resolve
// timed), may only warm it. The timed call's result is then the same with
// or without that earlier call, and its speed is the only sign the earlier
// call worked: the budget is the check of a speed-only property, whatever
// compares the result.

// warmed says which earlier call of the test prepared what the timed
// region's calls act on, or "".
func (c *checker) warmed(s *site, t *bubble.Target) string {
	acted := map[*types.Var]string{}
	var timed []*ast.CallExpr
	for _, st := range c.region(s) {
		if st.Pos() <= s.stmt.Pos() && s.stmt.End() <= st.End() {
			continue
		}
		ast.Inspect(st, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || c.workCall([]ast.Expr{call}) != call {
				return true
			}
			timed = append(timed, call)
			for _, id := range c.actedOn(call) {
				if v, ok := c.info.Uses[id].(*types.Var); ok && c.preparable(v) && acted[v] == "" {
					acted[v] = types.ExprString(call.Fun) + "(...)"
				}
			}
			return true
		})
	}
	if len(acted) == 0 {
		return ""
	}
	start := s.start.decl.Pos()
	found := ""
	ast.Inspect(t.Body(), func(n ast.Node) bool {
		if found != "" || n == nil || n.Pos() >= start {
			return false
		}
		switch n.(type) {
		case *ast.FuncLit, *ast.IfStmt:
			return false // runs later, or a check
		}
		var call *ast.CallExpr
		switch st := n.(type) {
		case *ast.ExprStmt:
			call, _ = ast.Unparen(st.X).(*ast.CallExpr)
		case *ast.AssignStmt:
			call = c.workCall(st.Rhs)
			for _, l := range st.Lhs {
				if id, ok := ast.Unparen(l).(*ast.Ident); ok {
					if v, ok := c.info.Defs[id].(*types.Var); ok && acted[v] != "" {
						// The constructor of what the timed call acts
						// on: a preparation only when it fills a
						// table (an index, a cache) the timed call
						// reads.
						if f := c.readsTable(timed, c.filledTables(call)); call != nil && f != nil {
							found = fmt.Sprintf("the timed call %s acts on %s, whose table %s, which %s (at %s) filled before the timer started: its result is the same whether it reads the table or redoes the work the table saves (a rescan, a recomputation), so its speed is the only sign the table is used", acted[v], v.Name(), f.Name(), types.ExprString(call.Fun)+"(...)", c.at(call.Pos()))
						}
						return false
					}
				}
			}
		}
		if call == nil || c.workCall([]ast.Expr{call}) != call {
			return true
		}
		for _, id := range c.actedOn(call) {
			if v, ok := c.info.Uses[id].(*types.Var); ok && acted[v] != "" {
				found = fmt.Sprintf("the timed call %s acts on %s, which %s (at %s) prepared before the timer started: its result may be the same with or without that call (a preload, a warm-up), and its speed is then the only sign the earlier call worked", acted[v], v.Name(), types.ExprString(call.Fun)+"(...)", c.at(call.Pos()))
				return false
			}
		}
		return true
	})
	return found
}

// preparable reports whether v is a local an earlier call can prepare: an
// object (a pointer, an interface, a struct), not the testing value or an
// error.
func (c *checker) preparable(v *types.Var) bool {
	if match.IsPackageLevel(v) || isError(v.Type()) || match.IsNamed(v.Type(), "testing", "T", "B", "TB") {
		return false
	}
	// An object, not data: a slice, a map or a string the earlier call
	// filled is the input, and the result shows what it held.
	switch v.Type().Underlying().(type) {
	case *types.Pointer, *types.Interface, *types.Struct:
		return true
	}
	return false
}

// filledTables returns the map fields that the package's functions call
// reaches (through the functions they call) store an element into
// (r.index[name] = v): a table built ahead of its use.
func (c *checker) filledTables(call *ast.CallExpr) map[*types.Var]bool {
	out := map[*types.Var]bool{}
	if call == nil {
		return out
	}
	c.walkReached(call, func(n ast.Node) {
		as, ok := n.(*ast.AssignStmt)
		if !ok {
			return
		}
		for _, l := range as.Lhs {
			if f := c.mapField(l); f != nil {
				out[f] = true
			}
		}
	})
	return out
}

// readsTable returns a field of tables that the package's functions the
// timed calls reach read an element of, or nil.
func (c *checker) readsTable(timed []*ast.CallExpr, tables map[*types.Var]bool) *types.Var {
	if len(tables) == 0 {
		return nil
	}
	var found *types.Var
	for _, call := range timed {
		c.walkReached(call, func(n ast.Node) {
			if e, ok := n.(ast.Expr); ok && found == nil {
				if f := c.mapField(e); f != nil && tables[f] {
					found = f
				}
			}
		})
	}
	return found
}

// mapField is the field of map type e indexes (x.f[k]), or nil.
func (c *checker) mapField(e ast.Expr) *types.Var {
	ix, ok := ast.Unparen(e).(*ast.IndexExpr)
	if !ok {
		return nil
	}
	sel, ok := ast.Unparen(ix.X).(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	f, ok := c.info.ObjectOf(sel.Sel).(*types.Var)
	if !ok || !f.IsField() {
		return nil
	}
	if _, ok := f.Type().Underlying().(*types.Map); !ok {
		return nil
	}
	return f
}

// walkReached calls visit on every node of the package's functions call
// reaches, directly or through the functions they call.
func (c *checker) walkReached(call *ast.CallExpr, visit func(ast.Node)) {
	seen := map[*ast.FuncDecl]bool{}
	var from func(call *ast.CallExpr)
	from = func(call *ast.CallExpr) {
		fn := match.Callee(c.info, call)
		if fn == nil {
			return
		}
		d := c.decls[fn.Origin()]
		if d == nil || d.Body == nil || seen[d] {
			return
		}
		seen[d] = true
		ast.Inspect(d.Body, func(n ast.Node) bool {
			if n == nil {
				return false
			}
			visit(n)
			if inner, ok := n.(*ast.CallExpr); ok {
				from(inner)
			}
			return true
		})
	}
	from(call)
}
