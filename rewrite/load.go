package rewrite

import (
	"fmt"
	"go/ast"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/rule"
)

// listMode is the cheap first load: names and file lists only (go list),
// enough to prefilter test files by their bytes.
const listMode = packages.NeedName | packages.NeedFiles | packages.NeedModule | packages.NeedForTest

// typedMode is the full load of candidate packages.
const typedMode = packages.NeedName | packages.NeedForTest | packages.NeedFiles | packages.NeedCompiledGoFiles |
	packages.NeedImports | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax |
	packages.NeedModule | packages.NeedTypesSizes |
	packages.NeedExportFile // for effects.Loader, which type-checks dependencies from source on demand

// loadConfig returns the go/packages configuration shared by both loads.
func (c *Config) loadConfig(mode packages.LoadMode) *packages.Config {
	var flags []string
	if len(c.Tags) > 0 {
		flags = append(flags, "-tags="+strings.Join(c.Tags, ","))
	}
	return &packages.Config{
		Mode:       mode,
		Dir:        c.Dir,
		Tests:      true,
		BuildFlags: flags,
		Env:        c.Env,
	}
}

// candidates is the outcome of the first load.
type candidates struct {
	paths  []string // import paths to load with types, sorted
	errors []error  // packages that failed to list
	total  int      // packages matched by the patterns
}

// listCandidates lists the packages matching patterns and keeps those with
// a test file that some rule's prefilter accepts. With prefilter false,
// every package with a test file is a candidate.
func (c *Config) listCandidates(rules []*rule.Rule, prefilter bool) (*candidates, error) {
	pkgs, err := packages.Load(c.loadConfig(listMode), c.Patterns...)
	if err != nil {
		return nil, GoCommandError(err)
	}
	if err := c.analysable(pkgs); err != nil {
		return nil, err
	}
	out := &candidates{}
	seen := map[string]bool{}
	roots := map[string]bool{}
	for _, p := range pkgs {
		if p.Name == "main" && strings.HasSuffix(p.ID, ".test") {
			continue // the synthesized test main package
		}
		roots[forTest(p)] = true
		out.errors = append(out.errors, PackageErrors(p)...)
		if len(p.Errors) > 0 {
			continue
		}
		for _, f := range p.GoFiles {
			if !isTestFile(f) || seen[f] {
				continue
			}
			seen[f] = true
			if c.Only != nil && !c.Only(f) {
				continue
			}
			if ok, err := worthLoading(f, rules, c.Options, prefilter); err != nil {
				out.errors = append(out.errors, err)
			} else if ok {
				out.paths = append(out.paths, forTest(p))
			}
		}
	}
	out.total = len(roots)
	for _, pat := range c.Patterns {
		if !c.matchesAny(pat, pkgs) {
			out.errors = append(out.errors, fmt.Errorf("pattern %s matched no packages", pat))
		}
	}
	sort.Strings(out.paths)
	out.paths = compact(out.paths)
	return out, nil
}

// analysable returns an error when the listed packages hold nothing
// unflake can work on although the patterns matched something: packages
// loaded in GOPATH mode, or only packages outside the main modules (the
// standard library, dependencies). A clean run there would be a lie.
func (c *Config) analysable(pkgs []*packages.Package) error {
	goroot := filepath.Clean(runtime.GOROOT()) + string(filepath.Separator)
	ours, others := 0, 0
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil // reported as it is
		}
		if p.Name == "main" && strings.HasSuffix(p.ID, ".test") {
			continue // the synthesized test main package
		}
		switch {
		case p.Module != nil && p.Module.Main:
			ours++
		case p.Module == nil && hasFileOutside(p, goroot):
			return fmt.Errorf("%s: the go command loads these packages in GOPATH mode (GO111MODULE=off, or no go.mod); unflake works on modules only; see 'go help modules'",
				strings.Join(c.Patterns, " "))
		default:
			others++
		}
	}
	if ours == 0 && others > 0 {
		return fmt.Errorf("%s: matched only packages outside the main module (the standard library or dependencies); unflake rewrites only a module's own tests",
			strings.Join(c.Patterns, " "))
	}
	return nil
}

// hasFileOutside reports whether p has a Go file outside the directory
// tree dir.
func hasFileOutside(p *packages.Package, dir string) bool {
	for _, f := range p.GoFiles {
		if !strings.HasPrefix(f, dir) {
			return true
		}
	}
	return false
}

// outsideModule returns a *WriteError (WriteOutside) when the real path
// of file, a file of p, lies outside the real directory tree of p's
// module: a pattern that names a symbolic link to a directory elsewhere
// (unflake fix ./q, with q -> /elsewhere) loads files under the link's
// path, and writing them would change files outside the module being
// fixed. The file is still analysed; its findings say why they are not
// fixed. It returns a plain error when a path cannot be resolved.
func outsideModule(p *packages.Package, file string) (*WriteError, error) {
	if p.Module == nil || p.Module.Dir == "" {
		return nil, nil
	}
	root, err := filepath.EvalSymlinks(p.Module.Dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return nil, err
	}
	if real == root || strings.HasPrefix(real, root+string(filepath.Separator)) {
		return nil, nil
	}
	return &WriteError{Path: file, Reason: WriteOutside,
		Err: fmt.Errorf("real path %s is outside module %s (%s)", real, p.Module.Path, p.Module.Dir)}, nil
}

// GoCommandError turns the error packages.Load returns when the go
// command itself fails into the go command's own words. go/packages
// (x/tools internal/gocommand) wraps them as
// "err: exit status 1: stderr: go: go.mod file not found ..."; the text
// after ": stderr: " is what the go command printed. TestGoCommandError
// pins the wrapper against a real failing load.
func GoCommandError(err error) error {
	s := err.Error()
	const wrap = ": stderr: "
	if !strings.HasPrefix(s, "err: ") {
		return err
	}
	i := strings.Index(s, wrap)
	if i < 0 {
		return err
	}
	if msg := strings.TrimSpace(s[i+len(wrap):]); msg != "" {
		return &GoError{Msg: msg}
	}
	return err
}

// A GoError is a failure of the go command (no go.mod, a broken go.work,
// a bad build flag), in its own words.
type GoError struct{ Msg string }

func (e *GoError) Error() string { return e.Msg }

// matchesAny reports whether some listed package matches the pattern, as
// far as it can tell: directory patterns by directory, import path
// patterns by path. Special patterns (all, std, ...) always match.
func (c *Config) matchesAny(pattern string, pkgs []*packages.Package) bool {
	local := pattern == "." || pattern == ".." || strings.HasPrefix(pattern, "./") ||
		strings.HasPrefix(pattern, "../") || filepath.IsAbs(pattern)
	if !local && !strings.Contains(pattern, ".") && !strings.Contains(pattern, "/") {
		return true // all, std, cmd, main, tool, or a one-element path
	}
	base := strings.TrimSuffix(pattern, "/...")
	recursive := base != pattern
	if strings.Contains(base, "...") {
		return true // a wildcard inside the pattern: let the go command judge
	}
	if local {
		dir := base
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(c.Dir, dir)
		}
		for _, p := range pkgs {
			if p.Dir == dir || recursive && strings.HasPrefix(p.Dir, dir+string(filepath.Separator)) || len(p.Errors) > 0 {
				return true
			}
		}
		return false
	}
	for _, p := range pkgs {
		path := forTest(p)
		if path == base || recursive && strings.HasPrefix(path, base+"/") || len(p.Errors) > 0 {
			return true
		}
	}
	return false
}

// worthLoading reports whether the test file at path may hold a finding
// for one of rules.
func worthLoading(path string, rules []*rule.Rule, opts rule.Options, prefilter bool) (bool, error) {
	defer stages.since(costPrefilter, time.Now())
	if !prefilter {
		return true, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	for _, r := range rules {
		if r.Prefilter(src, opts.For(r)) {
			return true, nil
		}
	}
	return false, nil
}

// forTest returns the import path of the package under test for any
// variant of it: "p" for p, "p [p.test]" and "p_test [p.test]".
func forTest(p *packages.Package) string {
	if p.ForTest != "" {
		return p.ForTest
	}
	return p.PkgPath
}

func compact(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func isTestFile(path string) bool { return strings.HasSuffix(path, "_test.go") }

// isVendored reports whether path lies in a vendor directory.
func isVendored(path string) bool {
	return strings.Contains(filepath.ToSlash(path), "/vendor/")
}

// isGenerated reports whether f carries the standard "Code generated ...
// DO NOT EDIT." marker.
func isGenerated(f *ast.File) bool { return ast.IsGenerated(f) }

// PackageErrors returns the load errors of p as errors that print as
// "file:line:col: message" (*PosError), leaving out the go command's own
// report of a failure that also has parse or type errors.
//
// When a package p imports (directly or not) could not be listed (a
// missing go.sum entry, a module not required), the go command's report of
// that is returned instead of p's own errors, which only say "could not
// import X (invalid package name: "")"; go build and go vet say the same.
func PackageErrors(p *packages.Package) []error {
	if errs := importErrors(p); len(errs) > 0 {
		return errs
	}
	precise := false
	for _, e := range p.Errors {
		precise = precise || e.Kind == packages.ParseError || e.Kind == packages.TypeError
	}
	var errs []error
	for _, e := range p.Errors {
		if precise && e.Kind == packages.ListError {
			continue
		}
		errs = append(errs, &PosError{Pos: e.Pos, Msg: e.Msg})
	}
	return errs
}

// importErrors returns the go command's errors for the packages p
// imports, directly or not, that could not be listed.
func importErrors(p *packages.Package) []error {
	var errs []error
	seen := map[*packages.Package]bool{}
	var visit func(q *packages.Package)
	visit = func(q *packages.Package) {
		for _, dep := range q.Imports {
			if seen[dep] {
				continue
			}
			seen[dep] = true
			for _, e := range dep.Errors {
				if e.Kind == packages.ListError {
					// The position is relative to the directory the go
					// command ran in, as the CLI prints paths.
					errs = append(errs, &PosError{Pos: e.Pos, Msg: e.Msg})
				}
			}
			visit(dep)
		}
	}
	visit(p)
	return errs
}

// PosError is an error at a source position; it prints as
// "file:line:col: message", or "message" when the position is unknown.
type PosError struct {
	Pos string
	Msg string
}

func (e *PosError) Error() string {
	if e.Pos == "" || e.Pos == "-" {
		return e.Msg
	}
	return e.Pos + ": " + e.Msg
}

// readSource reads a file, keeping its mode for the atomic write.
func readSource(path string) ([]byte, os.FileMode, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	return src, info.Mode().Perm(), nil
}
