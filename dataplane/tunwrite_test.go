package dataplane

import (
	"encoding/binary"
	"testing"
)

// testIP builds an IP packet (version 4 or 6) of protocol proto from port sport to port 9 with
// payload bytes of transport payload; tcpFlags go into a TCP header.
func testIP(version int, proto byte, sport uint16, payload int, tcpFlags byte) []byte {
	iph := 20
	if version == 6 {
		iph = 40
	}
	l4 := 8
	if proto == protoTCP {
		l4 = 20
	}
	p := make([]byte, iph+l4+payload)
	if version == 4 {
		p[0] = 0x45
		binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
		p[9] = proto
		copy(p[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	} else {
		p[0] = 0x60
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
		p[6] = proto
		p[23], p[39] = 1, 2
	}
	binary.BigEndian.PutUint16(p[iph:], sport)
	binary.BigEndian.PutUint16(p[iph+2:], 9)
	if proto == protoTCP {
		p[iph+12] = 5 << 4
		p[iph+13] = tcpFlags
	}
	return p
}

func TestGroKind(t *testing.T) {
	frag := func(p []byte, flagsOffset uint16) []byte {
		binary.BigEndian.PutUint16(p[6:], flagsOffset)
		return p
	}
	options := testIP(4, protoUDP, 1, 100, 0)
	options[0] = 0x46
	v6frag := testIP(6, protoUDP, 1, 100, 0)
	v6frag[6] = 44
	short := testIP(4, protoUDP, 1, 100, 0)
	binary.BigEndian.PutUint16(short[2:], 50) // total length less than the packet
	icmp := testIP(4, 1, 1, 100, 0)
	for _, c := range []struct {
		name    string
		pkt     []byte
		kind    groClass
		payload int
	}{
		{"udp4", testIP(4, protoUDP, 1, 100, 0), groUDP, 100},
		{"udp6", testIP(6, protoUDP, 1, 1000, 0), groUDP, 1000},
		{"udp4 first fragment", frag(testIP(4, protoUDP, 1, 1000, 0), 0x2000), groBarrier, 0},
		{"udp4 later fragment", frag(testIP(4, protoUDP, 1, 1000, 0), 0x00b9), groBarrier, 0},
		{"udp4 don't fragment", frag(testIP(4, protoUDP, 1, 1000, 0), 0x4000), groUDP, 1000},
		{"udp4 options", options, groBarrier, 0},
		{"udp4 bad length", short, groBarrier, 0},
		{"udp4 empty", testIP(4, protoUDP, 1, 0, 0), groBarrier, 0},
		{"udp6 fragment header", v6frag, groBarrier, 0},
		{"tcp4 data", testIP(4, protoTCP, 1, 1400, tcpACK), groTCP, 1400},
		{"tcp6 data push", testIP(6, protoTCP, 1, 10, tcpACK|tcpPSH), groTCP, 10},
		{"tcp4 pure ack", testIP(4, protoTCP, 1, 0, tcpACK), groNone, 0},
		{"tcp4 fin", testIP(4, protoTCP, 1, 10, tcpACK|0x01), groNone, 0},
		{"icmp", icmp, groNone, 0},
		{"runt", []byte{0x45, 0}, groNone, 0},
	} {
		kind, payload := groKind(c.pkt)
		if kind != c.kind || payload != c.payload {
			t.Errorf("%s: groKind = %d, %d; want %d, %d", c.name, kind, payload, c.kind, c.payload)
		}
	}
}

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
	fragment := testIP(4, protoUDP, 1, 1000, 0)
	binary.BigEndian.PutUint16(fragment[6:], 0x2000)
	binary.BigEndian.PutUint16(fragment[20:], 2) // port 2 (tells it apart in the log)
	w := &writeLog{}
	tb := newTunBatcher()
	bufs := withHeadroom(
		testIP(4, protoTCP, 10, 0, tcpACK), // a pure ACK: no UDP before it, no split
		fragment,                           // nothing to merge across yet: no split
		testIP(4, protoUDP, 1, 100, 0),
		testIP(4, protoUDP, 1, 100, 0),
		fragment, // splits
		testIP(4, protoUDP, 1, 100, 0),
		testIP(4, protoUDP, 1, 0, 0), // empty: splits
		testIP(4, protoUDP, 1, 100, 0),
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
		pkts = append(pkts, testIP(4, protoTCP, 1, seg, tcpACK))
	}
	pkts = append(pkts,
		testIP(6, protoTCP, 2, seg, tcpACK|tcpPSH), // ends its coalesced packet at once
		testIP(6, protoTCP, 2, seg, tcpACK),
		testIP(4, protoUDP, 3, 500, 0),
		testIP(4, protoUDP, 3, 200, 0), // shorter: ends it
		testIP(4, protoUDP, 3, 200, 0),
	)
	for p := range groRooms {
		pkts = append(pkts, testIP(6, protoUDP, uint16(100+p), 64, 0))
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
