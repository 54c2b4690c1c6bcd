package testscope

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// t.TempDir() is about 60 bytes longer than os.MkdirTemp("", x): it holds
// the test's name and a sequence number. A unix socket's path must fit in
// sun_path (108 bytes on Linux, 104 on the BSDs and macOS), so a socket
// that fits under the short directory may not under the long one, and
// correct code fails with "bind: invalid argument". How long the path is
// depends on TMPDIR, which only the machine that runs the tests knows:
// running the rewritten test here proves nothing about a CI machine, so a
// directory that may hold a socket is reported, not fixed.

// socketHazard says where a unix socket may be made under dir, the
// directory the test's fix would move under t.TempDir ("net.Listen("unix",
// ...) at app_test.go:14"), or "" when the rule sees none: the test, or
// a function it gives the directory (or a path, config or value built from
// it), binds or dials a unix socket, names a .sock file, or, by its
// effect summary, uses the network.
func (c *checker) socketHazard(body *ast.BlockStmt, dir *types.Var) string {
	under := c.derived(body, dir)
	mentions := func(n ast.Node) bool { return c.usesAny(n, under) }
	var why string
	ast.Inspect(body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.CompositeLit:
			if match.IsNamed(c.info.TypeOf(n), "net", "UnixAddr") && mentions(n) {
				why = "a net.UnixAddr at " + c.line(n)
			}
		case *ast.CallExpr:
			why = c.socketCall(n, mentions)
		}
		return why == ""
	})
	return why
}

// socketCall says how call may make a unix socket under the directory
// (mentions tells whether an expression holds something built from it),
// or "".
func (c *checker) socketCall(call *ast.CallExpr, mentions func(ast.Node) bool) string {
	args := false
	for _, a := range call.Args {
		args = args || mentions(a)
	}
	recv := false
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		recv = mentions(sel.X)
	}
	if !args && !recv {
		return ""
	}
	name := types.ExprString(call.Fun)
	if args {
		for _, a := range call.Args {
			s, ok := match.ConstString(c.info, a)
			switch {
			case !ok:
			case s == "unix" || s == "unixgram" || s == "unixpacket":
				return fmt.Sprintf("%s(%q, ...) at %s", name, s, c.line(call))
			case strings.HasSuffix(s, ".sock") || strings.HasSuffix(s, ".socket"):
				return fmt.Sprintf("the socket file %q at %s", s, c.line(call))
			}
		}
		if match.IsPkgFunc(c.info, call, "net", "ResolveUnixAddr", "ListenUnix", "ListenUnixgram", "DialUnix") {
			return fmt.Sprintf("%s at %s", name, c.line(call))
		}
	}
	fn := match.Callee(c.info, call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return ""
	}
	if r := fn.Type().(*types.Signature).Recv(); r != nil && types.IsInterface(r.Type()) {
		return "" // which code runs depends on the value
	}
	if s := c.pass.Effects.Of(fn.Origin()); s != nil {
		for _, e := range s.Effects {
			if e.Kind == effect.Network {
				return fmt.Sprintf("the test gives it to %s at %s: %s", name, c.line(call), e.Why())
			}
		}
	}
	return ""
}

// derived returns dir and the local variables body builds from it: p :=
// filepath.Join(dir, "s"), cfg := Config{Dir: dir}, cfg.Dir = dir, srv :=
// New(cfg).
func (c *checker) derived(body *ast.BlockStmt, dir *types.Var) map[*types.Var]bool {
	under := map[*types.Var]bool{dir: true}
	holds := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(m ast.Node) bool {
			if id, ok := m.(*ast.Ident); ok {
				if v, ok := c.info.Uses[id].(*types.Var); ok && under[v] {
					found = true
				}
			}
			return !found
		})
		return found
	}
	add := func(l ast.Expr) bool {
		v := match.Root(c.info, l)
		if v == nil {
			if id, ok := ast.Unparen(l).(*ast.Ident); ok {
				v, _ = c.info.Defs[id].(*types.Var)
			}
		}
		if v == nil || under[v] || match.IsPackageLevel(v) {
			return false
		}
		under[v] = true
		return true
	}
	for changed := true; changed; {
		changed = false
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					r := n.Rhs[min(i, len(n.Rhs)-1)]
					if holds(r) && add(l) {
						changed = true
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if len(n.Values) > 0 && holds(n.Values[min(i, len(n.Values)-1)]) && add(id) {
						changed = true
					}
				}
			}
			return true
		})
	}
	return under
}

// line says where n is: "app_test.go:14".
func (c *checker) line(n ast.Node) string {
	p := c.pass.Fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// usesAny reports whether n uses one of the variables in vars (the
// directory and what the test builds from it).
func (c *checker) usesAny(n ast.Node, vars map[*types.Var]bool) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if id, ok := m.(*ast.Ident); ok {
			if v, ok := c.info.Uses[id].(*types.Var); ok && vars[v] {
				found = true
			}
		}
		return !found
	})
	return found
}

// patternHazard says why the pattern of os.MkdirTemp may carry meaning
// t.TempDir drops, or "": t.TempDir names its directory 001, 002, ...
// under one named after the test, so a suffix after the "*" ("jobs-*.d",
// a drop-in directory the code tells apart by its ".d"), an extension, or
// a pattern the rule cannot read is lost. A plain prefix ("app") only
// makes the name readable.
func (c *checker) patternHazard(e ast.Expr) string {
	p, ok := match.ConstString(c.info, e)
	if !ok {
		return fmt.Sprintf("the pattern %s is not a constant: it may carry a suffix or extension the code under test reads, which t.TempDir's name drops", types.ExprString(e))
	}
	if i := strings.LastIndex(p, "*"); i >= 0 && i < len(p)-1 {
		return fmt.Sprintf("the pattern %q puts %q after the random part: t.TempDir's name drops it, and code that tells the directory apart by its name (a .d drop-in directory) would see another kind", p, p[i+1:])
	}
	if strings.Contains(p, ".") {
		return fmt.Sprintf("the pattern %q holds an extension-like %q: t.TempDir's name drops it, and code that tells the directory apart by its name would see another kind", p, p[strings.Index(p, "."):])
	}
	return ""
}

// nameRead says where the test, or a package function it gives the
// directory (or something built from it), inspects a path's name
// (filepath.Base, Ext, Match, Glob of the path itself, a prefix or suffix
// test on a path parameter), or "": t.TempDir's name is not the pattern's.
func (c *checker) nameRead(body *ast.BlockStmt, dir *types.Var) string {
	under := c.derived(body, dir)
	var why string
	ast.Inspect(body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if !c.handed(call, under) {
			return true
		}
		if c.inspectsName(call, nil) {
			why = fmt.Sprintf("%s at %s", types.ExprString(call.Fun), c.line(call))
			return false
		}
		if at := c.modCalleeName(call); at != "" {
			why = fmt.Sprintf("the test gives it to %s at %s, whose package inspects a name (%s)", types.ExprString(call.Fun), c.line(call), at)
			return false
		}
		fn := match.Callee(c.info, call)
		if fn == nil || c.decls[fn.Origin()] == nil {
			return true
		}
		roots := c.calleeRoots(fn)
		for _, r := range roots {
			params := map[*types.Var]bool{}
			for _, f := range r.Type.Params.List {
				for _, n := range f.Names {
					if v, ok := c.info.Defs[n].(*types.Var); ok {
						params[v] = true
					}
				}
			}
			ast.Inspect(r.Body, func(m ast.Node) bool {
				if inner, ok := m.(*ast.CallExpr); ok && why == "" && c.inspectsName(inner, params) {
					why = fmt.Sprintf("the test gives it to %s at %s, which inspects a name (%s at %s)", types.ExprString(call.Fun), c.line(call), types.ExprString(inner.Fun), c.line(inner))
				}
				return why == ""
			})
			if why != "" {
				break
			}
			if at := c.modNameIn(r.Body); at != "" {
				why = fmt.Sprintf("the test gives it to %s at %s, which reaches code of another package of the module that inspects a name (%s)", types.ExprString(call.Fun), c.line(call), at)
				break
			}
		}
		return why == ""
	})
	return why
}

// inspectsName reports whether call looks at a path's name: filepath (or
// path) Base, Ext, Match, or Glob of a pattern other than a file pattern
// joined under a directory; or, when params is given (code the rule
// reaches, where the directory is one of them), a strings prefix or
// suffix test of a parameter, or a strings.LastIndex of one (its last
// element, split by hand).
func (c *checker) inspectsName(call *ast.CallExpr, params map[*types.Var]bool) bool {
	switch {
	case match.IsPkgFunc(c.info, call, "path/filepath", "Base", "Ext", "Match", "Split"),
		match.IsPkgFunc(c.info, call, "path", "Base", "Ext", "Match", "Split"):
		return true
	case match.IsPkgFunc(c.info, call, "path/filepath", "Glob") && len(call.Args) == 1:
		// Glob(filepath.Join(dir, "*.conf")) lists the directory's files;
		// a pattern over the directory's own name reads the name.
		j, ok := ast.Unparen(call.Args[0]).(*ast.CallExpr)
		if !ok || !match.IsPkgFunc(c.info, j, "path/filepath", "Join") || len(j.Args) < 2 {
			return true
		}
		for _, a := range j.Args[1:] {
			if _, ok := match.ConstString(c.info, a); !ok {
				return true
			}
		}
		return false
	case params != nil && c.isFileInfoName(call):
		// fi.Name() of an os.Stat of the directory: its last element.
		return true
	case params != nil && match.IsPkgFunc(c.info, call, "strings", "HasSuffix", "HasPrefix", "TrimSuffix", "TrimPrefix", "CutSuffix", "CutPrefix", "Contains", "LastIndex", "LastIndexByte", "LastIndexAny") && len(call.Args) > 0:
		if id, ok := ast.Unparen(call.Args[0]).(*ast.Ident); ok {
			v, _ := c.info.Uses[id].(*types.Var)
			return params[v]
		}
	}
	return false
}

// patternInCode says where a string of the package's code holds the
// pattern's prefix (the text before its "*"), or "": code that finds its
// own temporary directories by name (a janitor that globs
// os.TempDir()/"app-*", a ReadDir of the temporary directory filtered by
// strings.HasPrefix) looks for that prefix, and t.TempDir's directory,
// named 001 under one named after the test, is not among them. A string
// matches when one of its path elements is the prefix, the prefix
// followed by a glob or format ("app-*", "app-%d"), or itself a prefix of
// it of three bytes or more ("app" for "app-"); a file name that merely
// starts with it ("app.pid") names no temporary directory. The patterns
// of the package's own MkdirTemp calls and the messages a test passes to
// t's methods are not code that looks.
func (c *checker) patternInCode(pattern string) string {
	prefix := pattern
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		prefix = pattern[:i]
	}
	if prefix == "" {
		return ""
	}
	skip := map[ast.Expr]bool{}
	var why string
	for _, f := range c.pass.AllFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			if why != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.CallExpr:
				switch {
				case (match.IsPkgFunc(c.info, n, "os", "MkdirTemp") || match.IsPkgFunc(c.info, n, "io/ioutil", "TempDir")) && len(n.Args) == 2:
					skip[ast.Unparen(n.Args[1])] = true
				case match.IsMethod(c.info, n, "testing", "Fatal", "Fatalf", "Error", "Errorf", "Log", "Logf", "Skip", "Skipf"):
					for _, a := range n.Args {
						skip[ast.Unparen(a)] = true
					}
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING || skip[n] {
					return true
				}
				s, ok := match.ConstString(c.info, n)
				if !ok {
					return true
				}
				for _, el := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
					stem := strings.TrimRight(el, "*")
					rest, starts := strings.CutPrefix(el, prefix)
					if starts && (rest == "" || strings.ContainsAny(rest, "*?[%")) || len(stem) >= 3 && strings.HasPrefix(prefix, stem) {
						why = fmt.Sprintf("the code holds the pattern's prefix %q (%q at %s): code that finds its own temporary directories by name (a Glob or ReadDir of the temporary directory) finds the pattern's directories, and t.TempDir's, named 001 under one named after the test, is not among them", prefix, s, c.line(n))
						return false
					}
				}
			}
			return true
		})
	}
	return why
}

// isFileInfoName reports whether call is the Name method of an
// fs.FileInfo or fs.DirEntry (os.Stat(dir).Name() is the directory's
// last element).
func (c *checker) isFileInfoName(call *ast.CallExpr) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Name" || len(call.Args) != 0 {
		return false
	}
	t := c.info.TypeOf(sel.X)
	return t != nil && match.IsNamed(t, "io/fs", "FileInfo", "DirEntry")
}

// lengthHazard says where code the test hands the directory to compares
// the length of a path it is given (len(dir) > pathField: a fixed-width
// header field, a name limit of its own), or "". t.TempDir's path is
// about 60 bytes longer than os.MkdirTemp's, so such a check refuses it
// on correct code, by how long TMPDIR is (red team batch 23, walheader).
func (c *checker) lengthHazard(body *ast.BlockStmt, dir *types.Var) string {
	under := c.derived(body, dir)
	var why string
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || why != "" {
			return why == ""
		}
		fn := match.Callee(c.info, call)
		if !c.handed(call, under) || fn == nil || c.decls[fn.Origin()] == nil {
			return true
		}
		roots := c.calleeRoots(fn)
		for _, r := range roots {
			ast.Inspect(r.Body, func(m ast.Node) bool {
				b, ok := m.(*ast.BinaryExpr)
				if !ok || why != "" {
					return why == ""
				}
				switch b.Op {
				case token.LSS, token.LEQ, token.GTR, token.GEQ:
				default:
					return true
				}
				for i, side := range []ast.Expr{b.X, b.Y} {
					lc, ok := ast.Unparen(side).(*ast.CallExpr)
					if !ok || len(lc.Args) != 1 || !match.IsBuiltin(c.info, lc.Fun, "len") {
						continue
					}
					// A limit is a constant (a loop's i < len(p) is none).
					other := []ast.Expr{b.Y, b.X}[i]
					if tv, ok := c.info.Types[other]; !ok || tv.Value == nil {
						continue
					}
					if t := c.info.TypeOf(lc.Args[0]); t != nil {
						if basic, ok := t.Underlying().(*types.Basic); ok && basic.Info()&types.IsString != 0 {
							why = fmt.Sprintf("the test gives it to %s at %s, which compares a path's length (%s at %s)", types.ExprString(call.Fun), c.line(call), types.ExprString(b), c.line(b))
						}
					}
				}
				return why == ""
			})
			if why != "" {
				break
			}
		}
		return why == ""
	})
	return why
}

// handed reports whether call is handed something built from the
// directory (under): in an argument, or as the value whose method it is
// (srv.Dir = dir; srv.Run()).
func (c *checker) handed(call *ast.CallExpr, under map[*types.Var]bool) bool {
	for _, a := range call.Args {
		if c.usesAny(a, under) {
			return true
		}
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && c.usesAny(sel.X, under)
}

// calleeRoots are fn's declaration, a function of the package, and those
// of the package's functions it reaches.
func (c *checker) calleeRoots(fn *types.Func) []*ast.FuncDecl {
	fd := c.decls[fn.Origin()]
	roots := []*ast.FuncDecl{fd}
	for g := range c.reachable(fd.Body, nil) {
		roots = append(roots, c.decls[g])
	}
	return roots
}
