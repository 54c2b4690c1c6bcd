package verify

import (
	"strings"
	"testing"

	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// An unproven fix is kept only when, for each kind it changes that
// mutants are aimed at, one aimed at that kind counted and was killed;
// a budget's only when the original failed on it at or after the fix.
func TestUnshownWhy(t *testing.T) {
	t.Parallel()
	site := func(unproven bool, line int, kinds ...rule.ChangeKind) fixSite {
		f := rewrite.Finding{File: "/m/window_test.go", Line: line, Unproven: unproven}
		for _, k := range kinds {
			f.Changes = append(f.Changes, rule.Change{Kind: k, What: "a change"})
		}
		return fixSite{finding: f}
	}
	virtual := func(s fixSite) fixSite {
		for i := range s.finding.Changes {
			s.finding.Changes[i].WorkUnseen = true
		}
		return s
	}
	awaits := func(s fixSite, first, last int) fixSite {
		for i := range s.finding.Changes {
			s.finding.Changes[i].AwaitLines = [2]int{first, last}
		}
		return s
	}
	unseen := func(s fixSite) fixSite {
		for i := range s.finding.Changes {
			s.finding.Changes[i].Unseen = true
		}
		return s
	}
	tried := func(op mutation, counts bool, detail string) triedMutant {
		return triedMutant{m: &mutant{op: op}, counts: counts, killed: counts, orig: &rewrite.Revert{Detail: detail}}
	}
	for _, c := range []struct {
		name  string
		site  fixSite
		tried []triedMutant
		want  string // "" when shown; else a part of the reason
	}{
		{"proven", site(false, 16, rule.Budget), nil, ""},
		{"paths only", site(true, 16, rule.Paths), nil, "no mutant is aimed at its paths change"},
		// No mutant is aimed at a sync, address or order change
		// (rule.Unprovable): such a fix is never shown.
		{"sync", site(true, 16, rule.Paths, rule.Sync), nil, "no mutant is aimed at its sync change"},
		{"address", site(true, 16, rule.Address), nil, "no mutant is aimed at its address change"},
		// spawn_rt9_gitfetch: children run together pass every run on
		// correct code; nothing shows a bug they would hide.
		{"order", site(true, 16, rule.Order), nil,
			"no mutant is aimed at its order change (none makes children share state a bug would share between them, such as a cache beside the executable), and passing runs show nothing of a bug the change would hide: strength cannot be shown"},
		{"budget, nothing aimed", site(true, 16, rule.Budget), nil,
			"no mutant aimed at its budget change could be made of the code the test reaches (a write the checks await made late, a timer's period made 3x, an expiry the code reads from the clock made late): strength cannot be shown"},
		{"budget, none counted", site(true, 16, rule.Budget), []triedMutant{tried(late, false, ""), tried(scaled, false, "")},
			"the original fails on none of the mutants aimed at its budget change (late, period x3), so they show nothing of it"},
		// attemptloop_rt7_slidingwindow: the late first event fails the
		// check before the poll, whatever the poll's length.
		{"budget, counted before the fix", site(true, 16, rule.Budget), []triedMutant{tried(late, true, "window_test.go:14: count = 0 right after 3 events, want 3")},
			"the original fails on the mutants aimed at its budget change only before the fix at window_test.go:16 (late at window_test.go:14)"},
		{"budget, counted without a line", site(true, 16, rule.Budget), []triedMutant{tried(late, true, "test timed out after 5.0s")},
			"(late where it names no line of the test file)"},
		{"budget, counted at the fix's checks", site(true, 16, rule.Budget), []triedMutant{tried(late, true, "window_test.go:14: x"), tried(scaled, true, "window_test.go:23: count = 3 after the window, want 0")}, ""},
		// attemptloop_rt14_healthboard: the poll (lines 16-22) awaits the
		// components' health; a late start counter fails the check of
		// the count after it, which any budget kills.
		{"budget, counted after what the wait awaits", awaits(site(true, 16, rule.Budget), 16, 22), []triedMutant{tried(late, true, "window_test.go:24: 1 components started, want 2")},
			"the original fails on the mutants aimed at its budget change only after the check of what the wait awaits at window_test.go:22 (late at window_test.go:24)"},
		{"budget, counted at what the wait awaits", awaits(site(true, 16, rule.Budget), 16, 22), []triedMutant{tried(late, true, "window_test.go:24: x"), tried(late, true, "window_test.go:21: the components did not come up")}, ""},
		{"clock, only state counted", site(true, 12, rule.Clock), []triedMutant{tried(dropped, true, "lease_test.go:14: x"), tried(tick, false, "")},
			"the original fails on none of the mutants aimed at its clock change (one tick)"},
		// A clock change holds for the whole test: a failure before the
		// fix's line counts.
		{"clock, counted anywhere", site(true, 12, rule.Clock), []triedMutant{tried(stands, true, "window_test.go:3: x")}, ""},
		// wallclock_rt14_pacer_verify: a wrap to a virtual clock kept on
		// "duration 0" alone passed a bug decided on a boundary of the
		// code's own timers. A wait taken away shows nothing of where
		// waits end; a fake clock the test already ran on is not such a
		// change.
		{"virtual clock, only a wait taken away", virtual(site(true, 12, rule.Clock)), []triedMutant{tried(zeroed, true, "window_test.go:20: x"), tried(defaultZeroed, true, "window_test.go:20: x"), tried(tick, false, "")},
			"the original fails only on mutants aimed at its clock change that take a wait or elapsed time away (duration 0, default 0), which any clock shows"},
		// wallclock_rt15_backoffcap_verify: kept on "duration 0, elapsed
		// 0", it passed a reset decided on the code's own cap.
		{"virtual clock, a wait and elapsed time taken away", virtual(site(true, 12, rule.Clock)), []triedMutant{tried(zeroed, true, "window_test.go:20: x"), tried(stands, true, "window_test.go:21: x")},
			"that take a wait or elapsed time away (duration 0, elapsed 0)"},
		{"virtual clock, a tick too", virtual(site(true, 12, rule.Clock)), []triedMutant{tried(zeroed, true, "window_test.go:20: x"), tried(tick, true, "window_test.go:20: x")}, ""},
		{"fake clock, a wait taken away", site(true, 12, rule.Clock), []triedMutant{tried(zeroed, true, "window_test.go:20: x")}, ""},
		// An ownership or paths change the code can neither see nor
		// wedge stands on its runs; any other is never shown.
		{"ownership, unseen", unseen(site(true, 12, rule.Ownership)), nil, ""},
		{"ownership", site(true, 12, rule.Ownership), nil, "no mutant is aimed at its ownership change"},
		{"paths, unseen", unseen(site(true, 12, rule.Paths)), nil, ""},
		{"two kinds, one shown", site(true, 16, rule.Clock, rule.Budget), []triedMutant{tried(zeroed, true, "window_test.go:20: x")},
			"no mutant aimed at its budget change could be made"},
	} {
		got := unshownWhy(c.site, c.tried)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: held back: %q", c.name, got)
		case c.want != "" && (!strings.Contains(got, c.want) || !strings.HasSuffix(got, ": strength cannot be shown")):
			t.Errorf("%s: reason %q, want it to hold %q", c.name, got, c.want)
		}
	}
}

// A fix of a kind no mutant is aimed at (order, address, sync) is held
// back before it runs: runs and mutants could show nothing of it. A
// clock or budget change is tried; so is a proven fix.
func TestUnprovable(t *testing.T) {
	f := func(fixed, unproven bool, kinds ...rule.ChangeKind) rewrite.Finding {
		var cs []rule.Change
		for _, k := range kinds {
			cs = append(cs, rule.Change{Kind: k, What: "w"})
		}
		return rewrite.Finding{Fixed: fixed, Unproven: unproven, Changes: cs}
	}
	for _, c := range []struct {
		name string
		f    rewrite.Finding
		want string
	}{
		{"order", f(true, true, rule.Order), "no mutant is aimed at its order change"},
		{"address", f(true, true, rule.Budget, rule.Address), "no mutant is aimed at its address change"},
		{"sync", f(true, true, rule.Sync), "no mutant is aimed at its sync change"},
		{"clock", f(true, true, rule.Clock), "strength cannot be shown, so it is not run: clock change: "},
		{"budget", f(true, true, rule.Budget), ""},
		{"paths", f(true, true, rule.Paths), "no mutant is aimed at its paths change"},
		{"process", f(true, true, rule.Process), "no mutant is aimed at its process change"},
		{"proven", f(true, false, rule.Order), ""},
		{"not fixed", f(false, true, rule.Order), ""},
	} {
		got := unprovable(c.f)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The kinds of change no rule proves (rule.Unprovable) are those no
// mutant is aimed at: verification holds them back before running.
func TestUnprovableKindsHaveNoMutants(t *testing.T) {
	for _, k := range rule.ChangeKinds {
		never := rule.Unprovable([]rule.Change{{Kind: k, What: "x"}}) != ""
		ak, ok := aimedKinds[k]
		// A clock change keeps its mutants, though no clock fix runs
		// since batch 41 (rule/change.go): the operators wait for a
		// clock that real-time bugs cannot hide from.
		if unaimed := ok && len(ak.ops) == 0; never != unaimed && k != rule.Clock {
			t.Errorf("%s: rule.Unprovable says %v, aimedKinds has no mutants: %v", k, never, unaimed)
		}
	}
}
