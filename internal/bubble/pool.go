package bubble

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"

	"github.com/unflake/unflake/internal/match"
)

// poolBlock says why the package-level variable v blocks the test when v
// is a sync.Pool of the package whose New makes timers, tickers or
// channels (hashicorp/yamux's timerPool), or is "". A value made in one
// bubble and taken from the pool by another, or by a test outside any
// bubble, is used outside the bubble it belongs to: synctest stops the
// program ("select on synctest channel from outside bubble"). A second
// wrapped test, or -count=2, is enough.
func (a *Analysis) poolBlock(v *types.Var, where string) string {
	if v.Pkg() != a.pass.Pkg || !match.IsNamed(deref(v.Type()), "sync", "Pool") {
		return ""
	}
	init := a.initOf(v)
	if init == nil {
		return ""
	}
	made := ""
	ast.Inspect(init, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || made != "" {
			return made == ""
		}
		switch {
		case match.IsPkgFunc(a.info, call, "time", "NewTimer", "NewTicker", "AfterFunc"):
			made = "timers"
		case len(call.Args) > 0 && isMakeChan(a.info, call):
			made = "channels"
		}
		return made == ""
	})
	if made == "" {
		return ""
	}
	return fmt.Sprintf("the test uses a package-level sync.Pool of %s (%s), which every test shares: synctest stops the program when one a bubble made is taken from the pool by another bubble or by a test outside one", made, v.Name()+strings.Replace(where, " in", ", in", 1))
}

// initOf returns the expression that initialises the package-level
// variable v in the package's files, or nil.
func (a *Analysis) initOf(v *types.Var) ast.Expr {
	for _, f := range a.pass.AllFiles {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok || len(vs.Values) != len(vs.Names) {
					continue
				}
				for i, name := range vs.Names {
					if a.info.Defs[name] == types.Object(v) {
						return vs.Values[i]
					}
				}
			}
		}
	}
	return nil
}

func deref(t types.Type) types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// isMakeChan reports whether call is make(chan T, ...).
func isMakeChan(info *types.Info, call *ast.CallExpr) bool {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok || id.Name != "make" {
		return false
	}
	if _, ok := info.Uses[id].(*types.Builtin); !ok {
		return false
	}
	_, ok = info.Types[call.Args[0]].Type.Underlying().(*types.Chan)
	return ok
}
