package sleep

import (
	"net/http/httptest"
	"testing"
	"time"
)

// A bubble cannot hold a real server: reported, not fixed, no suggested
// fix.
func TestServer(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	time.Sleep(10 * time.Millisecond) // want `time.Sleep\(10ms\) waits on the real clock; not fixed: the test starts a real server`
}
