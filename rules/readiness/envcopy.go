package readiness

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The environment-copy hazard. The readiness line unsets envVar as it
// reads it, so that a process the child starts later does not inherit it
// (processHazard covers those started before the line). A copy of the
// environment taken before the line keeps the variable all the same: a
// package-level `var startEnv = os.Environ()` (or an init function, or
// TestMain before m.Run, reading os.Environ, syscall.Environ, or a
// variable whose name the code does not spell out), or such a read in the
// helper before the line. Code that later hands that copy to a process it
// starts (a re-exec on SIGHUP: the next generation is the same helper,
// whose fd 3 is a status pipe of the child's) has the new process write
// "ready" on its own descriptor of that number, so correct code fails
// (red team batch 16, hotswapenv). The rule does not follow where the
// copy goes: any copy taken before the line makes the site not fixed,
// whoever looks at the child.

// envCopyChecked is the Checked entry of a fix: the hazard excluded.
const envCopyChecked = "the child takes no copy of the environment before its readiness line unsets " + envVar + " (no os.Environ, syscall.Environ or read of a variable the code does not name, in package initialisation, TestMain before m.Run, or the helper before the line)"

// envCopy reports whether a call of pkg.name (pkg an import path) with
// args reads the environment in a way that may keep envVar: the whole of
// it, or a variable the call does not name as a constant.
func envCopy(path, name string, args []ast.Expr) bool {
	switch {
	case (path == "os" || path == "syscall") && name == "Environ":
		return true
	case path == "os" && name == "ExpandEnv":
		return len(args) != 1 || !isLit(args[0], func(s string) bool { return !strings.Contains(s, envVar) })
	case (path == "os" || path == "syscall") && (name == "Getenv" || name == "LookupEnv"):
		// A named variable is a value, not a copy (envVar itself is the
		// line's own read).
		return len(args) != 1 || !isLit(args[0], func(string) bool { return true })
	}
	return false
}

// isLit reports whether e is a string literal whose value ok accepts.
func isLit(e ast.Expr, ok func(string) bool) bool {
	lit, isBasic := ast.Unparen(e).(*ast.BasicLit)
	if !isBasic || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && ok(s)
}

// envCopyHazard says why the child keeps envVar past its readiness line
// in a copy of the environment it took before it, or "".
func (c *checker) envCopyHazard(sp span) string {
	var what, at string
	for _, st := range sp.before {
		if what, at = c.reachesCall(st, 0, map[*ast.FuncDecl]bool{}, c.envCopyCall); what != "" {
			what = fmt.Sprintf("%s at %s, in the helper before the line", what, at)
			break
		}
	}
	if what == "" {
		if c.envCopyWhy == nil {
			why := c.initWork(true)
			c.envCopyWhy = &why
		}
		if *c.envCopyWhy == "" {
			return ""
		}
		what = "the child's package initialisation " + *c.envCopyWhy
	}
	return fmt.Sprintf("the child may keep %s in a copy of the environment taken before its readiness line unsets it (%s): a process it starts with that copy inherits the variable, and one running the same helper would write its own line on its descriptor of that number, a pipe of the child's, changing what the test reads, on correct code; keep the sleep", envVar, what)
}

// envCopyCall reports whether call (of fn) takes a copy of the
// environment, with its name.
func (c *checker) envCopyCall(fn *types.Func, call *ast.CallExpr) (string, bool) {
	if fn.Pkg() == nil || fn.Signature().Recv() != nil {
		if fn.Pkg() != nil && match.IsMethod(c.info, call, "os/exec", "Environ") {
			return "exec.Cmd.Environ", true
		}
		return "", false
	}
	path := fn.Pkg().Path()
	if !envCopy(path, fn.Name(), call.Args) {
		return "", false
	}
	// A constant that is not a literal: read its value.
	if (fn.Name() == "Getenv" || fn.Name() == "LookupEnv") && len(call.Args) == 1 {
		if _, ok := match.ConstString(c.info, call.Args[0]); ok {
			return "", false
		}
	}
	return path + "." + fn.Name(), true
}
