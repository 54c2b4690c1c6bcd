package rewrite

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/crash"
	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/load"
)

// A Unit is what the engine works on at once: the loaded variants of one
// package directory (p, p [p.test], p_test [p.test]), each parsed and
// type-checked, with its Module (its go version; GoMod and Dir when its
// fixes may add a requirement). Run's units come from package load; a
// go/analysis driver builds one from its pass (package analyzers).
type Unit struct {
	// Packages need ID, Name, PkgPath, Dir, GoFiles and CompiledGoFiles
	// (absolute paths, in the order of Syntax), Syntax, Fset, Types,
	// TypesInfo, TypesSizes, Imports (by import path as written, each
	// with its Types) and Module.
	Packages []*packages.Package
	// Effects gives the summaries of the callees in other packages (nil:
	// none).
	Effects effects.Source

	// jobs are the unit's work, claimed by Engine.prepare; nil until
	// then.
	jobs     []*job
	prepared bool
}

// An Engine runs cfg.Rules on units, through its one entry point Run,
// and merges their results (Finish). It holds what the units of one run
// share: the -run filter, the files already claimed, and the copies of
// go.mod that fixes add requirements to. Close removes those copies.
type Engine struct {
	cfg    *Config
	filter *testFilter
	mods   *modules

	mu      sync.Mutex
	claimed map[string]bool // test files claimed by a unit, by real path
}

// NewEngine returns an engine for cfg's rules and options; cancelling ctx
// stops the go commands that add requirements to go.mod copies.
// cfg.Patterns, Dir, Tags, Cache and Progress are not its business
// (Run's).
func NewEngine(ctx context.Context, cfg *Config) (*Engine, error) {
	e := &Engine{cfg: cfg, claimed: map[string]bool{}}
	if cfg.Run != "" {
		f, err := newTestFilter(cfg.Run)
		if err != nil {
			return nil, err
		}
		e.filter = f
	}
	e.mods = newModules(ctx, cfg)
	return e, nil
}

// Close removes the temporary copies of go.mod; the changes already hold
// their content.
func (e *Engine) Close() { e.mods.cleanup() }

// prepare turns a chunk of loaded packages into units, one per package
// under test, claiming their files in the packages' order (a file seen
// through a directory link and directly is the first unit's) and
// recording the packages' load errors in res.
func (e *Engine) prepare(pkgs []*packages.Package, res *Result) []*Unit {
	e.mu.Lock()
	jobs := e.cfg.jobs(pkgs, res, e.claimed)
	e.mu.Unlock()
	var units []*Unit
	byPath := map[string]*Unit{}
	for _, j := range jobs {
		path := load.ForTest(j.pkg)
		u := byPath[path]
		if u == nil {
			u = &Unit{prepared: true}
			byPath[path] = u
			units = append(units, u)
		}
		u.Packages = append(u.Packages, j.pkg)
		u.jobs = append(u.jobs, j)
	}
	return units
}

// Run is the engine's entry point: it runs the rules on the unit's test
// files, in rounds until they change nothing, re-type-checking every
// rewrite, and returns the unit's findings, the changes of its files and
// the requirements its applied fixes need (Finish turns those into
// changes of go.mod). The rules' prefilter applies to a unit the caller
// built as List applies it to a package: a unit none of whose test files
// any rule may report on is not looked at. Run stops between packages
// when ctx is done.
func (e *Engine) Run(ctx context.Context, u *Unit) (*Result, error) {
	cfg := e.cfg
	res := &Result{}
	if !u.prepared {
		worth := false
		for _, p := range u.Packages {
			for _, f := range p.GoFiles {
				if !load.IsTestFile(f) || (cfg.Only != nil && !cfg.Only(f)) {
					continue
				}
				ok, err := worthLoading(f, cfg.Rules, cfg.Options, !cfg.NoPrefilter)
				if err != nil {
					res.Errors = append(res.Errors, err)
				}
				worth = worth || ok
			}
		}
		if !worth {
			return res, nil
		}
		e.mu.Lock()
		u.jobs = cfg.jobs(u.Packages, res, e.claimed)
		e.mu.Unlock()
		u.prepared = true
	}
	res.Loaded = len(u.jobs)
	for _, j := range u.jobs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		j.effects = u.Effects
		r := j.safeRun(cfg, e.filter, e.mods)
		if len(r.requires) > 0 {
			r.module = e.mods.get(j.pkg)
		}
		res.jobs = append(res.jobs, r)
	}
	return res, nil
}

// safeRun is j.run with a panic outside the rules' steps (which recover
// their own: job.step) turned into an internal error on the package,
// which is then left unchanged: the other packages go on.
func (j *job) safeRun(cfg *Config, filter *testFilter, mods *modules) (r *jobResult) {
	defer func() {
		if v := recover(); v != nil {
			p := crash.Recovered(v)
			r = &jobResult{errors: []error{fmt.Errorf("%s: internal error: %v", j.pkg.PkgPath, p)}}
		}
	}()
	return j.run(cfg, filter, mods)
}

// Finish merges the results of units (from Run) into res, adds the
// changes of go.mod and go.sum their applied fixes need, and sorts
// findings, changes and refused files.
func (e *Engine) Finish(res *Result, units ...*Result) *Result {
	// The modules the applied fixes need, by module: go.mod changes once
	// per module, however many packages asked.
	used := map[*module]map[string]bool{}
	var order []*module
	for _, u := range units {
		res.Errors = append(res.Errors, u.Errors...)
		res.Loaded += u.Loaded
		for _, r := range u.jobs {
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
	}
	for _, m := range order {
		cs, err := e.mods.changes(m, used[m])
		if err != nil {
			res.Errors = append(res.Errors, err)
			continue
		}
		res.Changes = append(res.Changes, cs...)
	}
	SortFindings(res.Findings)
	sort.Slice(res.Refused, func(i, j int) bool { return res.Refused[i].Path < res.Refused[j].Path })
	sort.Slice(res.Changes, func(i, j int) bool { return res.Changes[i].Path < res.Changes[j].Path })
	return res
}
