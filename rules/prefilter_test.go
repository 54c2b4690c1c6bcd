package rules_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules"
)

// TestPrefilterContract checks the rules' Prefilters against the golden
// cases: a prefilter may only skip packages in which its rule finds
// nothing, so a case gives the same findings and changes with the
// prefilter and without it (Config.NoPrefilter). Each case runs with its
// own rules, with every rule at once, and with each rule alone whose
// prefilter keeps some of the case's test files and not others (a helper
// in another file of the package). A run whose test files all pass the
// prefilters loads the same packages either way and is not repeated.
// With UNFLAKE_PREFILTER_ALL=1, a rule also runs alone on every case whose
// test files its prefilter all rejects (about 960 runs more). When a rule
// fails here, its Prefilter is wrong, not the case.
func TestPrefilterContract(t *testing.T) {
	testmod.Slow(t)
	all := os.Getenv("UNFLAKE_PREFILTER_ALL") != ""
	var cases []goldenCase
	for _, r := range rules.All() {
		cases = append(cases, loadCases(t, r.Name)...)
	}
	for _, c := range cases {
		t.Run(c.rule+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			selected, opts, err := runOptions(c.rule, c.flags)
			if err != nil {
				t.Fatal(err)
			}
			c.checkPrefilter(t, selected, opts)
			c.checkPrefilter(t, rules.All(), opts)
			for _, r := range rules.All() {
				if kept, total := c.kept([]*rule.Rule{r}, opts); kept > 0 && kept < total || kept == 0 && all {
					c.checkPrefilter(t, []*rule.Rule{r}, opts)
				}
			}
		})
	}
}

// kept counts the case's test files, and those the rules' prefilters
// keep.
func (c goldenCase) kept(selected []*rule.Rule, opts rule.Options) (kept, total int) {
	for _, f := range c.archive.Files {
		if !strings.HasSuffix(f.Name, "_test.go") {
			continue
		}
		total++
		for _, r := range selected {
			if r.Prefilter(f.Data, opts.For(r)) {
				kept++
				break
			}
		}
	}
	return kept, total
}

// checkPrefilter runs the rules on case c with the prefilter and without.
func (c goldenCase) checkPrefilter(t *testing.T, selected []*rule.Rule, opts rule.Options) {
	t.Helper()
	if kept, total := c.kept(selected, opts); kept == total {
		return // the prefilters keep every test file: the same packages load
	}
	var names []string
	for _, r := range selected {
		names = append(names, r.Name)
	}
	dir := t.TempDir()
	testmod.WriteFiles(t, dir, c.archive.Files)
	// The spawn cases add golang.org/x/sync: the test's stand-in, never
	// the user's module cache or the network.
	env := testmod.ProxyEnv(t, []testmod.Module{testmod.Sync()})
	run := func(noPrefilter bool) *rewrite.Result {
		t.Helper()
		cfg := &rewrite.Config{Dir: dir, Patterns: []string{"./..."}, Rules: selected, Options: opts, NoPrefilter: noPrefilter, Lookup: rules.Lookup, Env: env}
		res, err := rewrite.Run(cfg)
		if err != nil {
			t.Fatalf("rules %s, NoPrefilter=%v: %v", strings.Join(names, ","), noPrefilter, err)
		}
		return res
	}
	with, without := run(false), run(true)
	if got, want := summary(dir, with), summary(dir, without); got != want || !reflect.DeepEqual(with.Findings, without.Findings) {
		t.Errorf("rules %s: the prefilter changes the result (loaded %d of %d packages, without it %d):\nwith the prefilter:\n%s\nwithout:\n%s", strings.Join(names, ","), with.Loaded, with.Packages, without.Loaded, got, want)
	}
}

// summary is what a run reports and changes, in text.
func summary(dir string, res *rewrite.Result) string {
	var b strings.Builder
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "%s:%d:%d: %s: %s (fixed %v: %s%s)\n", rel(dir, f.File), f.Line, f.Col, f.Rule, f.Message, f.Fixed, f.Fix, f.Reason)
	}
	for _, ch := range res.Changes {
		fmt.Fprintf(&b, "-- %s --\n%s", rel(dir, ch.Path), ch.New)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(&b, "error: %s\n", strings.ReplaceAll(e.Error(), dir, "DIR"))
	}
	return b.String()
}

func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

// runOptions turns a case's command-line flags into the rules to run and
// their options, as the command line does: --rules selects, a rule's own
// flag sets its option, and verification's flags do not matter here.
func runOptions(ruleName string, flags []string) ([]*rule.Rule, rule.Options, error) {
	var opts rule.Options
	names := []string{ruleName}
	for i := 0; i < len(flags); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(flags[i], "-"), "=")
		if name == "rules" {
			if !hasValue && i+1 < len(flags) {
				i++
				value = flags[i]
			}
			names = strings.Split(value, ",")
			continue
		}
		if strings.HasPrefix(name, "verify") {
			continue
		}
		owner := ownerOf(name)
		if owner == nil {
			return nil, opts, fmt.Errorf("flags: %s is no rule's option", flags[i])
		}
		if !hasValue {
			value = "true" // the rules' flags without a value are booleans
		}
		if err := opts.Set(owner, name, value); err != nil {
			return nil, opts, fmt.Errorf("flags: %s: %v", flags[i], err)
		}
	}
	selected, err := rules.Select(names, nil)
	return selected, opts, err
}

// ownerOf returns the rule that declares option name, or nil.
func ownerOf(name string) *rule.Rule {
	for _, r := range rules.All() {
		if r.Flags.Lookup(name) != nil {
			return r
		}
	}
	return nil
}
