package verify

import (
	"go/ast"
	"strings"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rule"
)

// The slowed mutant's delay outlasts the test's time (or the window the
// fix replaces) by half, in tenths of a second; none where it would be
// too long to be bounded, or where syscall has no Nanosleep.
func TestSlowDelay(t *testing.T) {
	ms := func(d time.Duration) *outcome { return &outcome{tops: 1, elapsed: d} }
	for _, tc := range []struct {
		before, window time.Duration
		goos           string
		want           time.Duration
	}{
		{800 * time.Millisecond, 0, "linux", 1200 * time.Millisecond},
		{630 * time.Millisecond, 0, "linux", time.Second},
		{100 * time.Millisecond, 600 * time.Millisecond, "linux", 900 * time.Millisecond},
		{5 * time.Millisecond, 0, "linux", 100 * time.Millisecond},
		{8 * time.Second, 0, "linux", 0},
		{800 * time.Millisecond, 0, "darwin", 0},
		{800 * time.Millisecond, 0, "windows", 0},
	} {
		if got := slowDelay(ms(tc.before), tc.window, tc.goos, true); got != tc.want {
			t.Errorf("slowDelay(%s, %s, %s) = %s, want %s", tc.before, tc.window, tc.goos, got, tc.want)
		}
	}
}

// The slowed mutants of a clock change: the functions that hold a write
// the checks await first (Trip writes open, halfOpen too, Close closes
// done), then those the test reaches that read the clock or wait on a
// timer (tick, Ready); not unused (not reached); and right after a
// statement that stores a reading of the clock (Trip's openedAt), where
// work of the same function after the stamp falls. Its schema builds, sleeps in
// a system call again after a signal, at most slowCalls times, and keeps
// every line where it was.
func TestSlowedMutants(t *testing.T) {
	testmod.Short(t) // type-checks the standard library from source
	const file = "/src/p/breaker.go"
	fset, f, info, pkg := checkReal(t, file, breakerCode)
	code := collect(fset, []*ast.File{f}, map[string][]byte{file: []byte(breakerCode)}, info, pkg.Scope())
	m := mentions{direct: map[string]bool{"Trip": true, "Ready": true, "Close": true, "open": true}, indirect: map[string]bool{}}
	for _, n := range []string{"Trip", "Ready", "Close"} {
		for r := range code.reads[n] {
			m.indirect[r] = true
		}
	}
	var slowedMs []*mutant
	var got []string
	for _, mu := range code.aimed(m, map[rule.ChangeKind]bool{rule.Clock: true}, nil, 1200*time.Millisecond) {
		if mu.op == slowed {
			slowedMs = append(slowedMs, mu)
			got = append(got, mu.String())
		}
	}
	want := []string{
		"the code slowed by 1.2s of work at breaker.go:14 (Trip, the clock does not see it)",
		"the code slowed by 1.2s of work at breaker.go:16 (after the stamp, the clock does not see it)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("slowed (within maxAimed):\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var entries []*target
	for _, a := range code.aims {
		if a.site.what == entry && code.reach(m)[a.encl] {
			entries = append(entries, a)
		}
	}
	var order []string
	for _, e := range code.slowable(m, entries) {
		order = append(order, e.site.shown)
	}
	if got, want := strings.Join(order, " "), "Trip halfOpen Close tick Ready"; got != want {
		t.Errorf("slowable: %s, want %s", got, want)
	}
	if d := slowDelay(&outcome{tops: 1, elapsed: time.Second}, 0, "linux", false); d != 0 {
		t.Errorf("a delay of %s for a clock that sees work (a fake clock's waiters)", d)
	}
	src := string(schema(slowedMs)[file])
	checkReal(t, file, src) // it builds
	for _, w := range []string{
		`func (b *Breaker) Trip() { switch unflakeMutant { case "m1.test": if unflakeSlowed0_`,
		`.Add(1) <= 4 { for ts := unflakemutantsyscall.NsecToTimespec(1200000000); unflakemutantsyscall.Nanosleep(&ts, &ts) == unflakemutantsyscall.EINTR; { } }; };`,
		`import unflakemutantsyscall "syscall"; import unflakemutantatomic "sync/atomic"`,
		"\nvar unflakeSlowed0_",
	} {
		if !strings.Contains(src, w) {
			t.Errorf("schema lacks %s:\n%s", w, src)
		}
	}
	if strings.Count(src[:strings.Index(src, "func unused")], "\n") != strings.Count(breakerCode[:strings.Index(breakerCode, "func unused")], "\n") {
		t.Errorf("lines moved:\n%s", src)
	}
}
