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

// A sleep that ends a guess ("give the child time to start") and a sleep
// that is a window the test grants ("the worker must be up within
// 1.5s") look alike; the words next to it, the test's name and its
// failure messages tell them apart. StatedBound and NameStatedBound read
// those words more widely than MessageBound and NameBound, for a rule
// (readiness) whose replacement of the sleep ends when the awaited thing
// happens, however late: any stated bound keeps the sleep.

// statedBound matches what MessageBound does not: a comparative or an
// obligation with a duration ("under 2s", "less than 500ms", "must be up
// in 1.5s"), a deadline, a start-up time or budget.
var statedBound = regexp.MustCompile(`(?i)\b(under|less than|no (more|longer|later) than|at most|faster than|in|by)\s+(\d+(\.\d+)?\s*(ns|us|µs|ms|s|secs?|seconds?|minutes?|mins?|m|h)\b|(a|one|half a) (second|minute)\b)|\bdeadlines?\b|\b(start-?up|boot|readiness|ready) (time|budget|bound|limit|window|deadline|sla)\b|\bsla\b|\btime limit\b`)

// obligation and duration: "the daemon has to answer ... 2s" states a
// bound when both are in one sentence.
var (
	obligation = regexp.MustCompile(`(?i)\b(must|should|has to|have to|needs? to|is expected to|expected within|required to|guarantees?|promises?)\b`)
	duration   = regexp.MustCompile(`(?i)\b\d+(\.\d+)?\s*(ns|us|µs|ms|s|secs?|seconds?|minutes?|mins?|m|h)\b`)
	sentences  = regexp.MustCompile(`[.;!?\n]+\s`)
)

// StatedBound returns the part of text (a comment, a failure message)
// that states a time bound, or "": what MessageBound finds, a comparative
// with a duration ("under 2s"), a deadline or start-up budget, or a
// sentence with both an obligation and a duration ("must be up in 1.5s").
func StatedBound(text string) string {
	if b := MessageBound(text); b != "" {
		return b
	}
	if m := statedBound.FindString(text); m != "" {
		return m
	}
	return obligedDuration(text)
}

// obligedDuration returns the first sentence of text with both an
// obligation and a duration ("must be up in 1.5s"), or "".
func obligedDuration(text string) string {
	for _, sentence := range sentences.Split(text, -1) {
		if obligation.MatchString(sentence) && duration.MatchString(sentence) {
			return strings.TrimSpace(sentence)
		}
	}
	return ""
}

// nameUnits are the words after a number that make a duration of it in a
// name (TestUpIn1500ms, TestReady_2s).
var nameUnits = map[string]bool{"ns": true, "us": true, "ms": true, "s": true, "sec": true, "secs": true, "second": true, "seconds": true, "m": true, "min": true, "mins": true, "minute": true, "minutes": true, "h": true}

// nameSpeed are the words of a name that promise a speed (TestFastStart,
// TestReadyQuickly, TestStartupDeadline). "Slow" is not one: a test
// named for a slow child (TestSlowChild) is about surviving it.
var nameSpeed = map[string]bool{"fast": true, "faster": true, "quick": true, "quickly": true, "deadline": true, "sla": true, "latency": true}

// NameStatedBound returns the words of a name that state a time bound,
// or "": what NameBound finds, a duration (a number and a unit), or a
// word that promises a speed.
func NameStatedBound(name string) string {
	if b := NameBound(name); b != "" {
		return b
	}
	words := splitName(name)
	for i, w := range words {
		lw := strings.ToLower(w)
		if nameSpeed[lw] {
			return w
		}
		if i+1 < len(words) && unicode.IsDigit([]rune(w)[0]) && nameUnits[strings.ToLower(words[i+1])] {
			return w + words[i+1]
		}
	}
	return ""
}

// A clock that moves only when every goroutine blocks (a synctest
// bubble) keeps a timer's bound (a TTL, a period, a cooldown) but not a
// speed: work that is slow because it computes takes no virtual time.
// SpeedBound and NameSpeedBound find the words that bound how long the
// code may take, more narrowly than StatedBound, which also counts the
// timers' words.

// speedBound matches a bound on how long something takes: "within
// 200ms", "under 2s", "at most 1s", an SLA or a time limit.
var speedBound = regexp.MustCompile(`(?i)\b(within|under|less than|no (more|longer|later) than|at most|faster than)\s+(\d+(\.\d+)?\s*(ns|us|µs|ms|s|secs?|seconds?|minutes?|mins?|m|h)\b|(a|one|half a) (second|minute)\b)|\bsla\b|\btime limit\b`)

// SpeedBound returns the part of text (a comment) that bounds how long
// the code takes, or "": a comparative with a duration, an SLA, or a
// sentence with both an obligation and a duration ("must be warm in
// 200ms").
func SpeedBound(text string) string {
	if m := speedBound.FindString(text); m != "" {
		return m
	}
	return obligedDuration(text)
}

// NameSpeedBound returns the words of a name that bound how long the code
// takes, or "": a duration (TestWarmWithin200ms), "within", or, when
// speed is true (a test's own name, not a table's row label), a word
// that promises a speed (fast, quick, latency, SLA).
func NameSpeedBound(name string, speed bool) string {
	words := splitName(name)
	for i, w := range words {
		lw := strings.ToLower(w)
		if lw == "within" || speed && nameSpeed[lw] && lw != "deadline" {
			return w
		}
		if i+1 < len(words) && unicode.IsDigit([]rune(w)[0]) && nameUnits[strings.ToLower(words[i+1])] {
			return w + words[i+1]
		}
	}
	return ""
}
