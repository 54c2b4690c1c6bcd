package wallclock

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"
	"unicode"

	"github.com/unflake/unflake/internal/bubble"
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
