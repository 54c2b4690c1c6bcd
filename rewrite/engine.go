// Package rewrite is unflake's engine: on one unit at a time (the loaded
// variants of a package directory; Engine.Run is its one entry point) it
// runs the rules it is given on the test files, applies the fixes to the
// decorated syntax, restores and formats the files, type-checks the result
// again, and hands back findings and file changes (package output diffs
// or writes them). Run is the CLI's path: it lists and loads the packages
// (package load), prefiltered by the rules, and runs the engine on each
// unit, through the result cache (package cache). It knows nothing about
// any particular rule.
package rewrite

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/cache"
	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/load"
	"github.com/unflake/unflake/internal/modedit"
	"github.com/unflake/unflake/internal/output"
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

	// Options are the values of the rules' options for this run (a rule
	// declares them in rule.Rule.Flags); the zero value means every
	// option has its default. Prefilters and passes see them.
	Options rule.Options

	// NoPrefilter type-checks every package with test files, even those
	// no rule can match. It exists to test that the prefilter never
	// changes the result.
	NoPrefilter bool

	// Progress, if set, is called as packages are handled, with how many
	// of the listed candidates are done: done only grows, never exceeds
	// total, and the last call is (total, total).
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
	// (rule.Fix.Hypothesis), and asks Decide about every fix before applying
	// it: a Decision with a Revert holds the fix back and is recorded on
	// its finding (Finding.Revert); otherwise it names the form of the
	// fix to apply (rule.Hypothesis.Alternatives).
	Decide func(Site) Decision

	// Cache, when not "", is the directory of the result cache
	// (cache.go): a run whose inputs are unchanged since a stored run
	// returns that run's result without loading anything.
	Cache string

	// GoAs, if set, analyses the packages of a main module as if its
	// go.mod declared a newer go version: given the go.mod path, it
	// returns that version ("go1.25"), or "" to keep the declared one (an
	// older one is ignored too). The fixes that passed a version gate
	// only thanks to it carry the version they need (Finding.NeedsGo).
	// go.mod itself is not changed: the caller edits it when it keeps
	// the result. Plans use it to count what a raise would unlock.
	GoAs func(gomod string) string

	// Measured, if set, returns the measured elapsed time of test (a
	// top-level test, or "TestX/sub") of the package whose tests go test
	// reports under the import path pkg (internal/measured): rules read
	// it through rule.Pass.Measured. A run with measurements is not
	// cached. (internal/measured reads them.)
	Measured func(pkg, test string) (time.Duration, bool)
}

// Result is what a run found and would change.
type Result struct {
	Findings []Finding
	Changes  []Change // files whose content the fixes change, sorted by path
	Errors   []error  // packages that failed to load; internal errors
	// Refused holds the files fix would refuse to write (a symlink, no
	// write permission, a real path outside its module) in which a fix
	// was found and not applied, sorted by path; the findings say so
	// (Finding.Unwritable).
	Refused  []*output.WriteError
	Packages int // packages matched by the patterns
	Loaded   int // packages type-checked after the prefilter
	// Cached is set when the result comes from the cache (Config.Cache).
	Cached bool

	jobs []*jobResult // a unit's, from Engine.Run, until Engine.Finish
}

// loadChunk is how many candidate packages are type-checked at once.
const loadChunk = 256

// maxRounds bounds the fixed-point iteration: rules run again on their own
// output until a round changes nothing.
const maxRounds = 5

// Run loads the packages matching cfg.Patterns and runs cfg.Rules on them.
// It returns an error only when nothing could be done; per-package
// failures are in Result.Errors and leave those packages untouched.
func Run(cfg *Config) (*Result, error) {
	return RunContext(context.Background(), cfg)
}

// RunContext is Run with a context: cancelling it stops go list, the
// loads and go get. cfg is not changed.
func RunContext(ctx context.Context, cfg *Config) (*Result, error) {
	if len(cfg.Patterns) == 0 {
		c := *cfg
		c.Patterns = []string{"."}
		cfg = &c
	}
	if !cfg.cacheable() {
		return run(ctx, cfg, nil)
	}
	cc := cfg.cache()
	if res := loadResult(cc.FastHit); res != nil {
		return res, nil
	}
	// The cache key's listing runs beside the engine's own: a miss
	// costs no more wall time than a run without the cache.
	keyed := make(chan *cache.Entry, 1)
	go func() { keyed <- cc.Open() }()
	var c *cache.Entry
	waited := false
	hit := func() *Result {
		c, waited = <-keyed, true
		if c == nil {
			return nil
		}
		return loadResult(c.Load)
	}
	res, err := run(ctx, cfg, hit)
	if !waited {
		c = <-keyed
	}
	if err == nil && c != nil && !res.Cached {
		storeResult(c, res)
	}
	return res, err
}

// run is Run without the cache; hit, if not nil, is asked once the
// packages are listed for a stored result to return instead. It is the
// CLI's path through the engine: load (package load), then the engine's
// entry point (Engine.Run) on each unit, then Engine.Finish.
func run(ctx context.Context, cfg *Config, hit func() *Result) (*Result, error) {
	e, err := NewEngine(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close() // the changes hold what they need of the go.mod copies
	defer stage("")
	stage("list")
	ld := cfg.loader()
	cands, err := ld.List(ctx)
	if err != nil {
		return nil, err
	}
	if hit != nil {
		if res := hit(); res != nil {
			return res, nil
		}
	}
	res := &Result{Errors: cands.Errors, Packages: cands.Total}
	if len(cands.Paths) == 0 {
		return res, nil
	}

	// Packages are type-checked a chunk at a time and let go when their
	// units end: peak memory follows the chunk, not the repository. Every
	// variant of a package (p, p [p.test], p_test) comes from the same
	// import path, so they land in the same chunk, and in the same unit.
	var results []*Result
	summaries := effects.NewLoader() // the callees' effects, summarised on demand
	defer func() { stages.write(len(cands.Paths), res.Loaded, summaries) }()
	// Progress counts the listed packages (cands.Paths): a unit is one of
	// them, whatever its variants (p, p [p.test], p_test), and a chunk's
	// packages that hold no work count when the chunk ends.
	var mu sync.Mutex
	done := 0
	progress := func(n int) { // mu held
		if cfg.Progress != nil && n > done {
			done = n
			cfg.Progress(done, len(cands.Paths))
		}
	}
	for start := 0; start < len(cands.Paths); start += loadChunk {
		end := min(start+loadChunk, len(cands.Paths))
		stage("load")
		pkgs, err := ld.Load(ctx, cands.Paths[start:end])
		if err != nil {
			return nil, err
		}
		stage("rules")
		units := e.prepare(pkgs, res)
		summaries.Add(pkgs)
		handled := 0 // units of the chunk done
		chunk := make([]*Result, len(units))
		errs := make([]error, len(units))
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for i, u := range units {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				u.Effects = summaries
				chunk[i], errs[i] = e.Run(ctx, u)
				mu.Lock()
				handled++
				progress(min(start+handled, end))
				mu.Unlock()
			}()
		}
		wg.Wait()
		mu.Lock()
		progress(end)
		mu.Unlock()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		results = append(results, chunk...)
	}
	return e.Finish(res, results...), nil
}

// loader is the load configuration of cfg's run: its prefilter is the
// rules'.
func (cfg *Config) loader() *load.Config {
	return &load.Config{Dir: cfg.Dir, Patterns: cfg.Patterns, Tags: cfg.Tags, Env: cfg.Env, Only: cfg.Only,
		Worth: func(path string) (bool, error) {
			return worthLoading(path, cfg.Rules, cfg.Options, !cfg.NoPrefilter)
		}}
}

// stage labels the CPU profile samples of the calling goroutine, and of
// the goroutines it starts from now on, with the engine's stage (pprof
// label "stage": list, load, rules; "" for none), so that a profile
// (check --cpuprofile) says what each stage costs:
// go tool pprof -tagfocus stage=load.
func stage(name string) {
	stages.enter(name)
	if name == "" {
		pprof.SetGoroutineLabels(context.Background())
		return
	}
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("stage", name)))
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
				res.Errors = append(res.Errors, load.PackageErrors(p)...)
			}
			continue
		}
		if p.Module != nil && !p.Module.Main {
			continue // a dependency: never ours to rewrite
		}
		j := &job{pkg: p, refused: map[string]*output.WriteError{}, opts: cfg.Options, printed: map[*ast.File][]byte{}, conflicts: map[string]string{}, measure: cfg.Measured}
		j.declaredGo = modedit.RaiseGo(cfg.GoAs, p)
		for i, path := range p.CompiledGoFiles {
			if i >= len(p.Syntax) || !load.IsTestFile(path) {
				continue
			}
			// A file is claimed by its real directory: the same file
			// named through a directory link and directly (./link
			// ./real) is rewritten once. (Not by its own link's target:
			// two packages may link the same file, and each reports it.)
			key := path
			if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
				key = filepath.Join(d, filepath.Base(path))
			}
			if claimed[key] {
				continue
			}
			claimed[key] = true
			if cfg.Only != nil && !cfg.Only(path) {
				continue
			}
			f := p.Syntax[i]
			if load.IsVendored(path) || isGenerated(f) || strings.HasPrefix(path, goroot) {
				continue
			}
			werr, err := load.OutsideModule(p, path)
			if err != nil {
				res.Errors = append(res.Errors, err)
				continue
			}
			if werr == nil {
				werr = output.RefusalOf(path)
			}
			if werr != nil {
				// Analysed and reported, never rewritten: fix would
				// refuse to write it, so no fix in it counts as fixed.
				j.refused[path] = werr
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
		if load.IsTestFile(f) {
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
	pkg      *packages.Package
	excluded excludedNames // declared in files the build leaves out
	files    []string      // absolute paths of the rewritable test files
	// refused holds the files of files that fix would refuse to write
	// (refusalOf, load.OutsideModule): their findings are reported, their
	// fixes not applied.
	refused map[string]*output.WriteError
	opts    rule.Options   // the run's rule options (Config.Options)
	effects effects.Source // summaries of the functions of other packages
	// printed holds each syntax tree of the package as dst prints it back
	// before any fix edits it: every rule with fixes, and every trial of
	// fixes, starts from that print, which is the same for the same tree.
	printed map[*ast.File][]byte
	// declaredGo is the go version the package's module declares when
	// Config.GoAs raised it (raiseGo), else "".
	declaredGo string
	// conflicts holds the fixes found to compile alone but not with the
	// fixes kept beside them (by rule, file, test and site), and where
	// those were ("test" or "package"): in a later round, tried alone on
	// top of them, such a fix still says why (trial.compileReason).
	conflicts map[string]string
	// measure is Config.Measured, or nil.
	measure func(pkg, test string) (time.Duration, bool)
}

// measured returns the measured time of test in the job's package
// (rule.Pass.Measured).
func (j *job) measured(test string) (time.Duration, bool) {
	if j.measure == nil {
		return 0, false
	}
	return j.measure(load.ForTest(j.pkg), test) // the package go test -json reports the tests under
}

type jobResult struct {
	findings []Finding
	changes  []Change
	errors   []error
	requires []string // modules the applied fixes need (rule.Fix.Requires)
	module   *module  // their module, when requires is not empty
	refused  map[string]*output.WriteError
}

// state is a package's syntax and types at one point of the rewrite.
type state struct {
	syntax []*ast.File // in CompiledGoFiles order
	types  *types.Package
	info   *types.Info
	// results holds the results of the rule.Analysis values computed on
	// this state (resultsFor).
	results map[*rule.Analysis]*analysisResult
	// local summarises the package's own functions for this state's
	// content, shared by every rule that sees it, as results are.
	local effects.Source
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
	current := map[string]*content{}
	first := map[string]*content{}
	for k, v := range originals {
		current[k] = &content{data: v}
		first[k] = current[k]
	}
	start := cur

	var fixed []found
	var last []found
	t := newTracker(cfg.Rules)
	reached := false
	for round := 0; round < maxRounds; round++ {
		changed := false
		last = nil
		for _, r := range cfg.Rules {
			if round == 0 && t.changedFor(r) {
				// An earlier rule changed the package before r first
				// looks at it: what r would report on the code as
				// written is the baseline its findings are held to.
				t.baseline(r, j.step(cfg, r, start, first, checker, filter, mods, true).findings)
			}
			step := j.step(cfg, r, cur, current, checker, filter, mods, false)
			out.errors = append(out.errors, step.errors...)
			out.requires = append(out.requires, step.requires...)
			for _, w := range step.refused {
				if out.refused == nil {
					out.refused = map[string]*output.WriteError{}
				}
				out.refused[w.Path] = w
			}
			last = append(last, step.findings...)
			t.ran(r, step, j.pkg.Fset, cur, current)
			if step.next != nil {
				cur = step.next
				for path, src := range step.contents {
					current[path] = &content{data: src}
				}
				changed = true
				t.changed(r, step.findings)
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
	out.errors = dedupe(out.errors) // a bad fix is tried again in each round
	all := append(fixed, last...)
	all = append(all, t.lostFindings(last, j.pkg.Fset, cur, current)...)
	all = remapLines(all, first)
	out.findings = make([]Finding, len(all))
	for i, f := range all {
		out.findings[i] = f.Finding
	}
	assignIDs(out.findings)

	for _, path := range j.files {
		if now := current[path].data; string(now) != string(originals[path]) {
			out.changes = append(out.changes, Change{Path: path, Old: originals[path], New: now, Mode: modes[path]})
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
// that check reports the lines the user sees. A line the rewrite only
// re-indented (a test body moved into a bubble) maps to its original line
// and column. A finding without a fix on code a fix added (a line with no
// original, whose code the original file does not hold) is not the
// user's, and is dropped: it would be reported at an unrelated line.
func remapLines(fs []found, first map[string]*content) []found {
	out := fs[:0]
	for i := range fs {
		f := &fs[i]
		orig, ok := first[f.File]
		if !ok || f.seen == nil || f.seen == orig {
			out = append(out, *f)
			continue
		}
		if f.seen.lines == nil {
			f.seen.lines = output.LineMap(orig.data, f.seen.data)
		}
		m := f.seen.lines
		if f.Line < 1 || f.Line > len(m) {
			out = append(out, *f)
			continue
		}
		to := m[f.Line-1]
		if to.Added && !f.Fixed && f.site != "" && !strings.Contains(orig.normalised(), f.site) {
			continue
		}
		f.Line = to.Line + 1
		if to.Indent != 0 && f.Col > to.Indent {
			f.Col -= to.Indent
		}
		// A reason may name a line of the same file ("a loop that never
		// blocks (x_test.go:47)"): it too is the rewritten file's.
		f.Message = remapRefs(f.Message, f.File, m)
		f.Reason = remapRefs(f.Reason, f.File, m)
		for i, b := range f.Blockers {
			f.Blockers[i] = remapRefs(b, f.File, m)
		}
		out = append(out, *f)
	}
	return out
}

// lineRef matches a file:line reference in a finding's text.
var lineRef = regexp.MustCompile(`([\w.-]+\.go):(\d+)\b`)

// remapRefs moves the references in s to lines of file (by its base name)
// from the rewritten content's lines to the original's, by m.
func remapRefs(s, file string, m []output.LineAt) string {
	base := filepath.Base(file)
	if !strings.Contains(s, base+":") {
		return s
	}
	return lineRef.ReplaceAllStringFunc(s, func(ref string) string {
		sub := lineRef.FindStringSubmatch(ref)
		n, err := strconv.Atoi(sub[2])
		if sub[1] != base || err != nil || n < 1 || n > len(m) || m[n-1].Added {
			return ref
		}
		return sub[1] + ":" + strconv.Itoa(m[n-1].Line+1)
	})
}

// A Change is the new content of one file (package output writes it or
// prints its diff).
type Change = output.Change

// isGenerated reports whether f carries the standard "Code generated ...
// DO NOT EDIT." marker.
func isGenerated(f *ast.File) bool { return ast.IsGenerated(f) }
