package verify

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOriginalLines: a failure of a rewritten test is quoted at the line
// of the file on disk, and a line the rewrite added says so.
func TestOriginalLines(t *testing.T) {
	dir := t.TempDir()
	orig := "package p\n\nfunc TestX(t *testing.T) {\n\tstart()\n\ttime.Sleep(d)\n\tif n() != 1 {\n\t\tt.Fatal(\"got\")\n\t}\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	rewritten := "package p\n\nfunc TestX(t *testing.T) {\n\tstart()\n\tfor !done() {\n\t\tt.Log(\"waiting\")\n\t\twait()\n\t}\n\tif n() != 1 {\n\t\tt.Fatal(\"got\")\n\t}\n}\n"
	j := job{src: map[string][]byte{"x_test.go": []byte(rewritten)}}
	for _, c := range []struct{ in, want string }{
		{"x_test.go:10: got", "x_test.go:7: got"},
		{"x_test.go:6: waiting", "x_test.go:4 (a line the rewrite added after it): waiting"},
		{"y_test.go:10: other file", "y_test.go:10: other file"},
		{"no line here", "no line here"},
	} {
		if got := j.originalLines(dir, c.in); got != c.want {
			t.Errorf("originalLines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// A job built from the files on disk quotes them as they are.
	if got := (job{}).originalLines(dir, "x_test.go:7: got"); got != "x_test.go:7: got" {
		t.Errorf("without an overlay: %q", got)
	}
}

// A rewrite that wraps the test's body re-indents every line of it: the
// failing check is still quoted at its own line, not at a call before it
// (an inner block's closing brace, re-indented, once matched the outer
// one's and left the lines between with no original).
func TestOriginalLinesOfAWrappedBody(t *testing.T) {
	dir := t.TempDir()
	orig := "package p\n\nfunc TestCron(t *testing.T) {\n\tcron := New()\n\tcron.AddFunc(\"* * * * * ?\", func() {\n\t\tif x {\n\t\t\tcalls++\n\t\t}\n\t})\n\tcron.Start()\n\tdefer cron.Stop()\n\ttime.Sleep(OneSecond)\n\tif calls != 1 {\n\t\tt.Error(\"calls\")\n\t}\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "cron_test.go"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapped := "package p\n\nfunc TestCron(t *testing.T) {\n\tsynctest.Test(t, func(t *testing.T) {\n\t\tcron := New()\n\t\tcron.AddFunc(\"* * * * * ?\", func() {\n\t\t\tif x {\n\t\t\t\tcalls++\n\t\t\t}\n\t\t})\n\t\tcron.Start()\n\t\tdefer cron.Stop()\n\t\ttime.Sleep(OneSecond)\n\t\tsynctest.Wait()\n\t\tif calls != 1 {\n\t\t\tt.Error(\"calls\")\n\t\t}\n\t})\n}\n"
	j := job{src: map[string][]byte{"cron_test.go": []byte(wrapped)}}
	for _, c := range []struct{ in, want string }{
		{"cron_test.go:16: calls", "cron_test.go:14: calls"},
		{"cron_test.go:11: start", "cron_test.go:10: start"},
		{"cron_test.go:14: waited", "cron_test.go:12 (a line the rewrite added after it): waited"},
	} {
		if got := j.originalLines(dir, c.in); got != c.want {
			t.Errorf("originalLines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
