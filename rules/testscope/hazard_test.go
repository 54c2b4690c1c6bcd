package testscope_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/testscope"
)

// TestCheckedPaths: a t.TempDir fix names the paths hazards it excluded;
// goldens show findings, not the changes a fix carries.
func TestCheckedPaths(t *testing.T) {
	pkg := ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"os"
	"testing"
)

func TestX(t *testing.T) {
	dir, err := os.MkdirTemp("", "x")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(dir+"/f", nil, 0o644)
}
`}}
	diags := ruletest.Run(t, testscope.Rule, effect.None, pkg)
	if len(diags) != 1 || diags[0].Fix == nil {
		t.Fatalf("got %+v, want one fixed finding", diags)
	}
	got := diags[0].Fix.Changes[0].Checked
	want := []string{
		"no unix socket under the directory",
		"no code reads the directory's mode",
		"no test or subtest name puts characters other than ASCII letters, digits, - . _ in the path",
		"the pattern is a plain prefix, and no code (the package's, or the module's packages it reaches) inspects the directory's name",
		"the package's code holds no string with the pattern's prefix (code that finds its own temporary directories by name)",
		"no code takes the directory's parent",
		"no other test's os.MkdirTemp directory, and no code's own use of the shared temporary directory, shares the parent while the directory reaches code under test (as an argument, or through the environment, a package-level variable, a field of a value whose method it calls, a file written, a channel send, a process started)",
		"the directory lives until the test ends in the original too (not removed by a helper's defer)",
		"no parallel subtest runs after a deferred removal",
		"no call deferred before the removal, and no cleanup registered after the directory is made (by t.Cleanup or code given t), that would now run before the removal",
	}
	if !slices.Equal(got, want) {
		t.Errorf("checked %q, want %q", got, want)
	}
}

// TestCheckedLater: a t.Setenv fix whose variable no later test reads
// names the hazards it excluded; one a later test may read without
// setting it first (in a statement of its own, before any read) is not
// fixed, naming the reader; one that runs before it (seeing the leak only
// under -count or -shuffle) makes the fix unproven.
func TestCheckedLater(t *testing.T) {
	src := func(later string) ruletest.Package {
		before := ""
		if b, ok := strings.CutPrefix(later, "before:"); ok {
			before, later = b, ""
		}
		return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"os"
	"testing"
)
` + before + `
func TestX(t *testing.T) {
	os.Setenv("K", "1")
}
` + later}}
	}
	const order = "no call deferred before the restore, and no cleanup registered after the change (by t.Cleanup or code given t), that would now run before the restore"
	all := []string{"no later test reads the variable without setting it, through the package's code or a package of the module it names, or starts a process that inherits it (what the restore leaves differs)", "no parallel subtest runs after a deferred restore", order}
	for _, tc := range []struct {
		name, later string
		want        []string // nil: not fixed, naming TestY
		unproven    bool
	}{
		{"read before", "before:\nfunc TestY(t *testing.T) { _ = os.Getenv(\"K\") }\n", all[1:], true},
		{"alone", "", all, false},
		{"read later", "\nfunc TestY(t *testing.T) { _ = os.Getenv(\"K\") }\n", nil, false},
		{"set later", "\nfunc TestY(t *testing.T) { t.Setenv(\"K\", \"2\"); _ = os.Getenv(\"K\") }\n", all, false},
		{"set after the read", "\nfunc TestY(t *testing.T) { _ = os.Getenv(\"K\"); t.Setenv(\"K\", \"2\") }\n", nil, false},
		{"set in another subtest", "\nfunc TestY(t *testing.T) {\n\tt.Run(\"a\", func(t *testing.T) { _ = os.Getenv(\"K\") })\n\tt.Run(\"b\", func(t *testing.T) { t.Setenv(\"K\", \"2\") })\n}\n", nil, false},
		{"read at cleanup", "\nfunc TestY(t *testing.T) {\n\tt.Cleanup(func() { _ = os.Getenv(\"K\") })\n\tt.Setenv(\"K\", \"2\")\n}\n", all, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diags := ruletest.Run(t, testscope.Rule, effect.None, src(tc.later))
			if len(diags) != 1 {
				t.Fatalf("got %+v, want one finding", diags)
			}
			if tc.want == nil {
				if diags[0].Fix != nil || !strings.Contains(diags[0].NotFixed, "TestY") {
					t.Fatalf("got %+v, want not fixed, naming TestY", diags[0])
				}
				return
			}
			if diags[0].Fix == nil {
				t.Fatalf("got %+v, want a fix", diags[0])
			}
			if got := diags[0].Fix.Changes[0].Checked; !slices.Equal(got, tc.want) {
				t.Errorf("checked %q, want %q", got, tc.want)
			}
			if got := diags[0].Fix.Hypothesis != nil; got != tc.unproven {
				t.Errorf("unproven = %v, want %v", got, tc.unproven)
			}
		})
	}
}
