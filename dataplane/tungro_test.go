package dataplane

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// vnetLog is a vnetWriter that keeps a copy of every write (virtio-net header and packet).
type vnetLog struct{ writes [][]byte }

func (l *vnetLog) writev(iov [][]byte) error {
	l.writes = append(l.writes, bytes.Join(iov, nil))
	return nil
}

// segment builds TCP segment i of a flow from port sport: payload bytes at sequence number seq, with
// the IPv4 identification a TSO sender gives it and valid checksums.
func segment(version int, sport uint16, seq uint32, payload int, flags byte, id uint16) []byte {
	p := testIP(version, protoTCP, sport, payload, flags)
	iphl := 20
	if version == 4 {
		binary.BigEndian.PutUint16(p[4:], id)
		p[8] = 64
		binary.BigEndian.PutUint16(p[10:], ^tunoffload.Fold(tunoffload.Sum(p[:20], 0)))
	} else {
		iphl = 40
	}
	th := p[iphl:]
	binary.BigEndian.PutUint32(th[4:], seq)
	binary.BigEndian.PutUint32(th[8:], 4242)
	for i := range payload {
		th[20+i] = byte(seq) + byte(i)
	}
	binary.BigEndian.PutUint16(th[16:], ^tunoffload.Fold(tunoffload.Sum(th, tunoffload.PseudoSum(p, protoTCP, len(th)))))
	return p
}

// resplit cuts a written super-packet back into packets with tunoffload.Split, as the kernel's GSO
// would, so that a test can compare them with what went in.
func resplit(t *testing.T, w []byte) [][]byte {
	t.Helper()
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 2000)
	}
	sizes := make([]int, 64)
	n, err := tunoffload.Split(bytes.Clone(w), bufs, sizes, 0)
	if err != nil {
		t.Fatalf("written packet does not split: %v", err)
	}
	out := make([][]byte, n)
	for i := range n {
		out[i] = bufs[i][:sizes[i]]
	}
	return out
}

// TestTunCoalescerTCPRoundTrip: consecutive segments of a flow become one super-packet, which the
// kernel's segmentation turns back into the very same segments; two flows interleaved become two,
// written in the order of their first segments.
func TestTunCoalescerTCPRoundTrip(t *testing.T) {
	for _, version := range []int{4, 6} {
		var a, b [][]byte
		for i := range 10 {
			flags := byte(tcpACK)
			if i == 9 {
				flags |= tcpPSH
			}
			a = append(a, segment(version, 1000, 5000+uint32(i*1200), 1200, flags, 7+uint16(i)))
			b = append(b, segment(version, 2000, 9000+uint32(i*1000), 1000, tcpACK, 100+uint16(i)))
		}
		var in [][]byte
		for i := range a {
			in = append(in, a[i], b[i])
		}
		log := &vnetLog{}
		if failed := newTunCoalescer(log, true).write(withHeadroom(in...)); failed != 0 || len(log.writes) != 2 {
			t.Fatalf("v%d: %d writes, %d failed; want 2, 0", version, len(log.writes), failed)
		}
		for w, want := range [][][]byte{a, b} {
			var h tunoffload.Header
			h.Decode(log.writes[w])
			if h.Flags != tunoffload.FlagNeedsCsum || h.GSOType == tunoffload.GSONone {
				t.Fatalf("v%d write %d: header %+v", version, w, h)
			}
			got := resplit(t, log.writes[w])
			if len(got) != len(want) {
				t.Fatalf("v%d write %d: %d segments, want %d", version, w, len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("v%d write %d segment %d:\n got % x\nwant % x", version, w, i, got[i][:60], want[i][:60])
				}
			}
		}
	}
}

// TestTunCoalescerTCPBreaks: a gap in the sequence, a different acknowledgment, TTL or header
// length, a segment after PSH or after a shorter one each start a new super-packet, and no segment
// joins one across a segment of its flow that did not join.
func TestTunCoalescerTCPBreaks(t *testing.T) {
	seg := func(seq uint32, n int, flags byte) []byte { return segment(4, 1000, seq, n, flags, 1) }
	otherAck := seg(3000, 1000, tcpACK)
	binary.BigEndian.PutUint32(otherAck[28:], 1)
	otherTTL := seg(3000, 1000, tcpACK)
	otherTTL[8] = 9
	for _, c := range []struct {
		name   string
		pkts   [][]byte
		writes []int // segments per write
	}{
		{"in order", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), seg(3000, 500, tcpACK)}, []int{3}},
		{"gap", [][]byte{seg(1000, 1000, tcpACK), seg(3000, 1000, tcpACK), seg(2000, 1000, tcpACK)}, []int{1, 1, 1}},
		{"ack", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), otherAck}, []int{2, 1}},
		{"ttl", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), otherTTL}, []int{2, 1}},
		{"push", [][]byte{seg(1000, 1000, tcpACK|tcpPSH), seg(2000, 1000, tcpACK)}, []int{1, 1}},
		{"shorter", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 500, tcpACK), seg(2500, 500, tcpACK)}, []int{2, 1}},
		{"longer", [][]byte{seg(1000, 500, tcpACK), seg(1500, 1000, tcpACK)}, []int{1, 1}},
		{"pure ack between", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 0, tcpACK), seg(2000, 1000, tcpACK)}, []int{2, 1}},
	} {
		log := &vnetLog{}
		newTunCoalescer(log, true).write(withHeadroom(c.pkts...))
		var got []int
		for _, w := range log.writes {
			got = append(got, len(resplit(t, w)))
		}
		if len(got) != len(c.writes) {
			t.Errorf("%s: segments per write %v, want %v", c.name, got, c.writes)
			continue
		}
		for i := range got {
			if got[i] != c.writes[i] {
				t.Errorf("%s: segments per write %v, want %v", c.name, got, c.writes)
				break
			}
		}
	}
}

// TestTunCoalescerUDP: datagrams of a flow coalesce only where the TUN takes UDP super-packets,
// and never across a fragment of a UDP flow, which keeps its place.
func TestTunCoalescerUDP(t *testing.T) {
	udp := func(sport uint16) []byte {
		p := testIP(4, protoUDP, sport, 100, 0)
		p[8] = 64
		binary.BigEndian.PutUint16(p[10:], ^tunoffload.Fold(tunoffload.Sum(p[:20], 0)))
		binary.BigEndian.PutUint16(p[24:], 108)
		binary.BigEndian.PutUint16(p[26:], ^tunoffload.Fold(tunoffload.Sum(p[20:], tunoffload.PseudoSum(p, protoUDP, 108))))
		return p
	}
	fragment := testIP(4, protoUDP, 1, 100, 0)
	binary.BigEndian.PutUint16(fragment[6:], 0x2000)
	badLength := udp(1)
	binary.BigEndian.PutUint16(badLength[24:], 100) // less than the 108 bytes the IP header says
	for _, c := range []struct {
		name   string
		udpGSO bool
		pkts   [][]byte
		writes []int // source port of each write's packet, and segments
	}{
		{"coalesced", true, [][]byte{udp(1), udp(1), udp(1)}, []int{1, 3}},
		{"no UDP GSO", false, [][]byte{udp(1), udp(1)}, []int{1, 1, 1, 1}},
		{"fragment", true, [][]byte{udp(1), udp(1), fragment, udp(1), udp(1)}, []int{1, 2, 1, 1, 1, 2}},
		{"UDP length", true, [][]byte{udp(1), udp(1), badLength, udp(1), udp(1)}, []int{1, 2, 1, 1, 1, 2}},
	} {
		log := &vnetLog{}
		newTunCoalescer(log, c.udpGSO).write(withHeadroom(c.pkts...))
		var got []int
		for _, w := range log.writes {
			n := 1
			var h tunoffload.Header
			h.Decode(w)
			if h.GSOType != tunoffload.GSONone {
				n = len(resplit(t, w))
			}
			got = append(got, int(binary.BigEndian.Uint16(w[tunoffload.HeaderLen+20:])), n)
		}
		if !equalInts(got, c.writes) {
			t.Errorf("%s: writes (port, datagrams) %v, want %v", c.name, got, c.writes)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTunCoalescerGarbage: whatever the packets, every one is written (alone or in a super-packet)
// and nothing panics.
func TestTunCoalescerGarbage(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := newTunCoalescer(&vnetLog{}, true)
	for range 2000 {
		var pkts [][]byte
		for range 1 + r.IntN(MaxBatch) {
			var p []byte
			switch r.IntN(3) {
			case 0:
				p = make([]byte, r.IntN(100))
				for i := range p {
					p[i] = byte(r.Uint32())
				}
			case 1:
				p = segment(4+2*r.IntN(2), uint16(r.IntN(3)), uint32(r.IntN(4))*100, r.IntN(200), tcpACK, 0)
			default:
				p = testIP(4+2*r.IntN(2), protoUDP, uint16(r.IntN(3)), r.IntN(300), 0)
			}
			pkts = append(pkts, p)
		}
		c.w = &vnetLog{}
		c.write(withHeadroom(pkts...))
	}
}

// discard is a vnetWriter that drops what it is given.
type discard struct{}

func (discard) writev([][]byte) error { return nil }

// TestTunCoalescerAllocatesNothing: coalescing and writing a batch allocates nothing.
func TestTunCoalescerAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	var pkts [][]byte
	for i := range 64 {
		pkts = append(pkts, segment(4, 1000, uint32(i*1368), 1368, tcpACK, uint16(i)), testIP(6, protoUDP, 7, 1000, 0))
	}
	bufs := withHeadroom(pkts...)
	c := newTunCoalescer(discard{}, true)
	if allocs := testing.AllocsPerRun(50, func() { c.write(bufs) }); allocs != 0 {
		t.Fatalf("write of a batch allocates %v times", allocs)
	}
}
