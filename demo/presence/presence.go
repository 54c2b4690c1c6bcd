// Package presence tells a callback about each connection to a TCP
// server.
package presence

import "net"

// Server accepts connections on a local TCP port.
type Server struct {
	ln        net.Listener
	onConnect func()
}

// Listen starts a server on a free local port; onConnect is called, from
// the server's goroutine, for each connection it accepts.
func Listen(onConnect func()) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, onConnect: onConnect}
	go s.serve()
	return s, nil
}

func (s *Server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.onConnect()
		c.Close()
	}
}

// Addr returns the server's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close() error { return s.ln.Close() }
