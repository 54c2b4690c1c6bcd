//go:build unix

package cli_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/unflake/unflake/cli"
	"github.com/unflake/unflake/internal/testmod"
)

// TestMain lets the tests run unflake as a child process (the helper
// process pattern): with UNFLAKE_CLI_MAIN=1 the test binary is unflake.
func TestMain(m *testing.M) {
	if os.Getenv("UNFLAKE_CLI_MAIN") == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// blocking is a module whose test, before the rewrite, tells its pid and
// its t.TempDir through the named pipe $UNFLAKE_FIFO and then blocks
// forever. testscope's fix of its own context is one verification runs
// (every fix it keeps runs, proven or not), so the test runs.
const blocking = `
-- go.mod --
module example.com/m

go 1.25
-- a/a_test.go --
package a

import (
	"context"
	"fmt"
	"os"
	"testing"
)

func TestA(t *testing.T) {
	f, err := os.OpenFile(os.Getenv("UNFLAKE_FIFO"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, os.Getpid(), t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ctx.Err(); err != nil {
		t.Fatal(err)
	}
	select {}
}
`

// On SIGTERM during verification, unflake kills the test processes it
// started, removes its temporary directory, and exits 143. No timing: the
// test process holds a named pipe open, and the pipe reads EOF only when
// it is gone.
func TestVerifySIGTERM(t *testing.T) {
	testmod.Slow(t)
	t.Parallel()
	dir := testmod.Write(t, blocking)
	tmp := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-C", dir, "fix", "--verify", "--rules", "testscope", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = testmod.GoEnv(t, "UNFLAKE_CLI_MAIN=1", "UNFLAKE_FIFO="+fifo, "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the test process opens it
		if err != nil {
			t.Error(err)
			close(opened)
			return
		}
		opened <- f
	}()
	go func() { exited <- cmd.Wait() }()
	var f *os.File
	select {
	case f = <-opened:
	case err := <-exited:
		// Unblock the reader before failing.
		w, _ := os.OpenFile(fifo, os.O_WRONLY, 0)
		w.Close()
		t.Fatalf("unflake ended before the test ran: %v\n%s", err, stderr.String())
	}
	if f == nil {
		t.FailNow()
	}
	defer f.Close()
	r := bufio.NewReader(f)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the test's pid: %v", err)
	}
	_, testTemp, _ := strings.Cut(strings.TrimSpace(line), " ")
	if !strings.HasPrefix(testTemp, tmp+string(filepath.Separator)+"unflake-verify-") {
		t.Errorf("the test's t.TempDir %s is not under verification's own temporary directory", testTemp)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Errorf("exit: %v, want status 143\n%s", err, stderr.String())
	}
	// The summary is printed, and says what became of the fixes.
	for _, want := range []string{
		"unflake: no file changed",
		"stopped before verification ended",
		"unflake: stopped by terminated; the test processes were killed and their temporary files removed; no fix was verified before it; no file changed",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	// The pipe reads EOF once every writer is gone: the test process is.
	if _, err := io.ReadAll(r); err != nil {
		t.Errorf("reading the pipe: %v", err)
	}
	// The killed test could not remove its own temporary directory.
	if _, err := os.Stat(testTemp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed test's t.TempDir is left behind: %v", err)
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "unflake-verify-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
