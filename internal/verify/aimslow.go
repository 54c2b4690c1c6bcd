package verify

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"
	"time"

	"github.com/unflake/unflake/rule"
)

// Work the clock does not see (issue: sleep_rt11_sqsclaim, kafkabatch). A
// synctest bubble's clock moves only when every goroutine blocks, so code
// that is slow because it computes takes no virtual time: a receipt
// signed with a second of CPU after the visibility deadline was stamped,
// a flush that checksums its batch for two seconds, land "in time" in the
// bubble where the original's window saw them late. The worked mutant
// (aimwork.go) makes an existing computing loop longer; code with no such
// loop, where a bug would add one, needs another: the slowed mutant makes
// a function's entry take real time that the bubble's clock does not
// see, a sleep in a system call (syscall.Nanosleep: the runtime does not
// fake it, and a goroutine in a system call is not durably blocked, so
// the bubble's clock stands still through it, as through CPU work),
// which costs no CPU on a machine the runs share. It is aimed only at
// changes whose clock does not see work (rule.Change.WorkUnseen: a
// bubble), not at a fake clock's wait for waiters, where the original
// failing on slow code is the flake the change fixes.
//
// The functions slowed are those that hold a write the test's checks
// await (the late mutant's targets: relevant), then those that read the
// clock or wait on a timer, of the functions the test reaches (its calls
// and the goroutines the code starts). The original fails on such a
// mutant where a check bounds the code's work (a second Receive right
// after the first that must find the job still hidden; a batch that must
// land within a window); the rewrite must then fail too, and a bubble
// does not: the fix is reverted as weaker (revert.Weaker), naming the
// code slowed.

// slowCalls bounds the calls a slowed mutant slows, per run: a function
// called in a loop would otherwise make the original run for as many
// delays as it has calls. Two calls in a row are what a check right
// after another call needs (the second call's delay falls between the
// first's reading and the second's); four leave room for a setup call.
const slowCalls = 4

// nanosleeps are the GOOS values whose syscall package has Nanosleep:
// elsewhere no slowed mutant is made.
var nanosleeps = map[string]bool{"linux": true, "freebsd": true, "netbsd": true, "openbsd": true, "dragonfly": true, "solaris": true, "illumos": true, "aix": true}

// slowDelay is the real time a slowed function's entry takes: half as
// long again as the test's time before the rewrite or the window the fix
// replaces, whichever is longer, rounded up to a tenth of a second, at
// least one. Every window of the original lies within its time (its
// waits add up to less), so work that long is past any window a check
// bounds; it is bounded (slowCalls calls), so the original never hangs
// on it. 0 (no slowed mutant) when it would exceed maxSlow, on a system
// without Nanosleep (goos), or when no fix's change runs the code on a
// clock that does not see work (unseen: rule.Change.WorkUnseen).
func slowDelay(before *outcome, window time.Duration, goos string, unseen bool) time.Duration {
	if !nanosleeps[goos] || !unseen {
		return 0
	}
	want := max(before.mean(), window) * 3 / 2
	d := max((want+100*time.Millisecond-1)/(100*time.Millisecond)*(100*time.Millisecond), 100*time.Millisecond)
	if d > maxSlow {
		return 0
	}
	return d
}

// workUnseen reports whether a clock change of the fixes of sites runs
// the code on a clock that does not see work (rule.Change.WorkUnseen).
func workUnseen(sites []fixSite) bool {
	for _, s := range sites {
		for _, c := range s.finding.Changes {
			if c.Kind == rule.Clock && c.WorkUnseen {
				return true
			}
		}
	}
	return false
}

// unseenWindowOf is the longest real-time bound the original holds the
// code to that a clock change not seeing work gives up (rule.Change.Window
// of a WorkUnseen change: a wall-clock budget), 0 when none says. The
// test's own time may be far below it (a 200ms budget on 2ms of work),
// and a slowed mutant shorter than the bound shows nothing.
func unseenWindowOf(sites []fixSite) time.Duration {
	var w time.Duration
	for _, s := range sites {
		for _, c := range s.finding.Changes {
			if c.Kind == rule.Clock && c.WorkUnseen {
				w = max(w, c.Window)
			}
		}
	}
	return w
}

// maxSlow is the longest delay a slowed mutant is given: slowCalls of it
// is what one run of the mutant may add.
const maxSlow = 10 * time.Second

// aimEntry returns the entry site of fd's body: where a slowed mutant
// takes real time.
func (c *collector) aimEntry(fd *ast.FuncDecl) *target {
	clocked := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || clocked {
			return !clocked
		}
		fn := calleeFunc(c.info, call)
		if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "time" {
			return true
		}
		switch fn.Name() {
		case "Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick", "Reset", "Before", "Compare", "Sub":
			clocked = true
		}
		return true
	})
	at := c.fset.Position(fd.Body.Lbrace).Offset + 1
	a := &aimSite{what: entry, shown: fd.Name.Name, clocked: clocked,
		body: [2]int{c.fset.Position(fd.Body.Lbrace).Offset, c.fset.Position(fd.Body.End()).Offset}}
	return &target{file: c.file, src: c.src, pkgEnd: c.pkgEnd, form: bodyForm, encl: fd.Name.Name, site: a,
		start: at, end: at, line: c.fset.Position(fd.Body.Lbrace).Line}
}

// aimStamps returns the stamp sites of fd's body: right after each
// statement of a block (or a case) that stores a reading of the clock
// (x := time.Now(), s.issued = time.Now().Add(ttl)). A slowed entry
// falls before the stamp when the work comes after it in the same
// function (a token stamped, then signed with a second of CPU in another
// package's code): the original's check that the token is still valid
// fails on that work, and a bubble does not see it (red team batch 19,
// tokenmint: no function entry lay between the stamp and the test's
// reading, so no slowed mutant counted and the wrap was kept).
func (c *collector) aimStamps(fd *ast.FuncDecl) []*target {
	var out []*target
	stmts := func(list []ast.Stmt) {
		for _, st := range list {
			as, ok := st.(*ast.AssignStmt)
			if !ok || !c.readsNow(as) {
				continue
			}
			at := c.fset.Position(as.End()).Offset
			line := c.fset.Position(as.Pos()).Line
			a := &aimSite{what: stamp, shown: "after the stamp"}
			out = append(out, &target{file: c.file, src: c.src, pkgEnd: c.pkgEnd, form: bodyForm, encl: fd.Name.Name, site: a,
				start: at, end: at, line: line})
		}
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			stmts(n.List)
		case *ast.CaseClause:
			stmts(n.Body)
		case *ast.CommClause:
			stmts(n.Body)
		}
		return true
	})
	return out
}

// readsNow reports whether as calls time.Now on its right-hand side.
func (c *collector) readsNow(as *ast.AssignStmt) bool {
	found := false
	for _, e := range as.Rhs {
		ast.Inspect(e, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && !found {
				if fn := calleeFunc(c.info, call); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "time" && fn.Name() == "Now" {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// calleeFunc is the function or method a call calls, or nil.
func calleeFunc(info *types.Info, call *ast.CallExpr) *types.Func {
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		fn, _ := info.Uses[fun].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := info.Uses[fun.Sel].(*types.Func)
		return fn
	}
	return nil
}

// slowable orders the entries (those of functions the test reaches,
// most mentioned first) for slowed mutants: the functions holding a
// write the checks await first, in the order of relevant, then those
// that read the clock or wait on a timer; others are left out.
func (c *codeUnderTest) slowable(m mentions, entries []*target) []*target {
	var out []*target
	taken := map[*target]bool{}
	for _, w := range c.relevant(m) {
		for _, e := range entries {
			if !taken[e] && e.file == w.file && e.site.body[0] < w.start && w.end <= e.site.body[1] {
				taken[e] = true
				out = append(out, e)
			}
		}
	}
	for _, e := range entries {
		if !taken[e] && e.site.clocked {
			out = append(out, e)
		}
	}
	return out
}

// slow writes the slowed mutants of an entry site: the first slowCalls
// calls (a counter of the site's, appended at the end of the file) sleep
// for the delay in a system call, again after a signal interrupts it
// (the runtime's preemption sends them).
func (sp *splicer) slow(b *strings.Builder, g siteGroup) {
	count := fmt.Sprintf("unflakeSlowed%d_%d", sp.file, g.t.start)
	fmt.Fprintf(&sp.tail, "\nvar %s %s.Int32\n", count, mutantAtom)
	fmt.Fprintf(b, " switch %s {", mutantVar)
	for _, id := range g.ids {
		fmt.Fprintf(b, " case %q: if %s.Add(1) <= %d { for ts := %s.NsecToTimespec(%d); %s.Nanosleep(&ts, &ts) == %s.EINTR; { } };",
			binName(id), count, slowCalls, mutantSys, int64(sp.ms[id-1].delay), mutantSys, mutantSys)
	}
	b.WriteString(" };")
}
