package bubble

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/ast/astutil"

	"github.com/unflake/unflake/internal/match"
)

// A Server is an httptest server a test serves only to its own client:
//
//	srv := httptest.NewServer(h)
//	defer srv.Close()
//	resp, err := http.Get(srv.URL + "/x")
//
// where srv is used only for its URL, its Client and Close, and the URL
// only in the test's own requests (http.Get and its kin, http.NewRequest
// whose request goes to srv.Client().Do or http.DefaultClient.Do). Such a
// server can serve on in-memory connections (a pipeListener) to a client
// that dials them: the requests are real HTTP, over net.Pipe.
type Server struct {
	Fn     ast.Node        // the *ast.FuncDecl or *ast.FuncLit holding it
	File   *ast.File       // its file
	Var    *types.Var      // the server's variable
	New    *ast.CallExpr   // httptest.NewServer(h)
	Client []*ast.CallExpr // http.Get(...), http.DefaultClient.Do(req): calls to send through srv.Client()

	covered map[*ast.Ident]bool
}

// serverAt returns the Server whose rewrite covers id, a reference to a
// function of net/http or net/http/httptest, or nil: the innermost
// function holding id whose body serves one.
func (a *Analysis) serverAt(id *ast.Ident) *Server {
	f := a.fileOf(id)
	if f == nil || !a.Editable(f) {
		return nil
	}
	path, _ := astutil.PathEnclosingInterval(f, id.Pos(), id.End())
	for _, n := range path {
		switch n.(type) {
		case *ast.FuncLit, *ast.FuncDecl:
			if s := a.serverOf(f, n); s != nil && s.covered[id] {
				return s
			}
		}
	}
	return nil
}

// serverOf returns the Server fn's body serves, or nil, deciding once.
func (a *Analysis) serverOf(f *ast.File, fn ast.Node) *Server {
	if s, ok := a.net.servers[fn]; ok {
		return s
	}
	if a.net.servers == nil {
		a.net.servers = map[ast.Node]*Server{}
	}
	s := a.matchServer(f, fn)
	a.net.servers[fn] = s
	return s
}

// matchServer matches fn's body against the Server shape.
func (a *Analysis) matchServer(f *ast.File, fn ast.Node) *Server {
	body := funcBody(fn)
	if body == nil {
		return nil
	}
	info := a.info
	s := &Server{Fn: fn, File: f, covered: map[*ast.Ident]bool{}}
	n := 0
	ast.Inspect(body, func(x ast.Node) bool {
		if call, ok := x.(*ast.CallExpr); ok && match.IsPkgFunc(info, call, "net/http/httptest", "NewServer", "NewTLSServer", "NewUnstartedServer") {
			n++
			if match.IsPkgFunc(info, call, "net/http/httptest", "NewServer") && len(call.Args) == 1 {
				s.New = call
			}
		}
		return true
	})
	if n != 1 || s.New == nil {
		return nil
	}
	s.Var = a.assignedVar(body, s.New)
	if s.Var == nil {
		return nil
	}
	s.covered[calleeIdent(s.New)] = true
	urls := map[*types.Var]bool{} // string variables holding the URL
	reqs := map[*types.Var]bool{} // requests to the URL
	// request checks a call the URL (or a string made of it) is an
	// argument of: one of the test's own requests.
	request := func(c *ast.CallExpr) bool {
		switch {
		case match.IsPkgFunc(info, c, "net/http", "Get", "Head", "Post", "PostForm"):
			s.Client = append(s.Client, c)
			s.covered[calleeIdent(c)] = true
			return true
		case match.IsPkgFunc(info, c, "net/http", "NewRequest", "NewRequestWithContext"):
			if v := a.assignedVar(body, c); v != nil {
				reqs[v] = true
				return true
			}
		}
		return false
	}
	good := true
	match.WithStack(body, func(x ast.Node, stack []ast.Node) bool {
		id, ok := x.(*ast.Ident)
		if !ok || !good {
			return good
		}
		v, _ := info.Uses[id].(*types.Var)
		if v == nil || v != s.Var && !urls[v] {
			return true
		}
		var url ast.Node = id
		if v == s.Var {
			sel, ok := stack[len(stack)-1].(*ast.SelectorExpr)
			if !ok || sel.X != id {
				good = false
				return false
			}
			switch sel.Sel.Name {
			case "Close", "Client":
				s.covered[sel.Sel] = true
				return true
			case "URL":
				url, stack = sel, stack[:len(stack)-1]
			default:
				good = false
				return false
			}
		}
		var held *types.Var
		good, held = a.urlFlows(url, stack, request)
		if held != nil {
			urls[held] = true
		}
		return good
	})
	if !good || len(s.Client) == 0 && len(reqs) == 0 {
		return nil
	}
	// The requests go to the server's own client, or the default one.
	match.WithStack(body, func(x ast.Node, stack []ast.Node) bool {
		id, ok := x.(*ast.Ident)
		if !ok || !good {
			return good
		}
		v, _ := info.Uses[id].(*types.Var)
		if v == nil || !reqs[v] {
			return true
		}
		c, ok := stack[len(stack)-1].(*ast.CallExpr)
		if !ok {
			if sel, ok := stack[len(stack)-1].(*ast.SelectorExpr); ok && sel.X == id {
				return true // req.Header.Set(...)
			}
			good = false
			return false
		}
		sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
		switch {
		case !ok || !match.IsMethod(info, c, "net/http", "Do") || len(c.Args) != 1:
			good = false
		case a.isServerClient(sel.X, s.Var):
			s.covered[sel.Sel] = true
		case a.isDefaultClient(sel.X):
			s.covered[sel.Sel] = true
			s.Client = append(s.Client, c)
		default:
			good = false
		}
		return good
	})
	if !good {
		return nil
	}
	// The test's calls of the server's client.
	ast.Inspect(body, func(x ast.Node) bool {
		if c, ok := x.(*ast.CallExpr); ok {
			if sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr); ok && a.isServerClient(sel.X, s.Var) {
				s.covered[sel.Sel] = true
			}
		}
		return true
	})
	return s
}

// urlFlows reports whether the URL expression e (srv.URL, or a string
// variable holding it), at the end of stack, reaches only the test's own
// requests (request) or a print, through string concatenation and
// fmt.Sprintf; or an assignment to a string variable, which it returns
// (its uses are checked in turn).
func (a *Analysis) urlFlows(e ast.Node, stack []ast.Node, request func(*ast.CallExpr) bool) (bool, *types.Var) {
	child := e
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.BinaryExpr, *ast.ParenExpr:
		case *ast.CallExpr:
			if child == p.Fun {
				return false, nil
			}
			if request(p) {
				return true, nil
			}
			if match.IsPkgFunc(a.info, p, "fmt", "Sprintf", "Sprint") {
				break
			}
			fn := match.Callee(a.info, p)
			print := match.IsMethod(a.info, p, "testing", "Log", "Logf") || match.IsPkgFunc(a.info, p, "fmt", "Printf", "Println", "Print", "Errorf")
			return fn != nil && print, nil
		case *ast.AssignStmt:
			if len(p.Lhs) != 1 || len(p.Rhs) != 1 {
				return false, nil
			}
			id, ok := p.Lhs[0].(*ast.Ident)
			if !ok {
				return false, nil
			}
			v, _ := a.info.ObjectOf(id).(*types.Var)
			return v != nil, v
		default:
			return false, nil
		}
		child = stack[i]
	}
	return false, nil
}

// isServerClient reports whether e is srv.Client() for the server's
// variable srv.
func (a *Analysis) isServerClient(e ast.Expr, srv *types.Var) bool {
	c, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(c.Args) != 0 {
		return false
	}
	sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Client" {
		return false
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	return ok && a.info.Uses[id] == types.Object(srv)
}

// isDefaultClient reports whether e is http.DefaultClient.
func (a *Analysis) isDefaultClient(e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	v, ok := a.info.Uses[sel.Sel].(*types.Var)
	return ok && v.Pkg() != nil && v.Pkg().Path() == "net/http" && v.Name() == "DefaultClient"
}
