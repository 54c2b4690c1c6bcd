package main

import (
	"fmt"
	"go/format"
	"io"
	"os"
	"path/filepath"
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

// bigTest writes test k: one of five shapes, each with the code a rule
// reports.
func bigTest(b *strings.Builder, k int) int {
	switch k % 5 {
	case 0: // testscope and sleep: os.Setenv, then a sleep (sleep moves the body into a bubble)
		fmt.Fprintf(b, `
func TestEnvSleep%[1]d(t *testing.T) {
	os.Setenv("BIG_MODE_%[1]d", "on")
	time.Sleep(10 * time.Millisecond)
	if os.Getenv("BIG_MODE_%[1]d") != "on" {
		t.Fatal("mode not set")
	}
}
`, k)
		return 2
	case 1: // attemptloop: a counter-bound poll
		fmt.Fprintf(b, `
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
`, k)
		return 1
	case 2: // wallclock: an upper bound on the test's own computation
		fmt.Fprintf(b, `
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
`, k)
		return 1
	case 3: // sleep in subtests, and a temporary directory removed by hand
		fmt.Fprintf(b, `
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
`, k)
		return 2
	default: // nothing to report: a plain table test
		fmt.Fprintf(b, `
func TestTable%[1]d(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{1, 1}, {2, 2}} {
		if got := Work(tc.in) - Work(tc.in) + tc.in; got != tc.want {
			t.Errorf("got %%d, want %%d", got, tc.want)
		}
	}
}
`, k)
		return 0
	}
}

// genBigFile writes the big-file module into dir with a test file of
// about lines lines.
func genBigFile(dir string, lines int) (bigStats, error) {
	var st bigStats
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	var b strings.Builder
	b.WriteString("package big\n\nimport (\n\t\"os\"\n\t\"sync/atomic\"\n\t\"testing\"\n\t\"time\"\n)\n")
	for k := 0; st.lines < lines; k++ {
		n := b.Len()
		st.sites += bigTest(&b, k)
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
	tools := []tool{
		{name: "unflake check", bin: bin, args: []string{"check", "./..."}, okExit: func(c int) bool { return c == 1 }},
		{name: "unflake fix --diff", bin: bin, args: []string{"fix", "--diff", "./..."}, okExit: func(c int) bool { return c == 1 }},
	}
	var out []bigPoint
	for _, n := range o.bigfile {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		st, err := genBigFile(dir, n)
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
	fmt.Fprintf(w, "- one package, one test file; test shapes in rotation: os.Setenv then a sleep (testscope and sleep), a counter-bound poll (attemptloop), a wall-clock upper bound (wallclock), os.MkdirTemp with a sleeping subtest (testscope, sleep), a plain table test\n")
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
