package spawn

import (
	_ "embed"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
)

//go:embed doc.md
var doc string

// Rule runs a test's independent child processes concurrently. It is
// opt-in: whether two children share a file (a cache in their
// directories' parent, a lock in $TMPDIR) is a matter of every
// implementation of the child, not only the one the analysis reads, and
// the rule fixes only children whose whole view of the file system the
// test keeps apart, which few tests do (view.go).
var Rule = &rule.Rule{
	Name:      "spawn",
	Doc:       doc,
	Default:   false,
	Flags:     rule.Flags("spawn", noNewDeps),
	Prefilter: prefilter,
	Run:       run,
	Requires:  []*rule.Analysis{match.Decls},
}

var noNewDeps = rule.BoolOption("no-new-deps", false, "never add a module to go.mod nor ask the go command for one: where the package's imports do not reach golang.org/x/sync/errgroup, run children with sync.WaitGroup")

// syncModule is the module of errgroup.
const syncModule = "golang.org/x/sync"

// prefilter: a file that runs a child imports os/exec; a helper that does
// it for the test lives in a file of the same package that does.
func prefilter(src []byte, _ rule.Values) bool {
	return rule.ContainsAny(src, `"os/exec"`)
}

func run(pass *rule.Pass) error {
	c := &checker{
		pass:   pass,
		info:   pass.TypesInfo,
		decls:  match.DeclsOf(pass),
		spawns: map[*types.Func]*helperInfo{},
		idle:   map[*types.Func]idleAt{},
		quiet:  map[*types.Func]string{},
		off:    map[*types.Func]string{},
	}
	for _, f := range pass.Files {
		if !strings.HasSuffix(pass.Fset.File(f.Pos()).Name(), "_test.go") || ast.IsGenerated(f) {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || strings.HasPrefix(fd.Name.Name, "Benchmark") {
				continue // a benchmark's children are what it measures
			}
			c.file, c.fn = f, fd
			c.scan(fd.Body)
		}
	}
	return nil
}

// checker finds the spawn sites of one package.
type checker struct {
	pass   *rule.Pass
	info   *types.Info
	decls  map[*types.Func]*ast.FuncDecl
	spawns map[*types.Func]*helperInfo // package functions that run a child
	// idle remembers the functions found not to run a child, so that a
	// helper every test calls is read once (fiber: 12% of a check). The
	// answer holds at that depth or deeper, while no function has been
	// found to run one since (gen), and only if the walk met no function
	// still being followed (cut): then following it again would give the
	// same answer.
	idle  map[*types.Func]idleAt
	gen   int                           // how many functions have been found to run a child
	cut   bool                          // the current walk met a function still being followed
	quiet map[*types.Func]string        // "" for functions that leave children alone
	off   map[*types.Func]string        // "" for functions that may run off the test goroutine
	all   map[*types.Func]*ast.FuncDecl // every file's functions (allDecls)
	// leftOut is what leftOutHazard found in the files the build leaves
	// out, once read.
	leftOut *string

	file *ast.File
	fn   *ast.FuncDecl
}

// scan looks for spawn chains and loops in every statement list of root.
func (c *checker) scan(root ast.Node) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			c.chains(n, n.List)
		case *ast.CaseClause:
			c.chains(n, n.Body)
		case *ast.CommClause:
			c.chains(n, n.Body)
		case *ast.RangeStmt:
			c.loop(n)
		}
		return true
	})
}

// A unit is the code that runs one child to completion: the statements
// that build the command and the one that runs it (for Start, also the one
// that waits for it).
type unit struct {
	stmts []ast.Stmt      // in order; the last one runs or waits for the child
	call  *ast.CallExpr   // the call that runs the child (or the helper)
	why   string          // non-empty: the unit cannot run off the test goroutine
	cmds  []*ast.CallExpr // the exec.Command calls
	prog  string          // what it runs: progSelf, "name" of a constant program, an expression, or progUnknown
	dir   string          // the expression of its working directory, "" for the test's own
	in    string          // the helper it runs in, if any
}

// stmtKinds: what a statement of a test is to this rule.
const (
	kindOther = iota
	kindPrep  // builds a command: cmd := exec.Command(...), cmd.Dir = dir
	kindRun   // runs a child to completion (or starts or waits for one)
)

// unitAt parses a unit starting at list[i]: build statements, then the
// statement that runs the child. It returns nil if there is none.
func (c *checker) unitAt(list []ast.Stmt, i int) (*unit, int) {
	u := &unit{}
	j := i
	for j < len(list) && c.isPrep(list[j], u) {
		j++
	}
	if j >= len(list) {
		return nil, i
	}
	call, method := c.runCall(list[j])
	if call == nil {
		return nil, i
	}
	switch method {
	case "Wait":
		return nil, i // its Start is not part of this unit
	case "Start":
		// Start, an optional check of its error, then Wait on the same
		// command.
		k := j + 1
		if k < len(list) && c.isEarlyCheck(list[k]) {
			k++
		}
		if k >= len(list) {
			return nil, i
		}
		wait, m := c.runCall(list[k])
		if m != "Wait" || !sameRoot(c.info, recvOf(call), recvOf(wait)) {
			return nil, i
		}
		u.stmts = append(u.stmts, list[i:k+1]...)
		u.call = call
		c.addCmds(u, list[i:k+1])
		return u, k + 1
	}
	u.stmts = append(u.stmts, list[i:j+1]...)
	u.call = call
	if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg {
		if h := c.spawner(fn); h != nil && h.why != "" {
			u.why = fmt.Sprintf("%s, which %s", fn.Name(), h.why)
		}
	}
	c.addCmds(u, list[i:j+1])
	if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg {
		u.in = fn.Name()
		u.prog = c.helperProgram(fn)
	}
	return u, j + 1
}

// addCmds records the exec.Command calls of stmts, the program the first
// runs and the directory it runs in.
func (c *checker) addCmds(u *unit, stmts []ast.Stmt) {
	for _, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if match.IsPkgFunc(c.info, n, "os/exec", "Command", "CommandContext") {
					u.cmds = append(u.cmds, n)
				}
			case *ast.AssignStmt:
				if len(n.Lhs) == 1 && len(n.Rhs) == 1 {
					if sel, ok := ast.Unparen(n.Lhs[0]).(*ast.SelectorExpr); ok && sel.Sel.Name == "Dir" && match.IsNamed(c.info.TypeOf(sel.X), "os/exec", "Cmd") {
						u.dir = types.ExprString(n.Rhs[0])
					}
				}
			}
			return true
		})
	}
	u.prog = progUnknown
	if len(u.cmds) > 0 {
		u.prog = c.program(u.cmds[0])
		return
	}
	// The command comes from a package function: cmd := child("a").
	for _, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || u.prog != progUnknown {
				return u.prog == progUnknown
			}
			if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg && match.IsNamed(c.info.TypeOf(call), "os/exec", "Cmd") {
				u.prog = c.helperProgram(fn)
			}
			return true
		})
	}
}

// Programs a unit may run.
const (
	progSelf    = "the test binary" // os.Args[0]: the package's own helper process
	progUnknown = ""                // hidden in a helper the analysis cannot read
)

// program says what an exec.Command call runs.
func (c *checker) program(call *ast.CallExpr) string {
	name := c.programName(call)
	if name == nil {
		return progUnknown
	}
	if ix, ok := ast.Unparen(name).(*ast.IndexExpr); ok {
		if sel, ok := ast.Unparen(ix.X).(*ast.SelectorExpr); ok {
			if v, ok := c.info.Uses[sel.Sel].(*types.Var); ok && v.Pkg() != nil && v.Pkg().Path() == "os" && v.Name() == "Args" {
				if n, ok := match.ConstInt(c.info, ix.Index); ok && n == 0 {
					return progSelf
				}
			}
		}
	}
	if s, ok := match.ConstString(c.info, name); ok {
		return s
	}
	return types.ExprString(name)
}

// helperProgram says what the package function fn runs: progSelf when
// every command it makes runs the test binary, else progUnknown.
func (c *checker) helperProgram(fn *types.Func) string {
	fd := c.decls[fn.Origin()]
	if fd == nil || fd.Body == nil {
		return progUnknown
	}
	prog := progUnknown
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if match.IsPkgFunc(c.info, call, "os/exec", "Command", "CommandContext") {
			if c.program(call) != progSelf {
				prog = "?"
				return false
			}
			if prog == progUnknown {
				prog = progSelf
			}
		}
		return true
	})
	if prog != progSelf {
		return progUnknown
	}
	return prog
}

// unproven says why the analysis cannot be sure that the units share no
// files: the program hides in a helper, or it is not the test binary, so
// that a directory of its own does not show it keeps to it (outsideHazard
// has found no mention of a place outside it in the text in sight). It
// returns "" when every unit runs the test binary.
func (c *checker) unproven(us []*unit) string {
	for i, u := range us {
		if u.prog == progUnknown {
			what := "code"
			if u.in != "" {
				what = u.in
			}
			return fmt.Sprintf("the %s child runs in %s, whose commands, files and environment the analysis cannot see", ordinal(i), what)
		}
	}
	for _, u := range us {
		if why := c.childUnseen(u); why != "" {
			return why
		}
	}
	for i, u := range us {
		if external(u) {
			return fmt.Sprintf("the %s child runs %s, %s", ordinal(i), u.prog, unseenProgram)
		}
	}
	return ""
}

// unseenProgram completes "the first child runs sh, ...".
const unseenProgram = "which the analysis cannot see into: a directory of its own does not show it keeps to it (a program may reach .., $HOME or /tmp, or take a lock; the directories t.TempDir gives one test share their parent)"

// programName returns the argument of an exec.Command call that names the
// program.
func (c *checker) programName(call *ast.CallExpr) ast.Expr {
	i := 0
	if match.IsPkgFunc(c.info, call, "os/exec", "CommandContext") {
		i = 1
	}
	if i < len(call.Args) {
		return call.Args[i]
	}
	return nil
}

// runCall returns the call in stmt that runs a child to completion (Run,
// Output, CombinedOutput on an *exec.Cmd, or a package function that does
// so), or starts (Start) or waits for (Wait) one, and the method's name
// ("" for a helper).
func (c *checker) runCall(stmt ast.Stmt) (*ast.CallExpr, string) {
	var e ast.Expr
	switch s := stmt.(type) {
	case *ast.ExprStmt:
		e = s.X
	case *ast.AssignStmt:
		if len(s.Rhs) != 1 {
			return nil, ""
		}
		e = s.Rhs[0]
	case *ast.IfStmt:
		if s.Init == nil {
			return nil, ""
		}
		return c.runCall(s.Init)
	default:
		return nil, ""
	}
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return nil, ""
	}
	if match.IsMethod(c.info, call, "os/exec", "Run", "Output", "CombinedOutput", "Start", "Wait") {
		if fn := match.Callee(c.info, call); fn != nil {
			return call, fn.Name()
		}
	}
	if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg && c.spawner(fn) != nil {
		return call, ""
	}
	return nil, ""
}

// recvOf returns the receiver expression of a method call.
func recvOf(call *ast.CallExpr) ast.Expr {
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		return sel.X
	}
	return nil
}

func sameRoot(info *types.Info, a, b ast.Expr) bool {
	if a == nil || b == nil {
		return false
	}
	ra, rb := match.Root(info, a), match.Root(info, b)
	return ra != nil && ra == rb
}

// isPrep reports whether stmt builds a command for the child the unit
// runs: it declares variables from exec.Command and side-effect-free
// calls, or sets a field of an *exec.Cmd.
func (c *checker) isPrep(stmt ast.Stmt, u *unit) bool {
	switch s := stmt.(type) {
	case *ast.AssignStmt:
		if call, _ := c.runCall(s); call != nil {
			return false
		}
		if s.Tok == token.DEFINE {
			return c.prepExprs(s.Rhs)
		}
		if s.Tok != token.ASSIGN || len(s.Lhs) != 1 {
			return false
		}
		// cmd.Dir = dir, cmd.Env = append(os.Environ(), "X=1")
		sel, ok := ast.Unparen(s.Lhs[0]).(*ast.SelectorExpr)
		if !ok || !match.IsNamed(c.info.TypeOf(sel.X), "os/exec", "Cmd") {
			return false
		}
		return c.prepExprs(s.Rhs)
	case *ast.DeclStmt:
		g, ok := s.Decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			return false
		}
		for _, spec := range g.Specs {
			if vs, ok := spec.(*ast.ValueSpec); !ok || len(vs.Values) > 0 {
				return false
			}
		}
		return true
	}
	return false
}

// prepExprs reports whether exprs call nothing but exec.Command and
// functions without side effects.
func (c *checker) prepExprs(exprs []ast.Expr) bool {
	ok := true
	for _, e := range exprs {
		ast.Inspect(e, func(n ast.Node) bool {
			if !ok {
				return false
			}
			switch n := n.(type) {
			case *ast.CallExpr:
				if match.IsPkgFunc(c.info, n, "os/exec", "Command", "CommandContext") {
					return true
				}
				if why := c.callEffect(n, false); why != "" {
					ok = false
				}
			case *ast.FuncLit:
				ok = false
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					ok = false
				}
			}
			return ok
		})
	}
	return ok
}

// isEarlyCheck reports whether stmt is `if err != nil { ...; t.Fatal(...) }`
// with no init: the check of a Start's error before its Wait.
func (c *checker) isEarlyCheck(stmt ast.Stmt) bool {
	s, ok := stmt.(*ast.IfStmt)
	return ok && s.Init == nil && s.Else == nil && c.terminates(s.Body)
}

// terminates reports whether block ends by leaving the test: t.Fatal*,
// t.FailNow, t.Skip*, or return.
func (c *checker) terminates(b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	switch s := b.List[len(b.List)-1].(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.ExprStmt:
		call, ok := ast.Unparen(s.X).(*ast.CallExpr)
		return ok && match.IsMethod(c.info, call, "testing", "Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow")
	}
	return false
}

// A helperInfo describes a package function that runs a child.
type helperInfo struct {
	why string // non-empty: it cannot run off the test goroutine, and why
}

// spawner returns what is known of fn if it (or a package function it
// calls, two levels deep) runs a child to completion, or nil.
func (c *checker) spawner(fn *types.Func) *helperInfo {
	return c.spawnerDepth(fn, 0)
}

// idleAt is when a function was found not to run a child (checker.idle).
type idleAt struct{ depth, gen int }

func (c *checker) spawnerDepth(fn *types.Func, depth int) *helperInfo {
	fn = fn.Origin()
	if h, ok := c.spawns[fn]; ok {
		if h == nil {
			c.cut = true
		}
		return h
	}
	if q, ok := c.idle[fn]; ok && q.gen == c.gen && depth >= q.depth {
		return nil
	}
	fd := c.decls[fn]
	if fd == nil || fd.Body == nil || depth > 2 {
		return nil
	}
	c.spawns[fn] = nil // while it is followed
	outer := c.cut
	c.cut = false
	defer func() { c.cut = c.cut || outer }()
	runs := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if match.IsMethod(c.info, call, "os/exec", "Run", "Output", "CombinedOutput", "Wait") {
			runs = true
		}
		if callee := match.Callee(c.info, call); callee != nil && callee.Pkg() == c.pass.Pkg && callee.Origin() != fn {
			if h := c.spawnerDepth(callee, depth+1); h != nil {
				runs = true
			}
		}
		return true
	})
	if !runs {
		delete(c.spawns, fn)
		if !c.cut {
			c.idle[fn] = idleAt{depth: depth, gen: c.gen}
		}
		return nil
	}
	h := &helperInfo{why: c.offTest(fn)}
	c.spawns[fn] = h
	c.gen++
	return h
}

// globalWrite says which package-level variable body writes, if any.
func (c *checker) globalWrite(body ast.Node) string {
	var written *types.Var
	if match.ModifiesFunc(c.info, body, func(v *types.Var) bool {
		if match.IsPackageLevel(v) && v.Pkg() == c.pass.Pkg {
			written = v
			return true
		}
		return false
	}) != nil {
		return "writes package-level variable " + written.Name()
	}
	return ""
}

// offTest returns why the package function fn must run on the test
// goroutine (it, or a package function it calls, calls t.Fatal and the
// like, or writes a package-level variable), or "".
func (c *checker) offTest(fn *types.Func) string {
	key := fn.Origin()
	if w, ok := c.off[key]; ok {
		return w
	}
	fd := c.decls[key]
	if fd == nil || fd.Body == nil {
		return ""
	}
	c.off[key] = ""
	why := c.globalWrite(fd.Body)
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || why != "" {
			return why == ""
		}
		if match.IsMethod(c.info, call, "testing", onTestOnly...) {
			why = "calls t." + match.Callee(c.info, call).Name()
		} else if callee := match.Callee(c.info, call); callee != nil && callee.Pkg() == c.pass.Pkg {
			if w := c.offTest(callee); w != "" {
				why = "calls " + callee.Name() + ", which " + w
			}
		}
		return why == ""
	})
	c.off[key] = why
	return why
}

// onTestOnly are the testing methods that must run on the test goroutine
// (or change the process for every test).
var onTestOnly = []string{"Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow", "Run", "Parallel", "Setenv", "Chdir", "TempDir"}

// errNoRequire is the reason when the engine cannot add requirements.
var errNoRequire = errors.New("the engine cannot add golang.org/x/sync to go.mod")
