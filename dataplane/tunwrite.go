// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

// Writing a batch to a TUN that does its own offloads behind Write, for a TUN that is not a
// TUNGROWriter (see io.go). golang.zx2c4.com/wireguard/tun's Write coalesces the TCP segments and
// UDP datagrams of one flow into one super-packet per flow (GRO; the packets it merges are those
// tunoffload.Classify says a GRO does), one write system call instead of one per packet. It
// appends a flow's later packets to the buffer of the first one, so it coalesces only if that
// buffer has room for up to 64 KiB; a pool buffer holds one packet (MTU+48 bytes), and with only
// pool buffers nearly every packet would cost a write of its own. tunBatcher therefore moves the
// first packet of each flow of a batch, and the next one whenever the GRO will have filled or
// ended the coalesced packet, into one of a few fixed 64 KiB buffers (a copy of one packet per 64
// KiB; the later packets are copied by the coalescing anyway) and hands those to Write.
//
// Order: Write's UDP GRO merges a datagram into the flow's last datagram before it, even across a
// packet of the flow that it leaves alone, such as an IPv4 fragment (whose first piece carries the
// flow's ports): the merged datagram then overtakes that packet. A batch is therefore written in
// runs that end before such a packet, so nothing is merged across it.

import "github.com/wirebatch/wirebatch/internal/tunoffload"

const (
	// groRooms is how many coalesced packets one Write can build (a flow needs one per 64 KiB);
	// packets beyond them go out with a write system call each.
	groRooms = 8
	// groRoomLen holds the headroom and the largest IP packet.
	groRoomLen = tunOffset + 65535
	// groMaxLen is the longest packet the GRO coalesces into a room: it wants room for the
	// headroom twice.
	groMaxLen = groRoomLen - 2*tunOffset
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
		kind, payload := tunoffload.Classify(pkt)
		if kind == tunoffload.GROBarrier && t.udp {
			if _, err := tun.Write(bufs[start:i], tunOffset); err != nil {
				failed++
			}
			start = i
			t.reset() // the rooms are free again: Write has returned
		}
		if kind == tunoffload.GROUDP {
			t.udp = true
		}
		if kind != tunoffload.GROTCP && kind != tunoffload.GROUDP {
			continue
		}
		if r := t.last(pkt); r != nil && !r.closed && payload <= r.seg && r.length+payload <= groMaxLen {
			r.length += payload
			r.closed = payload < r.seg || (kind == tunoffload.GROTCP && tunoffload.TCPFlags(pkt)&tunoffload.TCPFlagPSH != 0)
			continue
		}
		if t.n == groRooms {
			continue // written as it is, with its own write
		}
		room := t.rooms[t.n][:tunOffset+len(pkt)]
		copy(room[tunOffset:], pkt)
		bufs[i] = room
		t.in[t.n] = roomState{head: room[tunOffset:], length: len(pkt), seg: payload,
			closed: kind == tunoffload.GROTCP && tunoffload.TCPFlags(pkt)&tunoffload.TCPFlagPSH != 0}
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
		if tunoffload.SameFlow(t.in[i].head, pkt) {
			return &t.in[i]
		}
	}
	return nil
}
