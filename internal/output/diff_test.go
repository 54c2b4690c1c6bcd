package output_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/internal/testmod"
)

func numbered(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			b.WriteString(s)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestWriteDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		old, new string
		want     string
	}{
		{"equal", "a\n", "a\n", ""},
		{"first line", numbered(5, nil), numbered(5, map[int]string{1: "one\n"}),
			"--- a/f.go\n+++ b/f.go\n@@ -1,4 +1,4 @@\n-line 1\n+one\n line 2\n line 3\n line 4\n"},
		{"insert", numbered(3, nil), numbered(3, map[int]string{2: "line 2\nnew\n"}),
			"--- a/f.go\n+++ b/f.go\n@@ -1,3 +1,4 @@\n line 1\n line 2\n+new\n line 3\n"},
		{"two hunks", numbered(20, nil), numbered(20, map[int]string{2: "two\n", 18: ""}),
			"--- a/f.go\n+++ b/f.go\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+two\n line 3\n line 4\n line 5\n@@ -15,6 +15,5 @@\n line 15\n line 16\n line 17\n-line 18\n line 19\n line 20\n"},
		{"no newline at end", "a\nb", "a\nc\n",
			"--- a/f.go\n+++ b/f.go\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := output.WriteDiff(&buf, "f.go", []byte(tc.old), []byte(tc.new)); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", buf.String(), tc.want)
			}
			if tc.want == "" {
				return
			}
			if _, err := exec.LookPath("git"); err != nil {
				return
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "f.go"), []byte(tc.old), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("git", "apply", "-")
			cmd.Dir = dir
			cmd.Stdin = &buf
			cmd.Env = testmod.GitEnv(t)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v\n%s", err, out)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "f.go")); string(got) != tc.new {
				t.Errorf("after git apply:\n%q\nwant\n%q", got, tc.new)
			}
		})
	}
}

// TestWriteDiffNewFile checks the diff of a file to create: from
// /dev/null, one hunk, and git apply creates the file.
func TestWriteDiffNewFile(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := output.WriteDiff(&buf, "d/new_test.go", nil, []byte("a\nb\n")); err != nil {
		t.Fatal(err)
	}
	want := "--- /dev/null\n+++ b/d/new_test.go\n@@ -0,0 +1,2 @@\n+a\n+b\n"
	if buf.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	dir := t.TempDir()
	cmd := exec.Command("git", "apply", "-")
	cmd.Dir = dir
	cmd.Stdin = &buf
	cmd.Env = testmod.GitEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "d", "new_test.go")); err != nil || string(got) != "a\nb\n" {
		t.Errorf("after git apply: %q, %v", got, err)
	}
}

// TestWriteCreates checks that a change with a nil Old creates its file
// with mode 0644 and never replaces an existing one.
func TestWriteCreates(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new_test.go")
	c := output.Change{Path: path, New: []byte("package p\n")}
	if err := c.Write(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("created: %v, %v", fi, err)
	}
	c.New = []byte("package q\n")
	if err := c.Write(); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second create: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "package p\n" {
		t.Errorf("existing file replaced: %q", got)
	}
}
