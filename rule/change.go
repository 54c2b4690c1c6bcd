package rule

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A ChangeKind is the part of a test's meaning a fix changes. Every
// rewrite changes something the test relied on, even when it keeps every
// check: the kind says which, so that the rule checks that kind's
// hazards, and verification aims its mutants at it.
type ChangeKind string

const (
	// Clock: the time base and how it flows (a testing/synctest bubble,
	// a fake clock). Hazards: a bubble's clock starts at 2000-01-01 UTC,
	// stands still between statements and lands exactly on deadlines;
	// code that compares with a fixed date, counts on elapsed time
	// between two calls, or decides at a deadline's instant behaves
	// differently; a skip or a logged duration reads the virtual clock.
	Clock ChangeKind = "clock"

	// Budget: how long a wait may take (a poll, a deadline in place of
	// an attempt count). Hazard: the wait's length was the contract (the
	// code runs on a period, interval, TTL or timeout the test sets), so
	// a longer budget passes where the code is too slow.
	Budget ChangeKind = "budget"

	// Order: what runs together (children spawned concurrently, a test
	// made parallel). Hazard: the parts share state (a cache file, a
	// package variable, a port) or the test compares their results in
	// order.
	Order ChangeKind = "order"

	// Paths: paths, directories, environment and package state scoped
	// to one test (t.TempDir, t.Chdir, t.Setenv, a variable restored,
	// t.Context). Hazards: a longer path (a unix socket's 108-byte
	// limit, a length limit of the code's own), a directory removed at
	// the end of the test while something still writes there, a
	// restore that a later reader (a goroutine init started, a pointer
	// the flag package keeps) sees, two contexts made one.
	Paths ChangeKind = "paths"

	// Process: what the whole test binary starts with (an environment
	// variable a sealed TestMain clears once, before any test runs, in
	// place of one test's clear). Hazards: a test or the code under
	// test that reads or writes the variable, in any build, so that the
	// clear's restore at the end of the test mattered; a package linked
	// in that writes it where the analysis cannot see. The rule reads
	// every file of every build the binary links for them, and what it
	// cannot read (cgo, a package outside the module and the standard
	// library that may write the environment) blocks the fix. Never
	// proven (unprovable): a test kit's late t.Setenv that only a bug
	// makes is one more such write, which neither the rule nor a run of
	// the correct code sees.
	Process ChangeKind = "process"

	// Address: the address a server listens on (a port the kernel
	// picks in place of a fixed one). Hazard: the code or the test reads
	// the port (a default computed from it, an access list of senders'
	// ports, a key hashed from the address, an error's Addr).
	Address ChangeKind = "address"

	// Sync: a synchronisation point (a readiness line in place of a
	// sleep). Hazard: the point is earlier than what the test checks
	// after it.
	Sync ChangeKind = "sync"

	// Ownership: who closes, stops or joins what (t.Cleanup(x.Close), a
	// join of a goroutine). Hazards: the owner closes it too (a double
	// close), or the call does not end what leaks.
	Ownership ChangeKind = "ownership"
)

// ChangeKinds lists every kind, in the order findings list them.
var ChangeKinds = []ChangeKind{Clock, Budget, Order, Paths, Process, Address, Sync, Ownership}

// unprovable are the kinds of change no rule proves: each rule of such a
// kind excluded the hazards it knew, and every fresh batch of red-team
// cases (batches 9 to 19: freeport, readiness, spawn, parallel unsound
// on nearly every new case; 20 to 24: testscope) met one it did not,
// because the hazard lives in what the code does with the port, with
// the child's later work, with what the parts share, or with a path or
// a variable's lifetime, and that is anything code can do. Nor can
// running show such a fix sound: the rewritten test passes on correct
// code, and no mutant makes code depend on its port, share a file
// between children or work on after its signal in the way a bug would
// (verification holds them back, as unshown). So a fix that changes one
// is a hypothesis whatever its rule proved: plain fix reports it with
// this reason, fix --diff --unproven shows it, and the hazards the rule
// excluded stand as its Checked list.
var unprovable = map[ChangeKind]string{
	Order:   "the parts run together, and no reading of the code shows they share nothing a bug would share between them (a file, a cache, a package variable, a port), nor does a passing run",
	Address: "the server listens on a port the kernel picks, and no reading of the code shows nothing reads the port (a default computed from it, an access list of senders' ports, an error's address), nor does a passing run",
	// Paths changes: red-team batches 20 to 24 found testscope fixes
	// unsound at first contact in every batch (4 of 4, 4 of 6, 3 of 6, 6
	// of 9, 8 of 12), and batch 24 judged them as fix --verify keeps
	// them: every unsound one passed its runs and missed a bug, through
	// what the code did with the change (a path's length choosing a
	// branch, a directory's mode, a '#' the testing package adds to a
	// duplicate subtest name, a later test that ran on a leaked
	// variable, a close that now runs before the cancel). No mutant
	// makes code depend on a path or a variable's lifetime as a bug
	// would. A change the code under test never sees (Change.Unseen: a
	// directory only the test's own statements use, with the standard
	// library) is exempt: its hazards live in code the rule reads.
	// Ownership changes: red-team batches 20 to 24 found leak fixes
	// unsound at first contact in every batch, and batch 24 judged them
	// as fix --verify keeps them: 3 of 8 kept cleanups hung under a bug
	// the original caught at its check (a test server whose handler the
	// bug wedged, a pool whose Close waits for a connection the bug
	// leaked), which correct code's runs never show. An end that cannot
	// wait and that no peer sees (Change.Unseen: a file, a ticker, a
	// timer) is exempt.
	Ownership: "the test now closes, stops or joins what it made, and no reading of the code shows that nothing waits there on what a bug would wedge (a server's handler, a pool's lent connection, a goroutine's defers) or sees the end after the test (the code on a connection's other side, left running), nor does a passing run",
	Paths:     "the test's paths, environment or package state are scoped to it (a longer directory named after the test, removed at its end, with the umask's mode; a variable restored for the tests after it; one context for the test), and no reading of the code shows that nothing depends on what changed (a path's length or mode, a later test that ran on the leaked value, a close now before a cancel), nor does a passing run",
	// Process changes: setenv's sealed TestMain in place of a test's
	// clear was unsound at first contact in every red-team batch from 34
	// to 40 (2, 7, 3, 3, 2, 2 and 5 cases), through what else the
	// clear's t.Setenv did: it forbade t.Parallel (a kit that recovers
	// from the panic, a method expression in a map, a hook the external
	// test package registers), and its restore undid a write the rule
	// did not see (a t.Setenv on a finished test's handle from a
	// goroutine, a hook or an AfterFunc; a module with a dot-less
	// path). Batch 40 judged it as fix --verify kept it: five kept
	// removals passed every run and missed a bug, since only the bug's
	// build writes late. No mutant makes code write the variable late.
	Process: "the variable is cleared once for the whole test binary, and no reading of the code shows that nothing else the clear's t.Setenv did mattered (it forbade t.Parallel, and its restore undid writes made while the test ran, a bug's late write too), nor does a passing run",
	// Clock changes: verification kept a bubble only where its aimed
	// mutants (a tick, a duration 0, elapsed time 0, the code slowed)
	// showed strength, and red-team batch 41 wrote four bubbles it kept
	// (of four tried) that each missed a bug the original caught: the
	// code's own wait ending exactly on a deadline only the bug's build
	// sets, a refill that rounds up only in the bug's build, a debounce
	// compared with the wrong duration, a backoff the code's CPU work
	// eats. Real time ends every wait a little late and counts the
	// work; virtual time does neither, and no mutant of the correct code
	// makes a bug of that kind. The strength corpus had 1 kept bubble of
	// 74 verify cases, and five real repositories none, so the cost of
	// holding them all back is small. The mutant operators stay
	// (aimedKinds), for a clock that real-time bugs cannot hide from.
	Clock: "the test's clock changes (virtual time starts at 2000-01-01, stands still between statements, ends the code's waits exactly on their deadlines and does not count its CPU work; a fake clock moves only when told), and no reading of the code shows that no check relied on what real time does, nor does a passing run or a mutant of the correct code (a bug that sets a deadline one of the code's own waits ends on passes in the bubble)",
	Sync:  "the parent goes on at the readiness line, and no reading of the code shows that what the test checks after the signal is done by then (the child's later work, its age, its descriptors), nor does a passing run",
}

// hypothetical are the kinds of change no reading of the code proves,
// but running can show: a fix that changes one is a hypothesis whatever
// its rule proved, which fix --verify keeps only when its tests pass
// every run (stress, GOMAXPROCS=1, -race, the package's whole binary)
// and a mutant aimed at the kind (a late write, a period made 3x) fails
// the original and the rewrite alike. A wait's budget can make a test
// blind, the worst a rewrite can do, and red-team batches met ways the
// rules' lists of hazards did not name (a poll in a helper, a period the
// code runs on): a static proof has not held on fresh code. A clock
// change was such a hypothesis until batch 41 (unprovable, above).

var hypothetical = map[ChangeKind]string{
	Budget: "the wait's length changes, and no reading of the code shows that the original's window was not the contract (a period, a TTL, a lateness it caught); running tells, with mutants aimed at the wait",
}

// Unprovable returns why a fix that makes changes is a hypothesis
// whatever its rule proved (see unprovable), or "" when every kind of
// change it makes can be proven.
func Unprovable(changes []Change) string {
	for _, c := range changes {
		if c.Removes {
			return string(c.Kind) + " change: the fix removes a check, and what it caught the rewritten test cannot catch, so neither a reading of the code nor a run shows the test kept its strength"
		}
	}
	for _, k := range ChangeKinds {
		why, ok := unprovable[k]
		if ok && slices.ContainsFunc(changes, func(c Change) bool { return c.Kind == k && !c.Unseen }) {
			return string(k) + " change: " + why
		}
	}
	return ""
}

// Demoted reports whether reason, an unproven fix's, is the one Demote
// gives: the rule's own checks proved the fix, and only its kind of
// change makes it a hypothesis.
func Demoted(reason string) bool {
	for _, k := range ChangeKinds {
		_, never := unprovable[k]
		_, run := hypothetical[k]
		if (never || run) && strings.HasPrefix(reason, string(k)+" change: ") {
			return true
		}
	}
	return false
}

// Demote returns f as a hypothesis when it changes a kind no rule
// proves (Unprovable, hypothetical), and f itself otherwise. A fix
// already unproven keeps its reason; a proven fix with a probe that must pass (a chain's
// reverse order) keeps the probe.
func Demote(f *Fix) *Fix {
	if f == nil {
		return nil
	}
	why := Unprovable(f.Changes)
	for _, k := range ChangeKinds {
		if w, ok := hypothetical[k]; ok && why == "" && slices.ContainsFunc(f.Changes, func(c Change) bool { return c.Kind == k }) {
			why = string(k) + " change: " + w
		}
	}
	if why == "" || f.Unproven() != "" {
		return f
	}
	g := *f
	h := Hypothesis{}
	if f.Hypothesis != nil {
		h = *f.Hypothesis
	}
	h.Reason = why
	g.Hypothesis = &h
	return &g
}

// A Change says what a fix changes in the test's meaning.
type Change struct {
	Kind ChangeKind

	// What says the change at this site, in lower case, without a
	// trailing period ("the test runs in a synctest bubble: its clock is
	// virtual").
	What string

	// Checked lists the hazards of the kind the rule excluded at this
	// site, each in a few words ("no fixed date", "no unix socket under
	// the directory"). A hazard the rule could not exclude is not listed
	// here: it makes the fix unproven, and the Hypothesis's Reason names
	// it.
	Checked []string
	// Window, for a budget change, is the length of the wait the fix
	// replaces (the attempts' total, the sleep), 0 when the rule cannot
	// tell; for a clock change that does not see work (WorkUnseen), the
	// real-time bound the original holds the code to (a wall-clock
	// budget), which a slowed mutant must pass. The original fails on what comes later than its window,
	// whatever the correct code's timers; verification makes its late
	// mutants later than the window, so that the original kills them
	// and a longer budget that passes them is seen to.
	Window time.Duration `json:"window,omitempty"`
	// Unseen, for a paths or ownership change, says the code under test
	// can neither see nor wedge what changes: the change reaches only
	// the test's own statements (a directory the test uses with the
	// standard library alone), or ends a standard value whose end waits
	// for nothing (a file, a ticker), whose hazards the rule reads in
	// full, so the kind does not make the fix a hypothesis
	// (rule.Unprovable).
	Unseen bool `json:"-"`
	// Removes says the fix removes a check outright (a wall-clock
	// budget on the code's work): whatever that check caught, the
	// rewritten test cannot, so no run shows the fix keeps the test's
	// strength (a mutant the rewrite kills through another check, a
	// digest the extra work changed, says nothing of a slower
	// implementation with right results: red team batch 20,
	// exportdigest). Such a fix is never kept: Unprovable names it.
	Removes bool `json:"removes,omitempty"`
	// Budget, for a budget change, is the new wait's length (a poll's
	// deadline), 0 when the rule cannot tell. Verification makes its late
	// mutants later than Window and well within Budget: a write made
	// later than the budget fails the rewrite only because the budget
	// ran out, which says nothing of a write late but within it (red team
	// batch 20, hotreload: an 800ms deadline kept on a mutant 1.2s late
	// passed a reload 500ms late that the attempts caught).
	Budget time.Duration `json:"budget,omitempty"`
	// WorkUnseen, for a clock change, says the new clock does not see
	// work: code slow because it computes finishes "in time" on it (a
	// synctest bubble, where only blocking moves the clock), so
	// verification tries the code slowed by real time that clock does
	// not see, which the rewrite must fail where the original does. A
	// clock change that waits for goroutines instead of a real sleep (a
	// fake clock's waiters) leaves it false: the original failing on
	// slow code there is the flake the change fixes.
	WorkUnseen bool `json:"-"`
	// AwaitLines, for a budget change, are the test file's lines, first
	// and last, where a failure is the wait running out: the check
	// after the poll of the state it awaits (not a failure exit inside
	// the poll, which fires whatever the budget). Zero when the rule
	// cannot tell (any failure at or after the fix's line counts). A
	// late mutant shows a budget's strength only when the original fails
	// on it there: one that fails a later check (a counter checked after
	// the poll) is late state the poll never waited for, which any
	// budget kills (red team batch 14: a 10s deadline kept on such
	// decoys passed the awaited state made 1.5s late).
	AwaitLines [2]int `json:"-"`
}

// String says the change in one line: "clock: WHAT (checked: A, B)".
func (c Change) String() string {
	s := string(c.Kind) + ": " + c.What
	if len(c.Checked) > 0 {
		s += " (checked: " + strings.Join(c.Checked, ", ") + ")"
	}
	return s
}

// checkChanges reports a fix that names no change, or names one badly.
func checkChanges(f *Fix) error {
	if len(f.Changes) == 0 {
		return fmt.Errorf("fix %q names no change (rule.Fix.Changes)", f.Message)
	}
	for _, c := range f.Changes {
		known := false
		for _, k := range ChangeKinds {
			known = known || c.Kind == k
		}
		if !known || c.What == "" {
			return fmt.Errorf("fix %q: change %q: unknown kind or no text", f.Message, c.Kind)
		}
	}
	return nil
}

// CheckFix reports a broken invariant of a fix the engine is about to
// apply: it names no change, or a change of an unknown kind.
func CheckFix(f *Fix) error { return checkChanges(f) }

// HasChange reports whether f changes kind k.
func (f *Fix) HasChange(k ChangeKind) bool {
	if f == nil {
		return false
	}
	for _, c := range f.Changes {
		if c.Kind == k {
			return true
		}
	}
	return false
}
