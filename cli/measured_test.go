package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
)

// flusher's test sleeps 20ms of its own, below --min-saving's 50ms, while
// it takes 1.5s by its go test -json log: its code waits on a timer of
// its own that the estimate does not count.
const flusher = `
-- go.mod --
module example.com/flusher

go 1.25
-- flusher.go --
package flusher

type Flusher struct{ n int }

func (f *Flusher) Add() { f.n++ }

func (f *Flusher) Pending() int { return f.n }
-- flusher_test.go --
package flusher

import (
	"testing"
	"time"
)

func TestFlush(t *testing.T) {
	var f Flusher
	f.Add()
	time.Sleep(20 * time.Millisecond)
	if f.Pending() != 1 {
		t.Fatal("lost an add")
	}
}
-- test.json --
{"Action":"run","Package":"example.com/flusher","Test":"TestFlush"}
{"Action":"fail","Package":"example.com/flusher","Test":"TestFlush","Elapsed":1.4}
{"Action":"run","Package":"example.com/flusher","Test":"TestFlush"}
{"Action":"pass","Package":"example.com/flusher","Test":"TestFlush","Elapsed":1.6}
{"Action":"fail","Package":"example.com/flusher","Elapsed":3.1}
`

// The measured time of a test, not the estimate of its own sleeps, decides
// --min-saving, and a plan made from it says so, with the test flaky.
func TestFromJSON(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, flusher)
	log := filepath.Join(dir, "test.json")

	code, stderr, _ := run(t, "-C", dir, "check", "--rules=sleep", "./...")
	if code != 1 || !strings.Contains(stderr, "a synctest bubble would save ~20ms, below --min-saving=50ms") {
		t.Errorf("without times: exit %d, stderr:\n%s", code, stderr)
	}
	code, stderr, _ = run(t, "-C", dir, "check", "--rules=sleep", "--from-json", log, "./...")
	if code != 1 || strings.Contains(stderr, "min-saving") || !strings.Contains(stderr, "not fixed: clock change: ") {
		t.Errorf("with a 1.5s measured test: exit %d, stderr:\n%s", code, stderr)
	}
	code, diff, stderr := run(t, "-C", dir, "fix", "--diff", "--unproven", "--rules=sleep", "--from-json", log, "./...")
	if code != 1 || !strings.Contains(diff, "synctest.Test(t, func(t *testing.T) {") {
		t.Errorf("fix --diff --unproven: exit %d, diff:\n%s\nstderr:\n%s", code, diff, stderr)
	}
	// A measured test below the bar is not wrapped, whatever it sleeps.
	code, stderr, _ = run(t, "-C", dir, "check", "--rules=sleep", "--from-json", log, "--min-saving=2s", "./...")
	if code != 1 || !strings.Contains(stderr, "would save at most 1.5s (the test's measured time), below --min-saving=2s") {
		t.Errorf("--min-saving=2s: exit %d, stderr:\n%s", code, stderr)
	}

	// --measure runs the tests once for their times.
	code, out, stderr := run(t, "-C", dir, "check", "--rules=sleep", "--measure", "--min-saving=1h", "./...")
	if code != 1 || !strings.Contains(out, "(the test's measured time), below --min-saving=1h") || !strings.Contains(stderr, "measuring: go test -json ./...") {
		t.Errorf("--measure: exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}

	// The findings carry the time and the flakiness, for plans and CI.
	code, out, stderr = run(t, "-C", dir, "check", "--rules=sleep", "--from-json", log, "--format=json", "./...")
	var findings []struct {
		Test       string
		MeasuredMs int64
		Flaky      bool
	}
	if err := json.Unmarshal([]byte(out), &findings); code != 1 || err != nil || len(findings) != 1 ||
		findings[0].Test != "TestFlush" || findings[0].MeasuredMs != 1500 || !findings[0].Flaky {
		t.Errorf("check --format=json: exit %d, %v, %+v\n%s\n%s", code, err, findings, out, stderr)
	}
}

// A log that is not go test -json is a clear error, exit 2.
func TestFromJSONErrors(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, flusher)
	bad := filepath.Join(t.TempDir(), "go-test.txt")
	if err := os.WriteFile(bad, []byte("ok  \texample.com/flusher\t1.6s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "--from-json", bad, "./..."},
		{"check", "--from-json", filepath.Join(dir, "missing.json"), "./..."},
		{"check", "--from-json", bad, "--measure", "./..."},
	} {
		code, _, stderr := run(t, append([]string{"-C", dir}, args...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--from-json") {
			t.Errorf("%v: exit %d, stderr:\n%s", args, code, stderr)
		}
	}
}
