package measured_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/measured"
)

// log is go test -json output as a CI log holds it: build output around
// the stream, a package with two runs of one test (-count=2), one of them
// failed, a subtest whose name go test rewrote, a skip and output lines.
const log = `# m/b
build output that is not JSON
{"Time":"2026-01-01T00:00:00Z","Action":"start","Package":"m/a"}
{"Time":"2026-01-01T00:00:00Z","Action":"run","Package":"m/a","Test":"TestSlow"}
{"Time":"2026-01-01T00:00:00Z","Action":"output","Package":"m/a","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Time":"2026-01-01T00:00:01Z","Action":"pass","Package":"m/a","Test":"TestSlow","Elapsed":1.5}
{"Time":"2026-01-01T00:00:01Z","Action":"run","Package":"m/a","Test":"TestSlow"}
{"Time":"2026-01-01T00:00:02Z","Action":"fail","Package":"m/a","Test":"TestSlow","Elapsed":0.5}
{"Time":"2026-01-01T00:00:02Z","Action":"pass","Package":"m/a","Test":"TestTable/two_words","Elapsed":0.25}
{"Time":"2026-01-01T00:00:02Z","Action":"skip","Package":"m/a","Test":"TestSkipped","Elapsed":3}
{"Time":"2026-01-01T00:00:02Z","Action":"fail","Package":"m/a","Elapsed":2.1}
`

func TestRead(t *testing.T) {
	times, err := measured.Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	slow, ok := times.Test("m/a", "TestSlow")
	if !ok {
		t.Fatal("TestSlow not measured")
	}
	if slow.Elapsed != time.Second || slow.Passed != 1 || slow.Failed != 1 || !slow.Flaky() {
		t.Errorf("TestSlow: got %+v, want a mean of 1s over a pass and a failure (flaky)", slow)
	}
	// The test's own name, as the rule sees it, finds the name go test
	// printed.
	if sub, ok := times.Test("m/a", "TestTable/two words"); !ok || sub.Elapsed != 250*time.Millisecond || sub.Flaky() {
		t.Errorf("TestTable/two words: got %+v, %v", sub, ok)
	}
	if _, ok := times.Test("m/a", "TestSkipped"); ok {
		t.Error("a skipped test counts as measured: it ran none of its checks")
	}
	if _, ok := times.Test("m/b", "TestSlow"); ok {
		t.Error("a test of another package is found")
	}
	if pkg, ok := times.Package("m/a"); !ok || pkg.Elapsed != 2100*time.Millisecond || pkg.Failed != 1 {
		t.Errorf("package m/a: got %+v, %v", pkg, ok)
	}
	var none *measured.Times
	if _, ok := none.Test("m/a", "TestSlow"); ok {
		t.Error("nil Times has a test")
	}
}

func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "not the output of go test -json"},
		{"text", "ok  \tm/a\t0.1s\n", "not the output of go test -json"},
		{"broken", `{"Action":"pass","Package":"m/a","Test":"T","Elapsed":1}` + "\n{\"Action\":\n", "line 2: not a go test -json event"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := measured.Read(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "test.json")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := measured.ReadFile(path); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("ReadFile: got %v, want an error naming the file", err)
	}
}
