package freeport

import (
	"net"
	"testing"
)

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:18080") // want `net.Listen on the fixed address "127.0.0.1:18080" .*; not fixed: address change: .*fix --diff --unproven shows it for review`
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go Echo(ln)

	conn, err := net.Dial("tcp", "127.0.0.1:18080")
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// Nope: port 0 is already a port the system picks.
func TestFree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}
