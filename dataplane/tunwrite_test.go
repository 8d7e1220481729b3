// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// writeLog is a TUN that records the packets of each Write and whether each sat in a buffer with
// room to coalesce into.
type writeLog struct {
	TUN
	writes [][]int  // per Write, the packets' source ports
	roomy  [][]bool // per Write, whether each packet's buffer could take 64 KiB
}

func (w *writeLog) Write(bufs [][]byte, offset int) (int, error) {
	var ports []int
	var roomy []bool
	for _, b := range bufs {
		p := b[offset:]
		iph := 20
		if p[0]>>4 == 6 {
			iph = 40
		}
		ports = append(ports, int(binary.BigEndian.Uint16(p[iph:])))
		roomy = append(roomy, cap(b) >= groRoomLen)
	}
	w.writes = append(w.writes, ports)
	w.roomy = append(w.roomy, roomy)
	return 0, nil
}

// withHeadroom returns pkts in buffers with tunOffset bytes in front and no spare capacity, as the
// pool's are after the packet.
func withHeadroom(pkts ...[]byte) [][]byte {
	bufs := make([][]byte, len(pkts))
	for i, p := range pkts {
		b := make([]byte, tunOffset+len(p))
		copy(b[tunOffset:], p)
		bufs[i] = b[:len(b):len(b)]
	}
	return bufs
}

// TestTunBatcherSplitsAtBarriers: a packet the GRO leaves alone but which may belong to a UDP flow
// starts a new Write when the run before it has a datagram that could be merged, so no datagram is
// merged across it.
func TestTunBatcherSplitsAtBarriers(t *testing.T) {
	fragment := tuntest.Packet(4, tunoffload.ProtoUDP, 1, 1000, 0)
	binary.BigEndian.PutUint16(fragment[6:], 0x2000)
	binary.BigEndian.PutUint16(fragment[20:], 2) // port 2 (tells it apart in the log)
	w := &writeLog{}
	tb := newTunBatcher()
	bufs := withHeadroom(
		tuntest.Packet(4, tunoffload.ProtoTCP, 10, 0, tunoffload.TCPFlagACK), // a pure ACK: no UDP before it, no split
		fragment, // nothing to merge across yet: no split
		tuntest.Packet(4, tunoffload.ProtoUDP, 1, 100, 0),
		tuntest.Packet(4, tunoffload.ProtoUDP, 1, 100, 0),
		fragment, // splits
		tuntest.Packet(4, tunoffload.ProtoUDP, 1, 100, 0),
		tuntest.Packet(4, tunoffload.ProtoUDP, 1, 0, 0), // empty: splits
		tuntest.Packet(4, tunoffload.ProtoUDP, 1, 100, 0),
	)
	if failed := tb.write(w, bufs); failed != 0 {
		t.Fatalf("%d failed writes", failed)
	}
	want := [][]int{{10, 2, 1, 1}, {2, 1}, {1, 1}}
	if len(w.writes) != len(want) {
		t.Fatalf("writes %v, want %v", w.writes, want)
	}
	for i := range want {
		if len(w.writes[i]) != len(want[i]) {
			t.Fatalf("writes %v, want %v", w.writes, want)
		}
		for j := range want[i] {
			if w.writes[i][j] != want[i][j] {
				t.Fatalf("writes %v, want %v", w.writes, want)
			}
		}
	}
	// Each run's first datagram of the flow sits in a room, whatever came before in the batch.
	wantRoomy := [][]bool{{false, false, true, false}, {false, true}, {false, true}}
	for i := range wantRoomy {
		for j := range wantRoomy[i] {
			if w.roomy[i][j] != wantRoomy[i][j] {
				t.Fatalf("room per packet %v, want %v", w.roomy, wantRoomy)
			}
		}
	}
}

// TestTunBatcherRooms: the first packet of each flow moves into a room with its bytes intact; a flow
// whose coalesced packet would outgrow 64 KiB, or which a TCP PSH or a shorter datagram ended, gets a
// new room; flows beyond groRooms keep their buffers.
func TestTunBatcherRooms(t *testing.T) {
	var pkts [][]byte
	seg := 1400
	full := groMaxLen / seg // segments of one flow that fit in one room, the first with its headers
	for range full + 1 {
		pkts = append(pkts, tuntest.Packet(4, tunoffload.ProtoTCP, 1, seg, tunoffload.TCPFlagACK))
	}
	pkts = append(pkts,
		tuntest.Packet(6, tunoffload.ProtoTCP, 2, seg, tunoffload.TCPFlagACK|tunoffload.TCPFlagPSH), // ends its coalesced packet at once
		tuntest.Packet(6, tunoffload.ProtoTCP, 2, seg, tunoffload.TCPFlagACK),
		tuntest.Packet(4, tunoffload.ProtoUDP, 3, 500, 0),
		tuntest.Packet(4, tunoffload.ProtoUDP, 3, 200, 0), // shorter: ends it
		tuntest.Packet(4, tunoffload.ProtoUDP, 3, 200, 0),
	)
	for p := range groRooms {
		pkts = append(pkts, tuntest.Packet(6, tunoffload.ProtoUDP, uint16(100+p), 64, 0))
	}
	want := map[int]bool{0: true, full: true, full + 1: true, full + 2: true, full + 3: true, full + 5: true}
	// Rooms used so far: 6; the rest go to the first two of the small flows.
	want[full+6], want[full+7] = true, true
	bufs := withHeadroom(pkts...)
	w := &writeLog{}
	tb := newTunBatcher()
	tb.write(w, bufs)
	if len(w.roomy) != 1 || len(w.roomy[0]) != len(pkts) {
		t.Fatalf("writes %v, want one of %d packets", w.writes, len(pkts))
	}
	for i, r := range w.roomy[0] {
		if r != want[i] {
			t.Errorf("packet %d (port %d): in a room %v, want %v", i, w.writes[0][i], r, want[i])
		}
		if string(bufs[i][tunOffset:]) != string(pkts[i]) {
			t.Errorf("packet %d changed", i)
		}
	}
	// bufs now has rooms in it: writing it again moves packets onto themselves, which is still the
	// whole work of write.
	if a := testing.AllocsPerRun(20, func() { tb.write(nopTUN{}, bufs) }); a != 0 {
		t.Errorf("write allocates %v times", a)
	}
}

type nopTUN struct{ TUN }

func (nopTUN) Write(bufs [][]byte, offset int) (int, error) { return 0, nil }
