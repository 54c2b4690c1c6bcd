package greet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// greet runs the child in a view of its own: a directory whose parent is
// its own too, and temporary, home, cache and config directories no other
// child has.
func greet(root, name string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "--", name)
	cmd.Dir = filepath.Join(root, "work")
	cmd.Env = append(os.Environ(), "GREET_CHILD=1", "TMPDIR="+root, "HOME="+root, "XDG_CACHE_HOME="+root, "XDG_CONFIG_HOME="+root)
	return cmd
}

// sandbox makes a child's root and its working directory.
func sandbox(t *testing.T) string {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestGreetings runs two independent children, one after the other.
func TestGreetings(t *testing.T) {
	annRoot, bobRoot := sandbox(t), sandbox(t)
	ann, err := greet(annRoot, "ann").Output()
	if err != nil {
		t.Fatalf("greet ann: %v", err)
	}
	bob, err := greet(bobRoot, "bob").Output()
	if err != nil {
		t.Fatalf("greet bob: %v", err)
	}
	if string(ann) != "hello, ann" || string(bob) != "hello, bob" {
		t.Errorf("got %q and %q", ann, bob)
	}
}
