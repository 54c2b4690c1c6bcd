package freeport

import "net"

// Echo answers one line on each connection of ln.
func Echo(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
