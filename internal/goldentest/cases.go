// Package goldentest reads the golden cases of the rules (archives under
// testdata/RULE/, expected outputs under golden/RULE/) and checks them in
// process: findings and rewritten files against the golden, the engine's
// re-type-check, and a second run that changes nothing. What needs the go
// command on the rewritten module (go vet, running its tests, -race,
// mutations) stays in rules' TestGolden, in the slow tier.
package goldentest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// Update rewrites the golden files instead of comparing with them. It is
// an environment switch, not a flag, so `UNFLAKE_UPDATE=1 go test ./...`
// works in every package.
var Update = os.Getenv("UNFLAKE_UPDATE") != ""

// A Case is one archive under testdata/RULE/ with its directives:
//
//	flags: --poll-timeout=5s   extra command-line flags
//	run                        the rewritten module's tests must pass
//	fail                       the rewritten module's tests must fail (a mutation),
//	                           each failed test at a line marked // strength: fail
//	                           (rules/testrun_test.go), not by a panic or a timeout
//	fail: FILE.go:LINE ...     the same, where the failing check is one the fix
//	                           adds: its location in the rewritten file (the
//	                           golden pins that file)
//	race                       the rewritten module's tests must pass with -race, twice
//	unproven                   the rewritten files are what fix --verify writes when it
//	                           keeps every fix, the rule's unproven fixes too (the engine
//	                           runs with a Config.Decide that keeps every fix, as for the
//	                           strength corpus); the findings stay what check prints,
//	                           unproven reasons included
//	proven                     the rewritten files are what the fixes the rule's own
//	                           checks proved make (those only their kind of change makes
//	                           hypotheses: rule.Demoted), as fix --verify writes them when
//	                           it keeps them; the findings stay what check prints
type Case struct {
	Rule, Name      string
	Archive         *txtar.Archive
	Flags           []string
	Run, Fail, Race bool
	Unproven        bool
	Proven          bool
	FailAt          []string // fail: the locations of checks the fix adds
	Golden          string   // path of the golden file
}

// Cases reads the cases of rule from root/testdata/RULE, root being the
// repository's root relative to the test's directory.
func Cases(t testing.TB, root, rule string) []Case {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "testdata", rule, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []Case
	for _, path := range paths {
		a, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		c := Case{Rule: rule, Name: name, Archive: a, Golden: filepath.Join(root, "golden", rule, name+".golden")}
		for _, line := range strings.Split(string(a.Comment), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "flags:"):
				c.Flags = strings.Fields(strings.TrimPrefix(line, "flags:"))
			case line == "run":
				c.Run = true
			case line == "fail":
				c.Fail = true
			case strings.HasPrefix(line, "fail:"):
				c.Fail = true
				c.FailAt = strings.Fields(strings.TrimPrefix(line, "fail:"))
			case line == "race":
				c.Race = true
			case line == "unproven":
				c.Unproven = true
			case line == "proven":
				c.Proven = true
			}
		}
		cases = append(cases, c)
	}
	return cases
}

// Negative reports whether the case's golden holds findings and no
// rewritten file: a case the rule must leave alone.
func (c Case) Negative() bool {
	a, err := txtar.ParseFile(c.Golden)
	return err == nil && len(a.Files) == 1
}

// Compare compares got with the case's golden file, or writes it under
// UNFLAKE_UPDATE.
func (c Case) Compare(t testing.TB, got *txtar.Archive) {
	t.Helper()
	if Update {
		if err := os.MkdirAll(filepath.Dir(c.Golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.Golden, txtar.Format(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(c.Golden)
	if err != nil {
		t.Fatalf("%v (run with UNFLAKE_UPDATE=1 to create it)", err)
	}
	if g := txtar.Format(got); string(g) != string(want) {
		t.Errorf("output differs from %s (UNFLAKE_UPDATE=1 rewrites it):\n%s", c.Golden, LineDiff(string(want), string(g)))
	}
}

func isModFile(name string) bool {
	base := filepath.Base(name)
	return base == "go.mod" || base == "go.sum"
}

// LineDiff is a short line diff for failure messages.
func LineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, a, c)
		}
	}
	return b.String()
}
