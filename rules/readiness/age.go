package readiness

import (
	"fmt"
	"go/ast"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
// and the function literals they hold (a goroutine's, a callback's);
// and of other modules' packages, found through go.mod. Code it cannot
// read counts as a read (unseen.go).

// ageChecked is the Checked entry of a fix: the hazard excluded.
const ageChecked = "the child reads no time (the clock, a file's modification time, /proc, Sysinfo, Getrusage) in what it runs, and runs no code the rule cannot read, which might (a function without a Go body, a //go:linkname, cgo, a raw system call, a package it cannot find), so how long it ran before the signal does not change what it does"

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
	reads := "reads the time"
	if w.unsure {
		reads = "may read the time"
	}
	return fmt.Sprintf("the child %s (%s), so what it does may depend on how long it has run, which the sleep set; the test looks at the child after the signal (%s): a readiness line would signal it younger, and an age check of some implementation (a max age, a lifetime, an uptime) would no longer fire where the original's did, passing a bug it catches, or would fire on correct code; keep the sleep", reads, read, look)
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
	// deps finds other modules' packages; unsure is set when the read
	// found is code the walker cannot read, which may read the time.
	deps   *depDirs
	unsure bool
}

func newAgeWalker(dir string) *ageWalker {
	w := &ageWalker{fset: token.NewFileSet(), dir: dir, root: moduleRoot(dir), pkgs: map[string]*syntaxPkg{}, broken: map[string]string{}, seen: map[*ast.FuncDecl]bool{}}
	if data, err := os.ReadFile(filepath.Join(w.root, "go.mod")); w.root != "" && err == nil {
		w.modPath = modfile.ModulePath(data)
	}
	w.deps = newDepDirs(w.root)
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
		w.unsure = true
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
				out = w.follow(p, imports, call, depth, where)
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
		case *ast.Ident:
			// A name of the package whose code the syntax does not
			// hold (a function without a body, a linknamed variable),
			// called or used as a value.
			if why := p.unseenAt(n.Name, w.line(n), where); why != "" {
				out, w.unsure = why, true
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if path := imports[x.Name]; path != "" {
					if what, sure := timeReadAt(x.Name, path, n.Sel.Name, w.line(n), where); what != "" {
						out, w.unsure = what, !sure
					} else if q, _ := w.imported(path); q != nil {
						if why := q.unseenAt(n.Sel.Name, w.line(n), where); why != "" {
							out, w.unsure = x.Name+"."+why, true
						}
					}
					return false // Sel names x's package's function, not one of p
				}
			}
			if clockFields[n.Sel.Name] {
				out = fmt.Sprintf("%s at %s%s", n.Sel.Name, w.line(n), where)
			}
		case *ast.CallExpr:
			out = w.follow(p, imports, n, depth, where)
		}
		return out == ""
	})
	return out
}

// follow walks the functions call may reach: the package's by name (a
// method by its name on any type, here and in the module's packages the
// file imports), and a module package's function. Looking for time
// reads, it also follows other modules' packages, and what it cannot
// read (a package it cannot find or parse, a function without a body, a
// call deeper than it follows) counts as a read it cannot rule out.
func (w *ageWalker) follow(p *syntaxPkg, imports map[string]string, call *ast.CallExpr, depth int, where string) string {
	type target struct {
		p    *syntaxPkg
		key  string
		qual string // "mono." for another package's function, for the reasons
	}
	var targets []target
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		targets = append(targets, target{p, fun.Name, ""})
	case *ast.SelectorExpr:
		if x, ok := fun.X.(*ast.Ident); ok && imports[x.Name] != "" {
			q, why := w.imported(imports[x.Name])
			if why != "" {
				w.unsure = true
				return fmt.Sprintf("%s.%s at %s%s, of %s", x.Name, fun.Sel.Name, w.line(call), where, why)
			}
			if q != nil {
				targets = append(targets, target{q, fun.Sel.Name, x.Name + "."})
			}
			break
		}
		targets = append(targets, target{p, "." + fun.Sel.Name, ""})
		// In the order of the paths, so that the reason is the same
		// on every run.
		for _, path := range slices.Sorted(maps.Values(imports)) {
			q, why := w.imported(path)
			if why != "" {
				w.unsure = true
				return fmt.Sprintf("%s at %s%s, which may be a method of %s", fun.Sel.Name, w.line(call), where, why)
			}
			if q != nil {
				targets = append(targets, target{q, "." + fun.Sel.Name, ""})
			}
		}
	}
	for _, t := range targets {
		if why := t.p.unseenAt(t.key, w.line(call), where); why != "" && !w.background {
			w.unsure = true
			return t.qual + why
		}
		for _, fd := range t.p.funcs[t.key] {
			if w.seen[fd] {
				continue
			}
			if depth >= maxDepth {
				if w.background {
					return ""
				}
				w.unsure = true
				return fmt.Sprintf("%s%s at %s%s, deeper than the rule follows", t.qual, strings.TrimPrefix(t.key, "."), w.line(call), where)
			}
			w.seen[fd] = true
			if why := w.walk(t.p, fd, depth+1); why != "" {
				return why
			}
		}
	}
	return ""
}

// imported returns the syntax of the package of an import path whose
// functions the walker follows, or nil for one it does not (the standard
// library's; in the background search, other modules'). Looking for time
// reads, why says why it cannot read one of another module (not found
// through go.mod) or of the module (a file it cannot parse).
func (w *ageWalker) imported(path string) (q *syntaxPkg, why string) {
	dir, ok := match.ModuleDir(w.root, w.modPath, path)
	if !ok {
		if w.background || path == "C" || match.IsStd(path) || w.root == "" {
			return nil, ""
		}
		if dir, ok = w.deps.dir(path); !ok {
			return nil, path + ", a package of another module the rule cannot find through go.mod"
		}
	}
	q, broken := w.pkg(dir)
	if broken != "" {
		if w.background {
			return nil, ""
		}
		return nil, path + ", whose " + broken + " the rule cannot read"
	}
	return q, ""
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
