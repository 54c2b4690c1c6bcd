package leak

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

// A lifecycle is the method that ends a value.
type lifecycle struct {
	method string
	result string // "", "error" or "bool"
	ctx    bool   // the method takes a context: Shutdown(ctx)
	fn     *types.Func
}

// lifecycleNames are the methods that end a value, in the order the rule
// prefers them: Close ends at once, Shutdown may wait for work in flight.
var lifecycleNames = []string{"Close", "Shutdown", "Stop", "Cancel"}

// lifecycleOf returns how a value of type t is ended, or nil.
func (c *checker) lifecycleOf(t types.Type) *lifecycle {
	if match.IsNamed(t, "reflect", "Value") {
		// reflect.Value.Close closes the channel it holds, and panics
		// on anything else: it is not a resource to end.
		return nil
	}
	for _, name := range lifecycleNames {
		obj, _, _ := types.LookupFieldOrMethod(t, true, c.pass.Pkg, name)
		fn, ok := obj.(*types.Func)
		if !ok || !fn.Exported() {
			continue
		}
		sig := fn.Type().(*types.Signature)
		lc := &lifecycle{method: name, fn: fn}
		switch {
		case sig.Variadic():
			continue
		case name == "Shutdown" && sig.Params().Len() == 1:
			// Shutdown(ctx) is ended with a background context; a
			// Shutdown() without one is ended as Close is.
			if !match.IsNamed(sig.Params().At(0).Type(), "context", "Context") {
				continue
			}
			lc.ctx = true
		case sig.Params().Len() != 0:
			continue
		}
		switch sig.Results().Len() {
		case 0:
		case 1:
			r := sig.Results().At(0).Type()
			switch {
			case types.Identical(r, types.Universe.Lookup("error").Type()):
				lc.result = "error"
			case types.Identical(r, types.Typ[types.Bool]):
				lc.result = "bool"
			default:
				continue
			}
		default:
			continue
		}
		return lc
	}
	return nil
}

// noEnd says why a value of type t has no method the rule can end it
// with: it has none of the lifecycle names, or the ones it has take
// arguments or return what the rule cannot check. It never claims a type
// lacks a method it has.
// With cure, it ends with what the test's author can do.
func (c *checker) noEnd(t types.Type, cure bool) string {
	var odd []string
	for _, name := range lifecycleNames {
		obj, _, _ := types.LookupFieldOrMethod(t, true, c.pass.Pkg, name)
		if fn, ok := obj.(*types.Func); ok && fn.Exported() {
			odd = append(odd, name+strings.TrimPrefix(types.TypeString(fn.Type(), func(p *types.Package) string {
				if p == c.pass.Pkg {
					return ""
				}
				return p.Name()
			}), "func"))
		}
	}
	if len(odd) == 0 {
		why := fmt.Sprintf("%s has no Close, Stop or Shutdown method to end it", c.typeName(t))
		if cure {
			why += "; give it one and end it with t.Cleanup"
		}
		return why
	}
	why := fmt.Sprintf("%s has no method the rule can end it with: %s takes arguments or returns values the rule cannot supply or check", c.typeName(t), strings.Join(odd, ", "))
	if cure {
		why += "; call it with t.Cleanup"
	}
	return why
}

// A site is a value a test creates.
type site struct {
	v          *types.Var
	id         *ast.Ident
	stmt       ast.Stmt   // the statement that creates it
	list       []ast.Stmt // the statement list holding stmt
	owner      ast.Node   // the block or clause of list
	idx        int        // stmt's index in list
	call       *ast.CallExpr
	errV       *types.Var // the error the call returns beside it, if named
	errIgnored bool       // the call returns an error the test drops
	lc         *lifecycle

	// dropErr says why the cleanup drops the lifecycle method's error
	// (errDropped), or "".
	dropErr string
}

// values reports the values fd creates with a lifecycle method that it
// never ends.
func (c *checker) values(fd *ast.FuncDecl) {
	for _, s := range c.sites(fd) {
		c.checkSite(s)
	}
}

// sites finds the short variable declarations in fd whose value comes
// from a call and has a lifecycle method.
func (c *checker) sites(fd *ast.FuncDecl) []*site {
	var out []*site
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		var list []ast.Stmt
		switch b := n.(type) {
		case *ast.BlockStmt:
			list = b.List
		case *ast.CaseClause:
			list = b.Body
		case *ast.CommClause:
			list = b.Body
		default:
			return true
		}
		for i, st := range list {
			for _, d := range c.decls0(st) {
				c.addSites(&out, d.lhs, d.call, st, list, n, i)
			}
		}
		return true
	})
	return out
}

// use kinds of a value after its creation.
type uses struct {
	ended     bool // ended for sure: defer, t.Cleanup, or a statement of the creating block
	endedSome bool // ended only inside a branch or loop
	owned     bool // handed to other code: returned, stored, passed, address taken, ended in a func literal
}

// checkSite reports s if the test never ends the value.
func (c *checker) checkSite(s *site) {
	u := c.usesOf(s)
	if u.ended || u.owned || !c.started(s) || c.takesT(s.call) {
		return
	}
	// The test ends it another way: by hand, through the fields its
	// lifecycle method uses, or by ending a parent that owns it. A
	// cleanup would end it a second time, and "never closed" is false.
	if !u.endedSome {
		how, always := c.endedByTest(s)
		switch {
		case always || c.endedParent(s.call, 0) != nil:
			return
		case how != "":
			c.mayEnd(s, how)
			return
		}
	}
	d := rule.Diagnostic{
		Pos:     s.id.Pos(),
		End:     s.id.End(),
		Message: fmt.Sprintf("%s (%s) is never %s; it outlives the test", s.v.Name(), c.typeName(s.v.Type()), pastTense(s.lc.method)),
	}
	if u.endedSome {
		d.Message = fmt.Sprintf("%s (%s) is %s on some paths only", s.v.Name(), c.typeName(s.v.Type()), pastTense(s.lc.method))
		d.NotFixed = fmt.Sprintf("the test calls %s only inside a branch or loop, and a cleanup as well might end it twice: end it once, with t.Cleanup or defer right after it is created", s.lc.method)
		c.pass.Report(d)
		return
	}
	c.fixSite(s, d)
}

// mayEnd reports a value that a method the test calls ends on some paths
// only: a cleanup may be its second end, safe only if that can neither
// block, panic nor fail.
func (c *checker) mayEnd(s *site, how string) {
	d := rule.Diagnostic{
		Pos:     s.id.Pos(),
		End:     s.id.End(),
		Message: fmt.Sprintf("%s (%s) is %s only when %s does it; it may outlive the test", s.v.Name(), c.typeName(s.v.Type()), pastTense(s.lc.method), how),
	}
	if why := c.unsafeTwice(s); why != "" {
		d.NotFixed = fmt.Sprintf("%s may already have ended it, and %s", how, why)
		c.pass.Report(d)
		return
	}
	c.fixSite(s, d)
}

// fixSite reports d with the cleanup that ends s, or the reason there is
// none.
func (c *checker) fixSite(s *site, d rule.Diagnostic) {
	fix, why := c.cleanupFix(s)
	if fix != nil {
		notFixed, unproven := c.secondEnd(s)
		if unproven == "" {
			unproven = c.keptBy(s)
		}
		var checked []string
		for _, hazard := range []func(*site) (string, string){c.funcKeeps, c.endsWhatLeaks} {
			why, ok := hazard(s)
			if unproven == "" {
				unproven = why
			}
			if ok != "" {
				checked = append(checked, ok)
			}
		}
		// What else the cleanup changes: who else uses the value, the
		// order against the checks registered earlier, what it waits for.
		for _, hazard := range []func(*site) string{c.shared, c.observedLater, c.waitsForRequests, c.runsHandlers, c.dropsSharedPool, c.stdRunsCode, c.fileLocked, c.endWaits, c.endedBeforeLater, c.peerSees, c.numberHandedOn} {
			if notFixed == "" {
				notFixed = hazard(s)
			}
		}
		// Who holds a part of it: the code its channel or method value
		// was handed to, a function it runs.
		if notFixed == "" {
			why, ok := c.partSees(s)
			notFixed = why
			if ok != "" {
				checked = append(checked, ok)
			}
		}
		if notFixed == "" && !isStdType(s.v.Type()) {
			checked = append(checked, "the package does not share it with other tests", "no check registered earlier, nor the enclosing test's code after the subtest, sees what "+s.lc.method+" does", s.lc.method+" does not wait on the state of the code under test")
		}
		if notFixed == "" {
			checked = append(checked, "no code of the enclosing test runs after the subtest that ends it")
		}
		if notFixed == "" && isStdType(s.v.Type()) {
			checked = append(checked, fmt.Sprintf(stdSafeChecked, c.typeName(s.v.Type()), s.lc.method))
			if match.IsNamed(s.v.Type(), "os", "File") {
				checked = append(checked, fileLockChecked)
			}
			if stdPeerType(s.v.Type()) {
				checked = append(checked, fmt.Sprintf(peerChecked, s.lc.method))
			}
		}
		if notFixed == "" && match.IsNamed(s.v.Type(), "net/http/httptest", "Server") {
			checked = append(checked, "the test leaves no response of it open", fmt.Sprintf(handlersChecked, s.lc.method), poolChecked)
		}
		if s.lc.result == "error" && c.style.kind != drop && c.style.kind != dropBlank {
			if s.dropErr = c.errDropped(s); s.dropErr != "" {
				fix.Changes[0].What += "; its " + s.lc.method + " error is dropped: " + s.dropErr
			} else {
				checked = append(checked, "the cleanup is the only "+s.lc.method+" and the test provokes no error from it")
			}
		}
		if notFixed == "" {
			if why := c.ownEnd(s); why != "" {
				if unproven == "" {
					unproven = why
				}
			} else {
				checked = append(checked, s.lc.method+" is the standard library's: it writes no file a later test reads and waits for nothing the code under test owes it")
			}
		}
		fix.Changes[0].Checked = checked
		// No end is unseen (rule.Change.Unseen): the fix stays a
		// review-only ownership change. Red team batches 24 to 30
		// found a way for the code to see each kind of end the rule
		// had called unseen (stdsafe.go: leafEnds is gone).
		switch {
		case notFixed != "":
			fix, why = nil, notFixed
		case unproven != "" && fix.Hypothesis == nil:
			fix.Hypothesis = rule.Unproven(unproven)
		}
	}
	if fix == nil {
		d.NotFixed = why
	} else {
		d.Fix = fix
	}
	c.pass.Report(d)
}

// endVerb is the fix's verb phrase for a lifecycle method.
func endVerb(method string) string {
	switch method {
	case "Close":
		return "close it"
	case "Stop":
		return "stop it"
	case "Shutdown":
		return "shut it down"
	}
	return "cancel it"
}

// typeName prints t with package names, not paths.
func (c *checker) typeName(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string {
		if p == c.pass.Pkg {
			return ""
		}
		return p.Name()
	})
}

func pastTense(method string) string {
	switch method {
	case "Close":
		return "closed"
	case "Stop":
		return "stopped"
	case "Shutdown":
		return "shut down"
	}
	return "cancelled"
}

// usesOf classifies what the test does with the value after creating it.
func (c *checker) usesOf(s *site) uses {
	var u uses
	match.WithStack(c.fn.Body, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || id == s.id || c.info.Uses[id] != types.Object(s.v) {
			return true
		}
		if len(stack) == 0 {
			return true
		}
		// The value flows through parentheses, type assertions and
		// conversions unchanged: c.(*conn) returned is c returned.
		k := len(stack) - 1
		var child ast.Node = id
		for k > 0 && flows(c.info, stack[k], child) {
			child = stack[k]
			k--
		}
		parent := stack[k]
		if child != ast.Node(id) {
			if _, ok := parent.(*ast.SelectorExpr); ok {
				return true // a method or field of the converted value
			}
		}
		switch p := parent.(type) {
		case *ast.SelectorExpr:
			if p.X != id {
				return true
			}
			if !isLifecycleName(p.Sel.Name) {
				return true // another method or field: using it, not owning it
			}
			c.classifyEnd(s, p, stack[:len(stack)-1], &u)
			return true
		case *ast.ReturnStmt, *ast.AssignStmt, *ast.ValueSpec, *ast.CompositeLit, *ast.KeyValueExpr, *ast.SendStmt:
			u.owned = true
		case *ast.UnaryExpr:
			if p.Op == token.AND {
				u.owned = true
			}
		case *ast.CallExpr:
			if c.nonOwning(p) {
				return true
			}
			u.owned = true
		}
		return true
	})
	return u
}

func isLifecycleName(name string) bool {
	for _, n := range lifecycleNames {
		if n == name {
			return true
		}
	}
	return false
}

// classifyEnd records a mention v.Close (called or taken as a value) with
// the nodes enclosing it, outermost first.
func (c *checker) classifyEnd(s *site, sel *ast.SelectorExpr, stack []ast.Node, u *uses) {
	for _, n := range stack {
		switch n := n.(type) {
		case *ast.DeferStmt:
			u.ended = true
			return
		case *ast.CallExpr:
			if match.IsMethod(c.info, n, "testing", "Cleanup") {
				u.ended = true
				return
			}
		}
	}
	for i := len(stack) - 1; i >= 0; i-- {
		n := stack[i]
		if n == s.owner {
			u.ended = true // a statement of the block that created it
			return
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			u.owned = true // ended by code the test hands it to
			return
		case *ast.IfStmt:
			// The init and condition always run: if err := v.Close(); ...
			if within(sel, n.Init) || within(sel, n.Cond) {
				continue
			}
			u.endedSome = true
			return
		case *ast.SwitchStmt:
			if within(sel, n.Init) || within(sel, n.Tag) {
				continue
			}
			u.endedSome = true
			return
		case *ast.ForStmt, *ast.RangeStmt, *ast.TypeSwitchStmt, *ast.SelectStmt, *ast.CaseClause, *ast.CommClause:
			u.endedSome = true
			return
		}
	}
	u.ended = true
}

// nonOwning reports whether call only looks at its arguments: logging,
// formatting, assertions.
func (c *checker) nonOwning(call *ast.CallExpr) bool {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	switch path := fn.Pkg().Path(); {
	case path == "log":
		// log.SetOutput(f) and log.New(f, ...) keep the writer for the
		// rest of the process (red team batch 28, stdlogfile,
		// lognewfile); the rest only write to it.
		return fn.Name() != "SetOutput" && fn.Name() != "New"
	case path == "testing", path == "fmt", path == "reflect", path == "errors":
		return true
	case match.IsAssertion(path, fn.Name()):
		return true
	}
	return false
}

// cleanupFix ends the value right after it is created (and its error
// checked): t.Cleanup where a *testing.T (or B, F, TB) is in scope, else
// defer.
func (c *checker) cleanupFix(s *site) (*rule.Fix, string) {
	typ, _, inGo := c.enclosingFunc(s.stmt)
	if inGo {
		return nil, "it is created in a goroutine, where the test cannot register its end"
	}
	t := c.testParam(typ)
	if t == "" {
		if _, ok := c.enclosingNode(s.stmt).(*ast.FuncLit); ok {
			return nil, "it is created in a function literal without a *testing.T to register its end with"
		}
	}
	at := s.idx
	if s.errV != nil {
		next := s.idx + 1
		if next >= len(s.list) || !c.errCheck(s.list[next], s.errV) {
			return nil, fmt.Sprintf("the test does not stop when %s fails, so %s may be nil at cleanup", calleeName(c.info, s.call), s.v.Name())
		}
		at = next
	} else if s.errIgnored {
		return nil, fmt.Sprintf("the error of %s is dropped, so %s may be nil at cleanup", calleeName(c.info, s.call), s.v.Name())
	}
	how := "t.Cleanup"
	if t == "" {
		how = "defer"
		if lit := c.litUsing(s); lit != nil {
			// go func() { ln.Accept() }(); return ln.Addr().String(): a
			// defer would end the value under the goroutine, when the
			// helper returns.
			return nil, fmt.Sprintf("a function literal uses %s and may run after the function returns (a goroutine), and a defer would end it first", s.v.Name())
		}
		if s.lc.result == "error" && c.style.kind != drop && c.style.kind != dropBlank {
			return nil, fmt.Sprintf("%s returns an error, and no *testing.T is in scope to report it with, as the package's tests do", s.lc.method)
		}
	}
	// An interface value from code outside the standard library may be a
	// test double whose Close panics or blocks ("unimplemented"): only
	// running the test can tell.
	unproven := ""
	if types.IsInterface(s.v.Type()) {
		if fn := match.Callee(c.info, s.call); fn == nil || fn.Pkg() == nil || !match.IsStd(fn.Pkg().Path()) {
			unproven = fmt.Sprintf("%s is an interface value made by %s; the analysis cannot see which %s it runs (it may be a test double)", s.v.Name(), calleeName(c.info, s.call), s.lc.method)
		}
	}
	return &rule.Fix{
		Hypothesis: rule.Unproven(unproven),
		Message:    fmt.Sprintf("%s with %s right after it is created", endVerb(s.lc.method), how),
		Changes:    []rule.Change{{Kind: rule.Ownership, What: "the test " + endVerb(s.lc.method) + " the value it creates when it ends"}},
		Apply: func() error {
			stmt := c.endStmt(s, t)
			owner := c.pass.Dst(s.owner)
			list := match.DstStmtList(owner)
			if list == nil {
				return nil
			}
			after := c.pass.Dst(s.list[at]).(dst.Stmt)
			for i, st := range *list {
				if st == after {
					// The new line goes right under the one that creates
					// the value, and takes over the space after it (a
					// blank line stays one blank line, below the new one):
					// only the added line moves in the diff.
					stmt.Decorations().Before = dst.NewLine
					stmt.Decorations().After = after.Decorations().After
					after.Decorations().After = dst.NewLine
					*list = append((*list)[:i+1], append([]dst.Stmt{stmt}, (*list)[i+1:]...)...)
					return nil
				}
			}
			return nil
		},
	}, ""
}

// litUsing returns a function literal, in the function that creates the
// value, that uses it, or nil.
func (c *checker) litUsing(s *site) *ast.FuncLit {
	var body *ast.BlockStmt
	switch fn := c.enclosingNode(s.stmt).(type) {
	case *ast.FuncDecl:
		body = fn.Body
	case *ast.FuncLit:
		body = fn.Body
	}
	var found *ast.FuncLit
	ast.Inspect(body, func(n ast.Node) bool {
		lit, ok := n.(*ast.FuncLit)
		if !ok || found != nil {
			return found == nil
		}
		ast.Inspect(lit.Body, func(m ast.Node) bool {
			if id, ok := m.(*ast.Ident); ok && c.info.Uses[id] == types.Object(s.v) {
				found = lit
			}
			return found == nil
		})
		return false
	})
	return found
}

// enclosingNode returns the innermost function node around n.
func (c *checker) enclosingNode(n ast.Node) ast.Node {
	var inner ast.Node = c.fn
	ast.Inspect(c.fn.Body, func(m ast.Node) bool {
		if m == nil || m.Pos() > n.Pos() || m.End() < n.End() {
			return false
		}
		if lit, ok := m.(*ast.FuncLit); ok {
			inner = lit
		}
		return true
	})
	return inner
}

// errCheck reports whether stmt is `if err != nil { ...; t.Fatal(...) }`
// (or return, FailNow, Skip, panic): the test stops when err is set.
func (c *checker) errCheck(stmt ast.Stmt, errV *types.Var) bool {
	// require.NoError(t, err) and require.Nil(t, err) stop the test too.
	if es, ok := stmt.(*ast.ExprStmt); ok {
		call, ok := ast.Unparen(es.X).(*ast.CallExpr)
		if !ok {
			return false
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() == nil || !strings.HasSuffix(fn.Pkg().Path(), "testify/require") || (fn.Name() != "NoError" && fn.Name() != "Nil") {
			return false
		}
		for _, a := range call.Args {
			if id, ok := ast.Unparen(a).(*ast.Ident); ok && c.info.Uses[id] == types.Object(errV) {
				return true
			}
		}
		return false
	}
	is, ok := stmt.(*ast.IfStmt)
	if !ok || is.Init != nil {
		return false
	}
	b, ok := ast.Unparen(is.Cond).(*ast.BinaryExpr)
	if !ok || b.Op != token.NEQ {
		return false
	}
	x, ok := ast.Unparen(b.X).(*ast.Ident)
	if !ok || c.info.Uses[x] != types.Object(errV) {
		return false
	}
	if y, ok := ast.Unparen(b.Y).(*ast.Ident); !ok || y.Name != "nil" {
		return false
	}
	if len(is.Body.List) == 0 {
		return false
	}
	switch last := is.Body.List[len(is.Body.List)-1].(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.ExprStmt:
		call, ok := ast.Unparen(last.X).(*ast.CallExpr)
		if !ok {
			return false
		}
		if match.IsMethod(c.info, call, "testing", "Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow") {
			return true
		}
		if exits(c.info, call) {
			return true
		}
		if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() != nil && strings.HasSuffix(fn.Pkg().Path(), "testify/require") {
			return true
		}
	}
	return false
}

// exits reports whether call ends the program or the goroutine, so that
// the code after it never runs: panic, log.Fatal and log.Panic (and their
// f and ln forms, as functions or *log.Logger methods), os.Exit,
// runtime.Goexit.
func exits(info *types.Info, call *ast.CallExpr) bool {
	logs := []string{"Fatal", "Fatalf", "Fatalln", "Panic", "Panicf", "Panicln"}
	return match.IsBuiltin(info, call.Fun, "panic") ||
		match.IsPkgFunc(info, call, "log", logs...) || match.IsMethod(info, call, "log", logs...) ||
		match.IsPkgFunc(info, call, "os", "Exit") || match.IsPkgFunc(info, call, "runtime", "Goexit")
}

func calleeName(info *types.Info, call *ast.CallExpr) string {
	if fn := match.Callee(info, call); fn != nil {
		return match.PkgFuncName(fn)
	}
	return "the call"
}

// endStmt builds the statement that ends the value: t.Cleanup(v.Close),
// t.Cleanup(func() { v.Close() }), or defer v.Close().
func (c *checker) endStmt(s *site, t string) dst.Stmt {
	recv := dst.NewIdent(s.v.Name())
	var args []dst.Expr
	if s.lc.ctx {
		args = []dst.Expr{&dst.CallExpr{Fun: &dst.Ident{Name: "Background", Path: "context"}}}
	}
	end := &dst.CallExpr{Fun: &dst.SelectorExpr{X: recv, Sel: dst.NewIdent(s.lc.method)}, Args: args}
	if t == "" {
		return &dst.DeferStmt{Call: end}
	}
	cleanup := func(arg dst.Expr) dst.Stmt {
		return &dst.ExprStmt{X: &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(t), Sel: dst.NewIdent("Cleanup")}, Args: []dst.Expr{arg}}}
	}
	if s.lc.result == "" && !s.lc.ctx {
		return cleanup(&dst.SelectorExpr{X: dst.NewIdent(s.v.Name()), Sel: dst.NewIdent(s.lc.method)})
	}
	var body dst.Stmt = &dst.ExprStmt{X: end}
	if s.lc.result == "error" {
		// The original never ended the value, so it checked no error of
		// it: the error may be the API's answer to what the test did (a
		// lease the test made be lost), and reporting it would fail
		// correct code.
		body = &dst.AssignStmt{Lhs: []dst.Expr{dst.NewIdent("_")}, Tok: token.ASSIGN, Rhs: []dst.Expr{end}}
	}
	return cleanup(&dst.FuncLit{Type: &dst.FuncType{Params: &dst.FieldList{}}, Body: &dst.BlockStmt{List: []dst.Stmt{body}}})
}

// within reports whether n lies inside outer (which may be nil).
func within(n ast.Node, outer ast.Node) bool {
	return outer != nil && outer.Pos() <= n.Pos() && n.End() <= outer.End()
}

// startNames are methods that begin a value's lifecycle: a type that has
// one is running only once the test has called it.
var startNames = []string{"Start", "Run", "Serve"}

// started reports whether the value is running, as far as the test shows.
// A type outside the standard library with a Start (Run, Serve) method
// starts its work there, and its Stop may well block when nothing was
// started (a send on a channel only the started loop receives): such a
// value counts as running only if the test calls that method on it.
func (c *checker) started(s *site) bool {
	t := s.v.Type()
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok || named.Obj().Pkg() == nil || match.IsStd(named.Obj().Pkg().Path()) {
		return true
	}
	var starts []string
	for _, name := range startNames {
		if obj, _, _ := types.LookupFieldOrMethod(s.v.Type(), true, c.pass.Pkg, name); obj != nil {
			if _, ok := obj.(*types.Func); ok {
				starts = append(starts, name)
			}
		}
	}
	if len(starts) == 0 || c.startedBy(s) {
		return true
	}
	called := false
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || called {
			return !called
		}
		if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && c.info.Uses[id] == types.Object(s.v) {
			for _, name := range starts {
				if sel.Sel.Name == name {
					called = true
				}
			}
		}
		return !called
	})
	return called
}

// A declaration is the left-hand names of a short variable declaration
// or a var spec, and the one call that gives their values.
type declaration struct {
	lhs  []ast.Expr
	call *ast.CallExpr
}

// decls0 returns the declarations of st whose values come from calls:
// v, err := f(), var v = f(), var ( a = f(); b = g() ).
func (c *checker) decls0(st ast.Stmt) []declaration {
	var out []declaration
	call := func(e ast.Expr) *ast.CallExpr {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			return nil
		}
		if tv, ok := c.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
			return nil
		}
		return call
	}
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok == token.DEFINE && len(st.Rhs) == 1 {
			if cl := call(st.Rhs[0]); cl != nil {
				out = append(out, declaration{st.Lhs, cl})
			}
		}
	case *ast.DeclStmt:
		g, ok := st.Decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			return nil
		}
		for _, spec := range g.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok {
				continue
			}
			names := make([]ast.Expr, len(vs.Names))
			for i, n := range vs.Names {
				names[i] = n
			}
			switch {
			case len(vs.Values) == 1 && len(vs.Names) > 1:
				if cl := call(vs.Values[0]); cl != nil {
					out = append(out, declaration{names, cl})
				}
			case len(vs.Values) == len(vs.Names):
				for i, v := range vs.Values {
					if cl := call(v); cl != nil {
						out = append(out, declaration{names[i : i+1], cl})
					}
				}
			}
		}
	}
	return out
}

// addSites records the names of one declaration whose type has a
// lifecycle method.
func (c *checker) addSites(out *[]*site, lhs []ast.Expr, call *ast.CallExpr, st ast.Stmt, list []ast.Stmt, owner ast.Node, idx int) {
	var errV *types.Var
	errIgnored := false
	for _, l := range lhs {
		id, ok := l.(*ast.Ident)
		if !ok {
			continue
		}
		t := c.info.TypeOf(l)
		if t != nil && types.Identical(t, types.Universe.Lookup("error").Type()) {
			if v, ok := c.info.ObjectOf(id).(*types.Var); ok && id.Name != "_" {
				errV = v
			} else {
				errIgnored = true
			}
		}
	}
	if len(lhs) == 1 {
		// A single name: the call's other results (an error) are dropped
		// only if the call has them, which a one-name declaration cannot.
		errIgnored = false
	}
	for _, l := range lhs {
		id, ok := l.(*ast.Ident)
		if !ok || id.Name == "_" {
			continue
		}
		v, ok := c.info.Defs[id].(*types.Var)
		if !ok {
			continue
		}
		lc := c.lifecycleOf(v.Type())
		if lc == nil {
			c.unstoppable(v, id, call)
			continue
		}
		*out = append(*out, &site{v: v, id: id, stmt: st, list: list, owner: owner, idx: idx, call: call, errV: errV, errIgnored: errIgnored, lc: lc})
	}
}

// unstoppable reports a value without a lifecycle method made by a
// package function that always starts a goroutine: nothing the test can
// call ends that goroutine.
func (c *checker) unstoppable(v *types.Var, id *ast.Ident, call *ast.CallExpr) {
	fn := match.Callee(c.info, call)
	if fn == nil {
		return
	}
	if fn.Pkg() != c.pass.Pkg {
		c.unstoppableOther(v, id, fn)
		return
	}
	if !c.alwaysStarts(fn, 0) {
		return
	}
	// Only a handle of the package's own making holds the goroutine: not
	// an error, a response or a count.
	t := types.Unalias(v.Type())
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	named, ok := t.(*types.Named)
	if !ok || named.Obj().Pkg() != c.pass.Pkg {
		return
	}
	c.pass.Report(rule.Diagnostic{
		Pos:      id.Pos(),
		End:      id.End(),
		Message:  fmt.Sprintf("%s starts a goroutine that outlives the test", fn.Name()),
		NotFixed: c.noEnd(v.Type(), true),
	})
}

// alwaysStarts reports whether the package function fn starts a
// long-lived goroutine on every call: a go statement of a function literal
// that loops without end (for { ... } or for range), or a call of a
// package function that always starts one, at the top level of its body
// (not under a condition).
func (c *checker) alwaysStarts(fn *types.Func, depth int) bool {
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil || depth > 2 {
		return false
	}
	for _, st := range fd.Body.List {
		switch st := st.(type) {
		case *ast.GoStmt:
			if lit, ok := st.Call.Fun.(*ast.FuncLit); ok && loopsOn(lit.Body) {
				return true
			}
		case *ast.ExprStmt, *ast.AssignStmt, *ast.ReturnStmt, *ast.DeclStmt:
			found := false
			ast.Inspect(st, func(n ast.Node) bool {
				if _, ok := n.(*ast.FuncLit); ok {
					return false
				}
				if call, ok := n.(*ast.CallExpr); ok {
					if callee := match.Callee(c.info, call); callee != nil && callee.Pkg() == c.pass.Pkg && callee.Origin() != fn.Origin() && c.alwaysStarts(callee, depth+1) {
						found = true
					}
				}
				return !found
			})
			if found {
				return true
			}
		}
	}
	return false
}

// loopsOn reports whether a goroutine body has a loop at its top level
// that runs until something else stops it: for { ... } or for range.
func loopsOn(b *ast.BlockStmt) bool {
	for _, st := range b.List {
		switch st := st.(type) {
		case *ast.ForStmt:
			if st.Cond == nil {
				return true
			}
		case *ast.RangeStmt:
			return true
		}
	}
	return false
}

// takesT reports whether a constructor is given the test's *testing.T (or
// B, F, TB): a helper that takes t registers the value's end itself, by
// the common convention (t.Cleanup(srv.Stop) before returning srv), and a
// second end could fail or panic.
func (c *checker) takesT(call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if match.IsNamed(c.info.TypeOf(a), "testing", "T", "B", "F", "TB") {
			return true
		}
	}
	return false
}

// flows reports whether node passes the value of its operand child on
// unchanged: (x), x.(T), T(x).
func flows(info *types.Info, node, child ast.Node) bool {
	switch n := node.(type) {
	case *ast.ParenExpr:
		return true
	case *ast.TypeAssertExpr:
		return n.X == child
	case *ast.CallExpr:
		if tv, ok := info.Types[n.Fun]; ok && tv.IsType() {
			return true
		}
	}
	return false
}

// ownEnd says why the cleanup's lifecycle method is not the standard
// library's, or "". The rule reads one implementation of the code under
// test; a bug variant's Close may write a file a later test reads, wait
// for a connection the bug never gives back (a spin with
// runtime.Gosched, a channel), or hang, and no reading of the correct
// one rules that out. Only running the tests can tell: the fix is
// unproven. A value of an interface type is the standard library's only
// when a standard function made it (net.Listen's net.Listener).
func (c *checker) ownEnd(s *site) string {
	fn := s.lc.fn
	name := s.v.Name() + "." + s.lc.method
	own := fmt.Sprintf("%s is the code under test's own (%s), not the standard library's: in some implementation it may write what a later test reads, wait for what a bug never gives back, or hang", name, c.typeName(s.v.Type()))
	if fn == nil || fn.Pkg() == nil || !c.isStd(fn.Pkg()) {
		if fn != nil && fn.Pkg() == c.pass.Pkg {
			if p := c.pass.Fset.Position(fn.Pos()); p.IsValid() {
				own = fmt.Sprintf("%s (%s:%d) is the code under test's own, not the standard library's: in some implementation it may write what a later test reads, wait for what a bug never gives back, or hang", name, filepath.Base(p.Filename), p.Line)
			}
		}
		return own
	}
	if types.IsInterface(s.v.Type()) {
		callee := match.Callee(c.info, s.call)
		if callee == nil || callee.Pkg() == nil || !c.isStd(callee.Pkg()) {
			return fmt.Sprintf("%s is a method of an interface, and the value comes from code outside the standard library, whose %s may be any implementation's: it may write what a later test reads, wait for what a bug never gives back, or hang", name, s.lc.method)
		}
	}
	return ""
}

// isStd reports whether p is a standard library package, and not one of
// a module whose path has no dot ("app", which looks standard).
func (c *checker) isStd(p *types.Package) bool {
	if !match.IsStd(p.Path()) {
		return false
	}
	first, _, _ := strings.Cut(p.Path(), "/")
	mine, _, _ := strings.Cut(c.pass.Pkg.Path(), "/")
	return first != strings.TrimSuffix(mine, "_test")
}
