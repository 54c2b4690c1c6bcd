package rule_test

import (
	"go/ast"
	"go/types"
	"strings"
	"testing"

	"github.com/unflake/unflake/rule"
)

const goodDoc = "# good: does good\n\nFinds good\nthings.\n\nMore prose.\n\n## Before\n\n```go\nx\n```\n\n## After\n\n```go\ny\n```\n"

func newRule(name, doc string) *rule.Rule {
	return &rule.Rule{Name: name, Doc: doc, Prefilter: func([]byte, rule.Values) bool { return true }, Run: func(*rule.Pass) error { return nil }}
}

func TestDocSections(t *testing.T) {
	r := newRule("good", goodDoc)
	if got := r.Short(); got != "does good" {
		t.Errorf("Short() = %q", got)
	}
	if got := r.Summary(); got != "Finds good things." {
		t.Errorf("Summary() = %q", got)
	}
	if got := r.Section("Before"); got != "```go\nx\n```" {
		t.Errorf("Section(Before) = %q", got)
	}
	if got := r.Section("After"); got != "```go\ny\n```" {
		t.Errorf("Section(After) = %q", got)
	}
	if got := r.Section("Missing"); got != "" {
		t.Errorf("Section(Missing) = %q", got)
	}
}

func TestValidate(t *testing.T) {
	if err := rule.Validate([]*rule.Rule{newRule("good", goodDoc)}); err != nil {
		t.Fatal(err)
	}
	withFunc := func(name, flag string) *rule.Rule {
		r := newRule(name, goodDoc)
		r.Flags.Func(flag, "", func(string) error { return nil })
		return r
	}
	withFlag := func(name, flag string) *rule.Rule {
		r := newRule(name, strings.Replace(goodDoc, "# good:", "# "+name+":", 1))
		r.Flags.String(flag, "", "")
		return r
	}
	after := func(name, first string) *rule.Rule {
		r := newRule(name, strings.Replace(goodDoc, "# good:", "# "+name+":", 1))
		if first != "" {
			r.After = []string{first}
		}
		return r
	}
	if err := rule.Validate([]*rule.Rule{after("one", ""), after("two", "one")}); err != nil {
		t.Errorf("Validate: a rule after the one it runs after: %v", err)
	}
	for _, tc := range []struct {
		rules []*rule.Rule
		want  string
	}{
		{[]*rule.Rule{newRule("Bad", goodDoc)}, "invalid name"},
		{[]*rule.Rule{newRule("good", goodDoc), newRule("good", goodDoc)}, "duplicate name"},
		{[]*rule.Rule{newRule("other", goodDoc)}, "doc must start with"},
		{[]*rule.Rule{newRule("good", "# good: x\n\n## Before\n\nx\n\n## After\n\ny\n")}, "no summary"},
		{[]*rule.Rule{newRule("good", "# good: x\n\nSummary.\n\n## After\n\ny\n")}, `no "## Before"`},
		{[]*rule.Rule{newRule("good", "# good\n\nSummary.\n\n## Before\n\nx\n\n## After\n\ny\n")}, "doc must start with"},
		{[]*rule.Rule{{Name: "good", Doc: goodDoc}}, "must be set"},
		{[]*rule.Rule{withFlag("one", "x"), withFlag("two", "x")}, "already defined"},
		{[]*rule.Rule{withFunc("good", "f")}, "not a pointer"},
		{[]*rule.Rule{after("one", "two"), after("two", "")}, "registered before it"},
		{[]*rule.Rule{after("one", "nope")}, "not another registered rule"},
		{[]*rule.Rule{after("one", "one")}, "not another registered rule"},
	} {
		err := rule.Validate(tc.rules)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want an error containing %q", err, tc.want)
		}
	}
}

func TestFileUsesGo(t *testing.T) {
	f := &ast.File{}
	cases := []struct {
		file, module, min string
		want              bool
	}{
		{"go1.22", "", "go1.22", true},
		{"go1.22", "", "go1.21", true},
		{"go1.22", "", "go1.25", false},
		{"go1.22.3", "", "go1.22", true},  // a toolchain version counts as its language version
		{"go1.21rc1", "", "go1.21", true}, // so does a release candidate
		{"go1.9", "", "go1.10", false},    // not compared as text
		{"", "go1.24", "go1.24", true},    // no file version: the module's
		{"", "go1.23", "go1.24", false},
		{"", "", "go1.10", false},     // unknown: the oldest, so nothing gated is used
		{"1.24", "", "go1.10", false}, // invalid: the oldest as well
		{"", "garbage", "go1.10", false},
	}
	for _, c := range cases {
		p := &rule.Pass{TypesInfo: &types.Info{FileVersions: map[*ast.File]string{f: c.file}}, GoVersion: c.module}
		if got := p.FileUsesGo(f, c.min); got != c.want {
			t.Errorf("file %q, module %q: FileUsesGo(%q) = %v, want %v", c.file, c.module, c.min, got, c.want)
		}
	}
}

// A fix of a kind no rule proves (an order, address or sync change) is a
// hypothesis whatever its rule proved, and so is one of a kind only
// running may keep (clock, budget), or that the code may see (paths,
// ownership, process); a fix that names no change is left as it is, and
// the rule's fix is not changed in place.
func TestDemote(t *testing.T) {
	probe := &rule.Fix{Message: "reversed"}
	order := &rule.Fix{Message: "together", Changes: []rule.Change{{Kind: rule.Order, What: "the children run together"}},
		Hypothesis: &rule.Hypothesis{Probe: probe, MustPass: true}}
	got := rule.Demote(order)
	if !strings.HasPrefix(got.Unproven(), "order change: ") || got.Hypothesis.Probe != probe || !got.Hypothesis.MustPass {
		t.Errorf("order: %+v", got.Hypothesis)
	}
	if order.Unproven() != "" {
		t.Errorf("Demote changed the rule's fix: %q", order.Unproven())
	}
	for _, k := range []rule.ChangeKind{rule.Address, rule.Sync} {
		f := &rule.Fix{Message: "m", Changes: []rule.Change{{Kind: rule.Budget, What: "p"}, {Kind: k, What: "w"}}}
		if got := rule.Demote(f).Unproven(); !strings.HasPrefix(got, string(k)+" change: ") {
			t.Errorf("%s: %q", k, got)
		}
	}
	already := &rule.Fix{Message: "m", Changes: []rule.Change{{Kind: rule.Sync, What: "w"}}, Hypothesis: rule.Unproven("its own reason")}
	if got := rule.Demote(already).Unproven(); got != "its own reason" {
		t.Errorf("an unproven fix: %q", got)
	}
	// Paths and ownership changes are unprovable too, unless the code
	// can neither see nor wedge what changes.
	for _, k := range []rule.ChangeKind{rule.Paths, rule.Ownership} {
		f := &rule.Fix{Message: "m", Changes: []rule.Change{{Kind: k, What: "w"}}}
		if got := rule.Demote(f); !strings.HasPrefix(got.Unproven(), string(k)+" change: ") || rule.Unprovable(got.Changes) == "" {
			t.Errorf("%s: %q", k, got.Unproven())
		}
		unseen := &rule.Fix{Message: "m", Changes: []rule.Change{{Kind: k, What: "w", Unseen: true}}}
		if rule.Demote(unseen) != unseen {
			t.Errorf("%s, unseen: demoted", k)
		}
	}
	// Process and clock changes are unprovable too (red team batches 34
	// to 40, and 41).
	for _, k := range []rule.ChangeKind{rule.Process, rule.Clock} {
		if got := rule.Demote(&rule.Fix{Message: "m", Changes: []rule.Change{{Kind: k, What: "w"}}}); rule.Unprovable(got.Changes) == "" || !rule.Demoted(got.Unproven()) {
			t.Errorf("%s: %q", k, got.Unproven())
		}
	}
	// A budget change is a hypothesis, which running may keep: not
	// unprovable.
	for _, k := range []rule.ChangeKind{rule.Budget} {
		f := &rule.Fix{Message: "m", Changes: []rule.Change{{Kind: k, What: "w"}}}
		if got := rule.Demote(f); !strings.HasPrefix(got.Unproven(), string(k)+" change: ") || rule.Unprovable(got.Changes) != "" {
			t.Errorf("%s: %q", k, got.Unproven())
		}
	}
	// A change of none of those kinds (no change named) is left as it is.
	f := &rule.Fix{Message: "m"}
	if rule.Demote(f) != f {
		t.Errorf("no change: demoted")
	}
	if rule.Demote(nil) != nil {
		t.Error("nil")
	}
}
