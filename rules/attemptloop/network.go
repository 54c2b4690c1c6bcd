package attemptloop

import (
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// An attempt that sends to a server made from the code under test acts
// on it, though the call is the standard library's: an HTTP request to
// an httptest server over the package's handler is a login the guard
// counts, a write to a connection the package serves is a message it
// handles. served finds such a server where the test sets it up; sends
// tells the calls that reach it.

// served returns what in the test function enclosing l (and the test
// helpers it calls) makes a server, listener or connection from the code
// under test, or "": httptest.NewServer(h), http.Serve(l, h) or an
// http.Server{Handler: h} whose handler mentions the package's code; a
// gRPC Register...Server given the package's code; a listener or a
// connection handed to the package's code; or a call into the package
// when its own code listens or serves.
func (c *checker) served(l *loop) string {
	var fd *ast.FuncDecl
	for _, n := range l.stack {
		if d, ok := n.(*ast.FuncDecl); ok {
			fd = d
			break
		}
	}
	if fd == nil || fd.Body == nil {
		return ""
	}
	c.usesCode = c.codeUsed(fd.Body)
	decls := match.DeclsOf(c.pass)
	listens := c.ownListens()
	why := ""
	seen := map[*ast.FuncDecl]bool{fd: true}
	work := []*ast.FuncDecl{fd}
	for depth := 0; len(work) > 0 && depth <= maxActsDepth && why == ""; depth++ {
		next := []*ast.FuncDecl(nil)
		for _, d := range work {
			ast.Inspect(d.Body, func(n ast.Node) bool {
				if why != "" {
					return false
				}
				switch n := n.(type) {
				case *ast.CompositeLit:
					if match.IsNamed(c.info.TypeOf(n), "net/http", "Server") {
						for _, el := range n.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok && types.ExprString(kv.Key) == "Handler" && c.fromCode(kv.Value) {
								why = "http.Server at " + c.where(n.Pos())
							}
						}
					}
				case *ast.CallExpr:
					fn := match.Callee(c.info, n)
					if fn == nil || fn.Pkg() == nil {
						return true
					}
					switch {
					case match.IsPkgFunc(c.info, n, "net/http/httptest", "NewServer", "NewTLSServer", "NewUnstartedServer") && len(n.Args) == 1 && c.fromCode(n.Args[0]),
						match.IsPkgFunc(c.info, n, "net/http", "Serve", "ServeTLS") && len(n.Args) > 1 && c.fromCode(n.Args[1]),
						strings.HasPrefix(fn.Name(), "Register") && strings.HasSuffix(fn.Name(), "Server") && c.anyFromCode(n.Args):
						why = types.ExprString(n.Fun) + " at " + c.where(n.Pos())
					case fn.Pkg() == c.pass.Pkg:
						if fd := decls[fn]; fd != nil && c.inTest(fd) {
							if !seen[fd] && fd.Body != nil {
								seen[fd] = true
								next = append(next, fd)
							}
							return true
						}
						for _, a := range n.Args {
							if netType(c.info.TypeOf(a)) {
								why = types.ExprString(n.Fun) + ", handed " + types.ExprString(a) + ", at " + c.where(n.Pos())
							}
						}
						if why == "" && listens != "" {
							why = types.ExprString(n.Fun) + " at " + c.where(n.Pos()) + ", whose package serves (" + listens + ")"
						}
					}
				}
				return why == ""
			})
		}
		work = next
	}
	return why
}

// ownListens returns where the package's non-test code listens or
// serves, or "".
func (c *checker) ownListens() string {
	for _, f := range c.pass.AllFiles {
		if strings.HasSuffix(c.pass.Fset.Position(f.Pos()).Filename, "_test.go") {
			continue
		}
		why := ""
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || why != "" {
				return why == ""
			}
			if match.IsPkgFunc(c.info, call, "net", "Listen", "ListenPacket", "ListenTCP", "ListenUDP", "ListenUnix", "ListenUnixgram", "ListenIP", "FileListener") ||
				match.IsPkgFunc(c.info, call, "net/http", "ListenAndServe", "ListenAndServeTLS", "Serve", "ServeTLS") ||
				match.IsMethod(c.info, call, "net/http", "ListenAndServe", "ListenAndServeTLS", "Serve", "ServeTLS") {
				why = types.ExprString(call.Fun) + " at " + c.where(call.Pos())
			}
			return why == ""
		})
		if why != "" {
			return why
		}
	}
	return ""
}

// fromCode reports whether e mentions the package's non-test code: a
// function, type, variable or method declared there, or a value of one
// of its types.
func (c *checker) fromCode(e ast.Node) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		if id, ok := n.(*ast.Ident); ok {
			if obj := c.info.Uses[id]; obj != nil && obj.Pkg() == c.pass.Pkg && !c.testPos(obj) {
				found = true
			}
		}
		if e, ok := n.(ast.Expr); ok {
			if named := namedOf(c.info.TypeOf(e)); named != nil && named.Obj().Pkg() == c.pass.Pkg && !c.testPos(named.Obj()) {
				found = true
			}
		}
		return !found
	})
	return found
}

// codeUsed names the first function or type of the package's non-test
// code that body uses, or "".
func (c *checker) codeUsed(body ast.Node) string {
	name := ""
	ast.Inspect(body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && name == "" {
			switch obj := c.info.Uses[id].(type) {
			case *types.Func, *types.TypeName:
				if obj.Pkg() == c.pass.Pkg && !c.testPos(obj) {
					name = obj.Name() + " (" + c.where(id.Pos()) + ")"
				}
			}
		}
		return name == ""
	})
	return name
}

func (c *checker) anyFromCode(es []ast.Expr) bool {
	for _, e := range es {
		if c.fromCode(e) {
			return true
		}
	}
	return false
}

func (c *checker) testPos(obj types.Object) bool {
	return strings.HasSuffix(c.pass.Fset.Position(obj.Pos()).Filename, "_test.go")
}

func (c *checker) inTest(fd *ast.FuncDecl) bool {
	return strings.HasSuffix(c.pass.Fset.Position(fd.Pos()).Filename, "_test.go")
}

// namedOf is t's named type, through a pointer, or nil.
func namedOf(t types.Type) *types.Named {
	if t == nil {
		return nil
	}
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

// netType reports whether t is a listener or a connection of package net
// (net.Listener, net.Conn, *net.TCPConn...).
func netType(t types.Type) bool {
	n := namedOf(t)
	return n != nil && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "net" &&
		(strings.HasSuffix(n.Obj().Name(), "Conn") || strings.HasSuffix(n.Obj().Name(), "Listener"))
}

// sends returns what call sends to a server or a handler, or "": an
// HTTP request (http.Get, Client.Do, a RoundTrip, a ServeHTTP), a dial, a
// write to a connection (Write, fmt.Fprintf or io.WriteString to one), an
// RPC, or a gRPC call (a method of the grpc package's ClientConn, or of a
// ...Client type of a package that imports it).
func (c *checker) sends(call *ast.CallExpr, fn *types.Func) string {
	info := c.info
	name := types.ExprString(call.Fun) + " at " + c.where(call.Pos())
	switch {
	case match.IsPkgFunc(info, call, "net/http", "Get", "Head", "Post", "PostForm"),
		match.IsMethod(info, call, "net/http", "Do", "Get", "Head", "Post", "PostForm", "RoundTrip", "ServeHTTP"),
		match.IsPkgFunc(info, call, "net", "Dial", "DialTimeout", "DialTCP", "DialUDP", "DialUnix", "DialIP"),
		match.IsMethod(info, call, "net", "Dial", "DialContext", "Write", "WriteTo", "WriteToUDP", "WriteToUDPAddrPort", "WriteToUnix", "WriteMsgUDP", "WriteMsgUnix", "ReadFrom"),
		match.IsMethod(info, call, "net/rpc", "Call", "Go"):
		return name
	case match.IsPkgFunc(info, call, "fmt", "Fprint", "Fprintf", "Fprintln"),
		match.IsPkgFunc(info, call, "io", "WriteString", "Copy", "CopyN", "CopyBuffer"):
		if len(call.Args) > 0 && netType(info.TypeOf(call.Args[0])) {
			return name
		}
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || fn.Pkg() == nil {
		return ""
	}
	if fn.Pkg().Path() == "google.golang.org/grpc" && (fn.Name() == "Invoke" || fn.Name() == "NewStream") {
		return name
	}
	if recv := namedOf(sig.Recv().Type()); recv != nil && strings.HasSuffix(recv.Obj().Name(), "Client") {
		for _, imp := range fn.Pkg().Imports() {
			if imp.Path() == "google.golang.org/grpc" {
				return name
			}
		}
	}
	return ""
}

// sendsServed returns why call acts on the code under test by sending to
// the server c.serving names, or "".
func (c *checker) sendsServed(call *ast.CallExpr, fn *types.Func) string {
	if c.serving != "" {
		if s := c.sends(call, fn); s != "" {
			return "sends to a server made from the code under test (" + s + ", to " + c.serving + ")"
		}
	}
	// A handler called directly (h.ServeHTTP(rec, req) through
	// http.Handler) is the code under test whenever the test uses it.
	if c.usesCode != "" && match.IsMethod(c.info, call, "net/http", "ServeHTTP", "RoundTrip") {
		return "calls a handler made from the code under test (" + types.ExprString(call.Fun) + " at " + c.where(call.Pos()) + ", in a test that uses " + c.usesCode + ")"
	}
	return ""
}
