package sleep_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
	"github.com/unflake/unflake/rules/sleep"
)

// A package that uses cgo blocks its tests' bubbles: a call into C is not
// durably blocking, so a bubble cannot hold the code. The loader parses
// the files cgo compiled, where import "C" has become runtime/cgo and
// C.answer the _Cfunc_answer wrapper; the rule must see cgo there too.
func TestCgoBlocksBubble(t *testing.T) {
	testmod.Short(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no C compiler: cgo cannot build")
	}
	dir := testmod.Write(t, `
-- go.mod --
module example.com/cg

go 1.25
-- cg.go --
package cg

// static int answer(void) { return 42; }
import "C"

// Answer asks C.
func Answer() int { return int(C.answer()) }
-- cg_test.go --
package cg

import (
	"testing"
	"time"
)

func TestAnswer(t *testing.T) {
	time.Sleep(10 * time.Millisecond)
	if Answer() != 42 {
		t.Fatal("wrong answer")
	}
}
`)
	res, err := rewrite.Run(&rewrite.Config{
		Dir:      dir,
		Patterns: []string{"./..."},
		Env:      testmod.GoEnv(t, "GOFLAGS=-mod=mod", "CGO_ENABLED=1"),
		Rules:    []*rule.Rule{sleep.Rule},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	if len(res.Changes) != 0 {
		t.Errorf("the test was rewritten: %s", res.Changes[0].New)
	}
	if len(res.Findings) != 1 || res.Findings[0].Fixed || !strings.Contains(res.Findings[0].Reason, "the package uses cgo") {
		t.Errorf("got findings %+v, want one not fixed because the package uses cgo", res.Findings)
	}
}
