package leak

import (
	"fmt"
	"go/ast"
	"go/types"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rule/effect"
)

// What the effect summaries of functions of other packages tell the rule.

// summaryOf returns the effect summary of fn, a package function or a
// method of a concrete type declared outside the package and outside the
// standard library, or nil when unknown.
func (c *checker) summaryOf(fn *types.Func) *effect.Summary {
	if fn == nil || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg || match.IsStd(fn.Pkg().Path()) {
		return nil
	}
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		return nil // which code runs depends on the value
	}
	return c.pass.Effects.Of(fn)
}

// startedBy reports whether the call that made the value of s, a function
// of another package, starts goroutines that the value's lifecycle method
// ends: the value runs from the moment it is made, whatever Start method
// its type also has.
func (c *checker) startedBy(s *site) bool {
	sum := c.summaryOf(match.Callee(c.info, s.call))
	if sum == nil {
		return false
	}
	for _, e := range sum.Effects {
		if e.Kind == effect.GoroutineEnds && e.Ends == s.lc.method && (e.Type == "" || e.Type == effects.TypeKey(s.v.Type())) {
			return true
		}
	}
	return false
}

// unstoppableOther reports a value without a lifecycle method made by fn,
// a package function of another package whose summary shows it starts a
// goroutine that nothing ends, when the value is a handle of fn's package
// (not an error, a response or a count): the test has nothing to call to
// end that goroutine. The package's own functions are judged from their
// bodies (alwaysStarts).
//
// A summary's goroutine that "never ends" is one nothing shown ends: it
// may run a function value (errgroup.Group.Go) or loop on a channel
// passed in. A finding says the goroutine outlives the test, so the rule
// reports only what it sees as well as alwaysStarts does: the summary
// follows every call (no Opaque), and fn or a function it calls starts
// the goroutine (a chain of at most two).
func (c *checker) unstoppableOther(v *types.Var, id *ast.Ident, fn *types.Func) {
	if fn.Type().(*types.Signature).Recv() != nil {
		// A method: its goroutine may belong to the receiver, which the
		// test may end.
		return
	}
	t := types.Unalias(v.Type())
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	named, ok := t.(*types.Named)
	if !ok || named.Obj().Pkg() != fn.Pkg() {
		return
	}
	sum := c.summaryOf(fn) // after the cheap checks: it may load fn's package
	if sum == nil || sum.Opaque != "" {
		return
	}
	for _, e := range sum.Effects {
		if e.Kind != effect.GoroutineForever || len(e.Via) > 2 {
			continue
		}
		c.pass.Report(rule.Diagnostic{
			Pos:      id.Pos(),
			End:      id.End(),
			Message:  fmt.Sprintf("the test calls %s; it outlives the test", e.Why()),
			NotFixed: c.noEnd(v.Type(), false),
		})
		return
	}
}
