// Package ruletest runs a rule on packages type-checked in memory, with a
// Source of effect summaries the test gives, so that a rule's use of
// summaries is tested without a driver or real summaries.
package ruletest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rule/effect"
)

// Summaries is a Source of made-up summaries, by effects.Key.
type Summaries map[string]*effect.Summary

// Of returns the summary of fn, or nil.
func (s Summaries) Of(fn *types.Func) *effect.Summary { return s[effects.Key(fn)] }

// A Package is a package's import path and its files, by name.
type Package struct {
	Path  string
	Files map[string]string
}

// Run type-checks pkgs in order (each may import the ones before it and
// the standard library), runs r on the last one with src as its Source of
// summaries, and returns the diagnostics. Files ending in _test.go are
// the ones the rule may rewrite; fixes are not applied.
func Run(t *testing.T, r *rule.Rule, src effect.Source, pkgs ...Package) []rule.Diagnostic {
	t.Helper()
	return RunWith(t, r, rule.Options{}, nil, src, pkgs...)
}

// RunWith is Run with the run's rule options and the pass's Require:
// nil answers that the module requires every module already.
func RunWith(t *testing.T, r *rule.Rule, opts rule.Options, require func(modPath string) (missing bool, err error), src effect.Source, pkgs ...Package) []rule.Diagnostic {
	t.Helper()
	if require == nil {
		require = func(string) (bool, error) { return false, nil }
	}
	fset := token.NewFileSet()
	done := map[string]*types.Package{}
	std := testmod.Importer(t, imports(pkgs)...)
	imp := importerFunc(func(path string) (*types.Package, error) {
		if p := done[path]; p != nil {
			return p, nil
		}
		return std.Import(path)
	})
	var pass *rule.Pass
	for _, p := range pkgs {
		var names []string
		for name := range p.Files {
			names = append(names, name)
		}
		sort.Strings(names)
		var files, tests []*ast.File
		for _, name := range names {
			f, err := parser.ParseFile(fset, name, p.Files[name], parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			if len(name) > len("_test.go") && name[len(name)-len("_test.go"):] == "_test.go" {
				tests = append(tests, f)
			}
		}
		info := &types.Info{
			Types:        map[ast.Expr]types.TypeAndValue{},
			Defs:         map[*ast.Ident]types.Object{},
			Uses:         map[*ast.Ident]types.Object{},
			Implicits:    map[ast.Node]types.Object{},
			Selections:   map[*ast.SelectorExpr]*types.Selection{},
			Scopes:       map[ast.Node]*types.Scope{},
			FileVersions: map[*ast.File]string{},
		}
		conf := types.Config{Importer: imp, GoVersion: "go1.25"}
		tp, err := conf.Check(p.Path, fset, files, info)
		if err != nil {
			t.Fatalf("%s: %v", p.Path, err)
		}
		done[p.Path] = tp
		pass = &rule.Pass{
			Rule: r, Fset: fset, Files: tests, AllFiles: files, Pkg: tp, TypesInfo: info,
			GoVersion: "go1.25",
			Dst:       func(ast.Node) dst.Node { t.Fatal("ruletest: a rule decorated a file outside a fix"); return nil },
			Options:   opts,
			Require:   require,
			Effects:   src,
			Measured:  func(string) (time.Duration, bool) { return 0, false },
		}
	}
	var out []rule.Diagnostic
	pass.Report = func(d rule.Diagnostic) { out = append(out, d) }
	pass.ResultOf = map[*rule.Analysis]any{}
	if err := analyse(pass, r.Requires); err != nil {
		t.Fatalf("%s: %v", r.Name, err)
	}
	if err := r.Run(pass); err != nil {
		t.Fatalf("%s: %v", r.Name, err)
	}
	return out
}

// analyse puts the results of as, and of the analyses they require, in
// pass.ResultOf.
func analyse(pass *rule.Pass, as []*rule.Analysis) error {
	for _, a := range as {
		if _, ok := pass.ResultOf[a]; ok {
			continue
		}
		if err := analyse(pass, a.Requires); err != nil {
			return err
		}
		v, err := a.Run(pass)
		if err != nil {
			return fmt.Errorf("analysis %s: %v", a.Name, err)
		}
		pass.ResultOf[a] = v
	}
	return nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// imports lists the packages pkgs import that none of them is.
func imports(pkgs []Package) []string {
	own := map[string]bool{}
	for _, p := range pkgs {
		own[p.Path] = true
	}
	need := map[string]bool{}
	for _, p := range pkgs {
		for name, src := range p.Files {
			f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
			if err != nil {
				continue // Run reports it
			}
			for _, spec := range f.Imports {
				if path, err := strconv.Unquote(spec.Path.Value); err == nil && !own[path] {
					need[path] = true
				}
			}
		}
	}
	var out []string
	for path := range need {
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}
