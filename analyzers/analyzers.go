// Package analyzers makes unflake's rules go/analysis Analyzers, so that
// the go command (go vet -vettool, go fix -fixtool), Bazel's nogo and
// golangci-lint can run them.
//
// The rules do not run one analyzer at a time. unflake's engine runs the
// selected rules together, in rounds until nothing changes, because they
// interact (wallclock keeps an assertion that sleep's bubble made exact,
// leak's closes let sleep's bubbles end) and every fix is type-checked
// again with the others. So one analyzer, Suite.Engine, runs the engine
// once per package (rewrite.Engine.Run, on a unit built from the pass) on the syntax and types the
// driver already has, and each rule's analyzer requires it and reports
// that rule's findings: `unflake check` and `go vet -vettool=unflake`
// report the same findings, and `go fix -fixtool=unflake` makes the
// changes `unflake fix` makes.
package analyzers

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"go/token"
	"reflect"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules"
)

// A Suite is one analyzer per rule and the engine analyzer they share.
type Suite struct {
	// Engine runs the selected rules on a package and hands each rule's
	// findings to its analyzer. It reports nothing itself.
	Engine *analysis.Analyzer
	// Rules has one analyzer per rule, named after it, in the order of
	// rules.All.
	Rules []*analysis.Analyzer

	rules    []*rule.Rule
	selected func() []*rule.Rule
}

// New returns the analyzers of rs. selected, called once per package,
// returns the rules the engine runs there (the rules whose analyzers the
// driver runs, when the driver can say); nil means the rules that are
// Default. A rule outside the selection reports nothing.
func New(rs []*rule.Rule, selected func() []*rule.Rule) *Suite {
	s := &Suite{rules: rs, selected: selected}
	s.Engine = &analysis.Analyzer{
		Name:       "unflake",
		Doc:        "runs unflake's engine once per package for the rule analyzers (its result is their findings)",
		Requires:   []*analysis.Analyzer{effects.Analyzer},
		Run:        s.runEngine,
		ResultType: reflect.TypeFor[*result](),
	}
	for _, r := range rs {
		s.Rules = append(s.Rules, &analysis.Analyzer{
			Name:     r.Name,
			Doc:      r.Doc,
			URL:      docsURL + anchor(r.Name+": "+r.Short()),
			Flags:    r.NewFlags(),
			Requires: []*analysis.Analyzer{s.Engine},
			Run:      func(pass *analysis.Pass) (any, error) { return nil, s.report(pass, r.Name) },
		})
	}
	return s
}

// Default is the suite of every registered rule, running the default set:
// what nogo and golangci-lint load (see docs/drivers.md). A rule that is
// not Default reports nothing in it. The go command's vet and fix tool
// runs a suite that follows its -RULE flags instead (Main).
var Default = New(rules.All(), nil)

// All is the suite that runs every rule, the opt-in ones included, as
// `unflake check --rules all` does. nogo loads an opt-in rule's analyzer
// from it; a driver that loads analyzers of both suites runs the engine
// once for each.
var All = New(rules.All(), rules.All)

// docsURL is where a rule's analyzer points for its documentation: the
// rule's section of docs/rules.md.
const docsURL = "https://github.com/unflake/unflake/blob/main/docs/rules.md#"

// anchor returns the anchor GitHub gives a Markdown heading: lower case,
// punctuation but '-' and '_' dropped, spaces made '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(heading) {
		switch {
		case c == ' ':
			b.WriteByte('-')
		case c == '-' || c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c):
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Lookup returns the analyzer of the rule named name, or nil.
func (s *Suite) Lookup(name string) *analysis.Analyzer {
	for _, a := range s.Rules {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// options returns the values the driver gave the options of rules. Each
// analyzer's Flags are its rule's declaration made again
// (rule.Rule.NewFlags), which the driver parses; an option is set when
// its value is not its default. (Not Options.SetFlags: unitchecker parses
// the flags into its own flag set, so an analyzer's set never records
// which were seen.)
func (s *Suite) options(rs []*rule.Rule) (rule.Options, error) {
	var o rule.Options
	for _, r := range rs {
		a := s.Lookup(r.Name)
		if a == nil {
			continue
		}
		var err error
		a.Flags.VisitAll(func(f *flag.Flag) {
			if v := f.Value.String(); v != f.DefValue && err == nil {
				err = o.Set(r, f.Name, v)
			}
		})
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// result is the engine's outcome on one package, for the rule analyzers.
type result struct {
	byRule map[string][]analysis.Diagnostic
	// errs are the engine's errors on the package (a fix that does not
	// compile is an internal error). The first rule analyzer to run on the
	// package returns them, so that the driver says so once.
	errs error
	once sync.Once
}

// report reports the findings of rule name from the engine's result.
func (s *Suite) report(pass *analysis.Pass, name string) error {
	res := pass.ResultOf[s.Engine].(*result)
	for _, d := range res.byRule[name] {
		pass.Report(d)
	}
	var err error
	res.once.Do(func() { err = res.errs })
	return err
}

func (s *Suite) runEngine(pass *analysis.Pass) (any, error) {
	sel := s.defaults()
	if s.selected != nil {
		sel = s.selected()
	}
	res := &result{byRule: map[string][]analysis.Diagnostic{}}
	if len(sel) == 0 {
		return res, nil
	}
	p, err := packageOf(pass)
	if err != nil || p == nil {
		return res, err
	}
	src, _ := pass.ResultOf[effects.Analyzer].(effects.Source)
	opts, err := s.options(sel)
	if err != nil {
		return nil, err
	}
	cfg := &rewrite.Config{Rules: sel, Lookup: s.lookupRule, Options: opts}
	ctx := context.Background() // a pass cannot be cancelled
	e, err := rewrite.NewEngine(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	unit, err := e.Run(ctx, &rewrite.Unit{Packages: []*packages.Package{p}, Effects: src})
	if err != nil {
		return nil, err
	}
	out := e.Finish(&rewrite.Result{Packages: 1}, unit)
	res.errs = errors.Join(out.Errors...)
	files := map[string]*token.File{} // by name, as findings name them
	for _, f := range pass.Files {
		tf := pass.Fset.File(f.FileStart)
		files[tf.Name()] = tf
	}
	fixes := fixesOf(files, out)
	for _, f := range out.Findings {
		pos, ok := position(files[f.File], f)
		if !ok {
			return nil, fmt.Errorf("%s:%d:%d: internal error: a finding of rule %s lies outside the package's files", f.File, f.Line, f.Col, f.Rule)
		}
		d := analysis.Diagnostic{Pos: pos, Category: f.Rule, Message: Message(f)}
		if f.Fixed {
			if edits, ok := fixes.of(f); ok {
				d.SuggestedFixes = []analysis.SuggestedFix{{Message: f.Fix, TextEdits: edits}}
			} else {
				d.Related = []analysis.RelatedInformation{{Pos: pos, Message: fixes.why}}
			}
		}
		res.byRule[f.Rule] = append(res.byRule[f.Rule], d)
	}
	return res, nil
}

// defaults returns the suite's rules that are Default.
func (s *Suite) defaults() []*rule.Rule {
	var out []*rule.Rule
	for _, r := range s.rules {
		if r.Default {
			out = append(out, r)
		}
	}
	return out
}

func (s *Suite) lookupRule(name string) *rule.Rule {
	for _, r := range s.rules {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Message is the text of a finding as `unflake check` prints it after
// "file:line:col: rule: ": what is wrong, then the fix or the reason
// there is none.
func Message(f rewrite.Finding) string {
	return f.Text()
}

// position returns the position of f's line and column in tf, its file.
func position(tf *token.File, f rewrite.Finding) (token.Pos, bool) {
	if tf == nil || f.Line < 1 || f.Line > tf.LineCount() {
		return token.NoPos, false
	}
	start := tf.LineStart(f.Line)
	end := tf.Base() + tf.Size()
	if f.Line < tf.LineCount() {
		end = int(tf.LineStart(f.Line + 1))
	}
	pos := start + token.Pos(max(f.Col-1, 0))
	if int(pos) > end {
		pos = token.Pos(end)
	}
	return pos, true
}
