package bubble

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/unflake/unflake/internal/effects"
	"github.com/unflake/unflake/internal/match"
)

// A value a bubble makes (a channel, a timer, a ticker, a context, a
// WaitGroup it counts) belongs to it. Kept in state the package holds
// between calls, it outlives the bubble: the next test, or the next run
// of the same test (go test -count=2), meets it from outside, and a send
// on it, a timer's fire or an Add is a fatal error ("send on synctest
// channel from outside bubble"). Package-level variables whose type
// names such a value are blocked by global already (made outside the
// bubble, used in it); this file covers state whose type hides what it
// holds: a sync.Map, an atomic.Value, a value of type any, a slice or map
// of functions (hooks whose closures capture a channel), reached through
// pointers, slices, maps and struct fields. Only the first test run of a
// process shows none of it, and fix --verify runs each test once, so the
// site is not fixed, not unproven.

// keeps returns what in a value of type t may hold a value of any type
// ("a sync.Map", "a value of type any", "a slice of functions"), or "".
func keeps(t types.Type, inContainer bool, seen map[types.Type]bool) string {
	t = types.Unalias(t)
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch {
	case match.IsNamed(t, "sync", "Map"):
		return "a sync.Map"
	case match.IsNamed(t, "sync/atomic", "Value"):
		return "an atomic.Value"
	}
	if n, ok := t.(*types.Named); ok && (n.Obj().Pkg() == nil || match.IsStd(n.Obj().Pkg().Path())) {
		// error, a sync.Pool (poolBlock's), a bytes.Buffer: the standard
		// library's own state, not the package's.
		return ""
	}
	switch u := t.Underlying().(type) {
	case *types.Interface:
		if u.Empty() {
			return "a value of type any"
		}
	case *types.Signature:
		if inContainer {
			return "a collection of functions, whose closures may capture anything"
		}
	case *types.Pointer:
		return keeps(u.Elem(), inContainer, seen)
	case *types.Slice:
		return keeps(u.Elem(), true, seen)
	case *types.Array:
		return keeps(u.Elem(), true, seen)
	case *types.Map:
		if k := keeps(u.Key(), true, seen); k != "" {
			return k
		}
		return keeps(u.Elem(), true, seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if k := keeps(u.Field(i).Type(), true, seen); k != "" {
				return k
			}
		}
	}
	return ""
}

// bubbleValue returns what of the package's code makes or holds a value a
// bubble owns ("Bus, which holds a channel (Bus.subs)", "make(chan int)
// at hub.go:12"), or "", once per pass.
func (a *Analysis) bubbleValue() string {
	if a.owned != nil {
		return *a.owned
	}
	found := ""
	scope := a.pass.Pkg.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		if key, via := bound(tn.Type(), true, map[types.Type]bool{}); key != "" && key != effects.SharedCond {
			if _, held := holder(tn.Type(), a.pass.Pkg, key, via); held != "" {
				found = tn.Name() + ", which holds " + held
				break
			}
		}
	}
	for _, f := range a.pass.AllFiles {
		if found != "" {
			break
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if found != "" {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			made := false
			if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && id.Name == "make" && len(call.Args) > 0 {
				if _, isBuiltin := a.info.Uses[id].(*types.Builtin); isBuiltin {
					_, made = a.info.TypeOf(call.Args[0]).Underlying().(*types.Chan)
				}
			}
			made = made || match.IsPkgFunc(a.info, call, "time", "NewTimer", "NewTicker", "AfterFunc", "After", "Tick") ||
				match.IsPkgFunc(a.info, call, "context", "WithCancel", "WithTimeout", "WithDeadline", "WithCancelCause", "WithTimeoutCause", "WithDeadlineCause")
			if made {
				p := a.pass.Fset.Position(call.Pos())
				found = fmt.Sprintf("%s at %s:%d", types.ExprString(call.Fun), filepath.Base(p.Filename), p.Line)
			}
			return true
		})
	}
	a.owned = &found
	return found
}

// keptState blocks the test when it uses v, a package-level variable of
// the package whose type may hold a value of any type, and the package
// makes values a bubble owns (see the top of this file).
func (w *walker) keptState(v *types.Var, where string) {
	if v.Pkg() != w.a.pass.Pkg {
		return
	}
	k := keeps(v.Type(), false, map[types.Type]bool{})
	if k == "" {
		return
	}
	made := w.a.bubbleValue()
	if made == "" {
		return
	}
	name := v.Name() + strings.Replace(where, " in", ", in", 1)
	w.blockAs(clockKey(checkedKept), fmt.Sprintf("the test uses package-level state that may hold values of any type (%s, %s) and the package makes values a synctest bubble owns (%s): one made in the bubble and kept there outlives it, and the next test or run (go test -count=2) that meets it from outside the bubble is a fatal error (send on synctest channel from outside bubble)", name, k, made))
}
