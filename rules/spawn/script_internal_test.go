package spawn

import "testing"

// TestOutsideMark: what a script's text says it reaches outside its
// working directory, or the lock it takes; devices, system programs and
// the interpreter line are no shared state.
func TestOutsideMark(t *testing.T) {
	for _, tc := range []struct{ text, line, what string }{
		{"lock=../.reposync.lock\nmkdir \"$lock\" || exit 75", "lock=../.reposync.lock", "takes a lock"},
		{"cache=../.resolve-cache\nmkdir -p \"$cache\"", "cache=../.resolve-cache", "reaches the parent directory"},
		{"cd .. && ls", "cd .. && ls", "reaches the parent directory"},
		{`cat "$HOME/.toolrc"`, `cat "$HOME/.toolrc"`, "reaches the home directory"},
		{"cp out ~/backup", "cp out ~/backup", "reaches the home directory"},
		{`echo x > "${TMPDIR:-/tmp}/x"`, `echo x > "${TMPDIR:-/tmp}/x"`, "reaches a directory the environment names"},
		{"echo x > /var/tmp/state", "echo x > /var/tmp/state", absolutePath},
		{"exec 9<\"$0\"\nflock -n 9 || exit 1", "flock -n 9 || exit 1", "takes a lock"},
		{"#!/bin/sh\necho ok > out 2>/dev/null\n/bin/echo done", "", ""},
		{"echo ok > out; ls ./a..b", "", ""},
		{"-o=out.txt", "", ""},
	} {
		line, what := outsideMark(tc.text)
		if line != tc.line || what != tc.what {
			t.Errorf("outsideMark(%q) = %q, %q; want %q, %q", tc.text, line, what, tc.line, tc.what)
		}
	}
}

// TestIsLockName: names that say they lock, word by word; a clock or a
// block does not.
func TestIsLockName(t *testing.T) {
	for name, want := range map[string]bool{
		"Flock": true, "FcntlFlock": true, "LockFileEx": true, "TryLock": true, "RLock": true,
		"flock": true, "lockfile": true, "fslock": true, "lockedfile": true, "pidfile": true,
		"Clock": false, "NewClock": false, "Block": false, "BlockSize": false, "clockwork": false, "Unblock": false,
	} {
		if got := isLockName(name); got != want {
			t.Errorf("isLockName(%q) = %v, want %v", name, got, want)
		}
	}
}
