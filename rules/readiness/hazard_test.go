package readiness_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/unflake/unflake/internal/ruletest"
	"github.com/unflake/unflake/rule/effect"
	"github.com/unflake/unflake/rules/readiness"
)

// oneNotify is the Checked entry of the handler and children hazards.
const oneNotify = "one signal.Notify in the child, for the signal the test sends, and one child started before the sleep"

const helper = `package x

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

func TestHelperProcess(t *testing.T) {
	if os.Getenv("CHILD") != "1" {
		return
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	AFTER
	<-c
	os.Exit(0)
}

func TestStop(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "CHILD=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	CHECK
}
`

// TestCheckedSync: a fix names the side of the sync-point hazard it
// excluded; goldens show findings, not the changes a fix carries.
func TestCheckedSync(t *testing.T) {
	for _, tc := range []struct{ name, after, check, want string }{
		{"child makes nothing", "", `os.Stat("pid")`, "the child makes nothing between installing its handler and waiting for the signal"},
		{"test checks nothing", `os.WriteFile("pid", nil, 0o644)`, "", "the test checks nothing the child makes after start-up"},
		{"both", `os.WriteFile("pid", nil, 0o644)`, `os.Stat("pid")`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := helper
			for k, v := range map[string]string{"AFTER": tc.after, "CHECK": tc.check} {
				src = strings.Replace(src, k, v, 1)
			}
			diags := ruletest.Run(t, readiness.Rule, effect.None, ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": src}})
			if len(diags) != 1 {
				t.Fatalf("got %d findings, want 1: %+v", len(diags), diags)
			}
			switch {
			case tc.want == "" && diags[0].Fix != nil:
				t.Errorf("fixed, want not fixed")
			case tc.want != "" && diags[0].Fix == nil:
				t.Errorf("not fixed (%s), want fixed", diags[0].NotFixed)
			case tc.want != "":
				if got := diags[0].Fix.Changes[0].Checked; !slices.Equal(got, []string{tc.want, oneNotify}) {
					t.Errorf("checked %q, want %q", got, tc.want)
				}
			}
		})
	}
}
