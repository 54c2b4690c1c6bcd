package verify

import (
	"slices"
	"testing"
	"time"
)

// An expiry made late moves the operand that is not the current time, so
// that what the comparison decides happens later whichever side now is
// on, and makes elapsed time shorter.
func TestReadLate(t *testing.T) {
	d := 2 * time.Second
	for _, c := range []struct {
		site *aimSite
		expr string
		want []string // the arg's, then the receiver's
	}{
		{&aimSite{what: comparison, x: "now", y: "exp"}, "", []string{"(now).Before((exp).Add(2000000000))"}},
		{&aimSite{what: comparison, x: "time.Now()", y: "l.expiry", after: true}, "", []string{"(time.Now()).After((l.expiry).Add(2000000000))"}},
		{&aimSite{what: comparison, x: "l.expiry", y: "c.clock.Now()"}, "", []string{"(l.expiry).Add(2000000000).Before(c.clock.Now())"}},
		{&aimSite{what: comparison, x: "deadline", y: "c.now()"}, "", []string{"(deadline).Add(2000000000).Before(c.now())"}},
		{&aimSite{what: comparison, x: "a", y: "b", after: true}, "", []string{"(a).After((b).Add(2000000000))", "(a).Add(2000000000).After(b)"}},
	} {
		var got []string
		if arg, recv := c.site.lateShifts(); arg {
			got = append(got, c.site.readLate(c.expr, d, false))
			if recv {
				got = append(got, c.site.readLate(c.expr, d, true))
			}
		} else if recv {
			got = append(got, c.site.readLate(c.expr, d, true))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: %q, want %q", *c.site, got, c.want)
		}
	}
	if got, want := (&aimSite{what: elapsed}).readLate("time.Since(l.granted)", d, false), "((time.Since(l.granted)) - 2000000000)"; got != want {
		t.Errorf("elapsed: %s, want %s", got, want)
	}
}
