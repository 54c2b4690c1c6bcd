// Package seal finds the environment variables a module's code reads and
// writes, for each package with tests, a TestMain that empties exactly the
// variables the package's code can reach before the tests run. A test
// process then starts from the same inputs on a configured machine as on a
// clean one.
//
// Run loads the packages matching the patterns and the main-module
// packages they import (transitively), finds the reads (os.Getenv,
// os.LookupEnv, syscall.Getenv, and module functions that pass a parameter
// straight to one of them, called with a constant name), reports the reads
// it cannot name as Unseen, and returns the edited or new _test.go files as
// output.Change values. It never prints and never writes.
package seal

import (
	"fmt"
	"go/token"
	"sort"
	"strings"

	"github.com/unflake/unflake/internal/load"
	"github.com/unflake/unflake/internal/output"
	"golang.org/x/tools/go/packages"
)

// Config says which packages to seal.
type Config struct {
	Dir      string   // the directory patterns are relative to
	Patterns []string // as for go test; default "."
	Tags     []string // build tags
	Env      []string // the environment of the go command; nil: the process's
}

// Result is what a run found and would change.
type Result struct {
	Changes  []output.Change // sorted by path; a nil Old is a new file
	Packages []Package       // the sealed packages, sorted by path
	Unseen   []Unseen        // reads the seal cannot name, sorted by position
	Errors   []error         // load failures; those packages are left alone
}

// Package is one package with tests and the variables its seal empties.
type Package struct {
	Path  string
	Names []string // sorted
}

// Unseen is a read of the environment the seal cannot name.
type Unseen struct {
	Pos token.Position
	Why string
}

// SealFile is the file a new TestMain goes in.
const SealFile = "unflake_seal_test.go"

// Marker starts the comment above the seal block; it is how a later run
// finds the block to update.
const Marker = "// Sealed by unflake seal:"

// listMode is the cheap first load: the import graph, no type-checking.
const listMode = packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
	packages.NeedModule | packages.NeedForTest

// typedMode loads the module's packages with syntax and types.
const typedMode = packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedImports |
	packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax | packages.NeedModule |
	packages.NeedForTest | packages.NeedTypesSizes

func (c *Config) load(mode packages.LoadMode, patterns []string) ([]*packages.Package, error) {
	var flags []string
	if len(c.Tags) > 0 {
		flags = append(flags, "-tags="+strings.Join(c.Tags, ","))
	}
	return packages.Load(&packages.Config{
		Mode:       mode,
		Dir:        c.Dir,
		Tests:      true,
		BuildFlags: flags,
		Env:        c.Env,
	}, patterns...)
}

// Run finds the variables and computes the seals. It returns an error only
// when nothing could be done; per-package failures are in Result.Errors.
func Run(cfg *Config) (*Result, error) {
	patterns := cfg.Patterns
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	listed, err := cfg.load(listMode, patterns)
	if err != nil {
		return nil, load.GoCommandError(err)
	}
	res := &Result{}
	errs := errorSet{}
	// Have: the matched packages (plain and test variants) with the
	// whole import graph below them.
	var roots []*packages.Package
	for _, p := range listed {
		if p.Name == "main" && strings.HasSuffix(p.ID, ".test") {
			continue // the synthesized test main package
		}
		errs.add(p)
		if p.ID == p.PkgPath && inMain(p) {
			roots = append(roots, p)
		}
	}
	if len(roots) == 0 {
		if errs.empty() {
			return nil, fmt.Errorf("%s: %w", strings.Join(patterns, " "), load.ErrNoPackages)
		}
		res.Errors = errs.list
		return res, nil
	}

	// The main-module packages each one imports directly.
	deps := map[string][]string{}
	var walk func(p *packages.Package)
	walk = func(p *packages.Package) {
		if _, ok := deps[p.PkgPath]; ok {
			return
		}
		deps[p.PkgPath] = nil
		for _, imp := range p.Imports {
			if inMain(imp) {
				deps[p.PkgPath] = append(deps[p.PkgPath], imp.PkgPath)
				walk(imp)
			}
		}
	}
	for _, p := range roots {
		walk(p)
	}
	paths := make([]string, 0, len(deps))
	for path := range deps {
		paths = append(paths, path)
	}
	sort.Strings(paths)

	typed, err := cfg.load(typedMode, paths)
	if err != nil {
		return nil, err
	}
	matched := map[string]bool{}
	for _, p := range roots {
		matched[p.PkgPath] = true
	}
	broken := map[string]bool{} // import paths whose plain or test load failed
	plain := map[string]*packages.Package{}
	tests := map[string][]*packages.Package{} // test variants by the path they test
	for _, p := range typed {
		switch {
		case p.Name == "main" && strings.HasSuffix(p.ID, ".test"):
			continue
		case p.ID == p.PkgPath:
			plain[p.PkgPath] = p
		case p.ForTest != "" && matched[p.ForTest]:
			tests[p.ForTest] = append(tests[p.ForTest], p)
		default:
			continue // a test variant of a package only imported
		}
		if len(p.Errors) > 0 {
			errs.add(p)
			broken[p.PkgPath] = true
			if p.ForTest != "" {
				broken[p.ForTest] = true
			}
		}
	}

	var list []*packages.Package
	for _, path := range paths {
		if p := plain[path]; p != nil && !broken[path] {
			list = append(list, p)
		}
	}
	reads, unseen := findReads(list)
	res.Unseen = unseen

	for _, root := range roots {
		path := root.PkgPath
		if broken[path] || len(tests[path]) == 0 && !hasTestFiles(root) {
			continue
		}
		names, ok := reach(path, deps, reads, broken)
		if !ok || len(names) == 0 {
			continue // a dependency failed to load, or nothing to seal
		}
		ch, err := sealPackage(plain[path], tests[path], names)
		if err != nil {
			res.Errors = append(res.Errors, err)
			continue
		}
		res.Packages = append(res.Packages, Package{Path: path, Names: names})
		if ch != nil {
			res.Changes = append(res.Changes, *ch)
		}
	}
	res.Errors = append(errs.list, res.Errors...)
	sort.Slice(res.Packages, func(i, j int) bool { return res.Packages[i].Path < res.Packages[j].Path })
	sort.Slice(res.Changes, func(i, j int) bool { return res.Changes[i].Path < res.Changes[j].Path })
	return res, nil
}

// inMain reports whether p belongs to a main module (the module, or one of
// the go.work modules).
func inMain(p *packages.Package) bool { return p.Module != nil && p.Module.Main }

func hasTestFiles(p *packages.Package) bool {
	for _, f := range p.GoFiles {
		if strings.HasSuffix(f, "_test.go") {
			return true
		}
	}
	return false
}

// reach returns the sorted variables read by path and the module packages
// it imports, transitively; ok is false when one of them failed to load.
func reach(path string, deps map[string][]string, reads map[string]map[string]bool, broken map[string]bool) (names []string, ok bool) {
	seen := map[string]bool{}
	set := map[string]bool{}
	ok = true
	var visit func(string)
	visit = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		if broken[p] {
			ok = false
		}
		for name := range reads[p] {
			set[name] = true
		}
		for _, d := range deps[p] {
			visit(d)
		}
	}
	visit(path)
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, ok
}

// errorSet collects load errors once each: the same failure shows in a
// package and its test variants.
type errorSet struct {
	list []error
	seen map[string]bool
}

func (s *errorSet) add(p *packages.Package) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	for _, e := range load.PackageErrors(p) {
		if !s.seen[e.Error()] {
			s.seen[e.Error()] = true
			s.list = append(s.list, e)
		}
	}
}

func (s *errorSet) empty() bool { return len(s.list) == 0 }
