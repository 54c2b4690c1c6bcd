package testmod

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
	"golang.org/x/tools/txtar"
)

// A Module is one version of a module a test's proxy serves (Proxy).
type Module struct {
	Path, Version string
	Go            string            // its go.mod's go line ("1.18")
	Files         map[string]string // its files but go.mod, by slash path in the module
}

// SyncVersion is the version of golang.org/x/sync the tests' proxy
// serves: not one the real module has published yet, so a go.mod or
// go.sum that leaks out of a test cannot be mistaken for a real one.
const SyncVersion = "v0.99.0"

// Sync is a stand-in for golang.org/x/sync at SyncVersion: its errgroup
// package has the part of the real API that unflake's fixes use, with the
// same behaviour, so the rewritten tests build and run against it. Its go
// line, 1.18, lets modules of any go version the cases declare add it.
func Sync() Module {
	return Module{Path: "golang.org/x/sync", Version: SyncVersion, Go: "1.18", Files: map[string]string{
		"LICENSE": "A stand-in for golang.org/x/sync in unflake's tests; no code of the real module.\n",
		"errgroup/errgroup.go": `// Package errgroup stands in for golang.org/x/sync/errgroup in
// unflake's tests: Group with Go, Wait and SetLimit.
package errgroup

import "sync"

// A Group runs functions in goroutines and keeps the first error.
type Group struct {
	wg      sync.WaitGroup
	sem     chan struct{}
	errOnce sync.Once
	err     error
}

// SetLimit lets at most n functions run at once (n < 0: no limit).
func (g *Group) SetLimit(n int) {
	if n < 0 {
		g.sem = nil
		return
	}
	g.sem = make(chan struct{}, n)
}

// Go runs f in a new goroutine, once fewer than the limit run.
func (g *Group) Go(f func() error) {
	if g.sem != nil {
		g.sem <- struct{}{}
	}
	g.wg.Add(1)
	go func() {
		defer g.done()
		if err := f(); err != nil {
			g.errOnce.Do(func() { g.err = err })
		}
	}()
}

func (g *Group) done() {
	if g.sem != nil {
		<-g.sem
	}
	g.wg.Done()
}

// Wait waits for every function and returns the first error.
func (g *Group) Wait() error {
	g.wg.Wait()
	return g.err
}
`,
	}}
}

// Proxy writes mods as a module proxy (the layout GOPROXY=file:// reads:
// PATH/@v/list, VERSION.info, .mod and .zip) into a new temporary
// directory and returns the GOPROXY value that names it.
func Proxy(t testing.TB, mods ...Module) string {
	t.Helper()
	root := t.TempDir()
	lists := map[string][]string{}
	for _, m := range mods {
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			t.Fatal(err)
		}
		at := filepath.Join(root, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			t.Fatal(err)
		}
		gomod := "module " + m.Path + "\n"
		if m.Go != "" {
			gomod += "\ngo " + m.Go + "\n"
		}
		src := t.TempDir()
		files := map[string]string{"go.mod": gomod}
		for name, data := range m.Files {
			files[name] = data
		}
		WriteFiles(t, src, txtarFiles(files))
		var zip bytes.Buffer
		if err := modzip.CreateFromDir(&zip, module.Version{Path: m.Path, Version: m.Version}, src); err != nil {
			t.Fatalf("zip of %s@%s: %v", m.Path, m.Version, err)
		}
		// A fixed time: the go command copies it into go.mod only for
		// pseudo-versions, but a test's output should not depend on it.
		info := fmt.Sprintf(`{"Version":%q,"Time":"2024-01-01T00:00:00Z"}`, m.Version)
		for ext, data := range map[string][]byte{".info": []byte(info), ".mod": []byte(gomod), ".zip": zip.Bytes()} {
			if err := os.WriteFile(filepath.Join(at, m.Version+ext), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		lists[at] = append(lists[at], m.Version)
	}
	for at, versions := range lists {
		sort.Strings(versions)
		if err := os.WriteFile(filepath.Join(at, "list"), []byte(strings.Join(versions, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return "file://" + filepath.ToSlash(root)
}

// ProxyEnv is GoEnv for a go command that may add modules to go.mod: it
// finds modules only in a proxy serving mods (Proxy) and keeps them in a
// new module cache of the test's, so that neither the user's module cache
// (whose version lists name versions it holds no zip of) nor the network
// can change what it chooses, and nothing the test downloads reaches the
// user's cache. Checksums are not looked up: the modules are the test's.
// extra is added as GoEnv adds it.
func ProxyEnv(t testing.TB, mods []Module, extra ...string) []string {
	t.Helper()
	env := GoEnv(t)
	return append(env, append([]string{
		"GOPROXY=" + Proxy(t, mods...),
		"GOMODCACHE=" + ModCache(t),
		"GOSUMDB=off",
		"GONOSUMDB=", "GONOPROXY=", "GOPRIVATE=", "GOINSECURE=",
	}, extra...)...)
}

// ModCache returns a new, empty module cache for the test. The go command
// makes what it extracts read-only; the test's cleanup makes it writable
// again before removing the directory.
func ModCache(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(path, 0o755)
			}
			return nil
		})
	})
	return dir
}

func txtarFiles(files map[string]string) []txtar.File {
	var out []txtar.File
	for name, data := range files {
		out = append(out, txtar.File{Name: name, Data: []byte(data)})
	}
	return out
}
