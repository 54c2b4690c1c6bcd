package bubble

import (
	"go/ast"

	"github.com/unflake/unflake/internal/intent"
)

// A test may say what it exercises (package intent): one that says the
// wall clock runs in no bubble, and one that says the real network gets
// no in-memory connections, nor does any test sharing the helper whose
// rewrite would give them.

// intend keeps the comments attached to t, and blocks a test that says
// it exercises the wall clock: a bubble's virtual clock would replace it.
// The reason comes first, before any the walk meets.
func (a *Analysis) intend(t *Target, notes []*ast.CommentGroup) {
	t.notes = notes
	if s, ok := t.Says(intent.Clock); ok {
		t.blocked.add(nil, s.Reason("the test", "a synctest bubble's virtual clock"))
	}
}

// Says returns what the test says it exercises of c, in its name (and
// its enclosing tests', for a subtest, as the code computes them), its
// comments, or the names and comments of the test files' helpers it
// calls (intent.Package).
func (t *Target) Says(c intent.Claim) (intent.Said, bool) {
	return t.a.said.Says(c, t.fn, t.labels, t.notes)
}

// saysNetwork says why t may not have in-memory connections: t says it
// exercises the real network (package intent), or a helper whose rewrite
// it would share does (a function serving an httptest server; a pair
// helper that says so is no Pair), or another test that calls that
// helper or one of the pair helpers does; or "".
func (a *Analysis) saysNetwork(t *Target, pairs []*Pair, servers []*Server) string {
	const by = "in-memory connections (net.Pipe)"
	if s, ok := t.Says(intent.Network); ok {
		return s.Reason("the test", by)
	}
	var shared []*ast.FuncDecl
	for _, p := range pairs {
		shared = append(shared, p.Decl)
	}
	for _, srv := range servers {
		if fd, ok := srv.Fn.(*ast.FuncDecl); ok && srv.Fn != t.fn {
			if s, ok := intent.Of(intent.Network, []string{fd.Name.Name}, intent.Comments(a.pass.Fset, srv.File, fd)); ok {
				return s.Reason(fd.Name.Name, by)
			}
			shared = append(shared, fd)
		}
	}
	for _, fd := range shared {
		for _, u := range a.targets {
			if u == t || u.fn != fd && !u.reached[fd] {
				continue
			}
			if s, ok := u.Says(intent.Network); ok {
				return s.Reason(u.name+", which also calls "+fd.Name.Name+",", by)
			}
		}
	}
	return ""
}
