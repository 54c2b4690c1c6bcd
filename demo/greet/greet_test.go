package greet

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestHelperProcess is the child: with GREET_CHILD=1 it prints the greeting
// for its last argument and exits.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("GREET_CHILD") != "1" {
		return
	}
	fmt.Print(Greeting(os.Args[len(os.Args)-1]))
	os.Exit(0)
}

func greet(name string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "--", name)
	cmd.Env = append(os.Environ(), "GREET_CHILD=1")
	return cmd
}

// TestGreetings runs two independent children, one after the other.
func TestGreetings(t *testing.T) {
	ann, err := greet("ann").Output()
	if err != nil {
		t.Fatalf("greet ann: %v", err)
	}
	bob, err := greet("bob").Output()
	if err != nil {
		t.Fatalf("greet bob: %v", err)
	}
	if string(ann) != "hello, ann" || string(bob) != "hello, bob" {
		t.Errorf("got %q and %q", ann, bob)
	}
}
