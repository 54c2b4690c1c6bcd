package handover

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"testing"

	"github.com/unflake/unflake/internal/match"
)

// Stubs of the packages the cases use, so that they type-check without
// reading the standard library.
var stubs = map[string]string{
	"testing": `package testing

type T struct{}
type TB interface{ Helper() }

func (t *T) Run(name string, f func(t *T)) bool { return true }
func (t *T) Cleanup(f func())                   {}
func (t *T) Helper()                            {}
`,
	"testing/synctest": `package synctest

import "testing"

func Test(t *testing.T, f func(*testing.T)) {}
`,
	"sync": `package sync

type WaitGroup struct{}

func (wg *WaitGroup) Go(f func()) {}
`,
	"net/http": `package http

type ResponseWriter interface{ Write([]byte) (int, error) }
type Request struct{}
type HandlerFunc func(ResponseWriter, *Request)

func (f HandlerFunc) ServeHTTP(w ResponseWriter, r *Request) { f(w, r) }

type Handler interface{ ServeHTTP(ResponseWriter, *Request) }
type Server struct{ Handler Handler }
type ServeMux struct{}

func (m *ServeMux) HandleFunc(pattern string, f func(ResponseWriter, *Request)) {}
`,
	"github.com/stretchr/testify/require": `package require

import (
	"testing"
	"time"
)

func Eventually(t *testing.T, cond func() bool, waitFor, tick time.Duration) {}
`,
	"time": `package time

type Duration int64
`,
	"example.com/testutil": `package testutil

import "testing"

func Eventually(t testing.TB, cond func() bool) {}
`,
}

// The package under test: code (app.go) and its test file. Every literal
// calls mark with its name; want says whose code each one is.
const app = `package app

// Ctx is a request.
type Ctx struct{}

// Handler is a function type the app calls, an alias.
type Handler = func(Ctx) error

// App routes requests.
type App struct{}

func (a *App) Get(path string, h Handler) {}

// Job is run by the scheduler.
type Job struct {
	Name string
	Run  func()
}

func Schedule(j Job) {}

func mark(string) {}
`

const appTest = `package app

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"

	"example.com/testutil"
	"github.com/stretchr/testify/require"
)

type tcase struct {
	name    string
	handler Handler
	check   func() bool
}

func TestX(t *testing.T) {
	a := &App{}
	a.Get("/", func(c Ctx) error { mark("arg"); return nil })
	h := func(c Ctx) error { mark("var"); return nil }
	a.Get("/v", h)
	t.Run("sub", func(t *testing.T) { mark("run") })
	t.Cleanup(func() { mark("cleanup") })
	synctest.Test(t, func(t *testing.T) { mark("synctest") })
	go func() { mark("go") }()
	var wg sync.WaitGroup
	wg.Go(func() { mark("wggo") })
	func() { mark("iife") }()
	wait := func() { mark("called") }
	wait()
	defer wait()
	_ = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mark("conv") })
	var mux http.ServeMux
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { mark("std") })
	Schedule(Job{Name: "j", Run: func() { mark("field") }})
	Schedule(Job{"k", func() { mark("positional") }})
	var j Job
	j.Run = func() { mark("assigned") }
	poll(t, func() bool { mark("helper"); return true })
	serve(a, func(c Ctx) error { mark("helperhands"); return nil })
	testutil.Eventually(t, func() bool { mark("tbhelper"); return true })
	require.Eventually(t, func() bool { mark("eventually"); return true }, 1, 1)
	for _, tc := range []tcase{{name: "a", handler: func(c Ctx) error { mark("table"); return nil }, check: func() bool { mark("tablecheck"); return true }}} {
		a.Get("/"+tc.name, tc.handler)
		_ = tc.check()
	}
	a.Get("/f", slow())
	waitFor := func(cond func() bool) {
		for !cond() {
		}
	}
	waitFor(func() bool { mark("closure"); return true })
	hand := func(h Handler) { a.Get("/c", h) }
	hand(func(c Ctx) error { mark("closurehands"); return nil })
	var later func(func())
	later = func(f func()) { f() }
	later = func(f func()) { go f() }
	later(func() { mark("twice") })
	a.Get("/d", declHandler)
	t.Run("declsub", declSubtest)
	ownHelper()
	a.Get("/w", func(c Ctx) error { work(); return nil })
	simulate := func() { mark("calledbyhandler") }
	a.Get("/s", func(c Ctx) error { simulate(); return nil })
	a.Get("/n", func(c Ctx) error {
		func() { mark("nested") }()
		return nil
	})
	t.Run("inner", func(t *testing.T) {
		a.Get("/i", func(c Ctx) error { mark("insubtest"); return nil })
	})
}

func poll(t *testing.T, cond func() bool) {
	for !cond() {
	}
}

func serve(a *App, h Handler) { a.Get("/", h) }

func declHandler(c Ctx) error { mark("declhandler"); return nil }

func declSubtest(t *testing.T) { mark("declsubtest") }

func ownHelper() { mark("ownhelper") }

// work is only called from a handler.
func work() { mark("work") }

func TestUnused(t *testing.T) { mark("testfunc") }

func slow() Handler {
	return func(c Ctx) error { mark("returned"); return nil }
}
`

var want = map[string]Kind{
	"arg": Handed, "var": Handed, "run": Own, "cleanup": Own, "synctest": Own,
	"go": Own, "wggo": Own, "iife": Own, "called": Own, "conv": Handed,
	"std": Handed, "field": Handed, "positional": Handed, "assigned": Handed,
	"helper": Own, "helperhands": Handed, "tbhelper": Unknown, "table": Handed,
	"tablecheck": Own, "closure": Own, "calledbyhandler": Handed, "declhandler": Handed, "declsubtest": Own, "ownhelper": Own, "work": Handed, "testfunc": Own, "eventually": Own, "closurehands": Handed, "twice": Unknown, "returned": Handed, "nested": Handed, "insubtest": Handed,
}

type importer struct {
	fset *token.FileSet
	pkgs map[string]*types.Package
	t    *testing.T
}

func (im *importer) Import(path string) (*types.Package, error) {
	if p, ok := im.pkgs[path]; ok {
		return p, nil
	}
	src, ok := stubs[path]
	if !ok {
		return nil, fmt.Errorf("no stub for %q", path)
	}
	f, err := parser.ParseFile(im.fset, path+".go", src, 0)
	if err != nil {
		return nil, err
	}
	conf := types.Config{Importer: im}
	p, err := conf.Check(path, im.fset, []*ast.File{f}, nil)
	if err != nil {
		return nil, err
	}
	im.pkgs[path] = p
	return p, nil
}

func TestEnclosing(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, src := range []struct{ name, text string }{{"app.go", app}, {"app_test.go", appTest}} {
		f, err := parser.ParseFile(fset, src.name, src.text, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: &importer{fset: fset, pkgs: map[string]*types.Package{}, t: t}}
	if _, err := conf.Check("example.com/app", fset, files, info); err != nil {
		t.Fatal(err)
	}
	f := New(info, fset, files)
	got := map[string]Kind{}
	match.WithStack(files[1], func(n ast.Node, stack []ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "mark" {
			return true
		}
		name := constant.StringVal(info.Types[call.Args[0]].Value)
		v := f.Enclosing(stack)
		got[name] = v.Kind
		if v.Kind != Own && v.To == "" {
			t.Errorf("%s: verdict %v says nothing of where the literal goes", name, v.Kind)
		}
		return true
	})
	if len(got) != len(want) {
		t.Errorf("found %d marks, want %d", len(got), len(want))
	}
	for name, k := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: no mark found", name)
		} else if g != k {
			t.Errorf("%s: got %v, want %v", name, g, k)
		}
	}
}

func (k Kind) String() string {
	switch k {
	case Own:
		return "Own"
	case Handed:
		return "Handed"
	}
	return "Unknown"
}
