// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tunvnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// Short names for the many packets the tests build.
const (
	protoTCP = tunoffload.ProtoTCP
	protoUDP = tunoffload.ProtoUDP
	tcpACK   = tunoffload.TCPFlagACK
	tcpPSH   = tunoffload.TCPFlagPSH
)

// testOffset is the headroom in front of the tests' packets: a virtio-net header and more, as a
// caller's buffers have.
const testOffset = 16

// withHeadroom returns pkts in buffers with testOffset bytes in front and no spare capacity after
// the packet.
func withHeadroom(pkts ...[]byte) [][]byte {
	bufs := make([][]byte, len(pkts))
	for i, p := range pkts {
		b := make([]byte, testOffset+len(p))
		copy(b[testOffset:], p)
		bufs[i] = b[:len(b):len(b)]
	}
	return bufs
}

// vnetLog is a gatherWriter that keeps a copy of every write (virtio-net header and packet).
type vnetLog struct{ writes [][]byte }

func (l *vnetLog) writev(iov [][]byte) error {
	l.writes = append(l.writes, bytes.Join(iov, nil))
	return nil
}

// segment builds TCP segment i of a flow from port sport: payload bytes at sequence number seq, with
// the IPv4 identification a TSO sender gives it and valid checksums.
func segment(version int, sport uint16, seq uint32, payload int, flags byte, id uint16) []byte {
	p := tuntest.Packet(version, protoTCP, sport, payload, flags)
	iphl := 20
	if version == 4 {
		binary.BigEndian.PutUint16(p[4:], id)
		p[8] = 64
	} else {
		iphl = 40
	}
	th := p[iphl:]
	binary.BigEndian.PutUint32(th[4:], seq)
	binary.BigEndian.PutUint32(th[8:], 4242)
	for i := range payload {
		th[20+i] = byte(seq) + byte(i)
	}
	setChecksums(p)
	return p
}

// setChecksums computes the IPv4 header checksum (if IPv4) and the TCP or UDP checksum of the test
// packet p (a header without options or extension headers).
func setChecksums(p []byte) {
	iphl, proto := 40, p[6]
	if p[0]>>4 == 4 {
		iphl, proto = 20, p[9]
		p[10], p[11] = 0, 0
		binary.BigEndian.PutUint16(p[10:], ^tunoffload.Fold(tunoffload.Sum(p[:20], 0)))
	}
	at := iphl + 16
	if proto == protoUDP {
		at = iphl + 6
	}
	p[at], p[at+1] = 0, 0
	sum := ^tunoffload.Fold(tunoffload.Sum(p[iphl:], tunoffload.PseudoSum(p, proto, len(p)-iphl)))
	if sum == 0 && proto == protoUDP {
		sum = 0xffff
	}
	binary.BigEndian.PutUint16(p[at:], sum)
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

// TestCoalescerTCPRoundTrip: consecutive segments of a flow become one super-packet, which the
// kernel's segmentation turns back into the very same segments; two flows interleaved become two,
// written in the order of their first segments.
func TestCoalescerTCPRoundTrip(t *testing.T) {
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
		c := &coalescer{w: log, udpGSO: true}
		if failed, written, _ := c.write(withHeadroom(in...), testOffset); failed != 0 || written != len(in) || len(log.writes) != 2 {
			t.Fatalf("v%d: %d writes, %d failed, %d packets written; want 2, 0, %d", version, len(log.writes), failed, written, len(in))
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

// TestCoalescerTCPBreaks: a gap in the sequence, a different acknowledgment, window, TTL,
// IPv4 identification (not the next one) or header length, a wrong TCP or IPv4 header checksum, a
// segment after PSH or after a shorter one each start a new super-packet, and no segment joins one
// across a segment of its flow that did not join.
func TestCoalescerTCPBreaks(t *testing.T) {
	// Segment k of the flow: sequence number 1000k, identification k.
	seg := func(seq uint32, n int, flags byte) []byte { return segment(4, 1000, seq, n, flags, uint16(seq/1000)) }
	edited := func(seq uint32, edit func(p []byte)) []byte {
		p := seg(seq, 1000, tcpACK)
		edit(p)
		setChecksums(p)
		return p
	}
	otherAck := edited(3000, func(p []byte) { binary.BigEndian.PutUint32(p[28:], 1) })
	otherWindow := edited(3000, func(p []byte) { binary.BigEndian.PutUint16(p[34:], 7) })
	otherTTL := edited(3000, func(p []byte) { p[8] = 9 })
	otherID := edited(3000, func(p []byte) { binary.BigEndian.PutUint16(p[4:], 9) })
	badSum := seg(3000, 1000, tcpACK)
	badSum[60] ^= 1
	badIPSum := seg(3000, 1000, tcpACK)
	badIPSum[10] ^= 1
	badFirst := seg(1000, 1000, tcpACK)
	badFirst[60] ^= 1
	v6 := func(seq uint32, n int) []byte { return segment(6, 1000, seq, n, tcpACK, 0) }
	// A TCP checksum that computes to zero is sent as zero (unlike UDP's): valid.
	zeroSum := seg(3000, 1000, tcpACK)
	c := binary.BigEndian.Uint16(zeroSum[36:])
	w := uint32(binary.BigEndian.Uint16(zeroSum[40:])) + uint32(c) // one's-complement add to the first payload word
	binary.BigEndian.PutUint16(zeroSum[40:], uint16(w+w>>16))
	setChecksums(zeroSum)
	if binary.BigEndian.Uint16(zeroSum[36:]) != 0 {
		t.Fatalf("test segment's checksum is %#04x, not 0", binary.BigEndian.Uint16(zeroSum[36:]))
	}
	for _, c := range []struct {
		name   string
		pkts   [][]byte
		writes []int // segments per write
	}{
		{"in order", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), seg(3000, 500, tcpACK)}, []int{3}},
		{"gap", [][]byte{seg(1000, 1000, tcpACK), seg(3000, 1000, tcpACK), seg(2000, 1000, tcpACK)}, []int{1, 1, 1}},
		{"ack", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), otherAck}, []int{2, 1}},
		{"window", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), otherWindow}, []int{2, 1}},
		{"ttl", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), otherTTL}, []int{2, 1}},
		{"identification", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), otherID}, []int{2, 1}},
		{"checksum", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), badSum, seg(4000, 1000, tcpACK)}, []int{2, 1, 1}},
		{"IPv4 header checksum", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), badIPSum}, []int{2, 1}},
		{"checksum zero", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 1000, tcpACK), zeroSum}, []int{3}},
		{"first's checksum", [][]byte{badFirst, seg(2000, 1000, tcpACK), seg(3000, 1000, tcpACK)}, []int{1, 2}},
		{"push", [][]byte{seg(1000, 1000, tcpACK|tcpPSH), seg(2000, 1000, tcpACK)}, []int{1, 1}},
		{"shorter", [][]byte{seg(1000, 1000, tcpACK), seg(2000, 500, tcpACK), seg(2500, 500, tcpACK)}, []int{2, 1}},
		{"longer", [][]byte{seg(1000, 500, tcpACK), seg(1500, 1000, tcpACK)}, []int{1, 1}},
		// IPv6: an IPv4 pure ACK would take the identification the next segment needs.
		{"pure ack between", [][]byte{v6(1000, 1000), v6(2000, 0), v6(2000, 1000)}, []int{2, 1}},
	} {
		log := &vnetLog{}
		(&coalescer{w: log, udpGSO: true}).write(withHeadroom(c.pkts...), testOffset)
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

// TestCoalescerUDP: datagrams of a flow coalesce only where the TUN takes UDP super-packets,
// with consecutive identifications or, atomic, one fixed identification, and never across a
// fragment of a UDP flow, which keeps its place.
func TestCoalescerUDP(t *testing.T) {
	var id uint16 // the datagrams' identifications count up, as a sender's do
	udp := func(sport uint16) []byte {
		p := tuntest.Packet(4, protoUDP, sport, 100, 0)
		id++
		binary.BigEndian.PutUint16(p[4:], id)
		p[8] = 64
		binary.BigEndian.PutUint16(p[24:], 108)
		setChecksums(p)
		return p
	}
	// Identification 0 throughout, as Linux sends datagrams of an unconnected socket; atomic (DF)
	// or not.
	fixedID := func(df bool) []byte {
		p := udp(1)
		p[4], p[5] = 0, 0
		if df {
			p[6] |= 0x40
		}
		setChecksums(p)
		return p
	}
	fragment := tuntest.Packet(4, protoUDP, 1, 100, 0)
	binary.BigEndian.PutUint16(fragment[6:], 0x2000)
	badLength := udp(1)
	binary.BigEndian.PutUint16(badLength[24:], 100) // less than the 108 bytes the IP header says
	setChecksums(badLength)
	for _, c := range []struct {
		name   string
		udpGSO bool
		pkts   [][]byte
		writes []int // source port of each write's packet, and segments
	}{
		{"coalesced", true, [][]byte{udp(1), udp(1), udp(1)}, []int{1, 3}},
		{"no UDP GSO", false, [][]byte{udp(1), udp(1)}, []int{1, 1, 1, 1}},
		{"atomic, fixed identification", true, [][]byte{fixedID(true), fixedID(true), fixedID(true)}, []int{1, 3}},
		{"fixed identification", true, [][]byte{fixedID(false), fixedID(false)}, []int{1, 1, 1, 1}},
		{"fragment", true, [][]byte{udp(1), udp(1), fragment, udp(1), udp(1)}, []int{1, 2, 1, 1, 1, 2}},
		{"UDP length", true, [][]byte{udp(1), udp(1), badLength, udp(1), udp(1)}, []int{1, 2, 1, 1, 1, 2}},
	} {
		log := &vnetLog{}
		(&coalescer{w: log, udpGSO: c.udpGSO}).write(withHeadroom(c.pkts...), testOffset)
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

// TestCoalescerGarbage: whatever the packets, every one is written (alone or in a super-packet)
// and nothing panics. FuzzCoalescer also checks what is written.
func TestCoalescerGarbage(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := &coalescer{udpGSO: true}
	out, sizes := make([][]byte, batchSize), make([]int, batchSize)
	for i := range out {
		out[i] = make([]byte, 2048)
	}
	for range 2000 {
		var pkts [][]byte
		for range 1 + r.IntN(batchSize) {
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
				p = tuntest.Packet(4+2*r.IntN(2), protoUDP, uint16(r.IntN(3)), r.IntN(300), 0)
			}
			pkts = append(pkts, p)
		}
		log := &vnetLog{}
		c.w = log
		c.write(withHeadroom(pkts...), testOffset)
		written := 0
		for _, w := range log.writes {
			n, err := tunoffload.Split(w, out, sizes, 0)
			if err != nil {
				t.Fatalf("a write does not split: %v", err)
			}
			written += n
		}
		if written != len(pkts) {
			t.Fatalf("%d packets in, %d written", len(pkts), written)
		}
	}
}

// discard is a gatherWriter that drops what it is given.
type discard struct{}

func (discard) writev([][]byte) error { return nil }

// failEvery is a gatherWriter whose every second write fails.
type failEvery struct{ n int }

var errWrite = errors.New("write refused")

func (f *failEvery) writev([][]byte) error {
	f.n++
	if f.n%2 == 0 {
		return errWrite
	}
	return nil
}

// TestCoalescerCountsFailures: write counts the writes that failed and the packets of those that
// did not, and returns the first error.
func TestCoalescerCountsFailures(t *testing.T) {
	// Three flows of 3, 2 and 1 segments, written in that order: the second write fails.
	var pkts [][]byte
	for i := range 3 {
		pkts = append(pkts, segment(4, 1000, uint32(i*1000), 1000, tcpACK, uint16(i)))
	}
	for i := range 2 {
		pkts = append(pkts, segment(4, 2000, uint32(i*1000), 1000, tcpACK, uint16(i)))
	}
	pkts = append(pkts, segment(4, 3000, 0, 1000, tcpACK, 0))
	failed, written, err := (&coalescer{w: &failEvery{}, udpGSO: true}).write(withHeadroom(pkts...), testOffset)
	if failed != 1 || written != 4 || err != errWrite {
		t.Fatalf("%d failed, %d packets written, %v; want 1, 4, %v", failed, written, err, errWrite)
	}
}

// TestCoalescerAllocatesNothing: coalescing and writing a batch allocates nothing.
func TestCoalescerAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	var pkts [][]byte
	for i := range 64 {
		pkts = append(pkts, segment(4, 1000, uint32(i*1368), 1368, tcpACK, uint16(i)), tuntest.Packet(6, protoUDP, 7, 1000, 0))
	}
	bufs := withHeadroom(pkts...)
	c := &coalescer{w: discard{}, udpGSO: true}
	if allocs := testing.AllocsPerRun(50, func() { c.write(bufs, testOffset) }); allocs != 0 {
		t.Fatalf("write of a batch allocates %v times", allocs)
	}
}

// groScript turns fuzz input into a batch of packets for the coalescer: mostly TCP segments and UDP
// datagrams of four flows that continue one another, some with one field changed (the sequence
// number, acknowledgment, window, TTL or hop limit, identification, flow label, a checksum), and
// raw bytes; IPv4 ones atomic (DF) or not, with consecutive identifications or, atomic, a fixed one.
// Each packet takes three bytes of script (raw ones also their length and bytes).
func groScript(script []byte) [][]byte {
	type flow struct {
		seq uint32
		id  uint16
	}
	var flows [8]flow // four TCP flows, then four UDP flows
	sizes := [...]int{0, 1, 7, 100, 500, 999, 1000, 1200, 1368}
	flagsOf := [...]byte{tcpACK, tcpACK, tcpACK, tcpACK | tcpPSH, tcpACK | 0x01 /* FIN */, tcpACK | 0x80 /* CWR */, 0x04 /* RST */, tcpACK | 0x20 /* URG */}
	var pkts [][]byte
	for len(script) >= 3 && len(pkts) < batchSize {
		op, size, edit := script[0], sizes[int(script[1])%len(sizes)], script[2]
		rawLen := int(script[1])
		script = script[3:]
		version := 4 + 2*int(op>>4&1)
		f := int(op >> 2 & 3)
		fl := &flows[f]
		var p []byte
		switch op & 3 {
		case 0, 1: // TCP
			if edit&7 == 0 {
				fl.seq += 1000 // a gap
			}
			p = segment(version, 1000+uint16(f), fl.seq, size, flagsOf[edit>>3&7], 0)
			fl.seq += uint32(size)
		case 2: // UDP
			fl = &flows[4+f]
			p = tuntest.Packet(version, protoUDP, 2000+uint16(f), size+1, 0)
			for i := range size + 1 {
				p[len(p)-1-i] = byte(i) ^ edit
			}
		default: // raw bytes
			n := min(rawLen, len(script))
			pkts = append(pkts, bytes.Clone(script[:n]))
			script = script[n:]
			continue
		}
		if version == 4 {
			binary.BigEndian.PutUint16(p[4:], fl.id)
			p[8] = 64
		}
		fl.id++
		if version == 4 && op&0x20 != 0 {
			p[6] |= 0x40 // DF: an atomic datagram (RFC 6864)
			if op&0x40 != 0 {
				p[4], p[5] = 0, 0 // the fixed identification of an unconnected Linux socket
			}
		}
		iphl := 20 + 20*(version/6)
		switch edit >> 6 {
		case 1: // a header field: which one depends on the edit byte's low bits
			switch edit & 7 {
			case 1:
				if version == 4 {
					p[8]++ // TTL
				} else {
					p[7]++ // hop limit
				}
			case 2:
				if version == 4 {
					p[4]++ // identification
				} else {
					p[3]++ // flow label
				}
			case 3:
				if op&3 < 2 {
					p[iphl+9]++ // acknowledgment number
				}
			case 4:
				if op&3 < 2 {
					p[iphl+15]++ // window
				}
			}
			setChecksums(p)
		case 2:
			setChecksums(p)
			if edit&1 == 0 {
				p[len(p)-1] ^= 0x10 // a wrong transport checksum (the payload changed)
			} else if version == 4 {
				p[11] ^= 1 // a wrong IPv4 header checksum
			}
		default:
			setChecksums(p)
		}
		pkts = append(pkts, p)
	}
	return pkts
}

// FuzzCoalescer: whatever the batch, every packet is written exactly once (alone or in a
// super-packet), and segmenting the writes again (tunoffload.Split, as the kernel's GSO would) gives
// back each packet byte for byte (atomicNormal: but the identification of atomic IPv4 datagrams),
// the TCP segments and UDP datagrams of each flow in their order.
func FuzzCoalescer(f *testing.F) {
	f.Add([]byte{0, 7, 0, 0, 7, 1, 0, 7, 1, 16, 8, 1, 16, 8, 1, 2, 3, 1, 2, 3, 1}, true)
	f.Add([]byte{0, 8, 1, 4, 8, 1, 0, 8, 1, 4, 8, 1, 0, 8, 25, 0, 8, 1}, true)
	f.Add([]byte{0, 6, 1, 0, 6, 65, 0, 6, 66, 0, 6, 67, 0, 6, 68, 0, 6, 128, 0, 6, 129, 0, 6, 1}, true)
	f.Add([]byte{2, 4, 1, 2, 4, 1, 2, 4, 128, 2, 4, 1, 18, 4, 1, 18, 4, 1}, false)
	f.Add([]byte{3, 3, 0, 0x45, 0, 0, 0, 5, 1, 0, 5, 1}, true)
	f.Add([]byte{0x60, 8, 1, 0x60, 8, 1, 0x62, 4, 1, 0x62, 4, 1, 0x62, 4, 1, 0x20, 8, 1, 0x20, 8, 1}, true)
	out := make([][]byte, batchSize)
	for i := range out {
		out[i] = make([]byte, 2048)
	}
	sizes := make([]int, batchSize)
	f.Fuzz(func(t *testing.T, script []byte, udpGSO bool) {
		in := groScript(script)
		log := &vnetLog{}
		if failed, written, _ := (&coalescer{w: log, udpGSO: udpGSO}).write(withHeadroom(in...), testOffset); failed != 0 || written != len(in) {
			t.Fatalf("%d writes failed, %d packets of %d written", failed, written, len(in))
		}
		var got [][]byte
		for _, w := range log.writes {
			n, err := tunoffload.Split(w, out, sizes, 0)
			if err != nil {
				t.Fatalf("a write does not split: %v", err)
			}
			for i := range n {
				got = append(got, atomicNormal(out[i][:sizes[i]]))
			}
		}
		for i := range in {
			in[i] = atomicNormal(in[i])
		}
		if len(got) != len(in) {
			t.Fatalf("%d packets in, %d out", len(in), len(got))
		}
		// Each packet out is one that went in (the same bytes), each input used once.
		used := make([]bool, len(in))
		for _, p := range got {
			found := false
			for i, q := range in {
				if !used[i] && bytes.Equal(p, q) {
					used[i], found = true, true
					break
				}
			}
			if !found {
				t.Fatalf("a packet out is none of those in: % x", p[:min(len(p), 64)])
			}
		}
		// The coalescable packets of each flow keep their order.
		order := func(pkts [][]byte) map[string][]string {
			m := map[string][]string{}
			for _, p := range pkts {
				if kind, _ := tunoffload.Classify(p); kind == tunoffload.GROTCP || kind == tunoffload.GROUDP {
					key := string(p[:1]) + flowKey(p)
					m[key] = append(m[key], string(p))
				}
			}
			return m
		}
		want := order(in)
		for key, seq := range order(got) {
			if len(seq) != len(want[key]) {
				t.Fatalf("flow %x: %d packets out, %d in", key, len(seq), len(want[key]))
			}
			for i := range seq {
				if seq[i] != want[key][i] {
					t.Fatalf("flow %x: packet %d out of order", key, i)
				}
			}
		}
	})
}

// atomicNormal returns a copy of packet p in which, if p is an atomic IPv4 datagram (DF set), the
// identification is zero and the header checksum field says only whether it was valid (0) or not
// (1): segmentation renumbers such datagrams (see coalesce.go) but must not make a wrong checksum right.
func atomicNormal(p []byte) []byte {
	p = bytes.Clone(p)
	if len(p) >= 20 && p[0] == 0x45 && p[6]&0x40 != 0 {
		valid := tunoffload.Fold(tunoffload.Sum(p[:20], 0)) == 0xffff
		p[4], p[5], p[10], p[11] = 0, 0, 0, 1
		if valid {
			p[11] = 0
		}
	}
	return p
}

// flowKey returns the addresses, protocol and ports of the IP packet p (as tunoffload.SameFlow compares them).
func flowKey(p []byte) string {
	if p[0]>>4 == 4 {
		return string(p[9:10]) + string(p[12:24])
	}
	return string(p[6:7]) + string(p[8:44])
}

// TestChecksumsValidExact: checksumsValid accepts a packet exactly when its IPv4 header checksum
// and TCP or UDP checksum are the bytes a sender writes (setChecksums), also where a sum is zero and
// the one's complement has a second representation (all ones), which segmentation would not write
// back; a zero UDP checksum (none) is refused.
func TestChecksumsValidExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// zeroTransport edits the first payload word so that p's transport checksum computes to zero.
	zeroTransport := func(p []byte, at, payloadAt int) {
		c := binary.BigEndian.Uint16(p[at:])
		w := uint32(binary.BigEndian.Uint16(p[payloadAt:])) + uint32(c)
		binary.BigEndian.PutUint16(p[payloadAt:], uint16(w+w>>16))
		setChecksums(p)
	}
	for range 300 {
		version, proto := 4, byte(protoTCP)
		if rng.IntN(2) == 0 {
			version = 6
		}
		if rng.IntN(2) == 0 {
			proto = protoUDP
		}
		p := tuntest.Packet(version, proto, uint16(rng.Uint32()), 2+rng.IntN(200), tcpACK)
		iphl, at, thl := 20, 16, 20
		if version == 6 {
			iphl = 40
		}
		if proto == protoUDP {
			at, thl = 6, 8
		}
		at += iphl
		for i := iphl + thl; i < len(p); i++ {
			p[i] = byte(rng.Uint32())
		}
		if version == 4 {
			binary.BigEndian.PutUint16(p[4:], uint16(rng.Uint32()))
		}
		setChecksums(p)
		variants := [][]byte{p}
		z := bytes.Clone(p)
		zeroTransport(z, at, iphl+thl)
		variants = append(variants, z)
		if version == 4 {
			// An identification that makes the header checksum compute to zero.
			zi := bytes.Clone(p)
			c := binary.BigEndian.Uint16(zi[10:])
			w := uint32(binary.BigEndian.Uint16(zi[4:])) + uint32(c)
			binary.BigEndian.PutUint16(zi[4:], uint16(w+w>>16))
			setChecksums(zi)
			if binary.BigEndian.Uint16(zi[10:]) != 0 {
				t.Fatalf("header checksum %#04x, not 0", binary.BigEndian.Uint16(zi[10:]))
			}
			variants = append(variants, zi)
		}
		for _, v := range variants {
			canonical := bytes.Clone(v)
			fields := []int{at}
			if version == 4 {
				fields = append(fields, 10)
			}
			for _, f := range fields {
				good := binary.BigEndian.Uint16(canonical[f:])
				for _, x := range []uint16{good, 0, 0xffff, good + 1, good - 1, uint16(rng.Uint32())} {
					q := bytes.Clone(canonical)
					binary.BigEndian.PutUint16(q[f:], x)
					want := x == good && !(proto == protoUDP && f == at && x == 0)
					if got := checksumsValid(q, iphl, proto == protoUDP); got != want {
						t.Fatalf("v%d proto %d field at %d: %#04x (sender's %#04x): valid %v, want %v",
							version, proto, f, x, good, got, want)
					}
				}
			}
		}
	}
}
