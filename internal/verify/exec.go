package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/unflake/unflake/internal/output"
	"github.com/unflake/unflake/rewrite"
)

// A runner runs the go command and test binaries for one verification:
// every process in a group of its own, killed when ctx ends, at most
// procs test processes at once.
type runner struct {
	ctx   context.Context
	dir   string   // where to run the go command for its tools
	env   []string // nil: the environment of this process
	tmp   string   // the go command's temporary files go under it (GOTMPDIR)
	tags  []string
	sem   chan struct{} // test processes
	track *tracker      // counts the runs
	// fake, when set (in tests), stands for the test processes: exec
	// returns its outcome of a job instead of running it.
	fake func(dir string, j job) *outcome
	bsem chan struct{} // builds
	// alone holds a lock per package directory: held for reading by
	// every test process of the package, for writing by one that must run
	// with no other (job.alone).
	mu    sync.Mutex
	alone map[string]*sync.RWMutex

	once      sync.Once
	test2json string // path of go tool test2json
	race      bool   // whether -race builds work here
	raceWhy   string // why not, when not
	goos      string // the GOOS the tests build for (go env)
	toolErr   error
}

// command returns a command of the go command (name "go") or of a test
// binary (for -test.list).
func (r *runner) command(dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(r.ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = r.env
	cmd.WaitDelay = 5 * time.Second
	if name == "go" {
		// Its work directories go under ours, removed even when it is
		// killed.
		cmd.Env = append(append([]string(nil), r.environ()...), "GOTMPDIR="+r.tmp)
		ownGroup(cmd, stopSignal)
	} else {
		ownGroup(cmd, killSignal)
	}
	return cmd
}

// tools finds test2json and whether the race detector is available.
func (r *runner) tools() error {
	r.once.Do(func() {
		out, err := r.command(r.dir, "go", "tool", "-n", "test2json").Output()
		if err != nil {
			r.toolErr = goError("go tool -n test2json", out, err)
			return
		}
		r.test2json = strings.TrimSpace(string(out))
		out, err = r.command(r.dir, "go", "env", "-json", "GOOS", "GOARCH", "CGO_ENABLED").Output()
		if err != nil {
			r.toolErr = goError("go env", out, err)
			return
		}
		var env struct{ GOOS, GOARCH, CGO_ENABLED string }
		if err := json.Unmarshal(out, &env); err != nil {
			r.toolErr = err
			return
		}
		r.race, r.raceWhy = raceSupported(env.GOOS, env.GOARCH, env.CGO_ENABLED == "1")
		r.goos = env.GOOS
	})
	return r.toolErr
}

// raceSupported says whether go build -race works on the platform, as
// the go command's internal/platform decides (Go 1.26), and why not.
func raceSupported(goos, goarch string, cgo bool) (bool, string) {
	ok := false
	switch goos + "/" + goarch {
	case "linux/amd64", "linux/ppc64le", "linux/arm64", "linux/s390x", "linux/loong64",
		"freebsd/amd64", "netbsd/amd64", "darwin/amd64", "darwin/arm64", "windows/amd64":
		ok = true
	}
	switch {
	case !ok:
		return false, "the race detector does not support " + goos + "/" + goarch
	case !cgo && goos != "darwin":
		return false, "the race detector needs cgo, and CGO_ENABLED=0"
	}
	return true, ""
}

func goError(what string, out []byte, err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%s: %s", what, strings.TrimSpace(string(ee.Stderr)))
	}
	if errors.Is(err, exec.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%s: %v", what, err)
}

// build builds the test binary of the package in dir to out, with the
// overlay file and the replacement go.mod if they are not "".
func (r *runner) build(dir, out, overlay, modfile string, race bool) ([]byte, error) {
	r.bsem <- struct{}{}
	defer func() { <-r.bsem }()
	args := []string{"test", "-c", "-vet=off", "-o", out}
	if race {
		args = append(args, "-race")
	}
	if len(r.tags) > 0 {
		args = append(args, "-tags="+strings.Join(r.tags, ","))
	}
	if overlay != "" {
		args = append(args, "-overlay="+overlay)
	}
	if modfile != "" {
		args = append(args, "-modfile="+modfile)
	}
	return r.command(dir, "go", append(args, ".")...).CombinedOutput()
}

// binaries are one version of a package's tests, built.
type binaries struct {
	plain string
	race  *lazyBuild        // nil without the race detector; built when a run needs it
	src   map[string][]byte // the overlay's files by base name
}

// A lazyBuild is a test binary built the first time it is asked for: a
// -race build costs several times a plain one, and a package whose
// fixes need no runs (they are proven), or a bisecting variant whose
// failure showed without -race, never needs it.
type lazyBuild struct {
	once   sync.Once
	build  func() (path, broken string, err error)
	path   string
	broken string // why it does not build
	err    error
}

// get builds the binary once and returns its path, or why it does not
// build.
func (l *lazyBuild) get() (string, string, error) {
	l.once.Do(func() { l.path, l.broken, l.err = l.build() })
	return l.path, l.broken, l.err
}

// buildSet writes changes as an overlay under tmp and builds the package's
// tests with them; the -race build, when the race detector is available,
// is made when a run first needs it (binaries.race).
func (r *runner) buildSet(tmp, dir string, changes, mod []rewrite.Change) (binaries, string, error) {
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return binaries{}, "", err
	}
	overlay, err := writeOverlay(tmp, changes)
	if err != nil {
		return binaries{}, "", err
	}
	modfile, err := writeModFile(tmp, mod)
	if err != nil {
		return binaries{}, "", err
	}
	b := binaries{plain: filepath.Join(tmp, "after.test"), src: map[string][]byte{}}
	for _, c := range changes {
		if filepath.Dir(c.Path) == dir {
			b.src[filepath.Base(c.Path)] = c.New
		}
	}
	if out, err := r.build(dir, b.plain, overlay, modfile, false); err != nil {
		if r.ctx.Err() != nil {
			return binaries{}, "", r.ctx.Err()
		}
		return binaries{}, buildError(out, err), nil
	}
	if r.race {
		path := filepath.Join(tmp, "race.test")
		b.race = &lazyBuild{build: func() (string, string, error) {
			if out, err := r.build(dir, path, overlay, modfile, true); err != nil {
				if r.ctx.Err() != nil {
					return "", "", r.ctx.Err()
				}
				return "", "with -race: " + buildError(out, err), nil
			}
			return path, "", nil
		}}
	}
	return b, "", nil
}

// buildError is the first line of a build's output that says what failed.
func buildError(out []byte, err error) string {
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return clip(line)
		}
	}
	return err.Error()
}

// A job is one process of a test binary.
type job struct {
	bin     string
	name    string   // the top-level test, or "" for the whole binary or several tests
	tests   []string // the top-level tests run pattern selects, when they are named
	run     string   // -test.run (or -test.bench for a benchmark) pattern; "" runs every test
	bench   bool
	count   int
	timeout time.Duration
	// limits is how long each top-level test may run after the rewrite
	// before it counts as hung (hangAfter): exec stops the process then.
	limits map[string]time.Duration
	procs1 bool              // GOMAXPROCS=1
	race   bool              // bin is the -race build after the rewrite
	alone  bool              // with no other test process running
	src    map[string][]byte // the overlay's files by base name (binaries.src)
}

// sources returns the source lines of the package in dir as the job's
// binary was built from it: the overlay's files, else those on disk.
func (j job) sources(dir string) sourceLine {
	files := map[string][]string{}
	return func(file string, line int) string {
		lines, ok := files[file]
		if !ok {
			data, found := j.src[file]
			if !found {
				data, _ = os.ReadFile(filepath.Join(dir, file))
			}
			lines = strings.Split(string(data), "\n")
			files[file] = lines
		}
		if line < 1 || line > len(lines) {
			return ""
		}
		return lines[line-1]
	}
}

// originalLines rewrites the "file.go:line: " that starts detail, a
// failure of the job's binary, to the line of the file on disk when the
// binary was built from a rewrite of it: a reason quotes the user's own
// line, and the rewrite may be reverted. A line the rewrite added is
// named so ("file.go:41 (a line the rewrite added after it): ...").
func (j job) originalLines(dir, detail string) string {
	m := fileLine.FindStringSubmatch(detail)
	if m == nil {
		return detail
	}
	changed, ok := j.src[m[1]]
	if !ok {
		return detail
	}
	orig, err := os.ReadFile(filepath.Join(dir, m[1]))
	if err != nil {
		return detail
	}
	n, _ := strconv.Atoi(m[2])
	at, added := output.OriginalLine(orig, changed, n)
	note := ""
	if added {
		note = " (a line the rewrite added after it)"
	}
	return fmt.Sprintf("%s:%d%s: %s", m[1], at, note, detail[len(m[0]):])
}

// pkgLock returns the lock of the test processes of the package in dir.
func (r *runner) pkgLock(dir string) *sync.RWMutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.alone == nil {
		r.alone = map[string]*sync.RWMutex{}
	}
	l := r.alone[dir]
	if l == nil {
		l = &sync.RWMutex{}
		r.alone[dir] = l
	}
	return l
}

// exec runs a job through test2json and reads its events. It waits for a
// slot among the runner's test processes and, for a job to run alone, for
// the other processes of its package to end (processes of other packages
// run beside it, as go test runs packages).
func (r *runner) exec(ctx context.Context, dir string, j job) (*outcome, error) {
	// Taken before a slot, so that a process alone waits for the slots
	// to empty rather than holding one.
	if l := r.pkgLock(dir); j.alone {
		l.Lock()
		defer l.Unlock()
	} else {
		l.RLock()
		defer l.RUnlock()
	}
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.sem }()
	if r.fake != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o := r.fake(dir, j)
		r.track.ran(j.count)
		return o, nil
	}
	args := []string{"-t", "-p", filepath.Base(dir), j.bin, "-test.v=test2json",
		"-test.count=" + strconv.Itoa(j.count), "-test.timeout=" + j.timeout.String()}
	switch {
	case j.bench:
		args = append(args, "-test.run=^$", "-test.bench="+j.run, "-test.benchtime=1x")
	case j.run != "":
		args = append(args, "-test.run="+j.run)
	}
	// The process is killed if it outlives its own -test.timeout by 10s
	// (a binary whose timer cannot fire, or that is stuck printing its
	// goroutines), or when ctx ends.
	pctx, cancel := context.WithTimeout(ctx, j.timeout+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(pctx, r.test2json, args...)
	cmd.Dir = dir
	// The process's temporary files (t.TempDir, os.CreateTemp) go to a
	// directory of its own, removed when it ends: a process killed at a
	// hang or an interrupt cannot remove them itself.
	tmp, err := r.procTemp()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	env := append([]string(nil), r.environ()...)
	env = append(env, "TMPDIR="+tmp, "TMP="+tmp, "TEMP="+tmp)
	// PWD names the package directory, as go test sets it: a test (or a
	// child it starts) that keeps a logical working directory reads it,
	// and the caller's PWD would be another directory.
	env = append(env, "PWD="+dir)
	if j.procs1 {
		env = append(env, "GOMAXPROCS=1")
	}
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	ownGroup(cmd, killSignal)
	var stdout, stderr bytes.Buffer
	w := newWatch(j.limits, cancel)
	defer w.stop()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, w), &stderr
	start := time.Now()
	err = cmd.Run()
	w.stop()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r.track.ran(j.count)
	o := parseEvents(stdout.Bytes(), j.sources(dir))
	o.detail = j.originalLines(dir, o.detail)
	o.wall = time.Since(start)
	if hung, limit := w.hung(); hung != "" {
		// Stopped at the test's own limit: that test hung, whatever the
		// killed process printed last.
		o.failed, o.hung, o.test, o.panic = true, true, hung, ""
		o.detail = fmt.Sprintf("%s was still running after %s", hung, shortDur(limit))
		return o, nil
	}
	if j.bench && o.pkgPassed && !o.failed && o.panic == "" {
		// test2json reports no pass event per benchmark: a binary that
		// passed ran it count times.
		o.passed[j.name], o.tops, o.elapsed = j.count, j.count, o.wall
	}
	if err != nil && !o.failed && o.panic == "" {
		// test2json exits 1 when the binary did: say what it printed last.
		o.failed = true
		o.exit = clip(strings.TrimSpace(err.Error() + ": " + o.lastLine + " " + lastLine(stderr.String())))
		if pctx.Err() != nil {
			o.hung = true
		}
	}
	return o, nil
}

// procTemp makes the temporary directory of one test process, under the
// runner's own (removed when verification ends, however it ends).
func (r *runner) procTemp() (string, error) {
	base := filepath.Join(filepath.Dir(r.tmp), "proc")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(base, "t")
}

func (r *runner) environ() []string {
	if r.env != nil {
		return r.env
	}
	return os.Environ()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// clip shortens a detail to one reasonable line.
func clip(s string) string { return clipTo(s, 200) }

// clipTo shortens s to one line of at most n bytes (the ellipsis
// included) cut at a word boundary, never inside a word or a rune (a cut
// rune would make a generated comment invalid Go source); a single word
// longer than that is cut at a rune boundary.
func clipTo(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	n = max(n-len(ellipsis), 0)
	cut := strings.LastIndexByte(s[:n+1], ' ') // a space right after the limit ends a word too
	if cut <= 0 {
		for cut = n; cut > 0 && !utf8.RuneStart(s[cut]); cut-- {
		}
	}
	return strings.TrimRight(s[:cut], " ,;:") + ellipsis
}

func mkdir(dir string) error { return os.MkdirAll(dir, 0o755) }
