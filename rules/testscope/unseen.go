package testscope

import (
	"go/ast"
	"go/types"
	"slices"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// unseenDir reports whether the code under test never sees the directory
// (or the context) dir, made in body: every use of it, and of the locals built from it
// (derived), is the test's own, through the standard library's path,
// string and file functions (filepath.Join, os.WriteFile, os.ReadFile,
// fmt.Sprintf, a *os.File's methods, t.Log), and what they return goes
// nowhere but into such locals, a condition or a statement of its own.
// Then t.TempDir's path, mode and lifetime reach only statements the rule
// reads in full, and its fix is not a hypothesis (rule.Change.Unseen): a
// path given to the code, stored, sent, returned, put in the environment
// or run as a process is seen (red team batch 24: every unsound paths
// fix handed the directory to the code).
func (c *checker) unseenDir(body *ast.BlockStmt, dir *types.Var) bool {
	under := c.derived(body, dir)
	seen := false
	var stack []ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		if seen {
			return false
		}
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := c.info.Uses[id].(*types.Var); ok && under[v] && (c.inLaterLit(stack) || !c.ownUse(stack, id, under)) {
				seen = true
			}
		}
		stack = append(stack, n)
		return true
	})
	return !seen
}

// inLaterLit reports whether stack (outermost first) passes through a
// function literal that may run later than where it is written: one not
// called in place nor run as a subtest by t.Run (a hook, a callback, an
// AfterFunc, a deferred or goroutine literal), or a deferred statement
// or goroutine of any kind. It runs when the code, a
// timer or the test's end decides, and what it reads then (the context
// cancelled or not) is what the fix changes (red team batch 35,
// evicthook, breakerqt).
func (c *checker) inLaterLit(stack []ast.Node) bool {
	for i, n := range stack {
		switch n.(type) {
		case *ast.DeferStmt, *ast.GoStmt:
			// Deferred: run when the test function returns, after a
			// cancel deferred later and before t.Context()'s (a
			// deferred t.Run's subtest too; red team batch 36,
			// shipafter).
			return true
		}
		lit, ok := n.(*ast.FuncLit)
		if !ok || i == 0 {
			continue
		}
		call, ok := stack[i-1].(*ast.CallExpr)
		switch {
		case ok && ast.Unparen(call.Fun) == ast.Expr(lit):
			if i >= 2 {
				if _, ok := stack[i-2].(*ast.DeferStmt); ok {
					return true
				}
				if _, ok := stack[i-2].(*ast.GoStmt); ok {
					return true
				}
			}
		case ok && len(call.Args) == 2 && ast.Unparen(call.Args[1]) == ast.Expr(lit) && match.IsMethod(c.info, call, "testing", "Run"):
		default:
			return true
		}
	}
	return false
}

// ownUse reports whether the use id (stack holds its parents, outermost
// first) stays in the test's own statements.
func (c *checker) ownUse(stack []ast.Node, id *ast.Ident, under map[*types.Var]bool) bool {
	var child ast.Node = id
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr, *ast.BinaryExpr:
		case *ast.StarExpr:
		case *ast.SelectorExpr:
			// Only a method of a standard value the test holds (f.Write
			// of an *os.File): a field is handed on with its value.
			if p.X != child || i == 0 {
				return false
			}
			call, ok := stack[i-1].(*ast.CallExpr)
			if !ok || call.Fun != ast.Expr(p) || !ownFunc(c.info, p.Sel) {
				return false
			}
			child, i = call, i-1
			continue
		case *ast.CallExpr:
			if p.Fun == child {
				return false
			}
			conversion := c.info.Types[p.Fun].IsType()
			if !conversion && !match.IsBuiltin(c.info, p.Fun, "len") && !ownCallee(c.info, p) {
				return false
			}
			// Written as a file's contents, the path reaches whoever
			// reads the file (a pointer file, a config the code finds
			// by another path: red team batch 29, gitlink).
			if contentArg(c.info, p, child) {
				return false
			}
			// The call's other arguments meet what it makes of the
			// path: a callback of the package's code that
			// filepath.WalkDir hands every path to, a writer of the
			// code that fmt.Fprintln writes the path to (red team
			// batch 27, migwalk).
			for _, arg := range p.Args {
				if arg != child && !c.plainArg(arg, under) {
					return false
				}
			}
		case *ast.AssignStmt:
			if slices.Contains(p.Lhs, ast.Expr(child.(ast.Expr))) {
				return true // assigned, not used
			}
			for _, l := range p.Lhs {
				v := match.Root(c.info, l)
				if id, ok := l.(*ast.Ident); ok && v == nil {
					v, _ = c.info.Defs[id].(*types.Var)
				}
				if !isBlank(l) && (v == nil || !under[v]) {
					return false
				}
			}
			return true
		case *ast.ValueSpec:
			for _, n := range p.Names {
				if v, ok := c.info.Defs[n].(*types.Var); !ok || !under[v] {
					return false
				}
			}
			return true
		case *ast.ExprStmt, *ast.DeferStmt, *ast.IfStmt, *ast.SwitchStmt:
			return true
		default:
			return false
		}
		child = stack[i]
	}
	return false
}

// ownPackages are the standard packages whose functions keep a path
// within the test: they build strings and touch files, and neither
// start code nor change the process for others.
var ownPackages = map[string]bool{"path/filepath": true, "path": true, "strings": true, "bytes": true, "fmt": true, "os": true, "io": true, "testing": true, "errors": true, "context": true}

// processWide are the functions of ownPackages that hand a path to the
// process or to other code.
var processWide = map[string]bool{"os.Setenv": true, "os.Chdir": true, "os.StartProcess": true, "os.Symlink": true, "os.Link": true, "os.Rename": true, "os.Chmod": true, "os.Chtimes": true, "os.Lchown": true, "os.Chown": true, "os.DirFS": true, "os.OpenRoot": true, "testing.Setenv": true, "testing.Chdir": true}

// ownCallee reports whether call's callee is a function or method of
// ownPackages other than processWide.
func ownCallee(info *types.Info, call *ast.CallExpr) bool {
	fn := match.Callee(info, call)
	return fn != nil && ownFn(fn)
}

// ownFunc reports whether id names a function or method of ownPackages
// other than processWide.
func ownFunc(info *types.Info, id *ast.Ident) bool {
	fn, ok := info.Uses[id].(*types.Func)
	return ok && ownFn(fn)
}

// ownFn reports whether fn is a function or method of ownPackages other
// than processWide.
func ownFn(fn *types.Func) bool {
	if fn.Pkg() == nil || !ownPackages[fn.Pkg().Path()] {
		return false
	}
	return !processWide[fn.Pkg().Name()+"."+fn.Name()]
}

// plainArg reports whether e, an argument beside the directory in a call
// of the standard library, holds nothing of the code under test that
// could receive what the call makes of the path: a constant, a value of a
// basic type (or a slice of one), another value built from the directory,
// or a standard value the test made itself (an *os.File, a
// *strings.Reader). A function value, an interface value, or a value of
// another package's type may be the code's.
func (c *checker) plainArg(e ast.Expr, under map[*types.Var]bool) bool {
	e = ast.Unparen(e)
	tv := c.info.Types[e]
	if tv.Value != nil {
		return true
	}
	if id, ok := e.(*ast.Ident); ok {
		if v, ok := c.info.Uses[id].(*types.Var); ok && under[v] {
			return true
		}
	}
	t := tv.Type
	if t == nil {
		return false
	}
	if basicOrSlice(t) {
		return true
	}
	if _, ok := t.Underlying().(*types.Signature); ok {
		return false
	}
	if types.IsInterface(t) || !stdType(t) {
		return false
	}
	switch e := e.(type) {
	case *ast.Ident:
		v, local := c.info.Uses[e].(*types.Var)
		return local && !match.IsPackageLevel(v)
	case *ast.CallExpr:
		if !ownCallee(c.info, e) {
			return false
		}
		for _, a := range e.Args {
			if !c.plainArg(a, under) {
				return false
			}
		}
		return true
	}
	return false
}

// basicOrSlice reports whether t is a basic type, or a slice of one
// ([]byte, []string).
func basicOrSlice(t types.Type) bool {
	if s, ok := t.Underlying().(*types.Slice); ok {
		t = s.Elem()
	}
	_, ok := t.Underlying().(*types.Basic)
	return ok
}

// stdType reports whether t, or what it points to, is a named type of the
// standard library.
func stdType(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	path := n.Obj().Pkg().Path()
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// contentArg reports whether arg is what call writes, not where: the data
// of os.WriteFile, io.WriteString's string, what fmt.Fprint and its kin
// format, the argument of a Write, WriteString, WriteAt, WriteByte or
// WriteRune method.
func contentArg(info *types.Info, call *ast.CallExpr, arg ast.Node) bool {
	fn := match.Callee(info, call)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	at := -1
	for i, a := range call.Args {
		if a == arg {
			at = i
		}
	}
	if at < 0 {
		return false
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		switch fn.Name() {
		case "Write", "WriteString", "WriteAt", "WriteByte", "WriteRune":
			return at == 0
		}
		return false
	}
	switch match.PkgFuncName(fn) {
	case "os.WriteFile", "io.WriteString":
		return at == 1
	case "fmt.Fprint", "fmt.Fprintf", "fmt.Fprintln":
		return at >= 1
	}
	return false
}
