package verify

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/internal/verify/revert"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// serverCode is code under test with one write of each kind, and writes
// that are no targets: a local counter, a := declaration, a write inside
// another target.
const serverCode = `package p

type Server struct {
	n      int
	state  string
	events chan string
	done   chan struct{}
	onJoin func(string)
	cb     func()
}

var hits int

func (s *Server) Join(name string) {
	s.n++
	hits += 1
	s.state = "running"
	s.events <- name
	s.onJoin(name)
	local := 0
	local++
	s.cb = func() { s.n++ }
	close(s.done)
}

func (s *Server) Count() int { return s.n }
`

// fakeImporter has the three packages a schema adds, with what it uses
// of them: the schema type-checks without the go command.
type fakeImporter struct{}

func (fakeImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, path[strings.LastIndex(path, "/")+1:])
	str := types.Typ[types.String]
	switch path {
	case "os":
		p.Scope().Insert(types.NewVar(token.NoPos, p, "Args", types.NewSlice(str)))
	case "path/filepath":
		sig := types.NewSignatureType(nil, nil, nil, types.NewTuple(types.NewParam(token.NoPos, p, "path", str)), types.NewTuple(types.NewParam(token.NoPos, p, "", str)), false)
		p.Scope().Insert(types.NewFunc(token.NoPos, p, "Base", sig))
	case "time":
		d := types.NewNamed(types.NewTypeName(token.NoPos, p, "Duration", nil), types.Typ[types.Int64], nil)
		p.Scope().Insert(d.Obj())
		sig := types.NewSignatureType(nil, nil, nil, types.NewTuple(types.NewParam(token.NoPos, p, "d", d)), nil, false)
		p.Scope().Insert(types.NewFunc(token.NoPos, p, "Sleep", sig))
	}
	p.MarkComplete()
	return p, nil
}

func checkSource(t *testing.T, name, src string) (*token.FileSet, *ast.File, *types.Info, *types.Package) {
	t.Helper()
	return checkWith(t, fakeImporter{}, name, src)
}

// checkWith type-checks src, the file name of package p, importing with
// imp.
func checkWith(t *testing.T, imp types.Importer, name, src string) (*token.FileSet, *ast.File, *types.Info, *types.Package) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}, Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := (&types.Config{Importer: imp}).Check("p", fset, []*ast.File{f}, info)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return fset, f, info, pkg
}

// The targets are the writes of state, each with the kind that decides
// its mutations; the mutants of a file build as one schema that
// type-checks and keeps every line where it was.
func TestSchema(t *testing.T) {
	const file = "/src/p/server.go"
	fset, f, info, pkg := checkSource(t, file, serverCode)
	code := collect(fset, []*ast.File{f}, map[string][]byte{file: []byte(serverCode)}, info, pkg.Scope())
	var got []string
	for _, tg := range code.targets {
		got = append(got, strings.Fields(serverCode[tg.start:tg.end])[0]+" "+[]string{"counts", "stores", "signals", "closes"}[tg.kind])
	}
	want := "s.n++ counts|hits counts|s.state stores|s.events signals|s.onJoin(name) signals|s.cb stores|close(s.done) closes"
	if strings.Join(got, "|") != want {
		t.Errorf("targets:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}

	// A check that calls Count reads n: s.n++ is the relevant target.
	m := mentions{direct: map[string]bool{"Count": true}, indirect: map[string]bool{}}
	for r := range code.reads["Count"] {
		m.indirect[r] = true
	}
	if rel := code.relevant(m); len(rel) != 1 || rel[0].line != 15 {
		t.Errorf("relevant to Count: %d targets, want s.n++ at line 15", len(rel))
	}

	ms := pickMutants(code.targets, 10*time.Millisecond)
	var names []string
	for _, m := range ms {
		names = append(names, m.String())
	}
	wantNames := []string{
		"s.n++ made twice at server.go:15",
		"hits += 1 made twice at server.go:16",
		`s.state = "running" undone 10ms later at server.go:17`,
		"s.events <- name made twice at server.go:18",
		"s.onJoin(name) made twice at server.go:19",
		"s.cb = func() { s.n++ } undone 10ms later at server.go:22",
		"close(s.done) dropped at server.go:23",
		"s.n++ made again 10ms later at server.go:15",
	}
	if strings.Join(names, "\n") != strings.Join(wantNames, "\n") {
		t.Errorf("mutants:\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(wantNames, "\n"))
	}

	src := string(schema(ms)[file])
	checkSource(t, file, src) // it builds
	for _, want := range []string{
		`package p; import unflakemutanttime "time"; import unflakemutantos "os"; import unflakemutantpath "path/filepath"`,
		`switch unflakeMutant { case "m1.test": s.n++; s.n++; case "m8.test": s.n++; go func() { unflakemutanttime.Sleep(10000000); s.n++ }(); default: s.n++ }`,
		`case "m3.test": unflakeBefore := s.state; s.state = "running"; go func() { unflakemutanttime.Sleep(10000000); s.state = unflakeBefore }();`,
		`switch unflakeMutant { case "m7.test": ; default: close(s.done) }`,
		"var unflakeMutant = unflakemutantpath.Base(unflakemutantos.Args[0])",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("schema lacks %s:\n%s", want, src)
		}
	}
	orig, mut := strings.Split(serverCode, "\n"), strings.Split(src, "\n")
	for i, line := range orig {
		if strings.HasPrefix(strings.TrimSpace(line), "local") && mut[i] != line {
			t.Errorf("line %d moved: %q, was %q", i+1, mut[i], line)
		}
	}
}

// failLine reads the line a failure names in the test file.
func TestFailLine(t *testing.T) {
	for detail, want := range map[string]int{
		"x_test.go:41: got 2, want 1":       41,
		"panic: boom [recovered] x_test.go": 0,
		"y_test.go:3: other file":           0,
	} {
		if got := failLine(detail, "/a/x_test.go"); got != want {
			t.Errorf("failLine(%q) = %d, want %d", detail, got, want)
		}
	}
}

// The second write comes about a quarter of the test's time later, on a
// fixed scale: a test timed a little differently gets the same mutant.
func TestMutantDelay(t *testing.T) {
	for before, want := range map[time.Duration]time.Duration{
		10 * time.Millisecond:  20 * time.Millisecond,
		205 * time.Millisecond: 50 * time.Millisecond,
		230 * time.Millisecond: 50 * time.Millisecond,
		500 * time.Millisecond: 100 * time.Millisecond,
		560 * time.Millisecond: 100 * time.Millisecond,
		20 * time.Second:       2 * time.Second,
	} {
		if got := mutantDelay(&outcome{elapsed: before, tops: 1}); got != want {
			t.Errorf("delay after a test of %v: %v, want %v", before, got, want)
		}
	}
}

// breakerCode is code under test with a site of each aimed mutant: a
// timer's duration (inside a statement target), a ticker's, a time
// comparison, an elapsed time, a Close; and a sleep no test reaches.
const breakerCode = `package p

import "time"

type Breaker struct {
	open     bool
	openedAt time.Time
	timeout  time.Duration
	timer    *time.Timer
	done     chan struct{}
	n        int
}

func (b *Breaker) Trip() {
	b.open = true
	b.openedAt = time.Now()
	b.timer = time.AfterFunc(b.timeout, b.halfOpen)
}

func (b *Breaker) halfOpen() { b.open = false; b.tick() }

func (b *Breaker) tick() {
	t := time.NewTicker(b.timeout / 10)
	defer t.Stop()
	<-t.C
}

func (b *Breaker) Ready() bool {
	return time.Now().After(b.openedAt.Add(b.timeout)) || time.Since(b.openedAt) > b.timeout
}

func (b *Breaker) Close() error {
	close(b.done)
	return nil
}

func unused() { time.Sleep(time.Second) }
`

// checkReal type-checks src with the standard library's sources.
func checkReal(t *testing.T, name, src string) (*token.FileSet, *ast.File, *types.Info, *types.Package) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}, Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := (&types.Config{Importer: importer.ForCompiler(fset, "source", nil)}).Check("p", fset, []*ast.File{f}, info)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return fset, f, info, pkg
}

// The sites of aimed mutants are found by what they call; the mutants a
// test gets follow the kinds of its fixes' changes, and only the sites
// the test reaches; their schema type-checks and keeps every line.
func TestAimedMutants(t *testing.T) {
	testmod.Short(t) // type-checks the standard library from source
	const file = "/src/p/breaker.go"
	fset, f, info, pkg := checkReal(t, file, breakerCode)
	code := collect(fset, []*ast.File{f}, map[string][]byte{file: []byte(breakerCode)}, info, pkg.Scope())
	var got []string
	for _, a := range code.aims {
		if a.site.what == entry || a.site.what == stamp {
			continue // aimslow_internal_test.go
		}
		got = append(got, fmt.Sprintf("%d:%s:%s", a.line, []string{"duration", "comparison", "elapsed", "closer"}[a.site.what], breakerCode[a.start:a.end]))
	}
	want := "17:duration:b.timeout|23:duration:b.timeout / 10|29:comparison:time.Now().After(b.openedAt.Add(b.timeout))|29:elapsed:time.Since(b.openedAt)|32:closer:|37:duration:time.Second"
	if strings.Join(got, "|") != want {
		t.Errorf("aims:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}

	// The test calls Trip, Ready and Close: tick is reached through
	// halfOpen, unused is not.
	m := mentions{direct: map[string]bool{"Trip": true, "Ready": true, "Close": true}, indirect: map[string]bool{}}
	for _, n := range []string{"Trip", "Ready", "Close"} {
		for r := range code.reads[n] {
			m.indirect[r] = true
		}
	}
	names := func(ms []*mutant) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.String())
		}
		return strings.Join(out, "\n")
	}
	for _, tc := range []struct {
		kinds []rule.ChangeKind
		want  []string
	}{
		{[]rule.ChangeKind{rule.Budget}, []string{
			"b.open = true made 500ms late at breaker.go:15",
			"time.Now().After(b.openedAt.Add(b.… made to expire 500ms late at breaker.go:29",
			"time.AfterFunc(b.timeout, b.halfOpen) with its duration made 3x at breaker.go:17",
			"b.openedAt = time.Now() made 500ms late at breaker.go:16",
			"time.Since(b.openedAt) made to expire 500ms late at breaker.go:29",
			"time.NewTicker(b.timeout / 10) with its duration made 3x at breaker.go:23",
		}},
		{[]rule.ChangeKind{rule.Clock}, []string{
			"time.Now().After(b.openedAt.Add(b.… moved by one tick (After made !Before) at breaker.go:29",
			"time.AfterFunc(b.timeout, b.halfOpen) with its duration made 0 at breaker.go:17",
			"time.Since(b.openedAt) made 0 at breaker.go:29",
			"Close returning at once at breaker.go:32",
		}},
		{[]rule.ChangeKind{rule.Ownership}, []string{"Close running its body twice at breaker.go:32"}},
		{[]rule.ChangeKind{rule.Sync, rule.Order, rule.Paths}, nil},
	} {
		kinds := map[rule.ChangeKind]bool{}
		for _, k := range tc.kinds {
			kinds[k] = true
		}
		if got := names(code.aimed(m, kinds, []time.Duration{500 * time.Millisecond}, 0)); got != strings.Join(tc.want, "\n") {
			t.Errorf("%v:\n%s\nwant\n%s", tc.kinds, got, strings.Join(tc.want, "\n"))
		}
	}

	// Every aimed mutant and a statement's, in one schema: the timer's
	// duration within b.timer = ... is built into each of its forms.
	var ms []*mutant
	for _, k := range []rule.ChangeKind{rule.Budget, rule.Clock, rule.Ownership} {
		ms = append(ms, code.aimed(m, map[rule.ChangeKind]bool{k: true}, []time.Duration{500 * time.Millisecond}, 0)...)
	}
	ms = append(ms, pickMutants(code.relevant(m), 20*time.Millisecond)...)
	src := string(schema(ms)[file])
	checkReal(t, file, src) // it builds
	for _, want := range []string{
		`case "m1.test": go func() { unflakemutanttime.Sleep(500000000); b.open = true }();`,
		`b.timer = time.AfterFunc(func() unflakemutanttime.Duration { switch unflakeMutant { case "m3.test": return 3 * (b.timeout); case "m8.test": return 0; }; return b.timeout }(), b.halfOpen)`,
		`return func() bool { switch unflakeMutant { case "m2.test": return (time.Now()).After((b.openedAt.Add(b.timeout)).Add(500000000)); case "m7.test": return !(time.Now()).Before(b.openedAt.Add(b.timeout)); }; return time.Now().After(b.openedAt.Add(b.timeout)) }() || func() unflakemutanttime.Duration { switch unflakeMutant { case "m5.test": return ((time.Since(b.openedAt)) - 500000000); case "m9.test": return 0; }; return time.Since(b.openedAt) }() > b.timeout`,
		`func (b *Breaker) Close() error { switch unflakeMutant { case "m10.test": return *new(error); case "m11.test": b.unflakeTwice0_597(); };`,
		"\nfunc (b *Breaker) unflakeTwice0_",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("schema lacks %s:\n%s", want, src)
		}
	}
	// A Close that returns at once returns its results' zero values,
	// and needs no copy of its body nor the time package.
	skip := code.aimed(m, map[rule.ChangeKind]bool{rule.Clock: true}, nil, 0)
	if src := string(schema(skip[len(skip)-1:])[file]); !strings.Contains(src, `func (b *Breaker) Close() error { switch unflakeMutant { case "m1.test": return *new(error); };`) || strings.Contains(src, "unflakeTwice") || strings.Contains(src, mutantTime) {
		t.Errorf("schema of %s:\n%s", skip[len(skip)-1], src)
	} else {
		checkReal(t, file, src)
	}
	// Both of Close's mutants in one schema: one switch at the body's
	// start, one copy of the body.
	both := []*mutant{{t: skip[len(skip)-1].t, op: closedTwice}, skip[len(skip)-1]}
	if src := string(schema(both)[file]); !strings.Contains(src, `{ switch unflakeMutant { case "m1.test": b.unflakeTwice0_597(); case "m2.test": return *new(error); };`) || strings.Count(src, "func (b *Breaker) unflakeTwice") != 1 {
		t.Errorf("schema of both Close mutants:\n%s", src)
	} else {
		checkReal(t, file, src)
	}

	// A schema of mutants that need no time package imports none: an
	// unused import would not build.
	for _, op := range []mutation{tick, closedTwice} {
		var only []*mutant
		for _, m := range ms {
			if m.op == op {
				only = append(only, m)
			}
		}
		if src := string(schema(only)[file]); strings.Contains(src, mutantTime) {
			t.Errorf("%s alone imports time:\n%s", labels[op], src)
		} else {
			checkReal(t, file, src)
		}
	}

	// No line moves: the copy of Close's body goes after the last line.
	orig, mut := strings.Split(breakerCode, "\n"), strings.Split(src, "\n")
	for i, line := range orig {
		if (strings.HasPrefix(line, "func") || strings.HasPrefix(line, "\t") || line == "}") && !strings.HasPrefix(strings.TrimSpace(mut[i]), strings.Fields(line)[0]) && !strings.Contains(mut[i], "switch") {
			t.Errorf("line %d moved: %q, was %q", i+1, mut[i], line)
		}
	}
	if mut[len(orig)] != "var unflakeMutant = unflakemutantpath.Base(unflakemutantos.Args[0])" {
		t.Errorf("the schema's lines do not match the file's: line %d is %q", len(orig)+1, mut[len(orig)])
	}
}

// A late write comes three times the test's time, or the window the fix
// replaces, later, on a fixed scale; none past the scale. A poll that
// ended at once on the correct code (10ms) still gets a write later than
// its 200ms window: the original fails on it. Within a new budget the
// fix names, the write comes at most half the budget late, past the
// window by half again; none when that is past half the budget (a
// poll of 800ms after ten attempts of 10ms and a 400ms hold: 200ms).
func TestLateDelay(t *testing.T) {
	type in struct{ before, window, budget time.Duration }
	for c, want := range map[in]time.Duration{
		{10 * time.Millisecond, 0, 0}:                                            50 * time.Millisecond,
		{200 * time.Millisecond, 0, 0}:                                           time.Second,
		{150 * time.Millisecond, 0, 0}:                                           500 * time.Millisecond,
		{3 * time.Second, 0, 0}:                                                  10 * time.Second,
		{11 * time.Second, 0, 0}:                                                 0,
		{10 * time.Millisecond, 200 * time.Millisecond, 0}:                       time.Second,
		{time.Second, 100 * time.Millisecond, 0}:                                 5 * time.Second,
		{0, 11 * time.Second, 0}:                                                 0,
		{500 * time.Millisecond, 100 * time.Millisecond, 800 * time.Millisecond}: 200 * time.Millisecond,
		{500 * time.Millisecond, 100 * time.Millisecond, 10 * time.Second}:       2 * time.Second,
		{500 * time.Millisecond, 0, 800 * time.Millisecond}:                      0,
		{100 * time.Millisecond, 300 * time.Millisecond, 800 * time.Millisecond}: 0,
	} {
		if got := lateDelay(&outcome{elapsed: c.before, tops: 1}, c.window, c.budget); got != want {
			t.Errorf("late after a test of %v, window %v, budget %v: %v, want %v", c.before, c.window, c.budget, got, want)
		}
	}
}

// A rewrite catches a mutant only as the original did: a hang or a panic
// where the original failed at a check is a bug the test no longer names
// (a cleanup that waits for what the bug never gives back).
func TestCatchesOnlyAsTheOriginalDid(t *testing.T) {
	check := &rewrite.Revert{Kind: revert.FailsAfter}
	hang := &rewrite.Revert{Kind: revert.Hangs}
	panics := &rewrite.Revert{Kind: revert.Panics}
	for _, c := range []struct {
		name        string
		orig, after *rewrite.Revert
		want        bool
	}{
		{"fails at a check as before", check, check, true},
		{"passes", check, nil, false},
		{"hangs where the original failed", check, hang, false},
		{"panics where the original failed", check, panics, false},
		{"hangs as the original did", hang, hang, true},
		{"fails where the original hung", hang, check, true},
	} {
		if got := catches(c.orig, c.after); got != c.want {
			t.Errorf("%s: catches = %v, want %v", c.name, got, c.want)
		}
	}
}
