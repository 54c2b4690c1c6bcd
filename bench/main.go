// Command bench measures `unflake check ./...` against x/tools' modernize
// on a large synthetic module. Run it from the repository root:
//
//	go run ./bench                      # 1,000 packages, 3 runs, scaling 250/500/1000
//	go run ./bench -packages 100 -scale 50,100 -runs 1
//	go run ./bench -tools modernize     # without unflake
//	go run ./bench -gen /tmp/synth -packages 20 -vet
//	go run ./bench -repos /tmp/fiber,/tmp/grpc-go -runs 3   # real repositories, cold and warm
//
// It prints Markdown tables on stdout and progress on stderr. See
// docs/bench.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

type options struct {
	gen         genConfig
	runs        int
	warmups     int
	scale       []int
	tools       map[string]bool
	baseline    bool
	unflakeBin  string
	unflakeArgs []string
	modernBin   string
	repo        string
	workdir     string
	keep        bool
	genOnly     string
	vet         bool
	bigfile     []int // line counts of the big-file case
	bigOnly     bool
	bigShape    string // what the big file is made of (bigShapes)
	repos       []string
	stages      bool // -repos: one more cold run, recording stage costs
}

func main() {
	var o options
	var scale, tools, unflakeArgs string
	flag.IntVar(&o.gen.Packages, "packages", 1000, "packages in the generated module")
	flag.IntVar(&o.gen.TestFiles, "files", 4, "test files per package")
	flag.IntVar(&o.gen.SrcFiles, "srcfiles", 2, "non-test files per package (at least 2)")
	flag.Float64Var(&o.gen.Flaky, "flaky", 0.03, "fraction of test files that hold flaky patterns")
	flag.IntVar(&o.gen.Layer, "layer", 50, "packages per layer of the import DAG")
	seed := flag.Uint64("seed", 1, "generator seed")
	flag.IntVar(&o.runs, "runs", 3, "timed runs per tool and size")
	flag.IntVar(&o.warmups, "warmup", 1, "untimed runs per tool before the timed ones")
	flag.StringVar(&scale, "scale", "250,500,1000", "comma-separated package counts for the unflake scaling runs (empty: none)")
	flag.StringVar(&tools, "tools", "unflake,modernize", "tools to compare: unflake, modernize")
	flag.BoolVar(&o.baseline, "baseline", true, "also measure the `go list` that go/packages runs, as a floor")
	flag.StringVar(&o.unflakeBin, "unflake", "", "prebuilt unflake binary (default: go build the repository)")
	flag.StringVar(&unflakeArgs, "unflake-args", "check ./...", "arguments for unflake")
	flag.StringVar(&o.modernBin, "modernize", "", "prebuilt modernize binary (default: build x/tools' at the version in go.mod)")
	flag.StringVar(&o.repo, "repo", ".", "root of the unflake repository")
	flag.StringVar(&o.workdir, "workdir", "", "directory for binaries and generated modules, kept afterwards (default: a new temp dir, removed)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp work directory")
	flag.StringVar(&o.genOnly, "gen", "", "only generate the module into this directory, then exit")
	flag.BoolVar(&o.vet, "vet", false, "run go vet ./... on each generated module (a check of the generator)")
	var bigfile string
	flag.StringVar(&bigfile, "bigfile", "12500,25000,50000", "comma-separated line counts of the big-file case: one test file with thousands of findings (empty: none)")
	flag.BoolVar(&o.bigOnly, "bigfile-only", false, "run only the big-file case")
	flag.StringVar(&o.bigShape, "bigshape", "mixed", "what the big file is made of: "+shapeNames()+"; subtests:N for N subtest pairs a test (subtests is subtests:40)")
	repos := flag.String("repos", "", "comma-separated `dirs` of real repositories: measure unflake check (cold and with a warm result cache) beside modernize -test in each, instead of the synthetic module")
	flag.BoolVar(&o.stages, "stages", false, "with -repos: one more cold unflake run per repository recording what each stage costs (UNFLAKE_STAGES)")
	flag.Parse()
	o.repos = splitList(*repos)
	for _, s := range strings.Split(bigfile, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			fatalf("bad -bigfile size %q", s)
		}
		o.bigfile = append(o.bigfile, n)
	}
	sort.Ints(o.bigfile)
	if o.bigOnly {
		if len(o.bigfile) == 0 {
			fatalf("-bigfile-only needs -bigfile sizes")
		}
		tools = "unflake"
		o.baseline = false
	}
	o.gen.Seed = *seed
	o.unflakeArgs = strings.Fields(unflakeArgs)
	o.tools = map[string]bool{}
	for _, t := range strings.Split(tools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			if t != "unflake" && t != "modernize" {
				fatalf("unknown tool %q in -tools", t)
			}
			o.tools[t] = true
		}
	}
	for _, s := range strings.Split(scale, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fatalf("bad -scale size %q", s)
		}
		o.scale = append(o.scale, n)
	}
	sort.Ints(o.scale)
	if o.runs < 1 {
		fatalf("-runs must be at least 1")
	}
	if len(o.repos) > 0 {
		if err := runRepos(&o, o.repos, os.Stdout); err != nil {
			fatalf("%v", err)
		}
		return
	}
	if err := run(&o, os.Stdout); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func run(o *options, stdout io.Writer) error {
	if o.genOnly != "" && o.bigOnly {
		// Only the big file, at the largest -bigfile size.
		shape := lookupShape(o.bigShape)
		if shape == nil {
			return fmt.Errorf("unknown -bigshape %q (one of %s)", o.bigShape, shapeNames())
		}
		st, err := genBigFile(o.genOnly, o.bigfile[len(o.bigfile)-1], shape)
		if err != nil {
			return err
		}
		logf("big file: %d lines, %d tests, %d reported sites", st.lines, st.tests, st.sites)
		if o.vet {
			return runGo(o.genOnly, toolEnv(), "vet", "./...")
		}
		return nil
	}
	if o.genOnly != "" {
		return genModule(o.genOnly, o.gen, o.vet)
	}
	// A -workdir is kept: running again with the same one finds the
	// modules at the same paths, so the build cache is already warm.
	work := o.workdir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "unflake-bench-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(work)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if o.keep || o.workdir != "" {
		logf("work directory %s (kept)", work)
	}
	work, err := filepath.Abs(work)
	if err != nil {
		return err
	}
	logDir := filepath.Join(work, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}

	// The tools.
	var tools []tool
	if o.tools["unflake"] {
		bin := o.unflakeBin
		if bin == "" {
			bin = filepath.Join(work, "unflake")
			logf("building unflake from %s", o.repo)
			if err := buildUnflake(o.repo, bin); err != nil {
				return fmt.Errorf("building unflake (use -tools modernize to run without it): %v", err)
			}
		}
		tools = append(tools, tool{
			name: "unflake", bin: bin, args: o.unflakeArgs,
			okExit: func(c int) bool { return c == 0 || c == 1 }, // 1: findings
		})
	}
	if o.tools["modernize"] {
		bin := o.modernBin
		if bin == "" {
			bin = filepath.Join(work, "modernize")
			logf("building modernize")
			how, err := buildModernize(o.repo, bin)
			if err != nil {
				return fmt.Errorf("building modernize: %v", err)
			}
			logf("modernize: %s", how)
		}
		tools = append(tools, tool{
			name: "modernize", bin: bin, args: []string{"./..."},
			// 3: diagnostics reported. 1 means analysis failed (the
			// module did not load or type-check), which would make the
			// comparison meaningless.
			okExit: func(c int) bool { return c == 0 || c == 3 },
		})
	}
	if o.baseline {
		tools = append(tools, tool{
			name: "go list (floor)", bin: "go",
			// What go/packages runs for a typed load with tests.
			args:   []string{"list", "-e", "-json", "-compiled=true", "-test=true", "-export=true", "-deps=true", "-find=false", "-pgo=off", "./..."},
			okExit: func(c int) bool { return c == 0 },
		})
	}
	if len(tools) == 0 {
		return fmt.Errorf("nothing to measure")
	}
	var big []bigPoint
	if len(o.bigfile) > 0 {
		if len(tools) == 0 || tools[0].name != "unflake" {
			return fmt.Errorf("the big-file case measures unflake: add it to -tools")
		}
		var err error
		if big, err = measureBig(o, tools[0].bin, filepath.Join(work, "big"), logDir); err != nil {
			return err
		}
		if o.bigOnly {
			reportBig(stdout, o, big)
			return nil
		}
	}

	// Every module is generated at the same path, one after the other.
	// Package i is the same code whatever the module's size, and the go
	// command's cache keys include the package directory, so the smaller
	// modules reuse the compiled export data of the larger ones (and vice
	// versa) and warming the cache for the second size onward is quick.
	modDir := filepath.Join(work, "mod")

	unflakeIdx := -1
	for i := range tools {
		if tools[i].name == "unflake" {
			unflakeIdx = i
		}
	}
	if unflakeIdx < 0 && len(o.scale) > 0 {
		logf("no scaling runs: unflake is not among -tools")
		o.scale = nil
	}

	// Scaling of unflake, at the sizes other than -packages (that one
	// comes from the comparison below).
	type point struct {
		r  result
		st genStats
	}
	var points []point
	for _, n := range o.scale {
		if n == o.gen.Packages {
			continue
		}
		c := o.gen
		c.Packages = n
		st, err := prepare(modDir, c, o.vet)
		if err != nil {
			return err
		}
		rs, err := measureAll(tools[unflakeIdx:unflakeIdx+1], modDir, logDir, n, o.warmups, o.runs)
		if err != nil {
			return err
		}
		points = append(points, point{rs[0], st})
	}

	// The comparison at -packages, last, so that -keep leaves this module.
	st, err := prepare(modDir, o.gen, o.vet)
	if err != nil {
		return err
	}
	results, err := measureAll(tools, modDir, logDir, o.gen.Packages, o.warmups, o.runs)
	if err != nil {
		return err
	}
	if slices.Contains(o.scale, o.gen.Packages) {
		points = append(points, point{results[unflakeIdx], st})
	}
	sort.Slice(points, func(i, j int) bool { return points[i].r.packages < points[j].r.packages })
	var scaling []result
	var scaleStats []genStats
	for _, p := range points {
		scaling = append(scaling, p.r)
		scaleStats = append(scaleStats, p.st)
	}

	report(stdout, o, st, results, scaling, scaleStats)
	if len(big) > 0 {
		fmt.Fprintln(stdout)
		reportBig(stdout, o, big)
	}
	return nil
}

// genModule generates a module into dir and prints its statistics.
func genModule(dir string, c genConfig, vet bool) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	_, err := prepareGen(dir, c, vet)
	return err
}

func prepareGen(dir string, c genConfig, vet bool) (genStats, error) {
	start := time.Now()
	st, err := generate(dir, c)
	if err != nil {
		return st, err
	}
	logf("generated %d packages, %d files (%d test), %d lines, %.1f MiB in %s: %d flaky test files in %d packages, %d flaky sites (%d attempt-count polls); %d imports, depth %d",
		st.Packages, st.Files, st.TestFiles, st.Lines, float64(st.Bytes)/(1<<20), dir,
		st.FlakyFiles, st.FlakyPackages, st.FlakySites, st.PollSites, st.ImportEdges, st.MaxDepth)
	logf("generation took %s", time.Since(start).Round(time.Millisecond))
	if vet {
		start = time.Now()
		if err := runGo(dir, toolEnv(), "vet", "./..."); err != nil {
			return st, fmt.Errorf("the generated module does not vet: %v", err)
		}
		logf("go vet ./... clean (%s)", time.Since(start).Round(time.Millisecond))
	}
	return st, nil
}

// prepare generates a module and warms the build cache for it.
func prepare(dir string, c genConfig, vet bool) (genStats, error) {
	if err := os.RemoveAll(dir); err != nil {
		return genStats{}, err
	}
	st, err := prepareGen(dir, c, vet)
	if err != nil {
		return st, err
	}
	start := time.Now()
	if err := warm(dir); err != nil {
		return st, err
	}
	logf("build cache warmed (%s)", time.Since(start).Round(time.Millisecond))
	return st, nil
}

// measureAll runs the warm-up runs, then the timed runs with the tools
// interleaved so drift in the machine's load affects all of them alike.
func measureAll(tools []tool, dir, logDir string, packages, warmups, runs int) ([]result, error) {
	return measureSized(tools, dir, logDir, packages, "packages", warmups, runs)
}

// measureSized is measureAll for a module whose size is n units.
func measureSized(tools []tool, dir, logDir string, packages int, unit string, warmups, runs int) ([]result, error) {
	env := toolEnv()
	results := make([]result, len(tools))
	for i, t := range tools {
		results[i] = result{tool: t.name, packages: packages}
		for w := 0; w < warmups; w++ {
			s, err := measure(t, dir, logDir, env)
			if err != nil {
				return nil, err
			}
			logf("%d %s: %s warm-up: %s, exit %d", packages, unit, t.name, s.wall.Round(time.Millisecond), s.exit)
		}
	}
	for r := 0; r < runs; r++ {
		for i, t := range tools {
			sampleLoad()
			s, err := measure(t, dir, logDir, env)
			if err != nil {
				return nil, err
			}
			logf("%d %s: %s run %d/%d: wall %s, cpu %s, peak RSS %.0f MiB, exit %d, %d output lines",
				packages, unit, t.name, r+1, runs, s.wall.Round(time.Millisecond), s.cpu.Round(time.Millisecond),
				float64(s.rssKiB)/1024, s.exit, s.lines)
			results[i].samples = append(results[i].samples, s)
		}
	}
	return results, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func mib(kib int64) string        { return fmt.Sprintf("%.0f", float64(kib)/1024) }

func report(w io.Writer, o *options, st genStats, results, scaling []result, scaleStats []genStats) {
	fmt.Fprintf(w, "## unflake benchmark\n\n")
	fmt.Fprintf(w, "- machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(w, "- module: %d packages × (%d test + %d source files), flaky fraction %g, seed %d: %d files, %d lines; %d flaky test files in %d packages with %d flaky sites (%d attempt-count polls, %d bare sleeps); %d intra-module imports, import depth %d\n",
		st.Packages, o.gen.TestFiles, max(o.gen.SrcFiles, 2), o.gen.Flaky, o.gen.Seed, st.Files, st.Lines,
		st.FlakyFiles, st.FlakyPackages, st.FlakySites, st.PollSites, st.FlakySites-st.PollSites, st.ImportEdges, st.MaxDepth)
	fmt.Fprintf(w, "- runs: %d timed after %d untimed warm-up run(s) per tool, warm build cache; wall and CPU are medians, peak RSS is the maximum over the runs of ru_maxrss (largest single process of the tool's tree)\n", o.runs, o.warmups)
	if len(loadSamples) > 0 {
		fmt.Fprintf(w, "- 1-minute load average before the timed runs: %.2f to %.2f (on %d CPUs; other work on the machine shows here)\n",
			slices.Min(loadSamples), slices.Max(loadSamples), runtime.NumCPU())
	}
	fmt.Fprintf(w, "- command: `go run ./bench%s`\n\n", quoteArgs(os.Args[1:]))

	var modernize *result
	for i := range results {
		if results[i].tool == "modernize" {
			modernize = &results[i]
		}
	}
	fmt.Fprintf(w, "| tool | packages | median wall | median CPU | peak RSS (MiB) | wall ratio vs modernize | RSS ratio vs modernize | output lines | exit |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		tr, mr := "—", "—"
		if modernize != nil && modernize.medianWall() > 0 {
			tr = fmt.Sprintf("%.2f", r.medianWall().Seconds()/modernize.medianWall().Seconds())
			if modernize.peakRSS() > 0 {
				mr = fmt.Sprintf("%.2f", float64(r.peakRSS())/float64(modernize.peakRSS()))
			}
		}
		last := r.samples[len(r.samples)-1]
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %d | %d |\n",
			r.tool, r.packages, secs(r.medianWall()), secs(r.medianCPU()), mib(r.peakRSS()), tr, mr, last.lines, last.exit)
	}

	if len(scaling) > 0 {
		fmt.Fprintf(w, "\n### Scaling of unflake %s\n\n", strings.Join(o.unflakeArgs, " "))
		fmt.Fprintf(w, "| packages | flaky test files | median wall | wall per package | median CPU | CPU per package | peak RSS (MiB) |\n")
		fmt.Fprintf(w, "|---:|---:|---:|---:|---:|---:|---:|\n")
		for i, r := range scaling {
			n := float64(r.packages)
			fmt.Fprintf(w, "| %d | %d | %s | %.2f ms | %s | %.2f ms | %s |\n", r.packages, scaleStats[i].FlakyFiles,
				secs(r.medianWall()), r.medianWall().Seconds()*1000/n,
				secs(r.medianCPU()), r.medianCPU().Seconds()*1000/n, mib(r.peakRSS()))
		}
		if len(scaling) >= 2 {
			a, b, r2 := fit(scaling)
			fmt.Fprintf(w, "\nLeast-squares fit: wall ≈ %.2f s %+.2f ms × packages (R² = %.3f).\n", a, b*1000, r2)
		}
	}

	fmt.Fprintf(w, "\n### Targets\n\n")
	var unflake *result
	for i := range results {
		if results[i].tool == "unflake" {
			unflake = &results[i]
		}
	}
	if unflake == nil {
		fmt.Fprintf(w, "- unflake not measured\n")
		return
	}
	if modernize != nil {
		ratio := unflake.medianWall().Seconds() / modernize.medianWall().Seconds()
		cpu := unflake.medianCPU().Seconds() / modernize.medianCPU().Seconds()
		fmt.Fprintf(w, "- wall time at most 0.5× modernize: %s (%.2f×; CPU time %.2f×)\n", verdict(ratio <= 0.5), ratio, cpu)
	}
	fmt.Fprintf(w, "- peak RSS under 1 GiB at %d packages: %s (%s MiB)\n", unflake.packages, verdict(unflake.peakRSS() < 1<<20), mib(unflake.peakRSS()))
	if len(scaling) >= 2 {
		first, last := scaling[0], scaling[len(scaling)-1]
		per := func(r result) float64 { return r.medianWall().Seconds() / float64(r.packages) }
		g := per(last) / per(first)
		cpuPer := func(r result) float64 { return r.medianCPU().Seconds() / float64(r.packages) }
		fmt.Fprintf(w, "- linear growth (wall per package at %d packages at most 1.25× that at %d): %s (%.2f×; CPU per package %.2f×)\n",
			last.packages, first.packages, verdict(g <= 1.25), g, cpuPer(last)/cpuPer(first))
	}
}

// quoteArgs renders args for a shell, each after a space.
func quoteArgs(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteByte(' ')
		if a == "" || strings.ContainsAny(a, " \t\"'$`\\") {
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

func verdict(ok bool) string {
	if ok {
		return "**pass**"
	}
	return "**FAIL**"
}

// fit returns intercept a (s), slope b (s/package) and R² of wall time
// against package count.
func fit(rs []result) (a, b, r2 float64) {
	n := float64(len(rs))
	var sx, sy, sxx, sxy, syy float64
	for _, r := range rs {
		x, y := float64(r.packages), r.medianWall().Seconds()
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
		syy += y * y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, 0, 0
	}
	b = (n*sxy - sx*sy) / den
	a = (sy - b*sx) / n
	vy := n*syy - sy*sy
	if vy == 0 {
		return a, b, 1
	}
	r := (n*sxy - sx*sy) / (math.Sqrt(den) * math.Sqrt(vy))
	return a, b, r * r
}
