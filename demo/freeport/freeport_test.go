package freeport

import (
	"bufio"
	"fmt"
	"net"
	"testing"
)

// The fixed port fails the test whenever something else holds it, a
// second copy of the suite included: unflake listens on port 0 and dials
// the listener's own address.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:18080")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go Serve(ln)

	conn, err := net.Dial("tcp", "127.0.0.1:18080")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintln(conn, "hello")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "HELLO\n" {
		t.Fatalf("reply = %q, %v", line, err)
	}
}
