package contract

import (
	"cmp"
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"github.com/unflake/unflake/internal/match"
)

// OwnChecked is the Checked entry of a window no duration of the code
// under test's own binds.
const OwnChecked = "no wait or deadline of the code under test's own of the order of the window"

// Own returns the durations the code under test runs on of its own: the
// waits and deadlines in the package's functions (outside the test
// files) that fn reaches (calls, go statements, closures, method values
// and functions handed on, the package's implementations of an
// interface method called) before the position before (token.NoPos:
// anywhere in it): time.Sleep, time.After, time.Tick, time.NewTimer,
// time.NewTicker, time.AfterFunc, a Timer's or Ticker's Reset,
// context.WithTimeout, Time.Add, and a duration elapsed time is compared
// with (time.Since(last) > idle). Such a duration decides when the
// event a test's sleep waits for comes (a heartbeat's period, a
// dispatcher's delay, a reaper's idle limit), as one the test sets does:
// a sleep of the order of it is its window, and a poll with a budget
// passes a delay many times too long.
//
// A duration read from a field or a parameter is a value handed in:
// when configured is true (the test sets durations of its own, which
// Set returns) it is taken to be one of those and left out; otherwise it
// is a default of the code, of unknown value.
func (f *Finder) Own(fn ast.Node, before token.Pos, configured bool) []Duration {
	var out []Duration
	seen := map[*ast.FuncDecl]bool{}
	var work []*ast.FuncDecl
	add := func(fn *types.Func) {
		if fd := f.decls[fn.Origin()]; fd != nil && fd.Body != nil && !seen[fd] {
			seen[fd] = true
			work = append(work, fd)
		}
	}
	// reach follows a function the code names, called or not: a call, a
	// go statement, a method value or a function handed on
	// (time.AfterFunc(d, p.flush), go p.loop()), and for a method of an
	// interface, the package's types that implement it.
	reach := func(id *ast.Ident) {
		fn, ok := f.info.Uses[id].(*types.Func)
		if !ok {
			return
		}
		add(fn)
		for _, impl := range f.implementations(fn) {
			add(impl)
		}
	}
	ast.Inspect(fn, func(n ast.Node) bool {
		if n == nil || before.IsValid() && n.Pos() >= before {
			return false
		}
		if id, ok := n.(*ast.Ident); ok {
			reach(id)
		}
		return true
	})
	for len(work) > 0 {
		fd := work[0]
		work = work[1:]
		test := f.inTest(fd.Pos())
		ev := &evaluator{info: f.info, root: fd}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				reach(n)
			case *ast.CallExpr:
				if !test {
					if e := f.clockArg(n); e != nil {
						f.own(ev, fd, e, types.ExprString(n), configured, &out)
					}
				}
			case *ast.BinaryExpr:
				if !test {
					if e := f.comparedWithElapsed(n); e != nil {
						f.own(ev, fd, e, types.ExprString(n), configured, &out)
					}
				}
			}
			return true
		})
	}
	return out
}

// implementations returns the methods of the package's types that
// implement m's interface, when m is an interface method: the code a
// call through the interface may run.
func (f *Finder) implementations(m *types.Func) []*types.Func {
	sig, ok := m.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return nil
	}
	iface, ok := sig.Recv().Type().Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	var out []*types.Func
	for fn, fd := range f.decls {
		if fn.Name() != m.Name() || fd.Recv == nil {
			continue
		}
		recv := fn.Type().(*types.Signature).Recv()
		if recv == nil {
			continue
		}
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if types.Implements(t, iface) || types.Implements(types.NewPointer(t), iface) {
			out = append(out, fn)
		}
	}
	// The map's order is random; positions make the first duration named
	// the same every run.
	slices.SortFunc(out, func(a, b *types.Func) int { return cmp.Compare(a.Pos(), b.Pos()) })
	return out
}

// own adds the duration e of the code's function fd, used by site.
func (f *Finder) own(ev *evaluator, fd *ast.FuncDecl, e ast.Expr, site string, configured bool, out *[]Duration) {
	d := Duration{Own: true, Site: site, Where: f.where(e.Pos())}
	d.Value, d.Known = ev.value(e, 0)
	if !d.Known && configured && f.handedIn(fd, e) {
		return
	}
	*out = append(*out, d)
}

// handedIn reports whether e reads a field or a parameter of fd: a value
// the code was given (or a field its constructor set).
func (f *Finder) handedIn(fd *ast.FuncDecl, e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		sel, ok := f.info.Selections[x]
		return ok && sel.Kind() == types.FieldVal
	case *ast.Ident:
		v, ok := f.info.Uses[x].(*types.Var)
		return ok && !match.IsPackageLevel(v) && v.Pos() >= fd.Pos() && v.Pos() < fd.Body.Pos()
	case *ast.BinaryExpr:
		// ttl / 3: arithmetic on a value handed in.
		in := func(e ast.Expr) bool { return f.info.Types[e].Value != nil || f.handedIn(fd, e) }
		return in(x.X) && in(x.Y) && (f.info.Types[x.X].Value == nil || f.info.Types[x.Y].Value == nil)
	}
	return false
}

// clockArg returns the duration a call waits or sets a deadline with, or
// nil.
func (f *Finder) clockArg(call *ast.CallExpr) ast.Expr {
	info := f.info
	var e ast.Expr
	switch {
	case match.IsPkgFunc(info, call, "time", "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc"):
		if len(call.Args) > 0 {
			e = call.Args[0]
		}
	case match.IsPkgFunc(info, call, "context", "WithTimeout", "WithTimeoutCause"):
		if len(call.Args) > 1 {
			e = call.Args[1]
		}
	case match.IsMethod(info, call, "time", "Reset", "Add"):
		if len(call.Args) == 1 {
			e = call.Args[0]
		}
	default:
		// A seam: var newTicker = time.NewTicker, or a field a
		// constructor sets to time.AfterFunc, called as newTicker(d).
		switch f.seam(call) {
		case "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc":
			if len(call.Args) > 0 {
				e = call.Args[0]
			}
		case "WithTimeout", "WithTimeoutCause":
			if len(call.Args) > 1 {
				e = call.Args[1]
			}
		}
	}
	if e == nil || !isDuration(info.TypeOf(e)) {
		return nil
	}
	return e
}

// comparedWithElapsed returns the duration b compares elapsed time
// (time.Since(x), time.Until(x), a.Sub(b)) with, or nil.
func (f *Finder) comparedWithElapsed(b *ast.BinaryExpr) ast.Expr {
	switch b.Op {
	case token.LSS, token.LEQ, token.GTR, token.GEQ:
	default:
		return nil
	}
	elapsed := func(e ast.Expr) bool {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		return ok && (match.IsPkgFunc(f.info, call, "time", "Since", "Until") || match.IsMethod(f.info, call, "time", "Sub"))
	}
	switch {
	case elapsed(b.X) && isDuration(f.info.TypeOf(b.Y)):
		return b.Y
	case elapsed(b.Y) && isDuration(f.info.TypeOf(b.X)):
		return b.X
	}
	return nil
}

// seam returns the name of the clock function of the time or context
// package (NewTicker, WithTimeout) that the function variable or field
// call calls may hold, or "": a package-level variable or a field of
// function type to which some file of the package (a test's swap
// included) assigns such a function. The code's own period then goes
// through a seam (var newTicker = time.NewTicker; tk := newTicker(b.every)),
// and is the code's own duration all the same.
func (f *Finder) seam(call *ast.CallExpr) string {
	var v *types.Var
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		v, _ = f.info.Uses[fun].(*types.Var)
	case *ast.SelectorExpr:
		v, _ = f.info.Uses[fun.Sel].(*types.Var)
	}
	if v == nil {
		return ""
	}
	if f.seams == nil {
		f.seams = map[*types.Var]string{}
		note := func(l ast.Expr, r ast.Expr) {
			var lv *types.Var
			switch x := ast.Unparen(l).(type) {
			case *ast.Ident:
				lv, _ = f.info.ObjectOf(x).(*types.Var)
			case *ast.SelectorExpr:
				lv, _ = f.info.Uses[x.Sel].(*types.Var)
			}
			if lv == nil || f.seams[lv] != "" {
				return
			}
			if lv.Parent() != nil && !match.IsPackageLevel(lv) {
				return // a local: its own function's business
			}
			sel, ok := ast.Unparen(r).(*ast.SelectorExpr)
			if !ok {
				return
			}
			fn, ok := f.info.Uses[sel.Sel].(*types.Func)
			if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "time" && fn.Pkg().Path() != "context" {
				return
			}
			f.seams[lv] = fn.Name()
		}
		for _, file := range f.files {
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if i < len(n.Values) && len(n.Names) == len(n.Values) {
							note(name, n.Values[i])
						}
					}
				case *ast.AssignStmt:
					if len(n.Lhs) == len(n.Rhs) {
						for i := range n.Lhs {
							note(n.Lhs[i], n.Rhs[i])
						}
					}
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok {
						if fv, ok := f.info.Uses[k].(*types.Var); ok && fv.IsField() {
							note(k, n.Value)
						}
					}
				}
				return true
			})
		}
	}
	return f.seams[v]
}

// Timed returns the waits and deadlines of the timed work the
// statements run and every package function they reach (the walk
// follows all of them once), in the test files too: the timed work of a
// child process the test starts, whose helper is a test function. fn is
// the function of the statements, whose locals tell their values. Of
// the statements in before, which run to their end before a point that
// matters, only the work that outlives them counts: goroutines they
// start, and tickers, timers and deadlines they set (not a time.Sleep
// of their own). A value read from a field or a parameter is kept, of
// unknown value.
func (f *Finder) Timed(fn ast.Node, before, roots []ast.Node) []Duration {
	type item struct {
		root ast.Node
		decl *ast.FuncDecl
		full bool // every wait counts, not only the ones that outlive the call
	}
	type key struct {
		decl *ast.FuncDecl
		full bool
	}
	var out []Duration
	seen := map[key]bool{}
	var work []item
	for _, r := range before {
		work = append(work, item{root: r})
	}
	for _, r := range roots {
		work = append(work, item{root: r, full: true})
	}
	for len(work) > 0 {
		it := work[0]
		work = work[1:]
		ev := &evaluator{info: f.info, root: fn}
		if it.decl != nil {
			ev.root = it.decl
		}
		add := func(e ast.Expr, site string) {
			d := Duration{Own: true, Site: site, Where: f.where(e.Pos())}
			d.Value, d.Known = ev.value(e, 0)
			out = append(out, d)
		}
		follow := func(call *ast.CallExpr, full bool) {
			if fn := match.Callee(f.info, call); fn != nil {
				if d := f.decls[fn.Origin()]; d != nil && d.Body != nil && !seen[key{d, full}] {
					seen[key{d, full}] = true
					work = append(work, item{root: d.Body, decl: d, full: full})
				}
			}
		}
		ast.Inspect(it.root, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				if !it.full {
					work = append(work, item{root: n.Call, decl: it.decl, full: true})
					return false
				}
			case *ast.CallExpr:
				if e := f.clockArg(n); e != nil && (it.full || !match.IsPkgFunc(f.info, n, "time", "Sleep")) {
					add(e, types.ExprString(n))
				}
				follow(n, it.full)
			case *ast.BinaryExpr:
				if e := f.comparedWithElapsed(n); e != nil && it.full {
					add(e, types.ExprString(n))
				}
			}
			return true
		})
	}
	return out
}
