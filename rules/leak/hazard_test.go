package leak_test

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/leak"
)

var owned = ruletest.Package{Path: "example.com/m/x", Files: map[string]string{
	"x.go": `package x

var all []*Server

type Server struct{ done chan struct{} }

func New() *Server { return &Server{done: make(chan struct{})} }

func NewKept() *Server {
	s := &Server{done: make(chan struct{})}
	all = append(all, s)
	return s
}

func (s *Server) Close() { close(s.done) }
`,
	"x_test.go": `package x

import "testing"

func TestX(t *testing.T) {
	s := CALL
	t.Log(s)
}

// TestClosed names a lifecycle method, as tests of such files do.
func TestClosed(t *testing.T) {
	s := New()
	defer s.Close()
}
`,
}}

// TestCheckedOwnership: a cleanup names the ownership hazards it
// excluded, and is unproven where the constructor keeps the value or
// starts what Close is not shown to end; goldens show findings, not the
// changes a fix carries.
func TestCheckedOwnership(t *testing.T) {
	src := ruletest.Summaries{
		"example.com/m/x.New":     {},
		"example.com/m/x.NewKept": {},
	}
	forever := ruletest.Summaries{
		"example.com/m/x.New": {Effects: []effect.Effect{{Kind: effect.GoroutineForever, Via: []string{"x.New"}, What: "starts a goroutine that never ends"}}},
	}
	for _, tc := range []struct {
		name, call string
		src        effect.Source
		want       string // "checked: A; B" or "unproven: REASON"
	}{
		// The other hazards are excluded, but Close is the package's own:
		// some implementation of it may write what a later test reads
		// or hang, so only running the tests can tell.
		{"own value", "New()", src, "unproven: s.Close (x.go:15) is the code under test's own, not the standard library's: in some implementation it may write what a later test reads, wait for what a bug never gives back, or hang"},
		{"kept", "NewKept()", src, "unproven: x.NewKept may register what it makes with an owner (all = append(all, s)), which may end it too; a second Close may block or panic: it closes s.done without a guard"},
		{"not ended", "New()", forever, "unproven: Close is not shown to end what x.New starts (x.New, which starts a goroutine that never ends); the cleanup may leave it running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkg := ruletest.Package{Path: owned.Path, Files: map[string]string{"x.go": owned.Files["x.go"], "x_test.go": strings.Replace(owned.Files["x_test.go"], "CALL", tc.call, 1)}}
			diags := ruletest.Run(t, leak.Rule, tc.src, pkg)
			if len(diags) != 1 || diags[0].Fix == nil {
				t.Fatalf("got %+v, want one fix", diags)
			}
			got := "checked: " + strings.Join(diags[0].Fix.Changes[0].Checked, "; ")
			if r := diags[0].Fix.Unproven(); r != "" {
				got = "unproven: " + r
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
