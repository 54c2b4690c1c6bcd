package spawn

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// Children are opaque processes: besides what the test hands each of them,
// they share what the process gives every child (the environment, the
// working directory), what the test runs beside them (a server, a
// goroutine, a background child), and the clock the test reads. None of
// it shows as a value two units have in common, so the rule looks for the
// test setting it up: a cache file named in an inherited variable, a pid
// file in the directory the test switched to, a server numbering clients
// in the order they come, a wall-clock measure of one child. Run together,
// such children flake a few times in ten, which a few verification runs
// miss: the chain is not fixed.

// stateHazard says which state the test sets up before end for every
// child to inherit or reach (the environment, the working directory, a
// server), naming the line, or "".
func (c *checker) stateHazard(end token.Pos, units []*unit) string {
	inUnit := func(n ast.Node) bool {
		for _, u := range units {
			for _, s := range u.stmts {
				if s.Pos() <= n.Pos() && n.End() <= s.End() {
					return true
				}
			}
		}
		return false
	}
	var why string
	seen := map[*types.Func]bool{}
	var walk func(root ast.Node, depth int, top bool)
	walk = func(root ast.Node, depth int, top bool) {
		ast.Inspect(root, func(n ast.Node) bool {
			if why != "" {
				return false
			}
			if top && n != nil && n.Pos() >= end {
				return false // after the children: they do not see it
			}
			switch n := n.(type) {
			case *ast.GoStmt:
				why = fmt.Sprintf("the test starts a goroutine (%s) that runs beside the children: if it serves them, it sees them in the order they come, and running them together may flake where a few runs pass", c.line(n))
			case *ast.CallExpr:
				if top && inUnit(n) {
					return true
				}
				why = c.stateCall(n)
				if why == "" && depth < 3 {
					if fn := match.Callee(c.info, n); fn != nil && fn.Pkg() == c.pass.Pkg && !seen[fn.Origin()] {
						seen[fn.Origin()] = true
						if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil {
							walk(fd.Body, depth+1, false)
						}
					}
				}
			}
			return why == ""
		})
	}
	walk(c.fn.Body, 0, true)
	if why != "" {
		return why
	}
	if why := c.globalConfig(units); why != "" {
		return why
	}
	// TestMain and init run in every child and in the test: what they set
	// for the process, every child inherits.
	for fn, fd := range c.allDecls() {
		if fd.Body == nil || fd.Recv != nil || (fn.Name() != "TestMain" && fn.Name() != "init") {
			continue
		}
		// A server TestMain or init runs is reached by the children
		// like one the test runs (a registry numbering members as they
		// come), and so is a goroutine it starts.
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if why == "" {
					why = c.stateCall(n)
					if w, ok := strings.CutPrefix(why, "the test "); ok {
						why = fn.Name() + " " + w
					}
				}
			case *ast.GoStmt:
				if why == "" {
					why = fmt.Sprintf("%s starts a goroutine (%s) that runs beside the children: if it serves them, it sees them in the order they come, and running them together may flake where a few runs pass", fn.Name(), c.line(n))
				}
			}
			return why == ""
		})
		if why != "" {
			return why
		}
	}
	return ""
}

// globalConfig says which package-level variable the test sets that the
// package functions building the children's commands read (cachePath =
// filepath.Join(t.TempDir(), "cache"), then "CACHE="+cachePath in each
// command): every child is given what it names.
func (c *checker) globalConfig(units []*unit) string {
	read := map[*types.Var]string{} // the variable → the function reading it
	for _, u := range units {
		for _, fd := range c.unitHelpers(u) {
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					if v, ok := c.info.Uses[id].(*types.Var); ok && match.IsPackageLevel(v) && v.Pkg() == c.pass.Pkg {
						read[v] = fd.Name.Name
					}
				}
				return true
			})
		}
	}
	if len(read) == 0 {
		return ""
	}
	// TestMain and init set for the test what the test would: a
	// server's address kept in a package variable.
	setters := []*ast.FuncDecl{c.fn}
	for fn, fd := range c.allDecls() {
		if fd.Body != nil && fd.Recv == nil && (fn.Name() == "TestMain" || fn.Name() == "init") {
			setters = append(setters, fd)
		}
	}
	slices.SortFunc(setters[1:], func(a, b *ast.FuncDecl) int { return int(a.Pos() - b.Pos()) })
	for _, fd := range setters {
		var set *types.Var
		n := match.ModifiesFunc(c.info, fd.Body, func(v *types.Var) bool {
			if read[v] != "" {
				set = v
				return true
			}
			return false
		})
		if n == nil {
			continue
		}
		who := "the test"
		if fd != c.fn {
			who = fd.Name.Name
		}
		return fmt.Sprintf("%s sets the package-level variable %s (%s), which %s reads to build the children's commands: every child is given what it names, one may read what another writes (or a server numbers them as they come), and running them together may flake where a few runs pass", who, set.Name(), c.line(n), read[set])
	}
	return ""
}

// stateCall says what state a call sets up that children share: an
// environment variable, the working directory, a listener, a server, a
// child left running.
func (c *checker) stateCall(call *ast.CallExpr) string {
	const flake = "and running them together may flake where a few runs pass"
	switch {
	case match.IsMethod(c.info, call, "testing", "Setenv") || match.IsPkgFunc(c.info, call, "os", "Setenv", "Unsetenv", "Clearenv"):
		name := "variables"
		if len(call.Args) > 0 {
			if s, ok := match.ConstString(c.info, call.Args[0]); ok {
				name = s
			}
		}
		return fmt.Sprintf("the test sets %s in the environment (%s), which every child inherits: what it names (a cache, a lock, a state directory, a socket) the children share, one may read what another writes, %s", name, c.line(call), flake)
	case match.IsMethod(c.info, call, "testing", "Chdir") || match.IsPkgFunc(c.info, call, "os", "Chdir"):
		return fmt.Sprintf("the test changes the working directory (%s), which the children share: one may read what another writes there (a pid file, a cache), %s", c.line(call), flake)
	case match.IsPkgFunc(c.info, call, "net", "Listen", "ListenTCP", "ListenUDP", "ListenUnix", "ListenUnixgram", "ListenPacket", "ListenIP", "ListenMulticastUDP") ||
		match.IsPkgFunc(c.info, call, "net/http/httptest", "NewServer", "NewTLSServer", "NewUnstartedServer") ||
		match.IsPkgFunc(c.info, call, "net/http", "ListenAndServe", "ListenAndServeTLS", "Serve"):
		return fmt.Sprintf("the test runs a server (%s) the children may reach: it sees them in the order they come (a count, a member number), %s", c.line(call), flake)
	case match.IsMethod(c.info, call, "os/exec", "Start"):
		return fmt.Sprintf("the test starts a child (%s) that runs beside the others: it may serve them in the order they come, %s", c.line(call), flake)
	}
	return ""
}

// clockHazard says where the test reads the clock or sets a deadline, or
// "". Running children together changes how long each seems to take and
// how long the whole takes: a measure of one child (start := time.Now()
// before it, time.Since(start) after) times the others with it, and a
// context deadline over several children gives each the whole of it
// rather than what the earlier ones left.
func (c *checker) clockHazard() string {
	var why string
	ast.Inspect(c.fn.Body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		if sel, ok := n.(*ast.SelectorExpr); ok {
			// A timer or the clock, called or not: a budget read
			// through time.NewTimer, time.AfterFunc or a method value
			// measures the children as a reading does (red team batch
			// 19, startbudget, hookbudget).
			if fn, ok := c.info.Uses[sel.Sel].(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == "time" && clockFuncs[fn.Name()] {
				why = fmt.Sprintf("the test times the children (time.%s at %s): run together, they take other times than one after another, and what the test measures of them changes", fn.Name(), c.line(sel))
				return false
			}
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if what := c.timedCallee(call); what != "" {
			why = what
			return false
		}
		switch {
		case match.IsPkgFunc(c.info, call, "time", "Now", "Since", "Until"):
			why = fmt.Sprintf("the test reads the clock (time.%s at %s): run together, the children take other times than one after another, and what the test measures of them changes", match.Callee(c.info, call).Name(), c.line(call))
		case match.IsPkgFunc(c.info, call, "context", "WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause"):
			why = fmt.Sprintf("the test sets a deadline (context.%s at %s): run together, each child gets the whole of it rather than what the earlier ones left", match.Callee(c.info, call).Name(), c.line(call))
		case match.IsMethod(c.info, call, "testing", "Deadline"):
			why = fmt.Sprintf("the test reads its deadline (t.Deadline at %s): run together, each child gets the whole of it rather than what the earlier ones left", c.line(call))
		}
		return why == ""
	})
	return why
}

// sharedDir says which two units run in the same working directory while
// one of them runs a program other than the test binary: sh writes a pid
// file that cat reads, go build leaves a binary go vet reads. Children
// that run the test binary run the package's code, which the analysis
// reads (childCode); a child whose program hides in a helper is left to
// fix --verify (unproven).
func (c *checker) sharedDir(units []*unit) string {
	for i, u := range units {
		for j := i + 1; j < len(units); j++ {
			w := units[j]
			if u.dir != w.dir || !external(u) && !external(w) {
				continue
			}
			if u.prog == w.prog {
				return fmt.Sprintf("the %s and %s children both run %s in the same directory (%s); one may read what the other writes, a cache or a build output, and running them together may flake where a few runs pass", ordinal(i), ordinal(j), u.prog, c.line(w.call))
			}
			return fmt.Sprintf("the %s and %s children run in the same directory (%s), and %s is not the test binary: one may read what the other writes there (a pid file, a build output), and running them together may flake where a few runs pass", ordinal(i), ordinal(j), c.line(w.call), progName(u, w))
		}
	}
	return ""
}

// external reports whether u runs a program the analysis knows by name
// and that is not the test binary.
func external(u *unit) bool { return u.prog != progUnknown && u.prog != progSelf }

// progName names the program of u or w that is not the test binary.
func progName(u, w *unit) string {
	if external(u) {
		return u.prog
	}
	return w.prog
}

// testRunFlag matches the test binary's -test.run flag and its pattern.
var testRunFlag = regexp.MustCompile(`^-{1,2}test\.run=(.*)$`)

// childCode returns the functions a child running the test binary runs:
// the tests its -test.run flag selects, TestMain, and the package
// functions they call. A child that runs them shares with every other
// child the constants they name (a fixed port, a lock file's path).
func (c *checker) childCode(u *unit) []*ast.FuncDecl {
	if u.prog != progSelf {
		return nil
	}
	var pats []*regexp.Regexp
	visit := func(n ast.Node) bool {
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		tv, ok := c.info.Types[e]
		if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
			return true
		}
		if m := testRunFlag.FindStringSubmatch(constant.StringVal(tv.Value)); m != nil {
			// A subtest pattern (A/B) selects its top-level test by A.
			top, _, _ := strings.Cut(m[1], "/")
			if re, err := regexp.Compile(top); err == nil {
				pats = append(pats, re)
			}
		}
		return false
	}
	for _, s := range u.stmts {
		ast.Inspect(s, visit)
	}
	for _, fd := range c.unitHelpers(u) {
		ast.Inspect(fd.Body, visit)
	}
	var roots []*ast.FuncDecl
	all := c.allDecls()
	for fn, fd := range all {
		if fd.Body == nil || fd.Recv != nil {
			continue
		}
		if fn.Name() == "TestMain" {
			roots = append(roots, fd)
			continue
		}
		if !match.IsTestFunc(c.info, fd) || fd == c.fn {
			continue
		}
		for _, re := range pats {
			if re.MatchString(fn.Name()) {
				roots = append(roots, fd)
				break
			}
		}
	}
	// Every child runs the package's initialisation: its init functions
	// and the initialisers of its package-level variables, and what they
	// call (var exeDir = installDir(), which asks for os.Executable: a
	// cache beside the executable is every child's; red team batch 15,
	// portablecache).
	roots = append(roots, c.initCode()...)
	// In source order: the first hazard found is named, the same on every
	// run (all is a map).
	sort.Slice(roots, func(i, j int) bool { return roots[i].Pos() < roots[j].Pos() })
	// The package functions they call, transitively.
	seen := map[*ast.FuncDecl]bool{}
	var out []*ast.FuncDecl
	var add func(fd *ast.FuncDecl)
	add = func(fd *ast.FuncDecl) {
		if seen[fd] || len(seen) > 200 {
			return
		}
		seen[fd] = true
		out = append(out, fd)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			var fn *types.Func
			switch n := n.(type) {
			case *ast.CallExpr:
				fn = match.Callee(c.info, n)
			case *ast.Ident: // a function value: mux.HandleFunc("/", handle)
				fn, _ = c.info.Uses[n].(*types.Func)
			}
			if fn != nil && fn.Pkg() == c.pass.Pkg {
				if d := all[fn.Origin()]; d != nil && d.Body != nil {
					add(d)
				}
			}
			return true
		})
	}
	for _, fd := range roots {
		add(fd)
	}
	return out
}

// initCode returns the package's initialisation as declarations: its
// init functions, and one per file holding the initialisers of its
// package-level variables that call a function, as statements (a body no
// one calls, for the readers of childCode). An initialiser without a call
// (var lockPath = "/tmp/x.lock") is read where the variable is used
// (fileArgs).
func (c *checker) initCode() []*ast.FuncDecl {
	var out []*ast.FuncDecl
	for _, f := range c.pass.AllFiles {
		var inits []ast.Stmt
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == "init" && d.Body != nil {
					out = append(out, d)
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok {
						for _, v := range vs.Values {
							if c.calls(v) {
								inits = append(inits, &ast.ExprStmt{X: v})
							}
						}
					}
				}
			}
		}
		if len(inits) > 0 {
			out = append(out, &ast.FuncDecl{Name: ast.NewIdent("init"), Type: &ast.FuncType{Func: inits[0].Pos()}, Body: &ast.BlockStmt{Lbrace: inits[0].Pos(), List: inits, Rbrace: inits[len(inits)-1].End()}})
		}
	}
	return out
}

// calls reports whether e calls a function (not a conversion).
func (c *checker) calls(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && !match.IsConversion(c.info, call) {
			found = true
		}
		return !found
	})
	return found
}

// allDecls maps the functions of every file of the package, the code
// under test with the tests, to their declarations: a child running the
// test binary runs both.
func (c *checker) allDecls() map[*types.Func]*ast.FuncDecl {
	if c.all == nil {
		c.all = match.FuncDecls(c.info, c.pass.AllFiles)
	}
	return c.all
}

// unitHelpers returns the bodies of the package functions a unit calls to
// build or run its command: the helper it runs in, cmd := child("a").
func (c *checker) unitHelpers(u *unit) []*ast.FuncDecl {
	var out []*ast.FuncDecl
	for _, s := range u.stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg {
					if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil {
						out = append(out, fd)
					}
				}
			}
			return true
		})
	}
	return out
}

// userDirs are the places every process of the user shares.
var userDirs = []string{"UserCacheDir", "UserConfigDir", "UserHomeDir"}

// userDirUse says where the code a child runs asks for a directory every
// process of the user shares, or "".
func (c *checker) userDirUse(code []*ast.FuncDecl) string {
	var why string
	for _, fd := range code {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && why == "" && match.IsPkgFunc(c.info, call, "os", userDirs...) {
				why = fmt.Sprintf("the children's code asks for os.%s (%s), which every child shares: one may read what another writes there, and running them together may flake where a few runs pass", match.Callee(c.info, call).Name(), c.line(call))
			}
			return why == ""
		})
	}
	return why
}

// processDirs are the functions of package os that name a place every
// child shares whatever view it is given: the executable's (every child
// runs the same binary, so a "portable" cache beside it is every
// child's), and os.TempDir, which follows TMPDIR but keeps state outside
// the child's working directory, one wrong environment away from shared.
var processDirs = []string{"Executable", "TempDir"}

// processPlaceUse says where the code a child runs asks for the
// executable's path (os.Executable, os.Args[0]: the same for every child
// running the test binary) or os.TempDir, or "".
func (c *checker) processPlaceUse(code []*ast.FuncDecl) string {
	var why string
	for _, fd := range code {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if why != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.CallExpr:
				if match.IsPkgFunc(c.info, n, "os", "Getenv", "LookupEnv") && len(n.Args) == 1 {
					if v, ok := c.constString(n.Args[0]); ok && pwdVars[v] {
						why = fmt.Sprintf("the children's code reads the environment's %s (%s)%s: a place every child shares, one may read what another writes there, and running them together may flake where a few runs pass", v, c.line(n), pwdWhy)
						return false
					}
				}
				if match.IsPkgFunc(c.info, n, "os", processDirs...) {
					why = fmt.Sprintf("the children's code asks for os.%s (%s), a place every child shares whatever view it is given: a file it keeps there (a cache beside the executable, a session), one may read what another writes, and running them together may flake where a few runs pass", match.Callee(c.info, n).Name(), c.line(n))
				}
			case *ast.IndexExpr:
				if isArgs0(c.info, n) {
					why = fmt.Sprintf("the children's code reads the executable's path, os.Args[0] (%s), which every child running the test binary shares: a file it keeps beside the executable, one may read what another writes, and running them together may flake where a few runs pass", c.line(n))
				}
			}
			return why == ""
		})
	}
	return why
}

// isArgs0 reports whether e is os.Args[0].
func isArgs0(info *types.Info, e *ast.IndexExpr) bool {
	sel, ok := ast.Unparen(e.X).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Args" {
		return false
	}
	v, ok := info.Uses[sel.Sel].(*types.Var)
	if !ok || v.Pkg() == nil || v.Pkg().Path() != "os" {
		return false
	}
	tv, ok := info.Types[e.Index]
	return ok && tv.Value != nil && tv.Value.String() == "0"
}

// placeHazard says where the code the units run, or a build of the
// package the analysis does not type, asks for a place every child
// shares whatever view it is given (processPlaceUse, leftOutPlace), or
// "". It comes after the view: a child without a view of its own is
// reported for that first.
func (c *checker) placeHazard(units []*unit) string {
	for _, u := range units {
		if why := c.processPlaceUse(c.childCode(u)); why != "" {
			return why
		}
		if why := c.ancestorUse(c.childCode(u)); why != "" {
			return why
		}
		if why := c.typedPlaceUse(c.childCode(u)); why != "" {
			return why
		}
	}
	return c.leftOutPlace()
}

// clockFuncs are package time's functions that read the clock or start a
// timer: a test that refers to one may measure how long its children
// take.
var clockFuncs = map[string]bool{"Now": true, "Since": true, "Until": true, "After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}

// timedCallee says where the test calls a function outside the standard
// library (a helper of its own package, a stopwatch of the module) whose
// summary reads the clock or runs a timer, or "": that function may
// measure the children as the test's own reading would (red team batch
// 19, completionwatch, hookdeadline).
func (c *checker) timedCallee(call *ast.CallExpr) string {
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return ""
	}
	if c.pass.Effects == nil {
		return ""
	}
	s := c.pass.Effects.Of(fn)
	if s == nil {
		return ""
	}
	if s.Clock != nil {
		return fmt.Sprintf("the test calls %s (%s: %s): run together, the children take other times than one after another, and what it measures of them changes", match.PkgFuncName(fn), c.line(call), s.Clock.Why())
	}
	for _, e := range s.Effects {
		// A sleep is a wait, not a budget; a timer, a ticker or a
		// deadline is one.
		if e.Kind == effect.Timer && !strings.Contains(e.What, "sleeps") {
			return fmt.Sprintf("the test calls %s (%s: %s): run together, each child gets the whole of a budget rather than what the earlier ones left", match.PkgFuncName(fn), c.line(call), e.Why())
		}
	}
	return ""
}
