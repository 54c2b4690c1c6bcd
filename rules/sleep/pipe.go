package sleep

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
	"github.com/dave/dst/decorator/resolver/goast"
	"github.com/dave/dst/decorator/resolver/guess"

	"github.com/unflake/unflake/internal/bubble"
	"github.com/unflake/unflake/rule"
)

// pipeListenerSrc is the in-memory listener a pair helper (bubble.Pair)
// listens on instead of loopback, declared once per package right after
// the first helper that needs it. The standard library has none.
const pipeListenerSrc = `package p

import (
	"errors"
	"net"
	"sync"
)

// pipeListener is a net.Listener on in-memory connections: Dial returns
// one end of a net.Pipe and Accept the other. unflake gave it to tests
// that talked only to themselves over loopback: real network I/O does not
// durably block a goroutine in a synctest bubble, so those tests could
// not run on virtual time. Unlike TCP, a net.Pipe has no buffer: a write
// waits until the peer reads it.
type pipeListener struct {
	mu      sync.Mutex
	closed  bool
	backlog chan net.Conn
	done    chan struct{}
}

// listenPipe returns a new pipeListener. It never fails: the error keeps
// the shape of net.Listen.
func listenPipe() (*pipeListener, error) {
	return &pipeListener{backlog: make(chan net.Conn, 128), done: make(chan struct{})}, nil
}

// Dial connects to the listener, whatever the network and address.
func (l *pipeListener) Dial(network, address string) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.ErrClosed}
	}
	client, server := net.Pipe()
	select {
	case l.backlog <- server:
		return client, nil
	default:
		client.Close()
		server.Close()
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("backlog full")}
	}
}

// Accept waits for and returns the server end of the next Dial.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.backlog:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops the listener and closes the connections no Accept took.
func (l *pipeListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.done)
	for {
		select {
		case c := <-l.backlog:
			c.Close()
		default:
			return nil
		}
	}
}

// Addr names the listener "pipe", as net.Pipe's connections name theirs.
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// pipeAddr is the address of a pipeListener.
type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
`

// pipeNames are the package-level names pipeListenerSrc declares.
var pipeNames = []string{"pipeListener", "listenPipe", "pipeAddr"}

// pipeServerSrc is httptest.NewServer on a pipeListener, for the servers
// a test serves only to itself (bubble.Server).
const pipeServerSrc = `package p

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
)

// newPipeServer is httptest.NewServer on in-memory connections: it serves
// on a pipeListener, and its Client dials that listener instead of the
// real network. unflake gave it to the tests that were their server's
// only client, so that they can run in a synctest bubble.
func newPipeServer(h http.Handler) *httptest.Server {
	l, _ := listenPipe()
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	srv.Client().Transport.(*http.Transport).DialContext = func(_ context.Context, network, addr string) (net.Conn, error) {
		return l.Dial(network, addr)
	}
	return srv
}
`

// pipesOf returns the pair helpers the tests in reach call and the
// httptest servers they serve themselves, once each.
func pipesOf(reach []*bubble.Target) ([]*bubble.Pair, []*bubble.Server) {
	var pairs []*bubble.Pair
	var servers []*bubble.Server
	seenPair := map[*bubble.Pair]bool{}
	seenServer := map[*bubble.Server]bool{}
	for _, t := range reach {
		for _, p := range t.Pairs() {
			if !seenPair[p] {
				seenPair[p] = true
				pairs = append(pairs, p)
			}
		}
		for _, s := range t.Servers() {
			if !seenServer[s] {
				seenServer[s] = true
				servers = append(servers, s)
			}
		}
	}
	return pairs, servers
}

// pipeState is what a run of the rule has already done for pairs: the
// helpers rewritten, and whether pipeListener is declared.
type pipeState struct {
	helpers  map[*ast.FuncDecl]bool
	servers  map[*bubble.Server]bool
	declared bool // pipeListener
	server   bool // newPipeServer
}

// withPipes makes fix, the bubble wrap of the tests a wait reaches, also
// give the pair helpers they call and the httptest servers they serve
// themselves in-memory connections, and says so in its message and
// hypothesis. It returns why it cannot, or "".
func (a *analysis) withPipes(fix *rule.Fix, pairs []*bubble.Pair, servers []*bubble.Server) string {
	declared, why := a.declared("listenPipe", "pipeListener", pipeNames)
	if why != "" {
		return why
	}
	serving := false
	if len(servers) > 0 {
		if serving, why = a.declared("newPipeServer", "Server", []string{"newPipeServer"}); why != "" {
			return why
		}
	}
	var helpers, served, what []string
	for _, p := range pairs {
		helpers = append(helpers, p.Decl.Name.Name)
	}
	for _, s := range servers {
		served = append(served, s.Var.Name())
	}
	if len(helpers) > 0 {
		what = append(what, "give "+strings.Join(helpers, " and ")+" in-memory connections (net.Pipe)")
	}
	if len(served) > 0 {
		what = append(what, "serve "+strings.Join(served, " and ")+" on in-memory connections (net.Pipe)")
	}
	fix.Message = strings.Join(what, ", ") + " and " + fix.Message
	if h := fix.Hypothesis; h != nil {
		if len(pairs) > 0 && !strings.Contains(h.Reason, bubble.PairsReason(pairs)) {
			h.Reason += "; " + bubble.PairsReason(pairs)
		}
		if len(servers) > 0 && !strings.Contains(h.Reason, bubble.ServersReason) {
			h.Reason += "; " + bubble.ServersReason
		}
	}
	wrap := fix.Apply
	fix.Apply = func() error {
		declare := func(after ast.Node, file *ast.File) error {
			if declared || a.pipes.declared {
				return nil
			}
			a.pipes.declared = true
			return a.declare(pipeListenerSrc, after, file)
		}
		for _, p := range pairs {
			if a.pipes.helpers[p.Decl] {
				continue
			}
			a.pipes.helpers[p.Decl] = true
			a.rewritePair(p)
			if err := declare(p.Decl, p.File); err != nil {
				return err
			}
		}
		for _, s := range servers {
			if a.pipes.servers[s] {
				continue
			}
			a.pipes.servers[s] = true
			a.rewriteServer(s)
			// At the end of the file: the server may be in any test.
			if err := declare(nil, s.File); err != nil {
				return err
			}
			if !serving && !a.pipes.server {
				a.pipes.server = true
				if err := a.declare(pipeServerSrc, nil, s.File); err != nil {
					return err
				}
			}
		}
		return wrap()
	}
	return ""
}

// rewriteServer serves s on in-memory connections: httptest.NewServer(h)
// becomes newPipeServer(h), and the test's requests through the default
// client (http.Get(u), http.DefaultClient.Do(req)) go through the
// server's own (srv.Client().Get(u), srv.Client().Do(req)), which dials
// it in memory.
func (a *analysis) rewriteServer(s *bubble.Server) {
	newCall := a.pass.Dst(s.New).(*dst.CallExpr)
	newCall.Fun = dst.NewIdent("newPipeServer")
	client := func() dst.Expr {
		return &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(s.Var.Name()), Sel: dst.NewIdent("Client")}}
	}
	for _, c := range s.Client {
		call := a.pass.Dst(c).(*dst.CallExpr)
		switch fun := call.Fun.(type) {
		case *dst.Ident: // http.Get, an Ident with its Path
			call.Fun = &dst.SelectorExpr{X: client(), Sel: dst.NewIdent(fun.Name)}
		case *dst.SelectorExpr: // http.DefaultClient.Do
			fun.X = client()
		}
	}
}

// declared reports whether the package already declares fn, the
// function of an earlier run's fix that returns a *T (T its result's
// type name), or why it cannot add names: one means something else there.
func (a *analysis) declared(fn, typ string, names []string) (bool, string) {
	scope := a.pass.Pkg.Scope()
	if f, _ := scope.Lookup(fn).(*types.Func); f != nil {
		res := f.Type().(*types.Signature).Results()
		if res.Len() >= 1 {
			if ptr, ok := res.At(0).Type().(*types.Pointer); ok {
				if n, ok := ptr.Elem().(*types.Named); ok && n.Obj().Name() == typ {
					return true, ""
				}
			}
		}
	}
	for _, name := range names {
		if scope.Lookup(name) != nil || a.pass.Excluded != nil && a.pass.Excluded(name) {
			return false, "the package already declares " + name + ", a name the fix's in-memory connections need"
		}
	}
	return false, ""
}

// rewritePair makes p listen on listenPipe() and dial the listener it
// returns: l, err := net.ListenTCP("tcp", nil) becomes l, err :=
// listenPipe(), and net.DialTimeout(network, addr, d) becomes
// l.Dial(network, addr). The rest of the helper (the accept, the
// cleanups, a TLS layer over the connections) stays as it is.
func (a *analysis) rewritePair(p *bubble.Pair) {
	listen := a.pass.Dst(p.Listen).(*dst.CallExpr)
	listen.Fun = dst.NewIdent("listenPipe")
	listen.Args = nil
	for _, d := range p.Dials {
		dial := a.pass.Dst(d).(*dst.CallExpr)
		dial.Fun = &dst.SelectorExpr{X: dst.NewIdent(p.Listener.Name()), Sel: dst.NewIdent("Dial")}
		dial.Args = dial.Args[:2]
	}
}

// declare declares the functions and types of src (a file) right after
// the declaration of after in file, or at its end when after is nil.
func (a *analysis) declare(src string, after ast.Node, file *ast.File) error {
	dec := decorator.NewDecoratorWithImports(token.NewFileSet(), "p", goast.WithResolver(guess.New()))
	parsed, err := dec.Parse(src)
	if err != nil {
		return err
	}
	var decls []dst.Decl
	for _, d := range parsed.Decls {
		if g, ok := d.(*dst.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		decls[0].Decorations().Before = dst.EmptyLine
	}
	df := a.pass.Dst(file).(*dst.File)
	for i, d := range df.Decls {
		if after != nil && d == a.pass.Dst(after) {
			df.Decls = append(df.Decls[:i+1], append(decls, df.Decls[i+1:]...)...)
			return nil
		}
	}
	df.Decls = append(df.Decls, decls...)
	return nil
}
