package bubble

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

func parseModFile(t *testing.T, src string, built bool) modFile {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", "package x\nimport \"time\"\n"+src, 0)
	if err != nil {
		t.Fatal(err)
	}
	return modFile{lf: &lockFile{name: "x.go", fset: fset, f: f}, pkg: ".", built: built}
}

func TestEntropyIn(t *testing.T) {
	for _, tc := range []struct {
		src   string
		built bool
		want  string // a substring of the hit, or "" for none
	}{
		{"func j(now time.Time) time.Duration { return time.Duration(now.Nanosecond() & 0xfffff) }", true, "now.Nanosecond() & 0xfffff"},
		{"func s() int64 { ns := time.Now().UnixNano(); return ns >> 3 }", true, "ns >> 3"},
		{"func s(n int) int { return time.Now().Second() % n }", true, "time.Now().Second() % n"},
		{"func s() { seed(time.Now().UnixNano()) }\nfunc seed(int64) {}", true, "seed(time.Now().UnixNano())"},
		{"var m = map[int64]int{}\nfunc s() { m[time.Now().UnixNano()] = 1 }", false, "m[time.Now().UnixNano()]"},
		{"var m = map[int64]int{}\nfunc s() { m[time.Now().UnixNano()] = 1 }", true, ""}, // the walk's key hazard
		{"func s() int64 { return time.Now().Unix() / 60 }", true, ""},                   // coarseHazard's
		{"func s(start int64) int64 { return time.Now().UnixNano() - start }", true, ""},
		{"func s(exp int64) bool { return time.Now().Unix() > exp }", true, ""},
		{"func s() time.Time { return time.Unix(time.Now().Unix(), 0) }", true, ""},
		{"type a struct{}\nfunc (a) Store(int64) {}\nfunc s(x a) { x.Store(time.Now().UnixNano()) }", true, ""},
		{"func s(d time.Duration) int64 { return int64(d) & 7 }", true, ""},
		{"type l struct{}\nfunc (l) Printf(string, ...any) {}\nfunc s(x l) { x.Printf(\"%d\", time.Now().Unix()) }", true, ""},
	} {
		got := entropyIn([]modFile{parseModFile(t, tc.src, tc.built)})
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s (built %v): %q, want %q", tc.src, tc.built, got, tc.want)
		}
	}
}

func TestSyntaxSpins(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"func f(next time.Time) { for time.Now().Before(next) {} }", true},
		{"func f(d time.Duration) { start := time.Now(); for { if time.Since(start) > d { return } } }", true},
		{"func f(next time.Time) { for time.Now().Before(next) { time.Sleep(time.Millisecond) } }", false},
		{"func f(next time.Time, c chan int) { for time.Now().Before(next) { <-c } }", false},
		{"func f(next time.Time) { for time.Now().Before(next) { nap() } }\nfunc nap() { time.Sleep(1) }", false},
		{"func f(n int) { for i := 0; i < n; i++ { _ = time.Now() } }", false},
		{"func f(d time.Duration) { start := time.Now(); for { if time.Since(start) > d { println() } } }", false},
	} {
		mf := parseModFile(t, tc.src, false)
		sp := &syntaxSpins{decls: map[string][]*ast.FuncDecl{}}
		for _, d := range mf.lf.f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				sp.decls[fd.Name.Name] = append(sp.decls[fd.Name.Name], fd)
			}
		}
		got := false
		ast.Inspect(mf.lf.f.Decls[1].(*ast.FuncDecl).Body, func(n ast.Node) bool {
			if loop, ok := n.(*ast.ForStmt); ok && sp.spins(loop, "time") {
				got = true
			}
			return true
		})
		if got != tc.want {
			t.Errorf("%s: spins %v, want %v", tc.src, got, tc.want)
		}
	}
}
