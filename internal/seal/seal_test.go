package seal_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/testmod"

	"golang.org/x/tools/txtar"

	"github.com/unflake/unflake/internal/seal"
)

// writeModule writes the files of testdata/NAME.txtar to a new directory.
func writeModule(t *testing.T, name string) string {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testmod.WriteFiles(t, dir, a.Files)
	return dir
}

func run(t *testing.T, dir string) *seal.Result {
	t.Helper()
	res, err := seal.Run(&seal.Config{Dir: dir, Patterns: []string{"./..."}, Env: testmod.GoEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	return res
}

func write(t *testing.T, res *seal.Result) {
	t.Helper()
	for _, c := range res.Changes {
		if err := c.Write(); err != nil {
			t.Fatal(err)
		}
	}
}

func goCmd(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const wantConfigSeal = `package config

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// Sealed by unflake seal: the test process starts from an empty value
	// of every variable the package's code reads.
	for _, name := range []string{"APP_HOME", "APP_LEVEL", "APP_MODE"} {
		os.Setenv(name, "")
	}

	os.Exit(m.Run())
}
`

const wantAppTest = `package app

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// Sealed by unflake seal: the test process starts from an empty value
	// of every variable the package's code reads.
	for _, name := range []string{"APP_DEBUG", "APP_HOME", "APP_LEVEL", "APP_MODE"} {
		os.Setenv(name, "")
	}

	// Set up once.
	code := m.Run()
	os.Exit(code)
}
`

func TestRun(t *testing.T) {
	testmod.Short(t)
	dir := writeModule(t, "module")
	res := run(t, dir)

	// Packages: config through its wrappers and constants, app through
	// its own read and config's (transitive), ext with its external
	// TestMain; quiet reads nothing and gets nothing.
	var got []string
	for _, p := range res.Packages {
		got = append(got, p.Path+" "+strings.Join(p.Names, ","))
	}
	want := []string{
		"example.com/m/app APP_DEBUG,APP_HOME,APP_LEVEL,APP_MODE",
		"example.com/m/config APP_HOME,APP_LEVEL,APP_MODE",
		"example.com/m/ext EXT_TOKEN",
	}
	if !slices.Equal(got, want) {
		t.Errorf("packages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	got = nil
	for _, u := range res.Unseen {
		rel, _ := filepath.Rel(dir, u.Pos.Filename)
		got = append(got, rel+":"+strconv.Itoa(u.Pos.Line)+": "+u.Why)
	}
	want = []string{
		"config/config.go:23: os.Getenv called with a name that is not a constant",
		"config/config.go:25: os.Environ reads the whole environment",
	}
	if !slices.Equal(got, want) {
		t.Errorf("unseen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	files := map[string]string{}
	for _, c := range res.Changes {
		rel, _ := filepath.Rel(dir, c.Path)
		files[filepath.ToSlash(rel)] = string(c.New)
		if (c.Old == nil) != (rel == filepath.Join("config", seal.SealFile)) {
			t.Errorf("%s: Old nil is %v", rel, c.Old == nil)
		}
	}
	if len(files) != 3 {
		t.Errorf("changed %d files, want 3: %v", len(files), res.Changes)
	}
	if got := files["config/"+seal.SealFile]; got != wantConfigSeal {
		t.Errorf("new config/%s:\n%s\nwant:\n%s", seal.SealFile, got, wantConfigSeal)
	}
	if got := files["app/app_test.go"]; !strings.HasPrefix(got, wantAppTest) || strings.Count(got, "func TestMain") != 1 {
		t.Errorf("app/app_test.go:\n%s\nwant it to start:\n%s", got, wantAppTest)
	}
	// ext's TestMain is in its external test package: it is updated and
	// ext gets no second TestMain.
	if got := files["ext/ext_test.go"]; !strings.Contains(got, `range []string{"EXT_TOKEN"} {`) {
		t.Errorf("ext/ext_test.go:\n%s", got)
	}

	write(t, res)
	if out, err := goCmd(t, dir, testmod.GoEnv(t, "GOFLAGS=-mod=mod"), "vet", "./..."); err != nil {
		t.Fatalf("go vet on the sealed module: %v\n%s", err, out)
	}

	// A second run changes nothing.
	if again := run(t, dir); len(again.Changes) != 0 {
		t.Errorf("second run changed %d files", len(again.Changes))
	}

	// A new variable read in config reaches config's seal and app's.
	f, err := os.OpenFile(filepath.Join(dir, "config", "config.go"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\nfunc Region() string { return env(\"APP_REGION\") }\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	next := run(t, dir)
	var changed []string
	for _, c := range next.Changes {
		rel, _ := filepath.Rel(dir, c.Path)
		changed = append(changed, filepath.ToSlash(rel))
		if !strings.Contains(string(c.New), `"APP_MODE", "APP_REGION"}`) || strings.Count(string(c.New), "Sealed by unflake seal") != 1 {
			t.Errorf("%s after a new read:\n%s", rel, c.New)
		}
	}
	if want := []string{"app/app_test.go", "config/" + seal.SealFile}; !slices.Equal(changed, want) {
		t.Errorf("after a new read, changed %v, want %v", changed, want)
	}
}

// TestSealedTestsIgnoreTheEnvironment runs the module's tests with the
// variables they read set: they fail before the seal and pass after it.
func TestSealedTestsIgnoreTheEnvironment(t *testing.T) {
	testmod.Slow(t)
	dir := writeModule(t, "module")
	env := testmod.GoEnv(t, "GOFLAGS=-mod=mod", "APP_HOME=/home/dev", "APP_DEBUG=1", "EXT_TOKEN=secret")
	out, err := goCmd(t, dir, env, "test", "./...")
	if err == nil {
		t.Fatalf("before the seal the tests passed in a polluted environment:\n%s", out)
	}
	for _, want := range []string{"APP_HOME leaked", "APP_DEBUG leaked", "EXT_TOKEN leaked"} {
		if !strings.Contains(out, want) {
			t.Errorf("before the seal, want %q in:\n%s", want, out)
		}
	}
	write(t, run(t, dir))
	if out, err := goCmd(t, dir, env, "test", "./..."); err != nil {
		t.Fatalf("after the seal: %v\n%s", err, out)
	}
}

func TestNoPackages(t *testing.T) {
	dir := writeModule(t, "module")
	res, err := seal.Run(&seal.Config{Dir: dir, Patterns: []string{"./nothing/..."}, Env: testmod.GoEnv(t)})
	if err == nil && (len(res.Errors) == 0 || len(res.Changes) > 0) {
		t.Errorf("a pattern matching nothing: errors %v, changes %d", res.Errors, len(res.Changes))
	}
}

// TestOneBuildTestMain: a seal must hold in every build the tests run in
// (go test -race included). A TestMain behind a build constraint is not
// sealed, and no new TestMain is written where another build declares
// one.
func TestOneBuildTestMain(t *testing.T) {
	testmod.Short(t)
	dir := writeModule(t, "builds")
	res, err := seal.Run(&seal.Config{Dir: dir, Patterns: []string{"./..."}, Env: testmod.GoEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 {
		t.Errorf("changed %d files, want none: %v", len(res.Changes), res.Changes)
	}
	var got []string
	for _, e := range res.Errors {
		got = append(got, e.Error())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"racemain/main_test.go:10:1: seal: TestMain is in a file not every build compiles (//go:build !race)",
		"leftout/main_race_test.go:10:1: seal: another build of the package declares a TestMain",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("errors:\n%s\nwant one containing %q", all, want)
		}
	}
}
