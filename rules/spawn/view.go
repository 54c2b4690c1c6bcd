package spawn

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The analysis reads the code of the correct children; the bugs a test
// exists to catch live in variants it never sees. A buggy child may keep
// a file at any path it can compute from what it is given: beside its
// directory (a cache or journal in the parent, which every directory
// t.TempDir gives one test shares), in $TMPDIR keyed by the parent's pid
// (as sudo's timestamps are), under $HOME or an XDG directory. One after
// another the later child reads what the earlier one left there; run
// together, each misses it. The correct code shares nothing, so neither
// the analysis nor fix --verify can tell: running children together is
// left invisible to the test only when no such path is common to two
// children, whatever their code. childView requires that of each child:
//
//   - a working directory of its own whose parent is its own too: a
//     filepath.Join of a value only that child is given and constant
//     elements (filepath.Join(dir, "work")), not a bare directory, whose
//     parent may be the one t.TempDir shares between a test's directories;
//   - an environment (cmd.Env) that gives it TMPDIR, HOME, XDG_CACHE_HOME
//     and XDG_CONFIG_HOME of its own ("HOME="+dir), after what it
//     inherits (append(os.Environ(), ...), not before it): what os.TempDir,
//     os.UserHomeDir, os.UserCacheDir and os.UserConfigDir return.
//
// What no condition on the test can exclude remains: a constant absolute
// path or port in a buggy variant (/tmp/tool.lock, 127.0.0.1:8080), an
// ancestor further up than the parent in a variant the rule never reads
// (the code it reads is checked for a climb from the working directory:
// ancestor.go, and os.Getwd and filepath.Abs in the builds it reads from
// their syntax), the home directory of the user database (os/user) in
// such a variant (the code it reads is checked for os/user and
// os.Getppid: typedplace.go), a lock or IPC object named by a constant. The rule names them in the
// fix's Checked as not excluded.

// viewEnv are the variables each child must be given a value of its own
// of: what the os package reads for the places every process of a user
// shares on Unix.
var viewEnv = []string{"TMPDIR", "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"}

// checkedView is the view hazard a fix has excluded, and what it leaves.
const checkedView = "each child runs in a directory of its own whose parent is its own too (filepath.Join(dir, \"work\")), and is given TMPDIR, HOME, XDG_CACHE_HOME and XDG_CONFIG_HOME of its own in cmd.Env after what it inherits, and the test makes no link (os.Symlink, os.Link, ln) that could make two views one: no path a child of any implementation derives from what it is given (its directory's parent, the temporary, home, cache or config directory, a name keyed by the parent's pid there) is another child's; not excluded: a constant absolute path or port, an ancestor above the parent or the user database's home in a variant the rule does not read, that a buggy variant may use"

// viewFix completes the not-fixed reasons of childView.
const viewFix = "a buggy variant the analysis never sees may keep a cache, a session or a journal there, which one after another the later child reads and run together none does, so the test would pass a bug it catches now"

// viewHazard says which unit's view of the file system the others may
// share, or "".
func (c *checker) viewHazard(units []*unit, label func(i int) string) string {
	if why := c.linkHazard(); why != "" {
		return why
	}
	for i, u := range units {
		if why := c.childView(u); why != "" {
			return label(i) + " " + why + "; " + viewFix
		}
	}
	return ""
}

// A viewSet is what the rule found of a unit's directory and environment.
type viewSet struct {
	dirs []ast.Expr // the values assigned to the command's Dir
	envs []ast.Expr // the values assigned to its Env
}

// childView says how the view of u may be shared with another child's:
// "runs in ...", "inherits ...", or "".
func (c *checker) childView(u *unit) string {
	var vs viewSet
	var bodies []ast.Node
	for _, s := range u.stmts {
		bodies = append(bodies, s)
	}
	for _, fd := range c.unitHelpers(u) {
		bodies = append(bodies, fd.Body)
	}
	for _, b := range bodies {
		ast.Inspect(b, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) != len(n.Rhs) {
					return true
				}
				for k, l := range n.Lhs {
					if sel, ok := ast.Unparen(l).(*ast.SelectorExpr); ok && c.isCmd(sel.X) {
						vs.add(sel.Sel.Name, n.Rhs[k])
					}
				}
			case *ast.CompositeLit:
				if match.IsNamed(c.info.TypeOf(n), "os/exec", "Cmd") {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if id, ok := kv.Key.(*ast.Ident); ok {
								vs.add(id.Name, kv.Value)
							}
						}
					}
				}
			}
			return true
		})
	}
	at := c.line(u.call)
	if len(vs.dirs) == 0 {
		return fmt.Sprintf("runs in the test's working directory (%s), which the others share", at)
	}
	for _, d := range vs.dirs {
		if !c.ownParent(d, bodies) {
			return fmt.Sprintf("runs in %s (%s), whose parent the rule cannot show is its own (the directories t.TempDir gives one test share their parent; run it in a subdirectory, filepath.Join(root, \"work\"), of a directory only it is given)", types.ExprString(d), c.line(d))
		}
	}
	for _, k := range viewEnv {
		if !c.givenOwn(vs.envs, k) {
			where := at
			if len(vs.envs) > 0 {
				where = c.line(vs.envs[0])
			}
			return fmt.Sprintf("is given no %s of its own (%s): cmd.Env has no %s=... built from what only that child is given, after what it inherits, so every child may have the same one", k, where, k)
		}
	}
	return ""
}

func (vs *viewSet) add(field string, e ast.Expr) {
	switch field {
	case "Dir":
		vs.dirs = append(vs.dirs, e)
	case "Env":
		vs.envs = append(vs.envs, e)
	}
}

// isCmd reports whether e is an *exec.Cmd or exec.Cmd.
func (c *checker) isCmd(e ast.Expr) bool {
	t := c.info.TypeOf(e)
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	return match.IsNamed(t, "os/exec", "Cmd")
}

// ownParent reports whether the directory e is, with its parent, a
// child's own: filepath.Join (or path.Join) of a value of its own and
// constant relative elements without "..", directly or through a local
// variable defined once so.
func (c *checker) ownParent(e ast.Expr, bodies []ast.Node) bool {
	e = ast.Unparen(e)
	if id, ok := e.(*ast.Ident); ok {
		v, ok := c.info.Uses[id].(*types.Var)
		if !ok || match.IsPackageLevel(v) {
			return false
		}
		def := c.definition(v, bodies)
		return def != nil && c.joinsBelow(def)
	}
	return c.joinsBelow(e)
}

// joinsBelow reports whether e is filepath.Join(own, "elem", ...).
func (c *checker) joinsBelow(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || call.Ellipsis.IsValid() || len(call.Args) < 2 {
		return false
	}
	if !match.IsPkgFunc(c.info, call, "path/filepath", "Join") && !match.IsPkgFunc(c.info, call, "path", "Join") {
		return false
	}
	if !c.own(call.Args[0]) {
		return false
	}
	for _, a := range call.Args[1:] {
		s, ok := match.ConstString(c.info, a)
		if !ok || strings.Trim(s, `/\.`) == "" || strings.Contains(s, "..") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) || strings.Contains(s, ":") {
			return false
		}
	}
	return true
}

// definition returns the value of the one assignment that defines the
// local variable v in bodies or in the test function, or nil when there
// is none or more than one.
func (c *checker) definition(v *types.Var, bodies []ast.Node) ast.Expr {
	var def ast.Expr
	n := 0
	look := func(root ast.Node) {
		ast.Inspect(root, func(x ast.Node) bool {
			a, ok := x.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for k, l := range a.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok {
					continue
				}
				if c.info.Defs[id] == types.Object(v) || c.info.Uses[id] == types.Object(v) {
					n++
					if len(a.Lhs) == len(a.Rhs) {
						def = a.Rhs[k]
					}
				}
			}
			return true
		})
	}
	look(c.fn.Body)
	for _, b := range bodies {
		if b.Pos() < c.fn.Pos() || b.End() > c.fn.End() {
			look(b)
		}
	}
	if n != 1 {
		return nil
	}
	return def
}

// own reports whether e is a value the rule may take as one child's: not
// constant, made of local variables and parameters (which the chain's
// analysis has shown no two children are both given) or a fresh
// t.TempDir, through filepath.Join, path.Join and string concatenation
// only. A package-level variable, os.Getenv or os.TempDir is every
// child's.
func (c *checker) own(e ast.Expr) bool {
	if tv, ok := c.info.Types[e]; !ok || tv.Value != nil {
		return false
	}
	ok, some := true, false
	ast.Inspect(e, func(n ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			switch {
			case match.IsMethod(c.info, n, "testing", "TempDir"):
				some = true
				return false
			case match.IsPkgFunc(c.info, n, "path/filepath", "Join"), match.IsPkgFunc(c.info, n, "path", "Join"):
			default:
				if tv, found := c.info.Types[n.Fun]; found && tv.IsType() {
					return true // a conversion
				}
				ok = false
			}
		case *ast.SelectorExpr:
			if s := c.info.Selections[n]; s != nil && s.Kind() == types.FieldVal {
				ast.Inspect(n.X, func(m ast.Node) bool { return c.localIdent(m, &ok, &some) })
				return false
			}
		case *ast.Ident:
			c.localIdent(n, &ok, &some)
		case *ast.BinaryExpr:
			if n.Op != token.ADD {
				ok = false
			}
		}
		return true
	})
	return ok && some
}

// localIdent notes whether an identifier is a local variable (some) or a
// package-level one (not ok).
func (c *checker) localIdent(n ast.Node, ok, some *bool) bool {
	id, isID := n.(*ast.Ident)
	if !isID {
		return true
	}
	switch o := c.info.Uses[id].(type) {
	case *types.Var:
		if match.IsPackageLevel(o) {
			*ok = false
		} else if !o.IsField() {
			*some = true
		}
	}
	return true
}

// givenOwn reports whether one of the Env values gives the child key=own
// after what it inherits: the entry comes after every os.Environ (or
// cmd.Environ) call in the same value, as exec keeps the last of a
// variable's entries. Every other Env value must keep what was there
// (append(cmd.Env, ...)): a fresh one may drop the entry.
func (c *checker) givenOwn(envs []ast.Expr, key string) bool {
	found := false
	for _, env := range envs {
		if c.ownEntry(env, key) {
			found = true
		} else if !keepsEnv(env) {
			return false
		}
	}
	return found
}

// keepsEnv reports whether env is append(x.Env, ...).
func keepsEnv(env ast.Expr) bool {
	call, ok := ast.Unparen(env).(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false
	}
	if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "append" {
		return false
	}
	sel, ok := ast.Unparen(call.Args[0]).(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Env"
}

// ownEntry reports whether env holds key=own after what it inherits.
func (c *checker) ownEntry(env ast.Expr, key string) bool {
	var entry ast.Expr
	var inherit []token.Pos
	ast.Inspect(env, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if match.IsPkgFunc(c.info, n, "os", "Environ") || match.IsMethod(c.info, n, "os/exec", "Environ") {
				inherit = append(inherit, n.Pos())
			}
		case *ast.BinaryExpr:
			if n.Op != token.ADD {
				return true
			}
			if s, ok := match.ConstString(c.info, n.X); ok && s == key+"=" && c.own(n.Y) && entry == nil {
				entry = n
			}
		}
		return true
	})
	if entry == nil {
		return false
	}
	for _, p := range inherit {
		if p > entry.Pos() {
			return false
		}
	}
	return true
}

// linkHazard says where the test, or a function of the package it calls,
// makes a link (os.Symlink, os.Link, their syscall forms, or runs ln), or
// "". A directory that looks like a child's own may then be a link to
// one another child sees: a test that lints one fixture checkout from
// two views links each view's work/ to it, and a cache a buggy linter
// keeps in the directory it runs in is one for both (red team batch 14,
// linkedcheckout). Which link points where is not read: any keeps the
// children in order.
func (c *checker) linkHazard() string {
	var why string
	seen := map[*ast.FuncDecl]bool{}
	var walk func(body ast.Node)
	walk = func(body ast.Node) {
		ast.Inspect(body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || why != "" {
				return why == ""
			}
			switch {
			case match.IsPkgFunc(c.info, call, "os", "Symlink", "Link"), match.IsPkgFunc(c.info, call, "syscall", "Symlink", "Link"),
				match.IsPkgFunc(c.info, call, "golang.org/x/sys/unix", "Symlink", "Link", "Symlinkat", "Linkat"):
				why = fmt.Sprintf("the test makes a link (%s at %s): a directory that looks like a child's own may be a link to one another child sees, and a buggy variant may keep a cache there that one after another the later child reads and run together none does", types.ExprString(call.Fun), c.line(call))
			case match.IsPkgFunc(c.info, call, "os/exec", "Command", "CommandContext") && runsLn(c.info, call):
				why = fmt.Sprintf("the test runs ln (%s): a directory that looks like a child's own may be a link to one another child sees, and a buggy variant may keep a cache there that one after another the later child reads and run together none does", c.line(call))
			default:
				if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg {
					if fd := c.decls[fn.Origin()]; fd != nil && fd.Body != nil && !seen[fd] {
						seen[fd] = true
						walk(fd.Body)
					}
				}
			}
			return why == ""
		})
	}
	seen[c.fn] = true
	walk(c.fn.Body)
	return why
}

// runsLn reports whether an exec.Command call runs ln: its program, the
// first argument after a context, is the constant "ln" or a path ending
// in /ln.
func runsLn(info *types.Info, call *ast.CallExpr) bool {
	i := 0
	if fn := match.Callee(info, call); fn != nil && fn.Name() == "CommandContext" {
		i = 1
	}
	if len(call.Args) <= i {
		return false
	}
	tv, ok := info.Types[call.Args[i]]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return false
	}
	prog := constant.StringVal(tv.Value)
	return prog == "ln" || strings.HasSuffix(prog, "/ln")
}
