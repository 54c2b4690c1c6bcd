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

// noStartup and noTimed are the Checked entries of the start-up hazards.
const (
	noStartup = "a buffered signal channel, and the child reads neither the signal channel nor what the signal cancels between installing its handler and waiting for the signal"
	noTimed   = "the child runs no timer, ticker, sleep or deadline shorter than the sleep before it waits for the signal"
)

// windowNoCode and windowNoLook begin the Checked entries of the window
// hazard: which side of it the fix excluded.
const (
	windowNoCode = "the child runs no code under test before it waits for the signal"
	windowNoLook = "the test looks at nothing of the child after the signal"
)

// noBound is the Checked entry of the timing hazard.
const noBound = "no start-up time bound in the comments next to the sleep, the test's names or the failure messages after the sleep, and no measurement of time by the test or its helper"

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
	time.Sleep(100 * time.Millisecond) NOTE
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	CHECK
}
`

// TestCheckedSync: a fix names the side of the sync-point hazard it
// excluded; goldens show findings, not the changes a fix carries.
func TestCheckedSync(t *testing.T) {
	for _, tc := range []struct{ name, after, check, want, window string }{
		{"child makes nothing", "", `os.Stat("pid")`, "the child makes nothing between installing its handler and waiting for the signal", windowNoCode},
		{"test checks nothing", `os.WriteFile("pid", nil, 0o644)`, "", "the test checks nothing the child makes after start-up", windowNoLook},
		{"both", `os.WriteFile("pid", nil, 0o644)`, `os.Stat("pid")`, "", ""},
		{"polls the signal", "select {\ncase <-c:\n\tos.Exit(1)\ndefault:\n}", "", "", ""},
		{"ticks in the window", "time.NewTicker(time.Millisecond)", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := helper
			for k, v := range map[string]string{"AFTER": tc.after, "CHECK": tc.check, "NOTE": ""} {
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
				got := diags[0].Fix.Changes[0].Checked
				// A fix whose test looks at the child after the signal
				// has checked the package initialisation too.
				inits := !strings.HasPrefix(tc.window, "the test looks at nothing")
				if len(got) != 12+btoi(inits) || !slices.Equal(got[:5], []string{tc.want, oneNotify, noBound, noStartup, noTimed}) || !strings.HasPrefix(got[5], "no build the analysis does not type") || !strings.HasPrefix(got[6], "the test sends the child one signal at a time") || !strings.HasPrefix(got[7], "the child starts no process") || !strings.HasPrefix(got[8], "the child takes no copy of the environment") || !strings.HasPrefix(got[9], "the test starts no goroutine") || !strings.HasPrefix(got[10], "the child keeps the PWD it had") || !strings.HasPrefix(got[11], tc.window) || inits && !strings.HasPrefix(got[12], "no package initialisation") {
					t.Errorf("checked %q, want %q and %q", got, tc.want, tc.window)
				}
			}
		})
	}
}

// TestTimingBound: a sleep the test's words make a window (a bound in the
// comment next to it, the test's name, a failure message after it) or
// that a measurement of time spans stays; a guess is replaced.
func TestTimingBound(t *testing.T) {
	for _, tc := range []struct{ name, note, check, test, want string }{
		{"guess", "// give the child time to install its handler", "", "TestStop", ""},
		{"guess with a duration", "// 100ms is plenty for the child to install its handler", "", "TestStop", ""},
		{"within in the comment", "// the child must be up within 1.5s", "", "TestStop", `the comment at x_test.go:29 states a time bound ("within 1.5s")`},
		{"obligation and duration", "// the daemon has to be up in 100ms", "", "TestStop", `"in 100ms"`},
		{"under in the comment", "// start-up takes under 200ms", "", "TestStop", `"under 200ms"`},
		{"name", "", "", "TestStopWithin2s", `the test's name TestStopWithin2s states a time bound ("Within")`},
		{"name with a duration", "", "", "TestStartsIn500ms", `("500ms")`},
		{"name with a speed", "", "", "TestFastStart", `("Fast")`},
		{"message", "", `t.Fatal("the child was not up in time")`, "TestStop", `the failure message at x_test.go:32 states a time bound ("in time")`},
		{"measured", "", `if time.Since(time.Now()) > time.Second { t.Fatal("slow") }`, "TestStop", "the test measures time (at x_test.go:32)"},
		{"compared value", "", `if os.Getenv("MODE") == "deadline" { t.Fatal("x") }`, "TestStop", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(helper, "func TestStop(", "func "+tc.test+"(", 1)
			for k, v := range map[string]string{"AFTER": "", "CHECK": tc.check, "NOTE": tc.note} {
				src = strings.Replace(src, k, v, 1)
			}
			diags := ruletest.Run(t, readiness.Rule, effect.None, ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": src}})
			if len(diags) != 1 {
				t.Fatalf("got %d findings, want 1: %+v", len(diags), diags)
			}
			switch {
			case tc.want == "" && diags[0].Fix == nil:
				t.Errorf("not fixed (%s), want fixed", diags[0].NotFixed)
			case tc.want != "" && diags[0].Fix != nil:
				t.Errorf("fixed, want not fixed for %s", tc.want)
			case tc.want != "" && !strings.Contains(diags[0].NotFixed, tc.want):
				t.Errorf("not fixed: %s\nwant the reason to hold %s", diags[0].NotFixed, tc.want)
			}
		})
	}
}

// TestWindow: the sleep was a window in which the child ran on
// unsignalled; a child that runs code under test before its steady wait
// (which some implementation may make exit, print or write in that
// window), or that is killed while its own start-up goes on after the
// readiness line, keeps its sleep when the test looks at it after the
// signal.
func TestWindow(t *testing.T) {
	const code = `package x

import "fmt"

func Setup()           {}
func Serve()           {}
func Shutdown()        { fmt.Println("bye") }
var Hook = func() {}
`
	for _, tc := range []struct{ name, before, after, signal, check, want string }{
		{"nothing of the code", "", "", "", `t.Log("done")`, ""},
		{"code after the signal only", "", "", "", `Shutdown()`, ""},
		{"setup before the handler", "Setup()", "", "", `t.Log("done")`, "the child runs code under test before it waits for the signal (x.Setup at x_test.go:17)"},
		{"setup, nothing looked at", "Setup()", "", "", "", ""},
		{"serve after the handler", "", "go Serve()", "", `t.Log("done")`, "(x.Serve at x_test.go:20)"},
		{"through a test helper", "", "start()", "", `t.Log("done")`, "(x.Setup, through start at x_test.go:37)"},
		{"a function value", "", "Hook()", "", `t.Log("done")`, "a call of the function value Hook"},
		{"std work before a kill", "", `fmt.Println("serving")`, "cmd.Process.Kill()", `t.Log("done")`, "the test kills the child (cmd.Process.Kill() at x_test.go:32), which no handler sees"},
		// Printing after the handler is start-up work the signal may beat
		// (a goroutine of the child that exits on it, in some variant):
		// the readiness point moves only where nothing runs between the
		// handler and the wait.
		{"std work before a handled signal", "", `fmt.Println("serving")`, "", `t.Log("done")`, "the child goes on with its start-up after installing its handler (fmt.Println at x_test.go:20)"},
		{"nothing before a handled signal", "", `_ = 1`, "", `t.Log("done")`, ""},
		{"in a loop", "Setup()", "", "for i := 0; i < 1; i++ { cmd.Process.Signal(syscall.SIGTERM) }", "", "the statement holding the signal at x_test.go:32"},
		{"the signal's result", "Setup()", "", "t.Log(cmd.Process.Signal(syscall.SIGTERM))", "", "the signal's result at x_test.go:32"},
		{"the signal's error checked", "Setup()", "", "if err := cmd.Process.Signal(syscall.SIGTERM); err != nil { t.Fatal(err) }", "", "the statement holding the signal at x_test.go:32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(helper, "import (", "import (\n\t\"fmt\"", 1)
			src = strings.Replace(src, "\tc := make(chan os.Signal, 1)\n", "\t"+tc.before+"\n\tc := make(chan os.Signal, 1)\n", 1)
			if tc.signal != "" {
				src = strings.Replace(src, "cmd.Process.Signal(syscall.SIGTERM)", tc.signal, 1)
			}
			src += "\nfunc start() { Setup() }\n\nvar _ = fmt.Sprint\n"
			for k, v := range map[string]string{"AFTER": tc.after, "CHECK": tc.check, "NOTE": ""} {
				src = strings.Replace(src, k, v, 1)
			}
			diags := ruletest.Run(t, readiness.Rule, effect.None, ruletest.Package{Path: "example.com/m/x", Files: map[string]string{"x_test.go": src, "x.go": code}})
			if len(diags) != 1 {
				t.Fatalf("got %d findings, want 1: %+v", len(diags), diags)
			}
			switch {
			case tc.want == "" && diags[0].Fix == nil:
				t.Errorf("not fixed (%s), want fixed", diags[0].NotFixed)
			case tc.want != "" && diags[0].Fix != nil:
				t.Errorf("fixed, want not fixed for %s", tc.want)
			case tc.want != "" && !strings.Contains(diags[0].NotFixed, tc.want):
				t.Errorf("not fixed: %s\nwant the reason to hold %s", diags[0].NotFixed, tc.want)
			}
		})
	}
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
