package testscope

import (
	"go/ast"
	"sort"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// Processes as readers of the environment. A process the code starts
// inherits the environment (an exec.Cmd whose Env is nil or built from
// os.Environ, os.StartProcess, syscall.Exec), and its program reads any
// variable in code the analysis does not read, telling an unset variable
// from one set to "" as os.LookupEnv does (a shell's ${K:=d} defaults
// both, ${K=d} only the unset one). So when a fix changes what the tests
// after it find in the environment (t.Setenv unsets a variable the
// original's `defer os.Setenv(k, old)` left set and empty), a later test
// that starts a process is a later reader of every variable: red team
// batch 16, hookenv. The rule does not tell an Env the test builds from
// scratch from an inherited one; it counts every start (not fixing is
// sound).

// childStart returns what starts a process at n (a call), with its line,
// or "": a process start of the standard library (match.ProcessStart), or
// a call of another package whose effect summary runs a process.
func (c *checker) childStart(n ast.Node) string {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return ""
	}
	fn := match.Callee(c.info, call)
	if fn == nil {
		return ""
	}
	if name, ok := match.ProcessStart(fn.Origin()); ok {
		return name + " at " + c.line(call)
	}
	if e := c.otherWrite(fn, effect.Process); e != nil {
		return e.Why() + " at " + c.line(call)
	}
	return ""
}

// startsChild matches code that starts a process, directly (root, less
// skip); laterRead follows the package functions it reaches.
func (c *checker) startsChild(root, skip ast.Node) bool {
	return c.childIn(root, skip) != ""
}

func (c *checker) childIn(root, skip ast.Node) string {
	what := ""
	ast.Inspect(root, func(n ast.Node) bool {
		if what != "" || n == nil || (skip != nil && n == skip) {
			return false
		}
		what = c.childStart(n)
		return what == ""
	})
	return what
}

// childReader returns a later test (or the rest of the test around a
// subtest) that starts a process inheriting the environment without
// setting k itself first, described with the start ("the process
// TestDefaults (hooks_test.go:22) starts (exec.Cmd.Output at hooks.go:14),
// which inherits the environment,"), or "". after is laterRead's.
func (c *checker) childReader(sc *scope, k key) (who string, after bool) {
	who, after = c.laterRead(sc, c.startsChild, func(n ast.Node) bool { return c.childStart(n) != "" }, c.envSetOf(k), nil)
	if who == "" {
		return "", false
	}
	for _, r := range c.laterReaders(sc) {
		if r.name != who {
			continue
		}
		what := c.childIn(r.root, r.skip)
		if what == "" {
			// The first start, in source order, of the package
			// functions it reaches.
			var bodies []ast.Node
			for fn := range c.reachable(r.root, r.skip) {
				bodies = append(bodies, c.decls[fn].Body)
			}
			sort.Slice(bodies, func(i, j int) bool { return bodies[i].Pos() < bodies[j].Pos() })
			for _, b := range bodies {
				if what = c.childIn(b, nil); what != "" {
					break
				}
			}
		}
		return "the process " + who + " starts (" + what + "), which inherits the environment,", after
	}
	return who, after
}
