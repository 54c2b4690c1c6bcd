package sweep_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/unflake/unflake/internal/testmod"
)

// -sweep.dirs names more module roots to sweep, beside the module cache's
// (a flag, not the environment: the test reads nothing ambient):
//
//	go test -tags slow ./sweep -sweep.dirs /tmp/cron,/tmp/gobreaker
var extraDirs = flag.String("sweep.dirs", "", "comma-separated module directories to sweep too (copied first, never written)")

// -sweep.flags adds unflake flags to every run, to sweep other settings
// than the defaults (-sweep.flags=--min-saving=0,--scope-globals).
var extraFlags = flag.String("sweep.flags", "", "comma-separated flags for every unflake run")

// A target is one module to sweep: its name in the table and its root.
type target struct{ name, dir string }

// A row of the table the sweep prints.
type row struct {
	name                      string
	packages, findings, fixes int
	seconds                   float64
	note                      string
}

// TestSweep runs unflake with every rule over real modules and fails on
// what must never happen on real code: a panic, an internal error, an
// error exit that is not the module's own load failure, a diff that does
// not apply, or a rewritten package that does not build or vet where the
// original did. Modules run one after another (the machine's cores go to
// the go command inside each); only packages whose tests load (their
// dependencies are in the module cache: no network) are swept.
func TestSweep(t *testing.T) {
	testmod.Slow(t)
	testmod.Short(t)
	// -mod=mod and no checksum database: go.sum gains the entries of the
	// versions raiseToCache picks, from the module cache alone.
	env := testmod.GoEnv(t, "GOFLAGS=-mod=mod", "GOSUMDB=off")
	// One result cache for the sweep, so fix --diff reuses what check
	// analysed; never the user's.
	env = append(env, "UNFLAKE_CACHE="+t.TempDir())
	bin := buildUnflake(t, testmod.GoEnv(t))

	targets := cacheModules(t, envValue(env, "GOMODCACHE"))
	for _, d := range strings.Split(*extraDirs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			abs, err := filepath.Abs(d)
			if err != nil {
				t.Fatal(err)
			}
			targets = append(targets, target{name: modulePath(abs), dir: abs})
		}
	}
	if len(targets) == 0 {
		t.Skip("no module with tests in the module cache and no -sweep.dirs")
	}
	var rows []row
	for _, tg := range targets {
		t.Run(strings.ReplaceAll(tg.name, "/", "_"), func(t *testing.T) {
			r := sweep(t, bin, env, tg)
			if r.note != "" {
				t.Log(r.note)
			}
			rows = append(rows, r)
		})
	}
	t.Log("\n" + table(rows))
}

// sweep runs the sweep on one module and returns its row.
func sweep(t *testing.T, bin string, env []string, tg target) row {
	start := time.Now()
	r := row{name: tg.name}
	orig := filepath.Join(t.TempDir(), "orig")
	copyTree(t, tg.dir, orig)

	// Raise missing requirements to the cache's versions where the module
	// graph still loads; else sweep the module as it is.
	saved := snapshot(t, orig, "go.mod", "go.sum")
	raised := raiseToCache(t, orig, envValue(env, "GOMODCACHE"))
	ls := list(t, env, orig)
	if raised != "" && ls.tests == 0 {
		restore(t, orig, saved)
		raised, ls = "", list(t, env, orig)
	}
	r.packages = ls.tests
	r.note = strings.Join(slices.DeleteFunc([]string{raised, ls.note}, func(s string) bool { return s == "" }), "; ")
	if ls.tests == 0 {
		r.seconds = time.Since(start).Seconds()
		return r
	}

	// check: the findings, and the fixes fix would make.
	//unflake:ignore spawn one at a time on one copy: the machine's cores go to the go command inside each, and the sweep's seconds stay per module
	out, errOut, code := run(t, orig, env, bin, unflake("check", "--format", "json", "./...")...)
	ls.judge(t, "check", errOut, code)
	var findings []finding
	if err := json.Unmarshal([]byte(out), &findings); err != nil && strings.TrimSpace(out) != "" {
		t.Errorf("check: output is not JSON: %v\n%s", err, clip(out))
	}
	for _, f := range findings {
		r.findings++
		if f.Fixed {
			r.fixes++
		}
		if strings.Contains(f.Reason, "internal error") {
			t.Errorf("check: %s:%d: %s: %s; not fixed: %s", f.File, f.Line, f.Rule, f.Message, f.Reason)
		}
	}

	// fix --diff: the diff must apply to the original.
	diff, errOut, code := run(t, orig, env, bin, unflake("fix", "--diff", "./...")...)
	ls.judge(t, "fix --diff", errOut, code)
	switch {
	case code == 0 && diff != "":
		t.Errorf("fix --diff: exit 0 with a diff")
	case code == 1 && diff == "":
		t.Errorf("fix --diff: exit 1 without a diff")
	case diff == "" && r.fixes > 0:
		t.Errorf("fix --diff: no diff, but check says %d findings are fixed", r.fixes)
	}
	// fix --diff --format json: the same diff, and the findings check
	// says are fixed.
	out, errOut, code = run(t, orig, env, bin, unflake("fix", "--diff", "--format", "json", "./...")...)
	ls.judge(t, "fix --diff --format json", errOut, code)
	var fixed struct {
		Findings []finding
		Diff     string
	}
	if err := json.Unmarshal([]byte(out), &fixed); err != nil {
		t.Errorf("fix --diff --format json: output is not JSON: %v\n%s", err, clip(out))
	} else {
		if fixed.Diff != diff {
			t.Errorf("fix --diff --format json: its diff differs from fix --diff's")
		}
		if a, b := fixedIDs(findings), fixedIDs(fixed.Findings); !slices.Equal(a, b) {
			t.Errorf("check and fix disagree on what is fixed:\ncheck: %q\nfix:   %q", a, b)
		}
	}

	changed := changedDirs(diff)
	if len(changed) > 0 {
		applied := filepath.Join(t.TempDir(), "applied")
		copyTree(t, orig, applied)
		//unflake:ignore spawn each step needs the one before it, in the same copy
		apply(t, applied, diff)
		buildAndVet(t, env, orig, applied, changed)
		// A second run on what the first wrote changes nothing.
		again, errOut, code := run(t, applied, env, bin, unflake("fix", append([]string{"--diff"}, changed...)...)...)
		ls.judge(t, "fix --diff of the rewritten packages", errOut, code)
		if again != "" {
			t.Errorf("fix --diff of the rewritten packages changes them again:\n%s", clip(again))
		}
	}
	r.seconds = time.Since(start).Seconds()
	return r
}

// raiseToCache raises each requirement of the module at dir whose version
// is not in the module cache to the newest version that is, if newer: the
// sweep has no network, and a module whose dependencies do not load can
// only be swept in part. The module's own code is left as it is. It
// returns what it raised, for the table's note.
func raiseToCache(t *testing.T, dir, cache string) string {
	t.Helper()
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return ""
	}
	replaced := map[string]bool{}
	for _, r := range f.Replace {
		replaced[r.Old.Path] = true
	}
	var raised []string
	for _, r := range f.Require {
		if replaced[r.Mod.Path] || inCache(cache, r.Mod.Path, r.Mod.Version) {
			continue
		}
		if v := newestInCache(cache, r.Mod.Path); semver.Compare(v, r.Mod.Version) > 0 {
			raised = append(raised, r.Mod.Path+" "+r.Mod.Version+" → "+v)
			if err := f.AddRequire(r.Mod.Path, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(raised) == 0 {
		return ""
	}
	out, err := f.Format()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gomod, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return "raised to the module cache's versions: " + strings.Join(raised, ", ")
}

// snapshot returns the contents of the named files of dir that exist.
func snapshot(t *testing.T, dir string, names ...string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, n := range names {
		if data, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			m[n] = data
		}
	}
	return m
}

// restore writes back what snapshot saved.
func restore(t *testing.T, dir string, saved map[string][]byte) {
	t.Helper()
	for n, data := range saved {
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// inCache reports whether the module cache holds version of mod.
func inCache(cache, mod, version string) bool {
	p, err1 := module.EscapePath(mod)
	v, err2 := module.EscapeVersion(version)
	if err1 != nil || err2 != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(cache, filepath.FromSlash(p)+"@"+v))
	return err == nil
}

// newestInCache returns the newest version of mod in the module cache, or
// "".
func newestInCache(cache, mod string) string {
	p, err := module.EscapePath(mod)
	if err != nil {
		return ""
	}
	entries, _ := os.ReadDir(filepath.Join(cache, filepath.FromSlash(path.Dir(p))))
	newest := ""
	for _, e := range entries {
		v, ok := strings.CutPrefix(e.Name(), path.Base(p)+"@")
		if !ok {
			continue
		}
		if v, err := module.UnescapeVersion(v); err == nil && semver.Compare(v, newest) > 0 {
			newest = v
		}
	}
	return newest
}

// unflake returns the arguments of an unflake command run with every rule
// and -sweep.flags.
func unflake(cmd string, args ...string) []string {
	a := []string{cmd, "--rules", "all"}
	for f := range strings.SplitSeq(*extraFlags, ",") {
		if f = strings.TrimSpace(f); f != "" {
			a = append(a, f)
		}
	}
	return append(a, args...)
}

// A finding as check --format json prints it.
type finding struct {
	ID, Rule, File, Message, Reason string
	Line                            int
	Fixed                           bool
}

// fixedIDs returns the sorted ids of the fixed findings.
func fixedIDs(fs []finding) []string {
	var ids []string
	for _, f := range fs {
		if f.Fixed {
			ids = append(ids, f.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// A listing is what go list -e -test says of a module: its packages with
// tests, and the load errors of the packages that do not load (their
// dependencies are not in the module cache, and the sweep has no
// network): those are the module's own, and unflake may report them.
type listing struct {
	tests, broken int             // packages with tests; those that do not load
	loadErrors    map[string]bool // the messages of go list's errors
	note          string
	// typeError returns the first type error go vet gives for the
	// original package in a directory ("" if none): a package that does
	// not compile as it is (files for other build tags, code rotted
	// since) is the module's own error too.
	typeError func(dir string) string
}

func list(t *testing.T, env []string, dir string) *listing {
	t.Helper()
	ls := &listing{loadErrors: map[string]bool{}}
	vetted := map[string]string{}
	ls.typeError = func(d string) string {
		if e, ok := vetted[d]; ok {
			return e
		}
		_, out, _ := run(t, dir, env, "go", "vet", "./"+d)
		for line := range strings.SplitSeq(out, "\n") {
			if e, ok := strings.CutPrefix(line, "vet: "); ok {
				vetted[d] = e
				return e
			}
		}
		vetted[d] = ""
		return ""
	}
	out, errOut, code := run(t, dir, env, "go", "list", "-e", "-test", "-json=ImportPath,Error,DepsErrors,TestGoFiles,XTestGoFiles", "./...")
	if code != 0 {
		ls.note = "skipped: go list -e -test ./... fails: " + firstLine(errOut)
		return ls
	}
	type pkgError struct{ Pos, Err string }
	tests, broken := map[string]bool{}, map[string]bool{}
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath                string
			Error                     *pkgError
			DepsErrors                []*pkgError
			TestGoFiles, XTestGoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list: %v", err)
		}
		base := basePackage(p.ImportPath)
		if len(p.TestGoFiles)+len(p.XTestGoFiles) > 0 {
			tests[base] = true
		}
		errs := p.DepsErrors
		if p.Error != nil {
			errs = append(errs, p.Error)
		}
		for _, e := range errs {
			// By message alone: go list names one import of a missing
			// module, unflake's loader may name another.
			broken[base] = true
			ls.loadErrors[e.Err] = true
		}
	}
	ls.tests = len(tests)
	for p := range tests {
		if broken[p] {
			ls.broken++
		}
	}
	switch {
	case ls.tests == 0:
		ls.note = "skipped: no package with tests"
	case ls.broken > 0:
		ls.note = fmt.Sprintf("%d of its %d packages with tests do not load (dependencies missing from the module cache)", ls.broken, ls.tests)
	}
	return ls
}

// basePackage maps an entry of go list -test to the package it tests:
// "p", "p [p.test]", "p_test [p.test]" and "p.test" are all p.
func basePackage(importPath string) string {
	if i := strings.Index(importPath, " ["); i >= 0 {
		return strings.TrimSuffix(strings.TrimSuffix(importPath[i+2:], "]"), ".test")
	}
	return strings.TrimSuffix(importPath, ".test")
}

// judge fails t unless every line unflake wrote on stderr is fix's
// summary or one of the module's own load errors (go list's, word for
// word), and exit 2 came with a load error. A panic, an internal error or
// any other error is unflake's.
func (ls *listing) judge(t *testing.T, what, stderr string, code int) {
	t.Helper()
	for _, p := range ls.problems(stderr, code) {
		t.Errorf("%s: %s", what, p)
	}
}

// problems returns what judge fails on.
func (ls *listing) problems(stderr string, code int) []string {
	if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") {
		return []string{"crashed:\n" + clip(stderr)}
	}
	var ps []string
	own := 0                            // the module's own errors
	typeErrors := map[string][]string{} // unexplained "file:line:col: msg" by directory
	for line := range strings.SplitSeq(strings.TrimSpace(stderr), "\n") {
		msg := position.ReplaceAllString(strings.TrimPrefix(line, "unflake: "), "")
		msg = strings.TrimPrefix(msg, "go: ") // module-level: "go: mod@v: err"
		switch {
		case line == "":
		case strings.Contains(line, "internal error"):
			ps = append(ps, line)
		case ls.loadErrors[msg] || ls.loadErrors[moduleError(msg)]:
			own++
		case strings.HasPrefix(line, "unflake: would rewrite ") || strings.HasPrefix(line, "unflake: rewrote "):
		case msg != line:
			file, _, _ := strings.Cut(line, ":")
			typeErrors[path.Dir(file)] = append(typeErrors[path.Dir(file)], line)
		default:
			ps = append(ps, "unexpected error: "+line)
		}
	}
	for d, lines := range typeErrors {
		if e := ls.typeError(d); e != "" && slices.Contains(lines, e) {
			own += len(lines)
			continue
		}
		for _, l := range lines {
			ps = append(ps, "unexpected error: "+l)
		}
	}
	slices.Sort(ps)
	switch {
	case code == 2 && own == 0 && len(ps) == 0:
		ps = append(ps, "exit 2 without a load error:\n"+clip(stderr))
	case code != 0 && code != 1 && code != 2:
		ps = append(ps, fmt.Sprintf("exit %d:\n%s", code, clip(stderr)))
	}
	return ps
}

// moduleError returns the message of a module-level error
// ("example.com/m@v1.0.0: module lookup disabled by GOPROXY=off").
func moduleError(msg string) string {
	if mod, rest, ok := strings.Cut(msg, ": "); ok && strings.Contains(mod, "@") && !strings.Contains(mod, " ") {
		return rest
	}
	return msg
}

// changedDirs returns, as ./dir patterns, the directories of the Go files
// a diff changes.
func changedDirs(diff string) []string {
	var dirs []string
	for line := range strings.SplitSeq(diff, "\n") {
		name, ok := strings.CutPrefix(line, "+++ b/")
		if !ok || !strings.HasSuffix(name, ".go") {
			continue
		}
		d := "./" + path.Dir(name)
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	slices.Sort(dirs)
	return dirs
}

// apply applies diff to the tree in dir, as a user would: git apply, or
// patch -p1 where there is no git.
func apply(t *testing.T, dir, diff string) {
	t.Helper()
	args := []string{"apply", "-p1", "-"}
	tool, err := exec.LookPath("git")
	if err != nil {
		if tool, err = exec.LookPath("patch"); err != nil {
			t.Skip("neither git nor patch to apply the diff")
		}
		args = []string{"-p1", "--forward", "--batch"}
	}
	cmd := exec.Command(tool, args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(diff)
	cmd.Env = []string{"HOME=" + t.TempDir(), "GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the diff does not apply: %v\n%s", err, clip(string(out)))
	}
}

// buildAndVet builds and vets the changed packages of the rewritten tree;
// where one fails, the original's result decides whether it is unflake's
// doing: a message vet or the compiler gives on the rewritten code and not
// on the original is a failure.
func buildAndVet(t *testing.T, env []string, orig, applied string, pkgs []string) {
	t.Helper()
	for _, step := range [][]string{{"build"}, {"vet"}} {
		args := append(step, pkgs...)
		if step[0] == "build" {
			// go build refuses a pattern naming a package of test files only.
			args = append(step, withGoFiles(t, env, applied, pkgs)...)
			if len(args) == 1 {
				continue
			}
		}
		//unflake:ignore spawn the original is built only when the rewritten code fails
		_, after, code := run(t, applied, env, "go", args...)
		if code == 0 {
			continue
		}
		_, before, code := run(t, orig, env, "go", args...)
		if code == 0 {
			t.Errorf("go %s fails on the rewritten code, not on the original:\n%s", step[0], clip(after))
			continue
		}
		if added := newMessages(before, after); len(added) > 0 {
			t.Errorf("go %s: new messages on the rewritten code:\n%s", step[0], clip(strings.Join(added, "\n")))
		}
	}
}

// withGoFiles returns the packages among pkgs that have non-test files.
func withGoFiles(t *testing.T, env []string, dir string, pkgs []string) []string {
	out, errOut, code := run(t, dir, env, "go", append([]string{"list", "-e", "-f", "{{if .GoFiles}}{{.ImportPath}}{{end}}"}, pkgs...)...)
	if code != 0 {
		t.Errorf("go list of the rewritten packages: %s", clip(errOut))
	}
	return strings.Fields(out)
}

// position is the file:line:col: prefix of a go command message.
var position = regexp.MustCompile(`^\S+?:\d+(:\d+)?: `)

// newMessages returns the lines of after, positions dropped, that before
// does not hold as often.
func newMessages(before, after string) []string {
	count := map[string]int{}
	for l := range strings.SplitSeq(before, "\n") {
		count[position.ReplaceAllString(l, "")]++
	}
	var added []string
	for l := range strings.SplitSeq(after, "\n") {
		k := position.ReplaceAllString(l, "")
		if count[k] > 0 {
			count[k]--
			continue
		}
		added = append(added, l)
	}
	return added
}

// cacheModules returns the newest version of each module in the module
// cache that has a go.mod and test files.
func cacheModules(t *testing.T, root string) []target {
	t.Helper()
	newest := map[string]string{} // module path → version
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // unreadable: not a module to sweep
		}
		if p == filepath.Join(root, "cache") {
			return filepath.SkipDir
		}
		name := d.Name()
		at := strings.LastIndex(name, "@")
		if at < 0 {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		mod := filepath.ToSlash(filepath.Join(filepath.Dir(rel), name[:at]))
		version := name[at+1:]
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && hasTests(p) {
			if old, ok := newest[mod]; !ok || semver.Compare(version, old) > 0 {
				newest[mod] = version
			}
		}
		return filepath.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	var ts []target
	for mod, v := range newest {
		ts = append(ts, target{name: unescape(mod) + "@" + v, dir: filepath.Join(root, filepath.FromSlash(mod)+"@"+v)})
	}
	slices.SortFunc(ts, func(a, b target) int { return strings.Compare(a.name, b.name) })
	return ts
}

// hasTests reports whether a _test.go file lies under dir outside the
// directories the go command ignores.
func hasTests(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || found:
			return filepath.SkipDir
		case d.IsDir() && p != dir && ignored(d.Name()):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(d.Name(), "_test.go"):
			found = true
		}
		return nil
	})
	return found
}

func ignored(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".")
}

// unescape undoes the module cache's case encoding ("!b" for "B").
func unescape(mod string) string {
	var b strings.Builder
	up := false
	for _, r := range mod {
		switch {
		case r == '!':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// copyTree copies the regular files under src to dst, writable, leaving
// out version control directories.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && (d.Name() == ".git" || d.Name() == ".hg"):
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil // symlinks and the like: not sources
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// buildUnflake builds the command into a temporary directory.
func buildUnflake(t *testing.T, env []string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "unflake")
	if _, errOut, code := run(t, ".", env, "go", "build", "-o", bin, "github.com/unflake/unflake"); code != 0 {
		t.Fatalf("building unflake: %s", errOut)
	}
	return bin
}

// run runs name in dir with exactly env and returns its output and exit
// code.
func run(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if name == "go" {
		var err error
		if name, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command")
		}
	}
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

// modulePath returns the path of the module rooted at dir, or dir when it
// has no go.mod to say.
func modulePath(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if p := modfile.ModulePath(data); err == nil && p != "" {
		return p
	}
	return dir
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// clip shortens long output for a failure message.
func clip(s string) string {
	const max = 4000
	if len(s) > max {
		return s[:max] + "\n..."
	}
	return s
}

func table(rows []row) string {
	var b strings.Builder
	b.WriteString("| module | packages | findings | fixes | seconds |\n|---|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.1f |\n", r.name, r.packages, r.findings, r.fixes, r.seconds)
	}
	return b.String()
}
