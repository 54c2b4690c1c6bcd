package spawn

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

const errgroupPath = "golang.org/x/sync/errgroup"

// A group writes the code that runs children concurrently: an
// errgroup.Group limited to the machine's cores, or, where the module
// may not gain golang.org/x/sync, a sync.WaitGroup.
type group struct {
	name     string // the group variable
	errgroup bool
	wgGo     bool // sync.WaitGroup.Go exists (go1.25)
}

// decl declares and sets up the group.
func (g *group) decl() []dst.Stmt {
	typ := &dst.Ident{Name: "Group", Path: errgroupPath}
	if !g.errgroup {
		typ = &dst.Ident{Name: "WaitGroup", Path: "sync"}
	}
	out := []dst.Stmt{varDecl(g.name, typ)}
	if g.errgroup {
		out = append(out, exprStmt(call(sel(dst.NewIdent(g.name), "SetLimit"),
			call(&dst.Ident{Name: "GOMAXPROCS", Path: "runtime"}, intLit(0)))))
	}
	return out
}

// spawn runs body in the group.
func (g *group) spawn(body []dst.Stmt) []dst.Stmt {
	if g.errgroup {
		body = append(body, &dst.ReturnStmt{Results: []dst.Expr{dst.NewIdent("nil")}})
		lit := &dst.FuncLit{
			Type: &dst.FuncType{Params: &dst.FieldList{}, Results: &dst.FieldList{List: []*dst.Field{{Type: dst.NewIdent("error")}}}},
			Body: &dst.BlockStmt{List: body},
		}
		return []dst.Stmt{exprStmt(call(sel(dst.NewIdent(g.name), "Go"), lit))}
	}
	if g.wgGo {
		lit := &dst.FuncLit{Type: &dst.FuncType{Params: &dst.FieldList{}}, Body: &dst.BlockStmt{List: body}}
		return []dst.Stmt{exprStmt(call(sel(dst.NewIdent(g.name), "Go"), lit))}
	}
	done := &dst.DeferStmt{Call: call(sel(dst.NewIdent(g.name), "Done"))}
	lit := &dst.FuncLit{Type: &dst.FuncType{Params: &dst.FieldList{}}, Body: &dst.BlockStmt{List: append([]dst.Stmt{done}, body...)}}
	return []dst.Stmt{
		exprStmt(call(sel(dst.NewIdent(g.name), "Add"), intLit(1))),
		&dst.GoStmt{Call: &dst.CallExpr{Fun: lit}},
	}
}

// leave is the statement that ends a child's goroutine early.
func (g *group) leave() dst.Stmt {
	if g.errgroup {
		return &dst.ReturnStmt{Results: []dst.Expr{dst.NewIdent("nil")}}
	}
	return &dst.ReturnStmt{}
}

// wait waits for the children.
func (g *group) wait() dst.Stmt {
	s := exprStmt(call(sel(dst.NewIdent(g.name), "Wait")))
	s.Decs.End.Append("// the children's results are checked below, in order")
	return s
}

// chainFix runs the units of ch concurrently and moves the checks of
// their results after the wait. Its probe, a form verification must
// pass before it tries the fix, runs them one after another in the
// reverse order (see hazard.go).
func (c *checker) chainFix(ch *chain) *rule.Fix {
	fix := c.chainForm(ch, false)
	if fix != nil {
		fix.Hypothesis = &rule.Hypothesis{
			Probe:      c.chainForm(ch, true),
			MustPass:   true,
			ProbeFails: "the children depend on the order they run in: run one after another in the reverse order, a test fails",
		}
	}
	return fix
}

// chainForm returns the fix of ch, or with reversed its probe: the same
// code, but each child, last first, waited for before the next starts.
func (c *checker) chainForm(ch *chain, reversed bool) *rule.Fix {
	g, msg, requires := c.groupFor(ch.units[0].call, "g")
	if g == nil {
		return nil
	}
	ch.hoisted = append([]*hoist(nil), ch.hoisted...)
	message := "run the children together with " + msg + " and check their results after all have finished, in the original order"
	if reversed {
		message = "run the children one after another in the reverse order"
	}
	return &rule.Fix{
		Message:  message,
		Changes:  []rule.Change{{Kind: rule.Order, What: "the children run at the same time, not one after another", Checked: checkedOrder}},
		Requires: requires,
		Apply: func() error {
			for id, name := range ch.names {
				if d, ok := c.pass.Dst(id).(*dst.Ident); ok {
					d.Name = name
				}
			}
			dl := match.DstStmtList(c.pass.Dst(ch.parent))
			if dl == nil {
				return nil
			}
			old := *dl
			// dst statements of list[start:end], by their ast statement.
			dstOf := func(s ast.Stmt) dst.Stmt { return c.pass.Dst(s).(dst.Stmt) }

			var out []dst.Stmt
			out = append(out, old[:ch.start]...)
			for _, s := range ch.setup {
				out = append(out, dstOf(s))
			}
			if len(ch.hoisted) > 0 {
				out = append(out, c.hoistDecl(ch.hoisted))
			}
			out = append(out, g.decl()...)
			replays := make([][]dst.Stmt, len(ch.units))
			var spawns [][]dst.Stmt
			for i, u := range ch.units {
				var body []dst.Stmt
				body, replays[i] = c.moveUnit(u, g, ch.hoistStmts)
				spawns = append(spawns, g.spawn(body))
			}
			if reversed {
				for i := len(spawns) - 1; i >= 0; i-- {
					out = append(out, spawns[i]...)
					out = append(out, g.wait())
				}
			} else {
				for _, sp := range spawns {
					out = append(out, sp...)
				}
				out = append(out, g.wait())
			}
			for i := range ch.units {
				out = append(out, replays[i]...)
				for _, s := range ch.handlers[i] {
					out = append(out, dstOf(s))
				}
			}
			out = append(out, old[ch.end:]...)
			for _, s := range out[ch.start:] {
				s.Decorations().Before = dst.NewLine
			}
			if ch.start > 0 {
				out[ch.start].Decorations().Before = dst.EmptyLine
			}
			*dl = out
			return nil
		},
	}
}

// moveUnit returns the goroutine body of a unit and the checks to replay
// after the wait. hoist holds the statements whose variables are declared
// before the group: their short variable declarations become assignments.
func (c *checker) moveUnit(u *unit, g *group, hoist map[ast.Stmt]bool) (body, replay []dst.Stmt) {
	for k, s := range u.stmts {
		ds := c.pass.Dst(s).(dst.Stmt)
		last := k == len(u.stmts)-1
		hoisted := hoist[s]
		switch s := s.(type) {
		case *ast.DeclStmt:
			if hoisted {
				continue // declared before the group
			}
			body = append(body, ds)
		case *ast.AssignStmt:
			if hoisted && s.Tok == token.DEFINE {
				ds.(*dst.AssignStmt).Tok = token.ASSIGN
			}
			body = append(body, ds)
		case *ast.IfStmt:
			dif := ds.(*dst.IfStmt)
			if s.Init != nil {
				init := dif.Init
				if a, ok := init.(*dst.AssignStmt); ok && hoisted && a.Tok == token.DEFINE {
					a.Tok = token.ASSIGN
				}
				dif.Init = nil
				init.Decorations().Before = dst.NewLine
				if last {
					body = append(body, init)
				} else {
					body = append(body, &dst.IfStmt{Init: init, Cond: dst.Clone(dif.Cond).(dst.Expr), Body: &dst.BlockStmt{List: []dst.Stmt{g.leave()}}})
				}
			} else {
				// The check of Start's error: stop the goroutine where
				// the test would have stopped, check again after.
				body = append(body, &dst.IfStmt{Cond: dst.Clone(dif.Cond).(dst.Expr), Body: &dst.BlockStmt{List: []dst.Stmt{g.leave()}}})
			}
			replay = append(replay, dif)
		default:
			body = append(body, ds)
		}
	}
	for _, s := range body {
		s.Decorations().Before = dst.NewLine
	}
	return body, replay
}

// hoistDecl declares the hoisted variables.
func (c *checker) hoistDecl(hs []*hoist) dst.Stmt {
	gd := &dst.GenDecl{Tok: token.VAR}
	for _, h := range hs {
		gd.Specs = append(gd.Specs, &dst.ValueSpec{Names: []*dst.Ident{dst.NewIdent(h.name)}, Type: c.typeExpr(h.typ)})
	}
	if len(hs) > 1 {
		gd.Lparen = true
		for _, s := range gd.Specs {
			s.Decorations().Before = dst.NewLine
			s.Decorations().After = dst.NewLine
		}
	}
	return &dst.DeclStmt{Decl: gd}
}

// loopFix runs the children of a loop's iterations together, then checks
// each result in a second loop over the same values.
func (c *checker) loopFix(ls *loopSite) *rule.Fix {
	g, msg, requires := c.groupFor(ls.u.call, ls.names["g"])
	if g == nil {
		return nil
	}
	old := !c.pass.FileUsesGo(c.file, "go1.22")
	return &rule.Fix{
		Message:  "run the iterations' children together with " + msg + " and check each result after all have finished, in order",
		Changes:  []rule.Change{{Kind: rule.Order, What: "the iterations' children run at the same time, not one after another", Checked: checkedOrder}},
		Requires: requires,
		Apply: func() error {
			rs := c.pass.Dst(ls.rs).(*dst.RangeStmt)
			dl := match.DstStmtList(c.pass.Dst(ls.parent))
			idx := ls.idx
			results := ls.names["results"]
			var pre []dst.Stmt
			if ls.listName != "" {
				// A literal is named once and ranged by both loops.
				pre = append(pre, &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent(ls.listName)}, Tok: token.DEFINE, Rhs: []dst.Expr{rs.X}})
				rs.X = dst.NewIdent(ls.listName)
			}
			if len(ls.carried) > 0 {
				st := &dst.StructType{Fields: &dst.FieldList{}}
				for _, v := range ls.carried {
					f := &dst.Field{Names: []*dst.Ident{dst.NewIdent(v.Name())}, Type: c.typeExpr(v.Type())}
					f.Decs.Before = dst.NewLine
					st.Fields.List = append(st.Fields.List, f)
				}
				st.Fields.List[len(st.Fields.List)-1].Decs.After = dst.NewLine
				n := dst.Clone(rs.X).(dst.Expr)
				if !ls.isInt {
					n = call(dst.NewIdent("len"), n)
				}
				typ := ls.names["result"]
				pre = append(pre,
					&dst.DeclStmt{Decl: &dst.GenDecl{Tok: token.TYPE, Specs: []dst.Spec{&dst.TypeSpec{Name: dst.NewIdent(typ), Type: st}}}},
					&dst.AssignStmt{
						Lhs: []dst.Expr{dst.NewIdent(results)}, Tok: token.DEFINE,
						Rhs: []dst.Expr{call(dst.NewIdent("make"), &dst.ArrayType{Elt: dst.NewIdent(typ)}, n)},
					})
			}
			pre = append(pre, g.decl()...)

			body, replay := c.moveUnit(ls.u, g, nil)
			if len(ls.carried) > 0 {
				a := &dst.AssignStmt{Tok: token.ASSIGN}
				for _, v := range ls.carried {
					a.Lhs = append(a.Lhs, sel(&dst.IndexExpr{X: dst.NewIdent(results), Index: dst.NewIdent(ls.key)}, v.Name()))
					a.Rhs = append(a.Rhs, dst.NewIdent(v.Name()))
				}
				body = append(body, a)
			}
			// The first loop starts the children.
			first := &dst.RangeStmt{Tok: token.DEFINE, X: dst.Clone(rs.X).(dst.Expr), Body: &dst.BlockStmt{}}
			first.Key = dst.NewIdent(ls.key)
			if rs.Value != nil && c.mentions(ls.u.stmts, ls.rs.Value) {
				first.Value = dst.Clone(rs.Value).(dst.Expr)
			}
			if old {
				// Before go1.22 the loop's variables are shared by all
				// iterations: each goroutine needs its own copy.
				cp := &dst.AssignStmt{Tok: token.DEFINE}
				for _, e := range []dst.Expr{first.Key, first.Value} {
					if e != nil {
						cp.Lhs = append(cp.Lhs, dst.Clone(e).(dst.Expr))
						cp.Rhs = append(cp.Rhs, dst.Clone(e).(dst.Expr))
					}
				}
				first.Body.List = append(first.Body.List, cp)
			}
			first.Body.List = append(first.Body.List, g.spawn(body)...)
			pre = append(pre, first, g.wait())

			// The second loop checks the results, in order.
			var rest []dst.Stmt
			if len(ls.carried) > 0 {
				a := &dst.AssignStmt{Tok: token.DEFINE}
				for _, v := range ls.carried {
					a.Lhs = append(a.Lhs, dst.NewIdent(v.Name()))
					a.Rhs = append(a.Rhs, sel(&dst.IndexExpr{X: dst.NewIdent(results), Index: dst.NewIdent(ls.key)}, v.Name()))
				}
				rest = append(rest, a)
			}
			rest = append(rest, replay...)
			for _, s := range ls.rest {
				rest = append(rest, c.pass.Dst(s).(dst.Stmt))
			}
			var all []dst.Stmt
			all = append(all, (*dl)[:idx]...)
			all = append(all, pre...)
			if len(rest) > 0 {
				if ls.newKey && len(ls.carried) > 0 {
					rs.Key, rs.Tok = dst.NewIdent(ls.key), token.DEFINE
				} else if ls.newKey {
					rs.Key = nil
				}
				if rs.Value != nil && !c.mentions(append(append([]ast.Stmt(nil), ls.rest...), replayAst(ls.u)...), ls.rs.Value) {
					rs.Value = nil
					if rs.Key == nil {
						rs.Tok = token.ILLEGAL
					}
				}
				rs.Body.List = rest
				all = append(all, (*dl)[idx])
			}
			all = append(all, (*dl)[idx+1:]...)
			for _, s := range pre {
				s.Decorations().Before = dst.NewLine
			}
			for _, s := range rest {
				s.Decorations().Before = dst.NewLine
			}
			*dl = all
			return nil
		},
	}
}

// replayAst returns the statement of u replayed after the wait, if any.
func replayAst(u *unit) []ast.Stmt {
	var out []ast.Stmt
	for _, s := range u.stmts {
		if _, ok := s.(*ast.IfStmt); ok {
			out = append(out, s)
		}
	}
	return out
}

// mentions reports whether stmts mention the variable declared by e.
func (c *checker) mentions(stmts []ast.Stmt, e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	if !ok {
		return true
	}
	obj := c.info.ObjectOf(id)
	found := false
	for _, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			if x, ok := n.(*ast.Ident); ok && x != id && c.info.ObjectOf(x) == obj {
				found = true
			}
			return !found
		})
	}
	return found
}

// enclosing returns the statement list owner holding stmt (or the labelled
// statement around it) and its index there.
func (c *checker) enclosing(stmt ast.Stmt) (ast.Node, int) {
	var parent ast.Node
	idx := -1
	ast.Inspect(c.fn, func(n ast.Node) bool {
		if parent != nil {
			return false
		}
		var list []ast.Stmt
		switch p := n.(type) {
		case *ast.BlockStmt:
			list = p.List
		case *ast.CaseClause:
			list = p.Body
		case *ast.CommClause:
			list = p.Body
		default:
			return true
		}
		for i, s := range list {
			if s == stmt {
				parent, idx = n, i
			}
		}
		return parent == nil
	})
	return parent, idx
}

// groupFor chooses how to run children: an errgroup.Group where the module
// has or may gain golang.org/x/sync, else a sync.WaitGroup. It returns
// the group, how the fix message names it and the modules it requires.
//
// Under --no-new-deps it never calls Pass.Require: asking whether the
// module could gain golang.org/x/sync makes the go command look the
// module up (go list -m, a download), which the option rules out, and
// whose answer it would ignore. The package can then use errgroup only
// where its imports already reach it (errgroupReachable).
func (c *checker) groupFor(at ast.Node, name string) (*group, string, []string) {
	g := &group{name: name}
	why := "--no-new-deps"
	switch {
	case noNewDeps.Get(c.pass):
		if c.errgroupReachable() {
			g.errgroup = true
			return g, "an errgroup.Group", nil
		}
	default:
		missing, err := c.requireSync()
		if err == nil {
			g.errgroup = true
			if missing {
				return g, "an errgroup.Group (golang.org/x/sync is added to go.mod)", []string{syncModule}
			}
			return g, "an errgroup.Group", nil
		}
		why = err.Error()
	}
	g.wgGo = c.pass.FileUsesGo(c.file, "go1.25")
	return g, "a sync.WaitGroup (not errgroup: " + why + ")", nil
}

// errgroupReachable reports whether the package's imports, directly or
// through other packages, already include errgroup with the
// Group.SetLimit the fix calls. Then golang.org/x/sync is in the module's
// build list with its hashes in go.sum, so importing errgroup changes
// neither go.mod nor go.sum, and nothing has to ask the go command. (A
// go.mod that requires the module for another package is not seen: the
// group is then a sync.WaitGroup, which needs nothing.)
func (c *checker) errgroupReachable() bool {
	seen := map[*types.Package]bool{}
	stack := []*types.Package{c.pass.Pkg}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p == nil || seen[p] {
			continue
		}
		seen[p] = true
		if p.Path() == errgroupPath {
			obj, ok := p.Scope().Lookup("Group").(*types.TypeName)
			if !ok {
				return false
			}
			m, _, _ := types.LookupFieldOrMethod(types.NewPointer(obj.Type()), true, p, "SetLimit")
			_, ok = m.(*types.Func)
			return ok
		}
		stack = append(stack, p.Imports()...)
	}
	return false
}

// requireSync asks the engine whether golang.org/x/sync is, or can be,
// required by the module.
func (c *checker) requireSync() (missing bool, err error) {
	if c.pass.Require == nil {
		return false, errNoRequire
	}
	return c.pass.Require(syncModule)
}

// typeExpr returns a type expression for t, or nil when the rewrite cannot
// name it (an unexported type of another package, a function or channel
// type, a struct or interface literal).
func (c *checker) typeExpr(t types.Type) dst.Expr {
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.UnsafePointer || t.Info()&types.IsUntyped != 0 {
			return nil
		}
		return dst.NewIdent(t.Name())
	case *types.Alias:
		return c.named(t.Obj(), nil)
	case *types.Named:
		var args []types.Type
		if ta := t.TypeArgs(); ta != nil {
			for i := 0; i < ta.Len(); i++ {
				args = append(args, ta.At(i))
			}
		}
		return c.named(t.Obj(), args)
	case *types.Pointer:
		if x := c.typeExpr(t.Elem()); x != nil {
			return &dst.StarExpr{X: x}
		}
	case *types.Slice:
		if x := c.typeExpr(t.Elem()); x != nil {
			return &dst.ArrayType{Elt: x}
		}
	case *types.Array:
		if x := c.typeExpr(t.Elem()); x != nil {
			return &dst.ArrayType{Len: intLit(int(t.Len())), Elt: x}
		}
	case *types.Map:
		k, v := c.typeExpr(t.Key()), c.typeExpr(t.Elem())
		if k != nil && v != nil {
			return &dst.MapType{Key: k, Value: v}
		}
	}
	return nil
}

func (c *checker) named(obj *types.TypeName, args []types.Type) dst.Expr {
	var x dst.Expr
	switch {
	case obj.Pkg() == nil:
		x = dst.NewIdent(obj.Name()) // error, comparable
	case obj.Pkg() == c.pass.Pkg:
		if obj.Parent() != obj.Pkg().Scope() {
			return nil // a type declared inside a function
		}
		x = dst.NewIdent(obj.Name())
	case obj.Exported():
		x = &dst.Ident{Name: obj.Name(), Path: obj.Pkg().Path()}
	default:
		return nil
	}
	if len(args) == 0 {
		return x
	}
	var idx []dst.Expr
	for _, a := range args {
		e := c.typeExpr(a)
		if e == nil {
			return nil
		}
		idx = append(idx, e)
	}
	if len(idx) == 1 {
		return &dst.IndexExpr{X: x, Index: idx[0]}
	}
	return &dst.IndexListExpr{X: x, Indices: idx}
}

func varDecl(name string, typ dst.Expr) dst.Stmt {
	return &dst.DeclStmt{Decl: &dst.GenDecl{Tok: token.VAR, Specs: []dst.Spec{&dst.ValueSpec{Names: []*dst.Ident{dst.NewIdent(name)}, Type: typ}}}}
}

func exprStmt(x dst.Expr) *dst.ExprStmt { return &dst.ExprStmt{X: x} }

func call(fun dst.Expr, args ...dst.Expr) *dst.CallExpr {
	return &dst.CallExpr{Fun: fun, Args: args}
}

func sel(x dst.Expr, name string) *dst.SelectorExpr {
	return &dst.SelectorExpr{X: x, Sel: dst.NewIdent(name)}
}

func intLit(n int) *dst.BasicLit {
	return &dst.BasicLit{Kind: token.INT, Value: strconv.Itoa(n)}
}
