package presence

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// The sleep guesses how long the server takes to see the connection. A
// bubble cannot hold the real network, but the check fails until the
// callback has run, so unflake polls for it instead: a slow machine gets
// 10s. The check asks for exactly one connection, so the poll then keeps
// the rest of the 100ms window: a second connection inside it still
// fails the test.
func TestConnectIsSeen(t *testing.T) {
	var seen atomic.Int64
	s, err := Listen(func() { seen.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(100 * time.Millisecond) // let the server see the connection
	if seen.Load() != 1 {
		t.Fatalf("seen %d connections, want 1", seen.Load())
	}
}
