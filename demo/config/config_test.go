package config

import (
	"os"
	"strings"
	"testing"
)

// sealed are the variables the package's tests depend on: TestMain empties
// them once, so a developer's environment cannot change what the tests see.
var sealed = []string{"APP_MODE", "APP_HOSTS", "XDG_CONFIG_HOME"}

func TestMain(m *testing.M) {
	for _, k := range sealed {
		os.Setenv(k, "")
	}
	os.Exit(m.Run())
}

// The clear repeats what TestMain did, but Load reads APP_MODE: the
// clear's restore would undo a write of it (an export, a default written
// back) that TestMain's seal does not, so unflake keeps it, and says why.
func TestLoadDefaults(t *testing.T) {
	t.Setenv("APP_MODE", "")
	c := Load()
	if c.Mode != "dev" || len(c.Hosts) != 0 {
		t.Fatalf("Load() = %+v, want the defaults", c)
	}
}

func TestLoadMode(t *testing.T) {
	t.Setenv("APP_MODE", "prod")
	if got := Load().Mode; got != "prod" {
		t.Fatalf("mode = %q, want prod", got)
	}
}

// The clear repeats what TestMain did, and no code of the module reads or
// writes XDG_CONFIG_HOME (the standard library does): it keeps the test
// sequential for nothing, and unflake removes it.
func TestDirUnderHome(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "")
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory:", err)
	}
	dir, err := Dir()
	if err != nil || !strings.HasPrefix(dir, home) {
		t.Fatalf("Dir() = %q, %v; want a directory under %s", dir, err, home)
	}
}

// A pure function: with --rules parallel unflake makes this test parallel.
func TestSplitHosts(t *testing.T) {
	got := SplitHosts(" a, ,b ")
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("SplitHosts = %q", got)
	}
}
