package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
)

// ownContextPkg is a package NAME with one context of the test's own that
// testscope fixes (t.Context()), proven whatever the package's code does.
func ownContextPkg(name string) string {
	return strings.ReplaceAll(`
-- NAME/NAME.go --
package NAME

// Config returns the default configuration file's contents.
func Config() string { return "debug=true\n" }
-- NAME/NAME_test.go --
package NAME

import (
	"context"
	"testing"
)

func TestConfig(t *testing.T) {
	// The configuration, read under a context of the test's own.
	ctx, end := context.WithCancel(context.Background())
	defer end()
	if err := ctx.Err(); err != nil || Config() != "debug=true\n" {
		t.Fatalf("config %q, %v", Config(), err)
	}
}
`, "NAME", name)
}

const gomod = `
-- go.mod --
module example.com/m

go 1.24
`

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rewritten(t *testing.T, path string) bool {
	t.Helper()
	return strings.Contains(read(t, path), "t.Context()")
}

// TestFixReadOnlyFileAmongOthers: a 0444 file in the middle of a
// three-package fix is refused, named, and the other two are written.
func TestFixReadOnlyFileAmongOthers(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, gomod, ownContextPkg("a"), ownContextPkg("b"), ownContextPkg("c"))
	ro := filepath.Join(dir, "b", "b_test.go")
	if err := os.Chmod(ro, 0o444); err != nil {
		t.Fatal(err)
	}
	old := read(t, ro)
	code, _, stderr := run(t, "-C", dir, "fix", "--rules", "testscope", "./...")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	want := "b/b_test.go: not writable (mode 0444); not rewritten\nunflake: wrote 2 files; not written: b/b_test.go\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	if read(t, ro) != old {
		t.Errorf("the read-only file was rewritten")
	}
	for _, p := range []string{"a/a_test.go", "c/c_test.go"} {
		if !rewritten(t, filepath.Join(dir, p)) {
			t.Errorf("%s not written", p)
		}
	}
}

// TestFixSymlinkedTestFile: a test file that is a link (to a file inside
// the module) is neither replaced nor written through, with --diff too,
// where its hunk would not apply as meant.
func TestFixSymlinkedTestFile(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, gomod, ownContextPkg("a"), ownContextPkg("b"))
	link := filepath.Join(dir, "b", "b_test.go")
	target := filepath.Join(dir, "shared", "b_test.go.txt")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../shared/b_test.go.txt", link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	old := read(t, target)

	code, diff, stderr := run(t, "-C", dir, "fix", "--diff", "--rules", "testscope", "./...")
	if code != 2 || !strings.HasPrefix(stderr, "b/b_test.go: is a symlink; not rewritten\n") {
		t.Errorf("--diff: exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(diff, "+++ b/a/a_test.go") || strings.Contains(diff, "b_test.go") {
		t.Errorf("--diff:\n%s", diff)
	}

	code, _, stderr = run(t, "-C", dir, "fix", "--rules", "testscope", "./...")
	want := "b/b_test.go: is a symlink; not rewritten\nunflake: wrote 1 file; not written: b/b_test.go\n"
	if code != 2 || stderr != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
	if read(t, target) != old {
		t.Errorf("written through the link")
	}
	if !rewritten(t, filepath.Join(dir, "a", "a_test.go")) {
		t.Errorf("a/a_test.go not written")
	}
}

// TestFixSymlinkedDirectoryOutsideModule: fix ./q, with q a link to a
// directory outside the module, writes nothing there.
func TestFixSymlinkedDirectoryOutsideModule(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, gomod)
	outside := testmod.Write(t, ownContextPkg("q"))
	if err := os.Symlink(filepath.Join(outside, "q"), filepath.Join(dir, "q")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	before := testmod.Snapshot(t, outside)
	code, _, stderr := run(t, "-C", dir, "fix", "--rules", "testscope", "./q")
	if code != 2 || !strings.HasPrefix(stderr, "q/q_test.go: its real path ") || !strings.Contains(stderr, "is outside module example.com/m") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	for k, v := range testmod.Snapshot(t, outside) {
		if before[k] != v {
			t.Errorf("%s outside the module was written", k)
		}
	}
}

// TestFixRemovesStaleTemp: a temporary file a killed run left beside a
// file the next run writes is removed.
func TestFixRemovesStaleTemp(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, gomod, ownContextPkg("a"))
	stale := filepath.Join(dir, "a", ".a_test.go.unflake-2871")
	if err := os.WriteFile(stale, []byte("package a // half written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "-C", dir, "fix", "--rules", "testscope", "./..."); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	if code, _, stderr := run(t, "-C", dir, "check", "--rules", "testscope", "./..."); code != 0 {
		t.Errorf("check after fix: exit %d: %s", code, stderr)
	}
}

// TestNoSilentCleanRun: GOPATH mode is an error, not "no findings".
func TestNoSilentCleanRun(t *testing.T) {
	dir := testmod.Write(t, gomod, ownContextPkg("a"))
	// No -mod flag: GOPATH mode refuses it.
	env := testmod.GoEnv(t, "GO111MODULE=off", "GOFLAGS=-buildvcs=false")
	code, stdout, stderr := runEnv(t, env, "-C", dir, "check", "./...")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "GOPATH mode") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestGoCommandMessages: load failures in the go command's own words,
// without go/packages' "err: exit status 1: stderr:" wrapper or the
// type checker's "could not import".
func TestGoCommandMessages(t *testing.T) {
	testmod.Short(t)
	// Never -mod=mod, which would fetch the go.sum entry.
	env := testmod.GoEnv(t, "GOFLAGS=-mod=readonly", "GO111MODULE=on")
	code, _, stderr := runEnv(t, env, "-C", t.TempDir(), "check", ".")
	want := "unflake: go: go.mod file not found in current directory or any parent directory; see 'go help modules'\n"
	if code != 2 || stderr != want {
		t.Errorf("no go.mod: exit %d, stderr %q, want %q", code, stderr, want)
	}

	dir := testmod.Write(t, `
-- go.mod --
module example.com/m

go 1.22

require github.com/spf13/pflag v1.0.9
-- m_test.go --
package m

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestA(t *testing.T) { _ = pflag.Bool; time.Sleep(time.Second) }
`)
	// pflag is in the test's proxy, its go.sum entry is not in the module.
	pflag := testmod.Module{Path: "github.com/spf13/pflag", Version: "v1.0.9", Go: "1.12", Files: map[string]string{"pflag.go": "package pflag\n\nfunc Bool() {}\n"}}
	env = testmod.ProxyEnv(t, []testmod.Module{pflag}, "GOFLAGS=-mod=readonly", "GO111MODULE=on")
	code, _, stderr = runEnv(t, env, "-C", dir, "check", "./...")
	want = "m_test.go:7:2: missing go.sum entry for module providing package github.com/spf13/pflag (imported by example.com/m); to add: go get -t example.com/m\n"
	if code != 2 || stderr != want {
		t.Errorf("missing go.sum entry: exit %d, stderr %q, want %q", code, stderr, want)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, _ := run(t, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "unflake ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
}

// TestCheckAgreesWithFixOnRefusedFiles: check, fix --diff (text and JSON)
// and fix report the findings in a 0444 file and in a symlinked file as
// not fixed, with the refusal as the reason; none of them offers a hunk
// for those files, and fix names them.
func TestCheckAgreesWithFixOnRefusedFiles(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, gomod, ownContextPkg("a"), ownContextPkg("b"), ownContextPkg("c"))
	if err := os.Chmod(filepath.Join(dir, "b", "b_test.go"), 0o444); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "c", "c_test.go")
	if err := os.Rename(link, filepath.Join(dir, "c", "c.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("c.txt", link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	before := testmod.Snapshot(t, dir)

	code, stdout, stderr := run(t, "-C", dir, "check", "--rules", "testscope", "./...")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 1 || stderr != "" || len(lines) != 3 ||
		!strings.Contains(lines[0], "; fix: ") ||
		!strings.HasSuffix(lines[1], "; not fixed: the file is not writable (mode 0444); fix does not override that") ||
		!strings.HasSuffix(lines[2], "; not fixed: the file is a symlink; fix does not write through or replace it") {
		t.Errorf("check: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	refused := "b/b_test.go: not writable (mode 0444); not rewritten\nc/c_test.go: is a symlink; not rewritten\n"
	code, diff, stderr := run(t, "-C", dir, "fix", "--diff", "--rules", "testscope", "./...")
	if code != 2 || stderr != refused || !strings.Contains(diff, "+++ b/a/a_test.go") || strings.Contains(diff, "b_test.go") || strings.Contains(diff, "c_test.go") {
		t.Errorf("fix --diff: exit %d, stderr:\n%s\ndiff:\n%s", code, stderr, diff)
	}

	code, stdout, stderr = run(t, "-C", dir, "fix", "--diff", "--format", "json", "--rules", "testscope", "./...")
	var out struct {
		Findings []struct {
			File       string
			Fixed      bool
			Unwritable string
		}
		Diff string
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("fix --diff --format json: %v\n%s", err, stdout)
	}
	got := map[string]string{}
	for _, f := range out.Findings {
		got[f.File] = fmt.Sprint(f.Fixed, " ", f.Unwritable)
	}
	want := map[string]string{"a/a_test.go": "true ", "b/b_test.go": "false read-only", "c/c_test.go": "false symlink"}
	if code != 2 || stderr != refused || fmt.Sprint(got) != fmt.Sprint(want) || strings.Contains(out.Diff, "b_test.go") {
		t.Errorf("fix --diff --format json: exit %d, findings %v, want %v; stderr:\n%s", code, got, want, stderr)
	}

	code, stdout, _ = run(t, "-C", dir, "check", "--format", "sarif", "--rules", "testscope", "./...")
	if code != 1 || !strings.Contains(stdout, `"unwritable": "read-only"`) || !strings.Contains(stdout, `"unwritable": "symlink"`) {
		t.Errorf("check --format sarif: exit %d\n%s", code, stdout)
	}

	for k, v := range testmod.Snapshot(t, dir) {
		if before[k] != v {
			t.Errorf("%s changed by check or fix --diff", k)
		}
	}
	code, _, stderr = run(t, "-C", dir, "fix", "--rules", "testscope", "./...")
	if want := refused + "unflake: wrote 1 file; not written: b/b_test.go, c/c_test.go\n"; code != 2 || stderr != want {
		t.Errorf("fix: exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
	if !rewritten(t, filepath.Join(dir, "a", "a_test.go")) {
		t.Errorf("a/a_test.go not written")
	}
}

// TestDiffThroughDirectoryLink: fix --diff ./link, with link a directory
// link inside the module, names the file by its real path, which git
// apply accepts (it refuses a path "beyond a symbolic link"), as does
// patch -p1.
func TestDiffThroughDirectoryLink(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	dir := testmod.Write(t, gomod, ownContextPkg("real"))
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	code, diff, stderr := run(t, "-C", dir, "fix", "--diff", "--rules", "testscope", "./link")
	if code != 1 || !strings.Contains(diff, "--- a/real/real_test.go\n+++ b/real/real_test.go\n") || strings.Contains(diff, "link/") {
		t.Fatalf("exit %d, stderr:\n%s\ndiff:\n%s", code, stderr, diff)
	}
	env := []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	for _, args := range [][]string{{"init", "-q", "."}, {"apply", "--check", "-"}, {"apply", "-"}} {
		cmd := exec.Command(git, args...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(diff)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if !rewritten(t, filepath.Join(dir, "real", "real_test.go")) {
		t.Errorf("git apply did not rewrite real/real_test.go")
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the directory link was replaced")
	}
}

// TestNoSilentCleanRunSettings: settings in which the patterns resolve to
// nothing unflake can analyse fail with one line in the go command's own
// words and exit 2: an inconsistent vendor directory under
// -mod=vendor, a go.work that leaves the directory out, patterns matching
// only testdata or directories without Go files.
func TestNoSilentCleanRunSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, archive, dir string
		flags              string
		args               []string
		want               string
	}{
		{"inconsistent vendoring", gomod + "require golang.org/x/mod v0.20.0\n" + ownContextPkg("a") + "-- vendor/modules.txt --\n# golang.org/x/mod v0.19.0\n", "", "-mod=vendor",
			[]string{"./..."}, "unflake: go: inconsistent vendoring in "},
		{"go.work without the module", "-- go.work --\ngo 1.24\n\nuse ./w\n-- w/go.mod --\nmodule example.com/w\n\ngo 1.24\n" + gomod + ownContextPkg("a"), "", "-buildvcs=false",
			[]string{"./..."}, "unflake: pattern ./...: directory prefix . does not contain modules listed in go.work or their selected dependencies"},
		{"go.work without the module, one package", "-- go.work --\ngo 1.24\n\nuse ./w\n-- w/go.mod --\nmodule example.com/w\n\ngo 1.24\n" + gomod + ownContextPkg("a"), "a", "-buildvcs=false",
			[]string{"."}, "unflake: current directory is contained in a module that is not one of the workspace modules listed in go.work."},
		{"testdata only", gomod + strings.ReplaceAll(ownContextPkg("a"), "-- a/", "-- testdata/a/"), "", "-buildvcs=false",
			[]string{"./testdata/..."}, "unflake: pattern ./testdata/... matched no packages"},
		{"no Go files", gomod + "-- docs/x/README --\nhi\n", "", "-buildvcs=false",
			[]string{"./docs/..."}, "unflake: pattern ./docs/... matched no packages"},
		{"no Go files, one directory", gomod + "-- docs/x/README --\nhi\n", "", "-buildvcs=false",
			[]string{"./docs/x"}, "unflake: no Go files in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := testmod.Write(t, tc.archive)
			env := testmod.GoEnv(t, "GO111MODULE=on", "GOFLAGS="+tc.flags)
			if strings.HasPrefix(tc.archive, "-- go.work --") {
				env = append(env, "GOWORK="+filepath.Join(dir, "go.work"))
			}
			code, stdout, stderr := runEnv(t, env, append([]string{"-C", filepath.Join(dir, tc.dir), "check"}, tc.args...)...)
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", code, stdout, stderr, tc.want)
			}
		})
	}
}
