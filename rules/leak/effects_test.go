package leak_test

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/leak"
)

var lib = ruletest.Package{Path: "example.com/m/lib", Files: map[string]string{"lib.go": `package lib

// Server has a Start method: without summaries the rule takes a server
// the test never starts for one that is not running.
type Server struct{}

func NewServer() *Server       { return &Server{} }
func NewIdle() *Server         { return &Server{} }
func (s *Server) Start()       {}
func (s *Server) Close() error { return nil }

// Reporter has no lifecycle method.
type Reporter struct{}

func StartReporter() *Reporter { return &Reporter{} }
func NewReporter() *Reporter   { return &Reporter{} }
func RunAll() *Reporter        { return &Reporter{} }
func Deep() *Reporter          { return &Reporter{} }
`}}

func test(body string) ruletest.Package {
	return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"testing"

	"example.com/m/lib"
)

// The rule reads only files that mention a lifecycle word.
var _ = (*lib.Server).Close

func TestX(t *testing.T) {
	` + body + `
}
`}}
}

func TestEffects(t *testing.T) {
	src := ruletest.Summaries{
		"example.com/m/lib.NewServer":     {Effects: []effect.Effect{{Kind: effect.GoroutineEnds, Via: []string{"lib.NewServer"}, What: "starts a goroutine that Close of the Server it returns ends", Ends: "Close"}}},
		"example.com/m/lib.NewIdle":       {},
		"example.com/m/lib.StartReporter": {Effects: []effect.Effect{{Kind: effect.GoroutineForever, Via: []string{"lib.StartReporter", "lib.loop"}, What: "starts a goroutine that never ends"}}},
		"example.com/m/lib.NewReporter":   {},
		// A goroutine that runs a function value may well end: a summary
		// that could not follow a call proves no leak.
		"example.com/m/lib.RunAll": {Effects: []effect.Effect{{Kind: effect.GoroutineForever, Via: []string{"lib.RunAll", "lib.group.Go"}, What: "starts a goroutine that never ends"}}, Opaque: "calls the function value f"},
		"example.com/m/lib.Deep":   {Effects: []effect.Effect{{Kind: effect.GoroutineForever, Via: []string{"lib.Deep", "lib.a", "lib.b"}, What: "starts a goroutine that never ends"}}},
	}
	for _, tc := range []struct {
		name, body string
		want       string // "" for no finding, else "MESSAGE | fixed" or "MESSAGE | not fixed: REASON" (substrings)
	}{
		{"started by its constructor", "s := lib.NewServer()\n\tt.Log(s)", "s (*lib.Server) is never closed | not fixed: s.Close may wait on the state of the code under test"},
		{"never started", "s := lib.NewIdle()\n\tt.Log(s)", ""},
		{"goroutine forever", "r := lib.StartReporter()\n\tt.Log(r)", "the test calls lib.StartReporter → lib.loop, which starts a goroutine that never ends; it outlives the test | not fixed: *lib.Reporter has no Close, Stop or Shutdown method"},
		{"opaque", "r := lib.RunAll()\n\tt.Log(r)", ""},
		{"deep", "r := lib.Deep()\n\tt.Log(r)", ""},
		{"pure", "r := lib.NewReporter()\n\tt.Log(r)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diags := ruletest.Run(t, leak.Rule, src, lib, test(tc.body))
			var got []string
			for _, d := range diags {
				outcome := "fixed"
				if d.Fix == nil {
					outcome = "not fixed: " + d.NotFixed
				} else if d.Fix.Unproven() != "" {
					outcome = "unproven: " + d.Fix.Unproven()
				}
				got = append(got, d.Message+" | "+outcome)
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Errorf("got %q, want no finding", got)
				}
				return
			}
			msg, outcome, _ := strings.Cut(tc.want, " | ")
			if len(got) != 1 || !strings.Contains(got[0], msg) || !strings.Contains(got[0], " | "+outcome) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	// Without summaries: the server is taken for one not running, and the
	// reporter is not judged.
	for _, body := range []string{"s := lib.NewServer()\n\tt.Log(s)", "r := lib.StartReporter()\n\tt.Log(r)"} {
		if diags := ruletest.Run(t, leak.Rule, effect.None, lib, test(body)); len(diags) != 0 {
			t.Errorf("with effect.None, %q: %+v", body, diags)
		}
	}
}
