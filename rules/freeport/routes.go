package freeport

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
)

// The address reaches code under test as text by routes no list of
// reads can name in advance (red team batch 17): a log line whose writer
// is the package's own io.Writer (a scrubber that masks every four-digit
// number masks the fixed port 7461, never a port the system picks), the
// request line Go's transport writes to a proxy (the proxy reads
// r.RequestURI and cuts ":80" out of 127.0.0.1:8071). Seventeen batches
// of enumerated "reads of the port as text" were each bypassed by the
// next route, so here the rule lists the routes it knows are neutral and
// counts every other one as a read of the port as text:
//
//   - a message is neutral only where its text goes where no code reads
//     it: os.Stdout and os.Stderr (fmt.Print*), the testing log, and the
//     log and slog defaults, while no code the tests run (every build,
//     the tests, the module's packages) sends log output anywhere else
//     (log.New, log.SetOutput, slog.New on a handler of the code) nor
//     reassigns os.Stdout or os.Stderr (routes.log, routes.std);
//   - an error's text (fmt.Errorf) only while the code under test never
//     reads an error's text but to print it (routes.errText);
//   - a request goes to the address only through a client with no proxy
//     and no dial hook of the code (routes.client): Go's transport writes
//     the address into the request line it sends to a proxy (absolute
//     form, or CONNECT host:port), and hands it to a DialContext, a Dial,
//     a Dialer's Control as text;
//   - on the server side (a *http.Request parameter), only fields that
//     never carry the address the client dialed are read (requestRead):
//     the method, the path and query, the body and form, cookies, a
//     header by a name other than addressHeaders. RequestURI, the whole
//     URL, the whole Header, r.Write and httputil.DumpRequest hold it.

// routes are the module-wide routes by which a message, an error's text
// or a request carries the address to code under test; each is "" when
// the code the tests run has none, or names the first with its place.
type routes struct {
	log     string // log output sent to code: log.New(NewScrubber(&buf), "", 0) at ...
	std     string // os.Stdout or os.Stderr reassigned
	errText string // an error's text read other than to print it
	client  string // a client with a proxy or a dial hook

	// A method of the module's named like a message (Printf, Log): a
	// logger of its own, whose output the code may read.
	ownLogger string
}

// routes reads, once per package, every file of the code the tests run
// (the package's directory, every build, its tests; the module's
// packages they import) for the routes above.
func (c *checker) routes() *routes {
	if c.rts != nil {
		return c.rts
	}
	r := &routes{}
	c.rts = r
	m := modsrc.Reach(c.pass.Fset, c.pass.AllFiles)
	at := func(n ast.Node, what string) string {
		return fmt.Sprintf("%s at %s, %s", types.ExprString(n.(ast.Expr)), m.Where(n.Pos()), what)
	}
	for _, p := range m.Packages {
		for _, f := range p.Files {
			if f.Syntax == nil {
				broken := fmt.Sprintf("%s, a file that does not parse (%v)", m.Rel(f.Path), f.Err)
				for _, s := range []*string{&r.log, &r.std, &r.errText, &r.client} {
					if *s == "" {
						*s = broken
					}
				}
				continue
			}
			test := strings.HasSuffix(f.Path, "_test.go")
			for _, d := range f.Syntax.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && messageSinks[fd.Name.Name] && r.ownLogger == "" {
					r.ownLogger = fmt.Sprintf("the method %s at %s, a logger of the code's own", fd.Name.Name, m.Where(fd.Pos()))
				}
			}
			parents := map[ast.Node]ast.Node{}
			ast.Inspect(f.Syntax, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					for _, a := range n.Args {
						parents[a] = n
					}
					if r.log == "" {
						if what := logRedirect(n, f); what != "" {
							r.log = at(n, what)
						}
					}
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && r.client == "" && (sel.Sel.Name == "WithContextDialer" || sel.Sel.Name == "WithDialer") {
						r.client = at(n, "a dial hook of a client (grpc's), which is handed the address as text")
					}
					if r.errText == "" && !test && errorTextRead(n, parents[n], f) {
						r.errText = at(n, "the text of an error, read other than to print it")
					}
				case *ast.KeyValueExpr:
					if r.client == "" && clientHook(n.Key) && !isNil(n.Value) {
						r.client = at(n.Value, fmt.Sprintf("a %s of a client, which Go's transport hands the address to as text (a proxy's request line, a dial hook's argument)", types.ExprString(n.Key)))
					}
				case *ast.AssignStmt:
					for i, l := range n.Lhs {
						if sel, ok := l.(*ast.SelectorExpr); ok {
							if r.client == "" && clientHook(sel.Sel) && (i >= len(n.Rhs) || !isNil(n.Rhs[i])) {
								r.client = at(l, "a client's hook, which Go's transport hands the address to as text (a proxy's request line, a dial hook's argument)")
							}
							if r.std == "" && stdStreamSyntax(l, f) {
								r.std = at(l, "os.Stdout or os.Stderr reassigned, so that printed text goes to a writer of the code")
							}
						}
					}
				}
				return true
			})
		}
	}
	if r.log == "" {
		r.log = r.std // the default log writes to os.Stderr
	}
	return r
}

// clientHooks are the fields of http.Transport and net.Dialer (and
// grpc's WithContextDialer and WithDialer options, by call) through which the code sees where a client connects as text:
// a proxy (Go writes the absolute URL, or CONNECT host:port, into the
// request line it sends there) and the dial hooks (given the address).
var clientHooks = map[string]bool{
	"Proxy": true, "OnProxyConnectResponse": true, "GetProxyConnectHeader": true,
	"DialContext": true, "Dial": true, "DialTLS": true, "DialTLSContext": true,
	"Control": true, "ControlContext": true,
}

// clientHook reports whether key, a field's name, is one of clientHooks.
func clientHook(key ast.Expr) bool {
	id, ok := key.(*ast.Ident)
	return ok && clientHooks[id.Name]
}

func isNil(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && id.Name == "nil"
}

// logRedirect returns what call, syntax of f, does to send log output to
// a writer or handler other than os.Stdout, os.Stderr or io.Discard
// ("a logger on a writer other than ..."), or "". A method named
// SetOutput counts whatever its receiver (a *log.Logger, by name).
func logRedirect(call *ast.CallExpr, f *modsrc.File) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	const onWriter = "a logger whose output goes to a writer of the code (not os.Stdout, os.Stderr or io.Discard), which may read the lines as text"
	path := ""
	if x, ok := sel.X.(*ast.Ident); ok {
		path = f.Imports[x.Name]
	}
	first := func() ast.Expr {
		if len(call.Args) == 0 {
			return nil
		}
		return call.Args[0]
	}
	switch {
	case path == "log" && (sel.Sel.Name == "New" || sel.Sel.Name == "SetOutput"),
		path == "log/slog" && (sel.Sel.Name == "NewTextHandler" || sel.Sel.Name == "NewJSONHandler"),
		path == "" && sel.Sel.Name == "SetOutput":
		if w := first(); w == nil || !neutralWriter(w, f) {
			return onWriter
		}
	case path == "log/slog" && (sel.Sel.Name == "New" || sel.Sel.Name == "NewLogLogger"):
		h, ok := ast.Unparen(first()).(*ast.CallExpr)
		if !ok {
			return "a logger on a handler of the code, which may read the lines as text"
		}
		if hs, ok := h.Fun.(*ast.SelectorExpr); !ok || !isPkg(hs.X, f, "log/slog") || hs.Sel.Name != "NewTextHandler" && hs.Sel.Name != "NewJSONHandler" {
			return "a logger on a handler of the code, which may read the lines as text"
		}
	}
	return ""
}

// neutralWriter reports whether w is os.Stdout, os.Stderr or io.Discard.
func neutralWriter(w ast.Expr, f *modsrc.File) bool {
	if stdStreamSyntax(w, f) {
		return true
	}
	sel, ok := ast.Unparen(w).(*ast.SelectorExpr)
	return ok && isPkg(sel.X, f, "io") && sel.Sel.Name == "Discard"
}

// stdStreamSyntax reports whether e is os.Stdout or os.Stderr, from f's
// syntax.
func stdStreamSyntax(e ast.Expr, f *modsrc.File) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	return ok && isPkg(sel.X, f, "os") && (sel.Sel.Name == "Stdout" || sel.Sel.Name == "Stderr")
}

// isPkg reports whether x names the import of path in f.
func isPkg(x ast.Expr, f *modsrc.File, path string) bool {
	id, ok := x.(*ast.Ident)
	return ok && f.Imports[id.Name] == path
}

// errorTextRead reports whether call, syntax of f (parent the call it is
// an argument of, or nil), is x.Error() read other than to print it:
// given to a message (log, fmt's printers, fmt.Errorf, http.Error, a
// panic), the text goes out whole; anywhere else (strings.Contains, a
// regexp, a comparison, a variable) the code may take it apart.
func errorTextRead(call *ast.CallExpr, parent ast.Node, f *modsrc.File) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Error" || len(call.Args) != 0 {
		return false
	}
	p, ok := parent.(*ast.CallExpr)
	if !ok {
		return true
	}
	if id, ok := p.Fun.(*ast.Ident); ok {
		return id.Name != "panic" && id.Name != "print" && id.Name != "println"
	}
	psel, ok := p.Fun.(*ast.SelectorExpr)
	if !ok {
		return true
	}
	switch {
	case isPkg(psel.X, f, "log"), isPkg(psel.X, f, "log/slog"):
		return false
	case isPkg(psel.X, f, "fmt"):
		return !strings.HasPrefix(psel.Sel.Name, "Print") && !strings.HasPrefix(psel.Sel.Name, "Fprint") && psel.Sel.Name != "Errorf"
	case isPkg(psel.X, f, "net/http"):
		return psel.Sel.Name != "Error"
	}
	return true
}

// neutralMessage says why a message given the address (path.name, a
// function or method of fmt, log or log/slog) carries its text to code
// under test, or "" when it goes where no code reads it. ok is false
// when name is no message (fmt.Sscanf, fmt.Sprintf: not the route's).
func (c *checker) neutralMessage(path, name string) (why string, ok bool) {
	r := c.routes()
	switch {
	case path == "fmt" && (name == "Print" || name == "Printf" || name == "Println"):
		return r.std, true
	case path == "fmt" && strings.HasPrefix(name, "Fprint"):
		return r.std, true // a writer other than the standard streams is launders'
	case path == "fmt" && name == "Errorf", path == "errors" && name == "New":
		return r.errText, true
	case path == "log" || path == "log/slog":
		return r.log, true
	}
	return "", false
}

// messageRoute formats why for a reason: "a message whose text reaches
// code under test (...)".
func messageRoute(why string) string {
	return "a message whose text reaches code under test by " + why
}

// requestFields are the fields and methods of a server's *http.Request
// that never hold the address the client dialed. The rest do, or may:
// RequestURI (a proxy's absolute-form request line, CONNECT's
// host:port), Host, the whole URL (URL.String(), URL.Host), the whole
// Header (a Host, Referer, Forwarded the client wrote), Write and
// WriteProxy. Host, and URL.Host and the headers by name, are
// hostTextRead's and readsAddr's.
var requestFields = map[string]bool{
	"Method": true, "Proto": true, "ProtoMajor": true, "ProtoMinor": true, "ProtoAtLeast": true,
	"Body": true, "GetBody": true, "ContentLength": true, "TransferEncoding": true, "Close": true,
	"Context": true, "WithContext": true, "Clone": true, "Form": true, "PostForm": true, "MultipartForm": true,
	"FormValue": true, "PostFormValue": true, "FormFile": true, "ParseForm": true, "ParseMultipartForm": true,
	"MultipartReader": true, "BasicAuth": true, "SetBasicAuth": true, "UserAgent": true, "Cookie": true,
	"Cookies": true, "CookiesNamed": true, "AddCookie": true, "RemoteAddr": true, "TLS": true, "Cancel": true,
	"Response": true, "Trailer": true, "Pattern": true, "PathValue": true, "SetPathValue": true,
	"Host": true, "Referer": true, // readsAddr's and addressingRead's: neutral only printed or dialed
}

// urlFields are the parts of a request's URL that never hold the host
// and port (Host, Port() and Hostname() are hostTextRead's).
var urlFields = map[string]bool{
	"Path": true, "RawPath": true, "EscapedPath": true, "RawQuery": true, "Query": true,
	"Fragment": true, "RawFragment": true, "EscapedFragment": true, "Scheme": true,
	"Host": true, "Port": true, "Hostname": true,
}

// headerMethods are a Header's methods that read one header by name
// (addressingRead judges the name) or write one.
var headerMethods = map[string]bool{"Get": true, "Values": true, "Set": true, "Add": true, "Del": true}

// requestRead returns what sel, x.Name of a server's request x, reads
// that may hold the address the client dialed, or "". stack ends with
// sel's parent.
func requestRead(sel *ast.SelectorExpr, stack []ast.Node) string {
	parent := func(i int) ast.Node {
		if i <= len(stack) {
			return stack[len(stack)-i]
		}
		return nil
	}
	name := sel.Sel.Name
	switch name {
	case "URL":
		if p, ok := parent(1).(*ast.SelectorExpr); ok && p.X == sel && urlFields[p.Sel.Name] {
			return ""
		}
		return types.ExprString(outerOf(sel, parent)) + ", a request's whole URL, which may hold the host and port the client dialed (a proxy's absolute-form target)"
	case "Header":
		switch p := parent(1).(type) {
		case *ast.SelectorExpr:
			if p.X == sel && headerMethods[p.Sel.Name] {
				return ""
			}
		case *ast.IndexExpr:
			if p.X == sel {
				if _, ok := headerKey(p.Index); ok {
					return ""
				}
			}
		}
		return types.ExprString(outerOf(sel, parent)) + ", a request's headers whole, which hold the host and port the client dialed (Host, Referer, Forwarded)"
	}
	if requestFields[name] {
		return ""
	}
	return types.ExprString(outerOf(sel, parent)) + ", a field of a request that may hold the address the client dialed (a proxy's request line, CONNECT's host:port, the headers)"
}

// outerOf returns sel, or the call of it, for messages.
func outerOf(sel *ast.SelectorExpr, parent func(int) ast.Node) ast.Expr {
	if call, ok := parent(1).(*ast.CallExpr); ok && call.Fun == sel {
		return call
	}
	return sel
}

// requestHandedOn returns what call does with a server's request x given
// whole (x an argument): httputil's dumps write its request line and
// headers as text, and a function of another module is code the rule
// does not read. The package's and the module's functions are read for
// their own request parameters; the standard library's handlers
// (ServeHTTP, http.Redirect, a ReverseProxy) send it on whole. Or "".
func requestHandedOn(call *ast.CallExpr, f *modsrc.File, module string) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	path := f.Imports[x.Name]
	switch {
	case path == "net/http/httputil" && strings.HasPrefix(sel.Sel.Name, "Dump"):
		return types.ExprString(call) + ", the request's line and headers as text, the address the client dialed included"
	case path != "" && !match.IsStd(path) && (module == "" || path != module && !strings.HasPrefix(path, module+"/")):
		return types.ExprString(call) + ", a request handed to code of another module the rule does not read"
	}
	return ""
}

// messagesNeutral reports whether a message naming an address, in the
// code's syntax (a method called Printf, log.Print), goes where no code
// reads it: no log output sent to the code, and no method of the
// module's called like a message (a logger type of its own).
func (c *checker) messagesNeutral() bool {
	r := c.routes()
	return r.log == "" && r.ownLogger == ""
}

// requestParamIn reports whether name, in the function stack ends in
// (the innermost that declares it as a parameter), is a parameter of
// type *http.Request.
func requestParamIn(name string, stack []ast.Node, f *modsrc.File) bool {
	for i := len(stack) - 1; i >= 0; i-- {
		ft := match.FuncType(stack[i])
		if ft == nil {
			continue
		}
		for _, fld := range ft.Params.List {
			for _, id := range fld.Names {
				if id.Name != name {
					continue
				}
				star, ok := fld.Type.(*ast.StarExpr)
				if !ok {
					return false
				}
				sel, ok := star.X.(*ast.SelectorExpr)
				return ok && sel.Sel.Name == "Request" && isPkg(sel.X, f, "net/http")
			}
		}
	}
	return false
}
