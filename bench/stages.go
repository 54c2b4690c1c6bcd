package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// The -stages option adds, in the -repos mode, one more cold run of
// unflake per repository with UNFLAKE_STAGES set: the engine writes what
// each of its stages cost (rewrite/stages.go), and the table says where a
// cold run's time goes. list, load and rules are wall times of sequential
// stages; prefilter, summaries, apply and re-check are summed over the
// concurrent jobs (on 2 CPUs they can add up to twice the wall time of the
// rules stage they run in); "other" is the process's wall time less the
// three sequential stages: starting, flag parsing, sorting and printing
// the findings.

// stageCosts is one run's stage file, with the run's wall and CPU time.
type stageCosts struct {
	dir    string
	wall   time.Duration
	cpu    time.Duration
	values map[string]float64
}

// measureStages runs t once in dir with the result cache off and
// UNFLAKE_STAGES naming a file in logDir, and reads that file.
func measureStages(t tool, dir, logDir string, base []string) (stageCosts, error) {
	file := filepath.Join(logDir, "stages-"+filepath.Base(dir)+".json")
	env := append(base[:len(base):len(base)], "UNFLAKE_CACHE=off", "UNFLAKE_STAGES="+file)
	s, err := measure(t, dir, logDir, env)
	if err != nil {
		return stageCosts{}, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return stageCosts{}, fmt.Errorf("%s: no stage file (is unflake older than UNFLAKE_STAGES?): %v", dir, err)
	}
	c := stageCosts{dir: dir, wall: s.wall, cpu: s.cpu}
	if err := json.Unmarshal(data, &c.values); err != nil {
		return stageCosts{}, fmt.Errorf("%s: %v", file, err)
	}
	return c, nil
}

func reportStages(w io.Writer, all []stageCosts) {
	fmt.Fprintf(w, "\n### Stages of one cold run\n\n")
	fmt.Fprintln(w, "| repository | wall | CPU | list | load | rules | other | prefilter (files) | summaries: packages loaded, functions, time | apply (count) | re-check (count) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range all {
		v := c.values
		s := func(k string) string { return fmt.Sprintf("%.2f s", v[k]) }
		other := c.wall.Seconds() - v["list_s"] - v["load_s"] - v["rules_s"]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.2f s | %s (%.0f) | %.0f, %.0f, %s | %s (%.0f) | %s (%.0f) |\n",
			filepath.Base(c.dir), secs(c.wall), secs(c.cpu), s("list_s"), s("load_s"), s("rules_s"), other,
			s("prefilter_s"), v["prefiltered"],
			v["summary_packages_loaded"], v["summaries_asked"], s("summary_load_s"),
			s("apply_s"), v["applies"], s("recheck_s"), v["rechecks"])
	}
}
