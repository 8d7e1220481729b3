package dataplane

import (
	"errors"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
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
func gsoControl(oob []byte, size int) []byte {
	oob = oob[:unix.CmsgSpace(2)]
	clear(oob)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = uint16(size) // host byte order, as the kernel reads it
	return oob
}

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
// (the message is a single datagram). It walks the control messages by hand: the x/sys parser
// allocates.
func groSegment(oob []byte) int {
	hdrLen := unix.CmsgLen(0)
	for len(oob) >= hdrLen {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdrLen || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && l >= hdrLen+4 {
			return int(*(*int32)(unsafe.Pointer(&oob[hdrLen]))) // the kernel writes an int
		}
		oob = oob[min(len(oob), unix.CmsgSpace(l-hdrLen)):]
	}
	return 0
}
