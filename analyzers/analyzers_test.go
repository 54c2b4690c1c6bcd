package analyzers_test

import (
	"flag"
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unflake/unflake/analyzers"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules"

	"github.com/unflake/unflake/internal/testmod"
)

// testdata/src is a module (go 1.25): its packages are loaded as the go
// command loads a user's module, with its go version.
func testdata(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("testdata", "src"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Each rule's analyzer reports its rule's findings, in `unflake check`'s
// words, and suggests the engine's type-checked change; the .golden files
// are the test files after go fix. A fix of a kind no rule proves (an
// address change: freeport) is a hypothesis, reported with no fix.
func TestSuggestedFixes(t *testing.T) {
	testmod.Short(t)
	for _, name := range []string{"freeport", "testscope"} {
		t.Run(name, func(t *testing.T) {
			analysistest.RunWithSuggestedFixes(t, testdata(t), analyzers.Default.Lookup(name), "./"+name)
		})
	}
}

// A finding the rule cannot fix is reported with its reason and no fix.
func TestNotFixed(t *testing.T) {
	testmod.Slow(t)
	for _, r := range analysistest.Run(t, testdata(t), analyzers.Default.Lookup("sleep"), "./sleep") {
		for _, d := range r.Diagnostics {
			if len(d.SuggestedFixes) > 0 {
				t.Errorf("%s: a finding that is not fixed suggests a fix", d.Message)
			}
		}
	}
}

// An opt-in rule reports nothing in the default suite, and its findings
// in a suite that selects it.
func TestOptIn(t *testing.T) {
	testmod.Slow(t)
	if rs := analysistest.Run(nopT{t}, testdata(t), analyzers.Default.Lookup("parallel"), "./parallel"); countDiagnostics(rs) != 0 {
		t.Errorf("the default suite runs the opt-in rule parallel: %d findings", countDiagnostics(rs))
	}
	par := rules.Lookup("parallel")
	s := analyzers.New(rules.All(), func() []*rule.Rule { return []*rule.Rule{par} })
	analysistest.RunWithSuggestedFixes(t, testdata(t), s.Lookup("parallel"), "./parallel")
}

func countDiagnostics(rs []*analysistest.Result) int {
	n := 0
	for _, r := range rs {
		n += len(r.Diagnostics)
	}
	return n
}

// nopT ignores the expectations that the default suite does not meet
// (the // want comments are for the suite that selects the rule).
type nopT struct{ *testing.T }

func (nopT) Errorf(string, ...any) {}

// Every rule is an analyzer named after it, with its doc and options.
func TestSuite(t *testing.T) {
	if err := analysis.Validate(analyzers.Default.Rules); err != nil {
		t.Fatal(err)
	}
	all := rules.All()
	if len(analyzers.Default.Rules) != len(all) {
		t.Fatalf("%d analyzers for %d rules", len(analyzers.Default.Rules), len(all))
	}
	for i, r := range all {
		a := analyzers.Default.Rules[i]
		if a.Name != r.Name || a.Doc != r.Doc {
			t.Errorf("analyzer %d is %q, want rule %q with its doc", i, a.Name, r.Name)
		}
		r.Flags.VisitAll(func(f *flag.Flag) {
			if g := a.Flags.Lookup(f.Name); g == nil || g.DefValue != f.DefValue {
				t.Errorf("analyzer %s: option -%s missing or with another default", a.Name, f.Name)
			}
		})
	}
}

// Each analyzer's URL points at its rule's heading in docs/rules.md.
func TestURL(t *testing.T) {
	a := analyzers.Default.Lookup("sleep")
	const want = "https://github.com/unflake/unflake/blob/main/docs/rules.md#sleep-run-sleeping-tests-on-a-virtual-clock-synctest-or-the-fake-clock-they-drive"
	if a.URL != want {
		t.Errorf("sleep's URL is %s, want %s", a.URL, want)
	}
}
