package parallel_test

import (
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/parallel"
)

var lib = ruletest.Package{Path: "example.com/m/lib", Files: map[string]string{"lib.go": `package lib

type Getter interface{ Get() int }

type Cache struct{}

func (*Cache) Get() int { return 1 }
func Pure() int         { return 1 }
func Configure()        {}
func Dial()             {}
func Hook()             {}
func Unknown()          {}
`}}

func test(body string) ruletest.Package {
	return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"testing"

	"example.com/m/lib"
)

func TestX(t *testing.T) {
	` + body + `
}
`}}
}

func TestEffects(t *testing.T) {
	src := ruletest.Summaries{
		"example.com/m/lib.Pure":      {},
		"example.com/m/lib.Cache.Get": {},
		"example.com/m/lib.Configure": {Effects: []effect.Effect{{Kind: effect.WritesGlobal, Via: []string{"lib.Configure", "lib.set"}, What: "writes the package-level variable lib.level"}}},
		"example.com/m/lib.Dial":      {Effects: []effect.Effect{{Kind: effect.Network, Via: []string{"lib.Dial"}, What: "uses the real network (net.Dial)"}}},
		"example.com/m/lib.Hook":      {Opaque: "calls the function value h"},
	}
	for _, tc := range []struct {
		name, body string
		want       string // "fixed", "not fixed: REASON", or "" for no finding
	}{
		// A pure summary says the callee writes nothing, not that it
		// reads or hands out nothing other tests share: left alone.
		{"pure", "if lib.Pure() != 1 { t.Fatal() }", ""},
		{"pure method", "c := &lib.Cache{}\n\t_ = c.Get()", ""},
		{"global", "lib.Configure()", "not fixed: the test calls lib.Configure → lib.set, which writes the package-level variable lib.level; every test shares it"},
		{"network", "lib.Dial()", ""},
		{"opaque", "lib.Hook()", ""},
		{"unknown", "lib.Unknown()", ""},
		{"interface", "var g lib.Getter = &lib.Cache{}\n\t_ = g.Get()", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diags := ruletest.Run(t, parallel.Rule, src, lib, test(tc.body))
			got := ""
			switch {
			case len(diags) > 1:
				t.Fatalf("got %d diagnostics: %+v", len(diags), diags)
			case len(diags) == 0:
			case diags[0].Fix != nil:
				got = "fixed"
			default:
				got = "not fixed: " + diags[0].NotFixed
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	// Without summaries, the rule says nothing about a test that calls
	// into another package, as before.
	if diags := ruletest.Run(t, parallel.Rule, effect.None, lib, test("_ = lib.Pure()")); len(diags) != 0 {
		t.Errorf("with effect.None: %+v", diags)
	}
}
