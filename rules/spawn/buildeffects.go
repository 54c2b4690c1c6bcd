package spawn

import (
	"fmt"
	"go/ast"
	"slices"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The typed children's code is judged by what it does, not by how it
// spells a path: any write to the file system there keeps the children
// in order (childEffect), because the rule proves no path private to a
// child. The builds the analysis does not type (a file behind a build
// tag, the buggy variant a test exists to catch) and the module's
// packages they import were judged by spelling alone: a string that
// names an absolute path, $TMPDIR or a lock, a call of os.Executable.
// A path built from parts names a shared place as well as a literal
// does, and no list of spellings is complete: the temporary directory
// as filepath.Join(string(filepath.Separator), "tmp", ...), the
// executable as os.Readlink("/proc/self/exe") or os.Stat of
// Join(sep, "proc", "self", "exe"), a memo beside it as that plus
// ".memo". One after another the second child reads the memo the first
// one left; run together both miss it, so a bug only a hit shows passes
// the rewrite. So those builds are held to the typed code's standard,
// read from their syntax: whatever path it names, a write to the file
// system, a listen or a dial, a program run, or a call into code the
// rule cannot read (a package outside the standard library and the
// module, whose writes it cannot see) keeps the children in order. What
// such a build only reads (a stat of its executable, a file of its
// working directory) shares nothing: no child changes it.

// buildWrites are, by package path, the functions and variables of the
// standard library whose use in a build's syntax writes the file system,
// listens or dials, or runs a program: state other processes see.
// Methods cannot be told from syntax; the calls that make what they act
// on (os.OpenFile, os.OpenRoot, http.Client, net.Dial) are listed
// instead.
var buildWrites = map[string][]string{
	"os": append(append([]string(nil), fsWrites...),
		"CopyFS", "OpenRoot", "StartProcess"),
	"io/ioutil":         {"WriteFile", "TempFile", "TempDir"},
	"os/exec":           {"Command", "CommandContext"},
	"net":               {"Listen", "ListenTCP", "ListenUDP", "ListenUnix", "ListenUnixgram", "ListenPacket", "ListenIP", "ListenMulticastUDP", "Dial", "DialTimeout", "DialTCP", "DialUDP", "DialUnix", "DialIP", "Dialer", "ListenConfig", "FileListener", "FileConn"},
	"net/http":          {"Get", "Post", "Head", "PostForm", "ListenAndServe", "ListenAndServeTLS", "Serve", "ServeTLS", "Client", "DefaultClient", "Transport", "DefaultTransport", "Server"},
	"net/http/httptest": {"NewServer", "NewTLSServer", "NewUnstartedServer"},
	"net/rpc":           {"Dial", "DialHTTP", "DialHTTPPath"},
	"net/smtp":          {"Dial", "SendMail"},
	"net/textproto":     {"Dial"},
	"crypto/tls":        {"Dial", "DialWithDialer", "Listen", "Dialer"},
	"log/syslog":        {"New", "Dial", "NewLogger"},
	"plugin":            {"Open"},
}

// buildEffectIn returns the first use in root, syntax of a file that
// imports imports, that writes the file system, listens or dials, runs a
// program, or calls a package outside the standard library and the
// module modPath (whose packages the caller reads from their syntax); or
// nil. It does not judge system call packages: sharedPlaceIn does.
func buildEffectIn(root ast.Node, imports map[string]string, modPath string) *placeAt {
	var at *placeAt
	ast.Inspect(root, func(n ast.Node) bool {
		if at != nil {
			return false
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		path, name := imports[x.Name], sel.Sel.Name
		switch {
		case path == "":
		case slices.Contains(buildWrites[path], name):
			at = &placeAt{fmt.Sprintf("%s.%s, which %s at a place the rule cannot show is the child's own", path, name, buildWriteWhat(path, name)), sel.Pos()}
		case match.IsStd(path), path == "syscall", strings.HasPrefix(path, "golang.org/x/sys/"),
			modPath != "" && (path == modPath || strings.HasPrefix(path, modPath+"/")),
			match.IsAssertion(path, name):
		default:
			at = &placeAt{fmt.Sprintf("%s.%s, code outside the standard library and the module whose writes the rule cannot read", path, name), sel.Pos()}
		}
		return at == nil
	})
	return at
}

// buildWriteWhat says what a use of buildWrites' path.name does.
func buildWriteWhat(path, name string) string {
	switch {
	case path == "os" && name == "StartProcess":
		return "runs a program"
	}
	switch path {
	case "os", "io/ioutil":
		return "writes the file system"
	case "os/exec":
		return "runs a program"
	case "plugin":
		return "loads code"
	}
	return "listens or dials"
}
