package bubble

import (
	"go/ast"
	"go/constant"
	"go/types"
	"net"
	"strings"

	"golang.org/x/tools/go/ast/astutil"

	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// Real network I/O does not durably block a goroutine in a synctest
// bubble, so a test on real connections cannot run on virtual time. Many
// such tests talk only to themselves: a helper of the test file listens on
// loopback, dials that listener and accepts the connection, and the pair
// is then used only as connections. Such a helper can make the pair in
// memory instead (net.Pipe, through a listener whose Dial hands one end to
// Accept), which a bubble follows. This file decides which helpers are
// such pairs, and words the reason for the rest: where the code under
// test opens the connections itself, the production seam that would let
// the test hand it in-memory ones.

// A Pair is a helper of a test file that listens on loopback, dials its
// own listener and accepts the connection: the shape of
//
//	l, err := net.ListenTCP("tcp", nil)
//	go func() { server, err = l.Accept() }()
//	client, err := net.DialTimeout(l.Addr().Network(), l.Addr().String(), d)
//
// where the listener is used only to Accept, Close and name its address
// for the dial (or a log line), and the connections only as net.Conn.
type Pair struct {
	Decl     *ast.FuncDecl
	File     *ast.File
	Listener *types.Var      // the listener's variable
	Listen   *ast.CallExpr   // net.Listen or net.ListenTCP
	Dials    []*ast.CallExpr // net.Dial or net.DialTimeout, of the listener's address

	// covered holds the identifiers of the network calls the pair's
	// rewrite replaces or makes in-memory: the listen, the dials, the
	// listener's methods and the connections' net.Conn methods.
	covered map[*ast.Ident]bool
}

// netState is the analysis's memo of the helpers it matched as pairs.
type netState struct {
	pairs map[*ast.FuncDecl]*Pair // nil: not a pair
	// whyNot says why a function that listens on loopback and dials is
	// not a pair.
	whyNot map[*ast.FuncDecl]string
	// servers holds the httptest servers functions serve to themselves.
	servers map[ast.Node]*Server // nil: none
}

// targetNet is what a target's walk found of the network: hazards a pair
// helper's rewrite removes, and uses of network values (a net.Conn's
// methods, a net.Addr's String) that are real only if a real connection
// was made somewhere.
type targetNet struct {
	pipes   []*Pair
	servers []*Server
	uses    []string // block reasons, in walk order
	memory  string   // where the test makes in-memory connections (net.Pipe), if it does
	// far is set when a function of another package the test calls
	// uses the real network deep down its calls: evidence that a
	// connection without a source in sight may be real.
	far bool
}

// Pairs returns the helpers the test reaches that would make their
// connections in memory, when that is all that keeps the test from a
// bubble as far as the network goes; nil otherwise.
func (t *Target) Pairs() []*Pair {
	t.resolve()
	return t.net.pipes
}

// Servers returns the httptest servers the test serves to itself, that
// would serve on in-memory connections, when that is all that keeps the
// test from a bubble as far as the network goes; nil otherwise.
func (t *Target) Servers() []*Server {
	t.resolve()
	return t.net.servers
}

// ServersReason says, for a hypothesis, what serving an httptest server
// on in-memory connections changes.
const ServersReason = "the test is the only client of its httptest server; the fix serves it on in-memory connections (net.Pipe), which are unbuffered, unlike TCP: a write waits until the peer reads"

// PairsReason says, for a hypothesis, what making the connections of
// pairs in memory changes.
func PairsReason(pairs []*Pair) string {
	var names []string
	for _, p := range pairs {
		names = append(names, p.Decl.Name.Name)
	}
	return "the test talks to itself over loopback (" + strings.Join(names, ", ") + "); the fix gives the helper in-memory connections (net.Pipe) for every test that calls it, and unlike TCP they are unbuffered: a write waits until the peer reads"
}

// netHazard handles a reference (id) to fn, a function of package net
// whose hazard is why: a call a pair the walk is in replaces, or a method
// of a network interface (net.Conn, net.Addr, net.Listener), which is
// real only if the value is (settleNetwork decides). It reports whether it recorded the hazard;
// if not, the caller blocks the test as for any real network use.
func (w *walker) netHazard(fn *types.Func, id *ast.Ident, why string) bool {
	if fn.Pkg().Path() == "net" && fn.Name() == "Pipe" {
		w.netMem(why[strings.Index(why, "(")+1 : len(why)-1])
		return true
	}
	if p := fn.Pkg().Path(); p == "net/http" || p == "net/http/httptest" {
		if s := w.a.serverAt(id); s != nil {
			w.server(s)
			return true
		}
		return false
	}
	if w.in != nil {
		if p := w.a.pairOf(w.in); p != nil && p.covered[id] {
			w.pipe(p)
			return true
		}
	}
	if fn.Pkg().Path() != "net" {
		return false
	}
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		w.netUse(why)
		return true
	}
	return false
}

func (w *walker) pipe(p *Pair) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evPipe, pair: p})
		return
	}
	for _, q := range w.t.net.pipes {
		if q == p {
			return
		}
	}
	w.t.net.pipes = append(w.t.net.pipes, p)
}

func (w *walker) server(s *Server) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evServer, server: s})
		return
	}
	for _, q := range w.t.net.servers {
		if q == s {
			return
		}
	}
	w.t.net.servers = append(w.t.net.servers, s)
}

func (w *walker) netMem(where string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evNetMem, why: where})
		return
	}
	if w.t.net.memory == "" {
		w.t.net.memory = where
	}
}

func (w *walker) netFar() {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evNetFar})
		return
	}
	w.t.net.far = true
}

func (w *walker) netUse(why string) {
	if w.rec != nil {
		*w.rec = append(*w.rec, event{kind: evNetUse, why: why})
		return
	}
	w.t.net.uses = append(w.t.net.uses, why)
}

// settleNetwork decides, once the walk is replayed, what the network
// calls that depend on where the connections come from do to the target:
// with a pair helper, and nothing else blocking the test, the test may
// run in a bubble once the helper makes its pair in memory, which only
// running it can show (unproven); so may a test that makes in-memory
// connections itself (net.Pipe), or that uses a connection made nowhere in
// sight (a real one would come from code the analysis cannot see).
func (w *walker) settleNetwork() {
	n := &w.t.net
	switch {
	case len(n.pipes) > 0 || len(n.servers) > 0:
		if len(w.t.blocked.list) > 0 {
			n.pipes, n.servers = nil, nil
			return
		}
		if why := w.a.saysNetwork(w.t, n.pipes, n.servers); why != "" {
			w.block(why)
			n.pipes, n.servers = nil, nil
			return
		}
		if len(n.pipes) > 0 {
			w.unprove(PairsReason(n.pipes))
		}
		if len(n.servers) > 0 {
			w.unprove(ServersReason)
		}
	case n.memory != "":
		// The connections the test reads and writes are in memory, as
		// far as the analysis sees: channels a bubble follows, but a
		// second writer on one end waits on a mutex, which is not
		// durably blocking, and would keep virtual time still.
		w.unprove("the test uses in-memory connections (" + n.memory + "); a write waiting on another write to the same end holds a mutex, which a synctest bubble does not see as durably blocked")
	case len(n.uses) > 0 && w.t.realNetwork():
		// The test uses the real network already: what it does with a
		// connection adds no blocker.
	case len(n.uses) > 0 && n.far:
		w.block(n.uses[0])
	case len(n.uses) > 0:
		// No connection the test makes is in sight, so the value is one
		// made where the analysis cannot see (which leaves the test
		// unproven on its own) or not a real connection at all (an
		// io.Pipe behind net.Conn's methods, say).
		w.unprove(n.uses[0] + ", on a value the analysis does not see made; if it is a real connection, the test cannot run in a synctest bubble")
	}
}

// seam words, after a reason that the code under test uses the real
// network, the production seam that would let the test run on in-memory
// connections. what names the code under test (where the call is).
func seam(what string) string {
	return "; the connection is the code under test's own (" + what + "): an option that takes a net.Listener (or a dial function) would let the test run on in-memory connections (net.Pipe) in a synctest bubble"
}

// httpSeam is seam for HTTP requests the code under test makes itself.
func httpSeam(what string) string {
	return "; the code under test makes that HTTP request itself (" + what + "): an option that takes an *http.Client (or an http.RoundTripper) would let the test serve it on in-memory connections in a synctest bubble"
}

// httpClient reports whether fn, of net/http, makes requests: a
// Client's or Transport's method, or http.Get and its kin.
func httpClient(fn *types.Func) bool {
	if fn.Pkg().Path() != "net/http" {
		return false
	}
	if r := fn.Type().(*types.Signature).Recv(); r != nil {
		return match.IsNamed(r.Type(), "net/http", "Client", "Transport")
	}
	switch fn.Name() {
	case "Get", "Head", "Post", "PostForm":
		return true
	}
	return false
}

// networkReason words the block reason why of a network hazard met in
// w.in: in the package's own non-test code, with the seam; in a test
// function that talks to itself but is no Pair, with the reason.
func (w *walker) networkReason(why string, fn *types.Func, id *ast.Ident, where string) string {
	if fn.Pkg().Path() == "net/http/httptest" && strings.HasPrefix(fn.Name(), "New") {
		return why + w.a.serverSeam(id)
	}
	if w.in == nil {
		return why
	}
	if w.a.inTestFile(w.in) {
		if w.a.pairOf(w.in) == nil && w.a.net.whyNot[w.in] != "" {
			return why + "; " + w.in.Name.Name + " listens on loopback and dials itself, but " + w.a.net.whyNot[w.in] + ", which in-memory connections would change, so the rule leaves it on TCP"
		}
		return why
	}
	if p := fn.Pkg().Path(); p != "net" && p != "net/http" {
		return why
	}
	what := strings.TrimPrefix(where, " ")
	if httpClient(fn) {
		return why + httpSeam(what)
	}
	return why + seam(what)
}

// effectSeam is the seam for a network effect of another package's
// function the test calls: its chain ends in net/http's client or in net.
func effectSeam(e effect.Effect) string {
	if e.Kind != effect.Network || len(e.Via) == 0 {
		return ""
	}
	last := e.Via[len(e.Via)-1]
	for _, c := range []string{"http.Client.", "http.Transport.", "http.Get", "http.Post", "http.Head"} {
		if strings.HasPrefix(last, c) {
			return httpSeam(e.Via[0])
		}
	}
	return seam(e.Via[0])
}

// inTestFile reports whether decl is declared in a _test.go file.
func (a *Analysis) inTestFile(decl *ast.FuncDecl) bool {
	f := a.fileOf(decl)
	return f != nil && strings.HasSuffix(a.pass.Fset.File(f.Pos()).Name(), "_test.go")
}

// fileOf returns the file of the package holding n, or nil.
func (a *Analysis) fileOf(n ast.Node) *ast.File {
	for _, f := range a.pass.Files {
		if f.FileStart <= n.Pos() && n.Pos() <= f.FileEnd {
			return f
		}
	}
	return nil
}

// pairOf returns decl as a Pair, or nil, deciding once.
func (a *Analysis) pairOf(decl *ast.FuncDecl) *Pair {
	if p, ok := a.net.pairs[decl]; ok {
		return p
	}
	if a.net.pairs == nil {
		a.net.pairs = map[*ast.FuncDecl]*Pair{}
	}
	p, why := a.matchPair(decl)
	a.net.pairs[decl] = p
	if why != "" {
		if a.net.whyNot == nil {
			a.net.whyNot = map[*ast.FuncDecl]string{}
		}
		a.net.whyNot[decl] = why
	}
	return p
}

// matchPair matches decl against the Pair shape. When decl listens on
// loopback and dials but is not a pair, it says why.
func (a *Analysis) matchPair(decl *ast.FuncDecl) (*Pair, string) {
	info := a.info
	f := a.fileOf(decl)
	if decl.Body == nil || f == nil || !a.Editable(f) {
		return nil, ""
	}
	p := &Pair{Decl: decl, File: f, covered: map[*ast.Ident]bool{}}
	// The listen: l, err := net.Listen("tcp", "127.0.0.1:0").
	listens := 0
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		call, isCall := n.(*ast.CallExpr)
		if !isCall {
			return true
		}
		switch {
		case match.IsPkgFunc(info, call, "net", "Listen", "ListenTCP"):
			listens++
			if a.loopbackListen(call) {
				p.Listen = call
			}
		case match.IsPkgFunc(info, call, "net", "Dial", "DialTimeout"):
			p.Dials = append(p.Dials, call)
		}
		return true
	})
	switch {
	case p.Listen == nil || len(p.Dials) == 0:
		return nil, ""
	case listens > 1:
		return nil, "it listens more than once"
	}
	p.Listener = a.assignedVar(decl.Body, p.Listen)
	if p.Listener == nil {
		return nil, "it does not keep its listener in a variable"
	}
	// Every use of the listener: Accept, Close, or its address for a
	// dial or a log line; the variables the address is kept in likewise.
	addrVars := map[*types.Var]bool{}
	var conns []*types.Var
	for _, d := range p.Dials {
		if v := a.assignedVar(decl.Body, d); v != nil {
			conns = append(conns, v)
		}
	}
	uses, whyNot := true, ""
	match.WithStack(decl.Body, func(n ast.Node, stack []ast.Node) bool {
		id, isID := n.(*ast.Ident)
		if !isID || info.Uses[id] != types.Object(p.Listener) || !uses {
			return uses
		}
		sel, call := methodCall(stack, id)
		if call == nil {
			uses, whyNot = false, "it uses its listener "+p.Listener.Name()+" otherwise than to accept, close or dial it"
			return false
		}
		switch sel.Sel.Name {
		case "Accept":
			p.covered[sel.Sel] = true
			if v := a.assignedVar(decl.Body, call); v != nil {
				conns = append(conns, v)
			}
		case "Close":
			p.covered[sel.Sel] = true
		case "Addr":
			p.covered[sel.Sel] = true
			uses = a.addrUse(decl.Body, stack[:len(stack)-2], call, p, addrVars)
			if !uses {
				whyNot = "it reads its listener's address other than to dial or print it (" + types.ExprString(call) + ")"
			}
		default:
			uses, whyNot = false, "it calls "+types.ExprString(call.Fun)+" on its listener"
		}
		return uses
	})
	if !uses {
		return nil, whyNot
	}
	// The dials reach the listener's own address.
	for _, d := range p.Dials {
		if !a.mentions(d.Args[1], p.Listener, addrVars) {
			return nil, "it also dials another address (" + types.ExprString(d.Args[1]) + ")"
		}
		if len(d.Args) > 2 && a.namesLocal(d.Args[2]) {
			// The rewrite drops the timeout, and with it maybe the
			// variable's only use.
			return nil, "its dial timeout is a variable (" + types.ExprString(d.Args[2]) + ")"
		}
		p.covered[calleeIdent(d)] = true
	}
	p.covered[calleeIdent(p.Listen)] = true
	// The connections: net.Conn's own methods, passed on or returned;
	// never asked for their address or asserted to a concrete type.
	for _, c := range conns {
		if why := a.connUses(decl.Body, c, p); why != "" {
			return nil, why
		}
	}
	// Its name or comments may say it is there for the real network
	// (yamux's testConnTCP beside its testConnPipe).
	if s, ok := intent.Of(intent.Network, []string{decl.Name.Name}, intent.Comments(a.pass.Fset, f, decl)); ok {
		return nil, s.Says("it")
	}
	return p, ""
}

// loopbackListen reports whether call, net.Listen or net.ListenTCP,
// listens on TCP on a port the system picks, on loopback or every
// interface: a listener only its own dial reaches.
func (a *Analysis) loopbackListen(call *ast.CallExpr) bool {
	if len(call.Args) != 2 {
		return false
	}
	network, ok := a.constString(call.Args[0])
	if !ok || network != "tcp" && network != "tcp4" && network != "tcp6" {
		return false
	}
	if match.IsPkgFunc(a.info, call, "net", "ListenTCP") {
		// nil: every interface, a port the system picks.
		tv := a.info.Types[call.Args[1]]
		return tv.IsNil()
	}
	addr, ok := a.constString(call.Args[1])
	if !ok {
		return false
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" {
		return false
	}
	switch host {
	case "", "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}

func (a *Analysis) constString(e ast.Expr) (string, bool) {
	tv := a.info.Types[e]
	if tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(tv.Value), true
}

// assignedVar returns the variable the first result of call is assigned
// to (v, err := call; v, err = call), or nil.
func (a *Analysis) assignedVar(root ast.Node, call *ast.CallExpr) *types.Var {
	var v *types.Var
	ast.Inspect(root, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 || ast.Unparen(as.Rhs[0]) != call {
			return v == nil
		}
		if id, ok := as.Lhs[0].(*ast.Ident); ok && id.Name != "_" {
			v, _ = a.info.ObjectOf(id).(*types.Var)
		}
		return false
	})
	return v
}

// methodCall returns, for the identifier id at the end of stack, the
// selector id.M and the call id.M(...) it is the receiver of, or nils.
func methodCall(stack []ast.Node, id *ast.Ident) (*ast.SelectorExpr, *ast.CallExpr) {
	if len(stack) < 2 {
		return nil, nil
	}
	sel, ok := stack[len(stack)-1].(*ast.SelectorExpr)
	if !ok || sel.X != id {
		return nil, nil
	}
	call, ok := stack[len(stack)-2].(*ast.CallExpr)
	if !ok || call.Fun != sel {
		return nil, nil
	}
	return sel, call
}

// addrUse reports whether the listener's address, the call l.Addr() under
// stack, is only named: l.Addr().String() or .Network(), kept in a
// variable used only so, passed to a dial or printed. Such names are
// "pipe" on the in-memory listener, and a dial of it ignores them.
func (a *Analysis) addrUse(root ast.Node, stack []ast.Node, addr *ast.CallExpr, p *Pair, addrVars map[*types.Var]bool) bool {
	if len(stack) == 0 {
		return false
	}
	parent := stack[len(stack)-1]
	if call, ok := parent.(*ast.CallExpr); ok && a.printOrDial(call, p) {
		return true
	}
	sel, ok := parent.(*ast.SelectorExpr)
	if !ok || sel.X != addr || sel.Sel.Name != "String" && sel.Sel.Name != "Network" || len(stack) < 2 {
		return false
	}
	call, ok := stack[len(stack)-2].(*ast.CallExpr)
	if !ok || call.Fun != sel {
		return false
	}
	p.covered[sel.Sel] = true
	if len(stack) < 3 {
		return false
	}
	switch up := stack[len(stack)-3].(type) {
	case *ast.CallExpr:
		return a.printOrDial(up, p)
	case *ast.AssignStmt:
		v := a.assignedVar(root, call)
		if v == nil || len(up.Lhs) != 1 {
			return false
		}
		addrVars[v] = true
		// The variable is used only as a dial's argument or printed.
		good := true
		match.WithStack(root, func(n ast.Node, st []ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || a.info.Uses[id] != types.Object(v) || !good {
				return good
			}
			c, ok := st[len(st)-1].(*ast.CallExpr)
			good = ok && a.printOrDial(c, p)
			return good
		})
		return good
	}
	return false
}

// printOrDial reports whether call prints its arguments (t.Logf,
// fmt.Sprintf, log.Printf: a name with Log, Print, Error or Fatal) or
// dials (net.Dial, net.DialTimeout).
func (a *Analysis) printOrDial(call *ast.CallExpr, p *Pair) bool {
	for _, d := range p.Dials {
		if d == call {
			return true
		}
	}
	fn := match.Callee(a.info, call)
	if fn == nil {
		return false
	}
	for _, w := range []string{"Log", "Print", "Error", "Fatal", "Skip"} {
		if strings.Contains(fn.Name(), w) {
			return true
		}
	}
	return false
}

// mentions reports whether e names the listener v or a variable holding
// its address.
func (a *Analysis) mentions(e ast.Expr, v *types.Var, addrVars map[*types.Var]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if o, ok := a.info.Uses[id].(*types.Var); ok && (o == v || addrVars[o]) {
				found = true
			}
		}
		return !found
	})
	return found
}

// connUses says why the connection c is not used only as a net.Conn
// whose address nobody reads: its Read, Write, Close and deadline
// methods, passed on, returned or compared with nil; never asserted to a
// concrete type (a *net.TCPConn's options) nor asked LocalAddr or
// RemoteAddr (an in-memory connection's are "pipe"). The net.Conn methods
// it calls are covered by the pair.
func (a *Analysis) connUses(root ast.Node, c *types.Var, p *Pair) string {
	why := ""
	match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || a.info.Uses[id] != types.Object(c) || why != "" {
			return why == ""
		}
		switch parent := stack[len(stack)-1].(type) {
		case *ast.TypeAssertExpr:
			why = "it asserts the connection " + c.Name() + " to a concrete type"
		case *ast.SelectorExpr:
			switch parent.Sel.Name {
			case "Read", "Write", "Close", "SetDeadline", "SetReadDeadline", "SetWriteDeadline":
				p.covered[parent.Sel] = true
			default:
				why = "it calls " + c.Name() + "." + parent.Sel.Name + " (a TCP connection's own behaviour or address)"
			}
		}
		return why == ""
	})
	return why
}

// calleeIdent is the identifier naming call's function (F or pkg.F).
func calleeIdent(call *ast.CallExpr) *ast.Ident {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return f
	case *ast.SelectorExpr:
		return f.Sel
	}
	return nil
}

// serverSeam words, for an httptest server the call named by id starts,
// the seam when the code under test is the server's client: the server's
// URL (or a value made from it) is an argument of a function of the code
// under test. It is "" when no such function is in sight.
func (a *Analysis) serverSeam(id *ast.Ident) string {
	f := a.fileOf(id)
	if f == nil {
		return ""
	}
	path, _ := astutil.PathEnclosingInterval(f, id.Pos(), id.End())
	var call *ast.CallExpr
	var body ast.Node
	for i, n := range path {
		switch n := n.(type) {
		case *ast.CallExpr:
			if call == nil && calleeIdent(n) == id && i+1 < len(path) {
				call = n
			}
		case *ast.FuncLit:
			body = n.Body
		case *ast.FuncDecl:
			body = n.Body
		}
		if body != nil {
			break
		}
	}
	if call == nil || body == nil {
		return ""
	}
	v := a.assignedVar(body, call)
	if v == nil {
		return ""
	}
	// The values made from the server, a few assignments deep.
	vars := map[*types.Var]bool{v: true}
	for range 3 {
		grew := false
		match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for _, r := range as.Rhs {
				if a.mentionsAny(r, vars) {
					for _, l := range as.Lhs {
						if lid, ok := l.(*ast.Ident); ok {
							if lv, ok := a.info.ObjectOf(lid).(*types.Var); ok && !vars[lv] {
								vars[lv], grew = true, true
							}
						}
					}
				}
			}
			return true
		})
		if !grew {
			break
		}
	}
	found := ""
	match.WithStack(body, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if found != "" || !ok {
			return found == ""
		}
		used, ok := a.info.Uses[id].(*types.Var)
		if !ok || !vars[used] {
			return true
		}
		// The calls whose arguments hold the use, innermost first.
		child := ast.Node(id)
		for i := len(stack) - 1; i >= 0 && found == ""; i-- {
			if c, ok := stack[i].(*ast.CallExpr); ok && child != c.Fun {
				if name := a.underTest(c); name != "" {
					found = name + " is given " + used.Name()
					if sel, ok := stack[len(stack)-1].(*ast.SelectorExpr); ok && sel.X == id {
						found += "." + sel.Sel.Name
					}
				}
			}
			child = stack[i]
		}
		return found == ""
	})
	if found == "" {
		return ""
	}
	return "; the code under test is the server's client (" + found + "), making its own HTTP requests: an option that takes an *http.Client (or an http.RoundTripper) would let the test serve it on in-memory connections in a synctest bubble"
}

// underTest names the function call calls when it is code under test: a
// function outside the standard library and the package's test files.
func (a *Analysis) underTest(call *ast.CallExpr) string {
	fn := match.Callee(a.info, call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) || match.IsAssertion(fn.Pkg().Path(), fn.Name()) {
		return ""
	}
	if decl := a.decls[fn.Origin()]; decl != nil && a.inTestFile(decl) {
		return ""
	}
	return match.PkgFuncName(fn)
}

// mentionsAny reports whether e names one of vars.
func (a *Analysis) mentionsAny(e ast.Expr, vars map[*types.Var]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := a.info.Uses[id].(*types.Var); ok && vars[v] {
				found = true
			}
		}
		return !found
	})
	return found
}

// namesLocal reports whether e names a variable that is not
// package-level.
func (a *Analysis) namesLocal(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := a.info.Uses[id].(*types.Var); ok && v.Pkg() != nil && v.Parent() != v.Pkg().Scope() {
				found = true
			}
		}
		return !found
	})
	return found
}

// realNetwork reports whether the target is blocked by the real network
// already (a network hazard met directly or in a summary).
func (t *Target) realNetwork() bool {
	for k := range t.blocked.keys {
		if netKey(k) {
			return true
		}
	}
	for k := range t.unproven.keys {
		if netKey(k) {
			return true
		}
	}
	return false
}

// netKey reports whether k, a reason's key, stands for the real network.
func netKey(k any) bool {
	switch k := k.(type) {
	case string:
		return k == realNetworkKey || strings.HasPrefix(k, "the test uses the real network") || strings.HasPrefix(k, "the test starts a real server")
	case effectKey:
		return k.kind == effect.Network
	}
	return false
}
