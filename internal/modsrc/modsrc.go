// Package modsrc reads, from their syntax, the Go files a package's tests
// may run: every file of the package's directory (every build, its tests
// too) and the non-test files of the module's packages those files import,
// all the way down, every build. The typed analysis of a rule sees one
// build of one package; a hazard that lives in another build or in a
// package of the module (a file lock taken in a subpackage, an
// environment variable read by a config package) is found here.
package modsrc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/unflake/unflake/internal/match"
)

// maxPackages bounds the packages read: past it, Reach says so (Broken).
const maxPackages = 400

// A File is one Go file read from its syntax. Syntax is nil when it does
// not parse, with Err saying why: such a file may hold anything.
type File struct {
	Path    string
	Syntax  *ast.File
	Imports map[string]string // import name -> path
	Err     error
}

// A Package is the Go files of one directory of the module.
type Package struct {
	Dir        string
	ImportPath string // "" when the module's path is unknown
	Files      []*File
}

// A Module is the syntax of the packages a package's tests reach.
type Module struct {
	Fset     *token.FileSet
	Root     string // the module's directory, or the package's when no go.mod is found
	Path     string // the module's path, or ""
	Packages []*Package
	// Broken, when not empty, says what the reading left out (a directory
	// it cannot read, packages past the bound): code that may hold
	// anything.
	Broken string
}

// Reach reads the package whose typed files are files (in built) and the
// module's packages they reach by import, into a new file set. It
// returns a Module with no packages for files not on disk.
func Reach(built *token.FileSet, files []*ast.File) *Module {
	m := &Module{Fset: token.NewFileSet()}
	if len(files) == 0 {
		return m
	}
	dir := filepath.Dir(built.File(files[0].Pos()).Name())
	if _, err := os.Stat(dir); err != nil {
		return m
	}
	m.Root = dir
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			m.Root, m.Path = d, modfile.ModulePath(data)
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	seen := map[string]bool{dir: true}
	queue := []*Package{m.read(dir, true)}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		m.Packages = append(m.Packages, p)
		for _, f := range p.Files {
			for _, path := range sortedPaths(f.Imports) {
				sub, ok := m.dirOf(path)
				if !ok || seen[sub] || !m.ofModule(sub) {
					continue
				}
				seen[sub] = true
				if len(seen) > maxPackages {
					m.Broken = "the module's packages past the first " + strconv.Itoa(maxPackages)
					return m
				}
				queue = append(queue, m.read(sub, false))
			}
		}
	}
	return m
}

// Rel returns path relative to the module's root, with slashes.
func (m *Module) Rel(path string) string {
	if rel, err := filepath.Rel(m.Root, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

// read parses the Go files of dir (its tests too when tests is set).
func (m *Module) read(dir string, tests bool) *Package {
	p := &Package{Dir: dir}
	if m.Path != "" {
		if rel, err := filepath.Rel(m.Root, dir); err == nil {
			p.ImportPath = m.Path
			if rel != "." {
				p.ImportPath += "/" + filepath.ToSlash(rel)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if m.Broken == "" {
			m.Broken = "the directory " + m.Rel(dir)
		}
		return p
	}
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" || !tests && strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := parser.ParseFile(m.Fset, path, nil, parser.SkipObjectResolution)
		file := &File{Path: path, Err: err}
		if err == nil {
			file.Syntax, file.Imports = f, match.ImportNames(f)
		}
		p.Files = append(p.Files, file)
	}
	return p
}

// dirOf returns the directory of a package of the module by import path.
func (m *Module) dirOf(path string) (string, bool) {
	if m.Path == "" {
		return "", false
	}
	rel, ok := strings.CutPrefix(path, m.Path)
	if !ok || rel != "" && rel[0] != '/' {
		return "", false
	}
	return filepath.Join(m.Root, filepath.FromSlash(rel)), true
}

// ofModule reports whether dir holds a package of the module itself: not
// in testdata, vendor or a nested module.
func (m *Module) ofModule(dir string) bool {
	rel, err := filepath.Rel(m.Root, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	for _, elem := range strings.Split(filepath.ToSlash(rel), "/") {
		if elem == "testdata" || elem == "vendor" || strings.HasPrefix(elem, "_") || strings.HasPrefix(elem, ".") && elem != "." {
			return false
		}
	}
	for d := dir; d != m.Root && strings.HasPrefix(d, m.Root); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return false
		}
	}
	return true
}

// Where words pos as file:line, the file relative to the module.
func (m *Module) Where(pos token.Pos) string {
	p := m.Fset.Position(pos)
	return m.Rel(p.Filename) + ":" + strconv.Itoa(p.Line)
}

func sortedPaths(imports map[string]string) []string {
	var out []string
	for _, p := range imports {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
