package rule_test

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/rule"
)

const goodDoc = "# good: does good\n\nFinds good\nthings.\n\nMore prose.\n\n## Before\n\n```go\nx\n```\n\n## After\n\n```go\ny\n```\n"

func newRule(name, doc string) *rule.Rule {
	return &rule.Rule{Name: name, Doc: doc, Prefilter: func([]byte) bool { return true }, Run: func(*rule.Pass) {}}
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
	withFlag := func(name, flag string) *rule.Rule {
		r := newRule(name, strings.Replace(goodDoc, "# good:", "# "+name+":", 1))
		r.Flags.String(flag, "", "")
		return r
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
	} {
		err := rule.Validate(tc.rules)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want an error containing %q", err, tc.want)
		}
	}
}
