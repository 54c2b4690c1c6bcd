package rewrite_test

import (
	"bytes"
	"go/ast"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dave/dst"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// sleepPkg is a package NAME whose test sleeps once.
func sleepPkg(name string) string {
	return strings.ReplaceAll(`
-- NAME/NAME_test.go --
package NAME

import (
	"testing"
	"time"
)

func TestNAME(t *testing.T) { time.Sleep(1) }
`, "NAME", name)
}

const goMod = "-- go.mod --\nmodule example.com/m\n\ngo 1.22\n"

// TestRefusedFilesAreNotFixed: the fixes in a file that fix would refuse
// to write (no write permission, a symlink) are not applied, in check as
// in fix: their findings are not fixed, say why (Unwritable, Reason), and
// the file is listed in Result.Refused; the other files are fixed.
func TestRefusedFilesAreNotFixed(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, goMod, sleepPkg("a"), sleepPkg("b"), sleepPkg("c"))
	ro := filepath.Join(dir, "b", "b_test.go")
	if err := os.Chmod(ro, 0o444); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "c", "c_test.go")
	if err := os.Rename(link, filepath.Join(dir, "c", "c.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("c.txt", link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	want := map[string]struct {
		fixed  bool
		why    output.WriteFailure
		reason string
	}{
		filepath.Join(dir, "a", "a_test.go"): {true, output.Writable, ""},
		ro:                                   {false, output.WriteReadOnly, "the file is not writable (mode 0444); fix does not override that"},
		link:                                 {false, output.WriteSymlink, "the file is a symlink; fix does not write through or replace it"},
	}
	if len(res.Findings) != len(want) {
		t.Fatalf("findings: %+v", res.Findings)
	}
	for _, f := range res.Findings {
		w := want[f.File]
		if f.Fixed != w.fixed || f.Unwritable != w.why || f.Reason != w.reason {
			t.Errorf("%s: fixed=%v unwritable=%v reason %q; want %v, %v, %q", f.File, f.Fixed, f.Unwritable, f.Reason, w.fixed, w.why, w.reason)
		}
	}
	if len(res.Changes) != 1 || res.Changes[0].Path != filepath.Join(dir, "a", "a_test.go") {
		t.Errorf("changes: %+v, want a/a_test.go only", res.Changes)
	}
	if len(res.Refused) != 2 || res.Refused[0].Path != ro || res.Refused[0].Reason != output.WriteReadOnly ||
		res.Refused[1].Path != link || res.Refused[1].Reason != output.WriteSymlink {
		t.Errorf("refused: %v", res.Refused)
	}
}

// TestRefusedFileWithoutFixIsNotListed: a read-only file with nothing to
// fix is no refusal.
func TestRefusedFileWithoutFixIsNotListed(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, goMod, sleepPkg("a"), "-- b/b_test.go --\npackage b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {}\n")
	if err := os.Chmod(filepath.Join(dir, "b", "b_test.go"), 0o444); err != nil {
		t.Fatal(err)
	}
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refused) != 0 || len(res.Changes) != 1 {
		t.Errorf("refused %v, changes %d", res.Refused, len(res.Changes))
	}
}

// touchHelper is a test rule whose fix, for a sleep in one file, also
// edits helper() in another file of the package (a helper it rewrites).
var touchHelper = testRule("touch", func([]byte) bool { return true }, func(pass *rule.Pass) {
	var helper *ast.BasicLit
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && fd.Name.Name == "helper" {
				ret := fd.Body.List[0].(*ast.ReturnStmt)
				helper = ret.Results[0].(*ast.BasicLit)
			}
			return true
		})
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Sleep" || helper == nil {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Value == "0" {
				return true
			}
			pass.Report(rule.Diagnostic{Pos: call.Pos(), End: call.End(), Message: "sleeps", Fix: &rule.Fix{Changes: []rule.Change{{Kind: rule.Paths, What: "a test change", Unseen: true}},
				Message: "sleep zero and bump the helper",
				Apply: func() error {
					pass.Dst(call).(*dst.CallExpr).Args[0] = zero()
					pass.Dst(helper).(*dst.BasicLit).Value = "2"
					return nil
				},
			}})
			return true
		})
	}
})

// TestFixThatEditsARefusedFile: a fix whose site is in a writable file
// but which also edits a refused one is not applied either; its finding
// names the other file.
func TestFixThatEditsARefusedFile(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, goMod, sleepPkg("a"), `
-- a/helper_test.go --
package a

func helper() int { return 1 }
`)
	helper := filepath.Join(dir, "a", "helper_test.go")
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: []*rule.Rule{touchHelper}})
	if err != nil || len(res.Changes) != 2 {
		t.Fatalf("writable: %v, changes %+v (the test rule must edit both files)", err, res.Changes)
	}
	if err := os.Chmod(helper, 0o444); err != nil {
		t.Fatal(err)
	}
	res, err = rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: []*rule.Rule{touchHelper}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Errorf("errors: %v", res.Errors)
	}
	if len(res.Changes) != 0 {
		t.Errorf("changes: %+v, want none", res.Changes)
	}
	want := "the fix also changes helper_test.go, which fix does not write: not writable (mode 0444); not rewritten"
	if len(res.Findings) != 1 || res.Findings[0].Fixed || res.Findings[0].Unwritable != output.WriteReadOnly || res.Findings[0].Reason != want {
		t.Errorf("findings: %+v\nwant one not fixed: %s", res.Findings, want)
	}
	if len(res.Refused) != 1 || res.Refused[0].Path != helper {
		t.Errorf("refused: %v", res.Refused)
	}
}

// TestFileClaimedByRealPath: a file named through a directory link inside
// the module and directly (./link and ./real) is rewritten once, and its
// diff names its real path (git apply refuses a path beyond a link).
func TestFileClaimedByRealPath(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, goMod, sleepPkg("real"))
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./link", "./real"}, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 || len(res.Refused) > 0 {
		t.Fatalf("errors %v, refused %v", res.Errors, res.Refused)
	}
	if len(res.Changes) != 1 || len(res.Findings) != 1 || !res.Findings[0].Fixed {
		t.Fatalf("changes %+v, findings %+v: want the file once", res.Changes, res.Findings)
	}
	name, err := res.Changes[0].DiffPath(dir)
	if err != nil || name != "real/real_test.go" {
		t.Errorf("DiffPath: %q, %v; want real/real_test.go", name, err)
	}
	if err := res.Changes[0].Write(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "real", "real_test.go")); !bytes.Contains(got, []byte("time.Sleep(0)")) {
		t.Errorf("not written:\n%s", got)
	}
}

// TestDiffPath: the path a diff names, relative to its base: the file's
// own path, or through a directory link its real path; a base reached
// through a link changes nothing.
func TestDiffPath(t *testing.T) {
	t.Parallel()
	dir := testmod.Write(t, goMod, sleepPkg("real"))
	dir, _ = filepath.EvalSymlinks(dir)
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	baseLink := filepath.Join(t.TempDir(), "base")
	if err := os.Symlink(dir, baseLink); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		base, path, want string
		why              output.WriteFailure
	}{
		{dir, filepath.Join(dir, "real", "real_test.go"), "real/real_test.go", output.Writable},
		{dir, filepath.Join(dir, "link", "real_test.go"), "real/real_test.go", output.Writable},
		{baseLink, filepath.Join(baseLink, "real", "real_test.go"), "real/real_test.go", output.Writable},
		{baseLink, filepath.Join(baseLink, "link", "real_test.go"), "real/real_test.go", output.Writable},
		{dir, filepath.Join(dir, "go.sum"), "go.sum", output.Writable}, // a file to create
		{dir, filepath.Join(dir, "out", "x_test.go"), "", output.WriteOutside},
	} {
		got, err := rewrite.Change{Path: tc.path}.DiffPath(tc.base)
		if tc.why != output.Writable {
			if err == nil || reason(t, err) != tc.why {
				t.Errorf("%s from %s: %q, %v; want %v", tc.path, tc.base, got, err, tc.why)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s from %s: %q, %v; want %q", tc.path, tc.base, got, err, tc.want)
		}
	}
}

func TestWriteFailureJSON(t *testing.T) {
	t.Parallel()
	for f, want := range map[output.WriteFailure]string{
		output.Writable: "", output.WriteIO: "io", output.WriteSymlink: "symlink", output.WriteReadOnly: "read-only",
		output.WriteChanged: "changed", output.WriteNotRegular: "not-regular", output.WriteOutside: "outside-module",
	} {
		if b, err := f.MarshalText(); err != nil || string(b) != want {
			t.Errorf("%d: %q, %v; want %q", int(f), b, err, want)
		}
	}
}

// TestSameFileLinkedFromTwoPackages: a file two packages link is
// reported in each (files are claimed by their real directory, not by
// the link's target), and rewritten in neither.
func TestSameFileLinkedFromTwoPackages(t *testing.T) {
	testmod.Short(t)
	t.Parallel()
	dir := testmod.Write(t, goMod, strings.ReplaceAll(sleepPkg("shared"), "shared_test.go", "x.txt"))
	for _, p := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../shared/x.txt", filepath.Join(dir, p, "x_test.go")); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
	}
	res, err := rewrite.Run(&rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Patterns: []string{"./..."}, Rules: []*rule.Rule{sleepZero("zero", zero)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 2 || res.Findings[0].Unwritable != output.WriteSymlink || res.Findings[1].Unwritable != output.WriteSymlink ||
		len(res.Changes) != 0 || len(res.Refused) != 2 || len(res.Errors) != 0 {
		t.Errorf("findings %+v, changes %d, refused %v, errors %v", res.Findings, len(res.Changes), res.Refused, res.Errors)
	}
}
