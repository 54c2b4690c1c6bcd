package freeport

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The paths hazards of moving a listener to a port the system picks: the
// fixed port (or its host) reaching something besides the listen call and
// the uses the fix points at the listener. Each makes the rewritten test
// fail on correct code (the other copy still names the old port) or test
// something else (a certificate for another name, a Host guard that lets
// an IP through).

// hazardsChecked are the hazards plan excludes, for rule.Change.Checked.
var hazardsChecked = []string{
	"no other listen site of the package on the port, and no helper listening on it called from more than one function (tests sharing the address)",
	"the listener's address reaches no code under test together with another listener's (a ring of peers hashing their addresses)",
	"the address reaches only dials, listens and HTTP clients (followed through variables, literals, fields and the package's functions)",
	"in the files of other builds, the functions and fields the address reaches use it only as an address (a dial, a listen, an HTTP client, a message, an equality with the same address; no order, minimum, hash, key, length, split or suffix): the port's value is no part of what the test exercises",
	"the port in no file of the package's directory (testdata)",
	"the port as no constant value (8000+125, strconv.Itoa, fmt.Sprintf, net.JoinHostPort of constants) in the package's files of other builds nor in the module's packages it imports",
	"no port near it in the package (a port derived from it) and no arithmetic on a port in the code",
	"the host as written (a name, not an IP ln.Addr() would give)",
	"the listener or its address is handed to the code under test, or the package links no package of another module (whose default port the rule does not read)",
	"no code the tests run (every build, the module's packages) reads a listener's, connection's or request's address back as a value (ln.Addr().(*net.TCPAddr).Port, conn.RemoteAddr() split, r.Host), and the test reads its listener's port only as text for a dial: the port's value is no part of what the test exercises",
	"the address reaches the code as text by no route but neutral ones: messages only where no code reads them (no logger on a writer or handler of the code, no os.Stdout or os.Stderr reassigned, no error text read but to print it), requests through no client with a proxy or a dial hook, and a server's request read only in the fields that never hold the address (no RequestURI, whole URL, whole Header, DumpRequest)",
	"no code the tests run (the tests included) reaches a socket below net's Addr methods: no File() (a socket's file, named after its address), no SyscallConn, no syscall or x/sys Getsockname, Getpeername, Sockaddr, raw Conn or raw Syscall, no path under /proc or /dev/fd, no command that lists sockets (ss, lsof), no reflection into net's internals",
	"no code the tests run reads an address's host or port as text (a URL's Host, Port() or Hostname(), net.SplitHostPort but of an accepted connection's remote address, a *net.TCPAddr or *net.UDPAddr), whatever route the address takes there (an HTTP client's transport, the environment, a body or a file), and the test hands the address to no environment variable nor writer",
}

// maxScanned bounds the files and bytes hazardFiles reads in a package's
// directory: a fixture tree of thousands of files is not read whole.
const (
	maxScannedFiles = 500
	maxScannedBytes = 1 << 20
)

// inFiles returns the path (relative to the package directory) of a file
// under the package's directory, other than the Go files the rule reads,
// that holds port as a run of digits: a testdata config or fixture the
// code under test may read, which would still name the old port. Or "".
func (c *checker) inFiles(port string) string {
	if c.fileText == nil {
		c.readDir()
	}
	for _, f := range c.fileText {
		if hasPort(f.text, port) {
			return f.rel
		}
	}
	return ""
}

type dirFile struct{ rel, text string }

// readDir reads the package directory's files once: every regular file
// under it other than the Go files the rule already reads (so files of
// other build tags count too), hidden directories skipped.
func (c *checker) readDir() {
	c.fileText = []dirFile{}
	read := map[string]bool{}
	dir := ""
	for _, f := range c.pass.AllFiles {
		name := c.pass.Fset.File(f.Pos()).Name()
		read[name] = true
		dir = filepath.Dir(name)
	}
	if dir == "" {
		return
	}
	n := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if path != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if read[path] || !d.Type().IsRegular() {
			return nil
		}
		if strings.HasSuffix(path, ".go.golden") {
			// The expected output of a Go file (analysistest's suggested
			// fixes, golden-file tests of this very rewrite): not data
			// the code under test reads.
			return nil
		}
		if n++; n > maxScannedFiles {
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil || info.Size() > maxScannedBytes {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		c.fileText = append(c.fileText, dirFile{rel: filepath.ToSlash(rel), text: string(b)})
		return nil
	})
}

// nearPorts is how far from the listened port a mention counts as a port
// derived from it (an admin API on port+1, a gossip port on port+2).
const nearPorts = 10

// derived returns why a port near s's (within nearPorts) that the package
// or its directory's files mention may be derived from it, or why the
// code computes a port, or "". A neighbour the package listens on itself
// is a port of its own (two peers on 18309 and 18310).
func (c *checker) derived(s *site) string {
	n, err := strconv.Atoi(s.port)
	if err != nil {
		return ""
	}
	for k := -nearPorts; k <= nearPorts; k++ {
		p := n + k
		if k == 0 || p <= 0 || p > 65535 {
			continue
		}
		near := strconv.Itoa(p)
		if c.listened(near) {
			continue // a fixed port of its own: its listen is a site, checked on its own
		}
		for _, d := range c.mentioning(near) {
			where := "a package-level variable"
			if fd, ok := d.(*ast.FuncDecl); ok {
				where = fd.Name.Name
			}
			return fmt.Sprintf("port %s, %+d from the listened port %s, appears in %s (%s): a port the code may derive from the listener's, which would no longer be there", near, k, s.port, where, c.where(d.Pos()))
		}
		if f := c.inFiles(near); f != "" {
			return fmt.Sprintf("port %s, %+d from the listened port %s, appears in %s: a port the code may derive from the listener's, which would no longer be there", near, k, s.port, f)
		}
	}
	if at := c.portArith(); at != "" {
		return "the code computes a port by arithmetic (" + at + "): it may derive one from the listener's, and the test may name the result"
	}
	return ""
}

// portArith returns the place of the first sum or difference in the
// package whose operand is an integer named port (a variable, a field
// such as addr.Port): port+1, Port-offset. Or "".
func (c *checker) portArith() string {
	if c.arith != nil {
		return *c.arith
	}
	found := ""
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			b, ok := n.(*ast.BinaryExpr)
			if !ok || found != "" || b.Op != token.ADD && b.Op != token.SUB {
				return found == ""
			}
			for _, x := range []ast.Expr{b.X, b.Y} {
				if c.portInt(x) {
					found = fmt.Sprintf("%s at %s", types.ExprString(b), c.where(b.Pos()))
				}
			}
			return found == ""
		})
	}
	c.arith = &found
	return found
}

// portInt reports whether e is an integer variable or field whose name
// says it is a port.
func (c *checker) portInt(e ast.Expr) bool {
	var id *ast.Ident
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	default:
		return false
	}
	if !strings.Contains(strings.ToLower(id.Name), "port") {
		return false
	}
	if _, ok := c.info.Uses[id].(*types.Var); !ok {
		return false
	}
	b, ok := c.info.TypeOf(e).Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// namedHost returns why the test's later uses of the address may not
// become ln.Addr().String(): the address names its host (localhost, a
// DNS name), and Addr() gives an IP, so a certificate made for the name,
// a Host guard or a virtual host would see another host. Or "".
//
// An empty or unspecified host (":8080", "0.0.0.0:8080", "[::]:8080") is
// no better: the listener's address is then "[::]:P" (or "0.0.0.0:P"),
// and a client dialing it may reach the server over another family than
// the test's ":8080" did (::1 for 127.0.0.1), so code that looks at the
// client's address (an allow-list, a per-IP limit, a log) takes another
// path for every implementation that looks.
func namedHost(s *site) string {
	ip := net.ParseIP(strings.Trim(s.host, "[]"))
	if s.host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Sprintf("the test reaches the listener at %q, an unspecified host, and the listener's address would name \"[::]\" or \"0.0.0.0\": a client dialing it may connect over another address family (from ::1 instead of 127.0.0.1), which code that checks the client's address sees; listen on a loopback address (127.0.0.1) to let the rule fix it", s.addr)
	}
	if ip != nil {
		return ""
	}
	return fmt.Sprintf("the test reaches the listener by the name %q, and the listener's address would give an IP: a certificate for the name, a Host check or a virtual host would see another host", s.host)
}

// where words pos as file:line, the file's base name.
func (c *checker) where(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// listened reports whether some test of the package listens on port.
func (c *checker) listened(port string) bool {
	for _, s := range c.sites {
		if s.port == port {
			return true
		}
	}
	return false
}

// shared returns why s's fixed port is one the package's tests share, or
// "": another function's listen site on the same port (another test, a
// helper), or a helper holding s that more than one function calls. (A
// listen again in s's own function, a restart, is an address use the fix
// points at s's listener, so the two still share one port; plan refuses
// the fix where it cannot.) On a shared fixed port each test
// sees what the one before left behind: a connection a per-address pool
// kept, a listener a bug never closed, so the next listen fails. With a
// port the system picks per listen the address changes between them, and
// those bugs no longer show. (Listens in files the build leaves out are
// valueElsewhere's: any mention of the port there keeps it.)
func (c *checker) shared(s *site) string {
	for _, o := range c.sites {
		// A listen again in the same function (a restart) is one of the
		// uses the fix points at the listener: it keeps the shared port.
		if o != s && o.port == s.port && o.fd != s.fd {
			return fmt.Sprintf("port %s is also listened on at %s (%s): the tests share the fixed address, and what one leaves on it (a pooled connection, a listener never closed) is part of what the next observes; a port the system picks per listen would hide it", s.port, c.where(o.call.Pos()), o.fd.Name.Name)
		}
	}
	if inLoop(s.fd, s.call) {
		return fmt.Sprintf("%s listens on port %s in a loop: each pass shares the fixed address, and what one leaves on it (a pooled connection, a listener never closed) is part of what the next observes; a port the system picks per listen would hide it", s.fd.Name.Name, s.port)
	}
	if strings.HasPrefix(s.fd.Name.Name, "Test") {
		return ""
	}
	fn, _ := c.info.Defs[s.fd.Name].(*types.Func)
	if fn == nil {
		return ""
	}
	// Count the calls, not the callers: two calls in one test, or one in a
	// loop (a table's subtests run one after another), listen on the port
	// as often as two tests do.
	var callers []string
	calls := 0
	for _, f := range c.pass.AllFiles {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd == s.fd {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok || c.info.Uses[id] != fn {
					return true
				}
				if !slices.Contains(callers, fd.Name.Name) {
					callers = append(callers, fd.Name.Name)
				}
				calls++
				if inLoop(fd, id) {
					calls++ // a loop calls it again, after the last call
				}
				return true
			})
		}
	}
	switch {
	case len(callers) > 1:
		return fmt.Sprintf("%s listens on port %s and is called from %s and %s: the tests share the fixed address, and what one leaves on it (a pooled connection, a listener never closed) is part of what the next observes; a port the system picks per listen would hide it", s.fd.Name.Name, s.port, callers[0], callers[1])
	case calls > 1:
		return fmt.Sprintf("%s listens on port %s and %s calls it more than once (twice, or in a loop): the calls share the fixed address, and what one leaves on it (a pooled connection, a listener never closed) is part of what the next observes; a port the system picks per listen would hide it", s.fd.Name.Name, s.port, callers[0])
	}
	return ""
}

// inLoop reports whether n runs again after itself in fd: it lies in a
// loop's body, and not in a subtest that runs in parallel (calls there run
// together, and a shared port fails the original itself) unless it
// serialises them.
func inLoop(fd *ast.FuncDecl, n ast.Node) bool {
	loop, together := false, false
	ast.Inspect(fd.Body, func(m ast.Node) bool {
		if m == nil || m.Pos() > n.Pos() || n.End() > m.End() {
			return false // only the nodes that hold n
		}
		switch m := m.(type) {
		case *ast.ForStmt:
			loop = loop || m.Body.Pos() <= n.Pos()
		case *ast.RangeStmt:
			loop = loop || m.Body.Pos() <= n.Pos()
		case *ast.FuncLit:
			together = together || callsParallel(m.Body) && !serialises(m.Body)
		}
		return true
	})
	return loop && !together
}

// callsParallel reports whether body calls a Parallel method (t.Parallel())
// outside nested function literals.
func callsParallel(body *ast.BlockStmt) bool {
	return outsideLits(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 0 {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Parallel"
	})
}

// serialises reports whether body takes a lock (x.Lock()) or sends on a
// channel (a semaphore) outside nested function literals: parallel
// subtests that serialise their listens on one mutex pass on a shared
// fixed port, one after another, and each sees what the one before left
// on it (an idle pooled connection whose server is gone: red team batch
// 14, stalemap2), so they run again as a loop's sequential calls do.
func serialises(body *ast.BlockStmt) bool {
	return outsideLits(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.SendStmt); ok {
			return true
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 0 {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Lock"
	})
}

// outsideLits reports whether is holds for a node of body outside nested
// function literals.
func outsideLits(body *ast.BlockStmt, is func(ast.Node) bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || found {
			return false
		}
		found = n != nil && is(n)
		return !found
	})
	return found
}

// unreached returns why nothing but the fixed port leads the code under
// test to s's listener, held in ln, or "": the test uses the address
// nowhere else (edits), uses the listener for more than closing it (it
// accepts, reads or serves), and neither the listener nor its address
// reaches code under test (an argument of its functions, an element of a
// literal). Then
// only code that knows the port by itself reaches the listener: a default
// agent address, a port derived from another, a second process, or a
// listen that must find the port taken. On a port the system picks that
// code no longer would: a check that nothing arrives there passes
// whatever the code sends, and one that something does fails on correct
// code.
func (c *checker) unreached(s *site, ln *types.Var, edits int) string {
	if edits > 0 || s.http || ln == nil {
		return c.nearUnreached(s)
	}
	c.indexFlow()
	if c.reachesCode(s.call, ln, s.fd) != "" {
		return ""
	}
	// A listener the test only closes holds the port, and nothing reads
	// what arrives on it.
	if !c.usedBeyondClose(ln, s.fd) {
		return c.nearUnreached(s)
	}
	return fmt.Sprintf("nothing hands the listener or its address to the code under test: only code that knows port %s by itself reaches it (a default address, a port derived from another, a listen that must find it taken), and on a port the system picks a check that nothing arrives passes whatever the code sends", s.port)
}

// nearUnreached returns why a listener of s's function on a port near
// s's (within nearPorts) keeps its fixed port because only code that
// knows the port reaches it, or "". The two ports' distance is then part
// of what the test observes (a client that wrongly sends to the given
// port + 1, the quiet trace port): moving s's port alone would move
// where such a bug sends, away from the listener that watches for it.
func (c *checker) nearUnreached(s *site) string {
	c.indexFlow() // listenerVar and reachesCode read the index
	p, _ := strconv.Atoi(s.port)
	for _, o := range c.sites {
		q, err := strconv.Atoi(o.port)
		if o == s || o.fd != s.fd || err != nil || q == p || q < p-nearPorts || q > p+nearPorts {
			continue
		}
		edits := 0
		for _, u := range c.uses(o.fd, o.port) {
			if o.arg == nil || u.expr.Pos() < o.arg.Pos() || o.arg.End() < u.expr.End() {
				edits++
			}
		}
		if edits > 0 || o.http {
			continue
		}
		ln := c.listenerVar(o.call)
		if ln == nil || c.reachesCode(o.call, ln, o.fd) != "" {
			continue
		}
		if c.usedBeyondClose(ln, o.fd) {
			return fmt.Sprintf("the listener on port %s (%s), near this one, is reached only by code that knows its fixed port and keeps it: the distance between the two ports is part of what the test observes (a send to the given port + 1), and moving this port alone would move where such a bug sends", o.port, c.where(o.call.Pos()))
		}
	}
	return ""
}

// The port may hide in code the rule does not read: a package of another
// module (a statsd reporter's default agent address, a replaced fork, a
// dependency in the module cache) is code the test binary links, and its
// default may be the test's fixed port spelt any way (base+offset). The
// module scan (valueElsewhere) reads the main module only. So when the
// package links a package of another module and the test hands the
// listener (or its address) to no code under test, only such a default
// may lead that code to the listener: moved, the fake no longer sees
// what the code sends, and a check that nothing arrives passes whatever
// it sends.

// foreignDefault returns why a package of another module the package
// links may hold s's port as its default, or "": the test hands neither
// the listener nor its address to code under test (an argument of a
// function outside the standard library), and the package links a
// package outside the main module and the standard library; or the test
// hands it, and the code names an address of such a package
// (foreignAddress).
func (c *checker) foreignDefault(s *site, ln *types.Var, edits []ast.Expr) string {
	if c.scan == nil {
		c.scan = c.newScan()
	}
	handed := func() string {
		if at := c.foreignAddress(); at != "" {
			return fmt.Sprintf("the code under test names %s, an address of another module the rule does not read: it may be port %s spelt any way, and code that sends to it as well as to the address it is given (a mirror to the node's agent) reaches the listener twice only on the fixed port", at, s.port)
		}
		return ""
	}
	if ln != nil {
		c.indexFlow()
		if c.reachesCode(s.call, ln, s.fd) != "" {
			return handed()
		}
	}
	for _, e := range edits {
		if c.handedToCode(e) {
			return handed()
		}
	}
	inModule := func(path string) bool {
		mp := c.scan.modPath
		return mp != "" && (path == mp || strings.HasPrefix(path, mp+"/"))
	}
	foreign := ""
	seen := map[*types.Package]bool{}
	var walk func(p *types.Package)
	walk = func(p *types.Package) {
		for _, imp := range p.Imports() {
			if seen[imp] || foreign != "" {
				continue
			}
			seen[imp] = true
			if path := imp.Path(); !inModule(path) && !match.IsStd(path) && path != "C" {
				foreign = path
				return
			}
			walk(imp)
		}
	}
	walk(c.pass.Pkg)
	if foreign == "" {
		return ""
	}
	return fmt.Sprintf("the package links %s, a package of another module the rule does not read, and the test hands neither the listener nor its address to the code under test: a default there (an agent's address) may be port %s spelt any way, which only the fixed port lets the code reach; on a port the system picks the listener no longer sees what it sends, and a check that nothing arrives passes whatever it sends", foreign, s.port)
}

// handedToCode reports whether e, a use of the address in the test, is
// given (directly, or as part of a sum) to a function outside the
// standard library.
func (c *checker) handedToCode(e ast.Expr) bool {
	c.indexFlow()
	for {
		switch p := c.parent[e].(type) {
		case *ast.ParenExpr:
			e = p
		case *ast.BinaryExpr:
			e = p
		case *ast.CallExpr:
			if p.Fun == e {
				return false
			}
			fn := match.Callee(c.info, p)
			return fn == nil || fn.Pkg() == nil || !match.IsStd(fn.Pkg().Path())
		default:
			return false
		}
	}
}

// usedBeyondClose reports whether fd uses the listener held in ln for more
// than closing it (it accepts, reads, serves, or hands it on).
func (c *checker) usedBeyondClose(ln *types.Var, fd *ast.FuncDecl) bool {
	for _, id := range c.usesOf[ln] {
		if id.Pos() < fd.Pos() || id.End() > fd.End() {
			continue
		}
		if sel, ok := c.parent[id].(*ast.SelectorExpr); ok && sel.X == id && sel.Sel.Name == "Close" {
			continue
		}
		return true
	}
	return false
}

// addressWords are the parts of a name that say it holds an address.
var addressWords = []string{"addr", "port", "host", "endpoint", "url", "target", "agent", "server"}

// foreignAddress returns where a file of the package, in any build, or of
// a package of the module it links, names a value (not a call) of a
// package of another module whose name says it is an address
// (statsdkit.DefaultAddr at flush.go:12), or "". The test handing its
// address to the code does not exclude such a default: a bug that sends
// to both the address it is given and the default reaches a listener on
// the default's port twice, and on a port the system picks once (red
// team batch 14, agentmirror2).
func (c *checker) foreignAddress() string {
	m := c.scan
	foreign := func(path string) bool {
		return path != "" && !match.IsStd(path) && path != "C" && !(m.modPath != "" && (path == m.modPath || strings.HasPrefix(path, m.modPath+"/")))
	}
	for _, dir := range slices.Sorted(maps.Keys(m.pkgs)) {
		p := m.pkgs[dir]
		for _, f := range p.files {
			imports := p.imports[f]
			var at *ast.SelectorExpr
			var look func(n ast.Node) bool
			look = func(n ast.Node) bool {
				if at != nil {
					return false
				}
				if call, ok := n.(*ast.CallExpr); ok {
					// The callee is not a value; its arguments may be.
					for _, a := range call.Args {
						ast.Inspect(a, look)
					}
					if _, ok := call.Fun.(*ast.SelectorExpr); !ok {
						ast.Inspect(call.Fun, look)
					}
					return false
				}
				at = foreignAddrSel(n, imports, foreign)
				return at == nil
			}
			ast.Inspect(f, look)
			if at != nil {
				return fmt.Sprintf("%s at %s", types.ExprString(at), m.where(at))
			}
		}
	}
	return ""
}

// foreignAddrSel returns n when it selects an address-named value of an
// imported package foreign says is another module's, or nil.
func foreignAddrSel(n ast.Node, imports map[string]string, foreign func(string) bool) *ast.SelectorExpr {
	sel, ok := n.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || !foreign(imports[x.Name]) || !ast.IsExported(sel.Sel.Name) {
		return nil
	}
	name := strings.ToLower(sel.Sel.Name)
	for _, w := range addressWords {
		if strings.Contains(name, w) {
			return sel
		}
	}
	return nil
}
