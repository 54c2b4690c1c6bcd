package rewrite_test

import (
	"go/ast"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/unflake/unflake/internal/testmod"
	"github.com/unflake/unflake/rewrite"
	"github.com/unflake/unflake/rule"
)

// cacheModule is a module whose finding depends on a file of another
// package: the test sleeps for dep.D, and the finding says how long.
const cacheModule = `
-- go.mod --
module example.com/m

go 1.22
-- dep/dep.go --
package dep

import "time"

const D = 5 * time.Millisecond
-- b/b.go --
package b
-- b/b_test.go --
package b

import (
	"testing"
	"time"

	"example.com/m/dep"
)

func TestB(t *testing.T) { time.Sleep(dep.D) }
`

// sleepFor is a test rule that reports each time.Sleep with the constant
// it sleeps for, and fixes it to time.Sleep(0); its flag "loud" adds a
// word to the message.
func sleepFor() *rule.Rule {
	r := sleepZero("sleepfor", zero)
	loud := rule.BoolOption("loud", false, "shout")
	r.Flags = rule.Flags(r.Name, loud)
	zeroRun := r.Run
	r.Run = func(pass *rule.Pass) error {
		report := pass.Report
		pass.Report = func(d rule.Diagnostic) {
			ast.Inspect(pass.Files[0], func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok && call.Pos() == d.Pos {
					if tv := pass.TypesInfo.Types[call.Args[0]]; tv.Value != nil {
						d.Message += " " + types.ExprString(call.Args[0]) + "=" + tv.Value.String()
					}
				}
				return true
			})
			if loud.Get(pass) {
				d.Message += " LOUD"
			}
			report(d)
		}
		return zeroRun(pass)
	}
	return r
}

// cachedRun runs sleepFor on dir with the result cache in cache.
func cachedRun(t *testing.T, cfg rewrite.Config) *rewrite.Result {
	t.Helper()
	if cfg.Patterns == nil {
		cfg.Patterns = []string{"./..."}
	}
	res, err := rewrite.Run(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func messages(res *rewrite.Result) string {
	var b strings.Builder
	for _, f := range res.Findings {
		b.WriteString(f.Message + "\n")
	}
	return b.String()
}

// sameResult fails unless a cached result equals the computed one,
// unexported fields (the matched code behind Finding.Site) included.
func sameResult(t *testing.T, got, want *rewrite.Result) {
	t.Helper()
	if !reflect.DeepEqual(got.Findings, want.Findings) || !reflect.DeepEqual(got.Changes, want.Changes) ||
		got.Packages != want.Packages || got.Loaded != want.Loaded {
		t.Errorf("cached result differs:\n got %+v\nwant %+v", got, want)
	}
	for i := range got.Findings {
		if got.Findings[i].Site() != want.Findings[i].Site() {
			t.Errorf("finding %d: site %v, want %v", i, got.Findings[i].Site(), want.Findings[i].Site())
		}
	}
}

// noTempFiles fails if the cache directory holds anything but entries
// and the trim mark.
func noTempFiles(t *testing.T, cache string) {
	t.Helper()
	err := filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() != "trim" && !strings.HasSuffix(d.Name(), "-r") && !strings.HasSuffix(d.Name(), "-m") {
			t.Errorf("stray file in the cache: %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCacheHit(t *testing.T) {
	testmod.Short(t)
	dir := testmod.Write(t, cacheModule)
	cache := t.TempDir()
	r := sleepFor()
	env := testmod.GoEnv(t) // one environment: the cache key holds it
	first := cachedRun(t, rewrite.Config{Dir: dir, Env: env, Rules: []*rule.Rule{r}, Cache: cache})
	if first.Cached {
		t.Fatal("first run came from an empty cache")
	}
	if got, want := messages(first), "sleeps dep.D=5000000\n"; got != want {
		t.Fatalf("findings:\n%s\nwant:\n%s", got, want)
	}
	if len(first.Changes) != 1 {
		t.Fatalf("changes: %d, want 1", len(first.Changes))
	}
	second := cachedRun(t, rewrite.Config{Dir: dir, Env: env, Rules: []*rule.Rule{r}, Cache: cache})
	if !second.Cached {
		t.Fatal("second run over unchanged code was not a cache hit")
	}
	sameResult(t, second, first)
	noTempFiles(t, cache)

	// Without a cache directory nothing is cached.
	if res := cachedRun(t, rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Rules: []*rule.Rule{r}}); res.Cached {
		t.Error("a run without Config.Cache came from the cache")
	}
}

// TestCacheInvalidation changes one input at a time and checks that the
// next run is computed again, with the result the change calls for.
func TestCacheInvalidation(t *testing.T) {
	testmod.Slow(t)
	type change struct {
		name     string
		edit     func(t *testing.T, dir string, cfg *rewrite.Config)
		want     string   // the findings after the change
		stays    bool     // the change must not invalidate
		patterns []string // default ./...
		goenv    string   // a go env file (GOENV) for the run, outside the module
		// refused: the run after the change refuses a file (fix would
		// not write it), so it is not stored
		refused bool
	}
	write := func(rel, old, new string) func(t *testing.T, dir string, cfg *rewrite.Config) {
		return func(t *testing.T, dir string, cfg *rewrite.Config) {
			path := filepath.Join(dir, rel)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), old) {
				t.Fatalf("%s has no %q", rel, old)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(src), old, new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	changes := []change{
		{name: "test file", edit: write("b/b_test.go", "time.Sleep(dep.D)", "time.Sleep(dep.D); time.Sleep(dep.D)"),
			want: "sleeps dep.D=5000000\nsleeps dep.D=5000000\n"},
		{name: "dependency's file", edit: write("dep/dep.go", "5 *", "7 *"), want: "sleeps dep.D=7000000\n"},
		{name: "new file in a dependency", edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			write("dep/dep.go", "const D = 5 * time.Millisecond", "")(t, dir, cfg)
			if err := os.WriteFile(filepath.Join(dir, "dep", "d.go"), []byte("package dep\n\nconst D = 9\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, want: "sleeps dep.D=9\n"},
		{name: "go env -w settings", goenv: "goenv", edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			for _, kv := range cfg.Env {
				if path, ok := strings.CutPrefix(kv, "GOENV="); ok {
					if err := os.WriteFile(path, []byte("GOPRIVATE=example.com/x\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}, want: "sleeps dep.D=5000000\n"},
		{name: "file added to a dependency", patterns: []string{"./b"}, edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			if err := os.WriteFile(filepath.Join(dir, "dep", "e.go"), []byte("package dep\n\nconst E = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, want: "sleeps dep.D=5000000\n"},
		{name: "new package", edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			if err := os.MkdirAll(filepath.Join(dir, "c"), 0o755); err != nil {
				t.Fatal(err)
			}
			src := "package c\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestC(t *testing.T) { time.Sleep(3) }\n"
			if err := os.WriteFile(filepath.Join(dir, "c", "c_test.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}, want: "sleeps dep.D=5000000\nsleeps 3=3\n"},
		{name: "go.mod", edit: write("go.mod", "go 1.22", "go 1.23"), want: "sleeps dep.D=5000000\n"},
		{name: "rule flag", edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			if err := cfg.Options.Set(cfg.Rules[0], "loud", "true"); err != nil {
				t.Fatal(err)
			}
		}, want: "sleeps dep.D=5000000 LOUD\n"},
		{name: "-run", edit: func(t *testing.T, dir string, cfg *rewrite.Config) { cfg.Run = "TestNothing" }, want: ""},
		{name: "build tags", edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			write("b/b_test.go", "package b", "//go:build !skip\n\npackage b")(t, dir, cfg)
			cfg.Tags = []string{"skip"}
		}, want: ""},
		{name: "environment", edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			write("b/b_test.go", "package b", "//go:build !skip\n\npackage b")(t, dir, cfg)
			cfg.Env = append(cfg.Env[:len(cfg.Env):len(cfg.Env)], "GOFLAGS=-tags=skip")
		}, want: ""},
		{name: "file made read-only", edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			if err := os.Chmod(filepath.Join(dir, "b", "b_test.go"), 0o444); err != nil {
				t.Fatal(err)
			}
		}, want: "sleeps dep.D=5000000\n", refused: true},
		{name: "modification time only", edit: func(t *testing.T, dir string, cfg *rewrite.Config) {
			later := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			for _, f := range []string{"b/b_test.go", "dep/dep.go"} {
				if err := os.Chtimes(filepath.Join(dir, f), later, later); err != nil {
					t.Fatal(err)
				}
			}
		}, want: "sleeps dep.D=5000000\n", stays: true},
	}
	for _, c := range changes {
		for _, aged := range []bool{false, true} {
			name := c.name
			if aged {
				name += " (fast path)"
			}
			t.Run(name, func(t *testing.T) {
				dir := testmod.Write(t, cacheModule)
				if aged {
					age(t, dir)
				}
				cache := t.TempDir()
				cfg := rewrite.Config{Dir: dir, Patterns: c.patterns, Rules: []*rule.Rule{sleepFor()}, Cache: cache, Env: testmod.GoEnv(t)}
				if c.goenv != "" {
					cfg.Env = testmod.GoEnv(t, "GOENV="+filepath.Join(t.TempDir(), c.goenv))
				}
				if res := cachedRun(t, cfg); res.Cached {
					t.Fatal("first run came from an empty cache")
				}
				listed := rewrite.GraphListings()
				if res := cachedRun(t, cfg); !res.Cached {
					t.Fatal("second run was not a cache hit")
				}
				if fast := rewrite.GraphListings() == listed; fast != aged {
					t.Fatalf("second run took the fast path: %v, want %v", fast, aged)
				}
				c.edit(t, dir, &cfg)
				res := cachedRun(t, cfg)
				if res.Cached != c.stays {
					t.Fatalf("after the change: Cached = %v, want %v", res.Cached, c.stays)
				}
				if got := messages(res); got != c.want {
					t.Errorf("findings after the change:\n%s\nwant:\n%s", got, c.want)
				}
				// The run without the cache agrees.
				nc := cfg
				nc.Cache = ""
				if got := messages(cachedRun(t, nc)); got != c.want {
					t.Errorf("findings without the cache:\n%s\nwant:\n%s", got, c.want)
				}
				if again := cachedRun(t, cfg); again.Cached == c.refused {
					t.Errorf("the run after the change: stored = %v, want %v", again.Cached, !c.refused)
				}
				noTempFiles(t, cache)
			})
		}
	}
}

// age sets the modification time of every file and directory under dir
// an hour back: the manifest trusts no modification of the last moments.
func age(t *testing.T, dir string) {
	t.Helper()
	then := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(path, then, then)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCacheCorruptEntry damages the stored entry in several ways: each
// run is computed again, with the same result.
func TestCacheCorruptEntry(t *testing.T) {
	testmod.Slow(t)
	damages := map[string]func([]byte) []byte{
		"empty":       func([]byte) []byte { return nil },
		"truncated":   func(b []byte) []byte { return b[:len(b)/2] },
		"flipped bit": func(b []byte) []byte { b[len(b)-5] ^= 1; return b },
		"not gob":     func(b []byte) []byte { return append(b[:32:32], "garbage"...) },
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			dir := testmod.Write(t, cacheModule)
			cache := t.TempDir()
			cfg := rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Rules: []*rule.Rule{sleepFor()}, Cache: cache}
			want := cachedRun(t, cfg)
			entries, _ := filepath.Glob(filepath.Join(cache, "*", "*-r"))
			if len(entries) != 1 {
				t.Fatalf("cache entries: %v, want one", entries)
			}
			data, err := os.ReadFile(entries[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(entries[0], damage(data), 0o644); err != nil {
				t.Fatal(err)
			}
			got := cachedRun(t, cfg)
			if got.Cached {
				t.Fatal("a damaged entry was used")
			}
			sameResult(t, got, want)
			if again := cachedRun(t, cfg); !again.Cached {
				t.Error("the damaged entry was not replaced")
			}
		})
	}
}

// TestCacheNotUsed: runs limited by a function, runs that verify, and
// runs with errors are never stored.
func TestCacheNotUsed(t *testing.T) {
	testmod.Slow(t)
	t.Run("Only", func(t *testing.T) {
		dir := testmod.Write(t, cacheModule)
		cfg := rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Rules: []*rule.Rule{sleepFor()}, Cache: t.TempDir(), Only: func(string) bool { return true }}
		cachedRun(t, cfg)
		if cachedRun(t, cfg).Cached {
			t.Error("a run with Only came from the cache")
		}
	})
	t.Run("Decide", func(t *testing.T) {
		dir := testmod.Write(t, cacheModule)
		cfg := rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Rules: []*rule.Rule{sleepFor()}, Cache: t.TempDir(),
			Decide: func(rewrite.Site) rewrite.Decision { return rewrite.Decision{} }}
		cachedRun(t, cfg)
		if cachedRun(t, cfg).Cached {
			t.Error("a run with Decide came from the cache")
		}
	})
	t.Run("errors", func(t *testing.T) {
		dir := testmod.Write(t, cacheModule, "-- c/c_test.go --\npackage c\n\n// Sleep\nvar x int = \"s\"\n")
		cfg := rewrite.Config{Dir: dir, Env: testmod.GoEnv(t), Rules: []*rule.Rule{sleepFor()}, Cache: t.TempDir()}
		if res := cachedRun(t, cfg); len(res.Errors) == 0 {
			t.Fatal("no error for the broken package")
		}
		if res := cachedRun(t, cfg); res.Cached || len(res.Errors) == 0 {
			t.Errorf("a run with errors: Cached = %v, errors %v", res.Cached, res.Errors)
		}
	})
}
