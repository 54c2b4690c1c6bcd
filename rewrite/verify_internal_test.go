package rewrite

import (
	"errors"
	"testing"
	"time"
)

func TestParseRun(t *testing.T) {
	exit1 := errors.New("exit status 1")
	for _, tc := range []struct {
		name, out string
		err       error
		want      result
	}{
		{"TestA", `=== RUN   TestA
=== RUN   TestA/sub
    --- PASS: TestA/sub (9.00s)
--- PASS: TestA (0.10s)
=== RUN   TestA
no newline--- PASS: TestA (0.30s)
PASS
`, nil, result{ok: true, mean: 200 * time.Millisecond}},
		{"TestA", "=== RUN   TestA\n--- SKIP: TestA (0.00s)\n=== RUN   TestA\n--- SKIP: TestA (0.00s)\n", nil, result{ok: true}},
		{"TestA", "--- PASS: TestA (0.10s)\n", nil, result{detail: "ran 1 of 2 times"}},
		{"TestA", "testing: warning: no tests to run\nPASS\n", nil, result{detail: "ran 0 of 2 times"}},
		{"TestA", `=== RUN   TestA
--- PASS: TestA (0.00s)
=== RUN   TestA
    a_test.go:3: some log
=== RUN   TestA/sub
    a_test.go:9: want 1
    --- FAIL: TestA/sub (0.00s)
--- FAIL: TestA (0.00s)
FAIL
`, exit1, result{detail: "a_test.go:3: some log"}},
		{"TestA", "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n", exit1, result{detail: "the test failed"}},
		{"TestA", "=== RUN   TestA\n--- FAIL: TestA (0.00s)\npanic: boom [recovered, repanicked]\n\ngoroutine 1\n", exit1, result{panicked: true, detail: "boom"}},
		{"TestA", "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestA\nbye\n", exit1, result{detail: "exit status 1: bye"}},
		{"BenchmarkA", "BenchmarkA-2   \t       1\t      1500 ns/op\nBenchmarkA-2   \t       1\t      500 ns/op\nPASS\n", nil, result{ok: true, mean: time.Microsecond}},
		{"BenchmarkA", "--- FAIL: BenchmarkA\n    a_test.go:3: no\n", exit1, result{detail: "exit status 1: a_test.go:3: no"}},
	} {
		if got := parseRun(tc.name, tc.out, tc.err, 2); got != tc.want {
			t.Errorf("%s:\n%s\ngot %+v, want %+v", tc.name, tc.out, got, tc.want)
		}
	}
}
