package leak

import (
	"fmt"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// Ownership hazards of a cleanup the rule adds, beyond the owners in
// sight (stop.go) and the methods that keep what they return (owner.go):
//
//   - a package function (not a method) that makes the value may register
//     it with an owner (pool.Register(c), registry[name] = s, a
//     constructor of another owner given it), which ends it too: the
//     cleanup is a second end;
//   - the lifecycle method may not end what leaks: a Stop that only
//     removes the value from a registry while the goroutine its
//     constructor started keeps running. The cleanup then claims an end
//     it does not make.
//
// Both make the fix unproven: a second end that blocks or panics shows
// when the tests run under fix --verify, and a goroutine left running
// shows in a bubble.

// funcKeeps says why the cleanup of s may be a second end because the
// package function that made the value keeps it, or "". checked names
// what was excluded.
func (c *checker) funcKeeps(s *site) (why, checked string) {
	fn := match.Callee(c.info, s.call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) || fn.Type().(*types.Signature).Recv() != nil {
		return "", "" // methods: keptBy; the standard library keeps nothing it returns
	}
	if !c.visible(fn) {
		// A summary says a function writes some package-level variable
		// (often a counter or an id), not that it keeps what it returns:
		// a function of another package is not judged.
		return "", ""
	}
	name := calleeName(c.info, s.call)
	evidence := c.keeps(fn, map[*types.Func]bool{}, 0)
	if evidence == "" {
		return "", "no package function takes ownership"
	}
	twice := c.unsafeTwice(s)
	if twice == "" {
		return "", "a second " + s.lc.method + " is harmless"
	}
	return fmt.Sprintf("%s may register what it makes with an owner (%s), which may end it too; %s", name, evidence, twice), ""
}

// endsWhatLeaks says why the lifecycle method of s is not shown to end
// the goroutines the call that made the value starts, or "". checked
// names what was excluded. It reads the call's effect summary: a
// goroutine nothing shown ends, or one another method or value ends.
func (c *checker) endsWhatLeaks(s *site) (why, checked string) {
	fn := match.Callee(c.info, s.call)
	if fn == nil || fn.Pkg() == nil || match.IsStd(fn.Pkg().Path()) {
		return "", ""
	}
	if r := fn.Type().(*types.Signature).Recv(); r != nil && types.IsInterface(r.Type()) {
		return "", ""
	}
	sum := c.pass.Effects.Of(fn.Origin())
	if sum == nil {
		return "", ""
	}
	name := calleeName(c.info, s.call)
	key := effects.TypeKey(s.v.Type())
	starts := false
	for _, e := range sum.Effects {
		switch e.Kind {
		case effect.GoroutineForever:
			return fmt.Sprintf("%s is not shown to end what %s starts (%s); the cleanup may leave it running", s.lc.method, name, e.Why()), ""
		case effect.GoroutineEnds:
			starts = true
			if e.Ends != s.lc.method || e.Type != "" && e.Type != key {
				owner := e.Type
				if i := strings.LastIndex(owner, "/"); i >= 0 {
					owner = owner[i+1:]
				}
				return fmt.Sprintf("%s is not shown to end what %s starts (%s), which %s.%s ends; the cleanup may leave it running", s.lc.method, name, e.Why(), owner, e.Ends), ""
			}
		}
	}
	if starts {
		return "", fmt.Sprintf("%s ends the goroutines %s starts", s.lc.method, name)
	}
	return "", fmt.Sprintf("%s starts no goroutine", name)
}
