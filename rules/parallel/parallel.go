package parallel

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/types"
	"slices"
	"strings"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rule/effect"
)

//go:embed doc.md
var doc string

// Rule adds t.Parallel() to tests that touch no process-wide state.
var Rule = &rule.Rule{
	Name: "parallel",
	Doc:  doc,
	// Opt-in: a test made parallel can expose races in code that was
	// fine sequentially, and the analysis cannot see every shared
	// resource (files, ports, global state of other packages).
	Default:   false,
	Prefilter: prefilter,
	Run:       run,
	Requires:  []*rule.Analysis{match.Decls},
	// setenv runs first: its removals can leave a test free to run in
	// parallel.
	After: []string{"setenv"},
}

// prefilter: the rule reports only on test functions.
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, "Test")
}

// pure are the standard library packages whose functions and methods the
// rule trusts to touch no process-wide state the tests share.
var pure = map[string]bool{
	"bytes": true, "cmp": true, "context": true, "errors": true, "fmt": true,
	"iter": true, "maps": true, "math": true, "math/bits": true, "path": true,
	"regexp": true, "slices": true, "sort": true, "strconv": true, "strings": true,
	"sync": true, "sync/atomic": true, "testing/synctest": true, "time": true, "unicode": true,
	"unicode/utf8": true, "unicode/utf16": true, "encoding/json": true,
	"encoding/hex": true, "encoding/base64": true, "reflect": true,
}

// osReads are the functions of package os that only read process state.
var osReads = []string{"Getenv", "LookupEnv", "Environ", "Getwd", "Getpid", "Getuid", "Hostname", "ExpandEnv"}

// fileSystem completes "the test calls os.Stat": the rule does not follow
// paths, so a file another test writes, or removes, may be the one the
// test reads.
const fileSystem = ", which uses the file system, which every test shares: the analysis does not follow paths, so it cannot tell whether another test reads or writes the same ones"

// filepathFS are the functions of package path/filepath that read the
// file system.
var filepathFS = []string{"Abs", "EvalSymlinks", "Glob", "Walk", "WalkDir"}

// runtimeShared are the functions of packages runtime and runtime/debug
// that read or set counters and settings of the whole process: a test
// that checks them (allocations counted with ReadMemStats, goroutines
// with NumGoroutine) counts those of the tests running beside it too.
var runtimeShared = []string{
	"ReadMemStats", "NumGoroutine", "GC", "GOMAXPROCS", "NumCgoCall", "MemProfile", "SetFinalizer",
	"FreeOSMemory", "ReadGCStats", "SetGCPercent", "SetMemoryLimit", "SetMaxStack", "SetMaxThreads",
}

// osWrites are the functions of packages os and syscall that change the
// process-wide environment or working directory.
var osWrites = []string{"Setenv", "Unsetenv", "Clearenv", "Chdir"}

func run(pass *rule.Pass) error {
	c := &checker{
		pass:      pass,
		info:      pass.TypesInfo,
		decls:     match.DeclsOf(pass),
		memo:      map[*types.Func]*obstacle{},
		clockMemo: map[*types.Func]string{},
	}
	// Decided from the last test in run order back: whether a test may
	// leave its place depends on which later tests stay sequential (see
	// order.go).
	tests := c.tests()
	diags := make([]*rule.Diagnostic, len(tests))
	for i := len(tests) - 1; i >= 0; i-- {
		diags[i] = c.check(tests, i)
	}
	for _, d := range diags {
		if d != nil {
			pass.Report(*d)
		}
	}
	return nil
}

// checker checks the tests of one package.
type checker struct {
	pass      *rule.Pass
	info      *types.Info
	decls     map[*types.Func]*ast.FuncDecl
	memo      map[*types.Func]*obstacle // nil while a function is being followed
	clockMemo map[*types.Func]string
	// clockVars are the package-level variables whose value comes from
	// the real clock (see clockVarsOf), computed on first use.
	clockVars map[*types.Var]string

	// shared is what the package's code may change of the state its
	// tests share, computed on first use.
	shared *shared

	// variants is the package's code in every build, and its external
	// tests, read from the directory on first use (see variants.go).
	variants *variants

	// watch is why the package's test binary observes state of the whole
	// process (see processWatch), computed on first use.
	watch *string

	// handoffMemo holds handoffs' answers, by root.
	handoffMemo map[ast.Node][]handoff
}

// An obstacle is what makes a function unfit to run in parallel: a change
// to process-wide state (state), a resource of the process or machine
// the tests share that the analysis cannot track (resource), or a call
// the analysis cannot follow (unseen). Each is a phrase completing "the
// test ...".
type obstacle struct {
	state    string
	resource string
	unseen   string
	// shares is a read of state other code of the package may change
	// (see shared); it becomes state when the function changes nothing
	// itself, whose change is the better reason.
	shares string
}

// check returns the finding for tests[i] if it is a test that could run
// in parallel, and marks it fixed when the finding makes it parallel.
func (c *checker) check(tests []*test, i int) *rule.Diagnostic {
	ts := tests[i]
	fd := ts.fd
	if !ts.edit || len(fd.Body.List) == 0 {
		return nil
	}
	// Have: func TestX(t *testing.T) with a body.
	if ts.parallel || c.callsSetenv(fd.Body) {
		return nil // already parallel, or sequential on purpose: not a finding
	}
	// Have: a sequential test that sets no environment variable itself.
	eff := c.effects(fd.Body, true)
	if eff.state == "" && eff.resource != "" {
		// A concrete reason the user can act on (a directory of the
		// test's own, a measure that stays sequential): reported.
		eff.state = eff.resource
	}
	if eff.state == "" && eff.unseen != "" {
		return nil // the analysis cannot see enough to say anything useful
	}
	d := &rule.Diagnostic{
		Pos:     fd.Name.Pos(),
		End:     fd.Name.End(),
		Message: fmt.Sprintf("%s does not call t.Parallel", fd.Name.Name),
	}
	if eff.state == "" {
		if w := c.zoneSetter(fd); w != "" {
			eff.state = w
		} else if w := c.clock(fd.Body); w != "" {
			eff.state = w + ": made parallel, it would run later (after the sequential tests) and beside other tests whose load stretches the time it waits or measures, so a check that depends on the time could fail on correct code or pass a bug (a synctest bubble would keep its time apart)"
		} else if w, unseen := c.variantReads(ts); unseen {
			return nil // another build calls code the analysis cannot see
		} else if w != "" {
			eff.state = w
		} else if w := c.order(tests, i); w != "" {
			eff.state = w
		} else {
			eff.state = c.processWatch()
		}
	}
	if eff.state != "" {
		d.NotFixed = "the test " + eff.state
	} else {
		d.Message = fmt.Sprintf("%s touches no process-wide state but does not call t.Parallel", fd.Name.Name)
		d.Fix = c.fix(fd, ts.t.Name())
		ts.fixed = true
	}
	return d
}

// testParam returns the *testing.T parameter of a top-level test
// func TestX(t *testing.T), or nil.
func (c *checker) testParam(fd *ast.FuncDecl) *types.Var {
	name := fd.Name.Name
	rest, ok := strings.CutPrefix(name, "Test")
	if !ok || name == "TestMain" || rest != "" && rest[0] >= 'a' && rest[0] <= 'z' || fd.Recv != nil || fd.Type.TypeParams != nil {
		return nil
	}
	ps := fd.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) != 1 || ps[0].Names[0].Name == "_" {
		return nil
	}
	t := c.info.TypeOf(ps[0].Type)
	if _, ptr := types.Unalias(t).(*types.Pointer); !ptr || !match.IsNamed(t, "testing", "T") {
		return nil
	}
	v, _ := c.info.Defs[ps[0].Names[0]].(*types.Var)
	return v
}

// callsParallel reports whether body calls t.Parallel on the test's own t.
func (c *checker) callsParallel(body *ast.BlockStmt, t *types.Var) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && match.IsMethod(c.info, call, "testing", "Parallel") {
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.Root(c.info, sel.X) == t {
				found = true
			}
		}
		return !found
	})
	return found
}

// callsSetenv reports whether body (its subtests included) calls t.Setenv.
func (c *checker) callsSetenv(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && match.IsMethod(c.info, call, "testing", "Setenv") {
			found = true
		}
		return !found
	})
	return found
}

// effects returns the first process-wide change in root and in the package
// functions it calls, transitively, or else the first call it cannot
// follow. test is true for a test body (where t.Parallel of a subtest is
// fine) and false for a function it calls.
func (c *checker) effects(root ast.Node, test bool) *obstacle {
	eff := &obstacle{}
	var written *types.Var
	n := match.ModifiesFunc(c.info, root, func(v *types.Var) bool {
		if match.IsPackageLevel(v) {
			written = v
			return true
		}
		return false
	})
	if _, ok := n.(*ast.SelectorExpr); ok && written.Pkg() != c.pass.Pkg {
		// A method call on another package's variable
		// (http.DefaultClient.Do): the method is judged as a call below.
		n = nil
	}
	if n != nil {
		// No line number: a finding made after other fixes sees rewritten
		// lines, which the engine maps back only for the finding itself.
		eff.state = fmt.Sprintf("writes package-level variable %s, which every test shares%s", written.Name(), kept(written))
		return eff
	}
	ast.Inspect(root, func(n ast.Node) bool {
		if eff.state != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.Ident:
			switch obj := c.info.Uses[n].(type) {
			case *types.Func:
				c.use(eff, obj, test)
			case *types.Var:
				c.reads(eff, obj)
			}
		case *ast.CallExpr:
			if eff.unseen == "" && c.dynamic(n) {
				eff.unseen = "calls a function value the analysis cannot see"
			}
			if w := c.measures(n); w != "" {
				eff.state = w
			}
		}
		return true
	})
	c.handedEffects(eff, root)
	if eff.state == "" && eff.shares != "" {
		eff.state, eff.shares = eff.shares, ""
	}
	return eff
}

// handedEffects records in eff the effects of the package's methods that
// code outside the package may call on the values root hands it (see
// handoffs), as if root called them.
func (c *checker) handedEffects(eff *obstacle, root ast.Node) {
	for _, h := range c.handoffs(root) {
		if eff.state != "" {
			return
		}
		inner := c.funcEffects(h.method)
		if inner == nil {
			continue // being followed
		}
		how := h.how()
		if inner.state != "" {
			eff.state = how + ", which " + inner.state
			return
		}
		if inner.resource != "" && eff.resource == "" {
			eff.resource = how + ", which " + inner.resource
		}
		if inner.unseen != "" && eff.unseen == "" {
			eff.unseen = how + ", which " + inner.unseen
		}
	}
}

// kept says, for a package-level variable of a sync type whose state
// lives on between tests, what a test made parallel would change of it
// (", a sync.Pool: ..."), or "". A pool is warm or cold depending on
// which tests ran before: Get hands out what an earlier test Put back, or
// what New makes, so a bug in New (a buffer that is not empty) shows only
// to the test that meets the pool cold. A Once runs for the first test
// that reaches it, with that test's arguments and clock.
func kept(v *types.Var) string {
	switch {
	case match.IsNamed(v.Type(), "sync", "Pool"):
		return " (a sync.Pool: its Get and Put leave it warm or cold for the tests after, and a bug in its New shows only on a cold pool)"
	case match.IsNamed(v.Type(), "sync", "Once"):
		return " (a sync.Once: the first test to reach it runs it, and every later test sees what that run left)"
	}
	return ""
}

// dynamic reports whether call calls a function value other than a local
// variable (whose func literal, if any, is part of the code inspected).
func (c *checker) dynamic(call *ast.CallExpr) bool {
	if tv, ok := c.info.Types[call.Fun]; ok && (tv.IsType() || tv.IsBuiltin()) {
		return false
	}
	if match.Callee(c.info, call) != nil {
		return false
	}
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		v, ok := c.info.Uses[fun].(*types.Var)
		return !ok || match.IsPackageLevel(v)
	case *ast.FuncLit:
		return false
	}
	return true
}

// use records in eff the effect of using (calling or taking the value of)
// fn.
func (c *checker) use(eff *obstacle, fn *types.Func, test bool) {
	fn = fn.Origin()
	sig := fn.Type().(*types.Signature)
	if fn.Pkg() == nil {
		return // error.Error
	}
	path := fn.Pkg().Path()
	name := match.PkgFuncName(fn)
	c.readsPkg(eff, fn)
	if recv := sig.Recv(); recv != nil && types.IsInterface(recv.Type()) {
		if eff.unseen == "" {
			eff.unseen = "calls " + name + " through an interface"
		}
		return
	}
	switch {
	case path == "testing":
		c.testing(eff, fn, test)
	case path == "os" || path == "syscall":
		if sig.Recv() == nil && oneOf(fn.Name(), osWrites) {
			eff.state = "calls " + name + ", which changes process-wide state"
		} else if path == "os" && sig.Recv() == nil && oneOf(fn.Name(), osReads) {
			c.readsProcess(eff, name, fn.Name())
		} else if path == "os" && eff.resource == "" {
			eff.resource = "calls " + name + fileSystem
		} else if eff.unseen == "" {
			eff.unseen = "calls " + name
		}
	case path == "io/ioutil" || path == "path/filepath" && oneOf(fn.Name(), filepathFS):
		if eff.resource == "" {
			eff.resource = "calls " + name + fileSystem
		}
	case (path == "runtime" || path == "runtime/debug") && oneOf(fn.Name(), runtimeShared):
		if eff.resource == "" {
			eff.resource = "calls " + name + ", which reads or sets state of the whole process (its heap, goroutines or scheduler) that the tests running beside it change: a count or a limit it checks would take in theirs"
		}
	case pure[path]:
	case fn.Pkg() == c.pass.Pkg:
		inner := c.funcEffects(fn)
		switch {
		case inner == nil:
		case inner.state != "":
			eff.state = "calls " + fn.Name() + ", which " + inner.state
		default:
			if inner.resource != "" && eff.resource == "" {
				eff.resource = "calls " + fn.Name() + ", which " + inner.resource
			}
			if inner.unseen != "" && eff.unseen == "" {
				eff.unseen = "calls " + fn.Name() + ", which " + inner.unseen
			}
		}
	case match.IsAssertion(path, fn.Name()):
		// An assertion looks at its arguments and reports on the test's
		// t: no state another test shares.
	case !match.IsStd(path):
		if s := c.pass.Effects.Of(fn); s != nil {
			summary(eff, name, s)
			if eff.state == "" {
				c.readsForeign(eff, name)
			}
			if eff.unseen == "" {
				// A summary says what a function writes, not what it
				// reads or lets escape: lib.Deliver may keep ids in
				// lib's package-level set through a value-receiver
				// method, or hand out lib's default instance, which
				// other tests use too. Until summaries carry reads,
				// such a call is code the rule cannot judge.
				eff.unseen = "calls " + name + ", whose reads of package-level state the effect summaries do not say"
			}
			return
		}
		fallthrough
	default:
		if eff.unseen == "" {
			eff.unseen = "calls " + name + ", whose effects the analysis cannot see"
		}
	}
}

// summary records in eff what calling name, a function of another package
// with the effect summary s, does to state other tests share: a write of
// the environment, the working directory or a package-level variable, or
// a signal handler, changes it; the real network, processes, syscalls,
// cgo and package-level channels or timers are shared in ways the
// analysis cannot judge, as the standard library's are; goroutines and
// timers of its own are no shared state.
func summary(eff *obstacle, name string, s *effect.Summary) {
	for _, e := range s.Effects {
		switch e.Kind {
		case effect.WritesEnv, effect.WritesWd, effect.WritesGlobal, effect.Signal:
			eff.state = "calls " + e.Why() + "; every test shares it"
			return
		case effect.Network, effect.Process, effect.Syscall, effect.Cgo, effect.SharedSync:
			if eff.unseen == "" {
				eff.unseen = "calls " + e.Why()
			}
		}
	}
	if s.Opaque != "" && eff.unseen == "" {
		eff.unseen = "calls " + name + ", whose effects the analysis cannot see in full (it " + s.Opaque + ")"
	}
}

// funcEffects returns the effects of the package function fn, or nil while
// it is being followed (a recursive call adds nothing).
func (c *checker) funcEffects(fn *types.Func) *obstacle {
	if e, ok := c.memo[fn]; ok {
		return e
	}
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil {
		return &obstacle{unseen: "has no body the analysis can see"}
	}
	c.memo[fn] = nil
	e := c.effects(fd.Body, false)
	c.memo[fn] = e
	return e
}

// fix inserts t.Parallel() as the first statement of fd.
func (c *checker) fix(fd *ast.FuncDecl, t string) *rule.Fix {
	return &rule.Fix{
		Message: "add t.Parallel() as the test's first statement",
		Changes: []rule.Change{{
			Kind: rule.Order,
			What: "the test runs after the package's sequential tests, at the same time as its parallel ones",
			Checked: []string{
				"no package-level variable read that the package's code writes or aliases",
				"no environment or working directory read that the package's code changes",
				"no call into another package when the package's code changes another package's state",
				"no testing.AllocsPerRun, testing.Benchmark, t.Setenv or t.Chdir",
				"no value of the package's types handed to code outside the package or to an interface (fmt, sort, a callback) whose exported methods, which that code may call, change such state",
				"no elapsed real time measured in the test's code",
				"no real clock read or waited on (time.Sleep, time.After, timers, tickers, deadlines, time.Now) by the test or the package code it calls, outside a synctest bubble",
				"no package-level variable whose value comes from the real clock (a start stamp taken at initialisation, or written by code that reads the clock)",
				"no package-level sync.Pool or sync.Once, even one used only through Get and Put: its warmth, or its first run, is state the tests share",
				"no file system use and no process-wide runtime counters or settings (runtime.ReadMemStats, runtime.NumGoroutine, debug.SetGCPercent)",
				"no function of the code under test that a later test staying sequential calls too",
				"not the first test to call a function of the code under test that another test calls too",
				"no package-level variable that the code the test may reach, in any build of the package (every file of its directory), reads or writes and some build's code changes, and no real clock or unjudged call there",
				"no function of the code under test that a test of the external test package (package x_test), which runs later in the same binary, calls too and that stays sequential",
				"no state the test may read (time.Local, the environment, the working directory, a package-level variable, a setting the standard library reads once) that the other half of the test binary (the external test package, or the package's own files) changes",
			},
		}},
		Apply: func() error {
			body := c.pass.Dst(fd).(*dst.FuncDecl).Body
			stmt := &dst.ExprStmt{X: &dst.CallExpr{Fun: &dst.SelectorExpr{X: dst.NewIdent(t), Sel: dst.NewIdent("Parallel")}}}
			stmt.Decs.Before = dst.NewLine
			stmt.Decs.After = dst.EmptyLine
			body.List = append([]dst.Stmt{stmt}, body.List...)
			return nil
		},
	}
}

func oneOf(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}

// cachedEnv lists the environment variables the standard library reads
// once, at its first need, and keeps for the life of the process: the test
// that first needs them decides what every later test sees, whatever its
// t.Setenv restores. Of each: the packages through which a test may reach
// the read (nil: any package), and what the reason says of it.
var cachedEnv = []struct {
	names  []string
	pkgs   []string
	shares string // what the tests share through it
	its    string // what the setter leaves behind
	what   string
}{
	{[]string{"TZ"}, []string{"time", "log", "log/slog"}, "the local time zone", "zone", "the time package reads TZ once, when local time is first needed, and keeps that zone for the process"},
	{[]string{"ZONEINFO"}, []string{"time", "log", "log/slog"}, "the time zone database", "zones", "the time package reads ZONEINFO once, at the first time.LoadLocation of the process, and keeps that tz database for the process"},
	{[]string{"GODEBUG"}, nil, "the standard library's GODEBUG settings", "settings", "the standard library reads some GODEBUG settings once and keeps them for the process (net's netdns at its first lookup, net/http's http2 settings when a server or transport first starts)"},
	{[]string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "REQUEST_METHOD"}, []string{"net/http", "net/http/httputil", "net/http/httptest"}, "net/http's proxy settings", "proxy", "net/http's ProxyFromEnvironment reads the proxy variables once, at its first call, and keeps them for the process"},
	{[]string{"SSL_CERT_FILE", "SSL_CERT_DIR"}, []string{"crypto/x509", "crypto/tls", "net/http", "net/http/httptest", "net/smtp"}, "the system's certificate roots", "roots", "crypto/x509 reads the certificate locations once, when the system roots are first loaded, and keeps those roots for the process"},
	{[]string{"LOCALDOMAIN", "RES_OPTIONS", "HOSTALIASES"}, []string{"net", "net/http", "net/http/httptest", "net/smtp", "net/rpc", "crypto/tls"}, "net's resolver", "resolver", "net reads the resolver's variables once, at its first lookup, and keeps the resolver it chose for the process"},
}

// zoneSetter says where another function of the package's files (a test,
// a helper; not TestMain or init, which run before every test) sets a
// variable the standard library reads once and keeps (cachedEnv: TZ, the
// tz database's ZONEINFO, GODEBUG, the proxy variables, ...) or assigns
// time.Local, when the test may reach the read, or "". A test that sets
// such a variable with t.Setenv, which restores it, still leaves its value
// behind when it was the first to need it. Made parallel, a test runs
// after every sequential one and may see that value: a scheduler's test
// written in the zone TestMain pinned fails on correct code (red team
// batch 15, tzlocal), as does one whose zones a later test's fixture tz
// database (ZONEINFO) redefines (batch 16, zoneinfo). A name the analysis
// cannot evaluate may be any of them. The setters of the other half of the
// test binary count too (binary.go): an external test that switches the
// process to UTC for good runs before a test made parallel (batch 17,
// shiftroster).
func (c *checker) zoneSetter(self *ast.FuncDecl) string {
	why := ""
	found := func(st setter) bool {
		why = c.setterWhy(self, st)
		return why != ""
	}
	for _, f := range c.pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd == self || setup(fd) {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if why != "" {
					return false
				}
				switch n := n.(type) {
				case *ast.CallExpr:
					setenv := match.IsMethod(c.info, n, "testing", "Setenv") || match.IsPkgFunc(c.info, n, "os", "Setenv", "Unsetenv") || match.IsPkgFunc(c.info, n, "syscall", "Setenv", "Unsetenv")
					if !setenv || len(n.Args) < 1 {
						break
					}
					k, known := match.ConstString(c.info, n.Args[0])
					found(setter{fn: fd.Name.Name, where: c.where(fd.Name.Name, n), env: k, known: known, expr: types.ExprString(n.Args[0])})
				case *ast.AssignStmt:
					for _, l := range n.Lhs {
						if sel, ok := ast.Unparen(l).(*ast.SelectorExpr); ok && why == "" {
							if v, ok := c.info.Uses[sel.Sel].(*types.Var); ok && v.Pkg() != nil && v.Pkg().Path() == "time" && v.Name() == "Local" {
								found(setter{fn: fd.Name.Name, where: c.where(fd.Name.Name, n), local: true})
							}
						}
					}
				}
				return why == ""
			})
			if why != "" {
				return why
			}
		}
	}
	// The other half of the test binary (binary.go): its setters change
	// the same process.
	c.siblingSetters(found)
	return why
}

// setterWhy says why the test self shares what st sets with st's
// function, when self may reach the standard library's read of it, or "".
func (c *checker) setterWhy(self *ast.FuncDecl, st setter) string {
	if st.local {
		if !c.mayRead(self.Body, cachedEnv[0].pkgs) {
			return ""
		}
		return fmt.Sprintf("shares the local time zone with %s, which assigns time.Local; made parallel, this test runs after %s and may see its zone", st.where, st.fn)
	}
	for _, e := range cachedEnv {
		if st.known && !slices.Contains(e.names, st.env) || !c.mayRead(self.Body, e.pkgs) {
			continue
		}
		name := st.env
		if !st.known {
			name = fmt.Sprintf("%s, a variable the analysis cannot name (it may be %s)", st.expr, e.names[0])
		}
		return fmt.Sprintf("shares %s with %s, which sets %s: %s; made parallel, this test runs after %s and may see its %s", e.shares, st.where, name, e.what, st.fn, e.its)
	}
	return ""
}

// mayRead reports whether body calls something that may reach a read of
// the standard library's in pkgs: a function of the package, of another
// module, of one of pkgs, or (pkgs nil) of any package. A test that calls
// only the rest of the standard library (strings, strconv) does not.
func (c *checker) mayRead(body *ast.BlockStmt, pkgs []string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		fn := match.Callee(c.info, call)
		if fn == nil {
			found = !match.IsConversion(c.info, call) && !c.info.Types[call.Fun].IsBuiltin()
			return !found
		}
		if fn.Pkg() == nil {
			return true
		}
		path := fn.Pkg().Path()
		found = pkgs == nil || !match.IsStd(path) || path == c.pass.Pkg.Path() || slices.Contains(pkgs, path)
		return !found
	})
	return found
}
