package contract

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/match"
)

// The code under test: a batcher with a flush interval, a config, an
// option and a package variable.
const underTest = `package p

import "time"

type Config struct {
	Size  int
	Flush time.Duration
}

type Batcher struct{ Interval time.Duration }

func NewBatcher(size int, flushEvery time.Duration) *Batcher { return nil }
func New(c Config) *Batcher                                 { return nil }

type Option func(*Batcher)

func WithTTL(ttl time.Duration) Option        { return nil }
func Open(opts ...Option) *Batcher            { return nil }
func (b *Batcher) SetCooldown(d time.Duration) {}
func (b *Batcher) AddFunc(spec string, f func()) {}
func (b *Batcher) Named(name string)            {}

var ReapInterval = time.Second
`

const tests = `package p

import "time"

type table struct{ wait time.Duration }

func newBreaker(tries int, interval time.Duration) *Batcher {
	return NewBatcher(tries, time.Duration(tries)*interval)
}

func settle() { time.Sleep(time.Second) }

func TestArg()       { NewBatcher(10, 50*time.Millisecond) }
func TestLocal()     { ttl := 90 * time.Millisecond; Open(WithTTL(ttl / 3)) }
func TestConfig()    { New(Config{Size: 1, Flush: 20 * time.Millisecond}) }
func TestSetter()    { var b Batcher; b.SetCooldown(time.Second) }
func TestField()     { b := &Batcher{}; b.Interval = 5 * time.Millisecond }
func TestVar()       { ReapInterval = 30 * time.Millisecond }
func TestHelper()    { newBreaker(3, 10*time.Millisecond) }
func TestUnknown()   { d := 10 * time.Millisecond; d *= 2; NewBatcher(1, d) }
func TestNone()      { settle(); time.Sleep(time.Second); _ = table{wait: time.Second} }
func TestSpec()      { var b Batcher; b.AddFunc("@every 1s", nil); b.Named("job 1"); b.Named("5") }
func TestAfterWait() { time.Sleep(time.Millisecond); NewBatcher(1, time.Second) }
`

// check type-checks the package and returns what Set finds in each test,
// as "role=value@site" (value "?" when unknown).
func check(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for name, src := range map[string]string{"p.go": underTest, "p_test.go": tests} {
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: fakeTime(t, fset)}
	if _, err := conf.Check("example.com/p", fset, files, info); err != nil {
		t.Fatal(err)
	}
	f := NewFinder(fset, info, match.FuncDecls(info, files), files)
	out := map[string][]string{}
	for _, file := range files {
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fd.Name.Name, "Test") {
				continue
			}
			before := token.NoPos
			if fd.Name.Name == "TestAfterWait" {
				before = fd.Body.List[0].End()
			}
			var got []string
			for _, d := range f.Set(fd, before) {
				v := "?"
				if d.Known {
					v = d.Value.String()
				}
				got = append(got, fmt.Sprintf("%s=%s@%s", d.Role, v, d.Site))
			}
			out[fd.Name.Name] = got
		}
	}
	return out
}

func TestSet(t *testing.T) {
	got := check(t)
	want := map[string][]string{
		"TestArg":       {"flushEvery=50ms@NewBatcher(..., 50 * time.Millisecond)"},
		"TestLocal":     {"ttl=30ms@WithTTL(ttl / 3)"},
		"TestConfig":    {"Flush=20ms@Config{Flush: 20 * time.Millisecond}"},
		"TestSetter":    {"d=1s@b.SetCooldown(time.Second)"},
		"TestField":     {"Interval=5ms@b.Interval = 5 * time.Millisecond"},
		"TestVar":       {"ReapInterval=30ms@ReapInterval = 30 * time.Millisecond"},
		"TestHelper":    {"flushEvery=?@NewBatcher(..., time.Duration(tries) * interval)"},
		"TestUnknown":   {"flushEvery=?@NewBatcher(..., d)"},
		"TestNone":      nil,
		"TestSpec":      {"spec=1s@b.AddFunc(\"@every 1s\", ...)"},
		"TestAfterWait": nil,
	}
	for name, w := range want {
		if fmt.Sprint(got[name]) != fmt.Sprint(w) {
			t.Errorf("%s: got %q, want %q", name, got[name], w)
		}
	}
}

func TestBinds(t *testing.T) {
	ms := time.Millisecond
	d := func(v time.Duration) Duration {
		return Duration{Value: v, Known: true, Role: "ttl", Site: "s", Where: "x_test.go:1"}
	}
	for _, c := range []struct {
		w    Window
		ds   []Duration
		want bool
	}{
		{Window{Wait: 150 * ms, Known: true, Budget: 10 * time.Second}, []Duration{d(50 * ms)}, true},     // 3 periods
		{Window{Wait: 150 * ms, Known: true, Budget: 10 * time.Second}, []Duration{d(5 * ms)}, false},     // 30 periods
		{Window{Wait: 150 * ms, Known: true, Budget: 10 * time.Second}, []Duration{d(time.Second)}, true}, // a timeout a poll waits out
		{Window{Wait: 150 * ms, Known: true, Budget: 10 * time.Second}, []Duration{d(30 * time.Second)}, false},
		{Window{Known: false, Budget: 10 * time.Second}, []Duration{d(5 * ms)}, true},
		{Window{Wait: time.Second, Known: true, Budget: 10 * time.Second}, []Duration{{Role: "r"}}, true},
		{Window{Wait: time.Second, Known: true, Budget: 10 * time.Second}, nil, false},
	} {
		if _, got := Binds(c.w, c.ds); got != c.want {
			t.Errorf("Binds(%+v, %+v) = %v, want %v", c.w, c.ds, got, c.want)
		}
	}
	r := Reason(Window{What: "the sleep"}, d(50*ms), "a poll")
	if !strings.Contains(r, "the 50ms the test sets as ttl (s at x_test.go:1)") || !strings.Contains(r, "the sleep is the window") {
		t.Errorf("Reason = %q", r)
	}
}

func TestNameBound(t *testing.T) {
	for name, want := range map[string]string{
		"TestFlushEvery50ms":         "Every",
		"TestRenewBeforeTTL":         "TTL",
		"TestRenewEveryTTLThird":     "Every",
		"TestHalfOpenAfterCooldown":  "Cooldown",
		"TestReadyWithin100ms":       "Within",
		"TestFiresInTime":            "In Time",
		"fires late":                 "late",
		"TestLatency":                "",
		"TestPeriodic":               "Periodic",
		"TestDialTimeout":            "Timeout",
		"TestServerStarts":           "",
		"TestEveryone":               "",
		"TestIntervalsAreRespected":  "Intervals",
		"TestLeaseRenewed_onTime":    "on Time",
		"TestDeadlineExceededReturn": "",
	} {
		if got := NameBound(name); got != want {
			t.Errorf("NameBound(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestMessageBound(t *testing.T) {
	for msg, want := range map[string]string{
		"not flushed within 100ms":         "within 100ms",
		"entry still there after the TTL":  "TTL",
		"expected a flush every tick":      "every",
		"renewal came late":                "late",
		"not renewed in time":              "in time",
		"got %v, want a timeout":           "timeout",
		"timed out waiting for the server": "",
		"timeout waiting for ready":        "",
		"not usable within %d attempts":    "within %d",
		"got %d flushes, want 3":           "",
		"the period was %v":                "period",
		"latency too high":                 "",
	} {
		if got := MessageBound(msg); got != want {
			t.Errorf("MessageBound(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestStatedBound(t *testing.T) {
	for text, want := range map[string]string{
		"the worker must be up within 1.5s":          "within 1.5s",
		"start-up takes under 200ms":                 "under 200ms",
		"ready in less than 2 seconds":               "less than 2 seconds",
		"the daemon has to answer. It does so in 3s": "in 3s",
		"the daemon has to answer, 3s at most":       "the daemon has to answer, 3s at most",
		"a start-up budget of its own":               "start-up budget",
		"past the deadline":                          "deadline",
		"give the child time to install its handler": "",
		"100ms is plenty for the child to get going": "",
		"let it load its config. Then 2s is plenty":  "",
		"got %d drains, want 1":                      "",
	} {
		if got := StatedBound(text); got != want {
			t.Errorf("StatedBound(%q) = %q, want %q", text, got, want)
		}
	}
}

// A speed bound is narrower than a stated one: a timer's words (TTL,
// cooldown, a deadline) are bounds a virtual clock keeps.
func TestSpeedBound(t *testing.T) {
	for text, want := range map[string]string{
		"the sweep must finish in 300ms":       "the sweep must finish in 300ms",
		"the cache must go stale within 2s":    "within 2s",
		"evicts in under 500ms":                "under 500ms",
		"wait for the cooldown":                "",
		"past the deadline":                    "",
		"sleep past the 30ms TTL of the entry": "",
	} {
		if got := SpeedBound(text); got != want {
			t.Errorf("SpeedBound(%q) = %q, want %q", text, got, want)
		}
	}
	for _, tc := range []struct {
		name  string
		speed bool
		want  string
	}{
		{"TestWarmWithin200ms", true, "Within"},
		{"TestUpIn1500ms", false, "1500ms"},
		{"TestFastStart", true, "Fast"},
		{"fast", false, ""},
		{"TestExpiresAtTTL", true, ""},
		{"TestReadDeadline", true, ""},
		{"TestHalfOpenAfterCooldown", true, ""},
	} {
		if got := NameSpeedBound(tc.name, tc.speed); got != tc.want {
			t.Errorf("NameSpeedBound(%q, %v) = %q, want %q", tc.name, tc.speed, got, tc.want)
		}
	}
}

func TestNameStatedBound(t *testing.T) {
	for name, want := range map[string]string{
		"TestReadyWithin100ms": "Within",
		"TestUpIn1500ms":       "1500ms",
		"TestReady_2s":         "2s",
		"TestFastStart":        "Fast",
		"TestSlowChild":        "",
		"TestV2Server":         "",
		"TestStop":             "",
	} {
		if got := NameStatedBound(name); got != want {
			t.Errorf("NameStatedBound(%q) = %q, want %q", name, got, want)
		}
	}
}

// fakeTime imports a stand-in time package (Duration, its units, Sleep),
// which is all the cases need: the real one from source takes seconds.
func fakeTime(t *testing.T, fset *token.FileSet) types.Importer {
	t.Helper()
	const src = `package time

type Duration int64

const (
	Nanosecond  Duration = 1
	Microsecond          = 1000 * Nanosecond
	Millisecond          = 1000 * Microsecond
	Second               = 1000 * Millisecond
)

func Sleep(d Duration) {}

type Ticker struct{}

func NewTicker(d Duration) *Ticker { return nil }
`
	f, err := parser.ParseFile(fset, "time.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{}).Check("time", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return importerFunc(func(path string) (*types.Package, error) {
		if path == "time" {
			return pkg, nil
		}
		return nil, fmt.Errorf("no package %s", path)
	})
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// TestFramework: a test framework's or a fake clock's calls take the
// test's own durations (a poll's budget, a fake clock's advance), not the
// code under test's.
func TestFramework(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/stretchr/testify/assert": true,
		"github.com/benbjohnson/clock":       true,
		"github.com/jonboulle/clockwork":     true,
		"k8s.io/utils/clock/testing":         true,
		"github.com/stretchr/testifyx":       false,
		"example.com/breaker":                false,
		"golang.org/x/time/rate":             false,
	} {
		if got := framework(path); got != want {
			t.Errorf("framework(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestTimed: of the statements that run to their end before the point
// (before), only the work that outlives them counts: a ticker, a
// goroutine's sleep; not a sleep of their own. Of the others (roots),
// every wait, in the functions they reach too.
func TestTimed(t *testing.T) {
	const src = `package p

import "time"

func load()  { time.Sleep(40 * time.Millisecond) }
func start() { time.NewTicker(50 * time.Millisecond) }
func spawn() { go func() { time.Sleep(60 * time.Millisecond) }() }

func child() {
	load()
	start()
	spawn()
	for {
		time.Sleep(70 * time.Millisecond)
		load()
	}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	if _, err := (&types.Config{Importer: fakeTime(t, fset)}).Check("example.com/p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	var child *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "child" {
			child = fd
		}
	}
	list := child.Body.List
	find := NewFinder(fset, info, match.FuncDecls(info, []*ast.File{f}), []*ast.File{f})
	var got []string
	for _, d := range find.Timed(child, []ast.Node{list[0], list[1], list[2]}, []ast.Node{list[3]}) {
		got = append(got, d.Value.String())
	}
	slices.Sort(got)
	if want := []string{"40ms", "50ms", "60ms", "70ms"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
