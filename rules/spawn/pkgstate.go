package spawn

import (
	"go/types"
	"path/filepath"
	"slices"

	"github.com/unflake/unflake/internal/match"
	"github.com/unflake/unflake/rule/effect"
)

// A function of another package can keep what the test gives it as well
// as one of the test's own: the module's test support that records the
// highest revision seen and fails on one that does not move past it
// (revtest.Observe(rev), once per child) relates two children's results
// as a check comparing them does (red team batch 14, revwatermark). Its
// body is not in the typed package; its effect summary is. It keeps
// nothing only when the summary shows no effect but a wait on, or a
// read of, the real clock, and no call it could not follow; without a
// summary it may keep anything. The standard library's functions a test
// hands results to (fmt, strings, bytes, strconv, encoding) keep nothing
// of them, nor do the assertion libraries (statelessPkgs), whose calls
// through testing.TB's interface a summary cannot follow.

// statelessPkgs are assertion libraries outside the standard library
// whose functions keep nothing of what they are given between calls.
var statelessPkgs = []string{
	"github.com/stretchr/testify/assert",
	"github.com/stretchr/testify/require",
	"github.com/google/go-cmp/cmp",
	"github.com/google/go-cmp/cmp/cmpopts",
	"gotest.tools/v3/assert",
	"gotest.tools/assert",
	"github.com/frankban/quicktest",
	"github.com/matryer/is",
}

// otherPkgState reports whether fn, a function of a package other than
// the test's, may keep package-level state of what it is given.
func (c *checker) otherPkgState(fn *types.Func) bool {
	pkg := fn.Pkg()
	if pkg == nil {
		return false
	}
	path := pkg.Path()
	if match.IsStd(path) && !c.inModule(path) || slices.Contains(statelessPkgs, path) {
		return false
	}
	s := c.pass.Effects.Of(fn)
	if s == nil || s.Opaque != "" {
		return true
	}
	for _, e := range s.Effects {
		if e.Kind != effect.Timer && e.Kind != effect.ReadsClock {
			return true
		}
	}
	return false
}

// inModule reports whether path is a package of the test's module, whose
// path may lack a dot ("example/app").
func (c *checker) inModule(path string) bool {
	if len(c.pass.AllFiles) == 0 {
		return false
	}
	root, modPath := match.ModuleOf(filepath.Dir(c.pass.Fset.File(c.pass.AllFiles[0].Pos()).Name()))
	_, ok := match.ModuleDir(root, modPath, path)
	return ok
}
