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
// one end of a net.Pipe and Accept the other. unflake gave it to the
// helpers that listened on loopback only to dial themselves: real network
// I/O does not durably block a goroutine in a synctest bubble, so those
// tests could not run on virtual time. Unlike TCP, a net.Pipe has no
// buffer: a write waits until the peer reads it.
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

// pairsOf returns the pair helpers the tests in reach call, once each.
func pairsOf(reach []*bubble.Target) []*bubble.Pair {
	var out []*bubble.Pair
	seen := map[*bubble.Pair]bool{}
	for _, t := range reach {
		for _, p := range t.Pairs() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// pipeState is what a run of the rule has already done for pairs: the
// helpers rewritten, and whether pipeListener is declared.
type pipeState struct {
	helpers  map[*ast.FuncDecl]bool
	declared bool
}

// withPairs makes fix, the bubble wrap of the tests a wait reaches, also
// give the pair helpers they call in-memory connections, and says so in
// its message and hypothesis. It returns why it cannot, or "".
func (a *analysis) withPairs(fix *rule.Fix, pairs []*bubble.Pair) string {
	declared, why := a.pipeDeclared()
	if why != "" {
		return why
	}
	var names []string
	for _, p := range pairs {
		names = append(names, p.Decl.Name.Name)
	}
	fix.Message = "give " + strings.Join(names, " and ") + " in-memory connections (net.Pipe) and " + fix.Message
	if h := fix.Hypothesis; h != nil && !strings.Contains(h.Reason, "in-memory connections") {
		h.Reason += "; " + bubble.PairsReason(pairs)
	}
	wrap := fix.Apply
	fix.Apply = func() error {
		for _, p := range pairs {
			if a.pipes.helpers[p.Decl] {
				continue
			}
			a.pipes.helpers[p.Decl] = true
			a.rewritePair(p)
			if !declared && !a.pipes.declared {
				a.pipes.declared = true
				if err := a.declarePipe(p); err != nil {
					return err
				}
			}
		}
		return wrap()
	}
	return ""
}

// pipeDeclared reports whether the package already declares
// pipeListener (an earlier run's fix), or why it cannot: one of its
// names means something else there.
func (a *analysis) pipeDeclared() (bool, string) {
	scope := a.pass.Pkg.Scope()
	fn, _ := scope.Lookup("listenPipe").(*types.Func)
	if fn != nil {
		res := fn.Type().(*types.Signature).Results()
		if res.Len() == 2 {
			if ptr, ok := res.At(0).Type().(*types.Pointer); ok {
				if n, ok := ptr.Elem().(*types.Named); ok && n.Obj().Name() == "pipeListener" {
					return true, ""
				}
			}
		}
	}
	for _, name := range pipeNames {
		if scope.Lookup(name) != nil || a.pass.Excluded != nil && a.pass.Excluded(name) {
			return false, "the package already declares " + name + ", the name of the in-memory listener the fix would add"
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

// declarePipe declares pipeListener right after the helper p.
func (a *analysis) declarePipe(p *bubble.Pair) error {
	dec := decorator.NewDecoratorWithImports(token.NewFileSet(), "p", goast.WithResolver(guess.New()))
	src, err := dec.Parse(pipeListenerSrc)
	if err != nil {
		return err
	}
	var decls []dst.Decl
	for _, d := range src.Decls {
		if g, ok := d.(*dst.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		decls[0].Decorations().Before = dst.EmptyLine
	}
	file := a.pass.Dst(p.File).(*dst.File)
	helper := a.pass.Dst(p.Decl).(*dst.FuncDecl)
	for i, d := range file.Decls {
		if d == helper {
			file.Decls = append(file.Decls[:i+1], append(decls, file.Decls[i+1:]...)...)
			return nil
		}
	}
	file.Decls = append(file.Decls, decls...)
	return nil
}
