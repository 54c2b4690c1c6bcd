package match

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// ModuleOf returns the directory of the go.mod above dir and the module
// path it declares, or "" and "" when there is none.
func ModuleOf(dir string) (root, modPath string) {
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			return d, modfile.ModulePath(data)
		}
		if filepath.Dir(d) == d {
			return "", ""
		}
	}
}

// ModuleDir returns the directory of package path when it is one of the
// module's own (under root, not in a nested module, testdata or vendor).
func ModuleDir(root, modPath, path string) (string, bool) {
	if root == "" || modPath == "" {
		return "", false
	}
	rel, ok := strings.CutPrefix(path, modPath)
	if !ok || rel != "" && rel[0] != '/' {
		return "", false
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == "testdata" || elem == "vendor" || strings.HasPrefix(elem, "_") || strings.HasPrefix(elem, ".") {
			return "", false
		}
	}
	dir := filepath.Join(root, filepath.FromSlash(rel))
	for d := dir; d != root && strings.HasPrefix(d, root); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return "", false
		}
	}
	return dir, true
}
