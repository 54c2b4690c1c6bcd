// Package polls holds what the rules that write polls share: the option
// that bounds every poll unflake writes. attemptloop declares it (its
// --poll-timeout); waitfor reads it too, so one option bounds both.
package polls

import (
	"errors"
	"flag"
	"time"

	"github.com/unflake/unflake/rule"
)

// DefaultTimeout is the least budget a rewritten poll gets.
const DefaultTimeout = 10 * time.Second

// Timeout is --poll-timeout, the least budget of a poll a rule writes.
var Timeout = rule.VarOption("poll-timeout", DefaultTimeout, "the least time a rewritten poll waits for its condition",
	func(def time.Duration) flag.Value { d := durationValue(def); return &d })

// durationValue is a flag.Value holding a duration greater than zero.
// (Named like the flag package's own values, so help text calls it a
// duration.)
type durationValue time.Duration

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Get() any       { return time.Duration(*d) }

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v <= 0 {
		return errors.New("must be greater than zero")
	}
	*d = durationValue(v)
	return nil
}
