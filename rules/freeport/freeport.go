package freeport

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/dst"
	"github.com/dave/dst/dstutil"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule makes tests listen on a port the system picks.
var Rule = &rule.Rule{
	Name:      "freeport",
	Doc:       doc,
	Default:   true,
	Prefilter: prefilter,
	Run:       run,
}

// Every shape the rule reports names one of these functions or methods.
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, "Listen")
}

// A site is a call that listens on a constant address with a fixed port.
type site struct {
	file *ast.File
	fd   *ast.FuncDecl // the function holding the call
	call *ast.CallExpr
	arg  ast.Expr // the address argument, or nil for an http.Server's Addr
	addr string
	host string
	port string
	what string // the listening function, for messages: "net.Listen"
	http bool   // an http shape: reported, never rewritten
}

type checker struct {
	pass  *rule.Pass
	info  *types.Info
	sites []*site

	// Read once per package, after the sites are found (elsewhere).
	decls    []mention            // every declaration that may mention a port
	byDigits map[string][]mention // run of digits in a string constant -> declarations
	byInt    map[int64][]mention  // integer constant -> declarations
	listens  map[listenKey]bool   // a function's listen sites, by port

	// Read once per package, on first use (hazard.go).
	fileText []dirFile // the files of the package's directory besides its Go files
	arith    *string   // the package's first arithmetic on a port, or ""
	portRead *string   // the code's first read of an address as a value, or "" (observe.go)
	rts      *routes   // the routes by which text reaches the code (routes.go)
	sockRead *string   // the code's first read of a socket below net's Addr methods, or "" (sockread.go)

	// Read once per module, on first use (module.go).
	scan  *modScan
	typed map[string]bool // the files the typed analysis read

	// Built once per package, on first use (flow.go).
	parent map[ast.Node]ast.Node
	usesOf map[types.Object][]*ast.Ident
	bodies map[*types.Func]*ast.FuncDecl

	// What the flow of the current use entered, and the files of other
	// builds it is looked up in (portread.go).
	reach       *reached
	leftOut     []match.LeftOutFile
	leftOutFset *token.FileSet
}

func run(pass *rule.Pass) error {
	c := &checker{pass: pass, info: pass.TypesInfo}
	for _, f := range pass.Files {
		name := pass.Fset.File(f.Pos()).Name()
		if !strings.HasSuffix(name, "_test.go") || ast.IsGenerated(f) {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				c.findSites(f, fd)
			}
		}
	}
	for _, s := range c.sites {
		c.report(s)
	}
	return nil
}

// findSites records the fixed-port listens of fd.
func (c *checker) findSites(f *ast.File, fd *ast.FuncDecl) {
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		s := &site{file: f, fd: fd, call: call}
		switch {
		case match.IsPkgFunc(c.info, call, "net", "Listen", "ListenPacket") && len(call.Args) == 2,
			match.IsPkgFunc(c.info, call, "crypto/tls", "Listen") && len(call.Args) == 3:
			s.arg = call.Args[1]
		case match.IsPkgFunc(c.info, call, "net/http", "ListenAndServe", "ListenAndServeTLS") && len(call.Args) > 0:
			s.arg, s.http = call.Args[0], true
		case match.IsMethod(c.info, call, "net/http", "ListenAndServe", "ListenAndServeTLS"):
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok || !match.IsNamed(c.info.TypeOf(sel.X), "net/http", "Server") {
				return true
			}
			s.arg, s.http = c.serverAddr(fd, sel.X), true
			if s.arg == nil {
				return true
			}
		default:
			return true
		}
		addr, ok := match.ConstString(c.info, s.arg)
		if !ok {
			return true // a computed address: nothing to prove
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" || port == "0" {
			return true
		}
		s.addr, s.host, s.port = addr, host, port
		s.what = match.PkgFuncName(match.Callee(c.info, call))
		c.sites = append(c.sites, s)
		return true
	})
}

// serverAddr returns the Addr field's value of the http.Server literal x
// is, points to, or (for a variable) was given in fd, or nil.
func (c *checker) serverAddr(fd *ast.FuncDecl, x ast.Expr) ast.Expr {
	lit := serverLit(x)
	if lit == nil {
		id, ok := ast.Unparen(x).(*ast.Ident)
		if !ok {
			return nil
		}
		v, _ := c.info.Uses[id].(*types.Var)
		if v == nil {
			return nil
		}
		// The variable's literal, where the function gives it one.
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, l := range as.Lhs {
					if lid, ok := l.(*ast.Ident); ok && c.info.ObjectOf(lid) == v {
						if l := serverLit(as.Rhs[i]); l != nil {
							lit = l
						}
					}
				}
			}
			return true
		})
		if lit == nil {
			return nil
		}
	}
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Addr" {
				return kv.Value
			}
		}
	}
	return nil
}

// serverLit returns the composite literal x is or points to (&T{...}), or
// nil.
func serverLit(x ast.Expr) *ast.CompositeLit {
	x = ast.Unparen(x)
	if u, ok := x.(*ast.UnaryExpr); ok && u.Op == token.AND {
		x = ast.Unparen(u.X)
	}
	lit, _ := x.(*ast.CompositeLit)
	return lit
}

// report reports s, with a fix where every use of its port can follow the
// listener.
func (c *checker) report(s *site) {
	d := rule.Diagnostic{
		Pos:     s.call.Pos(),
		End:     s.call.End(),
		Message: fmt.Sprintf("%s on the fixed address %q fails when another process, or another copy of the suite, holds port %s", s.what, s.addr, s.port),
	}
	if s.http {
		d.NotFixed = "listen with net.Listen on port 0 and serve on the listener; dial ln.Addr().String()"
		c.pass.Report(d)
		return
	}
	fix, why := c.plan(s)
	if why != "" {
		d.NotFixed = why
	} else {
		d.Fix = fix
	}
	c.pass.Report(d)
}

// A use is a constant expression that mentions the port.
type use struct {
	expr  ast.Expr
	value string
	stack []ast.Node // the nodes enclosing expr, outermost first
}

// plan returns the fix for s, or why there is none.
func (c *checker) plan(s *site) (*rule.Fix, string) {
	if _, err := strconv.Atoi(s.port); err != nil {
		return nil, fmt.Sprintf("the port %q is a service name, whose other uses the rule cannot find", s.port)
	}
	// An address another package declares is one its code may use.
	if obj := constObj(c.info, s.arg); obj != nil && obj.Pkg() != c.pass.Pkg {
		return nil, fmt.Sprintf("the address is the constant %s.%s, which the code under test may use too", obj.Pkg().Name(), obj.Name())
	}

	// The variable holding the listener, if any.
	var ln *types.Var
	match.WithStack(s.fd.Body, func(n ast.Node, stack []ast.Node) bool {
		if n != s.call || len(stack) == 0 {
			return true
		}
		switch p := stack[len(stack)-1].(type) {
		case *ast.AssignStmt:
			if len(p.Rhs) == 1 && p.Rhs[0] == n && len(p.Lhs) > 0 {
				if id, ok := p.Lhs[0].(*ast.Ident); ok {
					ln, _ = c.info.ObjectOf(id).(*types.Var)
				}
			}
		case *ast.ValueSpec:
			if len(p.Values) == 1 && p.Values[0] == n && len(p.Names) > 0 {
				ln, _ = c.info.ObjectOf(p.Names[0]).(*types.Var)
			}
		}
		return false
	})
	if ln != nil && ln.Name() == "_" {
		ln = nil
	}
	method := "Addr"
	if match.IsPkgFunc(c.info, s.call, "net", "ListenPacket") {
		method = "LocalAddr"
	}
	lnWhy := ""
	switch {
	case ln == nil:
		lnWhy = "the listener is not kept in a variable, so the test's later uses of the address cannot follow it"
	case match.IsPackageLevel(ln):
		lnWhy = fmt.Sprintf("the listener is kept in the package-level variable %s, which other code may change", ln.Name())
	case c.assignments(s.fd, ln) != 1:
		lnWhy = fmt.Sprintf("%s is assigned more than once, so %s.%s() may name another listener", ln.Name(), ln.Name(), method)
	}

	// Every mention of the port in the function must be the listen's
	// argument or a use the fix points at the listener.
	type edit struct {
		expr           ast.Expr
		prefix, suffix string
	}
	var edits []edit
	for _, u := range c.uses(s.fd, s.port) {
		if s.arg.Pos() <= u.expr.Pos() && u.expr.End() <= s.arg.End() {
			continue // the address the fix replaces
		}
		if c.inServerAddr(u) {
			// http.Server's Addr only matters to ListenAndServe, a site
			// of its own.
			continue
		}
		if why := c.contract(u); why != "" {
			return nil, why
		}
		e := edit{expr: u.expr}
		switch {
		case u.value == s.addr && isConstName(c.info, u.expr, true):
		case isLit(u.expr):
			var ok bool
			e.prefix, e.suffix, ok = splitURL(u.value, s.addr, s.port)
			if !ok {
				return nil, fmt.Sprintf("the test uses port %s in %s, which the rule cannot point at the listener", s.port, strconv.Quote(u.value))
			}
		case !isString(c.info.TypeOf(u.expr)):
			return nil, fmt.Sprintf("the test uses port %s as a number, which the rule cannot point at the listener", s.port)
		default:
			return nil, fmt.Sprintf("the test uses port %s in %s, which the rule cannot point at the listener", s.port, types.ExprString(u.expr))
		}
		if u.expr.Pos() < s.call.End() {
			return nil, fmt.Sprintf("the test uses the address in %s before it listens", types.ExprString(u.expr))
		}
		if lnWhy != "" {
			return nil, lnWhy
		}
		if !c.resolves(ln, u.expr.Pos()) {
			return nil, fmt.Sprintf("%s is not in scope where the test uses the address in %s", ln.Name(), types.ExprString(u.expr))
		}
		c.reach = &reached{}
		why := c.flowHazard(u)
		r := c.reach
		c.reach = nil
		if why != "" {
			return nil, fmt.Sprintf("the address %s reaches %s, not only a dial, a listen or an HTTP client: with a port the system picks, what the code computes from it (a hash, a key, an order, a comparison) may change from run to run", types.ExprString(u.expr), why)
		}
		if why := c.otherBuildReads(r); why != "" {
			return nil, fmt.Sprintf("the address %s reaches %s, a use other than a dial, a listen, an HTTP client, a message or an equality with the same address: what that build computes from it (an order, a minimum, a hash, a suffix, a split) depends on the port's value, which is part of what the test exercises, and a port the system picks (32768 and up) orders, hashes and ends unlike the fixed one", types.ExprString(u.expr), why)
		}
		edits = append(edits, e)
	}

	// Outside the function the port is another test's business only when
	// that test listens on it itself.
	if why := c.elsewhere(s); why != "" {
		return nil, why
	}
	if why := c.shared(s); why != "" {
		return nil, why
	}
	if why := c.peers(s, ln); why != "" {
		return nil, why
	}
	if why := c.valueElsewhere(s.port); why != "" {
		return nil, why
	}
	if f := c.inFiles(s.port); f != "" {
		return nil, fmt.Sprintf("port %s also appears in %s, a file the code under test may read: it would still name the old port", s.port, f)
	}
	if len(edits) > 0 {
		if why := namedHost(s); why != "" {
			return nil, why
		}
	}
	if why := c.derived(s); why != "" {
		return nil, why
	}
	if why := c.unreached(s, ln, len(edits)); why != "" {
		return nil, why
	}
	var used []ast.Expr
	for _, e := range edits {
		used = append(used, e.expr)
	}
	if why := c.foreignDefault(s, ln, used); why != "" {
		return nil, why
	}
	if why := c.observed(s, ln); why != "" {
		return nil, why
	}
	if ln != nil && len(edits) > 0 {
		if obj, _, _ := types.LookupFieldOrMethod(ln.Type(), true, ln.Pkg(), method); obj == nil {
			return nil, fmt.Sprintf("%s has no %s method to name the listener's address", ln.Name(), method)
		}
	}

	newAddr := net.JoinHostPort(s.host, "0")
	msg := fmt.Sprintf("listen on %q, a port the system picks", newAddr)
	if len(edits) > 0 {
		msg += fmt.Sprintf(", and use %s.%s().String() where the test used the address", ln.Name(), method)
	}
	return &rule.Fix{
		Message: msg,
		Changes: []rule.Change{{Kind: rule.Address, What: "the server listens on a port the kernel picks, not a fixed one", Checked: hazardsChecked}},
		Apply: func() error {
			lit := &dst.BasicLit{Kind: token.STRING, Value: strconv.Quote(newAddr)}
			repl := map[dst.Node]dst.Node{c.pass.Dst(s.arg): lit}
			for _, e := range edits {
				var n dst.Expr = addrCall(ln.Name(), method)
				if e.prefix != "" {
					n = &dst.BinaryExpr{X: strLit(e.prefix), Op: token.ADD, Y: n}
				}
				if e.suffix != "" {
					n = &dst.BinaryExpr{X: n, Op: token.ADD, Y: strLit(e.suffix)}
				}
				repl[c.pass.Dst(e.expr)] = n
			}
			dstutil.Apply(c.pass.Dst(s.fd.Body), func(cur *dstutil.Cursor) bool {
				old := cur.Node()
				if n, ok := repl[old]; ok {
					// Comments around the old expression stay with its
					// replacement.
					n.Decorations().Before = old.Decorations().Before
					n.Decorations().After = old.Decorations().After
					n.Decorations().Start = old.Decorations().Start
					n.Decorations().End = old.Decorations().End
					cur.Replace(n)
					return false
				}
				return true
			}, nil)
			return nil
		},
	}, ""
}

// resolves reports whether v's name at pos names v.
func (c *checker) resolves(v *types.Var, pos token.Pos) bool {
	scope := c.pass.Pkg.Scope().Innermost(pos)
	if scope == nil {
		return false
	}
	_, obj := scope.LookupParent(v.Name(), pos)
	return obj == types.Object(v)
}

// addrCall builds ln.Addr().String() (ln.LocalAddr().String() for a
// packet connection).
func addrCall(ln, method string) *dst.CallExpr {
	return &dst.CallExpr{Fun: &dst.SelectorExpr{
		X:   &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(ln), Sel: dst.NewIdent(method)}},
		Sel: dst.NewIdent("String"),
	}}
}

func strLit(s string) *dst.BasicLit {
	return &dst.BasicLit{Kind: token.STRING, Value: strconv.Quote(s)}
}

// splitURL splits v, a URL that holds addr as its host and port, around
// the address: "http://localhost:8080/x" gives "http://" and "/x". The
// port must appear nowhere else in v.
func splitURL(v, addr, port string) (prefix, suffix string, ok bool) {
	i := strings.Index(v, addr)
	if i < 0 || strings.Count(v, addr) != 1 {
		return "", "", false
	}
	prefix, suffix = v[:i], v[i+len(addr):]
	if !strings.HasSuffix(prefix, "://") || !(suffix == "" || strings.ContainsAny(suffix[:1], "/?#")) {
		return "", "", false
	}
	if hasPort(prefix, port) || hasPort(suffix, port) {
		return "", "", false
	}
	return prefix, suffix, true
}

// hasPort reports whether s holds port as a number of its own: "8080" is
// in "localhost:8080" but not in "18080".
func hasPort(s, port string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], port)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isDigit(s[j-1])
		after := j+len(port) == len(s) || !isDigit(s[j+len(port)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// uses returns the constant expressions of root that mention port: string
// constants holding it, integer constants equal to it. A sum of strings is
// looked into, so in "http://"+addr the use is addr. Constant
// declarations are not uses; the names they declare are, where they
// appear.
func (c *checker) uses(root ast.Node, port string) []use {
	n, _ := strconv.Atoi(port)
	var out []use
	c.constExprs(root, func(e ast.Expr, stack []ast.Node, str string, isStr bool, i int64) {
		if isStr && hasPort(str, port) {
			out = append(out, use{expr: e, value: str, stack: append([]ast.Node(nil), stack...)})
		} else if !isStr && i == int64(n) {
			out = append(out, use{expr: e, value: port, stack: append([]ast.Node(nil), stack...)})
		}
	})
	return out
}

// constExprs calls visit for each constant expression of root that uses
// looks at: a string constant (isStr, with its value str) or an integer
// constant (its value i), outside constant declarations, looking into sums
// of strings and parentheses.
func (c *checker) constExprs(root ast.Node, visit func(e ast.Expr, stack []ast.Node, str string, isStr bool, i int64)) {
	match.WithStack(root, func(node ast.Node, stack []ast.Node) bool {
		if gd, ok := node.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			return false
		}
		e, ok := node.(ast.Expr)
		if !ok {
			return true
		}
		tv, ok := c.info.Types[e]
		if !ok || tv.Value == nil {
			return true
		}
		if b, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && b.Op == token.ADD && isString(tv.Type) {
			return true // look at the operands
		}
		if _, ok := e.(*ast.ParenExpr); ok {
			return true
		}
		if v, ok := match.ConstString(c.info, e); ok {
			visit(e, stack, v, true, 0)
		} else if i, ok := match.ConstInt(c.info, e); ok {
			visit(e, stack, "", false, i)
		}
		return false
	})
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsString != 0
}

// context returns the node holding u's value once it leaves the sums and
// parentheses it is part of, and the child it holds.
func context(u use) (parent, child ast.Node) {
	child = u.expr
	for i := len(u.stack) - 1; i >= 0; i-- {
		switch p := u.stack[i].(type) {
		case *ast.ParenExpr:
		case *ast.BinaryExpr:
			if p.Op != token.ADD {
				return p, child
			}
		default:
			return p, child
		}
		child = u.stack[i]
	}
	return nil, child
}

// contract returns why u makes the fixed port part of what the test
// checks or configures, or "".
func (c *checker) contract(u use) string {
	parent, child := context(u)
	switch p := parent.(type) {
	case *ast.BinaryExpr:
		if p.Op == token.EQL || p.Op == token.NEQ {
			return fmt.Sprintf("the test compares against %s, so the fixed port is part of what it checks", types.ExprString(u.expr))
		}
	case *ast.CaseClause:
		return fmt.Sprintf("the test compares against %s, so the fixed port is part of what it checks", types.ExprString(u.expr))
	case *ast.CallExpr:
		if fn := match.Callee(c.info, p); fn != nil && fn.Pkg() != nil && child != p.Fun && isComparison(fn) {
			return fmt.Sprintf("the test asserts on %s with %s, so the fixed port is part of what it checks", types.ExprString(u.expr), match.PkgFuncName(fn))
		}
	case *ast.KeyValueExpr:
		if child == p.Value && c.isStructLit(u, p) {
			return fmt.Sprintf("the test passes %s to a configuration field %s that the code under test reads, and that code would keep the fixed port", types.ExprString(u.expr), types.ExprString(p.Key))
		}
	case *ast.CompositeLit:
		if isStruct(c.info.TypeOf(p)) {
			return fmt.Sprintf("the test passes %s in a struct that the code under test reads, and that code would keep the fixed port", types.ExprString(u.expr))
		}
	case *ast.AssignStmt:
		for _, l := range p.Lhs {
			if sel, ok := l.(*ast.SelectorExpr); ok {
				if s := c.info.Selections[sel]; s != nil && s.Kind() == types.FieldVal {
					return fmt.Sprintf("the test assigns %s to the field %s that the code under test reads, and that code would keep the fixed port", types.ExprString(u.expr), types.ExprString(l))
				}
			}
		}
	}
	return ""
}

// isStructLit reports whether kv, an element around u, is a field of a
// struct literal.
func (c *checker) isStructLit(u use, kv *ast.KeyValueExpr) bool {
	for i := len(u.stack) - 1; i > 0; i-- {
		if u.stack[i] == kv {
			lit, ok := u.stack[i-1].(*ast.CompositeLit)
			return ok && isStruct(c.info.TypeOf(lit))
		}
	}
	return false
}

func isStruct(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	_, ok := t.Underlying().(*types.Struct)
	return ok
}

// isComparison reports whether fn compares its arguments: an assertion
// library's function, reflect.DeepEqual, or a string or byte comparison.
func isComparison(fn *types.Func) bool {
	path := fn.Pkg().Path()
	switch {
	case match.IsAssertion(path, fn.Name()):
		return true
	case path == "reflect" && fn.Name() == "DeepEqual":
		return true
	case path == "strings" || path == "bytes":
		switch fn.Name() {
		case "Contains", "HasPrefix", "HasSuffix", "EqualFold", "Equal", "Compare", "Index":
			return true
		}
	}
	return false
}

// inServerAddr reports whether u is the Addr field of an http.Server
// literal.
func (c *checker) inServerAddr(u use) bool {
	parent, child := context(u)
	kv, ok := parent.(*ast.KeyValueExpr)
	if !ok || child != kv.Value || len(u.stack) < 2 {
		return false
	}
	for i := len(u.stack) - 1; i >= 0; i-- {
		if u.stack[i] == kv && i > 0 {
			lit, ok := u.stack[i-1].(*ast.CompositeLit)
			return ok && match.IsNamed(c.info.TypeOf(lit), "net/http", "Server")
		}
	}
	return false
}

// elsewhere returns why the port's mentions outside s's function stop the
// fix: a helper that listens and a test that dials, or code of the
// package that uses the port, would part.
func (c *checker) elsewhere(s *site) string {
	for _, d := range c.mentioning(s.port) {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d == s.fd || c.listensOn(d, s.port) {
				continue
			}
			return fmt.Sprintf("port %s also appears in %s, which may reach the listener this call opens", s.port, d.Name.Name)
		case *ast.GenDecl:
			return fmt.Sprintf("port %s also appears in a package-level variable", s.port)
		}
	}
	return ""
}

// A mention is a declaration of the package that mentions some port
// (uses finds it there): a function with a body, or a var declaration.
type mention struct {
	decl ast.Decl
	at   int // the declaration's rank in the package's files, in order
}

// mentioning returns the declarations of the package that mention port,
// in the order of the package's files and declarations. The package is
// read once, however many sites there are: each site used to read every
// declaration, sites × file size on a big test file.
func (c *checker) mentioning(port string) []ast.Decl {
	if c.byDigits == nil {
		c.indexMentions()
	}
	var ms []mention
	if isDigits(port) {
		n, _ := strconv.Atoi(port)
		ms = append(append(ms, c.byDigits[port]...), c.byInt[int64(n)]...)
		slices.SortFunc(ms, func(a, b mention) int { return a.at - b.at })
		ms = slices.CompactFunc(ms, func(a, b mention) bool { return a.at == b.at })
	} else {
		// A signed port ("+80"): not a run of digits; read every declaration.
		for _, m := range c.decls {
			if len(c.uses(mentionRoot(m.decl), port)) > 0 {
				ms = append(ms, m)
			}
		}
	}
	out := make([]ast.Decl, len(ms))
	for i, m := range ms {
		out[i] = m.decl
	}
	return out
}

// indexMentions reads the package's declarations once: for each, the runs
// of digits of its string constants (hasPort(v, port) holds for a port of
// digits exactly when port is one of v's maximal runs of digits) and the
// values of its integer constants.
func (c *checker) indexMentions() {
	c.byDigits, c.byInt = map[string][]mention{}, map[int64][]mention{}
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
			default:
				continue
			}
			m := mention{decl: d, at: len(c.decls)}
			c.decls = append(c.decls, m)
			digits, ints := map[string]bool{}, map[int64]bool{}
			c.constExprs(mentionRoot(d), func(_ ast.Expr, _ []ast.Node, str string, isStr bool, i int64) {
				if !isStr {
					ints[i] = true
					return
				}
				for j := 0; j < len(str); {
					if !isDigit(str[j]) {
						j++
						continue
					}
					k := j
					for k < len(str) && isDigit(str[k]) {
						k++
					}
					digits[str[j:k]] = true
					j = k
				}
			})
			for run := range digits {
				c.byDigits[run] = append(c.byDigits[run], m)
			}
			for i := range ints {
				c.byInt[i] = append(c.byInt[i], m)
			}
		}
	}
}

// mentionRoot is what uses reads of a declaration: a function's body, a
// var declaration whole.
func mentionRoot(d ast.Decl) ast.Node {
	if fd, ok := d.(*ast.FuncDecl); ok {
		return fd.Body
	}
	return d
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// listensOn reports whether fd has a listen site of its own on port.
func (c *checker) listensOn(fd *ast.FuncDecl, port string) bool {
	if c.listens == nil {
		c.listens = map[listenKey]bool{}
		for _, s := range c.sites {
			c.listens[listenKey{s.fd, s.port}] = true
		}
	}
	return c.listens[listenKey{fd, port}]
}

type listenKey struct {
	fd   *ast.FuncDecl
	port string
}

// assignments counts the statements of fd that give v a value.
func (c *checker) assignments(fd *ast.FuncDecl, v *types.Var) int {
	n := 0
	ast.Inspect(fd.Body, func(node ast.Node) bool {
		switch node := node.(type) {
		case *ast.AssignStmt:
			for _, l := range node.Lhs {
				if id, ok := l.(*ast.Ident); ok && c.info.ObjectOf(id) == v {
					n++
				}
			}
		case *ast.ValueSpec:
			for _, id := range node.Names {
				if c.info.ObjectOf(id) == v && len(node.Values) > 0 {
					n++
				}
			}
		case *ast.UnaryExpr:
			if id, ok := ast.Unparen(node.X).(*ast.Ident); ok && node.Op == token.AND && c.info.ObjectOf(id) == v {
				n += 2 // its address escapes: anything may assign it
			}
		}
		return true
	})
	return n
}

// constObj returns the named constant e is, or nil.
func constObj(info *types.Info, e ast.Expr) *types.Const {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		c, _ := info.Uses[e].(*types.Const)
		return c
	case *ast.SelectorExpr:
		c, _ := info.Uses[e.Sel].(*types.Const)
		return c
	}
	return nil
}

// isConstName reports whether e is a string literal or names a constant.
func isConstName(info *types.Info, e ast.Expr, lit bool) bool {
	return constObj(info, e) != nil || lit && isLit(e)
}

func isLit(e ast.Expr) bool {
	b, ok := ast.Unparen(e).(*ast.BasicLit)
	return ok && b.Kind == token.STRING
}
