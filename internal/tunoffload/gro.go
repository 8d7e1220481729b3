// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tunoffload

import "encoding/binary"

// Which packets a TUN's receive offload (GRO) coalesces, as the kernel's GRO decides from their
// headers (net/ipv4/af_inet.c inet_gro_receive, tcp_offload.c tcp_gro_receive, udp_offload.c):
// TCP segments with a payload and only ACK (and PSH) set, UDP datagrams with a payload, in IP
// packets without options, extension headers or fragmentation. Both coalescers of the project use
// it: package tunvnet's, which writes super-packets to a TUN with virtio-net headers, and the
// Device's for a TUN that coalesces behind its Write (golang.zx2c4.com/wireguard/tun's does), which
// must know which packets that TUN's GRO will merge.

// GROClass is how a GRO treats an IP packet.
type GROClass uint8

const (
	GRONone    GROClass = iota // never coalesced, and not part of a flow that is (ICMP, pure ACKs, ...)
	GROTCP                     // a TCP segment a GRO may coalesce
	GROUDP                     // a UDP datagram a GRO may coalesce
	GROBarrier                 // may belong to a UDP flow, but a GRO leaves it alone (fragments, ...)
)

// IP protocol numbers (IANA) and TCP flags (RFC 9293 section 3.1, RFC 3168 for CWR); the
// coalescers need ACK and PSH, the segmentation FIN and CWR too.
const (
	ProtoTCP = 6
	ProtoUDP = 17

	TCPFlagPSH = 0x08
	TCPFlagACK = 0x10
	tcpFIN     = 0x01
	tcpCWR     = 0x80
)

// Classify classifies the IP packet p as a GRO treats it, with header checks only, and returns the
// length of its TCP or UDP payload (what coalescing appends).
func Classify(p []byte) (GROClass, int) {
	if len(p) < 20 {
		return GRONone, 0
	}
	switch p[0] >> 4 {
	case 4:
		ihl := int(p[0]&0x0f) * 4
		proto := p[9]
		fragment := binary.BigEndian.Uint16(p[6:])&0x3fff != 0 // more fragments, or an offset
		if proto != ProtoTCP && proto != ProtoUDP {
			return GRONone, 0
		}
		if ihl != 20 || fragment || int(binary.BigEndian.Uint16(p[2:])) != len(p) {
			if proto == ProtoUDP {
				return GROBarrier, 0
			}
			return GRONone, 0
		}
		return transportClass(proto, p[20:])
	case 6:
		if len(p) < 40 {
			return GRONone, 0
		}
		switch next := p[6]; next {
		case ProtoTCP, ProtoUDP:
			if int(binary.BigEndian.Uint16(p[4:])) != len(p)-40 {
				if next == ProtoUDP {
					return GROBarrier, 0
				}
				return GRONone, 0
			}
			return transportClass(next, p[40:])
		case 0, 43, 44, 60: // hop-by-hop, routing, fragment, destination options: may hide UDP
			return GROBarrier, 0
		}
	}
	return GRONone, 0
}

// transportClass classifies the TCP segment or UDP datagram l4 of a packet a GRO looks at.
func transportClass(proto byte, l4 []byte) (GROClass, int) {
	if proto == ProtoUDP {
		if len(l4) <= 8 {
			return GROBarrier, 0 // no payload: a GRO leaves it alone
		}
		return GROUDP, len(l4) - 8
	}
	if len(l4) < 20 {
		return GRONone, 0
	}
	hl := int(l4[12]>>4) * 4
	if flags := l4[13]; hl < 20 || len(l4) <= hl || (flags != TCPFlagACK && flags != TCPFlagACK|TCPFlagPSH) {
		// No payload (a pure ACK) or flags a GRO does not merge: never coalesced, and TCP does
		// not mind where it goes among its flow's segments.
		return GRONone, 0
	}
	return GROTCP, len(l4) - hl
}

// TCPFlags returns the flags of the TCP segment in the IP packet p, which Classify found GROTCP.
func TCPFlags(p []byte) byte {
	if p[0]>>4 == 4 {
		return p[20+13]
	}
	return p[40+13]
}

// SameFlow reports whether the IP packets a and b, which Classify found GROTCP or GROUDP, have the
// same addresses, protocol and ports.
func SameFlow(a, b []byte) bool {
	if a[0]>>4 != b[0]>>4 {
		return false
	}
	if a[0]>>4 == 4 {
		return a[9] == b[9] && string(a[12:24]) == string(b[12:24])
	}
	return a[6] == b[6] && string(a[8:44]) == string(b[8:44])
}
