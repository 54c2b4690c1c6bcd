package spawn

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// The children's code may live in other packages of the module: a
// command's package whose tests run the command, its fetch or load code
// in a subpackage, as real tools split it. The typed analysis sees only
// what those packages export, and one build of them; the bugs the test
// exists to catch live in builds it never sees (a "portable" pack cache
// beside the executable, keyed by the parent's pid, that one after
// another the second child hits and run together neither does). So the
// rule reads every package of the module the children's code calls, and
// the module's packages those import, transitively, from their syntax,
// in every build (test files aside), and a place every child shares
// whatever view it is given keeps the children in order: the
// executable's path (os.Executable, os.Args[0]), os.TempDir (also through
// os.CreateTemp, os.MkdirTemp, ioutil.TempFile or ioutil.TempDir with an
// empty directory), the user's directories (os.UserCacheDir,
// UserConfigDir, UserHomeDir, the user database of os/user), the parent's
// pid (os.Getppid: a session every child of one test shares), the working
// directory (os.Getwd), and a string naming a place outside a child's
// view (the parent directory, $HOME, $TMPDIR, a lock).

// moduleShared lists, by package path, the functions of the standard
// library that name a place every child shares whatever view it is given,
// beyond processPlace's.
var moduleShared = map[string][]string{
	"os": {"Getppid", "Getwd"},
	// The parent's pid and process group under their system call names:
	// the same value every child of one test shares as os.Getppid's (a
	// session key, a System V IPC key), though a system call that only
	// reads.
	"syscall":               {"Getppid", "Getpgrp", "Getpgid", "Getsid"},
	"golang.org/x/sys/unix": {"Getppid", "Getpgrp", "Getpgid", "Getsid"},
	"os/user":               {"Current", "Lookup", "LookupId"},
	"io/ioutil":             {"TempDir", "TempFile"},
	// The working directory again (a relative path made absolute), from
	// which a build climbs above the child's root to the parent every
	// child of one test shares: filepath.Dir(filepath.Dir(abs)).
	"path/filepath": {"Abs"},
	// A program found on PATH: every child finds the same, and a place
	// beside it is every child's.
	"os/exec": {"LookPath"},
}

// sharedWhy says, for the calls of moduleShared that name no shared
// place by themselves, how one is reached from them.
var sharedWhy = map[string]string{
	"os.Getwd":                      " (the working directory, from which a build may climb to the parent every child's root shares)",
	"path/filepath.Abs":             " (the working directory, from which a build may climb to the parent every child's root shares)",
	"os/exec.LookPath":              " (a program on PATH, which every child finds the same)",
	"os.Getppid":                    " (the test's pid, which every child of one test shares)",
	"syscall.Getppid":               " (the test's pid, which every child of one test shares)",
	"syscall.Getpgrp":               " (the test's process group, which every child of one test shares)",
	"syscall.Getpgid":               " (the test's process group, which every child of one test shares)",
	"syscall.Getsid":                " (the test's session, which every child of one test shares)",
	"golang.org/x/sys/unix.Getppid": " (the test's pid, which every child of one test shares)",
	"golang.org/x/sys/unix.Getpgrp": " (the test's process group, which every child of one test shares)",
	"golang.org/x/sys/unix.Getpgid": " (the test's process group, which every child of one test shares)",
	"golang.org/x/sys/unix.Getsid":  " (the test's session, which every child of one test shares)",
}

// emptyDirTemp are the functions that make a temporary file or directory
// under os.TempDir when their first argument is "".
var emptyDirTemp = map[string][]string{
	"os":        {"CreateTemp", "MkdirTemp"},
	"io/ioutil": {"TempDir", "TempFile"},
}

// modulePlace says where a package of the module that the units' code
// calls (or one it imports) names a place every child shares, or "".
func (c *checker) modulePlace(units []*unit) string {
	if len(c.pass.AllFiles) == 0 {
		return ""
	}
	dir := filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name())
	root, modPath := match.ModuleOf(dir)
	if root == "" {
		return ""
	}
	called := map[string]string{} // package path -> the call that reaches it
	var paths []string
	for _, u := range units {
		for _, fd := range c.childCode(u) {
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				var fn *types.Func
				switch n := n.(type) {
				case *ast.CallExpr:
					fn = match.Callee(c.info, n)
				case *ast.Ident:
					fn, _ = c.info.Uses[n].(*types.Func)
				}
				if fn == nil || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg {
					return true
				}
				path := fn.Pkg().Path()
				if _, ok := match.ModuleDir(root, modPath, path); ok && called[path] == "" {
					called[path] = fmt.Sprintf("%s (%s)", match.PkgFuncName(fn), c.line(n))
					paths = append(paths, path)
				}
				return true
			})
		}
	}
	sort.Strings(paths)
	r := &modReader{fset: token.NewFileSet(), root: root, modPath: modPath, seen: map[string]bool{}}
	for _, path := range paths {
		if at := r.pkg(path); at != "" {
			return fmt.Sprintf("the children's code calls %s, and %s, a place every child shares whatever view it is given: a build of that code may keep a cache, a session or a lock there that one after another the next child reads, and run together none does, so the test would pass a bug it catches now", called[path], at)
		}
	}
	return ""
}

// modReader reads the module's packages from their syntax.
type modReader struct {
	fset          *token.FileSet
	root, modPath string
	seen          map[string]bool
	// abs: a string naming an absolute path counts too, as it does in a
	// file of the package the build leaves out (builds.go), for the
	// packages such a build imports: they are that build's code.
	abs bool
	// effects: a write to the file system, a listen or a dial, a program
	// run or a call of a package outside the module counts too, whatever
	// path it names (buildeffects.go), for the builds the analysis does
	// not type and the packages they import: they are held to the typed
	// children's code's standard (childEffect).
	effects bool
	// skip is given to sharedPlaceIn.
	skip map[string]bool
}

// pkg returns where package path, in any build, or a package of the
// module it imports, names a place every child shares; or "".
func (r *modReader) pkg(path string) string {
	if r.seen[path] || len(r.seen) > 300 {
		return ""
	}
	r.seen[path] = true
	dir, ok := match.ModuleDir(r.root, r.modPath, path)
	if !ok {
		return ""
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Sprintf("package %s cannot be read (%v), so it may name anything", path, err)
	}
	var next []string
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		full := filepath.Join(dir, e.Name())
		rel := filepath.ToSlash(strings.TrimPrefix(full, r.root+string(filepath.Separator)))
		f, err := parser.ParseFile(r.fset, full, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Sprintf("%s does not parse, so it may name anything", rel)
		}
		if at := r.file(f); at != nil {
			return fmt.Sprintf("package %s names %s (%s:%d)", path, at.what, rel, r.fset.Position(at.pos).Line)
		}
		for _, p := range match.ImportNames(f) {
			next = append(next, p)
		}
	}
	sort.Strings(next)
	for _, p := range next {
		if at := r.pkg(p); at != "" {
			return at
		}
	}
	return ""
}

// A placeAt is what a file names and where.
type placeAt struct {
	what string
	pos  token.Pos
}

// file returns the first place every child shares that f names, or nil.
func (r *modReader) file(f *ast.File) *placeAt {
	if r.abs {
		if at := literalPlaceIn(f); at != nil {
			return at
		}
	}
	if at := sharedPlaceIn(f, match.ImportNames(f), r.skip); at != nil {
		return at
	}
	if r.effects {
		return buildEffectIn(f, match.ImportNames(f), r.modPath)
	}
	return nil
}

// literalPlaceIn returns the first string literal of f that reaches
// outside a child's view or takes a lock (what outsideMark finds in a
// script, an absolute path included), or nil.
func literalPlaceIn(f *ast.File) *placeAt {
	var at *placeAt
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if at != nil || !ok || lit.Kind != token.STRING {
			return at == nil
		}
		if s, err := strconv.Unquote(lit.Value); err == nil {
			if line, what := outsideMark(s); line != "" {
				desc, ok := strings.CutPrefix(what, "names ")
				if !ok {
					desc = "a string that " + what
				}
				at = &placeAt{fmt.Sprintf("%s: %q", desc, line), lit.Pos()}
			}
		}
		return at == nil
	})
	return at
}

// sharedPlaceIn returns the first place every child shares whatever view
// it is given that root, syntax of a file importing imports, names; or
// nil. It is the one list the rule reads the typed children's code, the
// package's other builds and the module's packages for; skip names the
// calls (package path + "." + name) a caller checks more closely.
func sharedPlaceIn(root ast.Node, imports map[string]string, skip map[string]bool) *placeAt {
	osName := ""
	for name, path := range imports {
		if path == "os" {
			osName = name
		}
	}
	var at *placeAt
	ast.Inspect(root, func(n ast.Node) bool {
		if at != nil {
			return false
		}
		if place := processPlace(n, osName); place != "" {
			at = &placeAt{place, n.Pos()}
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			path := imports[x.Name]
			if what := sysCallWhat(path+"."+sel.Sel.Name, sel.Sel.Name); what != "" {
				at = &placeAt{fmt.Sprintf("%s.%s, which %s other processes see (a lock, a System V message queue or shared memory, a signal: keyed by what the children have in common, it is every child's)", path, sel.Sel.Name, what), n.Pos()}
				return false
			}
			for _, name := range moduleShared[path] {
				if sel.Sel.Name == name && !(path == "io/ioutil" && !emptyFirst(n)) && !skip[path+"."+name] {
					at = &placeAt{path + "." + name + sharedWhy[path+"."+name], n.Pos()}
				}
			}
			for _, name := range emptyDirTemp[path] {
				if sel.Sel.Name == name && emptyFirst(n) {
					at = &placeAt{path + "." + name + " with an empty directory (os.TempDir)", n.Pos()}
				}
			}
		case *ast.ImportSpec:
			if what := unreadImport(n); what != "" {
				at = &placeAt{what, n.Pos()}
			}
		case *ast.FuncDecl:
			// Code the rule cannot read: an assembly function or one
			// pulled in by go:linkname may make any system call.
			if n.Body == nil {
				at = &placeAt{"a function without a body (" + n.Name.Name + ", assembly or go:linkname), which may make any system call other processes see", n.Pos()}
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(n.Value); err == nil {
				// An absolute path in code is as often a URL's path
				// ("/api/v1") as a file: left to the Checked risk.
				if line, what := outsideMark(s); line != "" && what != absolutePath {
					at = &placeAt{fmt.Sprintf("%q, which %s", line, strings.TrimPrefix(what, "names ")), n.Pos()}
				}
			}
		}
		return at == nil
	})
	if file, ok := root.(*ast.File); ok && at == nil && !skip[skipClimb] {
		// The typed code's functions are read together by its caller
		// (typedPlaceUse), a file's here.
		at = climbIn(root, file, imports, skip["os.Getwd"])
	}
	return at
}

// skipClimb, in sharedPlaceIn's skip, leaves a file's climbs to its
// caller, which reads its functions with others (leftOutPlace).
const skipClimb = "climb"

// unreadImport says what an import brings that sharedPlaceIn cannot
// judge call by call, or "": cgo (C code may make any system call) or a
// system call package imported with a dot (its calls are bare names).
func unreadImport(imp *ast.ImportSpec) string {
	path, err := strconv.Unquote(imp.Path.Value)
	if err != nil {
		return ""
	}
	switch {
	case path == "C":
		return "cgo (import \"C\"), C code that may make any system call other processes see"
	case imp.Name != nil && imp.Name.Name == "." && (path == "syscall" || strings.HasPrefix(path, "golang.org/x/sys/")):
		return path + " imported with a dot, whose system calls other processes may see"
	}
	return ""
}

// emptyFirst reports whether call's first argument is the literal "".
func emptyFirst(call *ast.CallExpr) bool {
	if len(call.Args) == 0 {
		return false
	}
	lit, ok := ast.Unparen(call.Args[0]).(*ast.BasicLit)
	return ok && (lit.Value == `""` || lit.Value == "``")
}
