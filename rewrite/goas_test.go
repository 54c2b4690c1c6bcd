package rewrite_test

import (
	"go/ast"
	"path/filepath"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// gatedZero is sleepZero whose fix needs go version gate in the file it
// edits: below it the finding is reported without a fix.
func gatedZero(name, gate string) *rule.Rule {
	r := sleepZero(name, zero)
	run := r.Run
	r.Run = func(pass *rule.Pass) error {
		report := pass.Report
		pass.Report = func(d rule.Diagnostic) {
			if f := fileAt(pass, d); f == nil || !pass.FileUsesGo(f, gate) {
				d.Fix, d.NotFixed = nil, "needs "+gate
			}
			report(d)
		}
		return run(pass)
	}
	return r
}

func fileAt(pass *rule.Pass, d rule.Diagnostic) *ast.File {
	for _, f := range pass.Files {
		if f.Pos() <= d.Pos && d.Pos < f.End() {
			return f
		}
	}
	return nil
}

const goAsModule = `
-- go.mod --
module m

go 1.22
-- a_test.go --
package m

import (
	"testing"
	"time"
)

func TestA(t *testing.T) { time.Sleep(1) }
-- pinned_test.go --
//go:build go1.22

package m

import (
	"testing"
	"time"
)

func TestPinned(t *testing.T) { time.Sleep(2) }
`

func TestGoAs(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, goAsModule)
	gomod := filepath.Join(dir, "go.mod")
	type key struct{ rule, file string }
	run := func(goAs func(string) string, rules ...*rule.Rule) map[key]rewrite.Finding {
		t.Helper()
		res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: rules, GoAs: goAs})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Errors) > 0 {
			t.Fatalf("errors: %v", res.Errors)
		}
		out := map[key]rewrite.Finding{}
		for _, f := range res.Findings {
			out[key{f.Rule, filepath.Base(f.File)}] = f
		}
		return out
	}

	g23, g99 := gatedZero("g23", "go1.23"), gatedZero("g99", "go1.99")
	plain := run(nil, g23)
	if f := plain[key{"g23", "a_test.go"}]; f.Fixed || f.NeedsGo != "" {
		t.Errorf("at go 1.22: %+v, want not fixed", f)
	}
	to26 := func(p string) string {
		if p != gomod {
			t.Errorf("GoAs(%s), want %s", p, gomod)
		}
		return "go1.26"
	}
	raised := run(to26, g23)
	for k, f := range run(to26, g99) {
		raised[k] = f
	}
	for _, c := range []struct {
		k       key
		fixed   bool
		needsGo string
	}{
		{key{"g23", "a_test.go"}, true, "go1.23"},
		{key{"g99", "a_test.go"}, false, ""},      // beyond the raise
		{key{"g23", "pinned_test.go"}, false, ""}, // its //go:build line sets its version
	} {
		f, ok := raised[c.k]
		if !ok || f.Fixed != c.fixed || f.NeedsGo != c.needsGo {
			t.Errorf("%v raised to go1.26: fixed %v needsGo %q, want %v %q", c.k, f.Fixed, f.NeedsGo, c.fixed, c.needsGo)
		}
	}
	// An older version is no raise.
	lower := run(func(string) string { return "go1.21" }, g23)
	if f := lower[key{"g23", "a_test.go"}]; f.Fixed {
		t.Errorf("GoAs go1.21 on a go 1.22 module fixed %+v", f)
	}
}
