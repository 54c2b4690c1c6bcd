package effects_test

import (
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/unflake/unflake/internal/effects"

	"github.com/unflake/unflake/internal/testmod"
)

// module is a module whose path has no dot ("m", which the go command's
// rule for module paths alone would take for the standard library): app
// imports lib, lib imports util.
var module = map[string]string{
	"go.mod": "module m\n\ngo 1.24\n",
	"util/util.go": `package util

var hits int

// Count writes a package-level variable.
func Count() { hits++ }
`,
	"lib/lib.go": `package lib

import (
	"time"

	"m/util"
)

// Pure calls nothing.
func Pure(a int) int { return a * 2 }

// StartReporter starts a goroutine that never ends.
func StartReporter() { go loop() }

func loop() {
	for {
		time.Sleep(time.Second)
		util.Count()
	}
}

// A Server runs a loop until Close.
type Server struct{ done chan struct{} }

// NewServer starts the loop Close ends.
func NewServer() *Server {
	s := &Server{done: make(chan struct{})}
	go s.run()
	return s
}

func (s *Server) run() {
	for range s.done {
	}
}

// Close ends the loop.
func (s *Server) Close() { close(s.done) }
`,
	"app/app.go": "package app\n",
	"app/app_test.go": `package app

import (
	"testing"

	"m/lib"
)

func TestApp(t *testing.T) {
	lib.Pure(1)
	lib.StartReporter()
	lib.NewServer().Close()
}
`,
}

// load writes module into a temporary directory and loads app as the
// engine does: syntax for app, types only (export data) for the rest.
func load(t *testing.T) []*packages.Package {
	return loadModule(t, module, "CGO_ENABLED=0")
}

func loadModule(t *testing.T, module map[string]string, env ...string) []*packages.Package {
	t.Helper()
	return loadPatterns(t, module, []string{"./app"}, env...)
}

// loadPatterns is loadModule with the patterns to load from source.
func loadPatterns(t *testing.T, module map[string]string, patterns []string, env ...string) []*packages.Package {
	t.Helper()
	dir := t.TempDir()
	for name, src := range module {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedImports |
			packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax | packages.NeedModule | packages.NeedExportFile,
		Dir:   dir,
		Tests: true,
		Env:   testmod.GoEnv(t, append([]string{"GOFLAGS=-mod=mod", "GO111MODULE=on"}, env...)...),
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatal(e)
		}
	}
	return pkgs
}

// libFunc returns the export-data object of lib's function or method
// name ("NewServer", "Server.Close"), as a rule of app's test sees it.
func libFunc(t *testing.T, pkgs []*packages.Package, recv, name string) *types.Func {
	t.Helper()
	for _, p := range pkgs {
		lib, ok := p.Imports["m/lib"]
		if !ok || lib.Types == nil {
			continue
		}
		obj := lib.Types.Scope().Lookup(name)
		if recv != "" {
			m, _, _ := types.LookupFieldOrMethod(types.NewPointer(lib.Types.Scope().Lookup(recv).Type()), true, lib.Types, name)
			obj = m
		}
		if fn, ok := obj.(*types.Func); ok {
			return fn
		}
	}
	t.Fatalf("m/lib.%s not found", name)
	return nil
}

// A package the load already type-checked from source as a root (lib,
// loaded with app) is summarised from that check, not loaded again, with
// the same summaries; one go/packages checked without function bodies (lib
// when util is a root: it imports a package checked from source) is
// loaded again.
func TestLoaderTypedRoot(t *testing.T) {
	for _, root := range []string{"./lib", "./util"} {
		t.Run(root, func(t *testing.T) { testLoaderTypedRoot(t, root) })
	}
}

func testLoaderTypedRoot(t *testing.T, root string) {
	pkgs := loadPatterns(t, module, []string{"./app", root}, "CGO_ENABLED=0")
	l := effects.NewLoader()
	l.Add(pkgs)
	s := l.Of(libFunc(t, pkgs, "", "StartReporter"))
	if s == nil {
		t.Fatal("lib.StartReporter: unknown")
	}
	var got []string
	for _, e := range s.Effects {
		got = append(got, e.Why())
	}
	want := []string{
		"lib.StartReporter, which starts a goroutine running lib.loop that never ends",
		"lib.StartReporter → lib.loop → time.Sleep, which sleeps on the real clock",
		"lib.StartReporter → lib.loop → util.Count, which writes the package-level variable util.hits",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("lib.StartReporter: got %q, want %q", got, want)
	}
}

func TestLoaderLazy(t *testing.T) {
	testmod.Short(t)
	pkgs := load(t)
	l := effects.NewLoader()
	l.Add(pkgs)

	// A pure function loads lib, and nothing it does not call.
	if s := l.Of(libFunc(t, pkgs, "", "Pure")); !s.Pure() {
		t.Fatalf("lib.Pure: got %+v, want pure", s)
	}
	if st := l.Stats(); st.Loaded != 1 || st.Asked != 1 || st.Known != 1 {
		t.Fatalf("after lib.Pure: stats %+v, want 1 package loaded, 1 asked, 1 known", st)
	}

	// StartReporter reaches util through loop.
	s := l.Of(libFunc(t, pkgs, "", "StartReporter"))
	if s == nil {
		t.Fatal("lib.StartReporter: unknown")
	}
	want := map[effects.Kind]string{
		effects.GoroutineForever: "lib.StartReporter, which starts a goroutine running lib.loop that never ends",
		effects.Timer:            "lib.StartReporter → lib.loop → time.Sleep, which sleeps on the real clock",
		effects.WritesGlobal:     "lib.StartReporter → lib.loop → util.Count, which writes the package-level variable util.hits",
	}
	got := map[effects.Kind]string{}
	for _, e := range s.Effects {
		got[e.Kind] = e.Why()
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("lib.StartReporter %s: got %q, want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("lib.StartReporter: got effects %v, want %v", got, want)
	}
	if st := l.Stats(); st.Loaded != 2 {
		t.Errorf("after lib.StartReporter: %d packages loaded, want 2 (lib, util)", st.Loaded)
	}

	// A constructor whose goroutine the returned value's Close ends, and
	// a method, asked for concurrently (as the engine's jobs do).
	var wg sync.WaitGroup
	sums := make([]*effects.Summary, 2)
	for i, f := range []*types.Func{libFunc(t, pkgs, "", "NewServer"), libFunc(t, pkgs, "Server", "Close")} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i] = l.Of(f)
		}()
	}
	wg.Wait()
	if s := sums[0]; s == nil || len(s.Effects) != 1 || s.Effects[0].Kind != effects.GoroutineEnds ||
		s.Effects[0].Ends != "Close" || s.Effects[0].Type != "m/lib.Server" {
		t.Errorf("lib.NewServer: got %+v, want one goroutine-ends effect, ended by m/lib.Server.Close", s)
	}
	if !sums[1].Pure() {
		t.Errorf("lib.Server.Close: got %+v, want pure", sums[1])
	}
	if st := l.Stats(); st.Loaded != 2 {
		t.Errorf("loaded %d packages, want 2: lib is loaded once", st.Loaded)
	}
}

// TestLoaderEvicts checks that a Loader bounded to one package still
// answers, loading a package again when it was let go.
func TestLoaderEvicts(t *testing.T) {
	testmod.Short(t)
	pkgs := load(t)
	l := effects.NewLoader()
	l.MaxLoaded = 1
	l.Add(pkgs)
	first := l.Of(libFunc(t, pkgs, "", "StartReporter"))
	if first == nil || first.Pure() {
		t.Fatalf("lib.StartReporter: got %+v", first)
	}
	if s := l.Of(libFunc(t, pkgs, "", "NewServer")); s == nil || len(s.Effects) != 1 {
		t.Fatalf("lib.NewServer after eviction: got %+v", s)
	}
}

// TestLocal summarises a function of the package under analysis (the
// test itself) from its syntax, with the Loader for what it calls
// elsewhere: the reporter's goroutine never ends; the server's does, as
// the test closes it.
func TestLocal(t *testing.T) {
	testmod.Short(t)
	pkgs := load(t)
	l := effects.NewLoader()
	l.Add(pkgs)
	for _, p := range pkgs {
		if p.ID != "m/app [m/app.test]" {
			continue
		}
		test, _ := p.Types.Scope().Lookup("TestApp").(*types.Func)
		s := effects.Local(p.Types, p.TypesInfo, p.Syntax, l).Of(test)
		if s == nil {
			t.Fatal("app.TestApp: unknown")
		}
		var got []string
		for _, e := range s.Effects {
			got = append(got, string(e.Kind)+": "+e.Why())
		}
		want := []string{
			"timer: app.TestApp → lib.StartReporter → lib.loop → time.Sleep, which sleeps on the real clock",
			"writes-global: app.TestApp → lib.StartReporter → lib.loop → util.Count, which writes the package-level variable util.hits",
			"goroutine-forever: app.TestApp → lib.StartReporter, which starts a goroutine running lib.loop that never ends",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("app.TestApp:\ngot  %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
		return
	}
	t.Fatal("no package m/app [m/app.test]")
}

// TestLoaderCgo checks that a call into C, which the loader sees as the
// _Cfunc_ wrapper cgo writes into the compiled files, is the Cgo effect.
func TestLoaderCgo(t *testing.T) {
	testmod.Short(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no C compiler: cgo cannot build")
	}
	pkgs := loadModule(t, map[string]string{
		"go.mod": "module m\n\ngo 1.24\n",
		"lib/lib.go": `package lib

// static int answer(void) { return 42; }
import "C"

// Answer asks C.
func Answer() int { return int(C.answer()) }
`,
		"app/app_test.go": `package app

import (
	"testing"

	"m/lib"
)

func TestApp(t *testing.T) { lib.Answer() }
`,
	}, "CGO_ENABLED=1", "CC=gcc")
	l := effects.NewLoader()
	l.Add(pkgs)
	s := l.Of(libFunc(t, pkgs, "", "Answer"))
	if s == nil || len(s.Effects) != 1 || s.Effects[0].Kind != effects.Cgo {
		t.Fatalf("lib.Answer: got %+v, want one cgo effect", s)
	}
	if got, want := s.Effects[0].Why(), "lib.Answer, which calls C code (cgo)"; got != want {
		t.Errorf("lib.Answer: got %q, want %q", got, want)
	}
}

// TestListed lists what the load listed of a package, through the Loader
// and through the Local source that defers to it: lib's files and its
// import of util; time is of the standard library; a package the load
// did not list is unknown.
func TestListed(t *testing.T) {
	testmod.Short(t)
	pkgs := load(t)
	l := effects.NewLoader()
	l.Add(pkgs)
	ls, ok := effects.Listed(l, "m/lib")
	if !ok || ls.Std || len(ls.Files) != 1 || !slices.Contains(ls.Imports, "m/util") {
		t.Errorf("m/lib: got %+v, %v; want one file, an import of m/util, not std", ls, ok)
	}
	if ls, ok := effects.Listed(l, "time"); !ok || !ls.Std {
		t.Errorf("time: got %+v, %v; want std", ls, ok)
	}
	local := effects.Local(pkgs[0].Types, pkgs[0].TypesInfo, pkgs[0].Syntax, l)
	if ls2, ok := effects.Listed(local, "m/lib"); !ok || !slices.Equal(ls2.Imports, ls.Imports) {
		t.Errorf("m/lib through Local: got %+v, %v; want the Loader's", ls2, ok)
	}
	if _, ok := effects.Listed(l, "m/none"); ok {
		t.Error("m/none: listed, want unknown")
	}
	if _, ok := effects.Listed(effects.None, "m/lib"); ok {
		t.Error("m/lib through None: listed, want unknown")
	}
}
