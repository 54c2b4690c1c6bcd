package effects_test

import (
	"go/types"
	"slices"
	"testing"

	"github.com/unflake/unflake/internal/effects"
)

// ifaceModule has an exported interface (reg.Registerer) with an exported
// implementation and an unexported one that export data leaves out (no
// exported API reaches it), one whose method is promoted from an embedded
// field, an interface with five implementations, and one that embeds
// error. app is the only
// package loaded from source.
var ifaceModule = map[string]string{
	"go.mod": "module m\n\ngo 1.24\n",
	"reg/reg.go": `package reg

import "sync"

// A Registerer registers collectors.
type Registerer interface{ Register(c Collector) error }

// A Collector has a name.
type Collector interface{ Name() string }

// Registry is the plain implementation.
type Registry struct {
	mu    sync.Mutex
	names []string
}

func (r *Registry) Register(c Collector) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, c.Name())
	return nil
}

// prefixed registers under a prefix; nothing exported reaches it.
type prefixed struct {
	sync.Mutex
	inner  Registerer
	prefix string
}

func (p *prefixed) Register(c Collector) error {
	for i := 0; i < 3; i++ {
		p.prefix += "."
	}
	return p.inner.Register(c)
}

//go:noinline
func wrap(r Registerer, prefix string) Registerer { return &prefixed{inner: r, prefix: prefix} }

var _ = wrap

// audited embeds a Registry: its Register is the Registry's.
type audited struct{ *Registry }

//go:noinline
func newAudited() Registerer { return audited{&Registry{}} }

var _ = newAudited

// A Shape has an area; five types implement it.
type Shape interface{ Area() Unit }

// A Unit measures areas.
type Unit int

type A struct{}
type B struct{}
type C struct{}
type D struct{}
type E struct{}

func (A) Area() Unit { return 1 }
func (B) Area() Unit { return 2 }
func (C) Area() Unit { return 3 }
func (D) Area() Unit { return 4 }
func (E) Area() Unit { return 5 }

// A Failer is an error that can fail again: its Error method is the
// universe's error's, which has no package.
type Failer interface {
	error
	Retry(after Unit) bool
}

// Flaky is the one Failer.
type Flaky struct{ n int }

func (f *Flaky) Error() string { return "flaky" }
func (f *Flaky) Retry(Unit) bool { f.n++; return f.n < 3 }
`,
	"app/app.go": "package app\n",
	"app/app_test.go": `package app

import (
	"testing"

	"m/reg"
)

func TestApp(t *testing.T) {
	var r reg.Registerer = &reg.Registry{}
	_ = r
	var s reg.Shape = reg.A{}
	_ = s.Area()
}
`,
}

// ifaceMethod returns the export-data object of reg's interface method.
func ifaceMethod(t *testing.T, pkgs []*types.Package, iface, name string) *types.Func {
	t.Helper()
	for _, p := range pkgs {
		for _, imp := range p.Imports() {
			if imp.Path() != "m/reg" {
				continue
			}
			obj, _, _ := types.LookupFieldOrMethod(imp.Scope().Lookup(iface).Type(), false, imp, name)
			if fn, ok := obj.(*types.Func); ok {
				return fn
			}
		}
	}
	t.Fatalf("m/reg.%s.%s not found", iface, name)
	return nil
}

// The Loader finds an interface's implementations among the run's
// packages, the unexported ones export data leaves out too, and gives up
// beyond MaxImpls.
func TestLoaderImplementations(t *testing.T) {
	pkgs := loadModule(t, ifaceModule, "CGO_ENABLED=0")
	l := effects.NewLoader()
	l.Add(pkgs)
	var roots []*types.Package
	for _, p := range pkgs {
		if p.Types != nil {
			roots = append(roots, p.Types)
		}
	}

	impls, why := l.Implementations(ifaceMethod(t, roots, "Registerer", "Register"))
	var got []string
	for _, fn := range impls {
		got = append(got, effects.Key(fn))
	}
	want := []string{"m/reg.Registry.Register", "m/reg.prefixed.Register"}
	if !slices.Equal(got, want) || why != "" {
		t.Errorf("reg.Registerer.Register: got %q (%q), want %q", got, why, want)
	}
	// The unexported implementation's summary is found by its Key: it
	// calls through the interface again, which the join follows.
	for _, fn := range impls {
		if s := l.Of(fn); s == nil {
			t.Errorf("%s: no summary", effects.Key(fn))
		}
	}

	impls, why = l.Implementations(ifaceMethod(t, roots, "Shape", "Area"))
	if impls != nil || why != "has more than 4 implementations" {
		t.Errorf("reg.Shape.Area: got %v, %q; want none: has more than 4 implementations", impls, why)
	}

	// An interface that embeds error holds a method without a package
	// (the universe's Error): followed like any other.
	impls, why = l.Implementations(ifaceMethod(t, roots, "Failer", "Retry"))
	got = nil
	for _, fn := range impls {
		got = append(got, effects.Key(fn))
	}
	if want := []string{"m/reg.Flaky.Retry"}; !slices.Equal(got, want) || why != "" {
		t.Errorf("reg.Failer.Retry: got %q (%q), want %q", got, why, want)
	}
	if impls, why = l.Implementations(ifaceMethod(t, roots, "Failer", "Error")); impls != nil || why != "" {
		t.Errorf("reg.Failer.Error: got %v, %q; want none, no reason (the universe's error)", impls, why)
	}
}
