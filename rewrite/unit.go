package rewrite

import (
	"sort"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/load"
)

// RunPackage runs cfg.Rules on one package that a go/analysis driver (go
// vet -vettool, go fix -fixtool, nogo) has already parsed and
// type-checked, the way Run runs them on each package it loads: the same
// jobs, rounds, re-type-checks and findings, so that both report the
// same. p needs ID, Name, PkgPath, Dir, GoFiles and CompiledGoFiles
// (absolute paths, in the order of Syntax), Syntax, Fset, Types,
// TypesInfo, TypesSizes, Imports (by import path as written, each with
// its Types) and Module (with GoMod and Dir when the package's fixes may
// add a requirement). cfg.Patterns, Dir, Tags, Only and Progress are not
// used; src gives the summaries of the callees in other packages (nil:
// none).
//
// The rules' prefilter applies to p's test files as Run applies it to a
// package's: a package none of whose test files any rule may report on
// is not looked at.
func RunPackage(cfg *Config, p *packages.Package, src effects.Source) (*Result, error) {
	var runFilter *testFilter
	if cfg.Run != "" {
		f, err := newTestFilter(cfg.Run)
		if err != nil {
			return nil, err
		}
		runFilter = f
	}
	res := &Result{Packages: 1}
	worth := false
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
	if !worth {
		return res, nil
	}
	mods := newModules(cfg)
	defer mods.cleanup()
	jobs := cfg.jobs([]*packages.Package{p}, res, map[string]bool{})
	res.Loaded = len(jobs)
	used := map[string]bool{}
	var m *module
	for _, j := range jobs {
		j.effects = src
		r := j.run(cfg, runFilter, mods)
		res.Findings = append(res.Findings, r.findings...)
		res.Changes = append(res.Changes, r.changes...)
		res.Errors = append(res.Errors, r.errors...)
		for _, w := range r.refused {
			res.Refused = append(res.Refused, w)
		}
		if len(r.requires) > 0 && mods.get(j.pkg) != nil {
			m = mods.get(j.pkg)
			for _, req := range r.requires {
				used[req] = true
			}
		}
	}
	if m != nil {
		cs, err := mods.changes(m, used)
		if err != nil {
			res.Errors = append(res.Errors, err)
		}
		res.Changes = append(res.Changes, cs...)
	}
	SortFindings(res.Findings)
	sort.Slice(res.Refused, func(i, j int) bool { return res.Refused[i].Path < res.Refused[j].Path })
	sort.Slice(res.Changes, func(i, j int) bool { return res.Changes[i].Path < res.Changes[j].Path })
	return res, nil
}
