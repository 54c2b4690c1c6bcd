package freeport

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// With port 0 the address changes from run to run. Where it only reaches
// a dial, a listen or an HTTP client, that is the point; where code
// computes with it (a rendezvous hash that picks the owner of a key, a
// sort, a map key, a comparison), correct code gives another answer on
// another run. flowHazard follows the value from a use the fix would
// point at the listener: through string sums, local variables, slice and
// map literals, struct fields, range statements and the parameters of
// the package's functions, and allows only sinks that take it as an
// address.

// maxFlowDepth bounds how many variables, fields and parameters the
// value is followed through.
const maxFlowDepth = 8

// flowHazard says where the value of u reaches code that may compute with
// it ("crc32.ChecksumIEEE at shard.go:31"), or "".
func (c *checker) flowHazard(u use) string {
	c.indexFlow()
	return c.follow(u.expr, 0, map[types.Object]bool{})
}

// indexFlow records, once per package, each node's parent and each
// object's uses.
func (c *checker) indexFlow() {
	if c.parent != nil {
		return
	}
	c.parent = map[ast.Node]ast.Node{}
	c.usesOf = map[types.Object][]*ast.Ident{}
	c.bodies = map[*types.Func]*ast.FuncDecl{}
	seen := map[*ast.File]bool{}
	for _, f := range append(append([]*ast.File(nil), c.pass.Files...), c.pass.AllFiles...) {
		if seen[f] {
			continue
		}
		seen[f] = true
		match.WithStack(f, func(n ast.Node, stack []ast.Node) bool {
			if len(stack) > 0 {
				c.parent[n] = stack[len(stack)-1]
			}
			switch n := n.(type) {
			case *ast.Ident:
				if obj := c.info.Uses[n]; obj != nil {
					c.usesOf[obj] = append(c.usesOf[obj], n)
				}
			case *ast.FuncDecl:
				if fn, ok := c.info.Defs[n.Name].(*types.Func); ok && n.Body != nil {
					c.bodies[fn] = n
				}
			}
			return true
		})
	}
}

// follow says where the value of e reaches code that may compute with it,
// or "".
func (c *checker) follow(e ast.Expr, depth int, seen map[types.Object]bool) string {
	if depth > maxFlowDepth {
		return fmt.Sprintf("%s at %s, further than the rule follows", types.ExprString(e), c.where(e.Pos()))
	}
	at := func(n ast.Node, what string) string {
		return fmt.Sprintf("%s at %s", what, c.where(n.Pos()))
	}
	var cur ast.Node = e
	for {
		p := c.parent[cur]
		if pe, ok := p.(*ast.ParenExpr); ok {
			cur = pe
			continue
		}
		if b, ok := p.(*ast.BinaryExpr); ok && b.Op == token.ADD && isString(c.info.TypeOf(b)) {
			// "http://" + addr + "/": the sum carries it where it
			// names where to connect. After anything but a scheme it
			// is text in a larger string (reg.URL + "?addr=" + addr, a
			// query, a body), which the code may take apart as it
			// likes (red team batch 15, queryregister).
			if cur == b.Y && !schemeBefore(c.info, b.X) {
				return at(b, "text after "+types.ExprString(b.X)+", in "+types.ExprString(b))
			}
			cur = b
			continue
		}
		break
	}
	switch p := c.parent[cur].(type) {
	case *ast.ExprStmt:
		return ""
	case *ast.CallExpr:
		if cur == p.Fun {
			return at(p, types.ExprString(p.Fun))
		}
		return c.intoCall(p, cur, depth, seen)
	case *ast.AssignStmt:
		if p.Tok != token.ASSIGN && p.Tok != token.DEFINE || len(p.Lhs) != len(p.Rhs) {
			return at(p, "an assignment")
		}
		for i, r := range p.Rhs {
			if r != cur {
				continue
			}
			return c.into(p.Lhs[i], depth, seen)
		}
		return "" // on the left: written, not read
	case *ast.ValueSpec:
		for i, v := range p.Values {
			if v == cur && i < len(p.Names) {
				return c.into(p.Names[i], depth, seen)
			}
		}
		return at(p, "a declaration")
	case *ast.CompositeLit:
		if isStruct(c.info.TypeOf(p)) {
			return at(p, "a struct literal")
		}
		return c.follow(p, depth+1, seen) // a slice or array literal carries it
	case *ast.KeyValueExpr:
		lit, _ := c.parent[p].(*ast.CompositeLit)
		if cur == p.Key || lit == nil {
			return at(p, "a map key")
		}
		if isStruct(c.info.TypeOf(lit)) {
			if id, ok := p.Key.(*ast.Ident); ok {
				if f, ok := c.info.Uses[id].(*types.Var); ok && f.IsField() {
					return c.intoField(f, p, depth, seen)
				}
			}
			return at(p, "a struct literal")
		}
		return c.follow(lit, depth+1, seen)
	case *ast.RangeStmt:
		if cur != p.X {
			return at(p, "a range statement")
		}
		if p.Value == nil {
			return ""
		}
		return c.into(p.Value, depth, seen)
	case *ast.IndexExpr:
		if cur == p.X {
			return c.follow(p, depth+1, seen)
		}
		return at(p, "an index or map key "+types.ExprString(p))
	case *ast.SelectorExpr:
		return at(p, types.ExprString(p))
	case *ast.UnaryExpr:
		return at(p, "&"+types.ExprString(p.X))
	case *ast.ReturnStmt:
		return at(p, "a return")
	case *ast.BinaryExpr:
		// p == n.ln.Addr().String(): the list holds the listener's own
		// address, and the comparison finds it whatever the port.
		other := p.X
		if cur == p.X {
			other = p.Y
		}
		if (p.Op == token.EQL || p.Op == token.NEQ) && isListenerAddr(other) {
			return ""
		}
		return at(p, "the expression "+types.ExprString(p))
	case *ast.CaseClause, *ast.SwitchStmt:
		return at(cur, "a switch")
	case nil:
		return at(cur, types.ExprString(e))
	default:
		return at(p, types.ExprString(e))
	}
}

// into follows the value into what l, the left side of an assignment or
// declaration, names: a local variable, a field; anything else (a map
// entry, a package-level variable) is where it stops being followed.
func (c *checker) into(l ast.Expr, depth int, seen map[types.Object]bool) string {
	if id, ok := ast.Unparen(l).(*ast.Ident); ok {
		if id.Name == "_" {
			return ""
		}
		obj := c.info.ObjectOf(id)
		if v, ok := obj.(*types.Var); ok {
			if match.IsPackageLevel(v) {
				return fmt.Sprintf("the package-level %s at %s", v.Name(), c.where(l.Pos()))
			}
			return c.followObj(v, depth, seen)
		}
	}
	if sel, ok := ast.Unparen(l).(*ast.SelectorExpr); ok {
		if s := c.info.Selections[sel]; s != nil && s.Kind() == types.FieldVal {
			if f, ok := s.Obj().(*types.Var); ok {
				return c.intoField(f, l, depth, seen)
			}
			return c.followObj(s.Obj(), depth, seen)
		}
	}
	return fmt.Sprintf("%s at %s", types.ExprString(l), c.where(l.Pos()))
}

// addressFields are the standard library's fields, by package and name,
// that name where to connect: a URL's Host, a request's Host (the Host
// header, whose reads by the code codeReadsPort finds), a server's Addr.
var addressFields = map[string]bool{"net/url.Host": true, "net/http.Host": true, "net/http.Addr": true}

// intoField follows the value stored in the field f (at n). A field of a
// standard-library type other than addressFields is read by code the
// rule does not follow: a request's Header, Body or Form, a command's
// Args or Env carry it to a peer or a child that reads it as text (red
// team batch 16: the address is data the code under test receives).
func (c *checker) intoField(f *types.Var, n ast.Node, depth int, seen map[types.Object]bool) string {
	if f.Pkg() != nil && f.Pkg() != c.pass.Pkg && match.IsStd(f.Pkg().Path()) && !addressFields[f.Pkg().Path()+"."+f.Name()] {
		return fmt.Sprintf("the field %s of a %s type at %s, data the standard library hands on (a header, a body, a child's arguments), which the code under test may read as text", f.Name(), f.Pkg().Path(), c.where(n.Pos()))
	}
	return c.followObj(f, depth, seen)
}

// followObj follows every read of v, a local variable, parameter or
// field.
func (c *checker) followObj(v types.Object, depth int, seen map[types.Object]bool) string {
	if seen[v] {
		return ""
	}
	seen[v] = true
	c.storeIn(v)
	for _, id := range c.usesOf[v] {
		var n ast.Expr = id
		if sel, ok := c.parent[id].(*ast.SelectorExpr); ok && sel.Sel == id {
			n = sel // x.field
		}
		if kv, ok := c.parent[id].(*ast.KeyValueExpr); ok && kv.Key == id {
			continue // a field's key in a literal: a write
		}
		if a, ok := c.parent[n].(*ast.AssignStmt); ok && (a.Tok == token.ASSIGN || a.Tok == token.DEFINE) && isLhs(a, n) {
			continue // written
		}
		if why := c.follow(n, depth+1, seen); why != "" {
			return why
		}
	}
	return ""
}

func isLhs(a *ast.AssignStmt, n ast.Node) bool {
	for _, l := range a.Lhs {
		if l == n {
			return true
		}
	}
	return false
}

// intoCall follows the value given to call as arg.
func (c *checker) intoCall(call *ast.CallExpr, arg ast.Node, depth int, seen map[types.Object]bool) string {
	at := fmt.Sprintf("%s at %s", types.ExprString(call.Fun), c.where(call.Pos()))
	if tv, ok := c.info.Types[call.Fun]; ok && tv.IsType() {
		if isString(tv.Type) {
			return c.follow(call, depth+1, seen)
		}
		return "the conversion " + at
	}
	if tv, ok := c.info.Types[call.Fun]; ok && tv.IsBuiltin() {
		switch types.ExprString(call.Fun) {
		case "append":
			return c.follow(call, depth+1, seen)
		case "len", "cap", "print", "println":
			return ""
		}
		return at
	}
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil {
		return at
	}
	path := fn.Pkg().Path()
	if why := c.launders(call, fn); why != "" {
		return why
	}
	if recvNamed(fn, "testing", "T", "B", "F", "TB", "common") {
		return "" // t.Log, t.Fatalf: a message
	}
	if k, ok := sinkArg(path+"."+fn.Name(), fn.Signature().Recv() != nil); ok {
		// Only the argument a client dials (the URL, the address) takes
		// the address as an address. Any other (http.PostForm's form
		// values, a request's body) is data the client sends to the
		// code under test, which reads it back as text (FormValue) and
		// may take it apart (red team batch 16, formregister: a
		// strings.Replace of ":80" mangles 127.0.0.1:8093, never a port
		// the system picks).
		if argIndex(call, arg) != k {
			return at + ", data the request carries to the code under test (not the address it connects to), which may read it as text"
		}
		// A dial is neutral only through a client with no proxy and no
		// dial hook of the code (red team batch 17, fwdproxy: Go writes
		// the address into the request line it sends to the proxy).
		if why := c.routes().client; why != "" {
			return at + ", a request whose address reaches code under test by " + why
		}
		return ""
	}
	switch {
	case path == "fmt" && textBuilders[fn.Name()]:
		// "http://%s/": the text carries it where it names the host;
		// "upstream a %s\n", "?addr=%s" put it in a larger text (a
		// config file, a query) that the code may take apart (red team
		// batch 15, adminprobe: fmt.Appendf then os.WriteFile).
		if before, ok := c.textBefore(call, fn.Name(), arg); !ok || before != "" && !strings.HasSuffix(before, "//") && !strings.HasSuffix(before, "@") {
			return at + ", text after " + strconv.Quote(before)
		}
		return c.follow(call, depth+1, seen)
	case path == "fmt" || path == "log" || path == "log/slog":
		// Printed: neutral only where no code reads the text (red team
		// batch 17, logscrub: a logger on the package's own writer).
		why, ok := c.neutralMessage(path, fn.Name())
		if !ok {
			return at + ", which may read it as text"
		}
		if why != "" {
			return at + ", " + messageRoute(why)
		}
		return ""
	}
	fd := c.bodies[fn.Origin()]
	if fd == nil || fd.Body == nil {
		return at + ", which the rule cannot follow"
	}
	// The parameter the argument lands in.
	i := argIndex(call, arg)
	var params []*ast.Ident
	for _, f := range fd.Type.Params.List {
		if len(f.Names) == 0 {
			params = append(params, nil)
		}
		params = append(params, f.Names...)
	}
	if i < 0 || len(params) == 0 {
		return at
	}
	if i >= len(params) {
		i = len(params) - 1 // variadic
	}
	c.enter(fn, i)
	if params[i] == nil || params[i].Name == "_" {
		return ""
	}
	return c.followObj(c.info.Defs[params[i]], depth+1, seen)
}

func recvNamed(fn *types.Func, path string, names ...string) bool {
	r := fn.Signature().Recv()
	return r != nil && match.IsNamed(r.Type(), path, names...)
}

// sinks are functions that take the address as an address: they dial,
// listen or send a request to it, and compute nothing else with it. The
// value is the index of the argument that names where to connect; their
// other arguments (a body, form values) are data sent to the peer.
var sinks = map[string]int{
	"net.Dial": 1, "net.DialTimeout": 1, "net.Listen": 1, "net.ListenPacket": 1,
	"net.ResolveTCPAddr": 1, "net.ResolveUDPAddr": 1,
	"crypto/tls.Dial": 1, "crypto/tls.DialWithDialer": 2, "crypto/tls.Listen": 1,
	"net/http.Get": 0, "net/http.Head": 0, "net/http.Post": 0, "net/http.PostForm": 0,
	"net/http.NewRequest": 1, "net/http.NewRequestWithContext": 2,
	"net/http/httptest.NewRequest": 1,
	"google.golang.org/grpc.Dial":  0, "google.golang.org/grpc.DialContext": 1, "google.golang.org/grpc.NewClient": 0,
}

// methodSinks are such methods, by package and name: a dialer's, a
// listen config's, an HTTP client's.
var methodSinks = map[string]int{
	"net.Dial": 1, "net.DialContext": 2, "net.Listen": 2, "net.ListenPacket": 2,
	"net/http.Get": 0, "net/http.Head": 0, "net/http.Post": 0, "net/http.PostForm": 0,
}

// sinkArg returns the index of the argument the sink name (a package
// path and a function's or, when method, a method's name) connects to.
func sinkArg(name string, method bool) (int, bool) {
	if method {
		k, ok := methodSinks[name]
		return k, ok
	}
	k, ok := sinks[name]
	return k, ok
}

// argIndex returns the index of arg among call's arguments, or -1.
func argIndex(call *ast.CallExpr, arg ast.Node) int {
	for k, a := range call.Args {
		if a == arg {
			return k
		}
	}
	return -1
}

// isListenerAddr reports whether e is x.Addr().String() (or LocalAddr):
// the address a listener actually has.
func isListenerAddr(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "String" {
		return false
	}
	inner, ok := ast.Unparen(sel.X).(*ast.CallExpr)
	if !ok || len(inner.Args) != 0 {
		return false
	}
	isel, ok := inner.Fun.(*ast.SelectorExpr)
	return ok && (isel.Sel.Name == "Addr" || isel.Sel.Name == "LocalAddr")
}

// peers says why s's listener must keep its fixed port because its
// address, and another listener's, reach code under test together (two
// nodes of a ring joining one registry, a slice of peer addresses, two
// listeners handed to one constructor): code that hashes or orders the
// addresses (a consistent-hash ring that picks a key's owner, a sorted
// member list, the lowest address as leader) gives another answer with
// ports the system picks, from run to run, and the bug the test's fixed
// ports reach (on the owner's path) may then go unseen. Or "".
func (c *checker) peers(s *site, ln *types.Var) string {
	c.indexFlow()
	mine := c.reachesCode(s.call, ln, s.fd)
	if mine == "" {
		return ""
	}
	var other, otherAt string
	ast.Inspect(s.fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || call == s.call || other != "" || !c.isListen(call) || c.samePort(s, call) {
			return other == ""
		}
		if at := c.reachesCode(call, c.listenerVar(call), s.fd); at != "" {
			other, otherAt = types.ExprString(call), at
		}
		return other == ""
	})
	if other == "" {
		return ""
	}
	return fmt.Sprintf("the listener reaches %s, and so does the one %s gives (%s): code under test that hashes, orders or compares its peers' addresses (a consistent-hash ring picking a key's owner, a sorted member list) would pick differently with ports the system picks, from run to run", mine, other, otherAt)
}

// samePort reports whether call is a listen site on s's port, in s's
// function (a restart): the fix points it at s's listener's address, so
// the two keep one address, whose order does not change.
func (c *checker) samePort(s *site, call *ast.CallExpr) bool {
	for _, o := range c.sites {
		if o.call == call && o.fd == s.fd && o.port == s.port {
			return true
		}
	}
	return false
}

// isListen reports whether call opens a listener: net.Listen,
// ListenPacket, tls.Listen, httptest.NewServer and NewTLSServer.
func (c *checker) isListen(call *ast.CallExpr) bool {
	return match.IsPkgFunc(c.info, call, "net", "Listen", "ListenPacket", "ListenTCP", "ListenUDP", "ListenUnix") ||
		match.IsPkgFunc(c.info, call, "crypto/tls", "Listen") ||
		match.IsPkgFunc(c.info, call, "net/http/httptest", "NewServer", "NewTLSServer", "NewUnstartedServer")
}

// listenerVar returns the local variable call's listener is assigned to
// (ln, err := net.Listen(...); srv := httptest.NewServer(h)), or nil.
func (c *checker) listenerVar(call *ast.CallExpr) *types.Var {
	switch p := c.parent[call].(type) {
	case *ast.AssignStmt:
		if len(p.Rhs) == 1 && p.Rhs[0] == call && len(p.Lhs) > 0 {
			if id, ok := p.Lhs[0].(*ast.Ident); ok {
				v, _ := c.info.ObjectOf(id).(*types.Var)
				return v
			}
		}
	case *ast.ValueSpec:
		if len(p.Values) == 1 && p.Values[0] == call && len(p.Names) > 0 {
			v, _ := c.info.ObjectOf(p.Names[0]).(*types.Var)
			return v
		}
	}
	return nil
}

// reachesCode says where the listener call opens (held in ln, when not
// nil), or a value computed from it (ln.Addr().String(), a local
// variable given it), reaches code under test ("NewNode at
// ring_test.go:30"): an argument of a call of a function outside the
// standard library, or of a function value, or an element of a literal.
// A method of the listener itself (Close, Accept) and the standard
// library's servers (http.Serve, srv.Serve) do not compute with the
// address.
func (c *checker) reachesCode(call *ast.CallExpr, ln *types.Var, fd *ast.FuncDecl) string {
	seen := map[types.Object]bool{}
	var fromExpr func(e ast.Expr, depth int) string
	var fromVar func(v *types.Var, depth int) string
	fromVar = func(v *types.Var, depth int) string {
		if v == nil || v.Name() == "_" || seen[v] || depth > maxFlowDepth {
			return ""
		}
		seen[v] = true
		for _, id := range c.usesOf[v] {
			if id.Pos() < fd.Pos() || id.End() > fd.End() {
				continue
			}
			if at := fromExpr(id, depth); at != "" {
				return at
			}
		}
		return ""
	}
	fromExpr = func(e ast.Expr, depth int) string {
		for {
			p := c.parent[e]
			switch p := p.(type) {
			case *ast.ParenExpr, *ast.StarExpr:
				e = p.(ast.Expr)
				continue
			case *ast.SelectorExpr:
				if p.X != e {
					return ""
				}
				if pc, ok := c.parent[p].(*ast.CallExpr); ok && pc.Fun == p {
					// A method of the value: Addr and String give the
					// address on; another (Close, Accept) ends here.
					if p.Sel.Name == "Addr" || p.Sel.Name == "LocalAddr" || p.Sel.Name == "String" {
						e = pc
						continue
					}
					return ""
				}
				if p.Sel.Name == "URL" || p.Sel.Name == "Listener" {
					e = p // httptest.Server's URL or Listener
					continue
				}
				return ""
			case *ast.BinaryExpr:
				if p.Op == token.ADD {
					e = p
					continue
				}
				return ""
			case *ast.CompositeLit:
				return "a literal at " + c.where(p.Pos())
			case *ast.KeyValueExpr:
				if p.Value == e {
					if lit, ok := c.parent[p].(*ast.CompositeLit); ok {
						return "a literal at " + c.where(lit.Pos())
					}
				}
				return ""
			case *ast.CallExpr:
				if p.Fun == e {
					return ""
				}
				fn := match.Callee(c.info, p)
				if fn != nil && fn.Pkg() != nil && fn.Pkg() != c.pass.Pkg && match.IsStd(fn.Pkg().Path()) {
					if match.IsPkgFunc(c.info, p, "fmt", "Sprint", "Sprintf") || match.IsPkgFunc(c.info, p, "net", "JoinHostPort") {
						e = p
						continue
					}
					return "" // the standard library: a server, a dial, a message
				}
				name := types.ExprString(p.Fun)
				if fn != nil {
					name = fn.Name()
				}
				return name + " at " + c.where(p.Pos())
			case *ast.AssignStmt:
				for i, r := range p.Rhs {
					if r == e && len(p.Lhs) == len(p.Rhs) {
						if id, ok := p.Lhs[i].(*ast.Ident); ok {
							if v, ok := c.info.ObjectOf(id).(*types.Var); ok && !match.IsPackageLevel(v) {
								return fromVar(v, depth+1)
							}
						}
						return "an assignment at " + c.where(p.Pos())
					}
				}
				return ""
			case *ast.ValueSpec:
				for i, r := range p.Values {
					if r == e && i < len(p.Names) {
						v, _ := c.info.ObjectOf(p.Names[i]).(*types.Var)
						return fromVar(v, depth+1)
					}
				}
				return ""
			case *ast.ReturnStmt:
				return "a return at " + c.where(p.Pos())
			case *ast.SendStmt:
				if p.Value == e {
					return "a send at " + c.where(p.Pos())
				}
				return ""
			}
			return ""
		}
	}
	if ln != nil {
		return fromVar(ln, 0)
	}
	return fromExpr(call, 0)
}

// schemeBefore reports whether e, the text before an address in a sum,
// is a constant that ends in a scheme's "//" or a user's "@": the
// address names the host.
func schemeBefore(info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return false
	}
	s := constant.StringVal(tv.Value)
	return strings.HasSuffix(s, "//") || strings.HasSuffix(s, "@")
}

// textBuilders are the fmt functions that return the text they build.
var textBuilders = map[string]bool{"Sprintf": true, "Sprint": true, "Sprintln": true, "Appendf": true, "Append": true, "Appendln": true}

// textBefore returns the constant text a fmt text builder puts before
// arg: the format up to arg's verb (Sprintf, Appendf), nothing when arg
// is the first operand (Sprint, Append); ok is false when the rule
// cannot tell (a format that is not a constant, an explicit argument
// index, arg after another operand of Sprint).
func (c *checker) textBefore(call *ast.CallExpr, name string, arg ast.Node) (string, bool) {
	args := call.Args
	if strings.HasPrefix(name, "Append") {
		if len(args) == 0 {
			return "", false
		}
		args = args[1:] // the buffer
	}
	if !strings.HasSuffix(name, "f") {
		return "", len(args) > 0 && args[0] == arg
	}
	if len(args) == 0 {
		return "", false
	}
	format, ok := match.ConstString(c.info, args[0])
	if !ok || args[0] == arg {
		return "", false
	}
	k := -1
	for i, a := range args[1:] {
		if a == arg {
			k = i
		}
	}
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			i++
			continue
		}
		if strings.Contains(format[i:min(i+8, len(format))], "[") {
			return "", false
		}
		if n == k {
			return format[:i], true
		}
		n++
	}
	return "", false
}
