package rewrite

import (
	"fmt"
	"go/ast"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/rule"
)

// listMode is the cheap first load: names and file lists only (go list),
// enough to prefilter test files by their bytes.
const listMode = packages.NeedName | packages.NeedFiles | packages.NeedModule | packages.NeedForTest

// typedMode is the full load of candidate packages.
const typedMode = packages.NeedName | packages.NeedForTest | packages.NeedFiles | packages.NeedCompiledGoFiles |
	packages.NeedImports | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax |
	packages.NeedModule | packages.NeedTypesSizes

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
			if ok, err := worthLoading(f, rules, prefilter); err != nil {
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
func worthLoading(path string, rules []*rule.Rule, prefilter bool) (bool, error) {
	if !prefilter {
		return true, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	for _, r := range rules {
		if r.Prefilter(src) {
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
func PackageErrors(p *packages.Package) []error {
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
