package config

import (
	"os"
	"testing"
)

// sealed are the variables the package reads: TestMain empties them once,
// so a developer's environment cannot change what the tests see.
var sealed = []string{"APP_MODE", "APP_HOSTS"}

func TestMain(m *testing.M) {
	for _, k := range sealed {
		os.Setenv(k, "")
	}
	os.Exit(m.Run())
}

// The clear repeats what TestMain did, and it keeps the test sequential:
// unflake removes it.
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

// A pure function: with --rules parallel unflake makes this test parallel.
func TestSplitHosts(t *testing.T) {
	got := SplitHosts(" a, ,b ")
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("SplitHosts = %q", got)
	}
}
