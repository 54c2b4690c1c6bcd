package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The -repos mode measures unflake on real repositories, side by side
// with modernize in one run: for each repository directory,
//
//   - modernize -test ./...;
//   - unflake check ./... cold: the result cache empty (a new UNFLAKE_CACHE
//     directory for every run), the build cache warm, as after any build;
//   - unflake check ./... warm: the result cache filled by an earlier run
//     over the same, unchanged code.
//
// The runs interleave, so that a change in the machine's load hits all
// three alike, and the tables give the medians and the ratios to
// modernize's median wall time. The repositories are used as they are:
// their modules must be in the module cache (GOPROXY=off is a good idea).

// repoTargets are the thresholds the -repos mode checks.
const (
	repoColdRatio = 0.5            // cold wall time at most this × modernize's
	repoWarmMax   = time.Second    // warm wall time at most this
	repoRSSMax    = int64(1 << 20) // peak RSS under this many KiB (1 GiB)
)

// repoResult is the measurements on one repository.
type repoResult struct {
	dir                   string
	modernize, cold, warm result
}

// runRepos measures each of dirs and prints the tables.
func runRepos(o *options, dirs []string, stdout io.Writer) error {
	work, err := os.MkdirTemp("", "unflake-bench-repos-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	logDir := filepath.Join(work, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	ufBin := o.unflakeBin
	if ufBin == "" {
		ufBin = filepath.Join(work, "unflake")
		logf("building unflake from %s", o.repo)
		if err := buildUnflake(o.repo, ufBin); err != nil {
			return err
		}
	}
	modBin := o.modernBin
	if modBin == "" {
		modBin = filepath.Join(work, "modernize")
		logf("building modernize")
		how, err := buildModernize(o.repo, modBin)
		if err != nil {
			return fmt.Errorf("building modernize: %v", err)
		}
		logf("modernize: %s", how)
	}
	modernize := tool{name: "modernize", bin: modBin, args: []string{"-test", "./..."},
		okExit: func(c int) bool { return c == 0 || c == 3 }}
	unflake := func(name string) tool {
		return tool{name: name, bin: ufBin, args: o.unflakeArgs,
			okExit: func(c int) bool { return c == 0 || c == 1 }}
	}
	cold, warm := unflake("unflake cold"), unflake("unflake warm")

	var all []repoResult
	var stages []stageCosts
	for _, dir := range dirs {
		dir, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		// The repositories keep their own settings (GOFLAGS, GOPROXY):
		// only the result cache is chosen here.
		base := append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
		logf("%s: warming the build cache", dir)
		if err := runGo(dir, base, "list", "-export", "-deps", "-test", "./..."); err != nil {
			return err
		}
		warmCache := filepath.Join(work, "warm-"+filepath.Base(dir))
		warmEnv := append(base[:len(base):len(base)], "UNFLAKE_CACHE="+warmCache)
		coldEnv := func(i int) []string {
			return append(base[:len(base):len(base)], "UNFLAKE_CACHE="+filepath.Join(work, fmt.Sprintf("cold-%s-%d", filepath.Base(dir), i)))
		}
		r := repoResult{dir: dir,
			modernize: result{tool: modernize.name}, cold: result{tool: cold.name}, warm: result{tool: warm.name}}
		// Warm-up runs: modernize and a cold unflake once each (also
		// filling the warm cache).
		for w := 0; w < max(o.warmups, 1); w++ {
			if _, err := measure(modernize, dir, logDir, base); err != nil {
				return err
			}
			if _, err := measure(warm, dir, logDir, warmEnv); err != nil {
				return err
			}
		}
		for i := 0; i < o.runs; i++ {
			for _, m := range []struct {
				t   tool
				env []string
				to  *result
			}{{modernize, base, &r.modernize}, {cold, coldEnv(i), &r.cold}, {warm, warmEnv, &r.warm}} {
				sampleLoad()
				s, err := measure(m.t, dir, logDir, m.env)
				if err != nil {
					return err
				}
				logf("%s: %s run %d/%d: wall %s, cpu %s, peak RSS %.0f MiB, exit %d, %d output lines",
					filepath.Base(dir), m.t.name, i+1, o.runs, s.wall.Round(time.Millisecond), s.cpu.Round(time.Millisecond),
					float64(s.rssKiB)/1024, s.exit, s.lines)
				m.to.samples = append(m.to.samples, s)
			}
		}
		all = append(all, r)
		if o.stages {
			c, err := measureStages(cold, dir, logDir, base)
			if err != nil {
				return err
			}
			stages = append(stages, c)
		}
	}
	reportRepos(stdout, o, all)
	if len(stages) > 0 {
		reportStages(stdout, stages)
	}
	return nil
}

func reportRepos(w io.Writer, o *options, all []repoResult) {
	fmt.Fprintf(w, "## unflake on real repositories, beside modernize\n\n")
	fmt.Fprintf(w, "- machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(w, "- unflake %s; modernize -test ./...; %d timed runs each, interleaved\n", strings.TrimSpace(quoteArgs(o.unflakeArgs)), o.runs)
	if len(loadSamples) > 0 {
		lo, hi := loadSamples[0], loadSamples[0]
		for _, l := range loadSamples {
			lo, hi = min(lo, l), max(hi, l)
		}
		fmt.Fprintf(w, "- 1-minute load average before the runs: %.1f–%.1f\n", lo, hi)
	}
	fmt.Fprintf(w, "\n| repository | tool | median wall | median CPU | peak RSS (MiB) | wall ratio vs modernize | output lines |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range all {
		mw := r.modernize.medianWall()
		for _, res := range []result{r.modernize, r.cold, r.warm} {
			lines := 0
			if len(res.samples) > 0 {
				lines = res.samples[len(res.samples)-1].lines
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f | %d |\n", filepath.Base(r.dir), res.tool,
				secs(res.medianWall()), secs(res.medianCPU()), mib(res.peakRSS()), ratio(res.medianWall(), mw), lines)
		}
	}
	fmt.Fprintf(w, "\n### Targets\n\n")
	for _, r := range all {
		mw := r.modernize.medianWall()
		cr := ratio(r.cold.medianWall(), mw)
		fmt.Fprintf(w, "- %s: cold wall at most %.1f× modernize: %s (%.2f×; CPU %.2f×); warm at most %s: %s (%s); peak RSS under 1 GiB: %s (%s MiB)\n",
			filepath.Base(r.dir), repoColdRatio, verdict(cr <= repoColdRatio), cr, ratio(r.cold.medianCPU(), r.modernize.medianCPU()),
			repoWarmMax, verdict(r.warm.medianWall() <= repoWarmMax), secs(r.warm.medianWall()),
			verdict(max(r.cold.peakRSS(), r.warm.peakRSS()) < repoRSSMax), mib(max(r.cold.peakRSS(), r.warm.peakRSS())))
	}
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// splitList splits a comma-separated list, dropping empty elements.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
