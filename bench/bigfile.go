package main

import (
	"fmt"
	"go/format"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The big-file case: one package whose single test file holds thousands
// of findings of several rules, the shape of the generated or
// copy-pasted test files that real repositories have (a 33k-line file
// with 9,000 findings, a 48k-line one with 6,600). It checks that the
// engine's cost per finding does not grow with the file: time linear in
// the findings, memory under 1 GiB at 50k lines.

// bigStats describes a generated big-file module.
type bigStats struct {
	lines int // lines of the test file
	tests int
	sites int // code sites some rule reports
}

// A bigShape is what the big test file is made of: tests in rotation,
// each with the code one rule (or several) reports.
type bigShape struct {
	name    string
	imports []string
	header  string   // declarations the tests share (a helper process, TestMain)
	tests   []string // fmt formats of one test; %[1]d is the test's number
	sites   []int    // sites some rule reports, per entry of tests
	rules   []string // unflake's --rules ("" for the default set)
}

// bigShapes are the shapes of the big file, selected by -bigshape: the
// original rotation ("mixed"), one per rule, and "all" (every rule's
// shape in rotation, with every rule).
var bigShapes = []bigShape{
	{
		name:    "mixed",
		imports: []string{"os", "sync/atomic", "testing", "time"},
		tests:   []string{shapeEnvSleep, shapePoll, shapeWallclock, shapeSubSleep, shapeTable},
		sites:   []int{2, 1, 1, 2, 0},
	},
	{name: "attemptloop", imports: []string{"sync/atomic", "testing", "time"}, tests: []string{shapePoll}, sites: []int{1}, rules: []string{"all"}},
	{name: "sleep", imports: []string{"sync/atomic", "testing", "time"}, tests: []string{shapeSleep, shapeSleepTimer}, sites: []int{1, 1}, rules: []string{"all"}},
	{name: "wallclock", imports: []string{"testing", "time"}, tests: []string{shapeWallclock}, sites: []int{1}, rules: []string{"all"}},
	{name: "testscope", imports: []string{"os", "testing"}, tests: []string{shapeScope}, sites: []int{2}, rules: []string{"all"}},
	{name: "setenv", imports: []string{"os", "testing"}, header: headerSetenv, tests: []string{shapeSetenv}, sites: []int{1}, rules: []string{"all"}},
	{name: "parallel", imports: []string{"testing"}, tests: []string{shapeTable}, sites: []int{1}, rules: []string{"all"}},
	{name: "spawn", imports: []string{"os", "os/exec", "strings", "testing"}, header: headerSpawn, tests: []string{shapeSpawn}, sites: []int{1}, rules: []string{"all"}},
	{name: "leak", imports: []string{"net/http", "net/http/httptest", "testing", "time"}, tests: []string{shapeLeak}, sites: []int{2}, rules: []string{"all"}},
	{name: "readiness", imports: []string{"os", "os/exec", "os/signal", "syscall", "testing", "time"}, header: headerReady, tests: []string{shapeReady}, sites: []int{1}, rules: []string{"all"}},
	{name: "freeport", imports: []string{"net", "testing"}, tests: []string{shapePort}, sites: []int{1}, rules: []string{"all"}},
}

// subtestShape is the "subtests" shape: long tests, each with n subtests
// that poll and n that sleep, and n os.Setenv calls (about 23 lines for
// each n), so that a rule's work per site that grows with the enclosing
// function shows.
func subtestShape(n int) bigShape {
	var sub strings.Builder
	sub.WriteString("\nfunc TestMany%[1]d(t *testing.T) {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sub, `	t.Run("poll%[2]d", func(t *testing.T) {
		var ready atomic.Bool
		go ready.Store(true)
		for i := 0; i < 20; i++ {
			if ready.Load() {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !ready.Load() {
			t.Fatal("never ready")
		}
	})
	t.Run("sleep%[2]d", func(t *testing.T) {
		expired := time.After(5 * time.Millisecond)
		time.Sleep(10 * time.Millisecond)
		select {
		case <-expired:
		default:
			t.Fatal("not expired")
		}
	})
	os.Setenv("BIG_MANY_%%[1]d_%[2]d", "on")
`, "%[1]d", i)
	}
	sub.WriteString("}\n")
	return bigShape{name: "subtests", imports: []string{"os", "sync/atomic", "testing", "time"}, tests: []string{sub.String()}, sites: []int{3 * n}, rules: []string{"all"}}
}

func init() {
	bigShapes = append(bigShapes, subtestShape(40))
	// "all": every rule's shape in rotation, with every rule.
	all := bigShape{name: "all", rules: []string{"all"}}
	seen := map[string]bool{}
	for _, s := range bigShapes[1:] {
		if s.name == "subtests" {
			continue
		}
		for _, imp := range s.imports {
			if !seen[imp] {
				seen[imp] = true
				all.imports = append(all.imports, imp)
			}
		}
		all.header += s.header
		all.tests = append(all.tests, s.tests...)
		all.sites = append(all.sites, s.sites...)
	}
	sort.Strings(all.imports)
	bigShapes = append(bigShapes, all)
}

// lookupShape returns the shape named name, or nil.
func lookupShape(name string) *bigShape {
	// "subtests:N": N subtest pairs a test (40 for "subtests").
	if n, err := strconv.Atoi(strings.TrimPrefix(name, "subtests:")); err == nil && strings.HasPrefix(name, "subtests:") && n > 0 {
		s := subtestShape(n)
		s.name = name
		return &s
	}
	for i := range bigShapes {
		if bigShapes[i].name == name {
			return &bigShapes[i]
		}
	}
	return nil
}

// shapeNames lists the shapes, for the flag's help.
func shapeNames() string {
	var names []string
	for _, s := range bigShapes {
		names = append(names, s.name)
	}
	return strings.Join(names, ", ")
}

// testscope and sleep: os.Setenv, then a sleep (sleep moves the body into a bubble).
const shapeEnvSleep = `
func TestEnvSleep%[1]d(t *testing.T) {
	os.Setenv("BIG_MODE_%[1]d", "on")
	time.Sleep(10 * time.Millisecond)
	if os.Getenv("BIG_MODE_%[1]d") != "on" {
		t.Fatal("mode not set")
	}
}
`

// attemptloop: a counter-bound poll.
const shapePoll = `
func TestPoll%[1]d(t *testing.T) {
	var ready atomic.Bool
	go ready.Store(true)
	for i := 0; i < 20; i++ {
		if ready.Load() {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !ready.Load() {
		t.Fatal("never ready")
	}
}
`

// wallclock: an upper bound on the test's own computation.
const shapeWallclock = `
func TestFast%[1]d(t *testing.T) {
	start := time.Now()
	n := Work(%[1]d)
	if time.Since(start) > 100*time.Millisecond {
		t.Fatal("too slow")
	}
	if n < 0 {
		t.Fatal("negative")
	}
}
`

// sleep in subtests, and a temporary directory removed by hand (testscope).
const shapeSubSleep = `
func TestSub%[1]d(t *testing.T) {
	dir, err := os.MkdirTemp("", "big")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	t.Run("a", func(t *testing.T) {
		time.Sleep(time.Millisecond)
	})
	if dir == "" {
		t.Fatal("no dir")
	}
}
`

// nothing for the default rules; parallel (opt-in) makes it parallel.
const shapeTable = `
func TestTable%[1]d(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{1, 1}, {2, 2}} {
		if got := Work(tc.in) - Work(tc.in) + tc.in; got != tc.want {
			t.Errorf("got %%d, want %%d", got, tc.want)
		}
	}
}
`

// sleep: a bare sleep that waits for a goroutine.
const shapeSleep = `
func TestSleep%[1]d(t *testing.T) {
	var done atomic.Bool
	go done.Store(true)
	time.Sleep(10 * time.Millisecond)
	if !done.Load() {
		t.Fatal("not done")
	}
}
`

// sleep: a sleep until a timer has fired (a bubble makes it instant).
const shapeSleepTimer = `
func TestTimer%[1]d(t *testing.T) {
	expired := time.After(5 * time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	select {
	case <-expired:
	default:
		t.Fatal("not expired")
	}
}
`

// testscope: an environment variable and a temporary directory the test
// sets and removes by hand.
const shapeScope = `
func TestScope%[1]d(t *testing.T) {
	os.Setenv("BIG_SCOPE_%[1]d", "on")
	defer os.Unsetenv("BIG_SCOPE_%[1]d")
	dir, err := os.MkdirTemp("", "big")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if os.Getenv("BIG_SCOPE_%[1]d") != "on" || dir == "" {
		t.Fatal("not set")
	}
}
`

// setenv: TestMain seals BIG_TOKEN, so every test's clear is redundant.
const headerSetenv = `
func TestMain(m *testing.M) {
	os.Setenv("BIG_TOKEN", "")
	os.Exit(m.Run())
}
`

const shapeSetenv = `
func TestToken%[1]d(t *testing.T) {
	t.Setenv("BIG_TOKEN", "")
	if os.Getenv("BIG_TOKEN") != "" || Work(%[1]d) < 0 {
		t.Fatal("token set")
	}
}
`

// spawn: a table of independent runs of the test binary's helper.
const headerSpawn = `
func TestHelperProcess(t *testing.T) {
	if os.Getenv("BIG_CHILD") != "1" {
		return
	}
	os.Stdout.WriteString(strings.Repeat("x", len(os.Args[len(os.Args)-1])))
	os.Exit(0)
}
`

const shapeSpawn = `
func TestSpawn%[1]d(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{{"a", "x"}, {"bb", "xx"}, {"ccc", "xxx"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "--", tc.arg)
		cmd.Env = append(os.Environ(), "BIG_CHILD=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%%s: %%v", tc.arg, err)
		}
		if got := string(out); got != tc.want {
			t.Errorf("%%s: got %%q, want %%q", tc.arg, got, tc.want)
		}
	}
}
`

// leak: a server and a ticker the test never ends.
const shapeLeak = `
func TestLeak%[1]d(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	tick := time.NewTicker(time.Millisecond)
	<-tick.C
	if srv.URL == "" {
		t.Fatal("no URL")
	}
}
`

// readiness: start the helper, sleep, signal it; every test shares the
// one helper.
const headerReady = `
func TestHelperReady(t *testing.T) {
	if os.Getenv("BIG_READY") != "1" {
		return
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	<-c
	os.Exit(0)
}
`

const shapeReady = `
func TestStop%[1]d(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReady$")
	cmd.Env = append(os.Environ(), "BIG_READY=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
`

// freeport: a listener on a fixed port, dialled by its address.
const shapePort = `
func TestPort%[1]d(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:%[2]d")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", "127.0.0.1:%[2]d")
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}
`

// genBigFile writes the big-file module into dir with a test file of
// about lines lines made of shape's tests.
func genBigFile(dir string, lines int, shape *bigShape) (bigStats, error) {
	var st bigStats
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	var b strings.Builder
	b.WriteString("package big\n\nimport (\n")
	for _, imp := range shape.imports {
		fmt.Fprintf(&b, "\t%q\n", imp)
	}
	b.WriteString(")\n")
	b.WriteString(shape.header)
	for k := 0; st.lines < lines; k++ {
		n := b.Len()
		i := k % len(shape.tests)
		// The port (%[2]d) is only used by freeport's shape.
		fmt.Fprintf(&b, shape.tests[i], k, 20000+k%40000)
		st.sites += shape.sites[i]
		st.tests++
		st.lines += strings.Count(b.String()[n:], "\n")
	}
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return st, err
	}
	st.lines = strings.Count(string(src), "\n")
	files := map[string]string{
		"go.mod":      "module example.com/big\n\ngo 1.25\n",
		"big.go":      "package big\n\n// Work is the code under test.\nfunc Work(n int) int {\n\ts := 0\n\tfor i := 0; i < n%100; i++ {\n\t\ts += i\n\t}\n\treturn s\n}\n",
		"big_test.go": string(src),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return st, err
		}
	}
	return st, nil
}

// A bigPoint is the big-file case at one size.
type bigPoint struct {
	st         bigStats
	check, fix result
}

// findings is the number of findings check printed (one line each).
func (p bigPoint) findings() int {
	return p.check.samples[len(p.check.samples)-1].lines
}

// measureBig runs `unflake check ./...` and `unflake fix --diff ./...` on
// the big-file module at each size of o.bigfile.
func measureBig(o *options, bin, dir, logDir string) ([]bigPoint, error) {
	shape := lookupShape(o.bigShape)
	if shape == nil {
		return nil, fmt.Errorf("unknown -bigshape %q (one of %s)", o.bigShape, shapeNames())
	}
	var rules []string
	if len(shape.rules) > 0 {
		rules = []string{"--rules", strings.Join(shape.rules, ",")}
	}
	tools := []tool{
		{name: "unflake check", bin: bin, args: append(append([]string{"check"}, rules...), "./..."), okExit: func(c int) bool { return c == 1 }},
		{name: "unflake fix --diff", bin: bin, args: append(append([]string{"fix", "--diff"}, rules...), "./..."), okExit: func(c int) bool { return c == 1 }},
	}
	var out []bigPoint
	for _, n := range o.bigfile {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		st, err := genBigFile(dir, n, shape)
		if err != nil {
			return nil, err
		}
		logf("big file: %d lines, %d tests, %d reported sites", st.lines, st.tests, st.sites)
		if o.vet {
			if err := runGo(dir, toolEnv(), "vet", "./..."); err != nil {
				return nil, fmt.Errorf("the generated big file does not vet: %v", err)
			}
		}
		if err := warm(dir); err != nil {
			return nil, err
		}
		rs, err := measureSized(tools, dir, logDir, st.lines, "lines", o.warmups, o.runs)
		if err != nil {
			return nil, err
		}
		out = append(out, bigPoint{st: st, check: rs[0], fix: rs[1]})
	}
	return out, nil
}

// reportBig prints the big-file table and its targets: peak RSS under
// 1 GiB at the largest size, and CPU time per finding at the largest size
// at most 1.25× that at the smallest.
func reportBig(w io.Writer, o *options, ps []bigPoint) {
	fmt.Fprintf(w, "### One big test file\n\n")
	if o.bigShape == "mixed" {
		fmt.Fprintf(w, "- one package, one test file; test shapes in rotation: os.Setenv then a sleep (testscope and sleep), a counter-bound poll (attemptloop), a wall-clock upper bound (wallclock), os.MkdirTemp with a sleeping subtest (testscope, sleep), a plain table test\n")
	} else {
		s := lookupShape(o.bigShape)
		fmt.Fprintf(w, "- one package, one test file of shape %q (%d test forms in rotation), unflake run with --rules %s\n", s.name, len(s.tests), strings.Join(s.rules, ","))
	}
	fmt.Fprintf(w, "- runs: %d timed after %d warm-up run(s); wall and CPU are medians, peak RSS the maximum\n\n", o.runs, o.warmups)
	fmt.Fprintf(w, "| lines | tests | findings | command | median wall | median CPU | CPU per finding | peak RSS (MiB) |\n")
	fmt.Fprintf(w, "|---:|---:|---:|---|---:|---:|---:|---:|\n")
	for _, p := range ps {
		n := p.findings()
		for _, r := range []result{p.check, p.fix} {
			fmt.Fprintf(w, "| %d | %d | %d | `%s` | %s | %s | %.2f ms | %s |\n", p.st.lines, p.st.tests, n, r.tool,
				secs(r.medianWall()), secs(r.medianCPU()), r.medianCPU().Seconds()*1000/float64(max(n, 1)), mib(r.peakRSS()))
		}
	}
	first, last := ps[0], ps[len(ps)-1]
	peak := max(last.check.peakRSS(), last.fix.peakRSS())
	fmt.Fprintf(w, "\n- peak RSS under 1 GiB at %d lines: %s (%s MiB)\n", last.st.lines, verdict(peak < 1<<20), mib(peak))
	if len(ps) >= 2 {
		per := func(p bigPoint, r result) float64 { return r.medianCPU().Seconds() / float64(max(p.findings(), 1)) }
		gc, gf := per(last, last.check)/per(first, first.check), per(last, last.fix)/per(first, first.fix)
		fmt.Fprintf(w, "- time linear in findings (CPU per finding at %d lines at most 1.25× that at %d): %s (check %.2f×, fix --diff %.2f×)\n",
			last.st.lines, first.st.lines, verdict(gc <= 1.25 && gf <= 1.25), gc, gf)
	}
}
