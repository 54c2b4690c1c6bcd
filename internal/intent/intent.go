// Package intent reads what a test says it is about: its name, its
// subtests' names and the comments attached to it. A test named
// TestCacheOverTCP, or one whose comment says "this test must keep real
// time", declares that it exercises the real network or the wall clock;
// a rule whose fix would replace that (a synctest bubble's virtual clock,
// in-memory connections) leaves such a test as it is and says why, and a
// fix never leaves a comment that its change makes false.
//
// Names and comments are read differently. A name is chosen on purpose,
// so a single word in it counts (TCP, Socket, Loopback): identifiers are
// split into words at underscores, case changes and digits, so
// TestHTTPCache holds no "tcp" and TestTcpDial holds "Tcp". A comment
// often names a transport only to describe the code ("the server
// answers over TCP"), so in a comment only a phrase that insists counts:
// "real" or "actual" before the noun ("a real socket", "real time"), the
// wall clock or the system clock, or a word of necessity before it
// ("must use TCP", "deliberately over loopback"), or a refusal of what a
// fix would put in its place ("not using synctest", "do not convert to
// virtual time"); a negation just before it ("no real network",
// "instead of the real network"), a sentence that puts it elsewhere ("in
// production", "we used to need") or says it is not needed ("is
// irrelevant") cancels it.
//
// A Package reads what the code says beyond a test's own words: subtest
// names as the code computes them (a constant, a format, each case of a
// ranged table) and the helpers of the test files the test calls, whose
// names and comments speak for it; and it discounts the words a test's
// name shares with the code under test (TestFormatWallClock).
//
// The bubble analysis reads Clock and Network for the sleep and wallclock
// rules (a bubble's virtual clock, a fake clock's advance, a dropped
// budget, in-memory connections), and waitfor reads Clock: its poll ends
// when the state holds, so a sleep that measures a period stops
// measuring it. No rule replaces the file system today: testscope's
// t.TempDir and t.Chdir work on the same disk and the same OS temp dir
// as the code they replace, and freeport's port 0 is still the real
// network; so FileSystem has no reader yet and those rules need none.
package intent

import (
	"go/ast"
	"go/token"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Claim is a real resource a test may say it exercises.
type Claim uint8

const (
	Network    Claim = 1 << iota // the real network: TCP, UDP, sockets, loopback
	Clock                        // the wall clock: real time
	FileSystem                   // the real file system: a disk, the OS temp dir
)

// String names the claim as "the test says it exercises ..." completes.
func (c Claim) String() string {
	switch c {
	case Network:
		return "the real network"
	case Clock:
		return "the wall clock"
	case FileSystem:
		return "the real file system"
	}
	return "a real resource"
}

// Said is the evidence for a claim: which claim, and where it is said.
type Said struct {
	Claim Claim
	Where string // "its name says TCP", `a comment says "must keep real time"`
}

// Says words s about who ("the test", a helper's name): "the test says
// it exercises the real network (its name says TCP)".
func (s Said) Says(who string) string {
	return who + " says it exercises " + s.Claim.String() + " (" + s.Where + ")"
}

// Reason words s as the reason a fix that would replace the resource by
// what (a synctest bubble's virtual clock) is not made: "the test says
// it exercises the wall clock (a comment says "must keep real time"),
// which a synctest bubble's virtual clock would replace; left as is".
func (s Said) Reason(who, by string) string {
	return s.Says(who) + ", which " + by + " would replace; left as is"
}

// Of returns the first evidence that a function with these names and
// comments claims c: the names first (in order), then the comments.
func Of(c Claim, names []string, comments []*ast.CommentGroup) (Said, bool) {
	for _, n := range names {
		if w := Name(n, c); w != "" {
			return Said{Claim: c, Where: "its name says " + w}, true
		}
	}
	for _, g := range comments {
		if p := Comment(Prose(g), c); p != "" {
			return Said{Claim: c, Where: "a comment says " + quote(p)}, true
		}
	}
	return Said{}, false
}

// Prose returns the text of g without the comments that are directives
// to a tool rather than words to a reader: analysistest's expectations
// ("// want `...`" quote the diagnostics a test expects, which may well
// say "the real clock") and what CommentGroup.Text already drops
// (//go:build, //nolint:...).
func Prose(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	kept := &ast.CommentGroup{}
	for _, c := range g.List {
		if !isWant(c.Text) {
			kept.List = append(kept.List, c)
		}
	}
	if len(kept.List) == 0 {
		return ""
	}
	return kept.Text()
}

// isWant says whether a comment is an analysistest expectation:
// "// want" and then a quoted pattern.
func isWant(text string) bool {
	rest, ok := strings.CutPrefix(text, "//")
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(strings.TrimSpace(rest), "want ")
	rest = strings.TrimSpace(rest)
	return ok && rest != "" && (rest[0] == '`' || rest[0] == '"')
}

// quote quotes a phrase for a message, on one line, without the quote
// marks of its own: a phrase cut from a quotation ("must keep the “real
// time”") would otherwise print one mark unbalanced.
func quote(p string) string {
	p = strings.Map(func(r rune) rune {
		if strings.ContainsRune("\"“”„«»`", r) {
			return -1
		}
		return r
	}, p)
	return `"` + strings.Join(strings.Fields(p), " ") + `"`
}

// A word is a word of a name or a comment: its lower-case form and its
// place in the text (text[start:end] is how it is written).
type word struct {
	lower      string
	start, end int
	stop       bool // a sentence ends right after it
}

// nameWords lists, for each claim, the words and word sequences that say
// it in a name.
var nameWords = map[Claim][][]string{
	Network: {
		{"tcp"}, {"udp"}, {"socket"}, {"sockets"}, {"loopback"},
		{"real", "network"}, {"real", "net"}, {"real", "conn"}, {"real", "conns"}, {"real", "connection"},
	},
	// Not real+time: a name like TestRealTimeUpdates is about live
	// updates far more often than about the clock.
	Clock: {
		{"wallclock"}, {"realclock"}, {"wall", "clock"}, {"real", "clock"}, {"wall", "time"},
		{"system", "clock"}, {"os", "clock"}, {"real", "sleep"},
	},
	FileSystem: {
		{"real", "disk"}, {"real", "fs"}, {"real", "filesystem"}, {"real", "file", "system"},
		{"real", "files"}, {"os", "temp", "dir"}, {"os", "tempdir"},
	},
}

// Name returns the words of name (an identifier or a subtest's name) that
// say it exercises c, as written, or "". A negation just before them
// says the opposite: TestPoolNoTCP, TestExpiryWithoutSockets.
func Name(name string, c Claim) string {
	words := splitName(name)
	for i := range words {
		if i > 0 && oneOf(words[i-1].lower, nameNegations) {
			continue
		}
		for _, seq := range nameWords[c] {
			if hasSeq(words, i, seq) {
				return name[words[i].start:words[i+len(seq)-1].end]
			}
		}
	}
	return ""
}

// nameNegations are the words of a name that negate the words after them.
var nameNegations = []string{"no", "not", "non", "without", "unlike"}

func hasSeq(words []word, i int, seq []string) bool {
	if i+len(seq) > len(words) {
		return false
	}
	for j, s := range seq {
		if words[i+j].lower != s {
			return false
		}
	}
	return true
}

// splitName splits a name into words: at every character that is not a
// letter or a digit, between a lower-case letter and an upper-case one
// (CacheOver), before the last upper-case letter of a run followed by a
// lower-case one (TCPServer: TCP, Server), and between letters and
// digits (UDP4).
func splitName(s string) []word {
	var out []word
	start := -1
	var prev rune
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, word{lower: strings.ToLower(s[start:end]), start: start, end: end})
		}
		start = -1
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = r
			continue
		}
		if start >= 0 {
			next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
			switch {
			case unicode.IsLower(prev) && unicode.IsUpper(r),
				unicode.IsDigit(prev) != unicode.IsDigit(r),
				unicode.IsUpper(prev) && unicode.IsUpper(r) && unicode.IsLower(next):
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(s))
	return out
}

// commentNouns lists, for each claim, the nouns a phrase of a comment
// insists on. Sequences are written as one string.
var commentNouns = map[Claim][]string{
	Network:    {"network", "socket", "sockets", "tcp", "udp", "connection", "connections", "conn", "conns", "listener", "loopback", "port", "ports"},
	Clock:      {"time", "clock", "clocks", "timers", "elapsed time"},
	FileSystem: {"disk", "file system", "filesystem", "files", "fs", "directory", "directories"},
}

// necessityNouns are the nouns a word of necessity may insist on without
// "real": "must use TCP", but not "must use time".
var necessityNouns = map[Claim][]string{
	Network:    {"tcp", "udp", "socket", "sockets", "loopback", "network"},
	Clock:      {"wall clock", "wall time"},
	FileSystem: {"disk", "os temp dir", "os tempdir"},
}

// replacements lists, for each claim, what a fix would put in its place:
// a comment that refuses one ("not using synctest", "do not convert to
// virtual time") claims the real resource.
var replacements = map[Claim][]string{
	Clock: {"synctest", "virtual time", "virtual clock", "fake clock", "fake clocks", "fake time", "fake timers",
		"fake the clock", "faking the clock", "faked clock", "mock clock", "mock time", "mocked clock", "simulated time"},
}

var (
	realWords      = []string{"real", "actual", "genuine"}
	necessityWords = []string{"must", "needs", "need", "requires", "require", "deliberately", "intentionally", "purposely"}
	negations      = []string{"not", "no", "never", "without", "instead", "rather", "than", "cannot", "can't", "don't", "doesn't", "isn't", "won't", "mustn't", "needn't", "avoid", "avoids", "unlike"}
	// refusals are the words that refuse a replacement (replacements).
	refusals = []string{"not", "no", "never", "without", "don't", "avoid", "avoids", "mustn't", "shouldn't"}
	// defeats are the phrases that, after a replacement in its sentence,
	// say it would break the test: "faking the clock defeats it", "a
	// fake clock is not what production sees".
	defeats = []string{"defeats", "defeat", "would defeat", "breaks", "would break", "hides", "would hide", "is not what"}
	// always are phrases that say a claim in any comment.
	always = map[Claim][]string{
		Clock: {"wall clock", "wallclock", "wall time", "must keep real time",
			"system clock", "os clock", "clock the os provides", "real sleep", "real sleeps",
			"physical time", "physical clock", "kernel clock", "monotonic clock",
			"operating system's clock", "operating system clock"},
		FileSystem: {"os temp dir", "os tempdir"},
	}
	// elsewhere are phrases that, before the resource in its sentence,
	// put it outside the test: "we used to need real time"; production
	// does so anywhere in the sentence ("the cache uses the real clock in
	// production").
	elsewhere  = []string{"used to need", "used to require", "used to be", "unlike"}
	production = []string{"in production"}
	// unneeded are phrases that, after the resource in its sentence, say
	// the test does without it: "the real time taken is irrelevant", "real
	// time, but not any more".
	unneeded = []string{"irrelevant", "not needed", "isn't needed", "not required", "doesn't matter",
		"does not matter", "not any more", "anymore", "no longer"}
)

// Comment returns the phrase of text, a comment's text, that says the
// code exercises c, as written, or "".
func Comment(text string, c Claim) string {
	words := splitText(text)
	for i := range words {
		for _, r := range replacements[c] {
			if n := phraseAt(words, i, r); n > 0 {
				if j := refused(words, i); j >= 0 {
					return span(text, words, j, i+n)
				}
				if k := defeated(words, i+n); k >= 0 {
					return span(text, words, i, k)
				}
			}
		}
		if negated(words, i) || aside(words, i) {
			continue
		}
		for _, p := range always[c] {
			if n := phraseAt(words, i, p); n > 0 {
				return span(text, words, i, i+n)
			}
		}
		switch {
		case oneOf(words[i].lower, realWords):
			// "real X" or "real T X", T one more noun of the claim
			// ("a real TCP socket").
			j := i + 1
			if j+1 < len(words) && !words[i].stop && oneOf(words[j].lower, commentNouns[c]) && !words[j].stop {
				j++ // "a real TCP socket"
			}
			for _, k := range []int{j, i + 1} {
				for _, noun := range commentNouns[c] {
					if n := phraseAt(words, k, noun); n > 0 && !stopBetween(words, i, k) {
						return span(text, words, necessityBefore(words, i), k+n)
					}
				}
			}
		case oneOf(words[i].lower, necessityWords):
			// "must use TCP": within four words, in the sentence.
			for j := i + 1; j < len(words) && j <= i+4; j++ {
				if words[j-1].stop || oneOf(words[j].lower, negations) || oneOf(words[j].lower, realWords) {
					break // a new sentence, "needs no ...", or "needs a real ...": the case above
				}
				for _, noun := range necessityNouns[c] {
					if n := phraseAt(words, j, noun); n > 0 {
						return span(text, words, i, j+n)
					}
				}
			}
		}
	}
	return ""
}

// refused returns the index of a refusal among the four words of the
// sentence before i ("not using synctest", "do not convert to virtual
// time"), or -1.
func refused(words []word, i int) int {
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if words[j].stop {
			break
		}
		if oneOf(words[j].lower, refusals) {
			return j
		}
	}
	return -1
}

// defeated returns the end of a phrase of defeats in the sentence from
// i on, or -1.
func defeated(words []word, i int) int {
	for j := i; j < len(words); j++ {
		for _, p := range defeats {
			if n := phraseAt(words, j, p); n > 0 {
				return j + n
			}
		}
		if words[j].stop {
			break
		}
	}
	return -1
}

// aside reports whether the sentence of words[i] puts what it says
// outside the test (elsewhere, before i; production, anywhere) or says
// the test does without it (unneeded, after i).
func aside(words []word, i int) bool {
	start := i
	for start > 0 && !words[start-1].stop {
		start--
	}
	for j := start; j < i; j++ {
		for _, p := range elsewhere {
			if phraseAt(words, j, p) > 0 {
				return true
			}
		}
	}
	for j := start; j < len(words); j++ {
		for _, p := range production {
			if phraseAt(words, j, p) > 0 {
				return true
			}
		}
		for _, p := range unneeded {
			if j >= i && phraseAt(words, j, p) > 0 {
				return true
			}
		}
		if words[j].stop {
			break
		}
	}
	return false
}

// necessityBefore returns the index of a word of necessity among the
// four words of the sentence before i ("must keep real time"), or i.
func necessityBefore(words []word, i int) int {
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if words[j].stop {
			break
		}
		if oneOf(words[j].lower, necessityWords) {
			return j
		}
	}
	return i
}

// negated reports whether a negation is among the three words of the
// sentence before i: "no real network", "instead of the real network".
func negated(words []word, i int) bool {
	for j := i - 1; j >= 0 && j >= i-3; j-- {
		if words[j].stop {
			return false
		}
		if oneOf(words[j].lower, negations) {
			return true
		}
	}
	return false
}

// stopBetween reports whether a sentence ends after one of words[i:j].
func stopBetween(words []word, i, j int) bool {
	for k := i; k < j; k++ {
		if words[k].stop {
			return true
		}
	}
	return false
}

// phraseAt returns how many words the phrase p (words separated by
// spaces) takes at words[i:], within a sentence, or 0.
func phraseAt(words []word, i int, p string) int {
	ps := strings.Fields(p)
	if i+len(ps) > len(words) {
		return 0
	}
	for j, s := range ps {
		if words[i+j].lower != s || j > 0 && words[i+j-1].stop {
			return 0
		}
	}
	return len(ps)
}

// span is text from words[i] to words[j-1], as written.
func span(text string, words []word, i, j int) string {
	return text[words[i].start:words[j-1].end]
}

// splitText splits a comment's text into words of letters, digits and
// apostrophes (don't); a sentence ends at '.', '!', '?', ';' or ':'
// followed by a space or the end of the text, or at an empty line.
func splitText(s string) []word {
	s = urls.ReplaceAllStringFunc(s, func(u string) string { return strings.Repeat(" ", len(u)) })
	var out []word
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' && start >= 0 {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, word{lower: strings.ToLower(s[start:i]), start: start, end: i})
			start = -1
		}
		if len(out) == 0 {
			continue
		}
		rest := s[i+utf8.RuneLen(r):]
		switch {
		case strings.ContainsRune(".!?;:", r) && (rest == "" || rest[0] == ' ' || rest[0] == '\n'):
			out[len(out)-1].stop = true
		case r == '\n' && strings.HasPrefix(rest, "\n"):
			out[len(out)-1].stop = true
		}
	}
	if start >= 0 {
		out = append(out, word{lower: strings.ToLower(s[start:]), start: start, end: len(s)})
	}
	return out
}

// urls matches a URL in a comment: its words (real-time-guarantees) are
// an address, not a claim.
var urls = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s]*`)

func oneOf(s string, list []string) bool {
	for _, l := range list {
		if s == l {
			return true
		}
	}
	return false
}

// Comments returns the comment groups of file attached to node: the
// groups inside it, the group that ends on the line before it starts (a
// doc comment, or the comment above a statement), and a group that starts
// on the line it ends on (a trailing comment).
func Comments(fset *token.FileSet, file *ast.File, node ast.Node) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	if fd, ok := node.(*ast.FuncDecl); ok && fd.Doc != nil {
		out = append(out, fd.Doc)
	}
	add := func(g *ast.CommentGroup) {
		if len(out) == 0 || out[0] != g {
			out = append(out, g)
		}
	}
	first, last := fset.Position(node.Pos()).Line, fset.Position(node.End()).Line
	groups := file.Comments // in source order
	i := sort.Search(len(groups), func(i int) bool { return groups[i].End() > node.Pos() })
	if i > 0 && fset.Position(groups[i-1].End()).Line == first-1 {
		add(groups[i-1])
	}
	for ; i < len(groups) && groups[i].End() <= node.End(); i++ {
		add(groups[i])
	}
	if i < len(groups) && groups[i].Pos() >= node.End() && fset.Position(groups[i].Pos()).Line == last {
		add(groups[i])
	}
	return out
}
