package spawn

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// Children run together are no longer ordered: the second run of a tool
// that must hit the cache the first one wrote (a file), two children
// that bind the same port, or a check that compares what they report in
// the order they ran, pass one after another and fail now and then when
// they overlap. Such flakes are exactly what a few verification runs
// miss (8 failures in 20 runs passes 5 runs with a chance of 1 in 13),
// so where the rule sees the hazard it reports the chain, not fixed,
// instead of leaving it to fix --verify.
//
// Where the rule sees no hazard, verification still checks one form
// before it tries a chain's fix (chainFix, rule.Hypothesis.MustPass): the
// children run one after another in the reverse order, which a chain
// whose order matters fails every time (a second run that reads the
// first one's cache), where running them together fails a few times in
// ten. A loop's fix has no such form yet: reversing a range over a map,
// a channel or a function is not a rewrite of the loop alone.

// checkedOrder lists the order hazards a fix of the rule has excluded.
var checkedOrder = []string{
	"the children share no variable, file argument or port, in their commands or in the code they run",
	"children in one directory all run the test binary",
	"the children's code takes no lock (flock, fcntl, a lock file library) and makes no system call other processes see",
	"the text in sight of a program other than the test binary (a script, its arguments, a script file of the package) mentions no lock, .., $HOME, $TMPDIR nor absolute path",
	"the test sets no environment variable or working directory the children inherit, and runs no server they may reach (in the test, TestMain or init)",
	"the test binary's code the children run (the selected tests, TestMain, init, the initialisers of package-level variables, what they call) writes no file, listens or dials nowhere, runs no program, and writes no environment variable",
	"no package-level variable the test, TestMain or init sets is read by the code building the children's commands",
	"the test reads no clock and sets no deadline around the children",
	checkedView,
	"no file of the package's directory that the build leaves out (another build the children may run) names a place outside a child's view or takes a lock",
	"no file the build leaves out, nor a package of the module it imports, writes the file system, listens or dials, runs a program or calls a package outside the standard library and the module, whatever path it spells (the typed code's standard: no path is proven private to a child)",
	"the children's code asks for no place every child shares whatever its view (os.Executable, os.Args[0], os.TempDir, the environment's PWD, the user's directories, os/user, os.Getppid, exec.LookPath, os.CreateTemp or os.MkdirTemp with an empty directory: the module's list) and derives no directory above its own root from its working directory (os.Getwd or filepath.Abs, then filepath.Dir twice or a \"..\": the parent the t.TempDir roots share), nor does a build of the package the analysis does not type or a package of the module it imports (those, os.UserCacheDir, os.UserConfigDir, os.UserHomeDir, os/user, os.Getppid, os.Getwd, filepath.Abs, exec.LookPath), and no build of the children's code, typed or not, nor a package of the module it calls, climbs above a path it is given (an argument, an environment variable, a flag, a field: filepath.Dir, a \"..\" joined, filepath.Split, a cut at its last separator, any other text computed from it but a descent: strings.TrimSuffix, a slice) further than constant elements joined to it go down",
	"no package of the module that the children's code calls, nor one it imports, names in any build a place every child shares (os.Executable, os.Args[0], os.TempDir, the user's directories, os/user, os.Getppid, os.Getwd, filepath.Abs, exec.LookPath, a lock, .., $HOME, $TMPDIR)",
	"no check of the test relates what two children produced (compares, orders or de-duplicates their outputs, what the test builds from them, files they may write or what package state keeps of them), in the chain, after it, across a loop's iterations or after the loop",
}

// orderHazard says why the units of a chain may depend on the order they
// run in, naming the line, or "".
func (c *checker) orderHazard(ch *chain) string {
	if why := c.stateHazard(ch.list[ch.end-1].End(), ch.units); why != "" {
		return why
	}
	if why := c.clockHazard(); why != "" {
		return why
	}
	if why := c.sharedDir(ch.units); why != "" {
		return why
	}
	for _, u := range ch.units {
		if why := c.outsideHazard(u); why != "" {
			return why
		}
	}
	if why := c.sharedConstant(ch.units); why != "" {
		return why
	}
	for _, u := range ch.units {
		if why := c.userDirUse(c.childCode(u)); why != "" {
			return why
		}
		if why := c.childEffect(u); why != "" {
			return why
		}
	}
	if why := c.relateChain(ch); why != "" {
		return why
	}
	if why := c.leftOutHazard(); why != "" {
		return why
	}
	if why := c.viewHazard(ch.units, func(i int) string { return "the " + ordinal(i) + " child" }); why != "" {
		return why
	}
	if why := c.placeHazard(ch.units); why != "" {
		return why
	}
	return c.modulePlace(ch.units)
}

// loopOrderHazard is orderHazard for the iterations of a loop: one child
// run per iteration, with the same constant file arguments.
func (c *checker) loopOrderHazard(ls *loopSite) string {
	u := ls.u
	if why := c.stateHazard(ls.rs.End(), []*unit{u}); why != "" {
		return why
	}
	if why := c.clockHazard(); why != "" {
		return why
	}
	// Every iteration runs the same text: a lock or a place outside the
	// directory it names is the surer reason than the directory.
	if why := c.outsideHazard(u); why != "" {
		return why
	}
	if external(u) && !(u.dir != "" && c.perIteration(ls, u.dir)) {
		return fmt.Sprintf("every child runs %s in the same directory (%s); one may read what another writes, a cache or a build output, and running them together may flake where a few runs pass", u.prog, c.line(u.call))
	}
	if arg := c.fileArgs(u); len(arg) > 0 {
		for _, a := range sortedKeys(arg) {
			if at := arg[a]; at.inCode {
				return fmt.Sprintf("every child runs code that uses %q (%s); one may read what another writes, or bind it when it is an address", a, c.line(at.node))
			}
			return fmt.Sprintf("every child is given the file argument %q (%s); one may read what another writes", a, c.line(u.call))
		}
	}
	if why := c.childEffect(u); why != "" {
		return why
	}
	if why := c.userDirUse(c.childCode(u)); why != "" {
		return why
	}
	if why := c.relateLoop(ls); why != "" {
		return why
	}
	if why := c.leftOutHazard(); why != "" {
		return why
	}
	if why := c.viewHazard([]*unit{u}, func(int) string { return "every child" }); why != "" {
		return why
	}
	if why := c.placeHazard([]*unit{u}); why != "" {
		return why
	}
	return c.modulePlace([]*unit{u})
}

// sharedConstant says which constant file, path or port two units are
// both given, or whose code both use, or "".
func (c *checker) sharedConstant(units []*unit) string {
	args := make([]map[string]argAt, len(units))
	for i, u := range units {
		args[i] = c.fileArgs(u)
	}
	for i := range units {
		for j := i + 1; j < len(units); j++ {
			for _, a := range addressesFirst(sortedKeys(args[i])) {
				at, ok := args[j][a]
				if !ok {
					continue
				}
				if at.inCode {
					if port.MatchString(a) {
						return fmt.Sprintf("the %s and %s children run code that uses the address %q (%s); run together, both may bind it, and that may flake where a few runs pass", ordinal(i), ordinal(j), a, c.line(at.node))
					}
					return fmt.Sprintf("the %s and %s children run code that uses the file or path %q (%s); one may read what the other writes (a cache, a lock), and running them together may flake where a few runs pass", ordinal(i), ordinal(j), a, c.line(at.node))
				}
				if port.MatchString(a) {
					return fmt.Sprintf("the %s and %s children are both given the address %q (%s); run together, both may bind it, and that may flake where a few runs pass", ordinal(i), ordinal(j), a, c.line(units[j].call))
				}
				return fmt.Sprintf("the %s and %s children are both given the file argument %q (%s); one may read what the other writes (a cache), and running them together may flake where a few runs pass", ordinal(i), ordinal(j), a, c.line(units[j].call))
			}
		}
	}
	return ""
}

// addressesFirst puts the addresses of keys before the files: two
// children binding one port is the surer clash.
func addressesFirst(keys []string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if port.MatchString(k) {
			out = append(out, k)
		}
	}
	for _, k := range keys {
		if !port.MatchString(k) {
			out = append(out, k)
		}
	}
	return out
}

// initOf returns the initializer of the package-level variable v, or nil.
func (c *checker) initOf(v *types.Var) ast.Expr {
	for _, f := range c.pass.AllFiles {
		if f.Pos() > v.Pos() || v.Pos() >= f.End() {
			continue
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if c.info.Defs[name] == types.Object(v) && len(vs.Values) == len(vs.Names) {
						return vs.Values[i]
					}
				}
			}
		}
	}
	return nil
}

// An argAt is where a constant file or address is named.
type argAt struct {
	node   ast.Node
	inCode bool // in the code the child runs (childCode), not its command
}

// pathLike matches what names a file, a directory or an address: a
// slash, a file extension, a port.
var pathLike = regexp.MustCompile(`[/\\]|\.[A-Za-z][A-Za-z0-9]{0,7}$|:[0-9]{2,5}$`)

// port matches an address with a port.
var port = regexp.MustCompile(`:[0-9]{2,5}$`)

// fileArgs returns the constant strings of a unit (its statements, the
// body of the package function it runs in, and for the test binary the
// code the child runs) that name a file, a directory or an address:
// "-cache=tool.cache", "HOME=/tmp/h", "localhost:8080". The test binary's
// own flags (-test.run=...) are not.
func (c *checker) fileArgs(u *unit) map[string]argAt {
	out := map[string]argAt{}
	inCode := false
	inits := map[*types.Var]bool{}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		// A package-level variable's initializer is read where the
		// variable is: var addr = "127.0.0.1:47613".
		if id, ok := e.(*ast.Ident); ok {
			if v, ok := c.info.Uses[id].(*types.Var); ok && match.IsPackageLevel(v) && v.Pkg() == c.pass.Pkg && !inits[v] {
				inits[v] = true
				if init := c.initOf(v); init != nil {
					ast.Inspect(init, visit)
				}
			}
		}
		tv, ok := c.info.Types[e]
		if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
			return true
		}
		s := constant.StringVal(tv.Value)
		if strings.HasPrefix(strings.TrimLeft(s, "-"), "test.") {
			return false
		}
		v := s
		if k := strings.LastIndex(v, "="); k >= 0 {
			v = v[k+1:]
		}
		if _, seen := out[s]; !seen && v != "" && !strings.ContainsAny(v, " \t\n") && pathLike.MatchString(v) {
			out[s] = argAt{node: e, inCode: inCode}
		}
		return false
	}
	for _, s := range u.stmts {
		ast.Inspect(s, visit)
	}
	if call := u.call; call != nil && u.in != "" {
		if fn := match.Callee(c.info, call); fn != nil {
			if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil {
				ast.Inspect(fd.Body, visit)
			}
		}
	}
	inCode = true
	for _, fd := range c.childCode(u) {
		ast.Inspect(fd.Body, visit)
	}
	return out
}

// line says where n is: "app_test.go:14". Reasons of later rounds see
// rewritten lines; the hazards are found in the first round, where the
// lines are the user's.
func (c *checker) line(n ast.Node) string {
	p := c.pass.Fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
