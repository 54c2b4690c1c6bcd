package wallclock

import (
	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rule"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

func TestPrefilter(t *testing.T) {
	for src, want := range map[string]bool{
		"if time.Since(start) > d {}":                 true,
		"d := time.Now().Sub(start)":                  true,
		"require.WithinDuration(t, a, b, d)":          true,
		"start := time.Now(); t.Log(time.Now())":      false,
		"func f() { fmt.Println(\"since forever\") }": false,
	} {
		if got := prefilter([]byte(src), rule.Values{}); got != want {
			t.Errorf("prefilter(%q) = %v, want %v", src, got, want)
		}
	}
}

// TestRaceGolden runs the rewritten module of the race case under -race:
// the budget -race's slowdown would break is gone, and the result
// assertions still pass.
func TestRaceGolden(t *testing.T) {
	testmod.Slow(t)
	if out, err := exec.Command("go", "env", "CGO_ENABLED").Output(); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Skip("-race needs cgo")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("-race needs a C compiler")
	}
	dir := t.TempDir()
	write := func(path string) {
		a, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if f.Name == "findings" {
				continue
			}
			p := filepath.Join(dir, f.Name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The input, then the rewritten files over it.
	write(filepath.Join("..", "..", "testdata", "wallclock", "race.txtar"))
	write(filepath.Join("..", "..", "golden", "wallclock", "race.golden"))
	cmd := exec.Command("go", "test", "-race", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = testmod.GoEnv(t, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -race: %v\n%s", err, out)
	}
}
