// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import "net/netip"

// Message is one message of a batch system call: one datagram or, with the offloads, a run of them.
type Message struct {
	// Buffers hold the message: gathered into it on send, filled in order on receive.
	Buffers [][]byte
	// Addr is the destination on send (the zero AddrPort on a connected socket) and the source on
	// receive, an IPv4 one unmapped.
	Addr netip.AddrPort
	// Segment, on send, asks the kernel to cut the message into datagrams of Segment bytes, the
	// last one possibly shorter (UDP_SEGMENT); 0 sends it as one datagram. On receive it is the
	// size of the datagrams the kernel coalesced into the message (UDP_GRO), the last one possibly
	// shorter, or 0 for a single datagram.
	Segment int
	// N is the number of bytes sent or received.
	N int
}

// GSO limits: the kernel's UDP_MAX_SEGMENTS of Linux 4.18 to 6.x (later kernels allow 128), and
// the payload of one 64 KiB IP packet behind one IPv6 and one UDP header.
const (
	// MaxGSOSegments is the most datagrams one message with Segment set may carry.
	MaxGSOSegments = 64
	// MaxGSOBytes is the most bytes one message with Segment set may carry.
	MaxGSOBytes = 65535 - 8 - 40
)
