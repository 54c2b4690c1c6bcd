package verify

import (
	"strconv"
	"strings"
	"testing"
)

// events turns "Action Test Output" lines into test2json output.
func events(lines ...string) []byte {
	var b strings.Builder
	for _, l := range lines {
		action, rest, _ := strings.Cut(l, " ")
		test, out, _ := strings.Cut(rest, " ")
		if test == "-" {
			test = ""
		}
		b.WriteString(`{"Action":"` + action + `","Test":"` + test + `","Output":` + quote(out+"\n") + `,"Elapsed":0.5}` + "\n")
	}
	return []byte(b.String())
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

func TestParseEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   []byte
		failed bool
		reason string
		passed map[string]int
		skip   string
		src    map[string]string // "file.go:line" → the source line
	}{{
		name: "a log line the code printed is not the failure",
		data: events(
			"run TestA",
			"output TestA [DEBUG] accepted connection: conn.go:12: 127.0.0.1:4242",
			"output TestA     transport_test.go:431: expected an error due to the streams being closed",
			"output TestA     transport_test.go:432: and another",
			"fail TestA",
			"fail -"),
		src: map[string]string{
			"transport_test.go:431": `		t.Error("expected an error due to the streams being closed")`,
			"transport_test.go:432": `		t.Error("and another")`,
		},
		failed: true, reason: "transport_test.go:431: expected an error due to the streams being closed",
	}, {
		name: "t.Logf lines before the t.Fatal are not the failure",
		data: events(
			"run TestA",
			"output TestA     pool_test.go:20: dialing 127.0.0.1:4242",
			"output TestA     pool_test.go:31: got 3 conns",
			"output TestA     pool_test.go:33: pool not drained",
			"output TestA     pool_test.go:40: cleanup done",
			"fail TestA"),
		src: map[string]string{
			"pool_test.go:20": `	t.Logf("dialing %s", addr)`,
			"pool_test.go:31": `	t.Log("got", n, "conns")`,
			"pool_test.go:33": `		t.Fatal("pool not drained") // strength: bug_twice`,
			"pool_test.go:40": `		t.Logf("cleanup done")`,
		},
		failed: true, reason: "pool_test.go:33: pool not drained",
	}, {
		name: "a helper the failure is reported at (t.Helper) is the check",
		data: events(
			"run TestA",
			"output TestA     a_test.go:8: starting",
			"output TestA     a_test.go:9: got 2, want 1",
			"fail TestA"),
		src: map[string]string{
			"a_test.go:8": `	t.Logf("starting")`,
			"a_test.go:9": `	assertEqual(t, got, 1)`,
		},
		failed: true, reason: "a_test.go:9: got 2, want 1",
	}, {
		name: "without the source, the last line: a test logs, then fails",
		data: events(
			"run TestA",
			"output TestA     a_test.go:8: starting",
			"output TestA     a_test.go:12: got 2, want 1",
			"fail TestA"),
		failed: true, reason: "a_test.go:12: got 2, want 1",
	}, {
		name: "only log lines: no line is the failure",
		data: events(
			"run TestA",
			"output TestA     a_test.go:8: starting",
			"fail TestA"),
		src:    map[string]string{"a_test.go:8": `	t.Logf("starting") // must not be the reason`},
		failed: true, reason: "TestA failed",
	}, {
		name: "the innermost failing subtest speaks",
		data: events(
			"run TestA",
			"output TestA     a_test.go:3: outer log",
			"run TestA/sub",
			"output TestA/sub         a_test.go:9: want 1",
			"fail TestA/sub",
			"fail TestA"),
		failed: true, reason: "a_test.go:9: want 1",
	}, {
		name: "testify writes the message on the next lines",
		data: events(
			"run TestA",
			"output TestA     job_test.go:405: ",
			"output TestA         \tError Trace:\t/m/job_test.go:405",
			"output TestA         \tError:      \tNot equal: ",
			"output TestA         \t            \texpected: 1",
			"output TestA     job_test.go:406: second",
			"fail TestA"),
		failed: true, reason: "job_test.go:405: Error: Not equal: expected: 1",
	}, {
		name: "a t.Log line before testify's failure is not the failure",
		data: events(
			"run TestA",
			"output TestA     cache_test.go:92: total cache cost: 999228",
			"output TestA     cache_test.go:93: ",
			"output TestA         \tError Trace:\t/m/cache_test.go:93",
			"output TestA         \tError:      \tShould be true",
			"fail TestA"),
		failed: true, reason: "cache_test.go:93: Error: Should be true",
	}, {
		name: "a panic",
		data: events(
			"run TestA",
			"output TestA panic: boom [recovered, repanicked]",
			"output TestA goroutine 1 [running]:",
			"fail TestA"),
		failed: true, reason: "boom",
	}, {
		name:   "passes, with a subtest",
		data:   events("run TestA", "run TestA/sub", "pass TestA/sub", "pass TestA", "run TestA", "run TestA/sub", "pass TestA/sub", "pass TestA", "pass -"),
		passed: map[string]int{"TestA": 2, "TestA/sub": 2},
	}, {
		name:   "a skip with its message",
		data:   events("run TestA", "output TestA     a_test.go:7: set UNFLAKE_DB to run", "output TestA --- SKIP: TestA (0.00s)", "skip TestA", "pass -"),
		passed: map[string]int{}, skip: "a_test.go:7: set UNFLAKE_DB to run",
	}} {
		var src sourceLine
		if tc.src != nil {
			src = func(file string, line int) string { return tc.src[file+":"+strconv.Itoa(line)] }
		}
		o := parseEvents(tc.data, src)
		if o.failed != tc.failed || (tc.failed && o.reason() != tc.reason) {
			t.Errorf("%s: failed %v, reason %q; want %v, %q", tc.name, o.failed, o.reason(), tc.failed, tc.reason)
		}
		if tc.passed != nil && !equalCounts(o.passed, tc.passed) {
			t.Errorf("%s: passed %v, want %v", tc.name, o.passed, tc.passed)
		}
		if tc.skip != "" && o.skipped["TestA"] != tc.skip {
			t.Errorf("%s: skipped %v, want %q", tc.name, o.skipped, tc.skip)
		}
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestRaceSupported(t *testing.T) {
	for _, tc := range []struct {
		goos, goarch string
		cgo, want    bool
	}{
		{"linux", "amd64", true, true},
		{"linux", "amd64", false, false},
		{"darwin", "arm64", false, true},
		{"linux", "386", true, false},
		{"windows", "amd64", true, true},
	} {
		if got, why := raceSupported(tc.goos, tc.goarch, tc.cgo); got != tc.want || (got == (why != "")) {
			t.Errorf("%s/%s cgo=%v: %v %q, want %v", tc.goos, tc.goarch, tc.cgo, got, why, tc.want)
		}
	}
}

// TestFailureBubbleExit: a bubble's panic on blocked goroutines after the
// test failed at a check is that check's failure (the Fatal ended the
// test before the calls that stop the code); without a check before it,
// it is a panic.
func TestFailureBubbleExit(t *testing.T) {
	src := func(file string, line int) string {
		if file == "pool_test.go" && line == 90 {
			return `	require.ErrorIs(t, err, errBoom)`
		}
		return ""
	}
	const exited = "panic: deadlock: main bubble goroutine has exited but blocked goroutines remain"
	for _, tc := range []struct {
		name   string
		data   []byte
		kind   string
		detail string
	}{{
		name: "a check failed first",
		data: events(
			"run TestPool",
			"output TestPool     pool_test.go:90: want errBoom",
			"output TestPool "+exited,
			"fail TestPool",
			"fail -"),
		kind:   "fails-after",
		detail: "pool_test.go:90: want errBoom",
	}, {
		name: "no check failed",
		data: events(
			"run TestPool",
			"output TestPool "+exited,
			"fail TestPool",
			"fail -"),
		kind: "panics",
	}, {
		name: "another panic after a check",
		data: events(
			"run TestPool",
			"output TestPool     pool_test.go:90: want errBoom",
			"output TestPool panic: runtime error: index out of range [3] with length 3",
			"fail TestPool",
			"fail -"),
		kind: "panics",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o := parseEvents(tc.data, src)
			why := failure(o, "TestPool", 1, &outcome{passed: map[string]int{}})
			if why == nil {
				t.Fatal("no failure")
			}
			if string(why.Kind) != tc.kind {
				t.Errorf("kind %q, want %q (%s)", why.Kind, tc.kind, why.Detail)
			}
			if tc.detail != "" && !strings.HasPrefix(why.Detail, tc.detail) {
				t.Errorf("detail %q, want it to start with %q", why.Detail, tc.detail)
			}
		})
	}
}
