// Package freeport is the demo's line-based echo service.
package freeport

import (
	"bufio"
	"net"
	"strings"
)

// Serve answers each line of one connection with the line in upper case.
func Serve(ln net.Listener) error {
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if _, err := c.Write([]byte(strings.ToUpper(sc.Text()) + "\n")); err != nil {
			return err
		}
	}
	return sc.Err()
}
