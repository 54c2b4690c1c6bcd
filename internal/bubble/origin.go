package bubble

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"time"

	"github.com/unflake/unflake/internal/match"
)

// A date need not be written in the code to be fixed: a token's
// not-before decoded from JSON, a file's modification time, a date parsed
// from a configuration string all come from the real calendar (2024,
// 2026), and a bubble's clock starts at 2000-01-01 UTC. Compared with a
// reading of the clock, such a date flips the comparison as a
// time.Date(2024, ...) does. What a time.Time compared with a reading
// may safely be is a reading itself (time.Now, a variable or field set
// to one, or one moved by Add, Truncate, Round, In, UTC, Local) or the
// zero time; every other source is a hazard: a field no statement of
// the code sets (decoded by reflection: encoding/json, gob, xml, yaml),
// a variable whose address is handed to a call or that decodes itself
// (UnmarshalJSON, UnmarshalText, UnmarshalBinary, GobDecode, Scan), the
// result of a call the analysis does not follow (time.Parse of a
// non-literal string, os.FileInfo.ModTime), a range variable.

// origins holds, for each variable and field of the package, the values
// assigned to it anywhere in the package's files (the tests' included: a
// fixture sets a field); a nil value is one the analysis cannot follow.
type origins struct {
	assigned  map[types.Object][]ast.Expr
	elems     map[types.Object][]ast.Expr // what is stored in a map or slice (m[k] = v)
	addressed map[types.Object]string     // where its address goes, or how it decodes itself
	params    map[types.Object]bool       // parameters of the package's functions
}

// collectOrigins walks every file of the package once.
func (c *clockScan) collectOrigins() *origins {
	if c.orig != nil {
		return c.orig
	}
	info := c.a.info
	o := &origins{assigned: map[types.Object][]ast.Expr{}, elems: map[types.Object][]ast.Expr{}, addressed: map[types.Object]string{}, params: map[types.Object]bool{}}
	c.orig = o
	set := func(lhs ast.Expr, v ast.Expr) {
		if ix, ok := ast.Unparen(lhs).(*ast.IndexExpr); ok {
			if obj := c.objOf(ix.X); obj != nil {
				o.elems[obj] = append(o.elems[obj], v)
			}
			return
		}
		if obj := c.objOf(lhs); obj != nil {
			o.assigned[obj] = append(o.assigned[obj], v)
		}
	}
	for _, f := range c.a.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Type.Params != nil {
					for _, fld := range n.Type.Params.List {
						for _, id := range fld.Names {
							if obj := info.Defs[id]; obj != nil {
								o.params[obj] = true
							}
						}
					}
				}
			case *ast.AssignStmt:
				switch {
				case len(n.Lhs) == len(n.Rhs):
					for i := range n.Lhs {
						set(n.Lhs[i], n.Rhs[i])
					}
				case len(n.Rhs) == 1:
					// d, err := parse(s): the first result is followed
					// through the callee's returns; the others are not.
					set(n.Lhs[0], n.Rhs[0])
					for _, l := range n.Lhs[1:] {
						set(l, nil)
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					switch {
					case len(n.Values) == len(n.Names):
						set(id, n.Values[i])
					case len(n.Values) == 1 && i == 0:
						set(id, n.Values[0])
					case len(n.Values) > 0:
						set(id, nil)
					}
				}
			case *ast.RangeStmt:
				if n.Key != nil {
					set(n.Key, nil)
				}
				if n.Value != nil {
					set(n.Value, nil)
				}
			case *ast.CompositeLit:
				st, ok := typeUnder(info.TypeOf(n)).(*types.Struct)
				if !ok {
					return true
				}
				for i, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						set(kv.Key, kv.Value)
					} else if i < st.NumFields() {
						o.assigned[st.Field(i)] = append(o.assigned[st.Field(i)], el)
					}
				}
			case *ast.CallExpr:
				// json.Unmarshal(b, &d), d.UnmarshalText(b): the date
				// decodes from bytes.
				for _, arg := range n.Args {
					if u, ok := ast.Unparen(arg).(*ast.UnaryExpr); ok && u.Op.String() == "&" {
						if obj := c.objOf(u.X); obj != nil {
							if _, seen := o.addressed[obj]; !seen {
								o.addressed[obj] = c.at("its address handed to "+types.ExprString(n.Fun), n)
							}
						}
					}
				}
				if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && match.IsMethod(info, n, "time", "UnmarshalJSON", "UnmarshalText", "UnmarshalBinary", "GobDecode") {
					if obj := c.objOf(sel.X); obj != nil {
						o.addressed[obj] = c.at(types.ExprString(n.Fun), n)
					}
				}
				// A function of the package: its parameters take the
				// arguments.
				if fn := match.Callee(info, n); fn != nil {
					if d := c.a.decls[fn.Origin()]; d != nil && d.Type.Params != nil {
						var ps []types.Object
						for _, fld := range d.Type.Params.List {
							for _, id := range fld.Names {
								ps = append(ps, info.Defs[id])
							}
						}
						for i, arg := range n.Args {
							if i < len(ps) && ps[i] != nil {
								o.assigned[ps[i]] = append(o.assigned[ps[i]], arg)
							}
						}
					}
				}
			}
			return true
		})
	}
	return o
}

// typeUnder is t's underlying type, through a pointer.
func typeUnder(t types.Type) types.Type {
	if t == nil {
		return nil
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		return p.Elem().Underlying()
	}
	return t.Underlying()
}

// untraced names where the date e comes from when that is not the
// bubble's clock, or "" (a reading, the zero time, a fixed date the
// fixed-date hazard names, or a source that is one of those).
func (c *clockScan) untraced(e ast.Expr) string {
	if !match.IsNamed(c.a.info.TypeOf(e), "time", "Time") {
		return ""
	}
	return c.source(e, map[types.Object]bool{})
}

func (c *clockScan) source(e ast.Expr, seen map[types.Object]bool) string {
	info := c.a.info
	e = ast.Unparen(e)
	if c.isNow(e) {
		return ""
	}
	switch x := e.(type) {
	case *ast.CompositeLit:
		return "" // time.Time{}: the zero time, before any clock's start
	case *ast.StarExpr:
		return c.source(x.X, seen)
	case *ast.CallExpr:
		if sel, ok := ast.Unparen(x.Fun).(*ast.SelectorExpr); ok && match.IsMethod(info, x, "time", "Add", "AddDate", "Truncate", "Round", "In", "UTC", "Local") {
			return c.source(sel.X, seen)
		}
		if match.IsPkgFunc(info, x, "time", "Date", "Unix", "UnixMilli", "UnixMicro") && len(x.Args) > 0 && info.Types[x.Args[0]].Value != nil ||
			match.IsPkgFunc(info, x, "time", "Parse", "ParseInLocation") && len(x.Args) > 1 && info.Types[x.Args[1]].Value != nil {
			return "" // a fixed date: the fixed-date hazard's
		}
		if fn := match.Callee(info, x); fn != nil {
			if d := c.a.decls[fn.Origin()]; d != nil && d.Body != nil {
				if seen[fn] {
					return ""
				}
				seen[fn] = true
				found := ""
				ast.Inspect(d.Body, func(n ast.Node) bool {
					if found != "" {
						return false
					}
					if _, ok := n.(*ast.FuncLit); ok {
						return false
					}
					if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) > 0 {
						found = c.source(r.Results[0], seen)
					}
					return true
				})
				return found
			}
		}
		return c.at(types.ExprString(x)+", whose result the analysis does not trace to the clock", x)
	case *ast.Ident, *ast.SelectorExpr:
		obj := c.objOf(x)
		if obj == nil {
			return c.at(types.ExprString(x), x)
		}
		if seen[obj] {
			return ""
		}
		seen[obj] = true
		if c.readings[obj] {
			return ""
		}
		o := c.collectOrigins()
		if at, ok := o.addressed[obj]; ok {
			return types.ExprString(x) + ", decoded or set through " + at
		}
		vs := o.assigned[obj]
		if v, ok := obj.(*types.Var); ok && v.IsField() && len(vs) == 0 {
			p := c.a.pass.Fset.Position(obj.Pos())
			return fmt.Sprintf("%s, a field (%s:%d) no statement of the code sets: decoded or copied whole", c.at(types.ExprString(x), x), filepath.Base(p.Filename), p.Line)
		}
		if o.params[obj] && len(vs) == 0 {
			return c.at(types.ExprString(x)+", a parameter no call the analysis sees sets (a function value, an interface)", x)
		}
		if v, ok := obj.(*types.Var); ok && match.IsPackageLevel(v) && v.Pkg() != c.a.pass.Pkg {
			return c.at(types.ExprString(x), x) // another package's variable
		}
		for _, v := range vs {
			if v == nil {
				return c.at(types.ExprString(x)+", set from a value the analysis does not follow", x)
			}
			if s := c.source(v, seen); s != "" {
				return s
			}
		}
		return ""
	case *ast.IndexExpr:
		// s.expires[key]: what the code stores in the map or slice,
		// which is all its elements when the container is never set
		// whole (a literal, a decoded or copied one).
		obj := c.objOf(x.X)
		if obj == nil || seen[obj] {
			return c.at(types.ExprString(x)+", read from a container", x)
		}
		seen[obj] = true
		o := c.collectOrigins()
		if at, ok := o.addressed[obj]; ok {
			return types.ExprString(x) + ", decoded or set through " + at
		}
		for _, v := range o.assigned[obj] {
			if !emptyContainer(c.a.info, v) {
				return c.at(types.ExprString(x)+", read from a container set whole", x)
			}
		}
		if len(o.elems[obj]) == 0 {
			return c.at(types.ExprString(x)+", read from a container the code stores no date in", x)
		}
		for _, v := range o.elems[obj] {
			if v == nil {
				return c.at(types.ExprString(x)+", set from a value the analysis does not follow", x)
			}
			if s := c.source(v, seen); s != "" {
				return s
			}
		}
		return ""
	}
	return c.at(types.ExprString(e), e)
}

// originHazard records a comparison of a reading of the clock with a
// date from elsewhere: x.M(y) with M one of After, Before, Equal,
// Compare, Sub, or time.Since(y) and time.Until(y).
func (c *clockScan) originHazard(call *ast.CallExpr) {
	if c.origin != "" {
		return
	}
	info := c.a.info
	var other ast.Expr
	switch {
	case match.IsPkgFunc(info, call, "time", "Since", "Until") && len(call.Args) == 1:
		other = call.Args[0]
	case match.IsMethod(info, call, "time", "After", "Before", "Equal", "Compare", "Sub") && len(call.Args) == 1:
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return
		}
		switch {
		case c.reading(sel.X) || c.readingMoved(sel.X):
			other = call.Args[0]
		case c.reading(call.Args[0]) || c.readingMoved(call.Args[0]):
			other = sel.X
		default:
			return
		}
	default:
		return
	}
	if s := c.untraced(other); s != "" {
		c.origin = s + "; compared at " + c.at(types.ExprString(call), call)
	}
}

// numericOrigin records, as originHazard does for time values, a
// reading made a number (now.Unix(), now.UnixNano()+skew: an instant,
// not a difference of two readings) compared with a number that is not
// a reading: a date from outside the clock kept as a count of seconds (a
// lease's IssuedAt from the server, a fixture's 1764547200). A constant
// below a billion is a duration's count, not a date.
func (c *clockScan) numericOrigin(b *ast.BinaryExpr, x, y ast.Expr) {
	if c.origin != "" || !c.instantNumber(x) || c.numeric(y) {
		return
	}
	if v, ok := match.ConstInt(c.a.info, y); ok && v < 1e9 && v > -1e9 {
		return
	}
	if c.a.info.Types[y].Value != nil {
		if _, ok := match.ConstInt(c.a.info, y); !ok {
			return // a float or other constant: not a date's count
		}
	}
	c.origin = types.ExprString(y) + ", a number; compared with a reading made a number at " + c.at(types.ExprString(b), b)
}

// instantNumber reports whether e is a reading made a number, possibly
// moved by a constant (now.Unix()+maxSkew): an instant on the clock.
func (c *clockScan) instantNumber(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.BinaryExpr:
		if e.Op != token.ADD && e.Op != token.SUB {
			return false
		}
		if c.a.info.Types[e.Y].Value != nil {
			return c.instantNumber(e.X)
		}
		return e.Op == token.ADD && c.a.info.Types[e.X].Value != nil && c.instantNumber(e.Y)
	case *ast.CallExpr:
		return c.unixOf(e) != nil
	}
	return false
}

// readingMoved reports whether e is a reading of the clock moved by Add
// or the like (now.Add(-ttl)).
func (c *clockScan) readingMoved(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || !match.IsMethod(c.a.info, call, "time", "Add", "AddDate", "Truncate", "Round", "In", "UTC", "Local") {
		return false
	}
	return c.reading(sel.X) || c.readingMoved(sel.X)
}

// againstMaybeZero records elapsed time compared with a duration not
// known to be well above a few microseconds: time.Since(openedAt) >
// b.openFor, or now.After(openedAt.Add(b.openFor)) with openedAt a
// reading. Only a constant of a millisecond or more is known: a field,
// a variable or a parameter is 0 under a bug that does not set it.
func (c *clockScan) againstMaybeZero(n ast.Node) bool {
	info := c.a.info
	nonZero := func(e ast.Expr) bool {
		d, ok := match.ConstDuration(info, e)
		return ok && d >= time.Millisecond
	}
	record := func(at ast.Node) bool {
		if c.versus == "" {
			c.versus = c.at(types.ExprString(at.(ast.Expr)), at)
		}
		return true
	}
	switch n := n.(type) {
	case *ast.BinaryExpr:
		switch n.Op {
		case token.LSS, token.LEQ, token.GTR, token.GEQ:
		default:
			return false
		}
		for _, side := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
			// A number read from the clock (nowNs <= exp, exp set
			// to an earlier nowNs plus a ttl that may be 0) against
			// one that is not a constant: in a bubble they are equal
			// right after the other call.
			if c.numeric(side[0]) && info.Types[side[1]].Value == nil {
				return record(n)
			}
			if c.elapsed(side[0]) && match.IsNamed(info.TypeOf(side[1]), "time", "Duration") && !nonZero(side[1]) {
				if v, ok := match.ConstInt(info, side[1]); ok && v == 0 {
					return false // a constant 0: the comparison of two readings' (binary)
				}
				return record(n)
			}
		}
	case *ast.CallExpr:
		if !match.IsMethod(info, n, "time", "After", "Before", "Compare") || len(n.Args) != 1 {
			return false
		}
		sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr)
		if !ok {
			return false
		}
		for _, side := range [][2]ast.Expr{{sel.X, n.Args[0]}, {n.Args[0], sel.X}} {
			if !c.reading(side[0]) {
				continue
			}
			add, ok := ast.Unparen(side[1]).(*ast.CallExpr)
			if !ok || len(add.Args) != 1 || !match.IsMethod(info, add, "time", "Add") {
				continue
			}
			if as, ok := ast.Unparen(add.Fun).(*ast.SelectorExpr); ok && c.reading(as.X) && !nonZero(add.Args[0]) {
				return record(n)
			}
		}
		// A reading against a stored instant (a field, a map's entry, a
		// variable that is not a reading): an earlier call may have set
		// it to its reading plus a duration that may be 0
		// (quiet[key] = now.Add(d.window)), equal to this one in a
		// bubble right after that call.
		// Only where it asks whether now is later than the stored
		// instant (now.After(end), end.Before(now)): equal in the bubble,
		// that is false there and true in real time. The other way round
		// (e.After(now.Add(-d)), now.Before(end)) equal and a few
		// microseconds apart give the same answer.
		later := sel.X
		stored := n.Args[0]
		if sel.Sel.Name == "Before" {
			later, stored = stored, later
		}
		if sel.Sel.Name != "Compare" && c.reading(later) && !c.storedReading(later) && c.storedInstant(stored) {
			return record(n)
		}
	}
	return false
}

// emptyContainer reports whether e makes an empty map or slice:
// make(...), or a composite literal with no elements.
func emptyContainer(info *types.Info, e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		return len(e.Elts) == 0
	case *ast.CallExpr:
		id, ok := ast.Unparen(e.Fun).(*ast.Ident)
		return ok && id.Name == "make" && info.Types[e.Fun].IsBuiltin()
	}
	return false
}

// storedInstant reports whether e is a time.Time kept from before: a
// field, a map's or slice's element, or a variable that is not itself a
// reading of the clock; not a constant date or a call.
func (c *clockScan) storedInstant(e ast.Expr) bool {
	if !match.IsNamed(c.a.info.TypeOf(e), "time", "Time") || c.reading(e) {
		return false
	}
	switch ast.Unparen(e).(type) {
	case *ast.SelectorExpr, *ast.IndexExpr, *ast.Ident:
		return true
	}
	return false
}
