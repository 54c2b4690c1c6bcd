package wallclock

import (
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A timed region that may block on I/O (a read from a pipe or a
// connection, behind a bufio.Reader or io.ReadAll; an Accept; a Cmd's
// Wait) measures when something happens elsewhere, a writer's ticker, a
// peer, a child process, not how fast a computation is: its budget is the
// check of that timing, and removing it passes the writer made late. The
// region's code may be the standard library's alone, which the rule
// otherwise takes for computation.

// blockingPkgs are the standard packages whose readers, writers and
// waits may block on something outside the test's goroutine.
var blockingPkgs = map[string]bool{"io": true, "bufio": true, "net": true, "net/http": true, "os": true, "os/exec": true,
	"crypto/tls": true, "net/rpc": true, "net/textproto": true, "encoding/json": true, "encoding/gob": true, "encoding/csv": true}

// blockingMethods are the method names that read, write, accept or wait.
var blockingMethods = []string{"Read", "ReadString", "ReadBytes", "ReadLine", "ReadRune", "ReadByte", "ReadSlice", "ReadFrom", "ReadAt",
	"Peek", "Discard", "Scan", "Decode", "ReadAll", "ReadRecord", "ReadLine", "ReadMIMEHeader", "ReadResponse",
	"Write", "WriteString", "WriteTo", "Flush", "Accept", "AcceptTCP", "AcceptUnix", "Wait", "Run", "Output", "CombinedOutput",
	"Do", "Get", "Post", "Head", "PostForm", "Call", "Dial", "DialContext"}

// blockingFuncs are the package functions that read or wait.
var blockingFuncs = map[string][]string{
	"io":       {"ReadAll", "ReadFull", "ReadAtLeast", "Copy", "CopyN", "CopyBuffer"},
	"net":      {"Dial", "DialTimeout", "DialTCP", "DialUDP", "DialUnix"},
	"net/http": {"Get", "Post", "Head", "PostForm", "ReadRequest", "ReadResponse"},
}

// blocks returns the call of the region (or of a function of the package
// it calls) that may block on I/O, or "".
func (c *checker) blocks(region []ast.Stmt) string {
	seen := map[*ast.FuncDecl]bool{}
	var walk func(root ast.Node) string
	walk = func(root ast.Node) string {
		found := ""
		ast.Inspect(root, func(n ast.Node) bool {
			if found != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.GoStmt, *ast.FuncLit:
				return false // runs elsewhere, or later
			case *ast.CallExpr:
				fn := match.Callee(c.info, n)
				if fn == nil || fn.Pkg() == nil {
					return true
				}
				if fn.Pkg() == c.pass.Pkg {
					if decl := c.decls[fn.Origin()]; decl != nil && decl.Body != nil && !seen[decl] {
						seen[decl] = true
						if why := walk(decl.Body); why != "" {
							found = why + " in " + fn.Name()
						}
					}
					return true
				}
				if c.blockingCall(n, fn) {
					found = types.ExprString(n.Fun)
				}
			}
			return found == ""
		})
		return found
	}
	for _, st := range region {
		if why := walk(st); why != "" {
			return why
		}
	}
	return ""
}

// blockingCall reports whether call, of the standard function or method
// fn, may block on I/O: a read, write, accept or wait of a blocking
// package's type, or of an interface (io.Reader, net.Conn) whose dynamic
// value may be a pipe or a connection; unless what it reads is evidently
// in memory (a strings.Reader, a bytes.Buffer behind bufio.NewReader).
func (c *checker) blockingCall(call *ast.CallExpr, fn *types.Func) bool {
	path := fn.Pkg().Path()
	if !match.IsStd(path) {
		return false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil {
		for _, name := range blockingFuncs[path] {
			if fn.Name() == name {
				return !c.inMemory(call.Args)
			}
		}
		return false
	}
	if !blockingPkgs[path] {
		return false
	}
	named := false
	for _, m := range blockingMethods {
		if fn.Name() == m {
			named = true
		}
	}
	if !named {
		return false
	}
	if _, ok := sig.Recv().Type().Underlying().(*types.Map); ok {
		return false // http.Header.Get: a map read
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return true
	}
	return !c.inMemory([]ast.Expr{sel.X})
}

// inMemory reports whether every expression is a value held in memory
// (a *strings.Reader, *bytes.Reader, *bytes.Buffer), or a local defined
// by a bufio or io wrapper of one (bufio.NewReader(strings.NewReader(s))).
func (c *checker) inMemory(es []ast.Expr) bool {
	if len(es) == 0 {
		return false
	}
	for _, e := range es {
		if !c.memory(e, 0) {
			return false
		}
	}
	return true
}

func (c *checker) memory(e ast.Expr, depth int) bool {
	if depth > 3 {
		return false
	}
	e = ast.Unparen(e)
	if t := c.info.TypeOf(e); t != nil {
		if match.IsNamed(t, "strings", "Reader", "Builder") || match.IsNamed(t, "bytes", "Reader", "Buffer") {
			return true
		}
		if b, ok := t.Underlying().(*types.Basic); ok && b.Info()&types.IsString != 0 {
			return true // a name, a flag: not a stream
		}
		if s, ok := t.Underlying().(*types.Slice); ok {
			if b, ok := s.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Byte {
				return true
			}
		}
	}
	switch x := e.(type) {
	case *ast.UnaryExpr:
		return c.memory(x.X, depth+1)
	case *ast.CallExpr:
		// bufio.NewReader(src), bufio.NewScanner(src), io.LimitReader(src, n)
		fn := match.Callee(c.info, x)
		if fn != nil && fn.Pkg() != nil && (fn.Pkg().Path() == "bufio" || fn.Pkg().Path() == "io") && strings.HasPrefix(fn.Name(), "New") || fn != nil && fn.Name() == "LimitReader" {
			return len(x.Args) > 0 && c.memory(x.Args[0], depth+1)
		}
	case *ast.Ident:
		v, ok := c.info.Uses[x].(*types.Var)
		if !ok {
			return false
		}
		// The local's one definition, when it is a wrapper call.
		var from ast.Expr
		body := c.bodyOf(v)
		if body == nil {
			return false
		}
		n := 0
		ast.Inspect(body, func(nd ast.Node) bool {
			as, ok := nd.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for i, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && c.info.ObjectOf(id) == v {
					n++
					if len(as.Lhs) == len(as.Rhs) {
						from = as.Rhs[i]
					}
				}
			}
			return true
		})
		return n == 1 && from != nil && c.memory(from, depth+1)
	}
	return false
}

// bodyOf returns the body of the innermost function declaring v, or nil.
func (c *checker) bodyOf(v *types.Var) *ast.BlockStmt {
	var body *ast.BlockStmt
	for _, f := range c.pass.Files {
		if v.Pos() < f.Pos() || v.Pos() >= f.End() {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil || v.Pos() < n.Pos() || v.Pos() >= n.End() {
				return false
			}
			switch n := n.(type) {
			case *ast.FuncDecl:
				body = n.Body
			case *ast.FuncLit:
				body = n.Body
			}
			return true
		})
	}
	return body
}
