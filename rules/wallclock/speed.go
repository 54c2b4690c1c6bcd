package wallclock

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/unflake/unflake/internal/bubble"
	"github.com/unflake/unflake/internal/match"
)

// speedWords name speed as the property a test checks, in its name or a
// subtest's (TestCacheHitIsFast, t.Run("fast path", ...)). A failure
// message does not count them: nearly every timing check's message says
// "too slow", which names the check, not the property.
var speedWords = map[string]bool{
	"fast": true, "faster": true, "fastest": true,
	"slow": true, "slower": true, "slowly": true,
	"quick": true, "quicker": true, "quickly": true,
	"latency": true, "speed": true, "speedy": true, "speedup": true,
	"instant": true, "instantly": true,
	"perf": true, "performance": true,
	// Complexity: TestGetIsConstantTime, TestLookupScalesLinearly.
	"constant": true, "linear": true, "linearly": true, "quadratic": true, "logarithmic": true,
	"complexity": true, "amortized": true, "amortised": true, "scales": true, "scaling": true,
}

// cacheWords name a property whose only sign is speed: a cached or
// memoised call returns the same value as a computed one, faster. In a
// name or in the timing check's failure message ("memoized call returns
// quickly"), they make the budget the check of that property.
var cacheWords = map[string]bool{
	"cache": true, "cached": true, "caches": true, "caching": true, "hit": true, "hits": true,
	"memo": true, "memoize": true, "memoized": true, "memoizes": true, "memoise": true, "memoised": true,
	"memoises": true, "memoization": true, "memoisation": true, "warm": true, "reused": true,
}

// namesSpeed says where the test names speed as the property it checks
// ("its name says Fast", `its failure message says "memoized call
// returns quickly"`), or "". Such a budget is the check of what the test
// names, whatever other checks remain: removing it leaves the property
// unchecked (a memoisation test that also checks the value).
func (c *checker) namesSpeed(s *site, t *bubble.Target) string {
	for _, part := range strings.Split(t.Name(), "/") {
		if w := word(part, speedWords, cacheWords); w != "" {
			return "its name says " + w
		}
	}
	said := ""
	ast.Inspect(s.stmt, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING || said != "" {
			return said == ""
		}
		text, err := strconv.Unquote(lit.Value)
		if err == nil && word(text, cacheWords) != "" {
			said = "its failure message says " + strconv.Quote(text)
		}
		return said == ""
	})
	return said
}

// word returns the first word of text in one of sets, text split at
// spaces, punctuation and the capitals of a Go name; or "".
func word(text string, sets ...map[string]bool) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(text)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r):
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	for _, w := range words {
		for _, set := range sets {
			if set[strings.ToLower(w)] {
				return w
			}
		}
	}
	return ""
}

// checkedExact is the Changes.Checked entry of a bubble fix whose
// assertion is an upper bound: the virtual clock's lack of overhead only
// makes an upper bound easier to meet, and the code's waits meet it as
// they did.
const checkedExact = "no lower bound at the exact sum of the code's waits"

// speedOnly says what the timed region does whose only sign is speed,
// or "": it repeats a call the test made before the region (the second
// call's speed is what a cache or a memo gives: Derive twice), or calls
// the code under test in a loop (the budget bounds each call's cost, its
// complexity: a Get that scans is as right as one that indexes). Values
// checked after it stay right under such a bug.
func (c *checker) speedOnly(s *site) string {
	if s.start == nil {
		return ""
	}
	region := c.region(s)
	if len(region) == 0 {
		return ""
	}
	inRegion := func(n ast.Node) bool { return n.Pos() >= region[0].Pos() && n.End() <= region[len(region)-1].End() }
	before := map[*types.Func]bool{}
	for _, st := range match.StmtList(s.start.parent) {
		if st.Pos() >= region[0].Pos() {
			break
		}
		ast.Inspect(st, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg && !c.inTest(fn) {
					before[fn.Origin()] = true
				}
			}
			return true
		})
	}
	said := ""
	for _, st := range region {
		ast.Inspect(st, func(n ast.Node) bool {
			if said != "" {
				return false
			}
			switch n := n.(type) {
			case *ast.CallExpr:
				if fn := match.Callee(c.info, n); fn != nil && before[fn.Origin()] && inRegion(n) {
					p := c.pass.Fset.Position(n.Pos())
					said = fmt.Sprintf("the timed region repeats a call the test made before it (%s at %s:%d): its speed is what a cache or a memo gives", fn.Name(), filepath.Base(p.Filename), p.Line)
				}
			case *ast.ForStmt, *ast.RangeStmt:
				ast.Inspect(n, func(m ast.Node) bool {
					if call, ok := m.(*ast.CallExpr); ok && said == "" {
						if fn := match.Callee(c.info, call); fn != nil && fn.Pkg() == c.pass.Pkg && !c.inTest(fn) {
							p := c.pass.Fset.Position(call.Pos())
							said = fmt.Sprintf("the timed region calls %s in a loop (at %s:%d): the budget bounds the cost of each call, its complexity", fn.Name(), filepath.Base(p.Filename), p.Line)
						}
					}
					return said == ""
				})
			}
			return said == ""
		})
	}
	return said
}

// inTest reports whether fn is declared in a _test.go file (a helper of
// the tests, not code under test).
func (c *checker) inTest(fn *types.Func) bool {
	return strings.HasSuffix(c.pass.Fset.Position(fn.Pos()).Filename, "_test.go")
}
