package bubble

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"testing"
	"time"
)

func TestSumOf(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		d     time.Duration
		parts []time.Duration
		want  bool
	}{
		{300 * ms, []time.Duration{100 * ms, 200 * ms}, true},
		{150 * ms, []time.Duration{50 * ms}, true},
		{100 * ms, []time.Duration{30 * ms}, false},
		{110 * ms, []time.Duration{30 * ms, 40 * ms}, true}, // 30+40+40
		{50 * ms, []time.Duration{30 * ms, 40 * ms}, false},
		{0, []time.Duration{30 * ms}, false},
		{100 * ms, nil, false},
		{time.Hour, []time.Duration{time.Nanosecond}, true}, // too large to decide: counts as one
	} {
		if got := sumOf(tc.d, tc.parts); got != tc.want {
			t.Errorf("sumOf(%v, %v) = %v, want %v", tc.d, tc.parts, got, tc.want)
		}
	}
}

func TestRunSums(t *testing.T) {
	ms := time.Millisecond
	seq := []wait{{d: 30 * ms, known: true}, {d: 25 * ms, known: true, restart: true}, {d: 25 * ms, known: true}, {known: false}, {d: 50 * ms, known: true, restart: true}}
	var got []time.Duration
	runSums(seq, 0, true, func(_, _ int, sum time.Duration) bool {
		got = append(got, sum)
		return false
	})
	// From 0: 30, 55, 80 (the unknown wait ends the run); from the
	// restart at 1: 25, 50; from the restart at 4: 50.
	want := []time.Duration{30 * ms, 55 * ms, 80 * ms, 25 * ms, 50 * ms, 50 * ms}
	if len(got) != len(want) {
		t.Fatalf("sums %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sums %v, want %v", got, want)
		}
	}
}

func TestForTrips(t *testing.T) {
	for _, tc := range []struct {
		loop string
		want int64
		ok   bool
	}{
		{"for i := 0; i < 9; i++ {}", 9, true},
		{"for i := 1; i < 10; i++ {}", 9, true},
		{"for i := 1; i <= 10; i++ {}", 10, true},
		{"for i := 0; i < 4; i += 1 {}", 4, true},
		{"for i := 0; i < 4; i = i + 1 {}", 4, true},
		{"for i := 10; i > 0; i-- {}", 10, true},
		{"for i := 10; i >= 0; i-- {}", 11, true},
		{"for i := 3; i > 0; i -= 1 {}", 3, true},
		{"for i := 5; i < 2; i++ {}", 0, true},
		{"for i := 0; i < 9; i += 2 {}", 0, false},
		{"for i := 0; i > 9; i++ {}", 0, false},
		{"for i := 0; i < n; i++ {}", 0, false},
	} {
		src := "package p\nfunc f(n int) {\n" + tc.loop + "\n}\n"
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "p.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
		if _, err := (&types.Config{}).Check("p", fset, []*ast.File{f}, info); err != nil {
			t.Fatal(err)
		}
		loop := f.Decls[0].(*ast.FuncDecl).Body.List[0].(*ast.ForStmt)
		if got, ok := forTrips(info, loop); got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.loop, got, ok, tc.want, tc.ok)
		}
	}
}
