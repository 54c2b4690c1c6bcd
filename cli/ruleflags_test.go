package cli_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/unflake/unflake/cli"
	"github.com/unflake/unflake/internal/testmod"
)

// pollModule is a module with one attempt-count poll of 100ms in all.
const pollModule = `
-- go.mod --
module example.com/poll

go 1.22
-- poll.go --
package poll

func Ready() bool { return true }
-- poll_test.go --
package poll

import (
	"testing"
	"time"
)

func TestReady(t *testing.T) {
	for i := 0; i < 10; i++ {
		if Ready() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !Ready() {
		t.Fatal("not ready")
	}
}
`

// TestRuleOptionsArePerRun runs the command with and without a rule option
// at the same time: each run sees its own value, and a run after them the
// default again (rule options used to be process-wide). attemptloop's
// deadline is unproven, so the runs show it with fix --diff --unproven.
func TestRuleOptionsArePerRun(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	check := func(flags []string, want string) {
		dir := testmod.Write(t, pollModule)
		var stdout, stderr bytes.Buffer
		args := append([]string{"-C", dir, "fix", "--diff", "--unproven", "--rules", "attemptloop"}, flags...)
		if code := cli.MainEnv(append(args, "./..."), testmod.GoEnv(t), &stdout, &stderr); code != 1 {
			t.Errorf("fix --diff --unproven %v: exit %d, want 1:\n%s", flags, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("fix --diff --unproven %v:\n%s\nwant %q", flags, stdout.String(), want)
		}
	}
	const (
		byDefault = "+\tfor deadline := time.Now().Add(10 * time.Second); "
		byFlag    = "+\tfor deadline := time.Now().Add(3 * time.Second); "
	)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(2)
		go func() { defer wg.Done(); check(nil, byDefault) }()
		go func() { defer wg.Done(); check([]string{"--poll-timeout=3s"}, byFlag) }()
	}
	wg.Wait()
	check(nil, byDefault)
}
