package bubble

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/unflake/unflake/internal/contract"
	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/intent"
	"github.com/unflake/unflake/internal/match"
)

// A bubble changes the clock a test runs on: it starts at 2000-01-01 UTC,
// stands still between two statements, and a sleep ends exactly on its
// deadline (the test's own a nanosecond late: overshoot.go). Correct code
// can fail there, and a bug can hide, in three
// shapes this file looks for in what a bubble would hold (the test's
// statements a wrap moves, and the package's functions it reaches, the
// non-test files included):
//
//   - a fixed date (time.Date, time.Unix of a constant, time.Parse of a
//     literal) where the code reads the clock: a token valid from 2024
//     is not valid yet in 2000;
//   - a date from outside the clock (decoded, parsed from a string that
//     is not a literal, a file's time, a fixture's) compared with a
//     reading: it is of the real calendar too (origin.go);
//   - elapsed time that must pass: a zero duration the test hands to the
//     code (a TTL of 0 meaning "fresh on every call"), or code comparing
//     two readings of the clock (time.Since(x) > 0, now.After(last) where
//     last was set to an earlier now, a.Equal(b)), which in a bubble are
//     equal;
//   - an exact deadline: the test sleeps exactly a duration it gave the
//     code (sleep(ttl) after New(ttl)), and the code decides with After,
//     Before or a comparison: in a bubble the sleep ends at the boundary,
//     where a strict and a non-strict comparison differ. The code's own
//     durations count as well (a default timeout, a constant, a field
//     its constructor sets): sleeps adding up exactly to one of them end
//     on the deadline the code set itself;
//   - a quantity computed from elapsed time (a token bucket's refill
//     float64(now.Sub(last))/every, el.Seconds()*rate, a tick count
//     handed to a helper): between two calls with no sleep between, real
//     time gives a few microseconds and a bubble exactly 0, so a rounding
//     bug (a refill rounded up, "at least one tick") fails in real time
//     and passes in the bubble. Running the correct code cannot show
//     that, so it leaves the test not fixed rather than unproven.
//     So does elapsed time compared with a duration that may be zero or
//     tiny (a field an option sets): a bug that drops it makes
//     time.Since(openedAt) > openFor hold after microseconds of real
//     time, never in the bubble.
//
//   - a check that bounds the code's work in real time: work that is
//     slow because it computes takes no virtual time (the clock moves
//     only when every goroutine blocks), so a sweep late by a second of
//     CPU lands inside the test's window. The code cannot show whether
//     a bug computes; the test shows whether a check would see it: one
//     right after another call of code that compares a reading with a
//     duration, or one after a wait while code under test runs beside
//     the test (waitBoundsWork). fix --verify decides with a mutant that
//     slows the code by real time the bubble does not see (verify's
//     aimslow.go). A test whose names or comments bound how long the
//     code takes (contract.SpeedBound) keeps the real clock (not fixed).
//
// Each leaves the wrap unproven, its reason naming the hazard and its
// line: running the test in the bubble tells (a fixed date flips a
// correct comparison deterministically, so fix --verify refutes it) where
// the analysis cannot. A hazard excluded is listed in ClockChecked, for
// the fix's rule.Change; a fixed date and a comparison of two readings
// only when the analysis read all the code the test runs (none of another
// non-standard package).

// The hazards' names, as a fix's Change.Checked lists them when excluded.
const (
	checkedDate      = "no fixed date"
	checkedZero      = "no zero duration"
	checkedReadings  = "no comparison of two clock readings"
	checkedDeadline  = "no sleep ending exactly on a configured deadline"
	checkedKey       = "no clock reading used as a key"
	checkedPoll      = "no deadline polled without blocking"
	checkedElapsed   = "no quantity computed from elapsed time checked right after another call"
	checkedBound     = "no time bound stated in the test's names or comments"
	checkedOrigin    = "no date from outside the clock compared with a reading"
	checkedVersus    = "no elapsed time compared with a duration that may be zero or tiny right after another call"
	checkedZeroWait  = "no wait the code computes in a loop that may be 0"
	checkedKept      = "no package state that hides its type kept past the bubble"
	checkedOutside   = "no code of another package of the module or a dependency that may read the clock"
	checkedHalf      = "no sleep ending exactly on half a configured deadline"
	checkedCoarse    = "no reading of the clock coarsened (Truncate, Round, a division), in any build"
	checkedStored    = "no comparison of two stored clock readings (in a map, a slice, a helper's parameters)"
	checkedWork      = "no check that bounds the code's work in real time"
	checkedEntropy   = "no reading of the clock made a number used as entropy (masked, shifted, divided, a seed, a hash, a key), in any build or module package"
	checkedSpinOut   = "no loop spinning on the real clock in a build or module package the analysis does not type"
	checkedMonotonic = "no times compared by value (==, !=, a map key, reflect.DeepEqual, their text), in any build or test file"
)

// clockKey is what a clock hazard's reason stands for (reasons.add):
// one reason per hazard.
type clockKey string

// ClockChecked lists the clock hazards excluded for t (each in a few
// words, for rule.Change.Checked); a hazard found is among its Unproven
// reasons instead.
func (t *Target) ClockChecked() []string {
	t.resolve()
	return t.checked
}

// ClockChecked lists the clock hazards excluded for every one of targets.
func ClockChecked(targets []*Target) []string {
	if len(targets) == 0 {
		return nil
	}
	var out []string
	for _, c := range []string{checkedDate, checkedZero, checkedReadings, checkedDeadline, checkedKey, checkedPoll, checkedElapsed, checkedBound, checkedOrigin, checkedVersus, checkedZeroWait, checkedKept, checkedOutside, checkedHalf, checkedCoarse, checkedStored, checkedWork, checkedEntropy, checkedSpinOut, checkedStepLoop, checkedPaced, checkedMonotonic, checkedRuntimeCleanup} {
		all := true
		for _, t := range targets {
			all = all && slices.Contains(t.ClockChecked(), c)
		}
		if all {
			out = append(out, c)
		}
	}
	return out
}

// clockScan is what a bubble's clock changes in the code it would hold.
type clockScan struct {
	a *Analysis

	fixed   string // the first fixed date ("time.Date at token_test.go:12")
	now     string // the first reading of the clock
	foreign string // the first call into code of another non-standard package
	// outside is the first call into code of another non-standard
	// package that may read the clock (clockPkg): the hazards below are
	// looked for in this package's syntax only, so that code is not
	// read for them.
	outside string
	// outsideRoots are the roots calling such code, so that backToBack
	// asks which of the test's calls reach it.
	outsideRoots map[ast.Node]bool
	clockPkgs    map[*types.Package]bool // clockPkg's answers
	// certain holds, in concrete, the method a call through an interface
	// runs where the value's type is certain (certainAt).
	certain *walker
	zero    string // the first zero duration handed to the code under test
	order   string // the first comparison of two clock readings
	decides string // the first decision at a deadline (Time.After, a comparison of elapsed time)
	key     string // the first reading of the clock used as a key or a name
	poll    string // the first deadline polled without blocking (ctx.Err(), a select with a default)
	timeout string // the first deadline set (context.WithTimeout)
	compute string // the first quantity the code computes from elapsed time
	origin  string // the first date from outside the clock compared with a reading (origin.go)
	versus  string // the first elapsed time compared with a duration that may be zero
	early   string // the first run of the test's sleeps ending on half a duration of the test's or the code's

	orig *origins // what each variable and field is set to (origin.go)

	// comparing are the roots comparing elapsed time with a duration
	// that may be zero, as computing are for a quantity computed.
	comparing map[ast.Node]bool

	// deciding are the roots of the package's code (not the test's)
	// comparing a reading of the clock or elapsed time with a deadline
	// or a duration, and work the first such comparison: a check right
	// after another call that reaches one bounds the code's work
	// between the two in real time (boundsWork).
	deciding map[ast.Node]bool
	work     string
	// decision is set by call and binary to the comparison they saw
	// deciding at a deadline, for scan to record by root.
	decision string

	// spans are the variables and fields set to elapsed time (el :=
	// now.Sub(last)), so that el > 0 and refill(el, every) are seen.
	spans map[types.Object]bool

	// computing and reading are the roots that compute from elapsed time
	// and that read the clock, so that backToBack asks which calls reach
	// them.
	computing, clocked map[ast.Node]bool

	rootList []ast.Node            // what the bubble would hold (roots)
	visiting map[types.Object]bool // the variables usedMeeting is following

	// readings are the variables and fields set to a reading of the clock
	// (x = time.Now()), so that comparing two of them is seen.
	readings map[types.Object]bool
	// stored are readings kept for later and compared with each other
	// where the order they were taken in decides: the maps and slices
	// whose elements are readings (opened[peer] = time.Now()), a range's
	// value over one, and the parameters of the package's functions a
	// reading is passed to (older(opened[a], opened[b])). A reading of
	// them counts as one (reading), and comparing two is storedOrder.
	stored     map[types.Object]bool
	containers map[types.Object]bool
	// storedOrder is the first comparison of two readings of which one
	// at least is stored: equal in a bubble, so the order they decide
	// is the order of a map's iteration or a sort's ties.
	storedOrder string
	// nums are the variables and fields set to a reading or an elapsed
	// time made a number (now.UnixNano(), int64(time.Since(t)), now+ttl
	// of one), so that nowNs <= exp is seen.
	nums map[types.Object]bool

	restarts map[*types.Func]bool // the functions that store a reading of the clock (mayRestart)
}

// clockHazards adds the clock hazards of a bubble to t's unproven reasons
// and records those excluded (t.checked).
func (a *Analysis) clockHazards(t *Target) {
	if t.body == nil || t.file == nil {
		return
	}
	a.shapeBlockers(t)
	c := &clockScan{a: a, readings: map[types.Object]bool{}, stored: map[types.Object]bool{}, containers: map[types.Object]bool{}, spans: map[types.Object]bool{}, computing: map[ast.Node]bool{}, comparing: map[ast.Node]bool{}, deciding: map[ast.Node]bool{}, clocked: map[ast.Node]bool{}, visiting: map[types.Object]bool{}, outsideRoots: map[ast.Node]bool{}, nums: map[types.Object]bool{}, clockPkgs: map[*types.Package]bool{}}
	roots := c.roots(t)
	c.rootList = roots
	c.certain = &walker{a: a}
	for _, r := range roots {
		c.certain.certainAt(r)
	}
	// Twice: now := time.Now(); c.last = now sets a field to a reading.
	for range 2 {
		for _, r := range roots {
			c.collectReadings(r)
		}
	}
	for _, r := range roots {
		c.scan(r, a.testCode(r))
	}
	var checked []string
	switch {
	case c.fixed != "" && (c.now != "" || c.foreign != ""):
		reads := "reads the clock (" + c.now + ")"
		if c.now == "" {
			reads = "calls " + c.foreign + ", which may read the clock"
		}
		t.unproven.add(clockKey(checkedDate), fmt.Sprintf("the test uses a fixed date (%s) and %s: a synctest bubble's clock starts at 2000-01-01 UTC, so a comparison of the two flips", c.fixed, reads))
	case c.foreign == "":
		// Claimed only when all the code was read: another package's
		// may hold a fixed date of its own.
		checked = append(checked, checkedDate)
	}
	if c.zero != "" {
		t.unproven.add(clockKey(checkedZero), fmt.Sprintf("the test hands a zero duration to the code under test (%s): code given a zero TTL or interval counts on real time passing between two calls, and on a synctest bubble's clock none does", c.zero))
	} else {
		checked = append(checked, checkedZero)
	}
	switch {
	case c.order != "":
		t.unproven.add(clockKey(checkedReadings), fmt.Sprintf("the code compares two readings of the clock (%s): in a synctest bubble no time passes between two statements, so the readings are equal", c.order))
	case c.foreign == "":
		// Only the package's own code is read: code of another package
		// may compare readings, so nothing is claimed for it, and
		// nothing is held against it either (the wrap stays as proven
		// as the rest of the analysis makes it).
		checked = append(checked, checkedReadings)
	}
	// Not fixed: the order of readings that are equal in a bubble is
	// the order a map's iteration or a sort's ties give, which differs
	// run to run, so running the correct code fails only some runs and a
	// comparison reversed by a bug passes some.
	other := ""
	if c.storedOrder == "" {
		other = a.otherBuildOrder(a.otherBuildDecls(t))
	}
	switch {
	case c.storedOrder != "":
		t.blocked.add(clockKey(checkedStored), fmt.Sprintf("the code compares two readings of the clock it kept (%s): in a synctest bubble no time passes between two statements, so readings taken one after the other are equal and the order they decide (oldest first) is a map's iteration order or a sort's ties, which varies run to run, so running cannot reliably tell a reversed order from the right one", c.storedOrder))
	case other != "":
		t.blocked.add(clockKey(checkedStored), other)
	case c.foreign == "":
		checked = append(checked, checkedStored)
	}
	if c.key != "" {
		t.unproven.add(clockKey(checkedKey), fmt.Sprintf("the code uses a reading of the clock as a key or a name (%s): in a synctest bubble no time passes between two statements, so two readings are equal and the second entry replaces the first", c.key))
	} else if c.foreign == "" {
		checked = append(checked, checkedKey)
	}
	if c.poll != "" && c.timeout != "" {
		t.unproven.add(clockKey(checkedPoll), fmt.Sprintf("the code polls a deadline without blocking (%s) and the test runs under one (%s): in a synctest bubble time moves only when every goroutine blocks, so a loop that never blocks never sees the deadline pass", c.poll, c.timeout))
	} else if c.foreign == "" || c.timeout == "" {
		checked = append(checked, checkedPoll)
	}
	// Not fixed rather than unproven: the bug it hides shows only in
	// real time, so running the correct code in the bubble cannot tell.
	if again := c.backToBack(t, c.computing, false, false); c.compute != "" && again != "" {
		t.blocked.add(clockKey(checkedElapsed), fmt.Sprintf("the test checks %s with no wait between, and the code computes a quantity from elapsed time (%s): in a synctest bubble no time passes between two statements, so the second call sees exactly 0 elapsed where real time gives a few microseconds, and a rounding of it (a refill or a tick count rounded up) that the original catches passes in the bubble", again, c.compute))
	} else if why := c.loopAgainIf(c.compute != "", false); why != "" {
		t.blocked.add(clockKey(checkedElapsed), why) // the same, inside the code's own loop (loopagain.go)
	} else if c.foreign == "" {
		checked = append(checked, checkedElapsed)
	}
	// Not fixed for the same reason: a duration the code compares
	// elapsed time with is 0 under a bug that drops it (an option
	// written to a copy) and nanoseconds under one that drops its unit,
	// and then time.Since(openedAt) > openFor holds after a few
	// microseconds of real time but never in the bubble, where the
	// second call sees exactly 0 (elapsed < ttl the other way round).
	// The correct code sets the duration, so running it cannot tell;
	// only a constant of a millisecond or more is known to stay above
	// the few microseconds.
	if again := c.backToBack(t, c.comparing, false, true); c.versus != "" && again != "" {
		t.blocked.add(clockKey(checkedVersus), fmt.Sprintf("the test calls %s with no wait between, and the code compares elapsed time with a duration that may be zero or tiny (%s): in a synctest bubble no time passes between two statements, so elapsed time is exactly 0 there where real time gives a few microseconds, and a bug that leaves the duration 0 or makes it nanoseconds (an option lost, a default not applied, a unit dropped) flips the comparison in real time, which the original catches, and not in the bubble", again, c.versus))
	} else if why := c.loopAgainIf(c.versus != "", true); why != "" {
		t.blocked.add(clockKey(checkedVersus), why) // the same, inside the code's own loop (loopagain.go)
	} else if c.foreign == "" {
		checked = append(checked, checkedVersus)
	}
	// Unproven: a check that bounds the code's work in real time. Work
	// that is slow because it computes takes no virtual time (the clock
	// moves only when every goroutine blocks), so a bug that makes the
	// code compute for a second (a digest stretched per call, a loop run
	// too often) lands inside a window the original's check bounds and
	// passes in the bubble. A check bounds it where it follows another
	// call of the code with no wait between and the code compares a
	// reading or elapsed time with a duration (the work between the two
	// calls counts against it in real time), or where it follows a wait
	// of the test while code of the package runs concurrently (the wait
	// bounds that code's work). Running the correct code cannot show
	// this; fix --verify tries the code slowed by real time the bubble's
	// clock does not see, which the original fails on and the bubble
	// must too.
	again := c.backToBack(t, c.deciding, false, false)
	switch during := c.waitBoundsWork(t); {
	case c.work != "" && again != "":
		t.unproven.add(clockKey(checkedWork), fmt.Sprintf("the test checks %s with no wait between, and the code compares a reading of the clock with a duration (%s): in real time the code's work between the calls counts against the duration, and in a synctest bubble it takes none, so code slow because it computes (a digest stretched, a loop run too often) fails the original and passes the bubble", again, c.work))
	case during != "":
		t.unproven.add(clockKey(checkedWork), during)
	default:
		checked = append(checked, checkedWork)
	}
	// The hazards are looked for in this package's syntax only. Code of
	// another package that may read the clock can hold any of them (a
	// fixed epoch, a strict comparison at a deadline the sleep ends on,
	// two readings compared): the wrap is unproven, and running it tells
	// for those that break correct code. Checked right after another
	// call with no wait between, it may also compute from elapsed time
	// (a refill rounded up) and hide a bug only real time shows, which
	// running cannot tell: not fixed.
	again = ""
	if c.outside != "" {
		again = c.backToBack(t, c.outsideRoots, true, false)
	}
	switch {
	case again != "":
		t.blocked.add(clockKey(checkedOutside), fmt.Sprintf("%s, and the test checks %s with no wait between: in a synctest bubble no time passes between two statements, so that code sees exactly 0 elapsed where real time gives a few microseconds, and a quantity it computes from elapsed time (a refill or a tick count rounded up) or compares with a duration that may be zero flips in real time, which the original catches, and not in the bubble", c.outside, again))
	case c.outside != "":
		t.unproven.add(clockKey(checkedOutside), fmt.Sprintf("%s (a fixed date the bubble's 2000-01-01 clock is before, two readings compared that are equal in a bubble, a strict comparison at a deadline a sleep ends exactly on)", c.outside))
	default:
		checked = append(checked, checkedOutside)
	}
	if c.origin != "" {
		t.unproven.add(clockKey(checkedOrigin), fmt.Sprintf("the code compares a reading of the clock with a date that does not come from the clock (%s): a synctest bubble's clock starts at 2000-01-01 UTC, so a date from the real calendar (decoded, parsed, read from a file, set by a fixture) compares the other way", c.origin))
	} else if c.foreign == "" {
		checked = append(checked, checkedOrigin)
	}
	// Not fixed: a test that states a speed or a time bound checks how
	// long the code takes, and in a bubble work that is slow because it
	// computes takes no virtual time, so a late result passes. Without
	// such words, a check that bounds the code's work makes the wrap
	// unproven (above).
	if b := statedBound(t); b != "" {
		t.blocked.add(clockKey(checkedBound), b+": in a synctest bubble work that is slow because it computes takes no virtual time, so code that computes for far longer than the bound passes; keep the real clock")
	} else {
		checked = append(checked, checkedBound)
	}
	dl, unseen, sums := c.deadline(t)
	decides := ""
	switch {
	case c.decides != "":
		decides = "the code decides at that deadline (" + c.decides + ")"
	case unseen != "":
		decides = "the code it is handed to (" + unseen + ") is not read here, so it may decide at that deadline"
	}
	own := ""
	if c.decides != "" {
		own = c.ownDeadline(t)
	}
	// Not fixed: half the period is where a bug that halves it (a
	// jitter gone wrong, a unit halved) ends, and a test that checks
	// "not yet" there sees, in a bubble, a strict comparison (expiry
	// before now) still false at that very instant, where real time, a
	// little later, makes it true and the original fails. The correct
	// code passes either way, so running it cannot tell.
	if c.early != "" && c.decides != "" {
		t.blocked.add(clockKey(checkedHalf), fmt.Sprintf("the test's sleeps end exactly on half a duration of the code under test (%s) and the code decides at a deadline (%s): in a synctest bubble the sleep ends exactly there, so a bug that halves the period ends on the test's check, where a strict comparison is still false in the bubble and true in real time, which the original catches", c.early, c.decides))
	} else {
		checked = append(checked, checkedHalf)
	}
	switch {
	case dl != "" && decides != "":
		t.unproven.add(clockKey(checkedDeadline), fmt.Sprintf("the test sleeps exactly the duration it gives the code under test (%s) and %s: in a synctest bubble the sleep ends exactly on the boundary, where a strict and a non-strict comparison differ", dl, decides))
	case sums != "" && c.decides != "":
		t.unproven.add(clockKey(checkedDeadline), fmt.Sprintf("the waits in the bubble may add up exactly to a duration the test gives the code under test (%s) and the code decides at a deadline (%s): in a synctest bubble every wait ends exactly on time, so the decision is taken on the boundary, where a strict and a non-strict comparison differ", sums, c.decides))
	case own != "":
		t.unproven.add(clockKey(checkedDeadline), fmt.Sprintf("the test's sleeps add up exactly to a duration of the code's own (%s) and the code decides at a deadline (%s): in a synctest bubble the sleep ends exactly on the boundary, where a strict and a non-strict comparison differ", own, c.decides))
	default:
		checked = append(checked, checkedDeadline)
	}
	// Not fixed: the code's own waits land its loop exactly on a
	// deadline the step divides (steps.go).
	if why := c.stepLoop(); why != "" {
		t.blocked.add(clockKey(checkedStepLoop), why+": in a synctest bubble the code's own waits end exactly on time, so after each step the time left is exactly a multiple of the step and a comparison of the time left or elapsed with the step or the deadline is decided on its boundary, where real time is always past it; a bug that gives up when less than a step is left gives up a step early in real time, which the original catches, and polls on to the deadline in the bubble, and the correct code passes either way, so running cannot tell")
	} else if c.foreign == "" {
		checked = append(checked, checkedStepLoop)
	}
	// Not fixed: the runtime runs the code's cleanups and finalizers
	// outside the bubble (runtimecleanup.go).
	if at := c.runtimeCleanup(); at != "" {
		t.blocked.add(clockKey(checkedRuntimeCleanup), "the code registers a cleanup with the runtime ("+at+"): the runtime runs it on a goroutine of its own, outside the bubble, so a channel or timer of the bubble it touches is a fatal error that kills the test binary where the original failed at its check, and whether it runs depends on the collector")
	} else if c.foreign == "" {
		checked = append(checked, checkedRuntimeCleanup)
	}
	// Not fixed: the code's own waits pace a loop that computes from
	// elapsed time, which is then an exact multiple of the period
	// (paced.go).
	if why := c.pacedCompute(); why != "" {
		t.blocked.add(clockKey(checkedPaced), why+": in a synctest bubble the code's own waits end exactly on time, so the elapsed time it computes from is exactly a multiple of its period, where real time is always a little past it; a rounding of it (the periods begun counted as whole, a remainder rounded up) pays one more in real time, which the original catches, and nothing more in the bubble, and the correct code passes either way, so running cannot tell")
	} else if c.foreign == "" {
		checked = append(checked, checkedPaced)
	}
	// Found by the walk (zerowait.go, kept.go), in the package's own
	// code only: another package's is not read for them.
	if !t.unproven.keys[clockKey(checkedZeroWait)] && c.foreign == "" {
		checked = append(checked, checkedZeroWait)
	}
	if !t.unproven.keys[clockKey(checkedKept)] && !t.blocked.keys[clockKey(checkedKept)] && c.foreign == "" {
		checked = append(checked, checkedKept)
	}
	// Not fixed: the coarsening may be a bug's only (builds.go).
	if why := a.coarseHazard(); why != "" {
		t.blocked.add(clockKey(checkedCoarse), why)
	} else {
		checked = append(checked, checkedCoarse)
	}
	// Not fixed: read from syntax where the typed walk does not look, in
	// builds the correct code may not have (modbuilds.go).
	if why := a.entropyHazard(); why != "" {
		t.blocked.add(clockKey(checkedEntropy), why)
	} else {
		checked = append(checked, checkedEntropy)
	}
	// Not fixed: a bubble's readings carry no monotonic reading, so a
	// comparison by value that a bug makes may hold only there
	// (monotonic.go).
	if why := a.monotonicHazard(); why != "" {
		t.blocked.add(clockKey(checkedMonotonic), why)
	} else {
		checked = append(checked, checkedMonotonic)
	}
	if why := a.otherBuildSpin(); why != "" {
		t.blocked.add(clockKey(checkedSpinOut), why)
	} else {
		checked = append(checked, checkedSpinOut)
	}
	t.checked = checked
}

// decided records root as deciding at a deadline when the call or the
// comparison just scanned is such a decision in the package's code.
func (c *clockScan) decided(root ast.Node, test bool) {
	if test || c.decision == "" {
		return
	}
	c.deciding[root] = true
	if c.work == "" {
		c.work = c.decision
	}
}

// waitBoundsWork says where the test waits while code of the package runs
// concurrently with it (a goroutine the code or the test starts, a
// time.AfterFunc callback: t.spawn) and then checks, or "": in real time
// the wait bounds the work that code does before the check reads what it
// produced; in a bubble that work takes no virtual time. The check is
// the first call of testing's Error, Fatal or Fail family, or of an
// assertion, after a wait in the test's own statements; the wait named
// is the last before it.
func (c *clockScan) waitBoundsWork(t *Target) string {
	if t.spawn == "" {
		return ""
	}
	info := c.a.info
	body := &ast.BlockStmt{List: t.body.List[t.lead:]}
	wait, found := "", ""
	c.inspect(body, func(n ast.Node, _ []ast.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt, *ast.FuncLit:
			return false // not the test's own sequence of statements
		case *ast.CallExpr:
			switch {
			case match.IsPkgFunc(info, n, "time", "Sleep", "After") && len(n.Args) == 1:
				wait = c.at(types.ExprString(n), n)
			case wait != "" && c.checks(n):
				found = c.at("checks", n)
			}
		}
		return true
	})
	if found == "" {
		return ""
	}
	return fmt.Sprintf("the test waits (%s) while code under test runs concurrently with it (%s) and %s after the wait: in real time the wait bounds that code's work, and in a synctest bubble work takes none, so code slow because it computes (a digest stretched, a loop run too often) fails the original and passes the bubble", wait, t.spawn, found)
}

// checks reports whether call fails the test: a method of testing's T or
// B that reports a failure, or an assertion.
func (c *clockScan) checks(call *ast.CallExpr) bool {
	fn := match.Callee(c.a.info, call)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	if match.IsAssertion(fn.Pkg().Path(), fn.Name()) {
		return true
	}
	switch fn.Name() {
	case "Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow":
		return fn.Pkg().Path() == "testing"
	}
	return false
}

// statedBound says where t's names (the test's, a subtest's) or its
// comments bound how long the code takes, or "" (contract.SpeedBound: a
// TTL or a cooldown is a timer's bound, which the bubble keeps).
func statedBound(t *Target) string {
	for i, l := range t.labels {
		if b := contract.NameSpeedBound(l.Text, i == 0); b != "" {
			return fmt.Sprintf("the test's name %s states a time bound (%q)", l.Text, b)
		}
	}
	for _, g := range t.notes {
		if b := contract.SpeedBound(intent.Prose(g)); b != "" {
			p := t.a.pass.Fset.Position(g.Pos())
			return fmt.Sprintf("the comment at %s:%d states a time bound (%q)", filepath.Base(p.Filename), p.Line, b)
		}
	}
	return ""
}

// roots are what a wrap of t puts on the virtual clock: its statements
// after those kept outside, and the bodies of the package's functions it
// reaches.
func (c *clockScan) roots(t *Target) []ast.Node {
	body := &ast.BlockStmt{List: t.body.List[t.lead:]}
	if t.lead == 0 {
		body = t.body
	}
	roots := []ast.Node{body}
	for d := range t.reached {
		if d.Body != nil {
			roots = append(roots, d.Body)
		}
	}
	// The map's order is random; positions make the first hazard named
	// the same every run.
	slices.SortFunc(roots[1:], func(x, y ast.Node) int { return int(x.Pos() - y.Pos()) })
	return roots
}

// inspect walks root as a wrap would hold it: not into a subtest's
// function (a target of its own) or a bubble's.
func (c *clockScan) inspect(root ast.Node, f func(n ast.Node, stack []ast.Node) bool) {
	match.WithStack(root, func(n ast.Node, stack []ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok && (c.a.subtests[lit] != nil || c.a.bubbles[lit]) {
			return false
		}
		return f(n, stack)
	})
}

// at names what a node is and where: "time.Date at token_test.go:12".
func (c *clockScan) at(what string, n ast.Node) string {
	p := c.a.pass.Fset.Position(n.Pos())
	return fmt.Sprintf("%s at %s:%d", what, filepath.Base(p.Filename), p.Line)
}

// collectReadings records the variables and fields set to time.Now(),
// or to a variable or field set to it.
func (c *clockScan) collectReadings(root ast.Node) {
	c.inspect(root, func(n ast.Node, _ []ast.Node) bool {
		var lhs, rhs []ast.Expr
		switch n := n.(type) {
		case *ast.AssignStmt:
			lhs, rhs = n.Lhs, n.Rhs
		case *ast.ValueSpec:
			for _, id := range n.Names {
				lhs = append(lhs, id)
			}
			rhs = n.Values
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok {
				if v, ok := c.a.info.Uses[id].(*types.Var); ok && v.IsField() && c.reading(n.Value) {
					c.readings[v] = true
				}
			}
			return true
		case *ast.CallExpr:
			c.passedReadings(n)
			return true
		case *ast.RangeStmt:
			// for p, at := range opened: at is a stored reading.
			if obj := c.objOf(n.X); obj != nil && c.containers[obj] && n.Value != nil {
				if v := c.objOf(n.Value); v != nil {
					c.readings[v], c.stored[v] = true, true
				}
			}
			return true
		default:
			return true
		}
		if len(lhs) == 2 && len(rhs) == 1 {
			// at, ok := opened[peer]: a stored reading.
			if ix, ok := ast.Unparen(rhs[0]).(*ast.IndexExpr); ok && c.reading(ix) {
				if v := c.objOf(lhs[0]); v != nil {
					c.readings[v], c.stored[v] = true, true
				}
			}
		}
		if len(lhs) != len(rhs) {
			return true
		}
		for i, r := range rhs {
			obj := c.objOf(lhs[i])
			if ix, ok := ast.Unparen(lhs[i]).(*ast.IndexExpr); ok && c.reading(r) {
				// opened[peer] = time.Now(): a map or a slice of
				// readings.
				if cont := c.objOf(ix.X); cont != nil {
					c.containers[cont] = true
				}
				continue
			}
			if call, ok := ast.Unparen(r).(*ast.CallExpr); ok && obj != nil && match.IsBuiltin(c.a.info, call.Fun, "append") && len(call.Args) > 1 {
				for _, arg := range call.Args[1:] {
					if c.reading(arg) {
						c.containers[obj] = true
					}
				}
			}
			switch {
			case obj == nil:
			case c.reading(r):
				c.readings[obj] = true
				if c.storedReading(r) {
					c.stored[obj] = true // a := opened[x]
				}
			case c.elapsed(r):
				c.spans[obj] = true
			case c.numeric(r):
				c.nums[obj] = true
			}
		}
		return true
	})
}

// objOf is the variable or field e names, or nil.
func (c *clockScan) objOf(e ast.Expr) types.Object {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return c.a.info.ObjectOf(e)
	case *ast.SelectorExpr:
		return c.a.info.ObjectOf(e.Sel)
	}
	return nil
}

// readsClock reports whether call reads the clock: time.Now, Since or
// Until, or a call of a clock held in a function value (nowValue).
func readsClock(info *types.Info, call *ast.CallExpr) bool {
	return match.IsPkgFunc(info, call, "time", "Now", "Since", "Until") || nowValue(info, call)
}

// nowValue reports whether call calls a function value of type
// func() time.Time (a field now func() time.Time set to time.Now, a
// clock handed in): code that reads its clock through a seam reads the
// real one unless the test hands it another, so its reading counts as
// one of the clock's (red team batch 16, loginlockout). A declared
// function or method is not one: its body is read.
func nowValue(info *types.Info, call *ast.CallExpr) bool {
	if match.Callee(info, call) != nil || match.IsConversion(info, call) {
		return false
	}
	sig, ok := info.TypeOf(call.Fun).Underlying().(*types.Signature)
	return ok && sig.Params().Len() == 0 && sig.Results().Len() == 1 && match.IsNamed(sig.Results().At(0).Type(), "time", "Time")
}

// isNow reports whether e is a call of time.Now or of a clock held in a
// function value (with .UTC(), .Local() or .Round(0) after it: the same
// reading).
func (c *clockScan) isNow(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	if match.IsPkgFunc(c.a.info, call, "time", "Now") || nowValue(c.a.info, call) {
		return true
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && match.IsMethod(c.a.info, call, "time", "UTC", "Local", "Round", "Truncate") {
		return c.isNow(sel.X)
	}
	return false
}

// reading reports whether e is a reading of the clock: time.Now() or a
// variable or field set to one, an element of a map or a slice of them,
// a parameter one is passed to.
func (c *clockScan) reading(e ast.Expr) bool {
	if c.isNow(e) {
		return true
	}
	if ix, ok := ast.Unparen(e).(*ast.IndexExpr); ok {
		obj := c.objOf(ix.X)
		return obj != nil && c.containers[obj]
	}
	obj := c.objOf(e)
	return obj != nil && c.readings[obj]
}

// storedReading reports whether e is a reading kept for later (stored):
// an element of a map or a slice of readings, a range's value over one,
// a parameter a reading is passed to.
func (c *clockScan) storedReading(e ast.Expr) bool {
	if ix, ok := ast.Unparen(e).(*ast.IndexExpr); ok {
		obj := c.objOf(ix.X)
		return obj != nil && c.containers[obj]
	}
	obj := c.objOf(e)
	return obj != nil && c.stored[obj]
}

// passedReadings marks the parameters of a function of the package that
// call passes a reading to: in its body they are readings (stored).
func (c *clockScan) passedReadings(call *ast.CallExpr) {
	fn := match.Callee(c.a.info, call)
	if fn == nil || fn.Pkg() != c.a.pass.Pkg {
		return
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return
	}
	for i, arg := range call.Args {
		if i >= sig.Params().Len() || sig.Variadic() && i >= sig.Params().Len()-1 {
			return
		}
		if c.reading(arg) || c.readingMoved(arg) {
			// A parameter handed time.Now() is a reading; one handed a
			// kept reading (opened[a]) is kept too. One handed a
			// reading moved (now.Add(d)) is an instant of the clock
			// all the same: the code compares it as one.
			p := sig.Params().At(i)
			c.readings[p] = true
			if c.storedReading(arg) {
				c.stored[p] = true
			}
		} else if c.numeric(arg) {
			// AllowAt(key, time.Now().UnixNano()): a reading made a
			// number, compared as one in the callee.
			c.nums[sig.Params().At(i)] = true
		} else if c.elapsed(arg) {
			// silentTooLong(now.Sub(last), a.after): the helper's
			// comparison of its parameter is one of elapsed time.
			c.spans[sig.Params().At(i)] = true
		}
	}
}

// scan records the hazards in root; test is true for the code of a test
// file, which hands durations to the code under test (a zero one there is
// the test's choice; in the package's own code it is the code's).
func (c *clockScan) scan(root ast.Node, test bool) {
	info := c.a.info
	c.inspect(root, func(n ast.Node, stack []ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			c.decision = ""
			c.call(n, stack)
			c.decided(root, test)
			c.originHazard(n)
			if !test && c.againstMaybeZero(n) {
				c.comparing[root] = true
			}
			if !test && c.computed(n) {
				c.computing[root] = true
			}
			if readsClock(info, n) {
				c.clocked[root] = true
			}
			fn := match.Callee(info, n)
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && c.certain.concrete[sel.Sel] != nil {
				// Through an interface on a value whose type is
				// certain: that type's method is the code that runs.
				fn = c.certain.concrete[sel.Sel]
			}
			if fn != nil && fn.Pkg() != nil && fn.Pkg() != c.a.pass.Pkg &&
				!match.IsStd(fn.Pkg().Path()) && !match.IsAssertion(fn.Pkg().Path(), fn.Name()) {
				if c.foreign == "" {
					c.foreign = c.at(match.PkgFuncName(fn), n)
				}
				if why := c.outsideClock(fn); why != "" {
					c.outsideRoots[root] = true
					if c.outside == "" {
						c.outside = fmt.Sprintf("the code under test in %s (%s%s) is not read for the clock hazards", fn.Pkg().Path(), c.at(match.PkgFuncName(fn), n), why)
					}
				}
				// Handed a reading, it takes one as much (handed.go).
				c.handedReadings(n, fn, root)
			}
			if test && c.zero == "" && !match.IsStd(calleePath(info, n)) && !match.IsConversion(info, n) {
				for _, arg := range n.Args {
					if zeroDuration(info, arg) {
						c.zero = c.at(types.ExprString(arg)+" given to "+types.ExprString(n.Fun), arg)
						break
					}
				}
			}
		case *ast.KeyValueExpr:
			if test && c.zero == "" && zeroDuration(info, n.Value) && len(stack) > 0 {
				if lit, ok := stack[len(stack)-1].(*ast.CompositeLit); ok && !stdType(info.TypeOf(lit)) {
					c.zero = c.at(types.ExprString(n.Key)+": "+types.ExprString(n.Value), n)
				}
			}
		case *ast.BinaryExpr:
			c.decision = ""
			c.binary(n)
			c.decided(root, test)
			if !test && c.againstMaybeZero(n) {
				c.comparing[root] = true
			}
			if !test && arith(n.Op) && (c.elapsed(n.X) || c.elapsed(n.Y)) {
				c.computing[root] = true
				if c.compute == "" {
					c.compute = c.at(types.ExprString(n), n)
				}
			}
		case *ast.IndexExpr:
			if c.key == "" && isMap(info.TypeOf(n.X)) && c.identity(n.Index) {
				c.key = c.at(types.ExprString(n), n)
			}
		case *ast.SelectStmt:
			if c.poll == "" && nonBlocking(n) {
				c.poll = c.at("a select with a default case", n)
			}
		case *ast.ForStmt:
			if c.poll == "" && n.Cond != nil && c.clockCond(n.Cond) && !mayBlock(info, n.Body) {
				c.poll = c.at("a loop on "+types.ExprString(n.Cond)+" that never blocks", n)
			}
		case *ast.Ident:
			if c.fixed == "" {
				if v, ok := info.Uses[n].(*types.Var); ok && match.IsPackageLevel(v) && v.Pkg() == c.a.pass.Pkg {
					if at := c.fixedInit(v); at != "" && (len(stack) == 0 || c.meets(n, stack)) {
						c.fixed = at
					}
				}
			}
		}
		return true
	})
}

// fixedInit names the fixed date a package-level variable v is
// initialised with (var rotatedAt = time.Date(2024, ...)), or "".
func (c *clockScan) fixedInit(v *types.Var) string {
	for _, f := range c.a.pass.Files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, sp := range gd.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if c.a.info.Defs[id] != v || i >= len(vs.Values) {
						continue
					}
					found := ""
					ast.Inspect(vs.Values[i], func(n ast.Node) bool {
						call, ok := n.(*ast.CallExpr)
						if !ok || found != "" {
							return found == ""
						}
						switch {
						case match.IsPkgFunc(c.a.info, call, "time", "Date", "Unix", "UnixMilli", "UnixMicro") && len(call.Args) > 0 && c.a.info.Types[call.Args[0]].Value != nil,
							match.IsPkgFunc(c.a.info, call, "time", "Parse", "ParseInLocation") && len(call.Args) > 1 && c.a.info.Types[call.Args[1]].Value != nil:
							found = c.at(types.ExprString(call.Fun)+" in the package-level "+v.Name(), call)
						}
						return found == ""
					})
					return found
				}
			}
		}
	}
	return ""
}

// identity reports whether e is a reading of the clock made into an
// identity: the reading itself, its Unix*, String or Format, or a
// fmt.Sprint* of one (a key, a file name).
func (c *clockScan) identity(e ast.Expr) bool {
	if c.reading(e) {
		return true
	}
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	if tv, ok := c.a.info.Types[call.Fun]; ok && tv.IsType() && len(call.Args) == 1 {
		return c.identity(call.Args[0]) // a conversion: string(...), uint64(...)
	}
	if match.IsPkgFunc(c.a.info, call, "fmt", "Sprint", "Sprintf", "Sprintln") || match.IsPkgFunc(c.a.info, call, "strconv", "FormatInt", "Itoa") {
		for _, a := range call.Args {
			if c.identity(a) {
				return true
			}
		}
		return false
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	return ok && match.IsMethod(c.a.info, call, "time", "Unix", "UnixNano", "UnixMilli", "UnixMicro", "String", "Format") && c.reading(sel.X)
}

// clockCond reports whether a loop's condition reads the clock: elapsed
// time compared, or time.Now() against a deadline.
func (c *clockScan) clockCond(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && (readsClock(c.a.info, call) || match.IsMethod(c.a.info, call, "context", "Err")) {
			found = true
		}
		return !found
	})
	return found
}

// nonBlocking reports whether s is a select with a default case: a
// check of its channels (a Done, a timer) that never waits.
func nonBlocking(s *ast.SelectStmt) bool {
	for _, cl := range s.Body.List {
		if cc, ok := cl.(*ast.CommClause); ok && cc.Comm == nil {
			return true
		}
	}
	return false
}

// mayBlock reports whether body may block: a channel operation, a
// select, a sleep, a lock or a wait in it. Calls are not followed: a loop
// that only calls code is taken not to block, which can only make a wrap
// unproven.
func mayBlock(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SendStmt, *ast.SelectStmt:
			found = true
		case *ast.UnaryExpr:
			found = found || n.Op == token.ARROW
		case *ast.CallExpr:
			if match.IsPkgFunc(info, n, "time", "Sleep", "After") || match.IsMethod(info, n, "sync", "Wait", "Lock", "RLock") {
				found = true
			}
		}
		return !found
	})
	return found
}

// isMap reports whether t is a map type (a sync.Map's Store takes any).
func isMap(t types.Type) bool {
	if t == nil {
		return false
	}
	_, ok := t.Underlying().(*types.Map)
	return ok
}

// call records a fixed date, a reading of the clock, and a decision with
// Time's After, Before, Compare or Equal.
func (c *clockScan) call(call *ast.CallExpr, stack []ast.Node) {
	info := c.a.info
	switch {
	case readsClock(info, call):
		if c.now == "" {
			c.now = c.at(types.ExprString(call.Fun), call)
		}
	case match.IsPkgFunc(info, call, "time", "Date", "Unix", "UnixMilli", "UnixMicro"):
		if c.fixed == "" && len(call.Args) > 0 && info.Types[call.Args[0]].Value != nil && c.meets(call, stack) {
			c.fixed = c.at(types.ExprString(call.Fun), call)
		}
	case match.IsPkgFunc(info, call, "time", "Parse", "ParseInLocation"):
		if c.fixed == "" && len(call.Args) > 1 && info.Types[call.Args[1]].Value != nil && c.meets(call, stack) {
			c.fixed = c.at(types.ExprString(call.Fun), call)
		}
	case match.IsMethod(info, call, "time", "Year", "Month", "Day", "YearDay", "ISOWeek", "Unix", "UnixMilli", "UnixMicro", "UnixNano"):
		if c.fixed == "" {
			if k := calendarBound(info, call, stack); k != "" {
				c.fixed = c.at(types.ExprString(call)+" compared with "+k, call)
			}
		}
	case match.IsMethod(info, call, "context", "Err"):
		// In a loop that never blocks (a CPU-bound search checking
		// between steps): a one-shot check, or one in a loop that
		// waits, sees the deadline as it would.
		for i := len(stack) - 1; i >= 0 && c.poll == ""; i-- {
			var body *ast.BlockStmt
			switch l := stack[i].(type) {
			case *ast.ForStmt:
				body = l.Body
			case *ast.RangeStmt:
				body = l.Body
			case *ast.FuncLit, *ast.FuncDecl:
				i = -1
				continue
			default:
				continue
			}
			if !mayBlock(info, body) {
				c.poll = c.at(types.ExprString(call)+" in a loop that never blocks", call)
			}
			break
		}
	case match.IsPkgFunc(info, call, "context", "WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause"):
		if c.timeout == "" {
			c.timeout = c.at(types.ExprString(call.Fun), call)
		}
	case match.IsMethod(info, call, "sync", "Store", "LoadOrStore", "Swap") && len(call.Args) > 0:
		if c.key == "" && c.identity(call.Args[0]) {
			c.key = c.at(types.ExprString(call), call)
		}
	case match.IsMethod(info, call, "time", "After", "Before", "Compare", "Equal"):
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok || !match.IsNamed(info.TypeOf(sel.X), "time", "Time") {
			return
		}
		if c.decides == "" {
			c.decides = c.at("Time."+sel.Sel.Name, call)
		}
		if sel.Sel.Name != "Equal" {
			c.decision = c.at(types.ExprString(call), call)
		}
		if c.twoReadings(call) {
			c.orderAt(call, sel.X, call.Args[0])
		}
	}
}

// meets reports whether the fixed date made by call (enclosed by stack)
// may meet the clock: through Add, AddDate, In, UTC or a parse's first
// result, it is compared (After, Before, Equal, Compare, Sub, time.Since,
// time.Until), handed to the code under test, or stored in a struct field
// or a variable that is. A date only formatted (time.Date(0, 1, 1, h, m,
// 0, 0, time.UTC).Format("15:04")) meets no clock.
func (c *clockScan) meets(e ast.Node, stack []ast.Node) bool {
	info := c.a.info
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr:
			e = p
			continue
		case *ast.SelectorExpr:
			// x.M: a method of the date; the call above says which.
			if p.X != e || i == 0 {
				return false
			}
			up, ok := stack[i-1].(*ast.CallExpr)
			if !ok || up.Fun != ast.Expr(p) {
				return false
			}
			switch p.Sel.Name {
			case "Add", "AddDate", "In", "UTC", "Local", "Truncate", "Round":
				e, i = up, i-1
				continue
			case "After", "Before", "Equal", "Compare", "Sub":
				return true
			}
			return false
		case *ast.CallExpr:
			if p.Fun == e {
				return false
			}
			if match.IsPkgFunc(info, p, "time", "Since", "Until") || !match.IsStd(calleePath(info, p)) && !match.IsConversion(info, p) {
				return true
			}
			return match.IsMethod(info, p, "time", "After", "Before", "Equal", "Compare", "Sub")
		case *ast.KeyValueExpr:
			return p.Value == e // a field of a struct: the code reads it
		case *ast.CompositeLit:
			return true
		case *ast.AssignStmt, *ast.ValueSpec:
			var lhs []ast.Expr
			var rhs []ast.Expr
			if as, ok := p.(*ast.AssignStmt); ok {
				lhs, rhs = as.Lhs, as.Rhs
			} else {
				vs := p.(*ast.ValueSpec)
				for _, id := range vs.Names {
					lhs = append(lhs, id)
				}
				rhs = vs.Values
			}
			for j, r := range rhs {
				if r != e || j >= len(lhs) {
					continue
				}
				if _, ok := ast.Unparen(lhs[j]).(*ast.SelectorExpr); ok {
					return true // a field
				}
				if obj := c.objOf(lhs[j]); obj != nil {
					return c.usedMeeting(obj)
				}
			}
			// x, err := time.Parse(...): the date is the first result.
			if len(rhs) == 1 && rhs[0] == e && len(lhs) > 1 {
				if obj := c.objOf(lhs[0]); obj != nil {
					return c.usedMeeting(obj)
				}
			}
			return false
		case *ast.ReturnStmt:
			return true // a helper's result: where it goes is not followed
		}
		return false
	}
	return false
}

// usedMeeting reports whether a use of the variable obj in the roots
// meets the clock (meets).
func (c *clockScan) usedMeeting(obj types.Object) bool {
	found := false
	for _, r := range c.rootList {
		c.inspect(r, func(n ast.Node, stack []ast.Node) bool {
			if found {
				return false
			}
			id, ok := n.(*ast.Ident)
			if !ok || c.a.info.Uses[id] != obj || c.visiting[obj] {
				return true
			}
			c.visiting[obj] = true
			found = c.meets(id, stack)
			c.visiting[obj] = false
			return !found
		})
	}
	return found
}

// orderAt records n, comparing the readings x and y: as storedOrder
// when either is stored, else as order.
func (c *clockScan) orderAt(n ast.Node, x, y ast.Expr) {
	if c.storedReading(x) || c.storedReading(y) {
		if c.storedOrder == "" {
			c.storedOrder = c.at(types.ExprString(n.(ast.Expr)), n)
		}
		return
	}
	if c.order == "" {
		c.order = c.at(types.ExprString(n.(ast.Expr)), n)
	}
}

// twoReadings reports whether the method call x.M(y) compares two
// readings of the clock.
func (c *clockScan) twoReadings(call *ast.CallExpr) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	return ok && len(call.Args) == 1 && c.reading(sel.X) && c.reading(call.Args[0])
}

// binary records a comparison of elapsed time: with zero (time.Since(x) >
// 0 holds only if time passed), or with anything (a decision at a
// deadline).
func (c *clockScan) binary(b *ast.BinaryExpr) {
	switch b.Op {
	case token.LSS, token.LEQ, token.GTR, token.GEQ, token.EQL, token.NEQ:
	default:
		return
	}
	info := c.a.info
	for _, side := range [][2]ast.Expr{{b.X, b.Y}, {b.Y, b.X}} {
		x, y := side[0], side[1]
		switch {
		case c.elapsed(x):
			if c.decides == "" && b.Op != token.EQL && b.Op != token.NEQ {
				c.decides = c.at(types.ExprString(b), b)
			}
			if b.Op != token.EQL && b.Op != token.NEQ {
				c.decision = c.at(types.ExprString(b), b)
			}
			// a.Sub(b) < 0 of two stored readings: their order (with
			// a duration, a.Sub(b) >= cooldown is a deadline).
			if v, ok := match.ConstInt(info, y); !ok || v != 0 {
				return
			}
			if call, ok := ast.Unparen(x).(*ast.CallExpr); ok && match.IsMethod(info, call, "time", "Sub") {
				if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && len(call.Args) == 1 && c.reading(sel.X) && c.reading(call.Args[0]) && (c.storedReading(sel.X) || c.storedReading(call.Args[0])) {
					c.orderAt(b, sel.X, call.Args[0])
					return
				}
			}
			if v, ok := match.ConstInt(info, y); ok && v == 0 && c.order == "" {
				c.order = c.at(types.ExprString(b), b)
			}
			return
		case c.numeric(x):
			// A reading or elapsed time made a number: the same
			// decisions as with the time values.
			if c.decides == "" && b.Op != token.EQL && b.Op != token.NEQ {
				c.decides = c.at(types.ExprString(b), b)
			}
			if b.Op != token.EQL && b.Op != token.NEQ {
				c.decision = c.at(types.ExprString(b), b)
			}
			c.numericOrigin(b, x, y)
			if v, ok := match.ConstInt(info, y); ok && v == 0 && c.order == "" {
				c.order = c.at(types.ExprString(b), b)
			}
			if (b.Op == token.EQL || b.Op == token.NEQ) && c.numeric(y) && c.order == "" {
				c.order = c.at(types.ExprString(b), b)
			}
			// a.UnixNano() < b.UnixNano() of two stored readings.
			if ux, uy := c.unixOf(x), c.unixOf(y); ux != nil && uy != nil && (c.storedReading(ux) || c.storedReading(uy)) {
				c.orderAt(b, ux, uy)
			}
			return
		case (b.Op == token.EQL || b.Op == token.NEQ) && c.reading(x) && c.reading(y):
			c.orderAt(b, x, y)
			return
		}
	}
}

// numeric reports whether e is a reading of the clock or a measure of
// elapsed time made a number: now.UnixNano() (Unix, UnixMilli,
// UnixMicro), int64(time.Since(t)) or float64 of one, el.Seconds()
// (Milliseconds, ...), a sum or difference with one (now+ttl), or a
// variable or field set to one. Two such numbers compare as the times
// do: equal in a bubble where no time passes.
func (c *clockScan) numeric(e ast.Expr) bool {
	info := c.a.info
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident, *ast.SelectorExpr:
		if obj := c.objOf(e); obj != nil && c.nums[obj] {
			return true
		}
	case *ast.BinaryExpr:
		return (e.Op == token.ADD || e.Op == token.SUB) && (c.numeric(e.X) || c.numeric(e.Y))
	case *ast.CallExpr:
		if match.IsConversion(info, e) && len(e.Args) == 1 {
			return c.elapsed(e.Args[0]) || c.numeric(e.Args[0])
		}
		sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr)
		if !ok {
			return false
		}
		switch {
		case match.IsMethod(info, e, "time", "Unix", "UnixNano", "UnixMilli", "UnixMicro") && match.IsNamed(info.TypeOf(sel.X), "time", "Time"):
			return c.reading(sel.X)
		case match.IsMethod(info, e, "time", "Seconds", "Milliseconds", "Microseconds", "Nanoseconds", "Minutes", "Hours") && match.IsNamed(info.TypeOf(sel.X), "time", "Duration"):
			return c.elapsed(sel.X)
		}
	}
	return false
}

// unixOf is the reading e makes a number (x of x.UnixNano()), or nil.
func (c *clockScan) unixOf(e ast.Expr) ast.Expr {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || !match.IsMethod(c.a.info, call, "time", "Unix", "UnixNano", "UnixMilli", "UnixMicro") {
		return nil
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || !c.reading(sel.X) {
		return nil
	}
	return sel.X
}

// elapsed reports whether e is a measure of elapsed time: time.Since(x),
// time.Until(x) or a.Sub(b), or a variable or field set to one.
func (c *clockScan) elapsed(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		obj := c.objOf(e)
		return obj != nil && c.spans[obj]
	}
	return match.IsPkgFunc(c.a.info, call, "time", "Since", "Until") || match.IsMethod(c.a.info, call, "time", "Sub")
}

// backToBack returns where the test checks the result of a call into the
// package's code that computes from elapsed time with no wait since the
// previous call that reads the clock (the second of two Allow calls, or
// one in a loop that does not wait), or "": a check made only after a
// wait sees the elapsed time the wait made, in the bubble as in real
// time. With effects, any such call counts, its result checked or not:
// what it decides may be kept and checked later (a burst of alerts of
// which a deduper with a window a bug leaves 0 lets one through in the
// bubble and all in real time, counted after a sleep: red team batch 15,
// alertdedupe).
func (c *clockScan) backToBack(t *Target, set map[ast.Node]bool, outside, effects bool) string {
	info := c.a.info
	body := &ast.BlockStmt{List: t.body.List[t.lead:]}
	// A helper of the test file counts as well where it reaches that
	// code: lockOut(t, g, "ann", 3), three logins, then a fourth right
	// after it (red team batch 16, loginlockout).
	mine := func(call *ast.CallExpr) bool {
		fn := match.Callee(info, call)
		return fn != nil && fn.Pkg() == c.a.pass.Pkg
	}
	// A wait separates two calls only where it surely lets time pass:
	// a sleep of a constant of a millisecond or more. One of a duration
	// a table row may make 0 (time.Sleep(tc.gap)) or of nanoseconds
	// lets none, or too little for a bug's window cut to nanoseconds
	// (red team batch 16, repeatgap).
	direct := func(n ast.Node, scope ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return false
		}
		if match.IsPkgFunc(info, call, "testing/synctest", "Wait") {
			return true
		}
		return match.IsPkgFunc(info, call, "time", "Sleep", "After") && len(call.Args) == 1 && c.surelyWaits(call.Args[0], scope)
	}
	// A subtest's waits may name a variable its enclosing test sets
	// (every := 100 * time.Millisecond before t.Run).
	var scope ast.Node = t.body
	for _, d := range t.file.Decls {
		if d.Pos() <= t.body.Pos() && t.body.End() <= d.End() {
			scope = d
		}
	}
	// A helper that sleeps (waitInterval(t, l)) waits as well.
	sleeping := map[ast.Node]bool{}
	for _, d := range c.a.decls {
		if d.Body == nil {
			continue
		}
		ast.Inspect(d.Body, func(n ast.Node) bool {
			if direct(n, d.Body) {
				sleeping[d.Body] = true
			}
			return !sleeping[d.Body]
		})
	}
	wait := func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		return ok && (direct(call, scope) || c.reaches(call, sleeping))
	}
	checked := func(call *ast.CallExpr, stack []ast.Node) bool {
		for i := len(stack) - 1; i >= 0; i-- {
			switch p := stack[i].(type) {
			case *ast.IfStmt:
				// The stack holds call's ancestors, not call: in
				// if b.Allow() { the call is the condition itself.
				var next ast.Node = call
				if i+1 < len(stack) {
					next = stack[i+1]
				}
				return next == p.Cond || next == p.Init
			case *ast.CallExpr:
				if fn := match.Callee(info, p); fn != nil && fn.Pkg() != nil && (match.IsAssertion(fn.Pkg().Path(), fn.Name()) || fn.Pkg().Path() == "testing") {
					return true
				}
			case ast.Stmt:
				// if n := tm.Ticks(d); n != 0: the init's result is checked.
				if ifs, ok := stack[max(i-1, 0)].(*ast.IfStmt); i > 0 && ok && ifs.Init == p {
					return true
				}
				return false
			case *ast.FuncLit:
				return false
			}
		}
		return false
	}
	prev, found := "", ""
	c.inspect(body, func(n ast.Node, stack []ast.Node) bool {
		if found != "" {
			return false
		}
		if wait(n) {
			prev = ""
			return true
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		// A call into code of another package that may read the clock
		// (outside is set) counts as reaching it: that code is
		// not read, so it may compute from elapsed time.
		direct := outside && c.outsideCall(call)
		// A call handed a reading the test made (AllowAt(client,
		// time.Now()), the shape of x/time/rate's AllowN) reads the
		// clock as much as code that calls time.Now itself: the
		// reading is taken right before it, after the previous call's
		// work in real time and at the same instant in a bubble (red
		// team batch 17, allowat).
		clocked := c.reaches(call, c.clocked) || c.a.handsReading(call)
		if !direct && (!mine(call) || !(clocked || outside && c.reaches(call, set))) {
			return true
		}
		here := c.at(types.ExprString(call), call)
		if (effects || checked(call, stack)) && (direct || c.reaches(call, set)) {
			again := prev
			if again == "" {
				// In a loop that does not wait: the call follows itself.
				for i := len(stack) - 1; i >= 0 && again == ""; i-- {
					var lb *ast.BlockStmt
					switch l := stack[i].(type) {
					case *ast.ForStmt:
						lb = l.Body
					case *ast.RangeStmt:
						lb = l.Body
					case *ast.FuncLit:
						i = -1
						continue
					default:
						continue
					}
					waits := false
					ast.Inspect(lb, func(m ast.Node) bool {
						waits = waits || wait(m)
						return !waits
					})
					if !waits {
						again = "itself, in a loop with no wait of a constant millisecond or more"
					}
					break
				}
			}
			if again != "" {
				found = here + " right after " + again
			}
		}
		prev = here
		return true
	})
	return found
}

// surelyWaits reports whether a wait of e surely lets a millisecond or
// more pass: a constant, or a variable of scope set once to one (the
// steps a loop's waits are made of: steps.go), or a sum with such a
// term (tc.per + 20*time.Millisecond).
func (c *clockScan) surelyWaits(e ast.Expr, scope ast.Node) bool {
	if b, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && b.Op == token.ADD {
		return c.surelyWaits(b.X, scope) || c.surelyWaits(b.Y, scope)
	}
	steps := c.stepsOf(e, scope, map[types.Object]bool{})
	for _, s := range steps {
		if !s.known || s.d < time.Millisecond {
			return false
		}
	}
	return len(steps) > 0
}

// outsideCall reports whether call calls a function of another
// non-standard package that may read the clock (outsideClock), which the
// analysis does not read.
func (c *clockScan) outsideCall(call *ast.CallExpr) bool {
	fn := match.Callee(c.a.info, call)
	return fn != nil && fn.Pkg() != nil && fn.Pkg() != c.a.pass.Pkg && !match.IsStd(fn.Pkg().Path()) &&
		!match.IsAssertion(fn.Pkg().Path(), fn.Name()) && (c.outsideClock(fn) != "" || c.handsOut(call))
}

// outsideClock says how fn, a function of another non-standard package,
// may read the clock, as words that follow its name (", which reads the
// clock (cache.go:30)", " → ttl.load, which reads ..."), or is "": its
// effect summary shows a reading (time.Now, Since, Until) in it or a
// function it calls, or it is unknown or calls what the summary could
// not follow, in a package that may read the clock (clockPkg).
func (c *clockScan) outsideClock(fn *types.Func) string {
	name := match.PkgFuncName(fn)
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		// Through an interface: what the methods that may run do.
		impls, _ := effects.Implementations(c.a.pass.Effects, fn)
		if impls == nil {
			if !c.clockPkg(fn.Pkg()) {
				return ""
			}
			return ", whose implementations the analysis cannot see, in a package that uses the time package"
		}
		for _, m := range impls {
			if why := c.outsideClock(m); why != "" {
				return " → " + match.PkgFuncName(m) + why
			}
		}
		return ""
	}
	s := c.a.pass.Effects.Of(fn)
	switch {
	case s != nil && s.Clock != nil:
		return strings.TrimPrefix(s.Clock.Why(), name)
	case !c.clockPkg(fn.Pkg()):
		return ""
	case s == nil:
		return ", whose code the analysis cannot see, in a package that uses the time package"
	case s.Opaque != "":
		return ", which " + s.Opaque + ", in a package that uses the time package"
	}
	return ""
}

// clockPkg reports whether code of pkg, a package the analysis does not
// read, may read the clock: it or a non-standard package it imports
// (transitively) imports time. The hazards are looked for in syntax,
// and only this package's is at hand; a package that never names the
// time package cannot compare a reading with a deadline or a date of its
// own.
func (c *clockScan) clockPkg(pkg *types.Package) bool {
	if v, ok := c.clockPkgs[pkg]; ok {
		return v
	}
	c.clockPkgs[pkg] = false // a cycle (export data) ends here
	v := false
	for _, imp := range pkg.Imports() {
		if imp.Path() == "time" || (!match.IsStd(imp.Path()) && c.clockPkg(imp)) {
			v = true
			break
		}
	}
	c.clockPkgs[pkg] = v
	return v
}

// computed records a call that computes from elapsed time: a conversion
// of it (float64(el)), a method of it other than a comparison or a
// formatting (el.Seconds(), el.Round(d)), or a function of the package or
// of math given it (refill(el, every), math.Ceil). Comparisons are the
// other hazards' (binary); arithmetic is scan's.
func (c *clockScan) computed(call *ast.CallExpr) bool {
	info := c.a.info
	record := func() bool {
		if c.compute == "" {
			c.compute = c.at(types.ExprString(call), call)
		}
		return true
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && c.elapsed(sel.X) && match.IsNamed(info.TypeOf(sel.X), "time", "Duration") {
		return sel.Sel.Name != "String" && record()
	}
	mine := match.IsConversion(info, call)
	if fn := match.Callee(info, call); fn != nil && fn.Pkg() != nil && (fn.Pkg() == c.a.pass.Pkg || fn.Pkg().Path() == "math") {
		mine = true
	}
	if !mine {
		return false
	}
	for _, arg := range call.Args {
		if c.elapsed(arg) {
			return record()
		}
	}
	return false
}

// reaches reports whether call, through the package's functions it
// calls (their closures and goroutines too), reaches a root of set.
func (c *clockScan) reaches(call *ast.CallExpr, set map[ast.Node]bool) bool {
	seen := map[*ast.FuncDecl]bool{}
	var from func(call *ast.CallExpr) bool
	from = func(call *ast.CallExpr) bool {
		fn := match.Callee(c.a.info, call)
		if fn == nil {
			return false
		}
		d := c.a.decls[fn.Origin()]
		if d == nil || d.Body == nil || seen[d] {
			return false
		}
		seen[d] = true
		if set[d.Body] {
			return true
		}
		found := false
		ast.Inspect(d.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && !found {
				found = from(call)
			}
			return !found
		})
		return found
	}
	return from(call)
}

// arith reports whether op computes a number from its operands.
func arith(op token.Token) bool {
	switch op {
	case token.ADD, token.SUB, token.MUL, token.QUO, token.REM, token.SHL, token.SHR:
		return true
	}
	return false
}

// deadline returns where the test's waits end exactly on a duration it
// gave the code under test, or "": a wait, after the call that hands it
// over, of the very variable handed over, or a run of consecutive waits
// (a counted loop's unrolled, sums.go) from any wait after that call on,
// whose constant durations add up to a constant one handed over (the
// code may restart its deadline at any later call: a touch, a reset).
// sums names, when the code the duration is handed to is the package's
// own and waits itself (its backoffs, its timers), a duration handed over
// that the code's waits, after a run of the test's, may add up to: any,
// for a wait whose duration is not a constant.
func (c *clockScan) deadline(t *Target) (where, unseen, sums string) {
	info := c.a.info
	type config struct {
		obj  *types.Var
		d    time.Duration
		pos  token.Pos
		what string
		// unseen names the code the duration is handed to when it is
		// not the package's own: the analysis does not read how it
		// decides.
		unseen string
	}
	var configs []config
	add := func(e ast.Expr, where ast.Node, to, unseen string) {
		tv := info.Types[e]
		if tv.Type == nil || !match.IsNamed(tv.Type, "time", "Duration") {
			return
		}
		cf := config{pos: where.Pos(), what: c.at(types.ExprString(e)+" given to "+to, where), unseen: unseen}
		// A variable is followed by identity; a constant (time.Second,
		// a named one) by its value, as the waits add up.
		if v, ok := c.objOf(e).(*types.Var); ok {
			cf.obj = v
		}
		if d, ok := match.ConstDuration(info, e); ok {
			cf.d = d
		}
		if cf.obj != nil || cf.d > 0 {
			configs = append(configs, cf)
		}
	}
	c.inspect(&ast.BlockStmt{List: t.body.List[t.lead:]}, func(n ast.Node, stack []ast.Node) bool {
		switch n := n.(type) {
		case *ast.ExprStmt:
			if call, _ := Wait(info, n); call != nil {
				return false
			}
		case *ast.CallExpr:
			if match.IsStd(calleePath(info, n)) || match.IsConversion(info, n) {
				return true
			}
			unseen := types.ExprString(n.Fun)
			if fn := match.Callee(info, n); fn != nil && fn.Pkg() == c.a.pass.Pkg {
				unseen = ""
			}
			for _, arg := range n.Args {
				add(arg, n, types.ExprString(n.Fun), unseen)
			}
		case *ast.KeyValueExpr:
			if len(stack) > 0 {
				if lit, ok := stack[len(stack)-1].(*ast.CompositeLit); ok && !stdType(info.TypeOf(lit)) {
					unseen := types.ExprString(lit.Type)
					if named := firstNamed(info.TypeOf(lit)); named != nil && named.Obj().Pkg() == c.a.pass.Pkg {
						unseen = ""
					}
					add(n.Value, n, types.ExprString(lit.Type), unseen)
				}
			}
		}
		return true
	})
	seq := c.waitSeq(&ast.BlockStmt{List: t.body.List[t.lead:]})
	for _, cf := range configs {
		from := len(seq)
		for i, w := range seq {
			if w.at < cf.pos {
				continue
			}
			from = min(from, i)
			if cf.obj != nil && w.obj == cf.obj && (i == from || w.restart) {
				// A wait of the very variable handed over, right after
				// the call or after a later call of the code, which may
				// set the deadline again.
				return cf.what + ", then " + c.at(types.ExprString(w.stmt.X), w.stmt), cf.unseen, ""
			}
		}
		// A run of waits from the call, or from a later call of the code
		// (a touch, a reset) that may set the deadline again.
		var start, end *ast.ExprStmt
		n := 0
		if cf.d > 0 && runSums(seq, from, true, func(i, j int, sum time.Duration) bool {
			start, end, n = seq[i].stmt, seq[j].stmt, j-i+1
			if 2*sum == cf.d && cf.unseen == "" && c.early == "" && !waitNext(info, t.body, seq[j].stmt) && !c.overshotRun(t, seq[i:j+1]) {
				// Half of it: where a bug's halved period ends, and
				// the test checks "not yet".
				c.early = fmt.Sprintf("%s, then %s, %v: half of it", cf.what, c.at(types.ExprString(end.X), end), sum)
			}
			return sum == cf.d
		}) {
			run := ""
			if n > 1 {
				run = fmt.Sprintf(" (a run of %d waits from %s that adds up to it)", n, c.at(types.ExprString(start.X), start))
			}
			return cf.what + ", then " + c.at(types.ExprString(end.X), end) + run, cf.unseen, ""
		}
	}
	// The code's own waits (its backoffs, its timers) run on the same
	// exact clock: runs of them, after a run of the test's, may end
	// exactly on a duration the test handed over. A wait whose duration
	// is not a constant may add up to any.
	consts, first, unknown := c.codeWaits()
	if first == "" {
		return "", "", ""
	}
	var testSums []time.Duration
	runSums(seq, 0, false, func(_, _ int, sum time.Duration) bool {
		testSums = append(testSums, sum)
		return len(testSums) > maxUnrolled
	})
	for _, cf := range configs {
		if cf.unseen != "" {
			continue // what the code it is handed to waits is not read here
		}
		switch {
		case unknown != "" && (cf.d > 0 || cf.obj != nil):
			return "", "", fmt.Sprintf("%s; the code waits %s, a duration not a constant, so its waits may add up to it", cf.what, unknown)
		case cf.d > 0 && sumOf(cf.d, consts):
			return "", "", fmt.Sprintf("%s; the code's own waits (%s) add up to it", cf.what, first)
		case cf.d > 0:
			for _, s := range testSums {
				if s < cf.d && sumOf(cf.d-s, consts) {
					return "", "", fmt.Sprintf("%s; the test's waits and the code's own (%s) add up to it", cf.what, first)
				}
			}
		}
	}
	return "", "", ""
}

// ownDeadline returns where the test's sleeps add up exactly to a
// duration of the code under test's own, or "": a default, a constant,
// a field its constructor sets (any constant duration in the package's
// non-test files), or a package-level variable of those files slept on
// directly. The code sets such a deadline itself, at a call the test
// makes anywhere before, so every run of consecutive waits (a counted
// loop's unrolled) is summed, from each wait on.
func (c *clockScan) ownDeadline(t *Target) string {
	info := c.a.info
	type own struct {
		d    time.Duration
		what string
	}
	var owns []own
	for _, f := range c.a.pass.AllFiles {
		if c.a.testCode(f) {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if !ok {
				return true
			}
			tv := info.Types[e]
			if tv.Value == nil || tv.Type == nil || !match.IsNamed(tv.Type, "time", "Duration") {
				return true
			}
			// The whole constant, not its parts: 100 * time.Millisecond
			// is 100ms, not also 1ms.
			if d, ok := match.ConstDuration(info, e); ok && d > 0 {
				owns = append(owns, own{d, c.at(types.ExprString(e), e)})
			}
			return false
		})
	}
	ownVar := func(e ast.Expr) bool {
		v, ok := c.objOf(e).(*types.Var)
		return ok && match.IsPackageLevel(v) && v.Pkg() == c.a.pass.Pkg && !strings.HasSuffix(c.a.pass.Fset.Position(v.Pos()).Filename, "_test.go")
	}
	seq := c.waitSeq(&ast.BlockStmt{List: t.body.List[t.lead:]})
	for _, w := range seq {
		call, _ := Wait(info, w.stmt)
		if arg := call.Args[0]; ownVar(arg) {
			v := c.objOf(arg)
			p := c.a.pass.Fset.Position(v.Pos())
			return fmt.Sprintf("%s, a variable of the code's own at %s:%d; the test sleeps on it at %s", v.Name(), filepath.Base(p.Filename), p.Line, c.at(types.ExprString(w.stmt.X), w.stmt))
		}
	}
	found := ""
	runSums(seq, 0, false, func(i, j int, sum time.Duration) bool {
		for _, o := range owns {
			// Half and twice the code's own too: a bug's halved or
			// doubled period ends there (a constant of the code's is
			// often a small unit, so not every multiple).
			if o.d == 2*sum && c.early == "" && !waitNext(info, t.body, seq[j].stmt) && !c.overshotRun(t, seq[i:j+1]) {
				c.early = fmt.Sprintf("%s, %v; the test reaches %v, half of it, at %s", o.what, o.d, sum, c.at(types.ExprString(seq[j].stmt.X), seq[j].stmt))
			}
			if o.d == sum {
				found = fmt.Sprintf("%v, %s; the test reaches it at %s", o.d, o.what, c.at(types.ExprString(seq[j].stmt.X), seq[j].stmt))
				return true
			}
		}
		return false
	})
	return found
}

// testCode reports whether n is in a _test.go file.
func (a *Analysis) testCode(n ast.Node) bool {
	return strings.HasSuffix(a.pass.Fset.Position(n.Pos()).Filename, "_test.go")
}

// zeroDuration reports whether e is a constant time.Duration of 0.
func zeroDuration(info *types.Info, e ast.Expr) bool {
	tv := info.Types[e]
	if tv.Value == nil || tv.Type == nil || !match.IsNamed(tv.Type, "time", "Duration") {
		return false
	}
	v, ok := match.ConstInt(info, e)
	return ok && v == 0
}

// calleePath is the import path of call's function's package, "" for a
// function value or a builtin (which count as standard: no code under
// test).
func calleePath(info *types.Info, call *ast.CallExpr) string {
	fn := match.Callee(info, call)
	if fn == nil || fn.Pkg() == nil {
		if _, ok := ast.Unparen(call.Fun).(*ast.FuncLit); ok {
			return ""
		}
		if tv, ok := info.Types[call.Fun]; ok && tv.IsBuiltin() {
			return ""
		}
		return "example.com/unknown" // a function value: it may be the code under test
	}
	return fn.Pkg().Path()
}

// stdType reports whether t is a type of the standard library (or not a
// named type).
func stdType(t types.Type) bool {
	if t == nil {
		return true
	}
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return true
	}
	return match.IsStd(n.Obj().Pkg().Path())
}

// waitNext reports whether the statement after stmt in its block is a
// wait too: the test checks nothing at the instant stmt's wait ends, so
// a period that ends there is passed, not checked.
func waitNext(info *types.Info, body *ast.BlockStmt, stmt *ast.ExprStmt) bool {
	next := false
	ast.Inspect(body, func(n ast.Node) bool {
		b, ok := n.(*ast.BlockStmt)
		if !ok {
			return true
		}
		for i, st := range b.List {
			if st == ast.Stmt(stmt) && i+1 < len(b.List) {
				if es, ok := b.List[i+1].(*ast.ExprStmt); ok {
					if call, _ := Wait(info, es); call != nil {
						next = true
					}
				}
			}
		}
		return true
	})
	return next
}

// calendarBound returns the constant a calendar field or Unix count of a
// time is compared with (now.Year() < 2020, t.Unix() > 1700000000), or
// "": a date written as a number. A synctest bubble's clock reads
// 2000-01-01 UTC, so the comparison flips where a real reading passes it
// (a clock-sanity check refusing to sign "until the clock is set"). A
// Unix count compared with a value at or before 2000 (t.Unix() > 0, "is
// it set") reads the same in a bubble and is not one.
func calendarBound(info *types.Info, call *ast.CallExpr, stack []ast.Node) string {
	var e ast.Node = call
	i := len(stack) - 1
	for ; i >= 0; i-- {
		if _, ok := stack[i].(*ast.ParenExpr); !ok {
			break
		}
		e = stack[i]
	}
	if i < 0 {
		return ""
	}
	bin, ok := stack[i].(*ast.BinaryExpr)
	if !ok {
		return ""
	}
	switch bin.Op {
	case token.LSS, token.GTR, token.LEQ, token.GEQ, token.EQL, token.NEQ:
	default:
		return ""
	}
	other := bin.X
	if bin.X == e {
		other = bin.Y
	}
	tv, ok := info.Types[other]
	if !ok || tv.Value == nil {
		return ""
	}
	sel, _ := call.Fun.(*ast.SelectorExpr)
	if sel == nil {
		return ""
	}
	epoch := map[string]int64{"Year": 2000, "Unix": 946684800, "UnixMilli": 946684800e3, "UnixMicro": 946684800e6, "UnixNano": 946684800e9}
	if at, ok := epoch[sel.Sel.Name]; ok {
		// The bubble's first instant is the epoch itself: a bound at it
		// (now.Unix() > 946684800, the reset value of a clock without
		// a battery) is not passed until a second of virtual time has,
		// where a real reading is far past it (red team batch 19,
		// rtcguard). Only a bound before it reads the same.
		v, exact := constant.Int64Val(constant.ToInt(tv.Value))
		if !exact || v < at {
			return ""
		}
	}
	return types.ExprString(other)
}

// overshotRun reports whether a wait of run that lasts is one the wrap
// overshoots (overshoot.go): the run then ends a nanosecond or more past
// the instant its durations add up to, as a real sleep's does, and a
// check after it sees a deadline there as passed, in the bubble as in
// real time.
func (c *clockScan) overshotRun(t *Target, run []wait) bool {
	for _, w := range run {
		if (!w.known || w.d > 0) && c.a.ownFlow(t, w.stmt) {
			return true
		}
	}
	return false
}
