package dataplane

import (
	"net"

	"golang.org/x/sys/unix"
)

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
