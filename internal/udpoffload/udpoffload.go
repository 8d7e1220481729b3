//go:build linux

// Package udpoffload writes and reads the control messages of Linux's UDP segmentation and receive
// offloads without allocating (the x/sys parser allocates): UDP_SEGMENT (Linux 4.18) asks the kernel
// to cut one sendmsg payload into datagrams, and UDP_GRO (Linux 5.0) tells a receiver the size of the
// datagrams the kernel coalesced into one message. Shared by dataplane and loadgen.
package udpoffload

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// SegmentControlSize is the space a UDP_SEGMENT control message takes.
var SegmentControlSize = unix.CmsgSpace(2)

// GROControlSize is the space the UDP_GRO control message a GRO receiver gets takes.
var GROControlSize = unix.CmsgSpace(4)

// PutSegmentSize writes into oob a UDP_SEGMENT control message asking the kernel to split the
// message's data into datagrams of size bytes (the last may be shorter). oob must hold
// SegmentControlSize bytes; it returns the part used.
func PutSegmentSize(oob []byte, size int) []byte {
	oob = oob[:SegmentControlSize]
	clear(oob)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = uint16(size) // host byte order, as the kernel reads it
	return oob
}

// SegmentSize returns the datagram size of a coalesced message from its control data (the UDP_GRO
// control message), or 0 when the message is a single datagram. A length field that does not fit
// the buffer ends the walk instead of being followed.
func SegmentSize(oob []byte) int {
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
