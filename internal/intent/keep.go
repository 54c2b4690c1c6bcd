package intent

import (
	"regexp"
	"strings"
)

// What a comment says about the code beside it, read for the engine's
// guard: a fix that changes a line a comment is attached to must not
// leave that comment false. Two kinds of sentence count.
//
// Keeps: the code is meant to stay as it is written ("intentionally
// never closed", "must listen on exactly 127.0.0.1:48089", "fixed port,
// as in prod", "do not convert to virtual time"). Any change of that code
// contradicts it.
//
// Uses: the code uses a real resource, said concretely ("a real socket",
// "dials it over TCP", "this sleep is a real sleep", "the system
// clock"). Only a change that takes the resource away from that code
// contradicts it, so the guard asks Code whether the line names the
// resource before and after the change.
//
// Both read words, sentence by sentence, as Comment does, and a negation
// just before the phrase cancels it ("not on purpose", "no real time
// needed", "instead of a real socket"). Explanations that claim nothing
// ("wait for the server to start", "give the goroutine time to run")
// say neither.

// keepWords say on their own that the code is meant as it is.
var keepWords = []string{
	"intentionally", "intentional", "deliberately", "deliberate", "purposely", "purposefully",
	"hardcode", "hardcodes", "hardcoded", "hardcoding",
}

// keepPhrases say it in several words (written as one string).
var keepPhrases = []string{
	"on purpose", "by design", "hard coded", "hard codes", "hard code",
	"must stay", "must keep", "must remain", "must listen", "should stay", "has to stay", "needs to stay",
	"stay as is", "keep as is", "leave as is", "left as is", "keep this", "leave this",
	"fixed port", "fixed address", "as in prod", "as in production", "matches prod", "matches production",
	"never closed", "never close", "never closes",
}

// mustBeWhat are the words after "must be" that make it a claim about
// this very code ("must be this socket", "must be exactly port 80"),
// not about a value ("n must be 3").
var mustBeWhat = []string{"this", "that", "these", "those", "exactly", "fixed", "kept", "left", "here", "the same"}

// keepNegations, followed by a verb of change, keep the code as it is:
// "don't replace", "never closed". "not" counts after a word that makes
// it an instruction ("do not convert", "must not change"), not in a
// description ("it does not use the network").
var (
	keepNegations = []string{"don't", "never", "mustn't", "shouldn't", "cannot", "can't"}
	notAfter      = []string{"do", "must", "should", "need", "can"}
)

// keepNegation reports whether words[i] forbids what follows.
func keepNegation(words []word, i int) bool {
	if words[i].lower == "not" {
		return i > 0 && !words[i-1].stop && oneOf(words[i-1].lower, notAfter)
	}
	return oneOf(words[i].lower, keepNegations) && !negated(words, i)
}

// changeVerbs are the verbs of a change a fix may make.
var changeVerbs = []string{
	"change", "changed", "changing", "convert", "converted", "converting", "replace", "replaced", "replacing",
	"use", "touch", "touched", "modify", "modified", "edit", "edited", "move", "moved", "remove", "removed",
	"close", "closed", "closing", "fix", "fixed", "rewrite", "rewritten", "delete", "deleted",
	"parallelize", "parallelise", "mock", "mocked", "fake", "faked", "virtualize", "virtualise", "shorten",
}

// exactAddr matches "exactly" before an address or a port.
var exactAddr = regexp.MustCompile(`(?i)\bexactly\s+(port\b|localhost\b|[\w.\[\]-]*:\d+|\d+\.\d+\.\d+\.\d+)`)

// Keeps returns the sentence of comment (a comment's text) that says the
// code beside it is meant to stay as it is written, and whether there is
// one.
func Keeps(comment string) (sentence string, ok bool) {
	words := splitText(comment)
	for i := range words {
		if p := keepsAt(comment, words, i); p {
			return sentenceAt(comment, words, i), true
		}
	}
	return "", false
}

// keepsAt reports whether a phrase that keeps the code starts at words[i].
func keepsAt(text string, words []word, i int) bool {
	w := words[i].lower
	if keepNegation(words, i) {
		// "do not convert", "must not be changed", "never closed".
		for j := i + 1; j < len(words) && j <= i+3; j++ {
			if words[j-1].stop {
				break
			}
			if oneOf(words[j].lower, changeVerbs) {
				return true
			}
		}
	}
	if negated(words, i) {
		return false
	}
	if oneOf(w, keepWords) {
		return true
	}
	for _, p := range keepPhrases {
		if phraseAt(words, i, p) > 0 {
			return true
		}
	}
	if phraseAt(words, i, "must be") > 0 {
		for _, p := range mustBeWhat {
			if phraseAt(words, i+2, p) > 0 && !words[i+1].stop {
				return true
			}
		}
	}
	if w == "exactly" {
		return exactAddr.MatchString(text[words[i].start:])
	}
	return false
}

// usesWords say, on their own, that code uses c: a comment above a
// net.Listen that says "TCP" or "socket" is false once the listener is
// in memory, whether or not it insists.
var usesWords = map[Claim][]string{
	Network: {"tcp", "udp", "socket", "sockets", "loopback", "network", "port", "ports"},
}

// usesPhrases say it in several words.
var usesPhrases = map[Claim][]string{
	Clock: {"system clock", "os clock", "real sleep", "real sleeps", "actual sleep", "real timer", "real ticker"},
}

// fakeWords name what stands in for a real resource; a negated verb of
// change before one ("do not convert to virtual time", "never use a fake
// clock") says the code uses the real one.
var fakeWords = map[Claim][]string{
	Network: {"pipe", "pipes", "memory"},
	Clock:   {"virtual", "fake", "synctest", "bubble", "mock", "simulated"},
}

// Uses returns the sentence of comment that says the code beside it uses
// c, the real resource, or "". It says more than Comment: a word that
// names the resource counts ("over TCP"), since the guard asks only about
// a line that uses the resource and a change that takes it away.
func Uses(comment string, c Claim) string {
	words := splitText(comment)
	if p := Comment(comment, c); p != "" {
		for i := range words {
			if strings.HasPrefix(comment[words[i].start:], p) {
				return sentenceAt(comment, words, i)
			}
		}
		return p
	}
	for i := range words {
		if keepNegation(words, i) {
			for j := i + 1; j < len(words) && j <= i+3 && !words[j-1].stop; j++ {
				if !oneOf(words[j].lower, changeVerbs) && words[j].lower != "run" && words[j].lower != "put" {
					continue
				}
				for k := j + 1; k < len(words) && k <= j+4 && !words[k-1].stop; k++ {
					if oneOf(words[k].lower, fakeWords[c]) {
						return sentenceAt(comment, words, i)
					}
				}
			}
		}
		if negated(words, i) {
			continue
		}
		if oneOf(words[i].lower, usesWords[c]) && !negatedWithin(words, i, 5) {
			return sentenceAt(comment, words, i)
		}
		for _, p := range usesPhrases[c] {
			if phraseAt(words, i, p) > 0 {
				return sentenceAt(comment, words, i)
			}
		}
	}
	return ""
}

// codeWords are what a line of Go code that uses c holds.
var codeWords = map[Claim][]string{
	Network:    {"net.", `"tcp`, `"udp`, `"unix`, "Listen", "Dial", "httptest.", "Socket"},
	Clock:      {"time.", "Sleep(", "Clock", "Timer", "Ticker"},
	FileSystem: {"os.", "ioutil.", "TempDir", "filepath."},
}

// Code reports whether src, a line of Go code, names c: a net.Listen, a
// time.Sleep, an os.Open. It reads text, not types: it is asked about a
// line a comment describes, before and after a change.
func Code(src string, c Claim) bool {
	for _, w := range codeWords[c] {
		if strings.Contains(src, w) {
			return true
		}
	}
	return false
}

// negatedWithin reports whether a negation is among the n words of the
// sentence before i: a bare noun may close a longer phrase than "real
// X" does ("instead of a real TCP socket").
func negatedWithin(words []word, i, n int) bool {
	for j := i - 1; j >= 0 && j >= i-n; j-- {
		if words[j].stop {
			return false
		}
		if oneOf(words[j].lower, negations) {
			return true
		}
	}
	return false
}

// sentenceAt returns the sentence of text that holds words[i], as
// written.
func sentenceAt(text string, words []word, i int) string {
	from := i
	for from > 0 && !words[from-1].stop {
		from--
	}
	to := i
	for to < len(words)-1 && !words[to].stop {
		to++
	}
	end := words[to].end
	if end < len(text) && strings.ContainsRune(".!?", rune(text[end])) {
		end++
	}
	return text[words[from].start:end]
}
