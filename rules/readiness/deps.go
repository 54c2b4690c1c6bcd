package readiness

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// The child links more than the module: the packages of other modules
// it imports (a metrics library whose init starts a flusher, a replaced
// fork of one) initialise in it too, before the helper runs, and their
// timed work runs on in the window the sleep gave. They are no less code
// under test for living in another module: the bug may be the
// dependency's (a flusher period three times too long), or the test may
// rely on its timing. So the init hazard reads them as it reads the
// module's packages, from their syntax, in every build: found through
// the main module's go.mod (a replace to a local directory, vendor/, or
// the module cache), and a package it cannot find or read makes the site
// not fixed, since its initialisation may do anything.

// depDirs finds the directories of packages outside the main module,
// from its go.mod.
type depDirs struct {
	root     string
	requires map[string]string          // module path -> version
	replaces map[string]modfile.Replace // module path -> its replacement
	vendor   bool
	cache    string
}

// newDepDirs reads the go.mod at root; nil when there is none.
func newDepDirs(root string) *depDirs {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if root == "" || err != nil {
		return nil
	}
	f, err := modfile.Parse(filepath.Join(root, "go.mod"), data, nil)
	if err != nil {
		return nil
	}
	d := &depDirs{root: root, requires: map[string]string{}, replaces: map[string]modfile.Replace{}}
	for _, r := range f.Require {
		d.requires[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if r.Old.Version == "" || r.Old.Version == d.requires[r.Old.Path] {
			d.replaces[r.Old.Path] = *r
		}
	}
	if _, err := os.Stat(filepath.Join(root, "vendor", "modules.txt")); err == nil {
		d.vendor = true
	}
	d.cache = os.Getenv("GOMODCACHE")
	if d.cache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			if home, err := os.UserHomeDir(); err == nil {
				gopath = filepath.Join(home, "go")
			}
		}
		if gopath != "" {
			d.cache = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
		}
	}
	return d
}

// dir returns the directory of the package path of another module, or
// false when the go.mod names no module holding it or its directory is
// not there.
func (d *depDirs) dir(path string) (string, bool) {
	if d == nil {
		return "", false
	}
	mod := ""
	for m := range d.requires {
		if (path == m || strings.HasPrefix(path, m+"/")) && len(m) > len(mod) {
			mod = m
		}
	}
	for m := range d.replaces {
		if (path == m || strings.HasPrefix(path, m+"/")) && len(m) > len(mod) {
			mod = m
		}
	}
	if mod == "" {
		return "", false
	}
	rel := filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(path, mod), "/"))
	var dir string
	switch r, ok := d.replaces[mod]; {
	case ok && r.New.Version == "":
		base := r.New.Path
		if !filepath.IsAbs(base) {
			base = filepath.Join(d.root, base)
		}
		dir = filepath.Join(base, rel)
	case d.vendor:
		dir = filepath.Join(d.root, "vendor", filepath.FromSlash(path))
	default:
		p, v := mod, d.requires[mod]
		if ok {
			p, v = r.New.Path, r.New.Version
		}
		ep, err1 := module.EscapePath(p)
		ev, err2 := module.EscapeVersion(v)
		if err1 != nil || err2 != nil || d.cache == "" || v == "" {
			return "", false
		}
		dir = filepath.Join(d.cache, ep+"@"+ev, rel)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", false
	}
	return dir, true
}
