package effects

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/crash"
)

// A panic while summarising a package goes on up to the asking rule with
// where it happened, leaves the package unlocked, and its summaries
// unknown from then on: the next asker gets nil, not a deadlock or a half
// made summary.
func TestLazyPkgPanic(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", "package p\n\nimport \"strings\"\n\nfunc F() string { return strings.ToUpper(\"x\") }\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{},
		Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("p", fset, []*ast.File{f}, info)
	if err != nil {
		t.Fatal(err)
	}
	var broken map[string]*Summary
	other := func(*types.Func) *Summary {
		broken["x"] = nil // a bug in another package's summary: assignment to a nil map
		return nil
	}
	lp := &lazyPkg{s: newSummariser(pkg, info, []*ast.File{f}, other)}
	ask := func() (sum *Summary, p *crash.Panic) {
		defer func() {
			if v := recover(); v != nil {
				p = crash.Recovered(v)
			}
		}()
		return lp.summary("p.F"), nil
	}
	_, p := ask()
	if p == nil || !strings.Contains(p.Frame, "effects.TestLazyPkgPanic.func1") {
		t.Fatalf("panic %v, want one at the test's other function", p)
	}
	if sum, p := ask(); sum != nil || p != nil || lp.err == nil {
		t.Errorf("asked again: %v, %v (err %v); want no summary, no panic, the package broken", sum, p, lp.err)
	}
}
