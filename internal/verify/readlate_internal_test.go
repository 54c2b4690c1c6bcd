package verify

import (
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
		want string
	}{
		{&aimSite{what: comparison, x: "now", y: "exp"}, "", "(now).Before((exp).Add(2000000000))"},
		{&aimSite{what: comparison, x: "time.Now()", y: "l.expiry", after: true}, "", "(time.Now()).After((l.expiry).Add(2000000000))"},
		{&aimSite{what: comparison, x: "l.expiry", y: "c.clock.Now()"}, "", "(l.expiry).Add(2000000000).Before(c.clock.Now())"},
		{&aimSite{what: comparison, x: "deadline", y: "Now"}, "", "(deadline).Add(2000000000).Before(Now)"},
		{&aimSite{what: comparison, x: "a", y: "b", after: true}, "", "(a).After((b).Add(2000000000))"},
		{&aimSite{what: elapsed}, "time.Since(l.granted)", "((time.Since(l.granted)) - 2000000000)"},
	} {
		if got := c.site.readLate(c.expr, d); got != c.want {
			t.Errorf("readLate(%+v) = %s, want %s", *c.site, got, c.want)
		}
	}
}
