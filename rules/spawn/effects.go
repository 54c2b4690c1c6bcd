package spawn

import (
	"fmt"
	"go/ast"

	"github.com/unflake/unflake/internal/match"
)

// Independence is shown, not inferred from the absence of a shared
// literal: a pid file named filepath.Join(wd, base(os.Args[0])+hash)
// holds no string two children have in common, yet both children build
// the same path and race for it (O_EXCL). When the child is the test
// binary its code is readable (the tests -test.run selects, TestMain,
// init and the package functions they call), so any write to the file
// system, network listen or dial, or environment write there is taken as
// shared between the children. Telling a path derived from a per-child
// argument apart from a shared one is not attempted: such children stay
// one after another.

// fsWrites are the os functions that write, create or remove a file or
// directory.
var fsWrites = []string{"Create", "OpenFile", "WriteFile", "Mkdir", "MkdirAll", "MkdirTemp", "CreateTemp", "Remove", "RemoveAll", "Rename", "Symlink", "Link", "Chmod", "Chtimes", "Truncate", "Lchown", "Chown"}

// netCalls are the functions that listen on or dial an address.
var netCalls = map[string][]string{
	"net":               {"Listen", "ListenTCP", "ListenUDP", "ListenUnix", "ListenUnixgram", "ListenPacket", "ListenIP", "ListenMulticastUDP", "Dial", "DialTimeout", "DialTCP", "DialUDP", "DialUnix", "DialIP"},
	"net/http":          {"Get", "Post", "Head", "PostForm", "ListenAndServe", "ListenAndServeTLS", "Serve"},
	"net/http/httptest": {"NewServer", "NewTLSServer", "NewUnstartedServer"},
}

// childEffect says where the code a test-binary child runs writes a file,
// listens or dials, or writes the environment, or "".
func (c *checker) childEffect(u *unit) string {
	const flake = "running them together may flake where a few runs pass"
	var why string
	for _, fd := range c.childCode(u) {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || why != "" {
				return why == ""
			}
			switch {
			case match.IsPkgFunc(c.info, call, "os", fsWrites...):
				why = fmt.Sprintf("the children's code writes the file system (os.%s at %s) at a path the rule cannot show differs per child: two children may race for it (a pid file, a lock, a cache), and %s", match.Callee(c.info, call).Name(), c.line(call), flake)
			case match.IsPkgFunc(c.info, call, "os", "Setenv", "Unsetenv", "Clearenv"):
				why = fmt.Sprintf("the children's code writes the environment (os.%s at %s), which may name what they share, and %s", match.Callee(c.info, call).Name(), c.line(call), flake)
			case c.isNetCall(call):
				why = fmt.Sprintf("the children's code listens or dials (%s at %s): they may reach the same server or bind the same address, which sees them in the order they come, and %s", match.Callee(c.info, call).Name(), c.line(call), flake)
			}
			return why == ""
		})
		if why != "" {
			return why
		}
	}
	return ""
}

func (c *checker) isNetCall(call *ast.CallExpr) bool {
	for pkg, names := range netCalls {
		if match.IsPkgFunc(c.info, call, pkg, names...) {
			return true
		}
	}
	return match.IsMethod(c.info, call, "net/http", "Do", "Get", "Post", "Head", "PostForm") ||
		match.IsMethod(c.info, call, "net", "Dial", "DialContext", "Listen", "ListenPacket")
}
