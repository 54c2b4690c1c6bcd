package spawn

import (
	"fmt"
	"go/ast"
	"go/types"
	"strconv"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// A chain is two or more units in one statement list, separated only by
// quiet code (the checks of a child's result, setup for the next child).
type chain struct {
	parent ast.Node // the block, case or comm clause that holds list
	list   []ast.Stmt
	start  int // index in list of the first unit's first statement
	end    int // index after the last unit's last statement
	units  []*unit
	gaps   [][]ast.Stmt // gaps[i] lies between units[i] and units[i+1]

	// Filled in by analyze.
	setup      []ast.Stmt            // gap statements that stay before the children
	handlers   [][]ast.Stmt          // handlers[i]: gap statements that move after them, for unit i
	names      map[*ast.Ident]string // identifiers to rename
	hoistStmts map[ast.Stmt]bool     // unit statements whose variables are hoisted
	hoisted    []*hoist              // variables to declare before the children
}

// A hoist is a variable the rewrite declares before the children run,
// because a child's code sets it inside a goroutine.
type hoist struct {
	name string
	typ  types.Type
}

// chains finds and reports the chains of list.
func (c *checker) chains(parent ast.Node, list []ast.Stmt) {
	// A chain has two units at least, each with a statement that runs a
	// child. Without two, skip the search: isPrep asks for the effect
	// summary of the calls it meets, which can load their packages.
	runs := 0
	for _, s := range list {
		if call, _ := c.runCall(s); call != nil {
			runs++
		}
	}
	if runs < 2 {
		return
	}
	i := 0
	for i < len(list) {
		u, next := c.unitAt(list, i)
		if u == nil {
			i++
			continue
		}
		ch := &chain{parent: parent, list: list, start: i, end: next, units: []*unit{u}}
		for j := next; ; {
			k := j
			var nu *unit
			var nn int
			for k < len(list) {
				if nu, nn = c.unitAt(list, k); nu != nil {
					break
				}
				if c.effect(list[k], true) != "" {
					break
				}
				k++
			}
			if nu == nil {
				break
			}
			ch.gaps = append(ch.gaps, list[j:k])
			ch.units = append(ch.units, nu)
			ch.end, j = nn, nn
		}
		if len(ch.units) >= 2 {
			c.reportChain(ch)
		}
		i = ch.end
	}
}

func (c *checker) reportChain(ch *chain) {
	d := rule.Diagnostic{
		Pos:     ch.units[0].call.Pos(),
		End:     ch.units[0].call.End(),
		Message: fmt.Sprintf("%d child processes run one after another", len(ch.units)),
	}
	why, proven := c.analyze(ch)
	if proven {
		return // the children depend on each other: nothing to fix or report
	}
	if why != "" {
		d.NotFixed = why
	} else {
		d.Message = fmt.Sprintf("%d independent child processes run one after another", len(ch.units))
		d.Fix = c.chainFix(ch)
		if d.Fix != nil {
			d.Fix.Hypothesis.Reason = c.unproven(ch.units)
			if d.Fix.Hypothesis.Reason != "" {
				d.Message = fmt.Sprintf("%d child processes run one after another", len(ch.units))
			}
		}
	}
	c.pass.Report(d)
}

// ordinal names the i-th child (from 0) in a reason. Reasons carry no
// line numbers: a finding made in a later round sees rewritten lines, and
// the engine maps back only the finding's own position.
func ordinal(i int) string {
	names := []string{"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("%dth", i+1)
}

// analyze decides whether the units of ch are independent and, if they
// are, plans the rewrite; it returns why not otherwise. proven says the
// units depend on each other for certain (one reads what another sets),
// which is not worth a finding; other reasons are doubts the user can
// resolve.
func (c *checker) analyze(ch *chain) (why string, proven bool) {
	n := len(ch.units)
	// Split each gap into setup (which may run before the earlier
	// children) and handlers (which must run after them).
	ch.handlers = make([][]ast.Stmt, n)
	var doubt string                 // the first reason to doubt independence
	var sRefs []map[*types.Var][]ref // each unit's own code
	touched := map[*types.Var]bool{} // set by a unit so far, or by a handler
	for i, u := range ch.units {
		nodes := make([]ast.Node, len(u.stmts))
		for k, s := range u.stmts {
			nodes[k] = s
		}
		r := refs(c.info, nodes...)
		sRefs = append(sRefs, r)
		for v, rs := range r {
			if written(rs) {
				touched[v] = true
			}
		}
		if i == n-1 {
			break
		}
		for _, s := range ch.gaps[i] {
			sr := refs(c.info, s)
			handler := false
			for v := range sr {
				if touched[v] {
					handler = true
				}
			}
			if handler {
				ch.handlers[i] = append(ch.handlers[i], s)
				for v, rs := range sr {
					if written(rs) {
						touched[v] = true
					}
				}
				continue
			}
			// Setup now runs before the children of units 0..i: it must
			// not change what they read.
			for v, rs := range sr {
				if !written(rs) {
					continue
				}
				for k := 0; k <= i; k++ {
					if _, ok := sRefs[k][v]; ok {
						return fmt.Sprintf("the code after the %s child sets %s, which the %s child uses before it", ordinal(i), v.Name(), ordinal(k)), true
					}
				}
			}
			ch.setup = append(ch.setup, s)
		}
	}

	// Variables several children set in full before reading them are each
	// child's own: all but the last child get a variable of their own.
	shared := map[*types.Var][]int{} // variable → units that set it first
	for i, r := range sRefs {
		for v, rs := range r {
			if written(rs) {
				shared[v] = append(shared[v], i)
			}
		}
	}
	hRefs := make([]map[*types.Var][]ref, n)
	for i := range ch.handlers {
		nodes := make([]ast.Node, len(ch.handlers[i]))
		for k, s := range ch.handlers[i] {
			nodes[k] = s
		}
		hRefs[i] = refs(c.info, nodes...)
	}
	for i, r := range sRefs {
		for v, rs := range r {
			if ignored(v) || c.programNameOnly(ch.units[i], v, rs) {
				continue
			}
			for j := range sRefs {
				if j == i {
					continue
				}
				rs2, ok := sRefs[j][v]
				if !ok {
					continue
				}
				if len(shared[v]) > 1 && setsFirst(rs) && setsFirst(rs2) {
					continue // each child's own, renamed below
				}
				if written(rs) || written(rs2) {
					w, o := i, j
					if !written(rs) {
						w, o = j, i
					}
					return fmt.Sprintf("the %s child uses %s, which the code of the %s child sets", ordinal(o), v.Name(), ordinal(w)), true
				}
				if !c.programNameOnly(ch.units[j], v, rs2) && doubt == "" {
					doubt = fmt.Sprintf("the %s and %s children are both given %s; one may change what the other reads", ordinal(min(i, j)), ordinal(max(i, j)), v.Name())
				}
			}
			// A handler of an earlier child must not change what this one
			// reads.
			for k := 0; k < i; k++ {
				if hr, ok := hRefs[k][v]; ok && written(hr) && !(len(shared[v]) > 1 && setsFirst(rs)) {
					return fmt.Sprintf("the code after the %s child sets %s, which the %s child uses", ordinal(k), v.Name(), ordinal(i)), true
				}
			}
		}
	}
	// A shared value says more than a helper that must stay on the test
	// goroutine: the children may not be independent at all.
	if doubt != "" {
		return doubt, false
	}
	for i, u := range ch.units {
		if u.why != "" {
			return fmt.Sprintf("the %s child runs in %s and so must stay on the test goroutine (return an error instead)", ordinal(i), u.why), false
		}
	}
	if why := c.orderHazard(ch); why != "" {
		return why, false
	}
	return c.plan(ch, sRefs, hRefs, shared), false
}

// programNameOnly reports whether every mention of v in u is within the
// program name of one of its commands (os.Args[0], a built binary's path):
// running the same program twice shares nothing.
func (c *checker) programNameOnly(u *unit, v *types.Var, rs []ref) bool {
	if written(rs) {
		return false
	}
	for _, r := range rs {
		in := false
		for _, cmd := range u.cmds {
			if name := c.programName(cmd); name != nil && name.Pos() <= r.id.Pos() && r.id.End() <= name.End() {
				in = true
			}
		}
		if !in {
			return false
		}
	}
	return true
}

// plan names the variables the rewrite declares before the children and
// the identifiers it renames. Variables a unit declares are declared
// before the children; a variable several units set gets a new name in
// each unit but the last that sets it.
func (c *checker) plan(ch *chain, sRefs, hRefs []map[*types.Var][]ref, shared map[*types.Var][]int) string {
	ch.names = map[*ast.Ident]string{}
	hoistVar := c.hoistVars(ch, shared)
	block := c.scopeOf(ch.parent)
	taken := c.namesIn(c.fn)
	declared := map[string]bool{}
	fresh := func(base string) string {
		for k := 1; ; k++ {
			name := base + strconv.Itoa(k)
			if !taken[name] && !declared[name] && c.pass.Pkg.Scope().Lookup(name) == nil {
				taken[name] = true
				return name
			}
		}
	}
	add := func(name string, v *types.Var) {
		declared[name] = true
		ch.hoisted = append(ch.hoisted, &hoist{name: name, typ: v.Type()})
	}
	done := map[*types.Var]bool{}
	for i, r := range sRefs {
		for _, v := range sortedVars(r) {
			rs := r[v]
			if units := shared[v]; len(units) > 1 {
				last := units[len(units)-1]
				if i != last {
					// This unit's own copy.
					name := fresh(v.Name())
					add(name, v)
					for _, x := range rs {
						ch.names[x.id] = name
					}
					if i < len(hRefs) {
						for _, x := range hRefs[i][v] {
							ch.names[x.id] = name
						}
					}
					// Handlers of later units that read this unit's value,
					// until the next unit sets it.
					for k := i + 1; k < len(hRefs); k++ {
						if contains(units, k) {
							break
						}
						for _, x := range hRefs[k][v] {
							ch.names[x.id] = name
						}
					}
					continue
				}
			}
			if done[v] || !hoistVar[v] {
				continue
			}
			done[v] = true
			// Declared by this unit: declare it before the children.
			name := v.Name()
			if declared[name] || c.captures(ch, v, block) {
				name = fresh(v.Name())
				c.renameAll(ch, v, name)
			}
			add(name, v)
		}
	}
	for _, h := range ch.hoisted {
		if c.typeExpr(h.typ) == nil {
			return "the rewrite cannot name the type " + types.TypeString(h.typ, nil) + " of a variable it must declare"
		}
	}
	return ""
}

func contains(list []int, x int) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// declaredInAny reports whether v is declared by the code of a unit.
func declaredInAny(v *types.Var, units []*unit) bool {
	for _, u := range units {
		for _, s := range u.stmts {
			if declaredIn(v, s) {
				return true
			}
		}
	}
	return false
}

// captures reports whether declaring v under its own name at the start of
// the chain would change what another identifier means: the block already
// declares the name for something else, or code between the chain's start
// and v's declaration uses the name for an outer variable.
func (c *checker) captures(ch *chain, v *types.Var, block *types.Scope) bool {
	if block == nil {
		return true
	}
	if o := block.Lookup(v.Name()); o != nil && o != types.Object(v) {
		return true
	}
	from := ch.list[ch.start].Pos()
	to := ch.list[len(ch.list)-1].End()
	if v.Parent() == block {
		to = v.Pos()
	}
	found := false
	ast.Inspect(ch.parent, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || found || id.Pos() < from || id.Pos() >= to || id.Name != v.Name() {
			return !found
		}
		if o := c.info.ObjectOf(id); o != nil && o != types.Object(v) && encloses(o.Parent(), block) {
			found = true
		}
		return !found
	})
	return found
}

// encloses reports whether scope outer is block or one of its parents.
func encloses(outer, block *types.Scope) bool {
	for s := block; s != nil; s = s.Parent() {
		if s == outer {
			return true
		}
	}
	return false
}

// renameAll renames every mention of v in the function.
func (c *checker) renameAll(ch *chain, v *types.Var, name string) {
	ast.Inspect(c.fn, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && c.info.ObjectOf(id) == types.Object(v) {
			ch.names[id] = name
		}
		return true
	})
}

// namesIn returns every identifier name used in root.
func (c *checker) namesIn(root ast.Node) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(root, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			names[id.Name] = true
		}
		return true
	})
	return names
}

// sortedVars returns the variables of r in the order of their first
// mention.
func sortedVars(r map[*types.Var][]ref) []*types.Var {
	var vs []*types.Var
	for v := range r {
		vs = append(vs, v)
	}
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && r[vs[j]][0].id.Pos() < r[vs[j-1]][0].id.Pos(); j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
	return vs
}

var _ = match.Root

// scopeOf returns the scope of a block or clause; a function's body has
// the scope of its type.
func (c *checker) scopeOf(n ast.Node) *types.Scope {
	if s := c.info.Scopes[n]; s != nil {
		return s
	}
	var found *types.Scope
	ast.Inspect(c.fn, func(m ast.Node) bool {
		switch f := m.(type) {
		case *ast.FuncDecl:
			if f.Body == n {
				found = c.info.Scopes[f.Type]
			}
		case *ast.FuncLit:
			if f.Body == n {
				found = c.info.Scopes[f.Type]
			}
		}
		return found == nil
	})
	return found
}

// hoistVars decides which variables the units declare must be declared
// before the group: those mentioned outside the goroutine their unit runs
// in (by the checks after the wait, or later code), and those each unit
// sets for itself. A statement that declares one hoisted variable has all
// its variables hoisted, since it turns into an assignment.
func (c *checker) hoistVars(ch *chain, shared map[*types.Var][]int) map[*types.Var]bool {
	hoist := map[*types.Var]bool{}
	ch.hoistStmts = map[ast.Stmt]bool{}
	for _, u := range ch.units {
		inside := func(pos ast.Node) bool {
			for _, s := range u.stmts {
				var n ast.Node = s
				if is, ok := s.(*ast.IfStmt); ok && is.Init != nil {
					n = is.Init // the condition and body are replayed after the wait
				}
				if n.Pos() <= pos.Pos() && pos.End() <= n.End() {
					return true
				}
			}
			return false
		}
		for _, s := range u.stmts {
			defs := c.defsOf(s)
			need := false
			for _, v := range defs {
				if len(shared[v]) > 1 {
					need = true
				}
				ast.Inspect(c.fn, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && c.info.ObjectOf(id) == types.Object(v) && !inside(id) {
						need = true
					}
					return !need
				})
			}
			if need {
				ch.hoistStmts[s] = true
				for _, v := range defs {
					hoist[v] = true
				}
			}
		}
	}
	return hoist
}

// defsOf returns the variables a unit statement declares (for an if
// statement, those of its init).
func (c *checker) defsOf(s ast.Stmt) []*types.Var {
	var root ast.Node = s
	if is, ok := s.(*ast.IfStmt); ok {
		if is.Init == nil {
			return nil
		}
		root = is.Init
	}
	var vs []*types.Var
	ast.Inspect(root, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := c.info.Defs[id].(*types.Var); ok {
				vs = append(vs, v)
			}
		}
		return true
	})
	return vs
}
