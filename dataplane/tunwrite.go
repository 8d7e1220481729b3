package dataplane

// Writing a batch to a TUN that does its own offloads behind Write, for when the Device cannot do them
// (no vnetTUN: see tungro.go). golang.zx2c4.com/wireguard/tun's Write coalesces the
// TCP segments and UDP datagrams of one flow into one super-packet per flow (GRO), one write system
// call instead of one per packet. It appends a flow's later packets to the buffer of the first one,
// so it coalesces only if that buffer has room for up to 64 KiB; a pool buffer holds one packet
// (MTU+48 bytes), and with only pool buffers nearly every packet would cost a write of its own.
// tunBatcher therefore moves the first packet of each flow of a batch, and the next one whenever the
// GRO will have filled or ended the coalesced packet, into one of a few fixed 64 KiB buffers (a copy
// of one packet per 64 KiB; the later packets are copied by the coalescing anyway) and hands those
// to Write.
//
// Order: Write's UDP GRO merges a datagram into the flow's last datagram before it, even across a
// packet of the flow that it leaves alone, such as an IPv4 fragment (whose first piece carries the
// flow's ports): the merged datagram then overtakes that packet. A batch is therefore written in
// runs that end before such a packet, so nothing is merged across it.

import "encoding/binary"

const (
	// groRooms is how many coalesced packets one Write can build (a flow needs one per 64 KiB);
	// packets beyond them go out with a write system call each.
	groRooms = 8
	// groRoomLen holds the headroom and the largest IP packet.
	groRoomLen = tunOffset + 65535
	// groMaxLen is the longest packet the GRO coalesces into a room: it wants room for the
	// headroom twice.
	groMaxLen = groRoomLen - 2*tunOffset

	protoTCP = 6
	protoUDP = 17
)

// tunBatcher is the inbound commit's state for coalescing: the rooms, and what is in each
// (tracked the way the TUN's GRO will coalesce, so that a flow gets a new room once its last one is
// full).
type tunBatcher struct {
	rooms [groRooms][]byte
	in    [groRooms]roomState
	n     int  // rooms in use by the current run
	udp   bool // the run so far has a UDP datagram the TUN's GRO may merge into
}

type roomState struct {
	head   []byte // the flow's first packet of the room, as it was moved there
	length int    // the length the coalesced packet will have
	seg    int    // the payload length of head: later packets may not be longer
	closed bool   // a shorter payload or a TCP PSH ended the coalesced packet
}

func newTunBatcher() *tunBatcher {
	t := &tunBatcher{}
	for i := range t.rooms {
		t.rooms[i] = make([]byte, groRoomLen)
	}
	return t
}

// write writes the packets bufs[i][tunOffset:] to tun, in runs (see the top of this file), and
// returns the number of failed Write calls.
func (t *tunBatcher) write(tun TUN, bufs [][]byte) (failed int) {
	start := 0
	t.reset()
	for i := range bufs {
		pkt := bufs[i][tunOffset:]
		kind, payload := groKind(pkt)
		if kind == groBarrier && t.udp {
			if _, err := tun.Write(bufs[start:i], tunOffset); err != nil {
				failed++
			}
			start = i
			t.reset() // the rooms are free again: Write has returned
		}
		if kind == groUDP {
			t.udp = true
		}
		if kind != groTCP && kind != groUDP {
			continue
		}
		if r := t.last(pkt); r != nil && !r.closed && payload <= r.seg && r.length+payload <= groMaxLen {
			r.length += payload
			r.closed = payload < r.seg || (kind == groTCP && pkt[tcpFlags(pkt)]&tcpPSH != 0)
			continue
		}
		if t.n == groRooms {
			continue // written as it is, with its own write
		}
		room := t.rooms[t.n][:tunOffset+len(pkt)]
		copy(room[tunOffset:], pkt)
		bufs[i] = room
		t.in[t.n] = roomState{head: room[tunOffset:], length: len(pkt), seg: payload,
			closed: kind == groTCP && pkt[tcpFlags(pkt)]&tcpPSH != 0}
		t.n++
	}
	if start < len(bufs) {
		if _, err := tun.Write(bufs[start:], tunOffset); err != nil {
			failed++
		}
	}
	t.reset()
	return failed
}

func (t *tunBatcher) reset() {
	clear(t.in[:t.n])
	t.n, t.udp = 0, false
}

// last returns the newest room of pkt's flow, or nil.
func (t *tunBatcher) last(pkt []byte) *roomState {
	for i := t.n - 1; i >= 0; i-- {
		if sameFlow(t.in[i].head, pkt) {
			return &t.in[i]
		}
	}
	return nil
}

type groClass uint8

const (
	groNone    groClass = iota // never coalesced, and not part of a flow that is (ICMP, pure ACKs, ...)
	groTCP                     // a TCP segment the TUN's GRO may coalesce
	groUDP                     // a UDP datagram the TUN's GRO may coalesce
	groBarrier                 // may belong to a UDP flow, but the GRO leaves it alone (fragments, ...)
)

const (
	tcpACK = 0x10
	tcpPSH = 0x08
)

// groKind classifies an IP packet as the TUN's GRO treats it, with header checks only, and returns
// the length of its TCP or UDP payload (what coalescing appends).
func groKind(p []byte) (groClass, int) {
	if len(p) < 20 {
		return groNone, 0
	}
	switch p[0] >> 4 {
	case 4:
		ihl := int(p[0]&0x0f) * 4
		proto := p[9]
		fragment := binary.BigEndian.Uint16(p[6:])&0x3fff != 0 // more fragments, or an offset
		if proto != protoTCP && proto != protoUDP {
			return groNone, 0
		}
		if ihl != 20 || fragment || int(binary.BigEndian.Uint16(p[2:])) != len(p) {
			if proto == protoUDP {
				return groBarrier, 0
			}
			return groNone, 0
		}
		return transportKind(proto, p[20:])
	case 6:
		if len(p) < 40 {
			return groNone, 0
		}
		switch next := p[6]; next {
		case protoTCP, protoUDP:
			if int(binary.BigEndian.Uint16(p[4:])) != len(p)-40 {
				if next == protoUDP {
					return groBarrier, 0
				}
				return groNone, 0
			}
			return transportKind(next, p[40:])
		case 0, 43, 44, 60: // hop-by-hop, routing, fragment, destination options: may hide UDP
			return groBarrier, 0
		}
	}
	return groNone, 0
}

// transportKind classifies the TCP segment or UDP datagram l4 of a packet the GRO looks at.
func transportKind(proto byte, l4 []byte) (groClass, int) {
	if proto == protoUDP {
		if len(l4) <= 8 {
			return groBarrier, 0 // no payload: the GRO leaves it alone
		}
		return groUDP, len(l4) - 8
	}
	if len(l4) < 20 {
		return groNone, 0
	}
	hl := int(l4[12]>>4) * 4
	if flags := l4[13]; hl < 20 || len(l4) <= hl || (flags != tcpACK && flags != tcpACK|tcpPSH) {
		// No payload (a pure ACK) or flags the GRO does not merge: never coalesced, and TCP does
		// not mind where it goes among its flow's segments.
		return groNone, 0
	}
	return groTCP, len(l4) - hl
}

// tcpFlags returns the index of the flags of the TCP segment in the IP packet p.
func tcpFlags(p []byte) int {
	if p[0]>>4 == 4 {
		return 20 + 13
	}
	return 40 + 13
}

// sameFlow reports whether the IP packets a and b (classified groTCP or groUDP) have the same
// addresses, protocol and ports.
func sameFlow(a, b []byte) bool {
	if a[0]>>4 != b[0]>>4 {
		return false
	}
	if a[0]>>4 == 4 {
		return a[9] == b[9] && string(a[12:24]) == string(b[12:24])
	}
	return a[6] == b[6] && string(a[8:44]) == string(b[8:44])
}
