package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A tool is a command measured in the generated module's directory.
type tool struct {
	name   string
	bin    string
	args   []string
	okExit func(code int) bool // exit codes that mean "ran to completion"
}

// A sample is one measured run.
type sample struct {
	wall   time.Duration
	cpu    time.Duration // user+system of the process and its waited-for descendants
	rssKiB int64         // see peakRSSKiB
	exit   int
	lines  int // lines of output (stdout+stderr), a rough count of findings
}

// A result is the samples of one tool on one module.
type result struct {
	tool     string
	packages int
	samples  []sample
}

func (r result) medianWall() time.Duration {
	return median(r.samples, func(s sample) time.Duration { return s.wall })
}

func (r result) medianCPU() time.Duration {
	return median(r.samples, func(s sample) time.Duration { return s.cpu })
}

// peakRSS is the largest peak over all runs, in KiB.
func (r result) peakRSS() int64 {
	var m int64
	for _, s := range r.samples {
		m = max(m, s.rssKiB)
	}
	return m
}

func median(ss []sample, f func(sample) time.Duration) time.Duration {
	if len(ss) == 0 {
		return 0
	}
	d := make([]time.Duration, len(ss))
	for i, s := range ss {
		d[i] = f(s)
	}
	slices.Sort(d)
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

// toolEnv is the environment for every command run in a generated module:
// no workspace, no toolchain switch, no inherited GOFLAGS.
func toolEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=")
}

// measure runs t once in dir, sending its output to a file in logDir.
func measure(t tool, dir, logDir string, env []string) (sample, error) {
	logName := filepath.Join(logDir, strings.ReplaceAll(t.name, " ", "_")+".out")
	out, err := os.Create(logName)
	if err != nil {
		return sample{}, err
	}
	defer out.Close()
	cmd := exec.Command(t.bin, t.args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = out
	cmd.Stderr = out
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return sample{}, fmt.Errorf("%s: %v", t.name, err)
	}
	ps := cmd.ProcessState
	s := sample{
		wall:   wall,
		cpu:    ps.UserTime() + ps.SystemTime(),
		rssKiB: peakRSSKiB(ps),
		exit:   ps.ExitCode(),
	}
	data, rerr := os.ReadFile(logName)
	if rerr != nil {
		return s, rerr
	}
	s.lines = bytes.Count(data, []byte("\n"))
	if !t.okExit(s.exit) {
		return s, fmt.Errorf("%s %s in %s: %s (exit code %d); last output:\n%s",
			t.bin, strings.Join(t.args, " "), dir, ps, s.exit, tail(data, 40))
	}
	return s, nil
}

// loadSamples are the 1-minute load averages seen before each timed run.
var loadSamples []float64

// sampleLoad records the 1-minute load average, where the system has one.
func sampleLoad() {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return
	}
	if v, err := strconv.ParseFloat(f[0], 64); err == nil {
		loadSamples = append(loadSamples, v)
	}
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runGo runs a go command in dir, failing with its output.
func runGo(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, tail(buf.Bytes(), 40))
	}
	return nil
}

// warm fills the build cache for the module in dir, so every tool finds
// the same compiled export data: the packages, their test variants and the
// standard library.
func warm(dir string) error {
	env := toolEnv()
	if err := runGo(dir, env, "build", "./..."); err != nil {
		return err
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-test", "./...")
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go list -export -deps -test ./... in %s: %v\n%s", dir, err, tail(stderr.Bytes(), 40))
	}
	return nil
}

// buildEnv is the environment for building the tools from the repository:
// the module files are never updated.
func buildEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
}

// buildUnflake builds the unflake command of the repository at repo.
func buildUnflake(repo, out string) error {
	return runGo(repo, buildEnv(), "build", "-o", out, ".")
}

const modernizePkg = "golang.org/x/tools/go/analysis/passes/modernize/cmd/modernize"

// buildModernize builds x/tools' modernize command at the x/tools version
// the repository requires. It first tries the repository's own module
// graph; when that needs go.mod changes (the modernize command imports
// packages whose modules unflake does not require), it installs
// modernize@version in module mode instead, which resolves the command's
// dependencies from x/tools' own go.mod and leaves the repository alone.
func buildModernize(repo, out string) (how string, err error) {
	if err := runGo(repo, buildEnv(), "build", "-o", out, modernizePkg); err == nil {
		return "built in the unflake module", nil
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "golang.org/x/tools")
	cmd.Dir = repo
	cmd.Env = buildEnv()
	v, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding the golang.org/x/tools version of %s: %v", repo, err)
	}
	version := strings.TrimSpace(string(v))
	gobin, err := os.MkdirTemp(filepath.Dir(out), "gobin-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gobin)
	env := append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=", "GOWORK=off")
	// Run outside any module so nothing local is consulted or modified.
	if err := runGo(gobin, env, "install", modernizePkg+"@"+version); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(gobin, "modernize"), out); err != nil {
		return "", err
	}
	return "go install " + modernizePkg + "@" + version, nil
}
