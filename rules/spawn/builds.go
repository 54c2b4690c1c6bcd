package spawn

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The analysis types one build of the package; its directory may hold
// others (a file behind a build tag, a _windows.go file, a variant the
// tests also run against). The children may run any of them, and a test
// run one child after another must observe the same under every one: a
// build that caches a session in /tmp keyed by the parent's pid, keeps a
// file at a constant absolute path, or a script that reaches two levels
// up (../../.render-cache) shares state between children that the
// correct build's view keeps apart, and neither the analysis of the
// correct build nor fix --verify on it can see that. So the rule reads
// every Go file of the directory the build leaves out, from its syntax,
// and a string literal there that reaches outside a child's view or
// takes a lock (what outsideMark finds in a script) keeps the children
// in order.

// leftOutHazard says where a file of the package's directory that the
// build leaves out names a place outside every child's view, or "". It
// reads the directory once.
func (c *checker) leftOutHazard() string {
	if c.leftOut != nil {
		return *c.leftOut
	}
	why := c.readLeftOut()
	c.leftOut = &why
	return why
}

func (c *checker) readLeftOut() string {
	fset := token.NewFileSet()
	files, err := match.LeftOutFiles(fset, c.pass.Fset, c.pass.AllFiles)
	if err != nil {
		return fmt.Sprintf("the package's directory cannot be read (%v): a build the analysis does not type may keep state every child shares", err)
	}
	for _, lf := range files {
		name := filepath.Base(lf.Path)
		if lf.Err != nil {
			return fmt.Sprintf("%s, a file the build leaves out, does not parse: a build the analysis does not type may keep state every child shares", name)
		}
		f := lf.File
		var why string
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if why != "" || !ok || lit.Kind != token.STRING {
				return why == ""
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if line, what := outsideMark(s); line != "" {
				why = fmt.Sprintf("%s:%d, a file of the package the build leaves out (another build the children may run), %s: %q; a child of that build may keep a cache, a session or a lock there that one after another the next child reads, and run together none does, so the test would pass a bug it catches now", name, fset.Position(lit.Pos()).Line, what, line)
			}
			return why == ""
		})
		if why != "" {
			return why
		}
	}
	return c.leftOutImports(fset, files)
}

// leftOutImports says where a package of the module that a file the
// build leaves out imports (or one such a package imports, transitively)
// names a place outside every child's view, or "". Those packages are
// that build's code as much as its own files are (a snapshot package
// that keeps entries in /dev/shm, imported by the buggy build alone),
// and the typed analysis never sees them called: so they are read from
// their syntax, every file, by the standard of a left-out file (an
// absolute path counts), and one that cannot be read or parsed counts as
// naming anything.
func (c *checker) leftOutImports(fset *token.FileSet, files []match.LeftOutFile) string {
	if len(files) == 0 {
		return ""
	}
	root, modPath := match.ModuleOf(filepath.Dir(files[0].Path))
	if root == "" {
		return ""
	}
	r := &modReader{fset: token.NewFileSet(), root: root, modPath: modPath, seen: map[string]bool{}, abs: true, effects: true}
	for _, lf := range files {
		if lf.File == nil {
			continue
		}
		for _, imp := range lf.File.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				continue
			}
			if _, ok := match.ModuleDir(root, modPath, path); !ok {
				continue
			}
			if at := r.pkg(path); at != "" {
				return fmt.Sprintf("%s:%d, a file of the package the build leaves out (another build the children may run), imports %s, and %s: a child of that build may keep a cache, a session or a lock there that one after another the next child reads, and run together none does, so the test would pass a bug it catches now", filepath.Base(lf.Path), fset.Position(imp.Pos()).Line, path, at)
			}
		}
	}
	return ""
}

// leftOutPlace says where a file of the package's directory that the
// build leaves out asks for a place every child shares whatever view it
// is given (os.Executable(), os.UserCacheDir(), os.Args[0], ...): a
// "portable" cache beside the executable, keyed by what two children
// have in common, is every child's; or "".
func (c *checker) leftOutPlace() string {
	fset := token.NewFileSet()
	files, err := match.LeftOutFiles(fset, c.pass.Fset, c.pass.AllFiles)
	if err != nil {
		return "" // leftOutHazard reports it
	}
	// The same places a package of the module may not name (modpkgs.go):
	// the executable's, the user's directories, os.TempDir, the parent's
	// pid, and the working directory (os.Getwd, filepath.Abs), from which
	// a build may climb to the parent every child's root shares.
	const why = "%s:%d, a file of the package the build leaves out (another build the children may run), asks for %s, a place every child shares whatever view it is given; a child of that build may keep a cache, a session or a lock there that one after another the next child reads, and run together none does, so the test would pass a bug it catches now"
	var modPath string
	if len(files) > 0 {
		_, modPath = match.ModuleOf(filepath.Dir(files[0].Path))
	}
	r := &modReader{fset: fset, skip: map[string]bool{skipClimb: true}}
	var decls []climbDecl
	for _, lf := range files {
		if lf.Err != nil {
			continue
		}
		if at := r.file(lf.File); at != nil {
			return fmt.Sprintf(why, filepath.Base(lf.Path), fset.Position(at.pos).Line, at.what)
		}
		decls = append(decls, fileDecls(lf.File)...)
	}
	// The climbs, with the functions of the package's typed files that
	// those builds call (a helper given the project's path, keyID(project)):
	// that build's code as much as its own, read together with it.
	if len(decls) > 0 {
		decls = append(decls, c.typedCallees(fset, decls)...)
	}
	if at := climbInDecls(decls, false); at != nil {
		p := fset.Position(at.pos)
		return fmt.Sprintf(why, filepath.Base(p.Filename), p.Line, at.what)
	}
	// Then what those builds do, whatever path they spell (buildeffects.go):
	// the typed code's standard, after the more telling places above.
	for _, lf := range files {
		if lf.Err != nil {
			continue
		}
		if at := buildEffectIn(lf.File, match.ImportNames(lf.File), modPath); at != nil {
			return fmt.Sprintf(effectWhy, filepath.Base(lf.Path), fset.Position(at.pos).Line, at.what)
		}
	}
	return ""
}

// effectWhy is leftOutPlace's finding for what a build the analysis does
// not type does (buildEffectIn).
const effectWhy = "%s:%d, a file of the package the build leaves out (another build the children may run), uses %s: the rule proves no path private to a child, and a path built from parts (filepath.Join(string(filepath.Separator), \"tmp\", ...), the target of /proc/self/exe) names a place every child shares as well as a literal does; a child of that build may keep a cache, a session or a lock there that one after another the next child reads, and run together none does, so the test would pass a bug it catches now"

// fileDecls returns the functions of f with a body, for climbInDecls.
func fileDecls(f *ast.File) []climbDecl {
	var out []climbDecl
	imports, consts := match.ImportNames(f), fileConsts(f)
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			out = append(out, climbDecl{fd, imports, consts})
		}
	}
	return out
}

// typedCallees returns the functions of the package's typed files that
// decls call, transitively, parsed again into fset (so that a climb there
// is placed by it); a file that does not parse is left out (the typed
// analysis reads it).
func (c *checker) typedCallees(fset *token.FileSet, decls []climbDecl) []climbDecl {
	byName := map[string][]climbDecl{}
	for _, f := range c.pass.AllFiles {
		name := c.pass.Fset.File(f.Pos()).Name()
		pf, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range fileDecls(pf) {
			byName[declKey(d.fd)] = append(byName[declKey(d.fd)], d)
		}
	}
	own := map[string]bool{}
	for _, d := range decls {
		own[declKey(d.fd)] = true // the build's own definition wins
	}
	var out []climbDecl
	queue := append([]climbDecl(nil), decls...)
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		ast.Inspect(d.fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			key := ""
			switch f := ast.Unparen(call.Fun).(type) {
			case *ast.Ident:
				key = f.Name
			case *ast.SelectorExpr:
				if x, ok := f.X.(*ast.Ident); !ok || d.imports[x.Name] == "" {
					key = "." + f.Sel.Name
				}
			}
			if key == "" || own[key] {
				return true
			}
			own[key] = true
			for _, td := range byName[key] {
				out = append(out, td)
				queue = append(queue, td)
			}
			return true
		})
	}
	return out
}

// pwdVars are the environment variables that name the parent's working
// directory in a child: exec sets PWD to cmd.Dir only when cmd.Env is nil,
// so a child given an environment of its own (append(os.Environ(), ...),
// as the view asks) inherits the test's PWD, the package's directory,
// which every child shares (os.Getwd checks PWD against "." and is not
// fooled; a read of the variable is).
var pwdVars = map[string]bool{"PWD": true, "OLDPWD": true}

const pwdWhy = ", the test's working directory when cmd.Env is set (exec updates PWD only when it is not)"

// processPlace names what n, syntax of a file that imports os as osName,
// asks for when it is a place every child shares (os.Executable(),
// os.UserCacheDir(), ..., os.Args[0]), or "".
func processPlace(n ast.Node, osName string) string {
	if osName == "" || osName == "_" || osName == "." {
		return ""
	}
	isOS := func(e ast.Expr, names ...string) string {
		sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
		if !ok {
			return ""
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName {
			for _, n := range names {
				if sel.Sel.Name == n {
					return "os." + n
				}
			}
		}
		return ""
	}
	switch n := n.(type) {
	case *ast.CallExpr:
		if isOS(n.Fun, "Getenv", "LookupEnv") != "" && len(n.Args) == 1 {
			if lit, ok := ast.Unparen(n.Args[0]).(*ast.BasicLit); ok && pwdVars[strings.Trim(lit.Value, "\"`")] {
				return "the environment's " + strings.Trim(lit.Value, "\"`") + pwdWhy
			}
		}
		return isOS(n.Fun, append(append([]string(nil), userDirs...), processDirs...)...)
	case *ast.IndexExpr:
		if lit, ok := ast.Unparen(n.Index).(*ast.BasicLit); ok && lit.Value == "0" && isOS(n.X, "Args") != "" {
			return "the executable's path, os.Args[0]"
		}
	}
	return ""
}
