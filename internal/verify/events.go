package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// An event is one line of go test -json (test2json) output.
type event struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// An outcome is what one process of a test binary did, read from its
// test2json events.
type outcome struct {
	passed  map[string]int           // test path → passes ("TestX", "TestX/sub")
	skipped map[string]string        // test path → its skip message
	elapsed time.Duration            // total of the top-level tests that passed
	tops    int                      // top-level passes
	each    map[string]time.Duration // top-level test → its part of elapsed

	pkgPassed bool // the binary passed

	failed bool
	test   string // the first test that failed (the innermost: subtests end first)
	detail string // its first "file.go:line: message" line
	panic  string // the first "panic: " or "fatal error: " line
	hung   bool   // the binary's -test.timeout fired, or it was killed
	exit   string // the process failed without a failing test

	lastLine string        // the last non-empty output line
	wall     time.Duration // of the process
}

// testLine is the t.Error/t.Fatal/t.Log/t.Skip format: indented by four
// spaces per test level, then "file.go:line: message". A line the code
// under test prints itself (fmt.Println, log.Print) is not indented.
var testLine = regexp.MustCompile(`^    +(\S+\.go:\d+: .*)$`)

// parseEvents reads test2json output. src, if not nil, returns the
// source line a "file.go:line:" output line names ("" when unknown): it
// tells a failing check from a t.Log line, which print alike.
func parseEvents(data []byte, src sourceLine) *outcome {
	o := &outcome{passed: map[string]int{}, skipped: map[string]string{}, each: map[string]time.Duration{}}
	output := map[string][]string{} // test → its output since its last run
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Action {
		case "run":
			output[e.Test] = nil
		case "output":
			line := strings.TrimRight(e.Output, "\n")
			if strings.TrimSpace(line) != "" {
				o.lastLine = strings.TrimSpace(line)
			}
			output[e.Test] = append(output[e.Test], line)
			if o.panic == "" && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
				p, _, _ := strings.Cut(line, " [recovered")
				o.panic = clip(p)
				if strings.HasPrefix(line, "panic: test timed out after ") {
					o.hung = true
				}
			}
		case "pass", "bench":
			if e.Test == "" {
				o.pkgPassed = e.Action == "pass"
				continue
			}
			o.passed[e.Test]++
			if !strings.Contains(e.Test, "/") {
				o.tops++
				d := time.Duration(e.Elapsed * float64(time.Second))
				o.elapsed += d
				o.each[e.Test] += d
			}
		case "skip":
			if e.Test != "" {
				if _, ok := o.skipped[e.Test]; !ok {
					o.skipped[e.Test] = firstTestLine(output[e.Test], "no message")
				}
			}
		case "fail":
			if e.Test == "" {
				o.failed = true // the package failed: a panic, an exit, a failed TestMain
				continue
			}
			if !o.failed || o.test == "" {
				o.failed = true
				o.test = e.Test
				o.detail = failureLine(output[e.Test], src)
			}
		}
	}
	return o
}

// failureLine is the failing test's message: the first assertion
// library's failure block (testify writes "x_test.go:12: " then
// "Error Trace:" and "Error: ..."), which t.Log lines before it cannot
// be mistaken for; otherwise the first line in the test's own format
// whose source line is a failing check (t.Error, t.Fatal, t.Fail, an
// assert or require call, a helper named so), never one whose source
// line logs; when the source cannot tell, the last line that is not a
// log line, since a test that logs and then fails with t.Fatal prints
// the check last.
func failureLine(lines []string, src sourceLine) string {
	for i, l := range lines {
		if !testLine.MatchString(l) || !strings.HasSuffix(strings.TrimSpace(l), ":") {
			continue
		}
		for _, raw := range lines[i+1:] {
			c := strings.TrimSpace(raw)
			if testLine.MatchString(raw) || c == "" {
				break
			}
			if strings.HasPrefix(c, "Error Trace:") || strings.HasPrefix(c, "Error:") {
				return firstTestLine(lines[i:], "")
			}
		}
	}
	last := -1
	for i, l := range lines {
		m := testLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		switch callKind(src, m[1]) {
		case checkCall:
			return firstTestLine(lines[i:], "")
		case unknownCall:
			last = i
		}
	}
	if last < 0 {
		return ""
	}
	return firstTestLine(lines[last:], "")
}

// A sourceLine returns the text of line of the file named file (a base
// name, as go test prints it) in the package tested, or "" when unknown.
type sourceLine func(file string, line int) string

type callSort int

const (
	unknownCall callSort = iota
	checkCall            // t.Error, t.Fatal, assert.Equal, ...
	logCall              // t.Log, t.Logf
)

var (
	fileLine  = regexp.MustCompile(`^(\S+\.go):(\d+): `)
	checkCode = regexp.MustCompile(`\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(|(?i:\b(assert|require|expect|check|must|ensure|verify)\w*[.(])`)
	logCode   = regexp.MustCompile(`\.(Log|Logf)\(`)
)

// callKind says what the source line of a "file.go:line: message" output
// line calls.
func callKind(src sourceLine, msg string) callSort {
	m := fileLine.FindStringSubmatch(msg)
	if src == nil || m == nil {
		return unknownCall
	}
	n, _ := strconv.Atoi(m[2])
	code := src(m[1], n)
	if i := strings.Index(code, "//"); i >= 0 {
		code = code[:i] // a trailing comment says nothing (a strength marker, a note)
	}
	// The call that comes first decides: t.Logf("must %d", n) logs.
	c, l := checkCode.FindStringIndex(code), logCode.FindStringIndex(code)
	switch {
	case c != nil && (l == nil || c[0] < l[0]):
		return checkCall
	case l != nil:
		return logCall
	}
	return unknownCall
}

// firstTestLine is the first line in the test's own format, without its
// indentation, or def. When the message is on the lines after it (as
// testify writes "x_test.go:12: " then "Error Trace:", "Error: ..."),
// those lines, but the trace, complete it.
func firstTestLine(lines []string, def string) string {
	for i, l := range lines {
		m := testLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		msg := strings.TrimSpace(m[1])
		if !strings.HasSuffix(msg, ":") {
			return clip(msg)
		}
		depth := len(l) - len(strings.TrimLeft(l, " "))
		for _, c := range lines[i+1:] {
			if len(c)-len(strings.TrimLeft(c, " \t")) <= depth || testLine.MatchString(c) {
				break
			}
			c = strings.TrimSpace(c)
			if c == "" || strings.HasPrefix(c, "Error Trace:") {
				continue
			}
			msg += " " + c
			if len(msg) > 200 {
				break
			}
		}
		return clip(msg)
	}
	return def
}

// reason says why a failed outcome failed.
func (o *outcome) reason() string {
	switch {
	case o.panic != "":
		return strings.TrimPrefix(o.panic, "panic: ")
	case o.detail != "":
		return o.detail
	case o.exit != "":
		return o.exit
	case o.test != "":
		return o.test + " failed"
	}
	return "the test failed"
}
