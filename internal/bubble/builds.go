package bubble

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"sort"
	"strconv"

	"github.com/unflake/unflake/internal/match"
)

// Two hazards of a bubble hide in a build the analysis does not type: a
// bug lives in a file a build tag swaps in (a knob, a platform's file),
// and running the correct build cannot show what only the bug's build
// does. Both are read, like lockwait.go's, in every build of the
// package's non-test files, by their syntax:
//
//   - a reading of the clock coarsened (now.Truncate(time.Minute),
//     Round, now.Unix()/60, time.Unix(now.Unix(), 0)): a bubble's clock
//     starts at 2000-01-01 00:00:00 UTC, aligned to every unit, so the
//     coarsening is a no-op there, where in real time it back-dates the
//     stamp by up to the unit (a fresh entry looks a minute old). The
//     correct build may coarsen nothing, so running cannot tell: not
//     fixed;
//   - a goroutine started by code only another build has (a watcher a
//     bug never stops): when the test fails at a check, synctest panics
//     "blocked goroutines remain" and the test binary dies, which no
//     harness counts as the check catching the bug. The correct build's
//     goroutines are shown to end by the walk; another build's cannot be
//     walked, so a go statement there leaves the test not fixed.

type buildGoKey struct{}

// coarseHazard says where code of the package, in any build, coarsens a
// reading of the clock, or "". It reads the package's directory once.
func (a *Analysis) coarseHazard() string {
	if a.coarse != nil {
		return *a.coarse
	}
	why := ""
	if at := coarsened(a.codeFiles()); at != "" {
		why = fmt.Sprintf("the code under test, in some build, coarsens a reading of the clock (%s): a synctest bubble's clock starts at 2000-01-01 00:00:00 UTC, aligned to every minute, second and hour, so the coarsening is a no-op there where in real time it back-dates the reading by up to its unit, and a stamp made to look older than it is (a fresh entry trimmed or expired at once) that the original catches passes in the bubble; running the correct build cannot tell", at)
	} else {
		why = a.textCoarseHazard() // coarsened through text (textcoarse.go)
	}
	if why == "" {
		why = a.microHazard() // counted in whole microseconds (micro.go)
	}
	a.coarse = &why
	return why
}

// timeNames are what, by syntax, may hold a time.Time in the package:
// variables, parameters and fields declared of that type or set to a
// reading, functions returning one, and maps and slices of them.
type timeNames struct {
	values, funcs, containers map[string]bool
}

// fileTimeNames returns the name each of files imports package time by
// (timeName), and the time names of files (readTimeNames).
func fileTimeNames(files []*lockFile) (map[*lockFile]string, *timeNames) {
	timeOf := map[*lockFile]string{}
	for _, lf := range files {
		timeOf[lf] = timeName(lf.f)
	}
	return timeOf, readTimeNames(files, timeOf)
}

// readTimeNames learns the time names of files, each read with its own
// name for package time (timeOf, from timeName): declarations first,
// then what is set to a reading, twice (x := now(); c.last = x).
func readTimeNames(files []*lockFile, timeOf map[*lockFile]string) *timeNames {
	tn := &timeNames{values: map[string]bool{}, funcs: map[string]bool{}, containers: map[string]bool{}}
	for _, lf := range files {
		tn.declared(lf.f, timeOf[lf])
	}
	for range 2 {
		for _, lf := range files {
			tn.assigned(lf.f, timeOf[lf])
		}
	}
	return tn
}

// coarsened names the first coarsening of a reading in files, "x at
// file:line", or "".
func coarsened(files []*lockFile) string {
	timeOf, tn := fileTimeNames(files)
	var hits []string
	for _, lf := range files {
		tm := timeOf[lf]
		ast.Inspect(lf.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr)
				if !ok {
					return true
				}
				switch {
				case (sel.Sel.Name == "Truncate" || sel.Sel.Name == "Round") && len(n.Args) == 1 && !zeroLit(n.Args[0]) && tn.isTime(sel.X, tm):
					hits = append(hits, types.ExprString(n)+" at "+lf.at(n.Pos()))
				case sel.Sel.Name == "Add" && len(n.Args) == 1 && tn.isTime(sel.X, tm) && clockField(n.Args[0]):
					// now.Add(-time.Duration(now.Nanosecond())): the
					// reading moved back to the second (red team batch 15,
					// rollupsecond).
					hits = append(hits, types.ExprString(n)+" at "+lf.at(n.Pos()))
				case isPkgSel(sel, tm, "Date") && slices.ContainsFunc(n.Args, clockField):
					// time.Date(now.Year(), ..., now.Minute(), 0, 0, loc):
					// the reading rebuilt to the minute.
					hits = append(hits, types.ExprString(n)+" at "+lf.at(n.Pos()))
				case isPkgSel(sel, tm, "Unix", "UnixMilli", "UnixMicro") && len(n.Args) > 0 && tn.unixOf(n.Args[0], tm):
					// time.Unix(now.Unix(), 0): the reading to the second.
					hits = append(hits, types.ExprString(n)+" at "+lf.at(n.Pos()))
				}
			case *ast.BinaryExpr:
				if (n.Op == token.QUO || n.Op == token.REM) && tn.unixOf(n.X, tm) {
					hits = append(hits, types.ExprString(n)+" at "+lf.at(n.Pos()))
				}
			case *ast.AssignStmt:
				if (n.Tok == token.QUO_ASSIGN || n.Tok == token.REM_ASSIGN) && len(n.Lhs) == 1 && tn.values[lastName(n.Lhs[0])] {
					hits = append(hits, "a reading made a number and divided at "+lf.at(n.Pos()))
				}
			}
			return true
		})
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits) // the directory's order is stable, but builds' files interleave
	return hits[0]
}

// timeName is the name f imports the time package by, or "".
func timeName(f *ast.File) string {
	for name, path := range match.ImportNames(f) {
		if path == "time" {
			return name
		}
	}
	return ""
}

// zeroLit reports whether e is the literal 0 (t.Round(0) strips the
// monotonic reading and changes nothing else).
func zeroLit(e ast.Expr) bool {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return false
	}
	v, err := strconv.ParseInt(lit.Value, 0, 64)
	return err == nil && v == 0
}

// isPkgSel reports whether sel is pkg.Name for the time package's name in
// the file (tm) and one of names.
func isPkgSel(sel *ast.SelectorExpr, tm string, names ...string) bool {
	x, ok := sel.X.(*ast.Ident)
	if !ok || tm == "" || x.Name != tm {
		return false
	}
	for _, n := range names {
		if sel.Sel.Name == n {
			return true
		}
	}
	return false
}

// isTimeType reports whether e is time.Time, *time.Time.
func isTimeType(e ast.Expr, tm string) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	return ok && isPkgSel(sel, tm, "Time")
}

// containerOfTime reports whether e is a map or a slice of time.Time.
func containerOfTime(e ast.Expr, tm string) bool {
	switch t := e.(type) {
	case *ast.MapType:
		return isTimeType(t.Value, tm)
	case *ast.ArrayType:
		return isTimeType(t.Elt, tm)
	}
	return false
}

func (tn *timeNames) declared(f *ast.File, tm string) {
	fields := func(fl *ast.FieldList, into map[string]bool, ok func(ast.Expr) bool) {
		if fl == nil {
			return
		}
		for _, fd := range fl.List {
			if ok(fd.Type) {
				for _, id := range fd.Names {
					into[id.Name] = true
				}
			}
		}
	}
	isT := func(e ast.Expr) bool { return isTimeType(e, tm) }
	isC := func(e ast.Expr) bool { return containerOfTime(e, tm) }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Type.Results != nil {
				for _, r := range n.Type.Results.List {
					if isT(r.Type) {
						tn.funcs[n.Name.Name] = true
					}
				}
			}
		case *ast.FuncType:
			fields(n.Params, tn.values, isT)
		case *ast.StructType:
			fields(n.Fields, tn.values, isT)
			fields(n.Fields, tn.containers, isC)
		case *ast.ValueSpec:
			if n.Type != nil && isT(n.Type) {
				for _, id := range n.Names {
					tn.values[id.Name] = true
				}
			}
			if n.Type != nil && isC(n.Type) {
				for _, id := range n.Names {
					tn.containers[id.Name] = true
				}
			}
		}
		return true
	})
}

func (tn *timeNames) assigned(f *ast.File, tm string) {
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) != len(n.Rhs) {
				return true
			}
			for i, r := range n.Rhs {
				if !tn.isTime(r, tm) {
					continue
				}
				if ix, ok := ast.Unparen(n.Lhs[i]).(*ast.IndexExpr); ok {
					tn.containers[lastName(ix.X)] = true
				} else if name := lastName(n.Lhs[i]); name != "" {
					tn.values[name] = true
				}
			}
		case *ast.ValueSpec:
			for i, r := range n.Values {
				if i < len(n.Names) && tn.isTime(r, tm) {
					tn.values[n.Names[i].Name] = true
				}
			}
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok && tn.isTime(n.Value, tm) {
				tn.values[id.Name] = true
			}
		}
		return true
	})
}

// isTime reports whether e may be a time.Time, by syntax: time.Now() (or
// a method of a time.Time returning one), a function of the package
// returning one, a name declared of that type or set to one, an element
// of a map or a slice of them.
func (tn *timeNames) isTime(e ast.Expr, tm string) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		switch fun := ast.Unparen(e.Fun).(type) {
		case *ast.SelectorExpr:
			if isPkgSel(fun, tm, "Now") {
				return true
			}
			switch fun.Sel.Name {
			case "UTC", "Local", "In", "Add", "AddDate", "Truncate", "Round":
				if tn.isTime(fun.X, tm) {
					return true
				}
			}
			x, isPkg := fun.X.(*ast.Ident)
			return tn.funcs[fun.Sel.Name] && !(isPkg && x.Name == tm)
		case *ast.Ident:
			return tn.funcs[fun.Name]
		}
	case *ast.Ident, *ast.SelectorExpr:
		return tn.values[lastName(e)]
	case *ast.IndexExpr:
		return tn.containers[lastName(e.X)]
	case *ast.StarExpr:
		return tn.isTime(e.X, tm)
	}
	return false
}

// unixOf reports whether e is a reading made a number: x.Unix() (Milli,
// Micro, Nano) of a time.Time, or int64 of one.
func (tn *timeNames) unixOf(e ast.Expr, tm string) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		// A conversion: int64(now.UnixNano()).
		return len(call.Args) == 1 && tn.unixOf(call.Args[0], tm)
	case *ast.SelectorExpr:
		switch fun.Sel.Name {
		case "Unix", "UnixMilli", "UnixMicro", "UnixNano":
			return len(call.Args) == 0 && tn.isTime(fun.X, tm)
		}
	}
	return false
}

// A buildDecl is a function of the package, in any build.
type buildDecl struct {
	lf *lockFile
	d  *ast.FuncDecl
}

// otherBuildDecls are the functions t may run that the typed walk did
// not read: another build's functions named as one t reaches, or as one
// such code calls (closed over), and another build's init functions. A
// typed function is among them only when another build's code is the
// first to call its name (the walk read the ones t reaches).
func (a *Analysis) otherBuildDecls(t *Target) []buildDecl {
	typed := map[*ast.File]bool{}
	for _, f := range a.pass.AllFiles {
		typed[f] = true
	}
	byName := map[string][]buildDecl{}
	var out []buildDecl
	for _, lf := range a.codeFiles() {
		for _, d := range lf.f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if fd.Name.Name == "init" && fd.Recv == nil {
				if !typed[lf.f] {
					out = append(out, buildDecl{lf, fd})
				}
				continue
			}
			byName[fd.Name.Name] = append(byName[fd.Name.Name], buildDecl{lf, fd})
		}
	}
	var queue []string
	names := map[string]bool{}
	for d := range t.reached {
		if !names[d.Name.Name] {
			names[d.Name.Name] = true
			queue = append(queue, d.Name.Name)
		}
	}
	sort.Strings(queue)
	fromOther := map[string]bool{}
	calls := func(body *ast.BlockStmt) {
		ast.Inspect(body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := ""
			switch fun := ast.Unparen(call.Fun).(type) {
			case *ast.Ident:
				name = fun.Name
			case *ast.SelectorExpr:
				name = fun.Sel.Name
			}
			if name != "" && !names[name] && byName[name] != nil {
				names[name], fromOther[name] = true, true
				queue = append(queue, name)
			}
			return true
		})
	}
	for _, dc := range out {
		calls(dc.d.Body)
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		for _, dc := range byName[name] {
			if typed[dc.lf.f] && (t.reached[dc.d] || !fromOther[name]) {
				continue
			}
			out = append(out, dc)
			calls(dc.d.Body)
		}
	}
	return out
}

// otherBuildGoroutine says where code only another build of the package
// has, and t may run (otherBuildDecls), starts a goroutine, or "".
func (a *Analysis) otherBuildGoroutine(decls []buildDecl) string {
	for _, dc := range decls {
		at := ""
		ast.Inspect(dc.d.Body, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok && at == "" {
				at = "a go statement in " + dc.d.Name.Name + " at " + dc.lf.at(g.Pos())
			}
			return at == ""
		})
		if at != "" {
			return "code only another build of the package has starts a goroutine (" + at + ") that the analysis cannot show ends: when the test fails at a check in that build, synctest panics on the goroutines left blocked and the test binary dies, which is not the check catching the bug"
		}
	}
	return ""
}

// otherBuildOrder says where code only another build of the package has,
// and t may run (otherBuildDecls), compares two times it may have kept,
// by syntax: elements of maps or slices of time.Time, or two parameters
// of type time.Time of the function (a helper a sort's less function
// calls), with Before, After, Compare or Equal; or "". The typed build's
// comparisons are clockScan's (storedOrder).
func (a *Analysis) otherBuildOrder(decls []buildDecl) string {
	for _, dc := range decls {
		tm := timeName(dc.lf.f)
		tn := &timeNames{values: map[string]bool{}, funcs: map[string]bool{}, containers: map[string]bool{}}
		for _, lf := range a.codeFiles() {
			tn.declared(lf.f, timeName(lf.f))
		}
		params := map[string]bool{}
		for _, fd := range dc.d.Type.Params.List {
			if isTimeType(fd.Type, tm) {
				for _, id := range fd.Names {
					params[id.Name] = true
				}
			}
		}
		kept := func(e ast.Expr) bool {
			switch e := ast.Unparen(e).(type) {
			case *ast.Ident:
				return params[e.Name]
			case *ast.IndexExpr:
				return tn.containers[lastName(e.X)]
			}
			return false
		}
		at := ""
		ast.Inspect(dc.d.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || at != "" {
				return at == ""
			}
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			switch sel.Sel.Name {
			case "Before", "After", "Compare", "Equal":
				if kept(sel.X) && kept(call.Args[0]) {
					at = types.ExprString(call) + " at " + dc.lf.at(call.Pos())
				}
			}
			return true
		})
		if at != "" {
			return "code only another build of the package has compares two readings of the clock it may have kept (" + at + "): in a synctest bubble no time passes between two statements, so readings taken one after the other are equal and the order they decide is a map's iteration order or a sort's ties, which running the correct build cannot tell"
		}
	}
	return ""
}

// clockFields are the methods of a time.Time that give a part of it.
var clockFields = map[string]bool{"Nanosecond": true, "Second": true, "Minute": true, "Hour": true, "Day": true, "YearDay": true, "Weekday": true, "Month": true, "Year": true}

// clockField reports whether e holds a call of a part of a time
// (x.Nanosecond(), x.Minute()), by syntax.
func clockField(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 0 {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && clockFields[sel.Sel.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}
