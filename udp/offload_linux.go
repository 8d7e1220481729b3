// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"errors"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// putSegment writes into oob a UDP_SEGMENT control message asking the kernel to cut the message's
// data into datagrams of size bytes (the last may be shorter), and returns the part of oob used.
// oob must hold unix.CmsgSpace(2) bytes.
func putSegment(oob []byte, size int) []byte {
	oob = oob[:unix.CmsgSpace(2)]
	clear(oob)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = uint16(size) // host byte order, as the kernel reads it
	return oob
}

// groSegment returns the datagram size of a coalesced message from its control data (the UDP_GRO
// control message), or 0 when there is none (the message is a single datagram). A length field
// that does not fit the buffer ends the walk instead of being followed.
func groSegment(oob []byte) int {
	for len(oob) >= unix.CmsgLen(0) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < unix.CmsgLen(0) || n > len(oob) {
			return 0
		}
		data := oob[unix.CmsgLen(0):n]
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO {
			// The kernel writes an int (udp_cmsg_recv); older ones a u16.
			switch len(data) {
			case 4:
				return int(*(*int32)(unsafe.Pointer(&data[0])))
			case 2:
				return int(*(*uint16)(unsafe.Pointer(&data[0])))
			}
			return 0
		}
		oob = oob[min(len(oob), unix.CmsgSpace(len(data))):]
	}
	return 0
}

// setBuffers asks for size-byte receive and send buffers: first with the FORCE options, which only
// root (CAP_NET_ADMIN) may use and which ignore net.core.rmem_max and wmem_max, then with the
// ordinary ones, which the kernel caps silently. It returns the first error of the ordinary ones.
func setBuffers(fd, size int) error {
	var first error
	for _, opts := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, opts[0], size) != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opts[1], size); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// probeGSO returns an error if the kernel does not know the UDP_SEGMENT socket option (Linux 4.18).
func probeGSO(fd int) error {
	_, err := unix.GetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT)
	return err
}

// enableGRO turns on UDP_GRO (Linux 5.0): the kernel may then coalesce arriving datagrams.
func enableGRO(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1)
}

// isGSOError reports whether a send failed because the route cannot segment (no checksum offload).
func isGSOError(err error) bool { return errors.Is(err, unix.EIO) }

// configure sets a Conn's socket up: buffers of size bytes (a failure leaves the defaults: a
// smaller buffer only means earlier drops under bursts), and GRO where the kernel has it. It
// reports whether the socket may send with UDP_SEGMENT and receives with UDP_GRO.
func configure(c *net.UDPConn, size int) (gso, gro bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return false, false
	}
	rc.Control(func(fd uintptr) {
		setBuffers(int(fd), size)
		gso = probeGSO(int(fd)) == nil
		gro = enableGRO(int(fd)) == nil
	})
	return gso, gro
}
