package freeport

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
)

// The fixed port's value reaches the code under test by more routes than
// the flow follows: an HTTP client whose transport is the module's (a
// RoundTripper that canonicalises req.URL.Host), the environment
// (t.Setenv, then the code's os.Getenv), bytes the code reads back (a
// registry's response body written with fmt.Fprintf, a file). Code that
// reads the host and port as text there (strips a "default port" by the
// suffix "80", splits it, compares it) mistreats the fixed 18280 and
// almost no port the system picks: running the correct code cannot tell
// which values a bug mistreats. So a read of an address's host or port
// as text (a request's whole URL as text included, and an address handed
// to a package of another module, which the rule does not read: an
// egress policy that refuses a port range) anywhere in the code the
// tests run (codeReadsPort: every build
// of the package, the module's packages they import) keeps the port
// fixed whatever the route, and the test handing the address to the
// environment or to a writer is a route the flow does not follow.

// hostTextRead returns what n, syntax of f, reads of an address's host
// or port as text ("r.URL.Host, a URL's host and port"), or "". urls are
// the names f gives the results of url.Parse.
func hostTextRead(n ast.Node, f *modsrc.File, urls map[string]bool, stack []ast.Node, messages bool) string {
	switch n := n.(type) {
	case *ast.SelectorExpr:
		if n.Sel.Name != "Host" {
			return ""
		}
		if x, ok := n.X.(*ast.SelectorExpr); ok && x.Sel.Name == "URL" {
			return types.ExprString(n) + ", a URL's host and port"
		}
		if x, ok := n.X.(*ast.Ident); ok && urls[x.Name] {
			return types.ExprString(n) + ", a URL's or request's host and port"
		}
	case *ast.CallExpr:
		sel, ok := n.Fun.(*ast.SelectorExpr)
		if !ok {
			return ""
		}
		if len(n.Args) == 0 && (sel.Sel.Name == "Port" || sel.Sel.Name == "Hostname") && importsAny(f, "net/url", "net/http") {
			return types.ExprString(n) + ", a URL's port or host"
		}
		if what := addressingRead(n, sel, f, stack, messages); what != "" {
			return what
		}
		// A client request's whole URL as text holds the host and port:
		// handed on (an egress policy of another module, a log a later
		// check reads), the text is what the code reads.
		if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "URL" && len(n.Args) == 0 && (sel.Sel.Name == "String" || sel.Sel.Name == "Redacted") && importsAny(f, "net/http") {
			return types.ExprString(n) + ", a request's URL as text, host and port included"
		}
		if x, ok := sel.X.(*ast.Ident); ok && f.Imports[x.Name] != "" && !match.IsStd(f.Imports[x.Name]) {
			for _, a := range n.Args {
				if at := addressPart(a); at != "" {
					return fmt.Sprintf("%s handed to %s.%s, code of another module the rule does not read", at, x.Name, sel.Sel.Name)
				}
			}
		}
		if x, ok := sel.X.(*ast.Ident); ok && f.Imports[x.Name] == "net" && sel.Sel.Name == "SplitHostPort" {
			if len(n.Args) == 1 && acceptedRemote(n.Args[0], stack) {
				return "" // the client's port, which the system picks either way
			}
			return "net.SplitHostPort, an address split into host and port"
		}
	case *ast.IndexExpr:
		// r.Header["Referer"]: a header's values by key.
		if key, ok := headerKey(n.Index); ok && addressHeaders[key] && importsAny(f, "net/http") {
			if x, ok := n.X.(*ast.SelectorExpr); ok && x.Sel.Name == "Header" {
				return types.ExprString(n) + ", a header that names the server's host and port"
			}
		}
	case *ast.TypeAssertExpr:
		star, ok := n.Type.(*ast.StarExpr)
		if !ok {
			return ""
		}
		if sel, ok := star.X.(*ast.SelectorExpr); ok && (sel.Sel.Name == "TCPAddr" || sel.Sel.Name == "UDPAddr") {
			if x, ok := sel.X.(*ast.Ident); ok && f.Imports[x.Name] == "net" {
				return types.ExprString(n) + ", an address's port as a number"
			}
		}
	}
	return ""
}

// acceptedRemote reports whether e is c.RemoteAddr().String() of a
// connection c the enclosing function got from an Accept.
func acceptedRemote(e ast.Expr, stack []ast.Node) bool {
	str, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(str.Args) != 0 {
		return false
	}
	sel, ok := str.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "String" {
		return false
	}
	ra, ok := sel.X.(*ast.CallExpr)
	if !ok || len(ra.Args) != 0 {
		return false
	}
	rsel, ok := ra.Fun.(*ast.SelectorExpr)
	return ok && rsel.Sel.Name == "RemoteAddr" && accepted(rsel.X, stack)
}

// importsAny reports whether f imports one of paths.
func importsAny(f *modsrc.File, paths ...string) bool {
	for _, p := range f.Imports {
		for _, want := range paths {
			if p == want {
				return true
			}
		}
	}
	return false
}

// parsedURLs returns the names f gives the results of url.Parse and
// url.ParseRequestURI, http.NewRequest and a request's Clone or
// WithContext (by name: the method of any value so called).
func parsedURLs(f *modsrc.File) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(f.Syntax, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok || len(a.Rhs) != 1 || len(a.Lhs) == 0 {
			return true
		}
		call, ok := a.Rhs[0].(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		// A URL parsed, or a request made or copied (req.Clone,
		// req.WithContext): its Host is the address's text too.
		parsed := f.Imports[x.Name] == "net/url" && (sel.Sel.Name == "Parse" || sel.Sel.Name == "ParseRequestURI")
		made := f.Imports[x.Name] == "net/http" && strings.HasPrefix(sel.Sel.Name, "NewRequest")
		copied := (sel.Sel.Name == "Clone" || sel.Sel.Name == "WithContext") && f.Imports[x.Name] == ""
		if parsed || made || copied {
			if id, ok := a.Lhs[0].(*ast.Ident); ok {
				names[id.Name] = true
			}
		}
		return true
	})
	return names
}

// launders returns why call, which the test hands the address to, passes
// it on by a route the flow does not follow into code that may read its
// text: the environment (t.Setenv, os.Setenv), bytes a reader gets back
// (fmt.Fprint to a writer other than the standard streams: a response
// body, a file, a connection); or "".
func (c *checker) launders(call *ast.CallExpr, fn *types.Func) string {
	if fn.Name() == "Setenv" && (fn.Pkg().Path() == "os" || recvNamed(fn, "testing", "T", "B", "F", "TB", "common")) {
		return fmt.Sprintf("the environment (%s at %s), which the code under test may read (os.Getenv) and take apart as text", types.ExprString(call.Fun), c.where(call.Pos()))
	}
	if fn.Pkg().Path() == "fmt" && strings.HasPrefix(fn.Name(), "Fprint") && len(call.Args) > 0 && !stdStream(c.info, call.Args[0]) {
		return fmt.Sprintf("bytes written by fmt.%s at %s (a response body, a file, a connection), which the code under test may read back and take apart as text", fn.Name(), c.where(call.Pos()))
	}
	return ""
}

// stdStream reports whether e is os.Stdout or os.Stderr.
func stdStream(info *types.Info, e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	v, ok := info.Uses[sel.Sel].(*types.Var)
	return ok && v.Pkg() != nil && v.Pkg().Path() == "os" && (v.Name() == "Stdout" || v.Name() == "Stderr")
}

// addressPart returns the text of the first part of e that holds an
// address (a request's URL or Host, a connection's or listener's
// address), or "".
func addressPart(e ast.Expr) string {
	var at string
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && at == "" {
			switch sel.Sel.Name {
			case "URL", "Host", "RemoteAddr", "LocalAddr", "Addr":
				at = types.ExprString(sel)
			}
		}
		return at == ""
	})
	return at
}

// The client (Go's own, a browser, a proxy) writes the address it dialed
// into more of a request than its Host: the Referer Go's client sets when
// it follows a redirect (http://127.0.0.1:8097/account), an Origin, a
// proxy's X-Forwarded-Host and Forwarded, and a server's redirect names
// it in its Location. The test need not hand the address to the code for
// it to arrive there (red team batch 16, refererback: a back link built
// from r.Referer() that cuts ":80" anywhere mangles 127.0.0.1:8097, never
// a port the system picks). A request's RemoteAddr and X-Forwarded-For
// name the client's address, whose port the system picks either way.

// addressHeaders are the headers, in canonical form, that carry the
// server's host and port as the client dialed it.
var addressHeaders = map[string]bool{
	"Host": true, "Referer": true, "Origin": true, "Location": true, "Content-Location": true,
	"Forwarded": true, "X-Forwarded-Host": true, "X-Forwarded-Port": true, "X-Forwarded-Server": true,
	"X-Original-Host": true, "X-Original-Url": true,
}

// addressingRead returns what call (sel its function), syntax of f, reads
// of a request's or response's own addressing: r.Referer(),
// resp.Location(), a header of addressHeaders by Get or Values; or "".
// Naming it only to a dial or a message (printedOrDialed) is fine.
func addressingRead(call *ast.CallExpr, sel *ast.SelectorExpr, f *modsrc.File, stack []ast.Node, messages bool) string {
	if !importsAny(f, "net/http") {
		return ""
	}
	var what string
	switch {
	case len(call.Args) == 0 && sel.Sel.Name == "Referer":
		what = ", the page the client came from, its host and port included"
	case len(call.Args) == 0 && sel.Sel.Name == "Location":
		what = ", a redirect's target, its host and port included"
	case len(call.Args) == 1 && (sel.Sel.Name == "Get" || sel.Sel.Name == "Values"):
		if key, ok := headerKey(call.Args[0]); ok && addressHeaders[key] {
			what = ", a header that names the server's host and port"
		}
	}
	if what == "" {
		return ""
	}
	parent := func(i int) ast.Node {
		if i <= len(stack) {
			return stack[len(stack)-i]
		}
		return nil
	}
	if printedOrDialed(call, parent, messages) {
		return ""
	}
	return types.ExprString(call) + what
}

// headerKey returns the canonical header key e, a string literal, names.
func headerKey(e ast.Expr) (string, bool) {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return "", false
	}
	return textproto.CanonicalMIMEHeaderKey(s), true
}
