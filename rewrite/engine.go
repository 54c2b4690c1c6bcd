// Package rewrite is unflake's engine: it loads packages, prefilters them,
// runs the rules it is given on their test files, applies the fixes to the
// decorated syntax, restores and formats the files, type-checks the result
// again, and hands back findings and file changes to diff or write. It
// knows nothing about any particular rule.
package rewrite

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/effects"
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
	// it: a Decision with a Revert holds the fix back and is recorded on
	// its finding (Finding.Revert); otherwise it names the form of the
	// fix to apply (rule.Fix.Alternatives).
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
	Refused  []*WriteError
	Packages int // packages matched by the patterns
	Loaded   int // packages type-checked after the prefilter
	// Cached is set when the result comes from the cache (Config.Cache).
	Cached bool
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
	if len(cfg.Patterns) == 0 {
		cfg.Patterns = []string{"."}
	}
	if !cfg.cacheable() {
		return run(cfg, nil)
	}
	if res := cfg.fastHit(); res != nil {
		return res, nil
	}
	// The cache key's listing runs beside the engine's own: a miss
	// costs no more wall time than a run without the cache.
	keyed := make(chan *resultCache, 1)
	go func() { keyed <- cfg.openCache() }()
	var c *resultCache
	waited := false
	hit := func() *Result {
		c, waited = <-keyed, true
		if c == nil {
			return nil
		}
		res, _ := c.load()
		return res
	}
	res, err := run(cfg, hit)
	if !waited {
		c = <-keyed
	}
	if err == nil && c != nil && !res.Cached {
		c.store(res)
	}
	return res, err
}

// run is Run without the cache; hit, if not nil, is asked once the
// packages are listed for a stored result to return instead.
func run(cfg *Config, hit func() *Result) (*Result, error) {
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
	defer stage("")
	stage("list")
	cands, err := cfg.listCandidates(cfg.Rules, !cfg.NoPrefilter)
	if err != nil {
		return nil, err
	}
	if hit != nil {
		if res := hit(); res != nil {
			return res, nil
		}
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
	summaries := effects.NewLoader() // the callees' effects, summarised on demand
	defer func() { stages.write(len(cands.paths), res.Loaded, summaries) }()
	var mu sync.Mutex
	done := 0
	for start := 0; start < len(cands.paths); start += loadChunk {
		end := min(start+loadChunk, len(cands.paths))
		stage("load")
		pkgs, err := packages.Load(cfg.loadConfig(typedMode), cands.paths[start:end]...)
		if err != nil {
			return nil, GoCommandError(err)
		}
		stage("rules")
		jobs := cfg.jobs(pkgs, res, claimed)
		summaries.Add(pkgs)
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
				j.effects = summaries
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
		for _, w := range r.refused {
			res.Refused = append(res.Refused, w)
		}
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
	SortFindings(res.Findings)
	sort.Slice(res.Refused, func(i, j int) bool { return res.Refused[i].Path < res.Refused[j].Path })
	sort.Slice(res.Changes, func(i, j int) bool { return res.Changes[i].Path < res.Changes[j].Path })
	return res, nil
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
				res.Errors = append(res.Errors, PackageErrors(p)...)
			}
			continue
		}
		if p.Module != nil && !p.Module.Main {
			continue // a dependency: never ours to rewrite
		}
		j := &job{pkg: p, refused: map[string]*WriteError{}, opts: cfg.Options, printed: map[*ast.File][]byte{}}
		j.declaredGo = cfg.raiseGo(p)
		for i, path := range p.CompiledGoFiles {
			if i >= len(p.Syntax) || !isTestFile(path) {
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
			if isVendored(path) || isGenerated(f) || strings.HasPrefix(path, goroot) {
				continue
			}
			werr, err := outsideModule(p, path)
			if err != nil {
				res.Errors = append(res.Errors, err)
				continue
			}
			if werr == nil {
				werr = refusalOf(path)
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
	pkg      *packages.Package
	excluded excludedNames // declared in files the build leaves out
	files    []string      // absolute paths of the rewritable test files
	// refused holds the files of files that fix would refuse to write
	// (refusalOf, outsideModule): their findings are reported, their
	// fixes not applied.
	refused map[string]*WriteError
	opts    rule.Options   // the run's rule options (Config.Options)
	effects effects.Source // summaries of the functions of other packages
	// printed holds each syntax tree of the package as dst prints it back
	// before any fix edits it: every rule with fixes, and every trial of
	// fixes, starts from that print, which is the same for the same tree.
	printed map[*ast.File][]byte
	// declaredGo is the go version the package's module declares when
	// Config.GoAs raised it (raiseGo), else "".
	declaredGo string
}

type jobResult struct {
	findings []Finding
	changes  []Change
	errors   []error
	requires []string // modules the applied fixes need (rule.Fix.Requires)
	module   *module  // their module, when requires is not empty
	refused  map[string]*WriteError
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
					out.refused = map[string]*WriteError{}
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
			f.seen.lines = lineMap(orig.data, f.seen.data)
		}
		m := f.seen.lines
		if f.Line < 1 || f.Line > len(m) {
			out = append(out, *f)
			continue
		}
		to := m[f.Line-1]
		if to.added && !f.Fixed && f.site != "" && !strings.Contains(orig.normalised(), f.site) {
			continue
		}
		f.Line = to.line + 1
		if to.indent != 0 && f.Col > to.indent {
			f.Col -= to.indent
		}
		out = append(out, *f)
	}
	return out
}

// A lineAt is the original line a line of rewritten content is, and how
// much deeper the rewrite indented it.
type lineAt struct {
	line   int
	indent int  // bytes of leading white space added (negative: removed)
	added  bool // the line is new: line is the original line before it
}

// lineMap maps each line of changed to the line of orig it is: the same
// line, the same line re-indented (matched in order within a changed
// run), or, for a line the rewrite added, the original line before it.
func lineMap(orig, changed []byte) []lineAt {
	a, b := splitLines(string(orig)), splitLines(string(changed))
	m := make([]lineAt, len(b))
	last := 0
	ops := lineOps(a, b)
	for i := 0; i < len(ops); {
		o := ops[i]
		if o.kind == ' ' {
			m[o.b], last = lineAt{line: o.a}, o.a
			i++
			continue
		}
		// A run of changes: deleted lines, added lines, in any order.
		var dels, adds []op
		for ; i < len(ops) && ops[i].kind != ' '; i++ {
			if ops[i].kind == '-' {
				dels = append(dels, ops[i])
			} else {
				adds = append(adds, ops[i])
			}
		}
		d := 0
		for _, ad := range adds {
			text := strings.TrimSpace(ad.line)
			k := d
			for k < len(dels) && (text == "" || strings.TrimSpace(dels[k].line) != text) {
				k++
			}
			if k < len(dels) {
				m[ad.b] = lineAt{line: dels[k].a, indent: indentOf(ad.line) - indentOf(dels[k].line)}
				last, d = dels[k].a, k+1
				continue
			}
			m[ad.b] = lineAt{line: last, added: true}
		}
	}
	return m
}

func indentOf(line string) int {
	return len(line) - len(strings.TrimLeft(line, " \t"))
}

// OriginalLine returns the line of orig (1-based) that line of changed,
// a rewrite of it, is; added reports a line the rewrite added, for which
// the line is the original one before it. A line outside changed maps to
// itself. Verification uses it to quote a failure of a rewritten test at
// the user's own line.
func OriginalLine(orig, changed []byte, line int) (at int, added bool) {
	m := lineMap(orig, changed)
	if line < 1 || line > len(m) {
		return line, false
	}
	return m[line-1].line + 1, m[line-1].added
}
