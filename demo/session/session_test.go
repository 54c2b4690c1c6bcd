package session

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The sleep lets the session expire: 1.5s of real waiting that synctest's
// virtual clock makes instant.
func TestSessionExpires(t *testing.T) {
	s := NewStore(time.Second)
	s.Touch("abc")
	time.Sleep(500 * time.Millisecond)
	if !s.Valid("abc") {
		t.Fatal("session expired early")
	}
	time.Sleep(time.Second)
	if s.Valid("abc") {
		t.Fatal("session still valid after the idle period")
	}
}

// The same check through an HTTP server only the test talks to: fix reports
// the sleep; fix --verify may serve it in memory (net.Pipe) in a bubble.
func TestHandlerRejectsExpired(t *testing.T) {
	s := NewStore(100 * time.Millisecond)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	s.Touch("abc")
	time.Sleep(150 * time.Millisecond)
	req, err := http.NewRequest("GET", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Token", "abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
}
