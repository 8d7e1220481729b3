package dataplane

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/internal/udpoffload"
)

// gsoControlLen is room for one UDP_SEGMENT control message, a 16-bit segment size: unix.CmsgSpace(2)
// is 24 bytes on 64-bit Linux and 16 on 32-bit.
const gsoControlLen = 32

// setSocketBuffers asks for size-byte receive and send buffers: first with the FORCE options, which
// only root (CAP_NET_ADMIN) may use and which ignore net.core.rmem_max/wmem_max, then with the
// ordinary ones, which the kernel caps silently. Failures leave the defaults: a smaller buffer only
// means earlier drops under bursts.
func setSocketBuffers(c *net.UDPConn, size int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size) != nil {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, size)
		}
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, size) != nil {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, size)
		}
	})
}

// gsoSupported reports whether the kernel knows the UDP_SEGMENT socket option (Linux 4.18).
func gsoSupported(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		_, err := unix.GetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT)
		ok = err == nil
	})
	return ok
}

// gsoControl writes into oob a UDP_SEGMENT control message asking the kernel to cut the message's
// payload into datagrams of size bytes, and returns it.
func gsoControl(oob []byte, size int) []byte { return udpoffload.PutSegmentSize(oob, size) }

// isGSOError reports whether a send failed because the route cannot segment (no checksum offload).
func isGSOError(err error) bool { return errors.Is(err, unix.EIO) }

// enableGRO turns on UDP_GRO (Linux 5.0) and reports whether the kernel took it.
func enableGRO(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		ok = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1) == nil
	})
	return ok
}

// groSegment returns the segment size of a UDP_GRO control message in oob, or 0 if there is none
// (the message is a single datagram).
func groSegment(oob []byte) int { return udpoffload.SegmentSize(oob) }

// newUDPBatch returns the batch I/O of c: recvmmsg and sendmmsg as raw system calls (mmsgBatch).
func newUDPBatch(c *net.UDPConn, v4 bool) udpBatch {
	if b, err := newMmsgBatch(c, v4); err == nil {
		return b
	}
	return xnetBatch(c, v4)
}
