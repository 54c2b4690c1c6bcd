package spawn

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// A directory of its own (cmd.Dir) shows that two children are apart only
// when the analysis can see what each child's program does: the test
// binary, whose code it reads (childCode, childEffect). A script or
// another program may reach outside it, to the projects' parent (a mkdir
// lock at ../.reposync.lock, a cache at ../.resolve-cache), $HOME or
// /tmp, and the directories t.TempDir gives one test share their parent.
// Run together, such children take each other's lock now and then, or
// both miss a cache that one after another the second would hit, so a
// bug that shows only on a hit (a cache key that collides) passes the
// rewrite. Neither shows reliably in a few runs: where the program's text
// is in sight (a script literal, a constant argument, a script file of
// the package's directory the command names) and mentions such a place
// or a lock, the site is not fixed; where it is not in sight, the fix is
// at most unproven.

// outsideMarks are what a program's text mentions when it reaches outside
// its working directory or takes a lock, in the order they are looked
// for, with what they name.
var outsideMarks = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?i)\b(?:flock|lockf|lockfile|shlock|lockrun|dotlockfile)\b|\.(?:lock|pid)\b|\bmkdir\b[^\n;&|]*\|\|`), "takes a lock"},
	{regexp.MustCompile(`(?:^|[\s"'=:/(])\.\.(?:/|$|[\s"';)])`), "reaches the parent directory"},
	{regexp.MustCompile(`\$\{?HOME\b|(?:^|[\s"'=:])~(?:/|$|\s)`), "reaches the home directory"},
	{regexp.MustCompile(`\$\{?(?:TMPDIR|TMP|TEMP|XDG_[A-Z_]+)\b`), "reaches a directory the environment names"},
	{regexp.MustCompile(`(?:^|[\s"'=:>(<])/[A-Za-z][^\s"';|&)]*`), absolutePath},
}

const absolutePath = "names an absolute path"

// harmlessAbs are absolute paths that name no shared state: devices and
// the system's programs.
var harmlessAbs = regexp.MustCompile(`^/(?:dev/(?:null|zero|stdin|stdout|stderr|tty|u?random|fd/)|bin/|usr/bin/|usr/local/bin/|sbin/|usr/sbin/|proc/self/)`)

// outsideMark returns the line of text that reaches outside the working
// directory or takes a lock, and what it names, or "", "".
func outsideMark(text string) (line, what string) {
	for _, m := range outsideMarks {
		for _, loc := range m.re.FindAllStringIndex(text, -1) {
			hit := strings.TrimLeft(text[loc[0]:loc[1]], " \t\n\"'=:>(<")
			if m.what == absolutePath && harmlessAbs.MatchString(hit) {
				continue
			}
			start := strings.LastIndex(text[:loc[0]], "\n") + 1
			end := len(text)
			if k := strings.Index(text[loc[1]:], "\n"); k >= 0 {
				end = loc[1] + k
			}
			line := strings.TrimSpace(text[start:end])
			if strings.HasPrefix(line, "#!") {
				continue // the interpreter's path
			}
			if len(line) > 60 {
				line = line[:57] + "..."
			}
			return line, m.what
		}
	}
	return "", ""
}

// maxScript is the size of the largest script file read.
const maxScript = 64 << 10

// outsideHazard says where the text of the program u runs, when it is not
// the test binary and is in sight, reaches outside the child's working
// directory or takes a lock, or "".
func (c *checker) outsideHazard(u *unit) string {
	if u.prog == progSelf {
		return ""
	}
	prog := u.prog
	if prog == progUnknown {
		prog = "a program the analysis cannot name"
	}
	var why string
	report := func(where ast.Node, kind, text string) {
		if why != "" {
			return
		}
		if line, what := outsideMark(text); line != "" {
			why = fmt.Sprintf("the children run %s, whose %s (%s) %s: %q; every child shares it, which a directory of its own (cmd.Dir) does not keep apart, and the directories t.TempDir gives one test share their parent. Run together, one may find another's lock held, or both miss a cache the second would hit one after another (hiding a bug only a hit shows); that fails a few times in ten, where a few runs pass", prog, kind, c.line(where), what, line)
		}
	}
	dir := filepath.Dir(c.pass.Fset.File(c.file.Pos()).Name())
	seen := map[string]bool{}
	readFile := func(where ast.Node, name string) {
		if name == "" || seen[name] || strings.ContainsAny(name, "\n\x00") || filepath.IsAbs(name) {
			return
		}
		seen[name] = true
		p := filepath.Join(dir, filepath.FromSlash(name))
		if rel, err := filepath.Rel(dir, p); err != nil || strings.HasPrefix(rel, "..") {
			return
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() > maxScript {
			return
		}
		if b, err := os.ReadFile(p); err == nil {
			report(where, "file "+filepath.ToSlash(name), string(b))
		}
	}
	inits := map[*types.Var]bool{}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			if match.IsPkgFunc(c.info, n, "os/exec", "Command", "CommandContext") {
				// The program's own path (/bin/sh) is not its text.
				name := c.programName(n)
				for _, a := range n.Args {
					if a != name {
						ast.Inspect(a, visit)
					}
				}
				if s, ok := match.ConstString(c.info, name); ok {
					readFile(n, s)
				}
				return false
			}
			if match.IsPkgFunc(c.info, n, "path/filepath", "Join") || match.IsPkgFunc(c.info, n, "path", "Join") {
				// filepath.Join(wd, "testdata", "sync.sh"): the constant
				// tail names a file of the package's directory.
				var tail []string
				for _, a := range n.Args {
					if s, ok := match.ConstString(c.info, a); ok {
						tail = append(tail, s)
					} else {
						tail = nil
					}
				}
				readFile(n, filepath.Join(tail...))
			}
		case *ast.Ident:
			// A package-level variable's initializer is read where the
			// variable is: var script = `...`.
			if v, ok := c.info.Uses[n].(*types.Var); ok && match.IsPackageLevel(v) && v.Pkg() == c.pass.Pkg && !inits[v] {
				inits[v] = true
				if init := c.initOf(v); init != nil {
					ast.Inspect(init, visit)
				}
			}
		}
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		tv, ok := c.info.Types[e]
		if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
			return true
		}
		s := constant.StringVal(tv.Value)
		where := ast.Node(e)
		if id, ok := e.(*ast.Ident); ok {
			if k, ok := c.info.Uses[id].(*types.Const); ok && k.Pkg() == c.pass.Pkg {
				where = constAt{k}
			}
		}
		kind := "argument"
		if strings.ContainsAny(s, "\n;|&") || strings.Count(s, " ") > 2 {
			kind = "script"
		}
		report(where, kind, s)
		readFile(e, s)
		return false
	}
	for _, s := range u.stmts {
		ast.Inspect(s, visit)
	}
	for _, fd := range c.unitHelpers(u) {
		ast.Inspect(fd.Body, visit)
	}
	return why
}

// constAt places a reason at a constant's declaration: Script (script.go:5).
type constAt struct{ k *types.Const }

func (a constAt) Pos() token.Pos { return a.k.Pos() }
func (a constAt) End() token.Pos { return a.k.Pos() }
