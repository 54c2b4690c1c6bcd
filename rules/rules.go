// Package rules registers unflake's rules.
package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules/attemptloop"
	"github.com/unflake/unflake/rules/freeport"
	"github.com/unflake/unflake/rules/leak"
	"github.com/unflake/unflake/rules/parallel"
	"github.com/unflake/unflake/rules/readiness"
	"github.com/unflake/unflake/rules/setenv"
	"github.com/unflake/unflake/rules/sleep"
	"github.com/unflake/unflake/rules/spawn"
	"github.com/unflake/unflake/rules/testscope"
	"github.com/unflake/unflake/rules/waitfor"
	"github.com/unflake/unflake/rules/wallclock"
)

// All returns every rule, in the order they run: a rule comes after those
// it runs After (rule.Validate checks it). A rule that is not in the
// default set says why in its doc.
func All() []*rule.Rule {
	return []*rule.Rule{
		leak.Rule,
		sleep.Rule,       // after leak
		wallclock.Rule,   // after sleep
		attemptloop.Rule, // after sleep, wallclock
		waitfor.Rule,     // after sleep
		setenv.Rule,
		// spawn is opt-in: a buggy child may share a file only it
		// makes (a cache beside its directory); see its doc.
		spawn.Rule,
		freeport.Rule,
		testscope.Rule,
		readiness.Rule,
		// parallel is opt-in: a test made parallel can expose races in
		// code that was fine sequentially.
		parallel.Rule, // after setenv
	}
}

// Lookup returns the rule named name, or nil.
func Lookup(name string) *rule.Rule {
	for _, r := range All() {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Select returns the rules to run: the named ones (or the default set when
// names is empty; every rule when "all" is among them, as in --rules
// setenv --rules all) minus skip, in registry order. An unknown name is an
// error.
func Select(names, skip []string) ([]*rule.Rule, error) {
	if slices.Contains(names, "all") {
		names = Names()
	}
	want := map[string]bool{}
	for _, n := range append(append([]string(nil), names...), skip...) {
		if Lookup(n) == nil {
			return nil, fmt.Errorf("unknown rule %q (rules: %s)", n, strings.Join(Names(), ", "))
		}
	}
	for _, n := range names {
		want[n] = true
	}
	skipped := map[string]bool{}
	for _, n := range skip {
		skipped[n] = true
	}
	var out []*rule.Rule
	for _, r := range All() {
		if skipped[r.Name] {
			continue
		}
		if len(names) == 0 && r.Default || want[r.Name] {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no rule selected")
	}
	return out, nil
}

// Names returns the names of all rules.
func Names() []string {
	var names []string
	for _, r := range All() {
		names = append(names, r.Name)
	}
	return names
}
