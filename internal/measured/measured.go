// Package measured reads how long tests took from go test -json (a log a
// user or CI already has, or one run unflake makes), so that measured
// time, not a static estimate, chooses what to fix first and says what a
// fix is worth.
package measured

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Times are the measured times of the tests and packages of one or more
// go test -json streams.
type Times struct {
	tests map[key]*Test
	pkgs  map[string]*Test
}

type key struct{ pkg, test string }

// A Test is what the log says of one test (or of a package's whole
// test binary): its mean elapsed time over the runs that ended, and how
// many of those runs passed and failed. A test that failed in one run
// and passed in another is flaky evidence.
type Test struct {
	Elapsed        time.Duration
	Passed, Failed int
	total          time.Duration
}

// Flaky reports whether the test both failed and passed in the log.
func (t Test) Flaky() bool { return t.Failed > 0 && t.Passed > 0 }

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// Read parses go test -json output. Lines that are not JSON objects (a
// build error go test printed, a log's own lines around the stream) are
// skipped; a stream without any test event is an error.
func Read(r io.Reader) (*Times, error) {
	t := &Times{tests: map[key]*Test{}, pkgs: map[string]*Test{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024) // a test's output line may be long
	events := 0
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] != '{' {
			continue
		}
		var e event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("line %d: not a go test -json event: %v", line, err)
		}
		if e.Action != "pass" && e.Action != "fail" {
			continue // a skip verifies nothing and measures nothing
		}
		if e.Package == "" {
			continue
		}
		events++
		rec := t.pkgs[e.Package]
		if e.Test != "" {
			k := key{e.Package, e.Test}
			if rec = t.tests[k]; rec == nil {
				rec = &Test{}
				t.tests[k] = rec
			}
		} else if rec == nil {
			rec = &Test{}
			t.pkgs[e.Package] = rec
		}
		if e.Action == "pass" {
			rec.Passed++
		} else {
			rec.Failed++
		}
		rec.total += time.Duration(e.Elapsed * float64(time.Second))
		rec.Elapsed = rec.total / time.Duration(rec.Passed+rec.Failed)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if events == 0 {
		return nil, fmt.Errorf("no test passed or failed in it: not the output of go test -json")
	}
	return t, nil
}

// ReadFile reads a go test -json log; its errors name the file.
func ReadFile(path string) (*Times, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return t, nil
}

// Run runs the tests of the packages matching patterns once, in dir,
// with go test -json (no cache, no benchmarks), and reads their times.
// A failing test is measured too: go test's own exit status is not an
// error here, only a run that gave no event.
func Run(dir string, env []string, tags []string, patterns []string) (*Times, error) {
	args := []string{"test", "-json", "-count=1", "-run=."}
	if len(tags) > 0 {
		args = append(args, "-tags="+strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = dir
	cmd.Env = env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	runErr := cmd.Run()
	t, err := Read(&out)
	if err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), runErr, bytes.TrimSpace(stderr.Bytes()))
		}
		return nil, fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
	}
	return t, nil
}

// Test returns what was measured of test (a top-level test, or a subtest
// as go test names it: "TestX/sub_name") in the package with import path
// pkg; ok is false when the log does not have it. Nil Times has nothing.
func (t *Times) Test(pkg, test string) (Test, bool) {
	if t == nil {
		return Test{}, false
	}
	rec := t.tests[key{pkg, strings.ReplaceAll(test, " ", "_")}]
	if rec == nil {
		return Test{}, false
	}
	return *rec, true
}

// Package returns what was measured of the whole test binary of the
// package with import path pkg.
func (t *Times) Package(pkg string) (Test, bool) {
	if t == nil {
		return Test{}, false
	}
	rec := t.pkgs[pkg]
	if rec == nil {
		return Test{}, false
	}
	return *rec, true
}
