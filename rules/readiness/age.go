package readiness

import (
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/unflake/unflake/internal/match"
)

// The age hazard. The sleep set how old the child is when the signal
// comes; a readiness line signals it younger. A child that reads the time
// anywhere it runs (before its wait or after the signal) may act on its
// age: a log rotated on close when the file is older than a max age, a
// worker recycled past its max lifetime, an uptime it reports. Time
// reaches the code under test through more than the time package: a
// file's modification time (FileInfo.ModTime, a Stat_t's Mtim, set when
// the child wrote the file, or os.Chtimes), the process's start time and
// the system's uptime in /proc (gopsutil's way), syscall.Sysinfo,
// Getrusage, Times, clock_gettime. With the window cut short, an age
// check that fires too soon (a max age read in the wrong unit) no longer
// fires, and the test passes a bug the original catches. Running the test
// cannot tell (it passes on correct code), so such a site is not fixed
// when the test looks at the child after the signal. The rule reads the
// helper and what it calls, from their syntax, in every build: the
// package's functions (by name, a method by its name on any type) and
// the functions of the module's packages it imports, a few calls deep,
// and the function literals they hold (a goroutine's, a callback's).

// ageChecked is the Checked entry of a fix: the hazard excluded.
const ageChecked = "the child reads no time (the clock, a file's modification time, /proc, Sysinfo, Getrusage) in what it runs, so how long it ran before the signal does not change what it does"

// Reads of a time the system keeps, by package path and name; and the
// methods and fields, by name, that hold one.
var (
	clockFuncs = map[string]map[string]bool{
		"time":                  {"Now": true, "Since": true, "Until": true},
		"os":                    {"Chtimes": true},
		"syscall":               {"Sysinfo": true, "Getrusage": true, "Times": true, "Gettimeofday": true, "Time": true},
		"golang.org/x/sys/unix": {"Sysinfo": true, "Getrusage": true, "Times": true, "Gettimeofday": true, "Time": true, "ClockGettime": true},
	}
	clockFields = map[string]bool{"ModTime": true, "Mtim": true, "Atim": true, "Ctim": true, "Mtimespec": true, "Atimespec": true, "Ctimespec": true, "Birthtimespec": true}
)

// ageHazard says why the child's outcome may depend on how long it ran
// before the signal, naming the read and its line, when the test looks
// at the child after the signal; or "".
func (c *checker) ageHazard(s *site, helper string) string {
	look := c.looksAfter(s)
	if look == "" || len(c.pass.AllFiles) == 0 {
		return ""
	}
	w := newAgeWalker(filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name()))
	read := w.fromHelper(helper)
	if read == "" {
		return ""
	}
	return fmt.Sprintf("the child reads the time (%s), so what it does may depend on how long it has run, which the sleep set; the test looks at the child after the signal (%s): a readiness line would signal it younger, and an age check of some implementation (a max age, a lifetime, an uptime) would no longer fire where the original's did, passing a bug it catches, or would fire on correct code; keep the sleep", read, look)
}

// An ageWalker looks for time reads in the child, from the syntax of the
// package's directory and of the module's packages it reaches.
type ageWalker struct {
	fset    *token.FileSet
	root    string
	modPath string
	dir     string
	pkgs    map[string]*syntaxPkg // by directory
	broken  map[string]string
	seen    map[*ast.FuncDecl]bool
	// background, when set, makes the walker look for timed or
	// background work in files the typed build leaves out (see
	// otherBuilds) instead of time reads; built holds the files of the
	// package's directory the build selects.
	background bool
	built      map[string]bool
}

func newAgeWalker(dir string) *ageWalker {
	w := &ageWalker{fset: token.NewFileSet(), dir: dir, root: moduleRoot(dir), pkgs: map[string]*syntaxPkg{}, broken: map[string]string{}, seen: map[*ast.FuncDecl]bool{}}
	if data, err := os.ReadFile(filepath.Join(w.root, "go.mod")); w.root != "" && err == nil {
		w.modPath = modfile.ModulePath(data)
	}
	return w
}

// pkg returns the syntax of the package in dir (with its tests for the
// package under test), or nil and the file it cannot read.
func (w *ageWalker) pkg(dir string) (*syntaxPkg, string) {
	if p, ok := w.pkgs[dir]; ok {
		return p, w.broken[dir]
	}
	p, broken := readSyntax(w.fset, dir, dir == w.dir)
	w.pkgs[dir], w.broken[dir] = p, broken
	return p, broken
}

// fromHelper walks the helper test function and what it reaches.
func (w *ageWalker) fromHelper(helper string) string {
	p, broken := w.pkg(w.dir)
	if broken != "" {
		return "the rule cannot read " + broken
	}
	for _, fd := range p.funcs[helper] {
		w.seen[fd] = true
		if why := w.walk(p, fd, 0); why != "" {
			return why
		}
	}
	return ""
}

// walk looks in fd, a function of package p, for a time read.
func (w *ageWalker) walk(p *syntaxPkg, fd *ast.FuncDecl, depth int) string {
	f := w.fileOf(p, fd)
	where := ""
	if depth > 0 {
		where = ", in " + fd.Name.Name
	}
	imports := p.imports[f]
	var out string
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if out != "" {
			return false
		}
		if w.background {
			if call, ok := n.(*ast.CallExpr); ok {
				out = w.follow(p, imports, call, depth)
			} else if w.leftOut(f) {
				out = w.backgroundAt(n, imports, where)
			}
			return out == ""
		}
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				if s, err := strconv.Unquote(n.Value); err == nil && (s == "/proc" || strings.HasPrefix(s, "/proc/")) {
					out = fmt.Sprintf("%s at %s%s", n.Value, w.line(n), where)
				}
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if path := imports[x.Name]; path != "" {
					if clockFuncs[path][n.Sel.Name] {
						out = fmt.Sprintf("%s.%s at %s%s", x.Name, n.Sel.Name, w.line(n), where)
					}
					return out == ""
				}
			}
			if clockFields[n.Sel.Name] {
				out = fmt.Sprintf("%s at %s%s", n.Sel.Name, w.line(n), where)
			}
		case *ast.CallExpr:
			out = w.follow(p, imports, n, depth)
		}
		return out == ""
	})
	return out
}

// follow walks the functions call may reach: the package's by name (a
// method by its name on any type, here and in the module's packages the
// file imports), and a module package's function.
func (w *ageWalker) follow(p *syntaxPkg, imports map[string]string, call *ast.CallExpr, depth int) string {
	if depth >= maxDepth {
		return ""
	}
	type target struct {
		p   *syntaxPkg
		key string
	}
	var targets []target
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		targets = append(targets, target{p, fun.Name})
	case *ast.SelectorExpr:
		if x, ok := fun.X.(*ast.Ident); ok && imports[x.Name] != "" {
			if dir, ok := match.ModuleDir(w.root, w.modPath, imports[x.Name]); ok {
				if q, broken := w.pkg(dir); broken == "" {
					targets = append(targets, target{q, fun.Sel.Name})
				}
			}
			break
		}
		targets = append(targets, target{p, "." + fun.Sel.Name})
		for _, path := range imports {
			if dir, ok := match.ModuleDir(w.root, w.modPath, path); ok {
				if q, broken := w.pkg(dir); broken == "" {
					targets = append(targets, target{q, "." + fun.Sel.Name})
				}
			}
		}
	}
	for _, t := range targets {
		for _, fd := range t.p.funcs[t.key] {
			if w.seen[fd] {
				continue
			}
			w.seen[fd] = true
			if why := w.walk(t.p, fd, depth+1); why != "" {
				return why
			}
		}
	}
	return ""
}

func (w *ageWalker) fileOf(p *syntaxPkg, n ast.Node) *ast.File {
	for _, f := range p.files {
		if f.FileStart <= n.Pos() && n.End() <= f.FileEnd {
			return f
		}
	}
	return nil
}

func (w *ageWalker) line(n ast.Node) string {
	pos := w.fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
}
