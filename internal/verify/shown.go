package verify

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// Strength must be shown. An unproven fix names a hazard of its kind of
// change that the rule could not exclude: passing every run, and killing
// every mutant of state that counts, is no evidence against it (a 10s
// deadline in place of 40 attempts kills a write made twice as well as
// the attempts did, and passes the same write made late). So, for each
// kind it changes that mutants can be aimed at (aim.go), an unproven fix
// is kept only when a mutant aimed at that kind counted (the original
// fails on it) and the rewrite fails on it too; otherwise it is held
// back as revert.Unshown, naming the kind and what could not be aimed,
// or what the original did not fail on. Paths and ownership changes,
// like order, address and sync, are never proven (rule.Unprovable) and
// no mutant is aimed at them: they are held back before they run
// (unprovable), unless the code under test can neither see nor wedge
// what changes (rule.Change.Unseen: a directory only the test uses, a
// ticker's Stop), which stands on its runs. A proven fix's proof covers
// its hazards.
//
// Order is a kind no mutant is aimed at yet, and running cannot stand in
// for one: children run together that pass every run on correct code say
// nothing of a bug that shares state between them (a pack cache beside
// the executable, keyed by the parent's pid, that one after another the
// second child hits and run together neither does), and a chain's
// reverse-order form shows only that the correct code does not depend on
// the order. So an unproven order change is held back: nothing shows its
// strength.
//
// A budget is one wait's length: a check before the wait fails on a
// late write whatever the wait's length (a counter whose first event
// comes late fails "count right after 3 events" before the poll ever
// runs). So a budget's aimed mutant shows strength only when the
// original fails on it at or after the fix's line in the test file, and,
// where the rule names them (rule.Change.AwaitLines), at the check of
// what the wait awaits: a counter checked after the poll made late fails
// the original there, and a failure exit inside the poll fires on the
// first attempt that sees a passing state, so any budget kills both. The
// rewrite must fail it at that check too: one that passes the awaited
// state late and fails a later check fails on a consequence of the
// mutant, which a bug late elsewhere need not have. A
// clock or an ownership change holds for the whole test (a bubble, a
// cleanup): a failure anywhere in it counts.

// An aimedKind is a kind of change that mutants are aimed at.
type aimedKind struct {
	ops []mutation
	// aims says what the mutants are, for a reason when none could be
	// made.
	aims string
	// atFix: only a failure of the original at or after the fix's line
	// shows strength.
	atFix bool
	// removes lists the ops of ops that take a wait or elapsed time away
	// (a duration made 0, time.Since made 0): they run, and a rewrite
	// that misses one is reverted, but
	// for a change to a virtual clock (Change.WorkUnseen) killing them
	// shows nothing of the change. Any clock, exact or
	// not, sees a wait that is gone; what a bubble changes is where a
	// wait ends (on its deadline, not a little after) and what work
	// costs (nothing), and only the other ops probe that. A wallclock
	// wrap kept on "duration 0" alone passed a pacer's late caller, a
	// token bucket's rounded-up partial token and a lease cut to whole
	// heartbeats, each decided exactly on a boundary of the code's own
	// timers (red team batch 14); one kept on "duration 0, elapsed 0"
	// passed a backoff whose reset compares the gap since the last
	// failure with its cap, which the code's own sleep ends exactly on
	// (batch 15, backoffcap).
	removes []mutation
}

var aimedKinds = map[rule.ChangeKind]aimedKind{
	rule.Budget: {ops: []mutation{late, scaled, lateRead, lateReadRecv}, atFix: true,
		aims: "a write the checks await made late, a timer's period made 3x, an expiry the code reads from the clock made late"},
	rule.Clock: {ops: []mutation{tick, zeroed, stands, worked, defaultZeroed, slowed}, removes: []mutation{zeroed, defaultZeroed, stands},
		aims: "a time comparison moved by one tick, a timer's duration made 0, elapsed time made 0, a computing loop made longer, a default duration made 0, the code slowed by work the clock does not see"},
	rule.Ownership: {aims: "none makes an end wait on what a bug wedges, as a test server's Close waits for a handler"},
	// No operator (see above, and rule.Unprovable): an unproven order,
	// address or sync change is never shown, and is held back before it
	// runs (unprovable).
	rule.Paths:   {aims: "none makes code depend on a path's length or mode, or on a variable's lifetime, as a bug would"},
	rule.Order:   {aims: "none makes children share state a bug would share between them, such as a cache beside the executable"},
	rule.Address: {aims: "none makes code depend on its port as a bug would, such as an access list of senders' ports"},
	rule.Sync:    {aims: "none makes the child's work after its readiness line later, as a slow start-up would"},
	rule.Process: {aims: "none makes code write the variable after its test ends, as a bug's late t.Setenv would"},
}

// unprovable returns why a fixed, unproven finding is held back before
// any test runs with it: it changes a kind no mutant is aimed at
// (rule.Unprovable), so runs and mutants could show nothing of its
// strength, and would only cost the time they take. "" when it is tried.
func unprovable(f rewrite.Finding) string {
	if !f.Fixed || !f.Unproven {
		return ""
	}
	return unprovableChanges(f.Changes)
}

// unprovableChanges is unprovable for an unproven fix's changes.
func unprovableChanges(changes []rule.Change) string {
	if rule.Unprovable(changes) == "" {
		return ""
	}
	for _, c := range changes {
		if c.Removes {
			return fmt.Sprintf("it removes a check of its %s change, and what that check caught the rewritten test cannot catch: strength cannot be shown, so it is not run", c.Kind)
		}
	}
	for _, k := range rule.ChangeKinds {
		if ak, ok := aimedKinds[k]; ok && len(ak.ops) == 0 && slices.ContainsFunc(changes, func(c rule.Change) bool { return c.Kind == k && !c.Unseen }) {
			return fmt.Sprintf("no mutant is aimed at its %s change (%s), and passing runs show nothing of a bug the change would hide: strength cannot be shown, so it is not run", k, ak.aims)
		}
	}
	// rule.Unprovable and aimedKinds agree (TestUnprovableKindsHaveNoMutants).
	return "strength cannot be shown, so it is not run: " + rule.Unprovable(changes)
}

// A triedMutant is a mutant a test ran on, and what it did.
type triedMutant struct {
	m      *mutant
	counts bool            // the original fails on it
	killed bool            // the rewrite fails on it too (a catch: see catches)
	orig   *rewrite.Revert // the original's failure, when it counts
	after  *rewrite.Revert // the rewrite's failure, when it killed it
}

// unshownWhy returns why the mutants tried (none: nothing could be
// mutated) show nothing of an unproven fix's strength, one clause per
// kind it changes that mutants are aimed at, or "" when they show it
// for each (or the fix is proven).
func unshownWhy(s fixSite, tried []triedMutant) string {
	if !s.finding.Unproven {
		return ""
	}
	var whys []string
	for _, k := range rule.ChangeKinds {
		ak, ok := aimedKinds[k]
		// A change the code cannot see or wedge (rule.Change.Unseen)
		// stands on its runs.
		if !ok || !slices.ContainsFunc(s.finding.Changes, func(c rule.Change) bool { return c.Kind == k && !c.Unseen }) {
			continue
		}
		// Only a change from the real clock to a virtual one (WorkUnseen:
		// a bubble) makes the code's own waits end exactly on their
		// deadlines; a fake clock the test already ran on was exact
		// before, and a wait taken away is what its fix is about.
		exacts := slices.ContainsFunc(s.finding.Changes, func(c rule.Change) bool { return c.Kind == k && c.WorkUnseen })
		var aimed, counted, before, inside, after, later, removal []string
		shown := false
		for _, t := range tried {
			if !slices.Contains(ak.ops, t.m.op) {
				continue
			}
			l := labels[t.m.op]
			addName(&aimed, l)
			if !t.counts {
				continue
			}
			addName(&counted, l)
			if !t.killed {
				continue
			}
			if exacts && slices.Contains(ak.removes, t.m.op) {
				addName(&removal, l)
				continue
			}
			if ak.atFix {
				line := failLine(t.orig.Detail, s.finding.File)
				if line < s.finding.Line {
					where := "where it names no line of the test file"
					if line > 0 {
						where = fmt.Sprintf("at %s:%d", filepath.Base(s.finding.File), line)
					}
					addName(&before, fmt.Sprintf("%s %s", l, where))
					continue
				}
				start, end := awaitSpan(s.finding.Changes, k)
				if end > 0 && line > end {
					addName(&after, fmt.Sprintf("%s at %s:%d", l, filepath.Base(s.finding.File), line))
					continue
				}
				if end > 0 && line < start {
					addName(&inside, fmt.Sprintf("%s at %s:%d", l, filepath.Base(s.finding.File), line))
					continue
				}
				// The rewrite must fail it where the wait's length
				// decides too: one that passes the awaited state late
				// and fails a check after it (a lease lapsed by the
				// time of a fenced write) catches a consequence of
				// this mutant's lateness, not lateness, and a bug that
				// is late before what that check depends on passes it
				// (red team batch 16, campaignfence).
				if end > 0 && t.after != nil {
					if al := failLine(t.after.Detail, s.finding.File); al < start || al > end {
						where := "where it names no line of the test file"
						if al > 0 {
							where = fmt.Sprintf("at %s:%d", filepath.Base(s.finding.File), al)
						}
						addName(&later, fmt.Sprintf("%s, which the rewrite fails only %s", l, where))
						continue
					}
				}
			}
			shown = true
		}
		switch {
		case shown:
			continue
		case len(ak.ops) == 0:
			whys = append(whys, fmt.Sprintf("no mutant is aimed at its %s change (%s), and passing runs show nothing of a bug the change would hide", k, ak.aims))
		case len(aimed) == 0:
			whys = append(whys, fmt.Sprintf("no mutant aimed at its %s change could be made of the code the test reaches (%s)", k, ak.aims))
		case len(counted) == 0:
			whys = append(whys, fmt.Sprintf("the original fails on none of the mutants aimed at its %s change (%s), so they show nothing of it", k, strings.Join(aimed, ", ")))
		case len(removal) > 0 && len(before) == 0 && len(removal) == len(counted):
			whys = append(whys, fmt.Sprintf("the original fails only on mutants aimed at its %s change that take a wait or elapsed time away (%s), which any clock shows: none that moves a deadline by one tick, slows the code or adds work counted, and those probe what the change does", k, strings.Join(removal, ", ")))
		case len(later) > 0 && len(before) == 0 && len(inside) == 0 && len(after) == 0:
			whys = append(whys, fmt.Sprintf("the rewrite fails the mutants aimed at its %s change only after the check of what the wait awaits at %s:%d (%s): it passes the awaited state late and fails on what that lateness leads to, which a bug late elsewhere need not", k, filepath.Base(s.finding.File), awaitEndLine(s.finding.Changes, k), strings.Join(later, "; ")))
		case len(before) > 0 || len(inside) > 0 || len(after) > 0:
			var where []string
			if len(before) > 0 {
				where = append(where, fmt.Sprintf("before the fix at %s:%d (%s)", filepath.Base(s.finding.File), s.finding.Line, strings.Join(before, "; ")))
			}
			if len(inside) > 0 {
				start, _ := awaitSpan(s.finding.Changes, k)
				where = append(where, fmt.Sprintf("at a failure exit inside the poll, before the check of what it awaits at %s:%d (%s)", filepath.Base(s.finding.File), start, strings.Join(inside, "; ")))
			}
			if len(after) > 0 {
				where = append(where, fmt.Sprintf("after the check of what the wait awaits at %s:%d (%s)", filepath.Base(s.finding.File), awaitEndLine(s.finding.Changes, k), strings.Join(after, "; ")))
			}
			why := fmt.Sprintf("the original fails on the mutants aimed at its %s change only %s, where the wait's length does not matter", k, strings.Join(where, " and "))
			if len(later) > 0 {
				why += fmt.Sprintf(", or the rewrite fails them only after that check (%s)", strings.Join(later, "; "))
			}
			whys = append(whys, why)
		default:
			// Every one that counts is killed when the fix is kept
			// (mutateTest): only a missed one is left, which reverts the
			// fix as revert.Weaker first.
			whys = append(whys, fmt.Sprintf("the rewrite misses the mutants aimed at its %s change (%s)", k, strings.Join(counted, ", ")))
		}
	}
	if len(whys) == 0 {
		return ""
	}
	return strings.Join(whys, "; ") + ": strength cannot be shown"
}

// awaitSpan is the first and last line where a failure of the original
// shows a change of kind k (rule.Change.AwaitLines): the lines of the
// check of what the wait awaits; 0, 0 when a change cannot tell.
func awaitSpan(changes []rule.Change, k rule.ChangeKind) (int, int) {
	start, end := 0, 0
	for _, c := range changes {
		if c.Kind == k {
			if c.AwaitLines[1] == 0 {
				return 0, 0 // one change that cannot tell: any line after the fix
			}
			if start == 0 || c.AwaitLines[0] < start {
				start = c.AwaitLines[0]
			}
			end = max(end, c.AwaitLines[1])
		}
	}
	return start, end
}

// awaitEndLine is the last line of awaitSpan.
func awaitEndLine(changes []rule.Change, k rule.ChangeKind) int {
	_, end := awaitSpan(changes, k)
	return end
}

// addName appends name to names unless it is there.
func addName(names *[]string, name string) {
	if !slices.Contains(*names, name) {
		*names = append(*names, name)
	}
}

// unshown returns the fixes of sites to hold back for lack of evidence
// in the mutants tried (unshownWhy), and the rest, which stand as
// verified. The held are not recorded as tried: their next form, if
// any, is tried on the mutants.
func unshown(test string, sites []fixSite, tried []triedMutant) (held []Held, rest []fixSite) {
	for _, s := range sites {
		why := unshownWhy(s, tried)
		if why == "" {
			rest = append(rest, s)
			continue
		}
		held = append(held, Held{Site: s.site, Why: &rewrite.Revert{Kind: revert.Unshown, Test: test, Detail: why}})
	}
	return held, rest
}
