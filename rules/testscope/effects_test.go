package testscope_test

import (
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/testscope"
)

var lib = ruletest.Package{Path: "example.com/m/lib", Files: map[string]string{"lib.go": `package lib

type Env interface{ Reset() }

func Reset()   {}
func Pure()    {}
func Enter()   {}
func Unknown() {}
`}}

func test(body string) ruletest.Package {
	return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"os"
	"testing"

	"example.com/m/lib"
)

var env lib.Env

func TestX(t *testing.T) {
	` + body + `
}
`}}
}

func TestEffects(t *testing.T) {
	src := ruletest.Summaries{
		"example.com/m/lib.Reset": {Effects: []effect.Effect{{Kind: effect.WritesEnv, Via: []string{"lib.Reset"}, What: "sets an environment variable (os.Setenv)"}}},
		"example.com/m/lib.Pure":  {},
		"example.com/m/lib.Enter": {Effects: []effect.Effect{{Kind: effect.WritesWd, Via: []string{"lib.Enter", "lib.cd"}, What: "changes the working directory (os.Chdir)"}}},
	}
	for _, tc := range []struct {
		name, body string
		want       string // "fixed" or "not fixed: REASON"
	}{
		{"env pure", `os.Setenv("X", "1")
	lib.Pure()`, "fixed"},
		{"env written", `os.Setenv("X", "1")
	lib.Reset()`, `not fixed: the test also calls lib.Reset, which sets an environment variable (os.Setenv); it may change "X" in a way the rule does not recognise as a restore`},
		{"env unknown", `os.Setenv("X", "1")
	lib.Unknown()`, "fixed"},
		{"env interface", `os.Setenv("X", "1")
	env.Reset()`, "fixed"},
		{"chdir pure", `os.Chdir("/")
	lib.Pure()`, "not fixed: t.Chdir also sets $PWD to the new directory, where os.Chdir leaves it as it was: code that reads $PWD instead of the working directory (a bug the test catches now) would pass"},
		{"chdir written", `os.Chdir("/")
	lib.Enter()`, "not fixed: the test also calls lib.Enter → lib.cd, which changes the working directory (os.Chdir); it may change directory in a way the rule does not recognise as a restore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diags := ruletest.Run(t, testscope.Rule, src, lib, test(tc.body))
			if len(diags) != 1 {
				t.Fatalf("got %d diagnostics, want 1: %+v", len(diags), diags)
			}
			got := "fixed"
			if diags[0].Fix == nil {
				got = "not fixed: " + diags[0].NotFixed
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
