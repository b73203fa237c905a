//go:build !linux

package h2

import "net"

// wrapRawIO returns c: raw socket reads and writes (rawio_linux.go) are Linux only.
func wrapRawIO(c net.Conn) net.Conn { return c }
