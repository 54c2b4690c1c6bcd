package freeport

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
)

// The fix changes the port's value: 7781 becomes whatever the system
// picks (32768 and up on Linux). The flow (flow.go, portread.go) follows
// the address's text into code; but code also reads the port back from
// what it holds: the listener the test hands it (ln.Addr()), a
// connection it accepts or dials (LocalAddr, RemoteAddr), an HTTP
// request (r.Host, http.LocalAddrContextKey). A bug that compares the
// value or computes with it (a "privileged port" check with a typo,
// Port >= 10240) shows on the fixed 7781 and on no port the system
// picks: running the correct code cannot tell which values a bug
// mistreats. So a read of the address in the code the tests run
// (every build of the package, the module's packages it imports) keeps
// the port fixed, unless the read only names the address to a dial, a
// listen or a log line. The test's own function is typed: a read of its
// listener's address there other than as text for a dial (a type
// assertion to *net.TCPAddr, net.SplitHostPort, a Port field) keeps it
// too.

// addrMethods are the methods that give a listener's or a connection's
// address.
var addrMethods = map[string]bool{"Addr": true, "LocalAddr": true, "RemoteAddr": true}

// dialSinks are calls, by the name they are called by, that take an
// address only to connect to it; messageSinks, to print it. A message is
// neutral only while its text goes where no code reads it (routes.go).
var (
	dialSinks = map[string]bool{
		"Dial": true, "DialTimeout": true, "DialContext": true, "Listen": true, "ListenPacket": true,
	}
	messageSinks = map[string]bool{
		"Print": true, "Printf": true, "Println": true, "Fatal": true, "Fatalf": true, "Fatalln": true,
		"Log": true, "Logf": true,
	}
)

// observed returns why the code the tests run may read s's port as a
// value, or "".
func (c *checker) observed(s *site, ln *types.Var) string {
	if at := c.testReadsPort(s, ln); at != "" {
		return fmt.Sprintf("the test reads the listener's port back as a value (%s): a port the system picks has another value than %s (32768 and up), and code that compares or computes with it (a privileged-port check) may take another path; running the correct code cannot tell which values a bug mistreats", at, s.port)
	}
	if at := c.codeReadsPort(); at != "" {
		return fmt.Sprintf("the code under test reads a listener's or connection's address (%s): a port the system picks has another value than %s (32768 and up), and code that compares or computes with it (a privileged-port check, a port range) may take another path; running the correct code cannot tell which values a bug mistreats", at, s.port)
	}
	if at := c.socketReads(); at != "" {
		return fmt.Sprintf("the code the tests run reaches a socket below net's Addr methods (%s): it may learn the listener's port by that route, which the rule does not follow, and a port the system picks has another value than %s (32768 and up), which code that compares or computes with it (a privileged-port check, the kernel's ephemeral range refused) may treat otherwise; running the correct code cannot tell which values a bug mistreats", at, s.port)
	}
	return ""
}

// testReadsPort returns where s's function, or a helper of the test's
// files it hands the listener to (go serve(ln)), reads ln's address other
// than as text for a dial, a listen or a message
// (ln.Addr().(*net.TCPAddr), net.SplitHostPort(ln.Addr().String()), a
// variable), or "". The code under test's own files are codeReadsPort's.
func (c *checker) testReadsPort(s *site, ln *types.Var) string {
	if ln == nil {
		return ""
	}
	c.indexFlow()
	if at := c.readsIn(ln, s.fd); at != "" {
		return at
	}
	for _, id := range c.usesOf[ln] {
		if id.Pos() < s.fd.Pos() || id.End() > s.fd.End() {
			continue
		}
		call, ok := c.parent[id].(*ast.CallExpr)
		if !ok || call.Fun == id {
			continue
		}
		fn := match.Callee(c.info, call)
		if fn == nil || fn.Pkg() != c.pass.Pkg {
			continue
		}
		fd := c.bodies[fn.Origin()]
		if fd == nil || fd == s.fd || !strings.HasSuffix(c.pass.Fset.File(fd.Pos()).Name(), "_test.go") {
			continue
		}
		for i, a := range call.Args {
			if a != id {
				continue
			}
			p := paramAt(fd, i)
			if p == nil {
				continue
			}
			if v, ok := c.info.Defs[p].(*types.Var); ok {
				if at := c.readsIn(v, fd); at != "" {
					return at
				}
			}
		}
	}
	return ""
}

// readsIn returns where fd reads the address of the listener held in v
// other than as text for a dial, a listen or a message, or "".
func (c *checker) readsIn(v *types.Var, fd *ast.FuncDecl) string {
	for _, id := range c.usesOf[v] {
		if id.Pos() < fd.Pos() || id.End() > fd.End() {
			continue
		}
		sel, ok := c.parent[id].(*ast.SelectorExpr)
		if !ok || sel.X != id || !addrMethods[sel.Sel.Name] {
			continue
		}
		call, ok := c.parent[sel].(*ast.CallExpr)
		if !ok || call.Fun != sel {
			continue
		}
		if !c.addrAsText(call) {
			return fmt.Sprintf("%s at %s", types.ExprString(c.outer(call)), c.where(call.Pos()))
		}
	}
	return ""
}

// outer returns the expression around call that reads it (a type
// assertion, a call taking it), for messages.
func (c *checker) outer(call ast.Expr) ast.Expr {
	var e ast.Expr = call
	for i := 0; i < 3; i++ {
		p, ok := c.parent[e].(ast.Expr)
		if !ok {
			break
		}
		e = p
	}
	return e
}

// addrAsText reports whether call, x.Addr() in the typed test, is used
// as text only: printed, or its String() given to a dial, a listen, a
// message, a string sum or a variable (followed), not to
// net.SplitHostPort, a strings, strconv or net/url function, a
// conversion or a comparison. (Uses the fix makes are followed by
// flowHazard, and text handed to the code under test by reachesCode.)
func (c *checker) addrAsText(call *ast.CallExpr) bool {
	if sel, ok := c.parent[call].(*ast.SelectorExpr); ok && sel.X == call {
		if sel.Sel.Name == "Network" {
			return true
		}
		str, ok := c.parent[sel].(*ast.CallExpr)
		if sel.Sel.Name != "String" || !ok || str.Fun != sel {
			return false
		}
		return c.textOnly(str, 0, map[types.Object]bool{})
	}
	p, ok := c.parent[call].(*ast.CallExpr)
	if !ok || p.Fun == call {
		return false
	}
	// The net.Addr itself: only printed.
	fn := match.Callee(c.info, p)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	if recvNamed(fn, "testing", "T", "B", "F", "TB", "common") {
		return true
	}
	if c.launders(p, fn) != "" {
		return false // fmt.Fprint to a writer other than the standard streams
	}
	if fn.Pkg().Path() == "fmt" && strings.HasPrefix(fn.Name(), "S") {
		return false
	}
	why, ok := c.neutralMessage(fn.Pkg().Path(), fn.Name())
	return ok && why == ""
}

// textOnly reports whether e, the address's text, reaches no code of the
// test that reads its port: net.SplitHostPort, a strings, strconv or
// net/url function, a conversion, a comparison, an index.
func (c *checker) textOnly(e ast.Expr, depth int, seen map[types.Object]bool) bool {
	if depth > maxFlowDepth {
		return false
	}
	for {
		switch p := c.parent[e].(type) {
		case *ast.ParenExpr:
			e = p
			continue
		case *ast.BinaryExpr:
			if p.Op != token.ADD {
				return false
			}
			e = p
			continue
		case *ast.CallExpr:
			if p.Fun == e {
				return false
			}
			if tv, ok := c.info.Types[p.Fun]; ok && tv.IsType() {
				return false // []byte(addr)
			}
			fn := match.Callee(c.info, p)
			if fn == nil || fn.Pkg() == nil {
				return true // a function value: reachesCode's
			}
			path := fn.Pkg().Path()
			if textOps[path] || path == "net/url" || path == "net" && fn.Name() == "SplitHostPort" || c.launders(p, fn) != "" {
				return false
			}
			if why, ok := c.neutralMessage(path, fn.Name()); ok && why != "" {
				return false // a message whose text reaches code (routes.go)
			}
			if path == "fmt" && strings.HasPrefix(fn.Name(), "Sprint") {
				e = p
				continue
			}
			return true
		case *ast.AssignStmt, *ast.ValueSpec:
			var v *types.Var
			if a, ok := p.(*ast.AssignStmt); ok {
				for i, r := range a.Rhs {
					if r == e && len(a.Lhs) == len(a.Rhs) {
						if id, ok := a.Lhs[i].(*ast.Ident); ok {
							v, _ = c.info.ObjectOf(id).(*types.Var)
						}
					}
				}
			} else {
				vs := p.(*ast.ValueSpec)
				for i, r := range vs.Values {
					if r == e && i < len(vs.Names) {
						v, _ = c.info.ObjectOf(vs.Names[i]).(*types.Var)
					}
				}
			}
			if v == nil || match.IsPackageLevel(v) {
				return true // a field, a map entry: reachesCode's
			}
			if seen[v] {
				return true
			}
			seen[v] = true
			for _, id := range c.usesOf[v] {
				if !c.textOnly(id, depth+1, seen) {
					return false
				}
			}
			return true
		case *ast.IndexExpr, *ast.SliceExpr, *ast.SwitchStmt, *ast.CaseClause:
			return false
		}
		return true
	}
}

// codeReadsPort returns where the code the tests run (every file of the
// package's directory but its tests, every build; the module's packages
// they import) reads an address back from a listener, a connection or an
// HTTP request other than to dial, listen or print it, or a file it
// cannot parse; or "". Read once per package.
func (c *checker) codeReadsPort() string {
	if c.portRead != nil {
		return *c.portRead
	}
	found := ""
	m := modsrc.Reach(c.pass.Fset, c.pass.AllFiles)
	for _, p := range m.Packages {
		for _, f := range p.Files {
			if found != "" || strings.HasSuffix(f.Path, "_test.go") {
				continue
			}
			if f.Syntax == nil {
				found = fmt.Sprintf("%s, a file that does not parse (%v), may read it", m.Rel(f.Path), f.Err)
				continue
			}
			found = readsAddr(m, f, c.messagesNeutral())
		}
	}
	c.portRead = &found
	return found
}

// readsAddr returns where f reads an address back as a value, or "".
// messages says whether a message naming the address is neutral
// (printedOrDialed).
func readsAddr(m *modsrc.Module, f *modsrc.File, messages bool) string {
	requests := requestParams(f)
	urls := parsedURLs(f)
	found := ""
	match.WithStack(f.Syntax, func(n ast.Node, stack []ast.Node) bool {
		if found != "" {
			return false
		}
		if what := hostTextRead(n, f, urls, stack, messages); what != "" {
			found = fmt.Sprintf("%s at %s", what, m.Where(n.Pos()))
			return false
		}
		parent := func(i int) ast.Node {
			if i <= len(stack) {
				return stack[len(stack)-i]
			}
			return nil
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			for _, a := range n.Args {
				if x, ok := a.(*ast.Ident); ok && requests[x.Name] && requestParamIn(x.Name, stack, f) {
					if what := requestHandedOn(n, f, m.Path); what != "" {
						found = fmt.Sprintf("%s at %s", what, m.Where(n.Pos()))
						return false
					}
				}
			}
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || len(n.Args) != 0 || !addrMethods[sel.Sel.Name] {
				return true
			}
			if sel.Sel.Name == "RemoteAddr" && accepted(sel.X, stack) {
				return true // the client's port, which the fix does not change
			}
			if !printedOrDialed(n, parent, messages) {
				found = fmt.Sprintf("%s at %s", types.ExprString(n), m.Where(n.Pos()))
			}
		case *ast.SelectorExpr:
			// A server's request: only the fields that never hold the
			// address the client dialed (red team batch 17, fwdproxy:
			// r.RequestURI holds a proxy's absolute-form target).
			if x, ok := n.X.(*ast.Ident); ok && requests[x.Name] && requestParamIn(x.Name, stack, f) {
				if what := requestRead(n, stack); what != "" {
					found = fmt.Sprintf("%s at %s", what, m.Where(n.Pos()))
					return false
				}
			}
			if x, ok := n.X.(*ast.Ident); ok && n.Sel.Name == "Host" && requests[x.Name] {
				// The Host header names the port the client dialed.
				if !printedOrDialed(n, parent, messages) {
					found = fmt.Sprintf("%s at %s, an HTTP request's host and port", types.ExprString(n), m.Where(n.Pos()))
				}
			}
			if x, ok := n.X.(*ast.Ident); ok && n.Sel.Name == "LocalAddrContextKey" && f.Imports[x.Name] == "net/http" {
				found = fmt.Sprintf("http.LocalAddrContextKey at %s", m.Where(n.Pos()))
			}
		}
		return true
	})
	return found
}

// printedOrDialed reports whether e (an address read: x.Addr(), r.Host)
// is only named to a dial, a listen or a message: an argument of such a
// call, directly or through String().
func printedOrDialed(e ast.Expr, parent func(int) ast.Node, messages bool) bool {
	i := 1
	if sel, ok := parent(1).(*ast.SelectorExpr); ok && sel.X == e {
		if sel.Sel.Name == "Network" {
			return true
		}
		str, ok := parent(2).(*ast.CallExpr)
		if sel.Sel.Name != "String" || !ok || str.Fun != sel {
			return false
		}
		e, i = str, 3
	}
	if b, ok := parent(i).(*ast.BinaryExpr); ok && (b.Op == token.EQL || b.Op == token.NEQ) {
		// Found among addresses (p == ln.Addr().String()): another
		// listener's text, whatever its port, and a constant holding the
		// port is valueElsewhere's.
		return true
	}
	call, ok := parent(i).(*ast.CallExpr)
	if !ok || call.Fun == e {
		return false
	}
	switch fun := call.Fun.(type) {
	case *ast.SelectorExpr:
		return dialSinks[fun.Sel.Name] || messages && messageSinks[fun.Sel.Name]
	case *ast.Ident:
		return messages && (fun.Name == "println" || fun.Name == "print")
	}
	return false
}

// requestParams returns the names f gives parameters of type
// *http.Request.
func requestParams(f *modsrc.File) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		var ft *ast.FuncType
		switch n := n.(type) {
		case *ast.FuncDecl:
			ft = n.Type
		case *ast.FuncLit:
			ft = n.Type
		default:
			return true
		}
		for _, fld := range ft.Params.List {
			star, ok := fld.Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			sel, ok := star.X.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Request" {
				continue
			}
			if x, ok := sel.X.(*ast.Ident); ok && f.Imports[x.Name] == "net/http" {
				for _, id := range fld.Names {
					names[id.Name] = true
				}
			}
		}
		return true
	})
	return names
}

// accepted reports whether x names a connection the enclosing function
// got from an Accept: its remote address is the client's, whose port the
// system picks with or without the fix.
func accepted(x ast.Expr, stack []ast.Node) bool {
	id, ok := x.(*ast.Ident)
	if !ok {
		return false
	}
	var body *ast.BlockStmt
	for i := len(stack) - 1; i >= 0 && body == nil; i-- {
		switch f := stack[i].(type) {
		case *ast.FuncDecl:
			body = f.Body
		case *ast.FuncLit:
			body = f.Body
		}
	}
	if body == nil {
		return false
	}
	from, others := false, false
	ast.Inspect(body, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok || len(a.Lhs) == 0 {
			return true
		}
		l, ok := a.Lhs[0].(*ast.Ident)
		if !ok || l.Name != id.Name {
			return true
		}
		if len(a.Rhs) == 1 {
			if call, ok := a.Rhs[0].(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Accept" || sel.Sel.Name == "AcceptTCP") {
					from = true
					return true
				}
			}
		}
		others = true
		return true
	})
	return from && !others
}
