package spawn

import (
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// Code that runs between two children (the checks of the first one's
// result) moves to after both have run, so it must not change anything a
// child could see: it must be quiet. Quiet code calls only functions
// without side effects outside the test (the ones below, the testing
// methods other than those that change the process, and package functions
// that are quiet themselves), starts no goroutine, sends on no channel and
// writes no package-level variable.

// quietPkgs are the standard library packages whose functions and methods
// have no effect a child process could see.
var quietPkgs = map[string]bool{
	"bytes": true, "cmp": true, "context": true, "errors": true, "fmt": true,
	"iter": true, "maps": true, "math": true, "math/bits": true, "path": true,
	"path/filepath": true, "regexp": true, "slices": true, "sort": true,
	"strconv": true, "strings": true, "unicode": true, "unicode/utf8": true,
	"encoding/json": true, "encoding/hex": true, "encoding/base64": true,
	"reflect": true, "time": true, "bufio": true, "io": true, "runtime": true,
}

// osReads are the functions and methods of package os that only read.
var osReads = map[string]bool{
	"Getenv": true, "LookupEnv": true, "Environ": true, "Getwd": true,
	"ReadFile": true, "ReadDir": true, "Stat": true, "Lstat": true,
	"Executable": true, "TempDir": true, "Getpid": true, "Hostname": true,
	"IsNotExist": true, "IsExist": true, "ExpandEnv": true,
	// *os.ProcessState and *os.File (read side) methods.
	"ExitCode": true, "Success": true, "Exited": true, "String": true,
	"Pid": true, "SystemTime": true, "UserTime": true, "Sys": true, "Name": true,
}

// testingOnTest are testing methods a check may call; any other (Setenv,
// Chdir, Parallel) changes what a child sees or how the test runs.
func testingQuiet(name string) bool {
	switch name {
	case "Setenv", "Chdir", "Parallel":
		return false
	}
	return true
}

// callEffect returns "" when call is quiet, else a phrase completing "the
// code ...". onTest says the code runs on the test goroutine, where
// testing's methods may be called; elsewhere only functions without
// effects are quiet.
func (c *checker) callEffect(call *ast.CallExpr, onTest bool) string {
	if tv, ok := c.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
		return ""
	}
	fn := match.Callee(c.info, call)
	if fn == nil {
		if _, ok := ast.Unparen(call.Fun).(*ast.FuncLit); ok {
			return "" // its body is inspected where it stands
		}
		return "calls a function value the analysis cannot see"
	}
	fn = fn.Origin()
	if fn.Pkg() == nil {
		return "" // error.Error
	}
	path, name := fn.Pkg().Path(), fn.Name()
	sig := fn.Type().(*types.Signature)
	if recv := sig.Recv(); recv != nil && types.IsInterface(recv.Type()) && !(path == "fmt" && name == "String") {
		return "calls " + match.PkgFuncName(fn) + " through an interface"
	}
	switch {
	case path == "testing":
		if onTest && testingQuiet(name) {
			return ""
		}
		return "calls t." + name
	case quietPkgs[path]:
		return ""
	case path == "os":
		if osReads[name] {
			return ""
		}
	case path == "os/exec":
		switch name {
		case "Command", "CommandContext", "String", "Environ", "Error", "Unwrap", "LookPath":
			// Making a command starts nothing.
			return ""
		}
	case match.IsAssertion(path, name):
		if onTest {
			return ""
		}
		return "calls " + match.PkgFuncName(fn)
	case fn.Pkg() == c.pass.Pkg:
		if w := c.funcEffect(fn, onTest); w != "" {
			return "calls " + name + ", which " + w
		}
		return ""
	case !match.IsStd(path):
		if s := c.pass.Effects.Of(fn); s != nil {
			return summaryEffect(match.PkgFuncName(fn), s)
		}
	}
	return "calls " + match.PkgFuncName(fn) + ", whose effects the analysis cannot see"
}

// summaryEffect returns "" when name, a function of another package with
// the effect summary s, is quiet, else its first effect as a phrase
// completing "the code ...". Every kind of effect but a wait on the real
// clock is one a child could see or that outlives the check (a goroutine, a package-level variable,
// the environment, a file through a syscall); a call the summary could
// not follow leaves the function unknown.
func summaryEffect(name string, s *effect.Summary) string {
	for _, e := range s.Effects {
		if e.Kind == effect.Timer {
			continue // the real clock: package time is quiet too
		}
		return "calls " + e.Why()
	}
	if s.Opaque != "" {
		return "calls " + name + ", whose effects the analysis cannot see in full (it " + s.Opaque + ")"
	}
	return ""
}

// funcEffect returns the first effect of the package function fn, or ""
// if it is quiet. A function being followed counts as quiet (recursion
// adds nothing).
func (c *checker) funcEffect(fn *types.Func, onTest bool) string {
	key := fn.Origin()
	if w, ok := c.quiet[key]; ok {
		return w
	}
	fd := c.decls[key]
	if fd == nil || fd.Body == nil {
		return "has no body the analysis can see"
	}
	c.quiet[key] = ""
	w := c.effect(fd.Body, onTest)
	c.quiet[key] = w
	return w
}

// effect returns the first effect of the code under root, or "" if it is
// quiet.
func (c *checker) effect(root ast.Node, onTest bool) string {
	if w := c.globalWrite(root); w != "" {
		return w
	}
	var why string
	ast.Inspect(root, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			why = "starts a goroutine"
		case *ast.SendStmt:
			why = "sends on a channel"
		case *ast.CallExpr:
			why = c.callEffect(n, onTest)
		}
		return why == ""
	})
	return why
}
