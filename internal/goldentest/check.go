package goldentest

import (
	"bytes"
	"fmt"
	"go/version"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules"
)

// runEngine is the engine as the CLI runs it (unflake check and fix share
// one run): the one place to re-point when the engine's entry changes.
func runEngine(cfg *rewrite.Config) (*rewrite.Result, error) {
	return rewrite.Run(cfg)
}

// Check checks every case of rule (testdata/RULE/*.txtar, run from the
// rule's package: the repository is two directories up) in process, with
// the engine the CLI runs: `unflake check` and `unflake fix` on the case,
// compared with golden/RULE/NAME.golden, then a second run on the fixed
// files that must change nothing and load without a type error.
//
// The cases are written as the modules of a few go.work workspaces, one
// engine run each, so a rule's cases cost a few go list runs rather than
// several per case. Cases that cannot share a workspace run alone: those
// whose fix adds a requirement to go.mod (go get -modfile is refused in
// workspace mode) and those with module paths or flags another case has.
// Cases with --verify run tests, so only rules' TestGolden (slow tier)
// checks them.
func Check(t *testing.T, ruleName string) {
	cases := Cases(t, filepath.Join("..", ".."), ruleName)
	if len(cases) == 0 {
		t.Fatalf("rule %s has no cases under testdata/%s", ruleName, ruleName)
	}
	negative := 0
	for _, c := range cases {
		if c.Negative() {
			negative++
		}
	}
	if negative == 0 && !Update {
		t.Errorf("rule %s has no negative case (one it must leave alone)", ruleName)
	}
	var runnable []Case
	for _, c := range cases {
		if hasFlag(c.Flags, "--verify") {
			t.Run(c.Name, func(t *testing.T) {
				t.Skip("--verify runs the case's tests: rules' TestGolden checks it (-tags slow)")
			})
			continue
		}
		runnable = append(runnable, c)
	}
	env := goEnv(t)
	for _, g := range groups(t, runnable) {
		g.env = env
		if g.alone && testing.Short() {
			skipAlone(t, g.cases[0])
			continue
		}
		for _, c := range g.run(t) {
			if testing.Short() {
				skipAlone(t, c)
				continue
			}
			(&group{cases: []Case{c}, alone: true, env: env}).run(t)
		}
	}
}

// skipAlone skips a case that needs a module of its own under -short: a
// run each costs as much as a workspace of cases.
func skipAlone(t *testing.T, c Case) {
	t.Run(c.Name, func(t *testing.T) {
		t.Skip("asks to edit go.mod, so runs alone: not under -short")
	})
}

func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

// A group is cases that run in one workspace (or, for one case with
// alone set, one module).
type group struct {
	cases    []Case
	flags    string
	unproven bool            // the cases' fixes are applied unproven too (Case.Unproven)
	proven   bool            // the fixes the rules proved are applied (Case.Proven)
	keys     map[string]bool // module paths the cases define, require or replace
	alone    bool
	env      []string // the go command's (goEnv)
}

// groups puts cases into workspaces: same flags and unproven directive,
// and no module path shared (a workspace holds a module once and selects one version of a
// requirement for all).
func groups(t *testing.T, cases []Case) []*group {
	var out []*group
next:
	for _, c := range cases {
		keys, alone := moduleKeys(t, c)
		flags := strings.Join(c.Flags, " ")
		if c.Unproven {
			flags += "\x00unproven" // a group shares one Decide
		}
		if c.Proven {
			flags += "\x00proven"
		}
		if !alone {
			for _, g := range out {
				if g.alone || g.flags != flags || g.unproven != c.Unproven || g.proven != c.Proven || overlaps(g.keys, keys) {
					continue
				}
				g.cases = append(g.cases, c)
				for k := range keys {
					g.keys[k] = true
				}
				continue next
			}
		}
		out = append(out, &group{cases: []Case{c}, flags: flags, unproven: c.Unproven, proven: c.Proven, keys: keys, alone: alone})
	}
	return out
}

func overlaps(a, b map[string]bool) bool {
	for k := range b {
		if a[k] {
			return true
		}
	}
	return false
}

// moduleKeys returns the module paths the case's go.mod defines,
// requires and replaces, and whether the case must run alone: it has no
// go.mod at its root, or its golden changes go.mod or go.sum.
func moduleKeys(t *testing.T, c Case) (map[string]bool, bool) {
	keys := map[string]bool{}
	var gomod []byte
	for _, f := range c.Archive.Files {
		if f.Name == "go.mod" {
			gomod = f.Data
		}
	}
	if gomod == nil {
		return keys, true
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil || mf.Module == nil {
		return keys, true
	}
	keys[mf.Module.Mod.Path] = true
	for _, r := range mf.Require {
		keys[r.Mod.Path] = true
	}
	for _, r := range mf.Replace {
		keys[r.Old.Path] = true
	}
	if a, err := txtar.ParseFile(c.Golden); err == nil {
		for _, f := range a.Files {
			if isModFile(f.Name) {
				return keys, true
			}
		}
	}
	return keys, false
}

// inWorkspace is how the engine says it cannot add a requirement to a
// module of a workspace; a case whose result says so runs again alone.
const inWorkspace = "the module is in a workspace ("

// run writes the group's cases, runs the engine on them, compares each
// case with its golden, applies the fixes and runs again. It returns the
// cases whose result depends on running outside a workspace (a fix that
// asks whether it may add a requirement), not checked yet.
func (g *group) run(t *testing.T) (alone []Case) {
	root := t.TempDir()
	inputs := map[string]map[string][]byte{} // case name → file → content
	var patterns []string
	goLine := "1.22"
	for _, c := range g.cases {
		dir := filepath.Join(root, c.Name)
		testmod.WriteFiles(t, dir, c.Archive.Files)
		in := map[string][]byte{}
		for _, f := range c.Archive.Files {
			in[f.Name] = f.Data
			if f.Name == "go.mod" {
				if mf, err := modfile.ParseLax("go.mod", f.Data, nil); err == nil && mf.Go != nil && version.Compare("go"+goLine, "go"+mf.Go.Version) < 0 {
					goLine = mf.Go.Version
				}
			}
		}
		inputs[c.Name] = in
		patterns = append(patterns, "./"+c.Name+"/...")
	}
	env := g.env
	dir := root
	if g.alone {
		dir = filepath.Join(root, g.cases[0].Name)
		patterns = []string{"./..."}
	} else {
		var work strings.Builder
		fmt.Fprintf(&work, "go %s\n\n", goLine)
		for _, c := range g.cases {
			fmt.Fprintf(&work, "use ./%s\n", c.Name)
		}
		workFile := filepath.Join(root, "go.work")
		if err := os.WriteFile(workFile, []byte(work.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		env = append(slices.Clip(env), "GOWORK="+workFile)
	}
	selected, opts, err := ParseFlags(g.cases[0].Rule, g.cases[0].Flags)
	if err != nil {
		t.Fatalf("%s: flags: %v", g.cases[0].Name, err)
	}
	config := func() *rewrite.Config {
		return &rewrite.Config{Dir: dir, Patterns: append([]string(nil), patterns...), Env: env, Rules: selected, Options: opts, Lookup: rules.Lookup}
	}
	names := caseNames(g.cases)

	cfg := config()
	if g.unproven {
		cfg.Decide = KeepAll
	}
	if g.proven {
		cfg.Decide = KeepProven
	}
	res, err := runEngine(cfg)
	if err != nil {
		t.Fatalf("cases %s: %v", names, err)
	}
	for _, e := range res.Errors {
		t.Errorf("cases %s: check failed: %v", names, e)
	}
	findings, changes := byCase(root, res)
	if g.unproven || g.proven {
		// The findings as check prints them: a run without Decide, which
		// says why each unproven fix is unproven.
		plain, err := runEngine(config())
		if err != nil {
			t.Fatalf("cases %s: %v", names, err)
		}
		findings, _ = byCase(root, plain)
	}
	var kept []string
	for _, c := range g.cases {
		if !g.alone && strings.Contains(findings[c.Name], inWorkspace) {
			alone = append(alone, c)
			continue
		}
		kept = append(kept, "./"+c.Name+"/...")
		t.Run(c.Name, func(t *testing.T) {
			got := &txtar.Archive{Files: []txtar.File{{Name: "findings", Data: []byte(findings[c.Name])}}}
			in := inputs[c.Name]
			var created []string
			for name := range changes[c.Name] {
				if _, ok := in[name]; !ok {
					created = append(created, name)
				}
			}
			sort.Strings(created)
			for _, name := range append(sortedKeys(in), created...) {
				if now, ok := changes[c.Name][name]; ok && !bytes.Equal(now, in[name]) {
					got.Files = append(got.Files, txtar.File{Name: name, Data: now})
				}
			}
			c.Compare(t, got)
		})
	}

	// The fixed files, run again: nothing more to fix, and they load and
	// type-check as a package of their module.
	var fixed []rewrite.Change
	for _, ch := range res.Changes {
		if name, _ := caseOf(root, ch.Path); g.alone || slices.Contains(kept, "./"+name+"/...") {
			fixed = append(fixed, ch)
		}
	}
	if len(fixed) == 0 || testing.Short() {
		// -short leaves the second run out: it costs as much as the
		// first and catches a rule that undoes or redoes its own fix,
		// rarer than a changed finding or rewrite.
		return alone
	}
	for _, ch := range fixed {
		mode := ch.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(ch.Path, ch.New, mode.Perm()); err != nil {
			t.Fatal(err)
		}
	}
	cfg = config()
	if !g.alone {
		cfg.Patterns = kept
	}
	if g.unproven {
		cfg.Decide = KeepAll
	}
	if g.proven {
		cfg.Decide = KeepProven
	}
	again, err := runEngine(cfg)
	if err != nil {
		t.Fatalf("cases %s, second run: %v", names, err)
	}
	for _, e := range again.Errors {
		t.Errorf("cases %s, second run (on the fixed files): %v", names, e)
	}
	_, changed := byCase(root, again)
	for name, files := range changed {
		for file := range files {
			t.Errorf("%s: second run is not idempotent: it changes %s again", name, file)
		}
	}
	return alone
}

// KeepAll is a Config.Decide that keeps every fix, unproven ones too:
// what fix --verify applies when the tests pass with every fix.
func KeepAll(rewrite.Site) rewrite.Decision { return rewrite.Decision{} }

// KeepProven is a Config.Decide that keeps the fixes the rules' own
// checks proved: those proven, and those only their kind of change made
// hypotheses (rule.Demoted). It holds back the rest: what fix --verify
// applies when it keeps the first. It decides each fix as the engine
// meets it, so a fix that only an earlier kept fix makes possible (a
// later restore once an earlier one is gone) is decided too.
func KeepProven(s rewrite.Site) rewrite.Decision {
	if s.Unproven == "" || rule.Demoted(s.Unproven) {
		return rewrite.Decision{}
	}
	return rewrite.Decision{Revert: &rewrite.Revert{Kind: revert.Unshown, Detail: "not proven by its rule"}}
}

// caseOf splits path under root into the case's name and the path in
// the case.
func caseOf(root, path string) (string, string) {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return "", path
	}
	name, file, _ := strings.Cut(filepath.ToSlash(r), "/")
	return name, file
}

// goEnv is the go command's environment for a run: testmod.ProxyEnv,
// where a fix that adds golang.org/x/sync finds the test's stand-in
// (testmod.Sync) and nothing of the user's module cache or the network,
// and -trimpath, so that the build cache serves the export data of a
// case's packages from one run to the next although each run writes them
// in a new directory.
func goEnv(t *testing.T) []string {
	return testmod.ProxyEnv(t, []testmod.Module{testmod.Sync()}, "GOFLAGS=-trimpath")
}

// byCase splits a result by case: the findings as check prints them
// (paths relative to the case's directory), and the new content of each
// changed file, by path relative to the case.
func byCase(root string, res *rewrite.Result) (map[string]string, map[string]map[string][]byte) {
	split := func(path string) (string, string) { return caseOf(root, path) }
	findings := map[string]string{}
	for _, f := range res.Findings {
		name, file := split(f.File)
		f.File = file
		findings[name] += f.String() + "\n"
	}
	changes := map[string]map[string][]byte{}
	for _, ch := range res.Changes {
		name, file := split(ch.Path)
		if changes[name] == nil {
			changes[name] = map[string][]byte{}
		}
		changes[name][file] = ch.New
	}
	return findings, changes
}

// ParseFlags reads a case's command line the way unflake's does: --rules
// NAMES selects rules (the case's own by default), --OPTION[=VALUE] sets
// a rule option.
func ParseFlags(ruleName string, flags []string) ([]*rule.Rule, rule.Options, error) {
	var opts rule.Options
	names := []string{ruleName}
	for i := 0; i < len(flags); i++ {
		f := strings.TrimPrefix(flags[i], "--")
		name, value, hasValue := strings.Cut(f, "=")
		if name == "rules" {
			if !hasValue {
				if i+1 >= len(flags) {
					return nil, opts, fmt.Errorf("--rules needs a value")
				}
				i++
				value = flags[i]
			}
			// --rules repeats: a case's own flag adds to the rule the
			// harness names.
			names = append(names, strings.Split(value, ",")...)
			continue
		}
		r := ruleWithOption(name)
		if r == nil {
			return nil, opts, fmt.Errorf("no rule has the option --%s", name)
		}
		if !hasValue {
			value = "true"
		}
		if err := opts.Set(r, name, value); err != nil {
			return nil, opts, fmt.Errorf("--%s: %v", name, err)
		}
	}
	selected, err := rules.Select(names, nil)
	return selected, opts, err
}

func ruleWithOption(name string) *rule.Rule {
	for _, r := range rules.All() {
		if r.Flags.Lookup(name) != nil {
			return r
		}
	}
	return nil
}

func caseNames(cases []Case) string {
	var names []string
	for _, c := range cases {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

func sortedKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
