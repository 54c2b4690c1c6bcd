package testmod

import (
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Importer returns an importer of the packages paths and their
// dependencies from their export data, which one go list names, run with
// GoEnv's environment. importer.Default runs go list with the process's,
// where the user's GOWORK or GOFLAGS can break it ("errors parsing
// go.work"). Importing another package is an error.
func Importer(t testing.TB, paths ...string) types.Importer {
	t.Helper()
	files := map[string]string{}
	var need []string
	for _, p := range paths {
		if p != "unsafe" && p != "C" {
			need = append(need, p)
		}
	}
	if len(need) > 0 {
		cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, need...)...)
		cmd.Dir, cmd.Env = t.TempDir(), GoEnv(t)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go list -export %s: %v\n%s", strings.Join(need, " "), err, stderr)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
				files[path] = file
			}
		}
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("testmod: no export data for %q", path)
		}
		return os.Open(file)
	})
}
