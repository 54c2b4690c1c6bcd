package sleep_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules/sleep"
)

// cache is code under test in the test's own package: an entry lives for
// a TTL; a token is valid from a date.
const cache = `package x

import (
	"encoding/json"
	"time"
)

type Cache struct {
	ttl     time.Duration
	at      time.Time
	checked time.Time
}

func New(ttl time.Duration) *Cache { return &Cache{ttl: ttl, at: time.Now()} }

// Fresh: a strict comparison at the deadline.
func (c *Cache) Fresh() bool { return time.Since(c.at) < c.ttl }

// Moved: two readings compared for order.
func (c *Cache) Moved() bool {
	now := time.Now()
	moved := now.After(c.checked)
	c.checked = now
	return moved
}

type Token struct{ NotBefore time.Time }

func (t Token) Valid() bool { return !time.Now().Before(t.NotBefore) }

// Decode: a token whose date comes from the bytes, not the clock.
func Decode(b []byte) (Token, error) {
	var t Token
	err := json.Unmarshal(b, &t)
	return t, err
}

// Clock renders minutes as HH:MM: a fixed date that meets no clock.
func Clock(min int) string { return time.Date(0, 1, 1, min/60, min%60, 0, 0, time.UTC).Format("15:04") }

// DefaultTTL is a duration of the code's own: NewDefault sets it.
const DefaultTTL = 100 * time.Millisecond

func NewDefault() *Cache { return New(DefaultTTL) }

// Tokens: a quantity computed from elapsed time (a token bucket's refill).
func (c *Cache) Tokens() float64 {
	el := time.Since(c.at)
	return float64(el) / float64(c.ttl)
}
`

// clockCase is a test package holding body as TestX's body.
func clockCase(body string) ruletest.Package {
	return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x.go": cache, "x_test.go": `package x

import (
	"os"
	"testing"
	"time"
)

var _ = os.Getenv

func TestX(t *testing.T) {
` + body + `
}
`}}
}

// The hazards of a bubble's clock (internal/bubble/clock.go, shape.go):
// each leaves the wrap unproven or blocked, its reason naming it and its
// line; the wrap's Change lists the hazards excluded.
func TestClockHazards(t *testing.T) {
	testmod.Short(t)
	all := []string{"no fixed date", "no zero duration", "no comparison of two clock readings", "no sleep ending exactly on a configured deadline", "no clock reading used as a key", "no deadline polled without blocking", "no quantity computed from elapsed time checked right after another call", "no time bound stated in the test's names or comments", "no date from outside the clock compared with a reading", "no elapsed time compared with a duration that may be zero or tiny right after another call", "no wait the code computes in a loop that may be 0", "no package state that hides its type kept past the bubble", "no code of another package of the module or a dependency that may read the clock", "no sleep ending exactly on half a configured deadline", "no reading of the clock coarsened (Truncate, Round, a division), in any build", "no comparison of two stored clock readings (in a map, a slice, a helper's parameters)", "no check that bounds the code's work in real time", "no reading of the clock made a number used as entropy (masked, shifted, divided, a seed, a hash, a key), in any build or module package", "no loop spinning on the real clock in a build or module package the analysis does not type", "no loop of the code waiting by a step against a deadline the step may divide", "no quantity computed from elapsed time in a loop the code's own waits pace", "no times compared by value (==, !=, a map key, reflect.DeepEqual, their text), in any build or test file", "no cleanup or finalizer the code registers with the runtime, which would run outside the bubble"}
	for _, tc := range []struct {
		name, body string
		// want is "fixed", or "unproven: REASON" or "not fixed: REASON"
		// (REASON a substring).
		want    string
		checked []string // for a fix: Change.Checked
	}{
		{"plain", `c := New(time.Second)
	time.Sleep(2 * time.Second)
	if c.Fresh() { t.Fatal("fresh") }`, "fixed", all},
		{"fixed date", `tok := Token{NotBefore: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	time.Sleep(time.Second)
	if !tok.Valid() { t.Fatal("invalid") }`,
			"unproven: the test uses a fixed date (time.Date at x_test.go:12) and reads the clock (time.Now at x.go:", nil},
		// A date the code decodes: json.Unmarshal sets NotBefore, which
		// no statement of the code sets.
		{"decoded date", `tok, err := Decode([]byte(` + "`" + `{"NotBefore":"2024-01-01T00:00:00Z"}` + "`" + `))
	if err != nil { t.Fatal(err) }
	time.Sleep(time.Second)
	if !tok.Valid() { t.Fatal("invalid") }`,
			"unproven: the code compares a reading of the clock with a date that does not come from the clock (t.NotBefore at x.go:", nil},
		// Fresh right after New: elapsed is 0 in the bubble, a few
		// microseconds in real time, against a TTL a bug may leave 0.
		{"maybe-zero ttl back to back", `c := New(time.Second)
	if !c.Fresh() { t.Fatal("stale at once") }
	time.Sleep(2 * time.Second)
	if c.Fresh() { t.Fatal("fresh") }`,
			"not fixed: the test calls c.Fresh() at x_test.go:13 right after New(time.Second) at x_test.go:12 with no wait between, and the code compares elapsed time with a duration that may be zero or tiny (time.Since(c.at) < c.ttl at x.go:", nil},
		{"fixed date formatted only", `_ = Clock(125)
	c := New(time.Second)
	time.Sleep(2 * time.Second)
	if c.Fresh() { t.Fatal("fresh") }`, "fixed", all},
		{"zero ttl", `c := New(0)
	time.Sleep(time.Second)
	if c.Fresh() { t.Fatal("fresh") }`,
			"unproven: the test hands a zero duration to the code under test (0 given to New at x_test.go:12)", nil},
		{"two readings", `c := &Cache{}
	c.Moved()
	time.Sleep(time.Second)
	if !c.Moved() { t.Fatal("no time passed") }`,
			"unproven: the code compares two readings of the clock (now.After(c.checked) at x.go:", nil},
		{"exact deadline", `ttl := 100 * time.Millisecond
	c := New(ttl)
	time.Sleep(ttl)
	if c.Fresh() { t.Fatal("fresh at its deadline") }`,
			"unproven: the test sleeps exactly the duration it gives the code under test (ttl given to New at x_test.go:13, then time.Sleep(ttl) at x_test.go:14) and the code decides at that deadline (time.Since(c.at) < c.ttl at x.go:", nil},
		{"exact deadline summed", `c := New(100 * time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	time.Sleep(40 * time.Millisecond)
	if c.Fresh() { t.Fatal("fresh at its deadline") }`,
			"unproven: the test sleeps exactly the duration it gives the code under test (100 * time.Millisecond given to New at x_test.go:12, then time.Sleep(40 * time.Millisecond) at x_test.go:14 (a run of 2 waits from time.Sleep(60 * time.Millisecond) at x_test.go:13 that adds up to it))", nil},
		{"elapsed computed", `c := New(time.Second)
	if c.Tokens() >= 1 { t.Fatal("a token at once") }
	time.Sleep(time.Second)
	if c.Tokens() < 1 { t.Fatal("no token") }`,
			"not fixed: the test checks c.Tokens() at x_test.go:13 right after New(time.Second) at x_test.go:12 with no wait between, and the code computes a quantity from elapsed time (float64(el) at x.go:", nil},
		// time.Second is a constant, followed by value: 1.5s slept in
		// all is past the 1s deadline (the demo's session test).
		{"constant unit", `c := New(time.Second)
	time.Sleep(500 * time.Millisecond)
	time.Sleep(time.Second)
	if c.Fresh() { t.Fatal("fresh") }`, "fixed", all},
		{"variable after another wait", `ttl := time.Second
	c := New(ttl)
	time.Sleep(10 * time.Millisecond)
	time.Sleep(ttl)
	if c.Fresh() { t.Fatal("fresh") }`, "fixed", all},
		{"past the deadline", `c := New(100 * time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	if c.Fresh() { t.Fatal("fresh") }`, "fixed", all},
		// time.Duration(30) is a factor, not a 30ns duration.
		{"converted factor", `c := New(time.Duration(30) * time.Second)
	time.Sleep(time.Second * time.Duration(31))
	if c.Fresh() { t.Fatal("fresh") }`, "fixed", all},
		{"skip at the top", `if testing.Short() { t.Skip("slow") }
	c := New(time.Second)
	time.Sleep(2 * time.Second)
	if c.Fresh() { t.Fatal("fresh") }`, "fixed", all},
		{"skip further down", `c := New(time.Second)
	if os.Getenv("SLOW") == "" { t.Skip("slow") }
	time.Sleep(2 * time.Second)
	if c.Fresh() { t.Fatal("fresh") }`,
			"not fixed: the test skips itself (t.Skip at x_test.go:13) on a condition that reads the environment (os.Getenv): inside a synctest bubble a skip makes the test pass instead (synctest.Test's T is its own); only a skip at the top", nil},
		{"durations only logged", `start := time.Now()
	time.Sleep(time.Second)
	elapsed := time.Since(start)
	t.Logf("slept %v", elapsed)`,
			"not fixed: the test's only use of the durations it measures is to log them (t.Logf at x_test.go:15)", nil},
		{"testing.Benchmark", `r := testing.Benchmark(func(b *testing.B) { time.Sleep(time.Millisecond) })
	time.Sleep(time.Second)
	t.Log(r.NsPerOp())`,
			"not fixed: the test runs testing.Benchmark (testing.Benchmark at x_test.go:12), which measures real time", nil},
		// The code's own default: sleeps adding up to it end on the
		// deadline it set itself.
		{"own deadline", `c := NewDefault()
	time.Sleep(DefaultTTL / 2)
	time.Sleep(DefaultTTL / 2)
	if c.Fresh() { t.Fatal("fresh at its deadline") }`,
			"unproven: the test's sleeps add up exactly to a duration of the code's own (100ms, 100 * time.Millisecond at x.go:", nil},
		{"own deadline passed", `c := NewDefault()
	time.Sleep(150 * time.Millisecond)
	if c.Fresh() { t.Fatal("fresh") }`, "fixed", all},
		// A speed the test states: computing takes no virtual time.
		{"stated speed", `// the cache must go stale within 2s
	c := New(time.Second)
	time.Sleep(2 * time.Second)
	if c.Fresh() { t.Fatal("fresh") }`,
			`not fixed: the comment at x_test.go:12 states a time bound ("within 2s"): in a synctest bubble work that is slow because it computes takes no virtual time`, nil},
		{"durations checked", `start := time.Now()
	time.Sleep(time.Second)
	elapsed := time.Since(start)
	t.Logf("slept %v", elapsed)
	if elapsed < time.Second { t.Fatal("short") }`, "fixed", all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := ruletest.Run(t, sleep.Rule, ruletest.Summaries{}, clockCase(tc.body))
			var got []rule.Diagnostic
			for _, d := range ds {
				if d.Message != "" {
					got = append(got, d)
				}
			}
			if len(got) == 0 {
				t.Fatal("no finding")
			}
			d := got[len(got)-1]
			switch kind, reason, _ := strings.Cut(tc.want, ": "); kind {
			case "fixed":
				if d.Fix == nil || d.Fix.Unproven() != "" {
					t.Fatalf("want a proven fix, got fix %v, not fixed %q, unproven %q", d.Fix != nil, d.NotFixed, d.Fix.Unproven())
				}
				if c := d.Fix.Changes[0].Checked; !slices.Equal(c, tc.checked) {
					t.Errorf("checked %q, want %q", c, tc.checked)
				}
			case "unproven":
				if d.Fix == nil || !strings.Contains(d.Fix.Unproven(), reason) {
					t.Fatalf("want unproven %q, got fix %v, not fixed %q, unproven %q", reason, d.Fix != nil, d.NotFixed, d.Fix.Unproven())
				}
			case "not fixed":
				if d.Fix != nil || !strings.Contains(d.NotFixed, reason) {
					t.Fatalf("want not fixed %q, got fix %v, not fixed %q", reason, d.Fix != nil, d.NotFixed)
				}
			}
		})
	}
}

// Code of another package is not read for the hazards: a sleep of
// exactly the duration handed to it is a deadline it may decide at, and
// the wrap claims neither "no fixed date" nor "no comparison of two clock
// readings" for it.
func TestClockHazardsOtherPackage(t *testing.T) {
	testmod.Short(t)
	lib := ruletest.Package{Path: "example.com/m/lib", Files: map[string]string{"lib.go": `package lib

import "time"

type Cache struct{ at time.Time; ttl time.Duration }

func New(ttl time.Duration) *Cache { return &Cache{at: time.Now(), ttl: ttl} }
func (c *Cache) Fresh() bool { return time.Since(c.at) < c.ttl }
`}}
	test := func(body string) ruletest.Package {
		return ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": `package x

import (
	"testing"
	"time"

	"example.com/m/lib"
)

func TestX(t *testing.T) {
` + body + `
}
`}}
	}
	src := ruletest.Summaries{"example.com/m/lib.New": sum(), "example.com/m/lib.Cache.Fresh": sum()}

	ds := ruletest.Run(t, sleep.Rule, src, lib, test(`c := lib.New(time.Second)
	time.Sleep(time.Second)
	if c.Fresh() { t.Fatal("fresh") }`))
	want := "the test sleeps exactly the duration it gives the code under test (time.Second given to lib.New at x_test.go:11, then time.Sleep(time.Second) at x_test.go:12) and the code it is handed to (lib.New) is not read here"
	if len(ds) != 1 || ds[0].Fix == nil || !strings.Contains(ds[0].Fix.Unproven(), want) {
		t.Fatalf("want one unproven fix %q, got %+v", want, ds)
	}

	ds = ruletest.Run(t, sleep.Rule, src, lib, test(`c := lib.New(time.Second)
	time.Sleep(2 * time.Second)
	if c.Fresh() { t.Fatal("fresh") }`))
	if len(ds) != 1 || ds[0].Fix == nil || ds[0].Fix.Unproven() != "" {
		t.Fatalf("want one proven fix, got %+v", ds)
	}
	want2 := []string{"no zero duration", "no sleep ending exactly on a configured deadline", "no deadline polled without blocking", "no time bound stated in the test's names or comments", "no code of another package of the module or a dependency that may read the clock", "no sleep ending exactly on half a configured deadline", "no reading of the clock coarsened (Truncate, Round, a division), in any build", "no check that bounds the code's work in real time", "no reading of the clock made a number used as entropy (masked, shifted, divided, a seed, a hash, a key), in any build or module package", "no loop spinning on the real clock in a build or module package the analysis does not type", "no times compared by value (==, !=, a map key, reflect.DeepEqual, their text), in any build or test file"}
	if got := ds[0].Fix.Changes[0].Checked; !slices.Equal(got, want2) {
		t.Errorf("checked %q, want %q", got, want2)
	}
}
