package match

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
	"time"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
	"github.com/dave/dst/decorator/resolver/guess"
)

// stubTime is the part of package time the tests need, so that they
// type-check without reading the standard library.
const stubTime = `package time

type Duration int64

const (
	Nanosecond  Duration = 1
	Microsecond          = 1000 * Nanosecond
	Millisecond          = 1000 * Microsecond
	Second               = 1000 * Millisecond
	Minute               = 60 * Second
	Hour                 = 60 * Minute
)

type Time struct{}

func Sleep(d Duration)               {}
func After(d Duration) <-chan Time   { return nil }
func (t *Time) Reset()               {}
func (t Time) Add(d Duration) Time   { return t }
func (t Time) Before(u Time) bool    { return false }
func (t Time) Sub(u Time) Duration   { return 0 }
func Now() Time                      { return Time{} }
func Until(t Time) Duration          { return 0 }
`

type stubImporter map[string]*types.Package

func (m stubImporter) Import(path string) (*types.Package, error) {
	if p, ok := m[path]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("no stub for package %q", path)
}

// load type-checks src, a file of package p that may import "time" (the
// stub above), and returns it with its types.
func load(t *testing.T, src string) (*ast.File, *types.Info) {
	t.Helper()
	fset := token.NewFileSet()
	tf, err := parser.ParseFile(fset, "time.go", stubTime, 0)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := new(types.Config).Check("time", fset, []*ast.File{tf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: stubImporter{"time": tp}}
	if _, err := conf.Check("p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	return f, info
}

// exprs returns the right-hand sides of the file's `var name = expr`
// declarations, by name.
func exprs(f *ast.File) map[string]ast.Expr {
	m := map[string]ast.Expr{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						m[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	return m
}

// calls returns the calls of the function named fn, in order.
func calls(f *ast.File, fn string) []*ast.CallExpr {
	var out []*ast.CallExpr
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
			ast.Inspect(fd, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					out = append(out, c)
				}
				return true
			})
		}
	}
	return out
}

func TestIsPkgFunc(t *testing.T) {
	f, info := load(t, `package p

import (
	"time"
	tm "time"
)

type clock struct{}

func (clock) Sleep(d time.Duration) {}

func Sleep(d time.Duration) {}

func f() {
	time.Sleep(1)      // 0: yes
	tm.Sleep(1)        // 1: yes, through an alias
	Sleep(1)           // 2: no, a local function
	clock{}.Sleep(1)   // 3: no, a method
	<-time.After(1)    // 4: After
	_ = time.Duration(3) // 5: a conversion
	var t time.Time
	t.Reset()          // 6: a method of package time
}
`)
	cs := calls(f, "f")
	for i, want := range []bool{true, true, false, false} {
		if got := IsPkgFunc(info, cs[i], "time", "Sleep"); got != want {
			t.Errorf("call %d: IsPkgFunc(time.Sleep) = %v, want %v", i, got, want)
		}
	}
	if !IsPkgFunc(info, cs[4], "time", "Sleep", "After") {
		t.Errorf("time.After does not match names Sleep, After")
	}
	if Callee(info, cs[5]) != nil {
		t.Errorf("a conversion has a callee")
	}
	if IsPkgFunc(info, cs[6], "time", "Reset") || !IsMethod(info, cs[6], "time", "Reset") {
		t.Errorf("t.Reset() is a method of package time, not a function")
	}
	if IsMethod(info, cs[3], "time", "Sleep") {
		t.Errorf("clock.Sleep is not declared in package time")
	}
}

func TestConstAndPure(t *testing.T) {
	f, info := load(t, `package p

import "time"

type cfg struct {
	n int
	d time.Duration
	p *cfg
}

const attempts = 20

var (
	c  cfg
	n  = 3
	xs []int
	ch chan int
	fn func() int
)

var (
	constDur  = 5 * time.Millisecond
	constInt  = attempts * 2
	ident     = n
	field     = c.d / 2
	deref     = c.p.n
	conv      = time.Duration(n) * time.Second
	call      = fn()
	index     = xs[0]
	recv      = <-ch
	lenCall   = len(xs)
	negate    = -n
	compare   = n < 3
)
`)
	e := exprs(f)
	if d, ok := ConstDuration(info, e["constDur"]); !ok || d != 5*time.Millisecond {
		t.Errorf("ConstDuration(5 * time.Millisecond) = %v, %v", d, ok)
	}
	if v, ok := ConstInt(info, e["constInt"]); !ok || v != 40 {
		t.Errorf("ConstInt(attempts * 2) = %v, %v", v, ok)
	}
	if _, ok := ConstInt(info, e["ident"]); ok {
		t.Errorf("ConstInt(n) is constant")
	}
	for name, want := range map[string]bool{
		"constDur": true, "constInt": true, "ident": true, "field": true,
		"deref": true, // c.p.n dereferences implicitly, like a field of a pointer receiver
		"conv":  true, "negate": true, "compare": true,
		"call": false, "index": false, "recv": false, "lenCall": false,
	} {
		if got := IsPure(info, e[name]); got != want {
			t.Errorf("IsPure(%s) = %v, want %v", types.ExprString(e[name]), got, want)
		}
	}
	var names []string
	for _, v := range Vars(info, e["conv"]) {
		names = append(names, v.Name())
	}
	if got := strings.Join(names, ","); got != "n" {
		t.Errorf("Vars(time.Duration(n) * time.Second) = %s, want n", got)
	}
	names = nil
	for _, v := range Vars(info, e["field"]) {
		names = append(names, v.Name())
	}
	if got := strings.Join(names, ","); got != "c" {
		t.Errorf("Vars(c.d / 2) = %s, want c", got)
	}
}

func TestModifies(t *testing.T) {
	f, info := load(t, `package p

type counter struct{ n int }

func (c *counter) inc() { c.n++ }
func (c counter) get() int { return c.n }

func assign()  { var n, m int; n = 1; _ = m; _ = n }
func incdec()  { var n int; n++ }
func field()   { var c counter; c.n = 2 }
func addr()    { var n int; p := &n; _ = p }
func ptrcall() { var c counter; c.inc() }
func valcall() { var c counter; _ = c.get() }
func shadow()  { var n int; { n := 2; _ = n }; _ = n }
func closure() { var n int; func() { n = 3 }(); _ = n }
func read()    { var n, m int; m = n; _ = m }
`)
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil {
			continue
		}
		var target *types.Var
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && target == nil && (id.Name == "n" || id.Name == "c") {
				target, _ = info.Defs[id].(*types.Var)
			}
			return true
		})
		want := map[string]bool{
			"assign": true, "incdec": true, "field": true, "addr": true, "ptrcall": true,
			"valcall": false, "shadow": false, "closure": true, "read": false,
		}[fd.Name.Name]
		if got := Modifies(info, fd.Body, []*types.Var{target}) != nil; got != want {
			t.Errorf("%s: Modifies = %v, want %v", fd.Name.Name, got, want)
		}
	}
}

func TestDurationExpr(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Second, "10 * time.Second"},
		{time.Second, "time.Second"},
		{1500 * time.Millisecond, "1500 * time.Millisecond"},
		{90 * time.Second, "90 * time.Second"},
		{2 * time.Hour, "2 * time.Hour"},
		{time.Minute, "time.Minute"},
		{7, "7 * time.Nanosecond"},
		{0, "0"},
		{-3 * time.Second, "-3 * time.Second"},
	} {
		if got := render(t, DurationExpr(tc.d)); got != tc.want {
			t.Errorf("DurationExpr(%v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

// render prints e as the value of a variable in a file restored with
// import management, and returns the expression's text.
func render(t *testing.T, e dst.Expr) string {
	t.Helper()
	f := &dst.File{
		Name: dst.NewIdent("p"),
		Decls: []dst.Decl{&dst.GenDecl{Tok: token.VAR, Specs: []dst.Spec{
			&dst.ValueSpec{Names: []*dst.Ident{dst.NewIdent("x")}, Values: []dst.Expr{e}},
		}}},
	}
	var buf bytes.Buffer
	if err := decorator.NewRestorerWithImports("p", guess.New()).Fprint(&buf, f); err != nil {
		t.Fatal(err)
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(src), "var x = ")
	if !ok {
		t.Fatalf("no var in:\n%s", src)
	}
	return strings.TrimSpace(after)
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		100 * time.Millisecond:     "100ms",
		1500 * time.Millisecond:    "1.5s",
		time.Minute:                "1m",
		90 * time.Second:           "1m30s",
		time.Hour:                  "1h",
		time.Hour + 30*time.Minute: "1h30m",
		time.Hour + time.Second:    "1h0m1s",
		10 * time.Second:           "10s",
		0:                          "0s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", time.Duration(d), got, want)
		}
	}
}

func TestStripDecorations(t *testing.T) {
	e := &dst.BinaryExpr{X: dst.NewIdent("a"), Op: token.ADD, Y: dst.NewIdent("b")}
	e.Decs.Start.Append("/* a */")
	e.Y.(*dst.Ident).Decs.End.Append("// b")
	e.Decs.Before = dst.NewLine
	StripDecorations(e)
	if got := render(t, e); got != "a + b" {
		t.Errorf("stripped expression renders as %q", got)
	}
}

func TestDurationArithmetic(t *testing.T) {
	if d, overflow := MulDuration(200*time.Millisecond, 100); overflow || d != 20*time.Second {
		t.Errorf("MulDuration(200ms, 100) = %v, %v", d, overflow)
	}
	if _, overflow := MulDuration(time.Hour, 1<<40); !overflow {
		t.Errorf("MulDuration(1h, 2^40) does not overflow")
	}
	if _, overflow := MulDuration(-time.Second, 2); !overflow {
		t.Errorf("MulDuration(-1s, 2) is accepted")
	}
	if _, overflow := AddDuration(1<<62, 1<<62); !overflow {
		t.Errorf("AddDuration(2^62, 2^62) does not overflow")
	}
	if d, overflow := AddDuration(time.Second, time.Millisecond); overflow || d != 1001*time.Millisecond {
		t.Errorf("AddDuration(1s, 1ms) = %v, %v", d, overflow)
	}
}

func TestWithStack(t *testing.T) {
	f, _ := load(t, "package p\n\nfunc f() { for { if true { break } } }\n")
	var got []string
	WithStack(f, func(n ast.Node, stack []ast.Node) bool {
		if _, ok := n.(*ast.BranchStmt); ok {
			for _, s := range stack {
				got = append(got, fmt.Sprintf("%T", s))
			}
		}
		return true
	})
	want := "*ast.File *ast.FuncDecl *ast.BlockStmt *ast.ForStmt *ast.BlockStmt *ast.IfStmt *ast.BlockStmt"
	if strings.Join(got, " ") != want {
		t.Errorf("stack of break:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestIsNamedAndNames(t *testing.T) {
	f, info := load(t, `package p

import "time"

type T = time.Time

var (
	a time.Time
	b *time.Time
	c T
	d time.Duration
	e int
)

func f() {
	var t time.Time
	t.Reset()
	time.Sleep(1)
}
`)
	want := map[string]bool{"a": true, "b": true, "c": true, "d": false, "e": false}
	for id, obj := range info.Defs {
		if w, ok := want[id.Name]; ok && obj != nil {
			if got := IsNamed(obj.Type(), "time", "Time"); got != w {
				t.Errorf("IsNamed(%s, time.Time) = %v, want %v", id.Name, got, w)
			}
		}
	}
	cs := calls(f, "f")
	for i, w := range []string{"time.Time.Reset", "time.Sleep"} {
		if got := PkgFuncName(Callee(info, cs[i])); got != w {
			t.Errorf("PkgFuncName(call %d) = %q, want %q", i, got, w)
		}
	}
	for path, w := range map[string]bool{"net": true, "net/http/httptest": true, "example.com/x": false, "github.com/a/b": false, "C": false} {
		if got := IsStd(path); got != w {
			t.Errorf("IsStd(%q) = %v, want %v", path, got, w)
		}
	}
}

func TestConstStringAndPackageLevel(t *testing.T) {
	f, info := load(t, `package p

const name = "APP_MODE"

var global = "x"

var (
	lit   = "HOME"
	named = name
	num   = 1
	vr    = global
)

func f() { var local int; local++; global = "y" }
`)
	for k, want := range map[string]string{"lit": "HOME", "named": "APP_MODE", "num": "", "vr": ""} {
		got, ok := ConstString(info, exprs(f)[k])
		if ok != (want != "") || got != want {
			t.Errorf("ConstString(%s) = %q, %v, want %q", k, got, ok, want)
		}
	}
	var pkgLevel []string
	ModifiesFunc(info, f, func(v *types.Var) bool {
		if IsPackageLevel(v) {
			pkgLevel = append(pkgLevel, v.Name())
		}
		return false
	})
	if len(pkgLevel) != 1 || pkgLevel[0] != "global" {
		t.Errorf("package-level variables written: %v, want [global]", pkgLevel)
	}
}

func TestDeleteStmt(t *testing.T) {
	a, b := &dst.ExprStmt{X: dst.NewIdent("a")}, &dst.ExprStmt{X: dst.NewIdent("b")}
	block := &dst.BlockStmt{List: []dst.Stmt{a, b}}
	if !DeleteStmt(block, a) || len(block.List) != 1 || block.List[0] != b {
		t.Errorf("DeleteStmt: list = %v", block.List)
	}
	if DeleteStmt(block, a) {
		t.Error("DeleteStmt of a missing statement reported true")
	}
}

// The names a fix declares and uses: the import's name, whether a name
// is the import there, a fresh name, and the builtins.
func TestNamesAt(t *testing.T) {
	t.Parallel()
	const src = `package p

import tm "time"

var _ tm.Duration

func f() {
	deadline := 1
	_ = deadline
	{
		tm := 2
		_ = tm
		_ = len("x") // here
	}
}
`
	fset := token.NewFileSet()
	tf, err := parser.ParseFile(fset, "time.go", stubTime, 0)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := new(types.Config).Check("time", fset, []*ast.File{tf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: stubImporter{"time": tp}}).Check("p", fset, []*ast.File{f}, info)
	if err != nil {
		t.Fatal(err)
	}
	if name, n := ImportName(f, "time", "time"); name != "tm" || n != 1 {
		t.Errorf("ImportName = %q, %d; want tm, 1", name, n)
	}
	if _, n := ImportName(f, "os", "os"); n != 0 {
		t.Errorf("ImportName(os) counts %d imports", n)
	}
	here := token.Pos(fset.File(f.Pos()).Base() + strings.Index(src, "_ = len"))
	inner := pkg.Scope().Innermost(here)
	if Denotes(inner, here, "tm", "time") {
		t.Error("Denotes: tm is shadowed by a local, yet denotes the import")
	}
	fnBody := pkg.Scope().Innermost(token.Pos(fset.File(f.Pos()).Base() + strings.Index(src, "_ = deadline")))
	if !Denotes(fnBody, f.Decls[2].Pos(), "tm", "time") {
		t.Error("Denotes: tm in the function's scope should be the import")
	}
	if got := FreshName(inner, here, nil, "deadline"); got != "deadline2" {
		t.Errorf("FreshName past a declared deadline = %q, want deadline2", got)
	}
	if got := FreshName(inner, here, map[string]bool{"deadline2": true}, "deadline"); got != "deadline3" {
		t.Errorf("FreshName past a used deadline2 = %q, want deadline3", got)
	}
	var lenCall *ast.CallExpr
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			lenCall = c
		}
		return true
	})
	if !IsBuiltin(info, lenCall.Fun, "cap", "len") || IsBuiltin(info, lenCall.Fun, "append") {
		t.Error("IsBuiltin does not tell len")
	}
	if got := Idents(lenCall); !got["len"] || len(got) != 1 {
		t.Errorf("Idents(len(\"x\")) = %v", got)
	}
}

// TestPollWait: the interval in a deadline loop's post statement and the
// sleep until a time right after such a loop are a poll's own; a sleep in
// a loop's body, a sleep until a time elsewhere and a plain sleep are not.
func TestPollWait(t *testing.T) {
	t.Parallel()
	f, info := load(t, `package p

import "time"

func ok() bool { return true }

func f() {
	start := time.Now()
	for deadline := start.Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ok() {
			break
		}
	}
	time.Sleep(time.Until(start.Add(100 * time.Millisecond)))
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	time.Sleep(start.Add(time.Second).Sub(time.Now()))
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Until(start))
	time.Sleep(time.Millisecond)
}
`)
	var got []bool
	WithStack(f, func(n ast.Node, stack []ast.Node) bool {
		if es, ok := n.(*ast.ExprStmt); ok {
			if call, ok := es.X.(*ast.CallExpr); ok && IsPkgFunc(info, call, "time", "Sleep") {
				got = append(got, PollWait(info, es, stack))
			}
		}
		return true
	})
	want := []bool{true, true, true, true, false, false, false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PollWait of the sleeps, in order = %v, want %v", got, want)
	}
}

// A duration is the constant value of the whole expression, whatever its
// shape: a conversion times a unit is 30s, not 30ns. The converted
// factor itself (time.Duration(30), typed time.Duration by go/types) is
// 30ns: a caller that walks into the expression must not read it as the
// duration (internal/bubble's tinyDuration skips conversions).
func TestConstDurationShapes(t *testing.T) {
	f, info := load(t, `package p

import "time"

const n = 30

const ttl time.Duration = 30 * time.Second

type myDur time.Duration

var (
	convTimesUnit = time.Duration(30) * time.Second
	untypedUnit   = 30 * time.Second
	unitTimesConv = time.Second * time.Duration(n)
	typedConst    = ttl
	typedConstDiv = ttl / 2
	conversion    = time.Duration(ttl)
	myConv        = time.Duration(myDur(2 * time.Minute))
	factorOnly    = time.Duration(30)
	nanos         = time.Duration(n) * time.Nanosecond
)
`)
	e := exprs(f)
	for name, want := range map[string]time.Duration{
		"convTimesUnit": 30 * time.Second,
		"untypedUnit":   30 * time.Second,
		"unitTimesConv": 30 * time.Second,
		"typedConst":    30 * time.Second,
		"typedConstDiv": 15 * time.Second,
		"conversion":    30 * time.Second,
		"myConv":        2 * time.Minute,
		"factorOnly":    30,
		"nanos":         30,
	} {
		if d, ok := ConstDuration(info, e[name]); !ok || d != want {
			t.Errorf("ConstDuration(%s) = %v, %v; want %v", types.ExprString(e[name]), d, ok, want)
		}
	}
	// The factor inside the product: what a walk into it meets.
	conv := e["convTimesUnit"].(*ast.BinaryExpr).X.(*ast.CallExpr)
	if d, ok := ConstDuration(info, conv.Args[0]); !ok || d != 30 {
		t.Errorf("ConstDuration(30 in time.Duration(30)) = %v, %v; go/types types it time.Duration with the value 30", d, ok)
	}
}
