// Package rewrite is unflake's engine: it loads packages, prefilters them,
// runs the rules it is given on their test files, applies the fixes to the
// decorated syntax, restores and formats the files, type-checks the result
// again, and hands back findings and file changes to diff or write. It
// knows nothing about any particular rule.
package rewrite

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/rule"
)

// Config says what to load and which rules to run.
type Config struct {
	Dir      string   // directory to load from; "" means the current one
	Patterns []string // package patterns, as for go list
	Tags     []string // build tags
	Env      []string // environment for the go command; nil means os.Environ()
	Rules    []*rule.Rule

	// Run, when not empty, limits the work to tests and subtests whose
	// names match, as `go test -run` does.
	Run string

	// NoPrefilter type-checks every package with test files, even those
	// no rule can match. It exists to test that the prefilter never
	// changes the result.
	NoPrefilter bool

	// Progress, if set, is called after each package is handled.
	Progress func(done, total int)

	// Only, if set, limits the run to the test files (absolute paths) for
	// which it returns true: other files are neither rewritten nor
	// reported on, and packages without such a file are not type-checked.
	// Campaigns use it to apply one batch, pull requests to look at the
	// files they change.
	Only func(path string) bool

	// Lookup, if set, finds a rule by name: verification uses it to run
	// a rule's Companions.
	Lookup func(name string) *rule.Rule

	// Decide is verification's one hook into the engine (package verify
	// sets it; the engine never runs a test). When set, the engine also
	// applies the fixes the rules could not prove safe
	// (rule.Fix.Unproven), and asks Decide about every fix before applying
	// it: a non-nil Revert holds the fix back and is recorded on its
	// finding (Finding.Revert).
	Decide func(Site) *Revert
}

// Result is what a run found and would change.
type Result struct {
	Findings []Finding
	Changes  []Change // files whose content the fixes change, sorted by path
	Errors   []error  // packages that failed to load; internal errors
	Packages int      // packages matched by the patterns
	Loaded   int      // packages type-checked after the prefilter
}

// A Change is the new content of one file.
type Change struct {
	Path     string // absolute
	Old, New []byte
	Mode     os.FileMode
}

// ErrNoPackages is returned when the patterns match no package.
var ErrNoPackages = errors.New("patterns matched no packages")

// loadChunk is how many candidate packages are type-checked at once.
const loadChunk = 256

// maxRounds bounds the fixed-point iteration: rules run again on their own
// output until a round changes nothing.
const maxRounds = 5

// Run loads the packages matching cfg.Patterns and runs cfg.Rules on them.
// It returns an error only when nothing could be done; per-package
// failures are in Result.Errors and leave those packages untouched.
func Run(cfg *Config) (*Result, error) {
	var runFilter *testFilter
	if cfg.Run != "" {
		f, err := newTestFilter(cfg.Run)
		if err != nil {
			return nil, err
		}
		runFilter = f
	}
	if len(cfg.Patterns) == 0 {
		cfg.Patterns = []string{"."}
	}
	cands, err := cfg.listCandidates(cfg.Rules, !cfg.NoPrefilter)
	if err != nil {
		return nil, err
	}
	res := &Result{Errors: cands.errors, Packages: cands.total}
	if cands.total == 0 && len(cands.errors) == 0 {
		return nil, fmt.Errorf("%s: %w", strings.Join(cfg.Patterns, " "), ErrNoPackages)
	}
	if len(cands.paths) == 0 {
		return res, nil
	}
	mods := newModules(cfg)
	defer mods.cleanup() // the changes hold what they need of the copies

	// Packages are type-checked a chunk at a time and let go when their
	// jobs end: peak memory follows the chunk, not the repository. Every
	// variant of a package (p, p [p.test], p_test) comes from the same
	// import path, so they land in the same chunk.
	var results []*jobResult
	claimed := map[string]bool{}
	var mu sync.Mutex
	done := 0
	for start := 0; start < len(cands.paths); start += loadChunk {
		end := min(start+loadChunk, len(cands.paths))
		pkgs, err := packages.Load(cfg.loadConfig(typedMode), cands.paths[start:end]...)
		if err != nil {
			return nil, err
		}
		jobs := cfg.jobs(pkgs, res, claimed)
		res.Loaded += len(jobs)
		chunk := make([]*jobResult, len(jobs))
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for i, j := range jobs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r := j.run(cfg, runFilter, mods)
				if len(r.requires) > 0 {
					r.module = mods.get(j.pkg)
				}
				chunk[i] = r
				if cfg.Progress != nil {
					mu.Lock()
					done++
					cfg.Progress(done, len(cands.paths))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		results = append(results, chunk...)
	}

	// The modules the applied fixes need, by module: go.mod changes once
	// per module, however many packages asked.
	used := map[*module]map[string]bool{}
	var order []*module
	for _, r := range results {
		res.Findings = append(res.Findings, r.findings...)
		res.Changes = append(res.Changes, r.changes...)
		res.Errors = append(res.Errors, r.errors...)
		if len(r.requires) == 0 {
			continue
		}
		m := r.module
		if m == nil {
			continue // Require refused: no fix with Requires was applied
		}
		if used[m] == nil {
			used[m] = map[string]bool{}
			order = append(order, m)
		}
		for _, p := range r.requires {
			used[m][p] = true
		}
	}
	for _, m := range order {
		cs, err := mods.changes(m, used[m])
		if err != nil {
			res.Errors = append(res.Errors, err)
			continue
		}
		res.Changes = append(res.Changes, cs...)
	}
	sortFindings(res.Findings)
	sort.Slice(res.Changes, func(i, j int) bool { return res.Changes[i].Path < res.Changes[j].Path })
	return res, nil
}

// jobs turns loaded packages into work: one job per package variant that
// holds test files unflake may rewrite, each file claimed once even when
// several variants list it.
func (cfg *Config) jobs(pkgs []*packages.Package, res *Result, claimed map[string]bool) []*job {
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].ID < pkgs[j].ID })
	var jobs []*job
	goroot := filepath.Clean(runtime.GOROOT()) + string(filepath.Separator)
	for _, p := range pkgs {
		if p.Name == "main" && strings.HasSuffix(p.ID, ".test") {
			continue
		}
		if len(p.Errors) > 0 {
			if p.ForTest != "" || hasTestFiles(p) {
				res.Errors = append(res.Errors, PackageErrors(p)...)
			}
			continue
		}
		if p.Module != nil && !p.Module.Main {
			continue // a dependency: never ours to rewrite
		}
		j := &job{pkg: p}
		for i, path := range p.CompiledGoFiles {
			if i >= len(p.Syntax) || !isTestFile(path) || claimed[path] {
				continue
			}
			claimed[path] = true
			if cfg.Only != nil && !cfg.Only(path) {
				continue
			}
			f := p.Syntax[i]
			if isVendored(path) || isGenerated(f) || strings.HasPrefix(path, goroot) {
				continue
			}
			j.files = append(j.files, path)
		}
		if len(j.files) > 0 {
			jobs = append(jobs, j)
		}
	}
	res.Errors = dedupe(res.Errors)
	return jobs
}

func hasTestFiles(p *packages.Package) bool {
	for _, f := range p.GoFiles {
		if isTestFile(f) {
			return true
		}
	}
	return false
}

// dedupe removes repeated errors (the same broken file seen through
// several package variants).
func dedupe(errs []error) []error {
	seen := map[string]bool{}
	var out []error
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

// A job is one package variant and the test files it may rewrite.
type job struct {
	pkg   *packages.Package
	files []string // absolute paths of the rewritable test files
}

type jobResult struct {
	findings []Finding
	changes  []Change
	errors   []error
	requires []string // modules the applied fixes need (rule.Fix.Requires)
	module   *module  // their module, when requires is not empty
}

// state is a package's syntax and types at one point of the rewrite.
type state struct {
	syntax []*ast.File // in CompiledGoFiles order
	types  *types.Package
	info   *types.Info
}

func (j *job) run(cfg *Config, filter *testFilter, mods *modules) *jobResult {
	out := &jobResult{}
	p := j.pkg
	cur := &state{syntax: p.Syntax, types: p.Types, info: p.TypesInfo}
	checker := newChecker(p, cfg.Env, mods)
	originals := map[string][]byte{}
	modes := map[string]os.FileMode{}
	for _, path := range j.files {
		src, mode, err := readSource(path)
		if err != nil {
			out.errors = append(out.errors, err)
			return out
		}
		originals[path] = src
		modes[path] = mode
	}
	current := map[string][]byte{}
	for k, v := range originals {
		current[k] = v
	}

	var fixed []Finding
	var last []Finding
	reached := false
	for round := 0; round < maxRounds; round++ {
		changed := false
		last = nil
		for _, r := range cfg.Rules {
			step := j.step(cfg, r, cur, current, checker, filter, mods)
			out.errors = append(out.errors, step.errors...)
			out.requires = append(out.requires, step.requires...)
			last = append(last, step.findings...)
			if step.next != nil {
				cur = step.next
				for path, src := range step.contents {
					current[path] = src
				}
				changed = true
			}
		}
		if !changed {
			reached = true
			break
		}
		for _, f := range last {
			if f.Fixed {
				fixed = append(fixed, f)
			}
		}
	}
	if !reached {
		out.errors = append(out.errors, fmt.Errorf("%s: internal error: rules did not reach a fixed point in %d rounds", p.PkgPath, maxRounds))
	}
	out.findings = append(fixed, last...)
	remapLines(out.findings, originals)
	assignIDs(out.findings)

	for _, path := range j.files {
		if string(current[path]) != string(originals[path]) {
			out.changes = append(out.changes, Change{Path: path, Old: originals[path], New: current[path], Mode: modes[path]})
		}
	}
	return out
}

// fileIndex maps the rewritable files of a package state by path.
func (j *job) fileIndex(fset *token.FileSet, s *state) map[string]*ast.File {
	want := map[string]bool{}
	for _, p := range j.files {
		want[p] = true
	}
	m := map[string]*ast.File{}
	for _, f := range s.syntax {
		name := fset.File(f.FileStart).Name()
		if want[name] {
			m[name] = f
		}
	}
	return m
}

// remapLines moves the positions of findings made on rewritten content (in
// a later rule's pass or round) back to the lines of the original file, so
// that check reports the lines the user sees.
func remapLines(fs []Finding, originals map[string][]byte) {
	maps := map[string][]int{} // rewritten content → original line of each line
	for i := range fs {
		f := &fs[i]
		seen := f.seen
		f.seen = "" // only needed here
		orig, ok := originals[f.File]
		if !ok || seen == "" || seen == string(orig) {
			continue
		}
		m, ok := maps[seen]
		if !ok {
			m = lineMap(orig, []byte(seen))
			maps[seen] = m
		}
		if f.Line >= 1 && f.Line <= len(m) {
			f.Line = m[f.Line-1] + 1
		}
	}
}

// lineMap maps each line of changed to the line of orig it is, or, for a
// line the rewrite added, to the original line before it.
func lineMap(orig, changed []byte) []int {
	m := make([]int, len(splitLines(string(changed))))
	last := 0
	for _, o := range lineOps(splitLines(string(orig)), splitLines(string(changed))) {
		switch o.kind {
		case ' ':
			m[o.b], last = o.a, o.a
		case '+':
			m[o.b] = last
		}
	}
	return m
}
