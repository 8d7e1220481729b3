//go:build !linux

package dataplane

import "net"

// setSocketBuffers asks for size-byte buffers; the system may cap them silently.
func setSocketBuffers(c *net.UDPConn, size int) {
	c.SetReadBuffer(size)
	c.SetWriteBuffer(size)
}
