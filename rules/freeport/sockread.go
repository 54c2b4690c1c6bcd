package freeport

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/internal/modsrc"
)

// The reads of an address codeReadsPort names (Addr(), LocalAddr(),
// RemoteAddr(), a request's Host) are the net package's own. Below them
// the socket is a file descriptor, and the code learns the address it is
// bound to by the descriptor as well (red team batch 18): through the
// raw socket (SyscallConn, then syscall.Getsockname in Control's
// callback), through the listener's File(), whose name is the address
// ("tcp:127.0.0.1:7790->") and whose Fd() a syscall takes, through
// /proc/self/fd and /proc/net/tcp (a socket's inode, then its local
// port), through a command that lists sockets (ss, lsof), or through
// reflect into net's internals (a netFD's laddr). A daemon that refuses
// the kernel's ephemeral range (32768-60999) refuses every port the
// system picks; a "privileged" check by the digits of the port never
// refuses one. None of these has a neutral use the rule could
// prove from the syntax (a descriptor handed on is read wherever it
// goes), so the rule counts each as the code reading the port: any of
// them in the code the tests run, the tests themselves included (a test
// that hands its listener's File() to the code, or to a child process),
// keeps every listen of the package fixed.

// syscallPkgs are the packages whose names reach the socket's
// descriptor below net.
var syscallPkgs = map[string]bool{"syscall": true, "golang.org/x/sys/unix": true, "golang.org/x/sys/windows": true}

// netInternals are the names, given to reflect's FieldByName or
// MethodByName, that reach a socket's descriptor or its address inside
// net's types.
var netInternals = map[string]bool{
	"fd": true, "pfd": true, "Sysfd": true, "laddr": true, "raddr": true,
	"File": true, "SyscallConn": true, "Addr": true, "LocalAddr": true, "RemoteAddr": true,
}

// socketReads returns where the code the tests run (every file of the
// package's directory, every build, its tests too; the module's packages
// they import) reaches a socket's descriptor or its address below net's
// Addr methods (socketRead), or "". Read once per package.
func (c *checker) socketReads() string {
	if c.sockRead != nil {
		return *c.sockRead
	}
	found := ""
	m := modsrc.Reach(c.pass.Fset, c.pass.AllFiles)
	for _, p := range m.Packages {
		for _, f := range p.Files {
			if found != "" || f.Syntax == nil {
				continue // a file that does not parse is codeReadsPort's
			}
			match.WithStack(f.Syntax, func(n ast.Node, stack []ast.Node) bool {
				if found != "" {
					return false
				}
				if e, what := socketRead(n, f, stack); what != "" {
					found = fmt.Sprintf("%s at %s, %s", e, m.Where(n.Pos()), what)
				}
				return found == ""
			})
		}
	}
	c.sockRead = &found
	return found
}

// socketRead returns what n, syntax of f (stack its ancestors), does to
// reach a socket's descriptor or address below net's Addr methods (e the
// expression, what a word on it), or "".
func socketRead(n ast.Node, f *modsrc.File, stack []ast.Node) (e, what string) {
	switch n := n.(type) {
	case *ast.CallExpr:
		sel, ok := n.Fun.(*ast.SelectorExpr)
		if !ok {
			return "", ""
		}
		// A listener's or connection's File(), by name: an interface of
		// the module's own (interface{ File() (*os.File, error) }) may
		// call it as well as a *net.TCPListener.
		if sel.Sel.Name == "File" && len(n.Args) == 0 {
			return types.ExprString(n), "a socket's file, whose name holds its address (\"tcp:127.0.0.1:8080->\") and whose descriptor gives it to Getsockname"
		}
		if x, ok := sel.X.(*ast.Ident); ok && f.Imports[x.Name] == "os/exec" && strings.HasPrefix(sel.Sel.Name, "Command") {
			for _, a := range n.Args {
				if s, ok := stringLit(a); ok && socketTool(s) {
					return types.ExprString(n), "a command that lists the process's sockets with their ports"
				}
			}
		}
		if (sel.Sel.Name == "FieldByName" || sel.Sel.Name == "MethodByName") && len(n.Args) == 1 && importsAny(f, "reflect") {
			if s, ok := stringLit(n.Args[0]); ok && netInternals[s] {
				return types.ExprString(n), "reflection into a socket's descriptor or address"
			}
		}
	case *ast.SelectorExpr:
		switch n.Sel.Name {
		case "SyscallConn":
			return types.ExprString(n), "a socket's raw descriptor, which Getsockname and Getpeername read the address from"
		case "File":
			// A method expression, (*net.TCPListener).File.
			if p, ok := ast.Unparen(n.X).(*ast.StarExpr); ok {
				if t, ok := p.X.(*ast.SelectorExpr); ok && isPkg(t.X, f, "net") {
					return types.ExprString(n), "a socket's file, whose name holds its address"
				}
			}
		}
		x, ok := n.X.(*ast.Ident)
		if !ok || !syscallPkgs[f.Imports[x.Name]] {
			return "", ""
		}
		if what := descriptorRead(n.Sel.Name); what != "" {
			return types.ExprString(n), what
		}
	case *ast.BasicLit:
		if n.Kind != token.STRING {
			return "", ""
		}
		s, err := strconv.Unquote(n.Value)
		if err != nil {
			return "", ""
		}
		if procPath(s) || s == "proc" && joinedPath(stack) {
			return n.Value, "a path under /proc or /dev/fd, where a socket's descriptor (/proc/self/fd) and its local port (/proc/net/tcp) can be read"
		}
	}
	return "", ""
}

// descriptorRead says what name, of syscall or x/sys, does with a
// socket's descriptor or address, or "": Getsockname and Getpeername
// (and SYS_GETSOCKNAME for a raw syscall), the calls that return a
// peer's Sockaddr (Recvfrom, Recvmsg, Accept), the Sockaddr types a port
// is read from, the raw Conn types (Control's descriptor), and the raw
// Syscall functions, whose call the rule cannot name.
func descriptorRead(name string) string {
	lower := strings.ToLower(name)
	switch {
	case strings.Contains(lower, "sockname"), strings.Contains(lower, "peername"),
		strings.HasPrefix(name, "Recv"), strings.HasPrefix(name, "Accept"):
		return "a socket's address read from its descriptor"
	case strings.Contains(lower, "sockaddr"):
		return "a socket's address as the kernel gives it, port included"
	case name == "Conn", name == "RawConn":
		return "a socket's raw descriptor, which Getsockname and Getpeername read the address from"
	case strings.HasPrefix(name, "Syscall"), strings.HasPrefix(name, "RawSyscall"):
		return "a raw system call, which may read a socket's address (SYS_GETSOCKNAME)"
	}
	return ""
}

// socketTools are commands that list a process's sockets, local ports
// included.
var socketTools = map[string]bool{"ss": true, "netstat": true, "lsof": true, "fuser": true, "sockstat": true}

// socketTool reports whether s, an argument of a command (a shell's
// script included: "ss -ltnp | grep myd"), runs one of socketTools.
func socketTool(s string) bool {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '|' || r == ';' || r == '&' || r == '/' || r == '\t' }) {
		if socketTools[w] {
			return true
		}
	}
	return false
}

// procPath reports whether s is a path under /proc or /dev/fd.
func procPath(s string) bool {
	for _, root := range []string{"/proc", "/dev/fd"} {
		if s == root || strings.HasPrefix(s, root+"/") {
			return true
		}
	}
	return false
}

// joinedPath reports whether the node stack ends in is an argument of a
// Join (filepath.Join("/", "proc", "net", "tcp")).
func joinedPath(stack []ast.Node) bool {
	if len(stack) == 0 {
		return false
	}
	call, ok := stack[len(stack)-1].(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Join"
}

// stringLit returns the value of e, a string literal.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
