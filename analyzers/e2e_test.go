package analyzers_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/unflake/unflake/internal/testmod"
)

// binDir holds the unflake binary the end-to-end tests build (TestMain
// makes and removes it).
var binDir string

var (
	buildOnce  sync.Once
	unflakeBin string
	buildErr   error
)

// unflakeCmd builds the command into binDir once, with the go command's
// environment of the test's own (testmod.GoEnv: the user's GOWORK or
// GOFLAGS cannot break the build), and returns its path.
func unflakeCmd(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		bin := filepath.Join(binDir, "unflake")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/unflake/unflake")
		cmd.Env = testmod.GoEnv(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building unflake: %v\n%s", err, out)
			return
		}
		unflakeBin = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return unflakeBin
}

// run runs name with args in dir and returns its stdout and stderr; a
// non-zero exit is not an error (findings exit 1).
func run(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
	}
	return out.String(), errb.String()
}

// demo copies the repository's demo module to a new directory.
func demo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "demo"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A finding as both drivers print it.
type finding struct{ pos, rule, message string }

// vetFindings parses the output of go vet -json: for each package, a
// "# pkg" line, then a JSON object of analyzers and their diagnostics.
// Positions are made relative to dir, as unflake check prints them.
func vetFindings(t *testing.T, dir, out string) (fs []finding, notes map[string]string) {
	t.Helper()
	notes = map[string]string{}
	var js strings.Builder
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "#") {
			js.WriteString(line)
		}
	}
	dec := json.NewDecoder(strings.NewReader(js.String()))
	for {
		var tree map[string]map[string]json.RawMessage
		if err := dec.Decode(&tree); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go vet -json: %v\n%s", err, out)
		}
		for _, byAnalyzer := range tree {
			for name, raw := range byAnalyzer {
				var diags []struct {
					Posn    string `json:"posn"`
					Message string `json:"message"`
					Related []struct {
						Message string `json:"message"`
					} `json:"related"`
				}
				if err := json.Unmarshal(raw, &diags); err != nil {
					t.Fatalf("analyzer %s: %s", name, raw) // {"error": ...}
				}
				for _, d := range diags {
					rel, err := filepath.Rel(dir, d.Posn)
					if err != nil {
						t.Fatal(err)
					}
					fs = append(fs, finding{rel, name, d.Message})
					for _, r := range d.Related {
						notes[strings.Split(rel, ":")[0]] = r.Message
					}
				}
			}
		}
	}
	return fs, notes
}

// checkFindings parses unflake check's text output, one finding a line:
// file:line:col: rule: message.
func checkFindings(t *testing.T, out string) []finding {
	t.Helper()
	var fs []finding
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ": ", 3)
		if len(parts) != 3 {
			t.Fatalf("unflake check printed %q", sc.Text())
		}
		fs = append(fs, finding{parts[0], parts[1], parts[2]})
	}
	return fs
}

func sortFindings(fs []finding) {
	slices.SortFunc(fs, func(a, b finding) int { return strings.Compare(a.pos+a.rule+a.message, b.pos+b.rule+b.message) })
}

// go vet -vettool=unflake reports what unflake check reports: the same
// positions, rule names and messages, for the same selection of rules.
func TestVetToolReportsWhatCheckReports(t *testing.T) {
	testmod.Slow(t)
	dir, env := demo(t), testmod.GoEnv(t)
	for _, c := range []struct {
		name                 string
		vet, check, patterns []string
	}{
		{"default", nil, nil, []string{"./..."}},
		// The opt-in rule, with the rule whose fix it follows.
		{"opt-in", []string{"-parallel", "-setenv"}, []string{"--rules", "parallel,setenv"}, []string{"./config", "./session"}},
		{"skip", []string{"-sleep=false"}, []string{"--skip", "sleep"}, []string{"./config", "./session"}},
		// A rule's option.
		{"option", []string{"-attemptloop.poll-timeout=30s"}, []string{"--poll-timeout=30s"}, []string{"./worker"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vetArgs := append(append([]string{"vet", "-vettool=" + unflakeCmd(t), "-json"}, c.vet...), c.patterns...)
			stdout, stderr := run(t, dir, env, "go", vetArgs...)
			vet, _ := vetFindings(t, dir, stdout+stderr)
			checkOut, _ := run(t, dir, env, unflakeCmd(t), append(append([]string{"check"}, c.check...), c.patterns...)...)
			check := checkFindings(t, checkOut)
			sortFindings(vet)
			sortFindings(check)
			if len(check) == 0 {
				t.Errorf("unflake check %v found nothing in the demo module", c.check)
			}
			if !slices.Equal(vet, check) {
				t.Errorf("go vet -vettool %v reports\n%v\nunflake check %v reports\n%v", c.vet, vet, c.check, check)
			}
		})
	}
}

// go fix -fixtool=unflake makes the changes unflake fix makes, but those
// that also change go.mod, which its text edits cannot: there the file is
// left as it was, and the finding says why.
func TestFixToolFixesWhatFixFixes(t *testing.T) {
	testmod.Slow(t)
	// spawn's fix adds golang.org/x/sync: the test's stand-in, in a module
	// cache of the test's (the fake must never reach the user's).
	env := testmod.ProxyEnv(t, []testmod.Module{testmod.Sync()})
	orig := demo(t)
	before := testmod.Snapshot(t, orig)
	goFix, unflakeFix := demo(t), demo(t)
	stdout, stderr := run(t, goFix, env, "go", "vet", "-vettool="+unflakeCmd(t), "-json", "./...")
	_, notes := vetFindings(t, goFix, stdout+stderr)

	// go vet and go fix -diff must see the module before go fix writes it:
	// one after another on purpose.
	//unflake:ignore spawn go fix writes the directory the runs before it read
	diffOut, _ := run(t, goFix, env, "go", "fix", "-fixtool="+unflakeCmd(t), "-diff", "./...")
	if _, stderr := run(t, goFix, env, "go", "fix", "-fixtool="+unflakeCmd(t), "./..."); stderr != "" {
		t.Errorf("go fix: %s", stderr)
	}
	run(t, unflakeFix, env, unflakeCmd(t), "fix", "./...")

	got, want := rel(t, goFix, testmod.Snapshot(t, goFix)), rel(t, unflakeFix, testmod.Snapshot(t, unflakeFix))
	old := rel(t, orig, before)
	var changed []string
	for path, w := range want {
		g := got[path]
		if g != old[path] {
			changed = append(changed, path)
		}
		switch {
		case g == w:
		case path == "go.mod" || path == "go.sum" || notes[path] != "":
			if g != old[path] {
				t.Errorf("%s: go fix changed a file whose fix needs go.mod", path)
			}
		default:
			t.Errorf("%s: go fix wrote\n%s\nunflake fix wrote\n%s", path, g, w)
		}
	}
	if len(changed) == 0 {
		t.Fatal("go fix changed nothing in the demo module")
	}
	// spawn, whose fix in greet adds golang.org/x/sync, is opt-in: with
	// the default rules neither unflake fix nor go fix touches go.mod.
	if want["go.mod"] != old["go.mod"] {
		t.Errorf("unflake fix with the default rules changed go.mod:\n%s", want["go.mod"])
	}
	// go fix -diff shows the files go fix changes.
	var shown []string
	for line := range strings.Lines(diffOut) {
		if name, ok := strings.CutPrefix(line, "--- "); ok {
			name = strings.TrimSuffix(strings.TrimSpace(name), " (old)")
			r, err := filepath.Rel(goFix, name)
			if err != nil {
				t.Fatal(err)
			}
			shown = append(shown, r)
		}
	}
	slices.Sort(shown)
	slices.Sort(changed)
	if !slices.Equal(shown, changed) {
		t.Errorf("go fix -diff shows %v, go fix changes %v", shown, changed)
	}
}

// rel keys a snapshot by paths relative to dir.
func rel(t *testing.T, dir string, snap map[string]string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for path, s := range snap {
		r, err := filepath.Rel(dir, path)
		if err != nil {
			t.Fatal(err)
		}
		m[r] = s
	}
	return m
}
