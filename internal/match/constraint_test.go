package match_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/match"
)

// BuildConstraint names what keeps a file out of some build: a
// constraint line above the package clause, an OS or architecture suffix,
// cgo; a file every build compiles gets "".
func TestBuildConstraint(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, src, want string // want: a substring of the reason, "" for every build
	}{
		{"main_test.go", "package p\n", ""},
		{"linux_test.go", "package p\n", ""}, // a bare OS name is not a suffix
		{"main_race_test.go", "//go:build race\n\npackage p\n", "//go:build race"},
		{"old_test.go", "// +build !race\n\npackage p\n", "// +build !race"},
		{"seal_linux_test.go", "package p\n", "ends in _linux,"},
		{"seal_arm64.go", "package p\n", "ends in _arm64,"},
		{"seal_windows_amd64_test.go", "package p\n", "ends in _windows_amd64,"},
		{"cgo.go", "package p\n\nimport \"C\"\n", "cgo"},
		{"late.go", "package p\n\n//go:build race\n", ""}, // below the package clause: not a constraint
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		got := match.BuildConstraint(path)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("BuildConstraint(%s) = %q, want %q", c.name, got, c.want)
		}
	}
}
