// Package session keeps login sessions that expire after a period of
// inactivity; its tests wait on the real clock, which unflake's sleep rule
// replaces with synctest's virtual clock.
package session

import (
	"net/http"
	"sync"
	"time"
)

// Store holds sessions by token.
type Store struct {
	mu      sync.Mutex
	idle    time.Duration
	expires map[string]time.Time
}

// NewStore returns a store whose sessions expire after idle without use.
func NewStore(idle time.Duration) *Store {
	return &Store{idle: idle, expires: map[string]time.Time{}}
}

// Touch starts or renews the session token.
func (s *Store) Touch(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expires[token] = time.Now().Add(s.idle)
}

// Valid reports whether the session token is live.
func (s *Store) Valid(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.expires[token]
	return ok && time.Now().Before(exp)
}

// Handler answers 200 for a live session (the token in the X-Token
// header) and 401 otherwise.
func (s *Store) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Valid(r.Header.Get("X-Token")) {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
}
