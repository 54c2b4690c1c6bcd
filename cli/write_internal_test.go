package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/unflake/unflake/rewrite"
)

func change(t *testing.T, path, old, new string) rewrite.Change {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	return rewrite.Change{Path: path, Old: []byte(old), New: []byte(new), Mode: 0o644}
}

// TestEmitWritesPastAFailure: an I/O error on the second of three files
// (its directory was replaced by a file after the analysis) does not stop
// the third; both outcomes are reported.
func TestEmitWritesPastAFailure(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	a := change(t, filepath.Join(base, "a", "a_test.go"), "a\n", "A\n")
	b := change(t, filepath.Join(base, "b", "b_test.go"), "b\n", "B\n")
	c := change(t, filepath.Join(base, "c", "c_test.go"), "c\n", "C\n")
	if err := os.RemoveAll(filepath.Join(base, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "b"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	o := &options{stdout: &bytes.Buffer{}, stderr: &stderr}
	if err := o.emit([]rewrite.Change{a, b, c}, base, false); err != errReported {
		t.Errorf("emit: %v, want errReported", err)
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "b/b_test.go: ") || lines[1] != "unflake: wrote 2 files; not written: b/b_test.go" {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	for _, ch := range []rewrite.Change{a, c} {
		if got, _ := os.ReadFile(ch.Path); string(got) != string(ch.New) {
			t.Errorf("%s: %q, want %q", ch.Path, got, ch.New)
		}
	}
}

// TestEmitHoldsBackTestFilesWithoutTheirGoMod: a test file whose fix needs
// a new requirement is not written when go.mod could not be.
func TestEmitHoldsBackTestFilesWithoutTheirGoMod(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mod := change(t, filepath.Join(base, "go.mod"), "module m\n", "module m\n\nrequire x v1\n")
	test := change(t, filepath.Join(base, "p", "p_test.go"), "p\n", "P\n")
	if err := os.Chmod(mod.Path, 0o444); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	o := &options{stdout: &bytes.Buffer{}, stderr: &stderr}
	if err := o.emit([]rewrite.Change{test, mod}, base, false); err != errReported {
		t.Errorf("emit: %v, want errReported", err)
	}
	want := "go.mod: not writable (mode 0444); not rewritten\n" +
		"p/p_test.go: needs the go.mod change that was not written; not rewritten\n" +
		"unflake: wrote 0 files; not written: go.mod, p/p_test.go\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
	if got, _ := os.ReadFile(test.Path); string(got) != "p\n" {
		t.Errorf("test file written without its go.mod: %q", got)
	}
}

func TestVersionOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{}, "(devel)"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, "(devel) (built with go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261203081739-c0e777fa9f98+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "c0e777f"}, {Key: "vcs.modified", Value: "true"}}},
			"v0.0.0-20261203081739-c0e777fa9f98+dirty (revision c0e777f, modified, built with go1.26.0)"},
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "c0e777f"}, {Key: "vcs.modified", Value: "false"}}},
			"v1.2.3 (revision c0e777f)"},
	} {
		if got := versionOf(&tc.bi); got != tc.want {
			t.Errorf("versionOf(%+v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
}
