package readiness

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestHelperProcess is the daemon: with DAEMON_CHILD=1 it installs its
// handler, and once asked to stop it drains and exits 0.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("DAEMON_CHILD") != "1" {
		return
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, Signals...)
	<-stop
	os.Exit(Drain())
}

// TestGracefulStop sends SIGTERM and expects a clean exit.
func TestGracefulStop(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "DAEMON_CHILD=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Give the child time to install its handler.
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the daemon did not stop cleanly: %v", err)
	}
}
