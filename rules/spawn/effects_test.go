package spawn_test

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/spawn"
)

var lib = ruletest.Package{Path: "example.com/m/lib", Files: map[string]string{"lib.go": `package lib

type Checker interface{ Check([]byte) error }

func Check(out []byte) error { return nil }
func Record(out []byte)      {}
func Hook(out []byte)        {}
func Unknown(out []byte)     {}
func Wait(out []byte)        {}
`}}

// test runs a child per row of a table, and check after each.
func test(check string) ruletest.Package {
	return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"example.com/m/lib"
)

var c lib.Checker

// child runs the test binary in a view of its own.
func child(root, flag string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], flag)
	cmd.Dir = filepath.Join(root, "work")
	cmd.Env = append(os.Environ(), "TMPDIR="+root, "HOME="+root, "XDG_CACHE_HOME="+root, "XDG_CONFIG_HOME="+root)
	return cmd
}

func TestX(t *testing.T) {
	rows := []struct{ arg, root string }{{"-test.run=^TestA$", t.TempDir()}, {"-test.run=^TestB$", t.TempDir()}}
	for _, r := range rows {
		a, err := child(r.root, r.arg).Output()
		if err != nil {
			t.Fatal(err)
		}
		` + check + `
	}
}
`}}
}

func TestEffects(t *testing.T) {
	src := ruletest.Summaries{
		"example.com/m/lib.Check":  {},
		"example.com/m/lib.Record": {Effects: []effect.Effect{{Kind: effect.WritesGlobal, Via: []string{"lib.Record"}, What: "writes the package-level variable lib.last"}}},
		"example.com/m/lib.Hook":   {Opaque: "calls the function value h"},
		"example.com/m/lib.Wait":   {Effects: []effect.Effect{{Kind: effect.Timer, Via: []string{"lib.Wait", "time.Sleep"}, What: "sleeps on the real clock"}}},
	}
	for _, tc := range []struct {
		name, check string
		want        string // "fixed" or "not fixed: REASON"
	}{
		{"pure", "if err := lib.Check(a); err != nil {\n\t\t\tt.Fatal(err)\n\t\t}", "fixed"},
		{"real clock", "lib.Wait(a)", "fixed"},
		{"global", "lib.Record(a)", "not fixed: the code after the child calls lib.Record, which writes the package-level variable lib.last"},
		{"opaque", "lib.Hook(a)", "not fixed: calls lib.Hook, whose effects the analysis cannot see in full (it calls the function value h)"},
		{"unknown", "lib.Unknown(a)", "not fixed: calls lib.Unknown, whose effects the analysis cannot see"},
		{"interface", "if err := c.Check(a); err != nil {\n\t\t\tt.Fatal(err)\n\t\t}", "not fixed: calls lib.Checker.Check through an interface"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diags := ruletest.Run(t, spawn.Rule, src, lib, test(tc.check))
			if len(diags) != 1 {
				t.Fatalf("got %d diagnostics, want 1: %+v", len(diags), diags)
			}
			got := "fixed"
			if diags[0].Fix == nil {
				got = "not fixed: " + diags[0].NotFixed
			} else if diags[0].Fix.Unproven() != "" {
				got = "unproven: " + diags[0].Fix.Unproven()
			}
			if got != tc.want && !(len(tc.want) > 11 && len(got) > 11 && got[:11] == tc.want[:11] && strings.Contains(got, tc.want[11:])) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
