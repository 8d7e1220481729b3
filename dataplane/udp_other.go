//go:build !linux

package dataplane

import "net"

// setSocketBuffers asks for size-byte buffers; the system may cap them silently.
func setSocketBuffers(c *net.UDPConn, size int) {
	c.SetReadBuffer(size)
	c.SetWriteBuffer(size)
}

// Without Linux's UDP_SEGMENT and UDP_GRO every datagram is its own message.
const gsoControlLen = 0

func enableGRO(c *net.UDPConn) bool { return false }
func groSegment(oob []byte) int     { return 0 }

func gsoSupported(c *net.UDPConn) bool       { return false }
func gsoControl(oob []byte, size int) []byte { return nil }
func isGSOError(err error) bool              { return false }

func newUDPBatch(c *net.UDPConn, v4 bool) udpBatch { return xnetBatch(c, v4) }
