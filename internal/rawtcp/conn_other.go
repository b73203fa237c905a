//go:build !linux

package rawtcp

import "net"

// Wrap returns c: raw socket reads and writes (conn_linux.go) are Linux only.
func Wrap(c net.Conn) net.Conn { return c }
