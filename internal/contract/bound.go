package contract

import (
	"regexp"
	"strings"
	"unicode"
)

// A test's name, a subtest's name or a failure message may state a time
// bound: "within 100ms", "after the TTL", "every tick", "in time",
// "late", "period", "interval", "timeout". Then the wait is the window
// that checks the bound, whatever durations the analysis can see.

// boundWords are the words of a name that state a time bound
// (TestFlushEvery50ms, TestRenewBeforeTTL, TestHalfOpenAfterCooldown).
var boundWords = map[string]bool{
	"within": true, "every": true, "period": true, "periodic": true, "periodically": true,
	"interval": true, "intervals": true, "timeout": true, "timeouts": true,
	"ttl": true, "cooldown": true, "late": true,
}

// NameBound returns the words of the identifier or subtest name that
// state a time bound, or "". Names are split into words at case changes,
// digits and punctuation: TestRenewEveryTTLThird holds "every" and "ttl",
// TestLatency holds no "late".
func NameBound(name string) string {
	words := splitName(name)
	for i, w := range words {
		lw := strings.ToLower(w)
		if boundWords[lw] {
			return w
		}
		if (lw == "in" || lw == "on") && i+1 < len(words) && strings.EqualFold(words[i+1], "time") {
			return w + " " + words[i+1]
		}
	}
	return ""
}

// messageBound matches a failure message's statement of a time bound.
// "timed out" and "timeout waiting" are how a poll says it gave up, not a
// bound the code keeps, and are no match.
var messageBound = regexp.MustCompile(`(?i)\bwithin\s+(\d+(\.\d+)?\s*(ns|us|µs|ms|s|secs?|seconds?|minutes?|m|h)\b|(the|a|an|one|its|\S*%v|\S*%s|\S*%d)\b)|\b(in|on) time\b|\blate\b|\bevery\b|\bperiod(ic|ically|s)?\b|\bintervals?\b|\btimeouts?\b(\s+(waiting|while|for))?|\bttl\b|\bcooldown\b|\bafter the (deadline|delay|expiry)\b`)

// MessageBound returns the part of a failure message that states a time
// bound, or "".
func MessageBound(text string) string {
	for _, m := range messageBound.FindAllStringSubmatchIndex(text, -1) {
		s := text[m[0]:m[1]]
		low := strings.ToLower(s)
		if strings.HasPrefix(low, "timeout") && strings.Contains(low, " ") {
			continue // "timeout waiting for the server": the poll gave up
		}
		return s
	}
	return ""
}

// splitName splits an identifier or a subtest name into words: at
// underscores, spaces and punctuation, at a lower-to-upper change, before
// the last capital of a run followed by a lower case letter (TTLThird →
// TTL Third), and around digits.
func splitName(s string) []string {
	var words []string
	rs := []rune(s)
	start := 0
	flush := func(end int) {
		if end > start {
			words = append(words, string(rs[start:end]))
		}
		start = end
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			start = i + 1
			continue
		}
		if i == start {
			continue
		}
		p := rs[i-1]
		switch {
		case unicode.IsDigit(r) != unicode.IsDigit(p):
			flush(i)
		case unicode.IsUpper(r) && unicode.IsLower(p):
			flush(i)
		case unicode.IsUpper(r) && unicode.IsUpper(p) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			flush(i)
		}
	}
	flush(len(rs))
	return words
}
