package sleep_test

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/sleep"

	"github.com/unflake/unflake/internal/testmod"
)

// lib is a package of the same module the tests call.
var lib = ruletest.Package{Path: "example.com/m/lib", Files: map[string]string{"lib.go": `package lib

import (
	"testing"
	"testing/synctest"
)

// Bubble's summary says it runs f in a bubble; a package must import
// synctest for its summaries to be asked that.
var _ = synctest.Wait

type Cache struct{ done chan struct{} }

func New() *Cache            { return &Cache{done: make(chan struct{})} }
func (c *Cache) Close()      { close(c.done) }
func (c *Cache) Get() int    { return 1 }
func (c *Cache) Start()      {}
func (c *Cache) Stop()       {}
func Start()                 {}
func Dial() error            { return nil }
func Hook()                  {}
func Unknown()               {}
func NewOther() *Cache       { return New() }
func Wait()                  {}
func Fetch()                 {}
func Tick()                  {}
func Take()                  {}
func Count()                 {}
func Pending()               {}
func Spin()                  {}
func Own(t *testing.T)       {}
func Bubble(t *testing.T, f func(*testing.T)) {}

type Getter interface{ Get() int }
`}}

// test is a test package that calls fn (a statement of lib) before it
// sleeps.
func test(body string) ruletest.Package {
	return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"testing"
	"time"

	"example.com/m/lib"
)

var _ lib.Getter

func TestX(t *testing.T) {
	` + body + `
	time.Sleep(time.Second)
}
`}}
}

func sum(effs ...effect.Effect) *effect.Summary { return &effect.Summary{Effects: effs} }

var forever = effect.Effect{Kind: effect.GoroutineForever, Via: []string{"lib.Start", "lib.loop"}, What: "starts a goroutine that never ends"}

func TestEffects(t *testing.T) {
	testmod.Short(t)
	src := ruletest.Summaries{
		"example.com/m/lib.Cache.Get":   sum(),
		"example.com/m/lib.Start":       sum(forever),
		"example.com/m/lib.Dial":        sum(effect.Effect{Kind: effect.Network, Via: []string{"lib.Dial"}, What: "uses the real network (net.Dial)"}),
		"example.com/m/lib.New":         sum(effect.Effect{Kind: effect.GoroutineEnds, Via: []string{"lib.New"}, What: "starts a goroutine that Close of the Cache it returns ends", Ends: "Close", Type: "example.com/m/lib.Cache"}),
		"example.com/m/lib.Hook":        {Opaque: "calls the function value h"},
		"example.com/m/lib.Cache.Close": sum(),
		"example.com/m/lib.Cache.Stop":  sum(),
		"example.com/m/lib.Cache.Start": sum(effect.Effect{Kind: effect.GoroutineEnds, Via: []string{"lib.Cache.Start"}, What: "starts a goroutine that Stop of the Cache ends", Ends: "Stop", Type: "example.com/m/lib.Cache"}),
		// NewOther's goroutines end by Close of another type than the
		// one it returns: the test's Close does not end them.
		"example.com/m/lib.NewOther": sum(effect.Effect{Kind: effect.GoroutineEnds, Via: []string{"lib.NewOther"}, What: "starts a goroutine that Close of the Pool it returns ends", Ends: "Close", Type: "example.com/m/lib.Pool"}),
		"example.com/m/lib.Fetch":    sum(effect.Effect{Kind: effect.Network, Via: []string{"lib.Fetch", "lib.body", "lib.copy", "net.TCPConn.ReadFrom"}, What: "uses the real network"}),
		"example.com/m/lib.Tick":     sum(effect.Effect{Kind: effect.SharedSync, Via: []string{"lib.Tick"}, What: "uses the package-level channel lib.ticks", Type: "chan"}),
		// synctest's rules: Cond.Wait is durable wherever the Cond was
		// made; a WaitGroup a package variable points to is associated
		// with the bubble that first calls Add on it; one held in the
		// variable itself cannot be.
		"example.com/m/lib.Take":    sum(effect.Effect{Kind: effect.SharedSync, Via: []string{"lib.Take"}, What: "uses the package-level condition variable lib.free", Type: "sync.Cond"}),
		"example.com/m/lib.Count":   sum(effect.Effect{Kind: effect.SharedSync, Via: []string{"lib.Count"}, What: "uses the package-level wait group lib.jobs", Type: "*sync.WaitGroup"}),
		"example.com/m/lib.Pending": sum(effect.Effect{Kind: effect.SharedSync, Via: []string{"lib.Pending"}, What: "uses the package-level wait group lib.pending", Type: "sync.WaitGroup"}),
		"example.com/m/lib.Wait":    sum(effect.Effect{Kind: effect.Timer, Via: []string{"lib.Wait", "time.Sleep"}, What: "sleeps on the real clock"}),
		"example.com/m/lib.Spin": {Spin: &effect.Effect{Kind: effect.Spins, Via: []string{"lib.Spin", "lib.until"},
			What: "spins on the real clock in a loop that never blocks (lib.go:12)"}},
		"example.com/m/lib.Own":    {RunsBubble: true},
		"example.com/m/lib.Bubble": {RunsBubble: true, Bubbles: []int{1}},
	}
	for _, tc := range []struct {
		name, body string
		// want is "fixed", or "unproven: REASON" or "not fixed: REASON"
		// (REASON a substring).
		want string
	}{
		{"pure", "_ = (&lib.Cache{}).Get()", "fixed"},
		{"forever", "lib.Start()", "unproven: the test calls lib.Start → lib.loop, which starts a goroutine that never ends"},
		{"network", "_ = lib.Dial()", "not fixed: the test calls lib.Dial, which uses the real network (net.Dial)"},
		{"ended by defer", "c := lib.New()\n\tdefer c.Close()", "fixed"},
		{"ended by cleanup", "c := lib.New()\n\tt.Cleanup(c.Close)", "fixed"},
		{"ended by cleanup func", "c := lib.New()\n\tt.Cleanup(func() { c.Close() })", "fixed"},
		{"ended at the end", "c := lib.New()\n\t_ = c\n\tc.Close()", "fixed"},
		{"ended unless it returns", "c := lib.New()\n\tif c == nil {\n\t\treturn\n\t}\n\tc.Close()", "unproven: the test calls lib.New, which starts a goroutine that Close of the Cache it returns ends; the test does not call Close (with defer, t.Cleanup or before it returns), so the goroutine never ends"},
		{"ended, another type", "c := lib.NewOther()\n\tdefer c.Close()", "unproven: the test calls lib.NewOther, which starts a goroutine that Close of the Pool it returns ends; the test does not call Close (with defer, t.Cleanup or before it returns), so the goroutine never ends"},
		{"real clock", "lib.Wait()", "fixed"},
		{"receiver stopped", "c := &lib.Cache{}\n\tdefer c.Stop()\n\tc.Start()", "fixed"},
		{"receiver stopped after", "c := &lib.Cache{}\n\tc.Start()\n\tt.Cleanup(c.Stop)", "fixed"},
		{"receiver closed", "c := &lib.Cache{}\n\tc.Start()\n\tdefer c.Close()", "unproven: the test calls lib.Cache.Start, which starts a goroutine that Stop of the Cache ends; the test does not call Stop (with defer, t.Cleanup or before it returns), so the goroutine never ends"},
		{"receiver replaced", "c := &lib.Cache{}\n\tdefer c.Stop()\n\tc = &lib.Cache{}\n\tc.Start()", "unproven: the test does not call Stop (with defer, t.Cleanup or before it returns), so the goroutine never ends"},
		{"value replaced", "c := lib.New()\n\tc = lib.New()\n\tdefer c.Close()", "unproven: the test does not call Close (with defer, t.Cleanup or before it returns), so the goroutine never ends"},
		{"receiver never stopped", "c := &lib.Cache{}\n\tc.Start()", "unproven: the test does not call Stop (with defer, t.Cleanup or before it returns), so the goroutine never ends"},
		{"network deep down", "lib.Fetch()", "unproven: the test calls lib.Fetch → lib.body → lib.copy → net.TCPConn.ReadFrom, which uses the real network"},
		{"package channel", "lib.Tick()", "not fixed: the test calls lib.Tick, which uses the package-level channel lib.ticks, made outside the bubble: blocking on it is not durable in a synctest bubble, so the virtual clock would not advance"},
		{"package condition", "lib.Take()", "fixed"},
		{"package wait group pointer", "lib.Count()", "unproven: the test calls lib.Count, which uses the package-level wait group lib.jobs, which becomes associated with the first synctest bubble that calls Add on it"},
		{"package wait group", "lib.Pending()", "not fixed: the test calls lib.Pending, which uses the package-level wait group lib.pending, which synctest cannot associate with a bubble (a WaitGroup held in a package variable): waiting on it is not durable"},
		{"never ended", "_ = lib.New()", "unproven: the test does not call Close (with defer, t.Cleanup or before it returns), so the goroutine never ends"},
		{"opaque", "lib.Hook()", "unproven: the test calls lib.Hook, whose code the analysis cannot see in full (it calls the function value h)"},
		{"unknown", "lib.Unknown()", "unproven: the test calls lib.Unknown, whose code the analysis cannot see"},
		{"spins on the clock", "lib.Spin()", "unproven: the test calls lib.Spin → lib.until, which spins on the real clock in a loop that never blocks (lib.go:12); in a synctest bubble the clock moves only while every goroutine is blocked"},
		{"runs a bubble", "lib.Own(t)", "not fixed: the test already runs code in a synctest bubble (through lib.Own)"},
		// The sleep in the literal lib.Bubble runs in a bubble is on
		// virtual time: one finding, the sleep after it.
		{"bubble helper", "lib.Bubble(t, func(t *testing.T) { time.Sleep(time.Hour) })", "not fixed: the test already runs code in a synctest bubble (through lib.Bubble)"},
		{"loop on the clock", "for start := time.Now(); time.Since(start) < time.Millisecond; {\n\t}", "unproven: the test spins on the real clock in a loop that never blocks (x_test.go:13)"},
		{"loop on a channel", "ch := make(chan int, 1)\n\tfor start := time.Now(); time.Since(start) < time.Millisecond; {\n\t\tch <- 1\n\t\t<-ch\n\t}", "fixed"},
		// The test made the value: its method is the code that runs.
		{"interface, value made", "var g lib.Getter = &lib.Cache{}\n\t_ = g.Get()", "fixed"},
		{"interface", "g := []lib.Getter{&lib.Cache{}}[0]\n\t_ = g.Get()", "unproven: the test calls lib.Getter.Get, whose code the analysis cannot see"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags []rule.Diagnostic
			for _, d := range ruletest.Run(t, sleep.Rule, src, lib, test(tc.body)) {
				if d.Resolved == "" { // a wait on a bubble's virtual clock: no finding
					diags = append(diags, d)
				}
			}
			if len(diags) != 1 {
				t.Fatalf("got %d diagnostics, want 1: %+v", len(diags), diags)
			}
			if got := outcome(diags[0]); !matches(got, tc.want) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	// Without summaries, a call into another package is unknown, as it
	// always was.
	diags := ruletest.Run(t, sleep.Rule, effect.None, lib, test("_ = (&lib.Cache{}).Get()"))
	if len(diags) != 1 || !matches(outcome(diags[0]), "unproven: the test calls lib.Cache.Get, whose code the analysis cannot see") {
		t.Errorf("with effect.None: %+v", diags)
	}
}

func outcome(d rule.Diagnostic) string {
	switch {
	case d.Fix == nil:
		return "not fixed: " + d.NotFixed
	case d.Fix.Unproven() != "":
		return "unproven: " + d.Fix.Unproven()
	}
	return "fixed"
}

func matches(got, want string) bool {
	kind, reason, _ := strings.Cut(want, ": ")
	gk, greason, _ := strings.Cut(got, ": ")
	return kind == gk && strings.Contains(greason, reason)
}
