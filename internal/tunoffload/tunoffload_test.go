// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tunoffload

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// naiveSum is RFC 1071 section 4.1's reference loop: 16-bit big-endian words, folded as they go.
func naiveSum(b []byte, initial uint32) uint16 {
	s := initial
	for len(b) >= 2 {
		s += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s>>16 != 0 {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func TestSumAgainstRFC1071(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 9000)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	ones := bytes.Repeat([]byte{0xff}, 9000) // every addition carries
	for _, src := range [][]byte{buf, ones} {
		for n := range 300 {
			for _, initial := range []uint64{0, 0xffff, 0xffffffffffffffff, r.Uint64()} {
				want := naiveSum(src[:n], uint32(Fold(initial)))
				if got := Fold(Sum(src[:n], initial)); got != want {
					t.Fatalf("length %d, initial %#x: Fold(Sum) = %#04x, want %#04x", n, initial, got, want)
				}
			}
		}
		for _, n := range []int{1420, 1421, 8999, 9000} {
			if got, want := Fold(Sum(src[:n], 0)), naiveSum(src[:n], 0); got != want {
				t.Fatalf("length %d: %#04x, want %#04x", n, got, want)
			}
		}
	}
}

// TestSumWide: each vector kernel's sum folds to the generic loop's for every length around its
// blocks (128 and 32 bytes, or 256 and 64), for sums that carry in every word, and across its 1 MiB
// calls.
func TestSumWide(t *testing.T) {
	if rest, _ := sumWide(make([]byte, 32), 0); len(rest) != 0 {
		t.Skip("no vector kernel on this CPU or build")
	}
	testSumWide(t)
	if tiers := vectorTiers(); len(tiers) > 1 {
		// The wider kernel is on: also the narrower one alone.
		defer tiers[0](true)
		tiers[0](false)
		if rest, _ := sumWide(make([]byte, 64), 0); len(rest) != 0 {
			t.Fatal("no kernel left")
		}
		testSumWide(t)
	}
}

func testSumWide(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 3<<20+77)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	ones := bytes.Repeat([]byte{0xff}, 1<<20+300)
	check := func(b []byte, initial uint64) {
		t.Helper()
		if got, want := Fold(Sum(b, initial)), Fold(sumGeneric(b, initial)); got != want {
			t.Fatalf("length %d, initial %#x: %#04x, want %#04x", len(b), initial, got, want)
		}
	}
	for n := range 1100 {
		for _, initial := range []uint64{0, 0xffffffffffffffff, r.Uint64()} {
			check(buf[n%7:][:n], initial)
			check(ones[:n], initial)
		}
	}
	for _, n := range []int{1 << 20, 1<<20 + 32, 1<<20 + 128, 1<<20 + 129, len(ones), len(buf)} {
		check(buf[:n], r.Uint64())
		check(ones[:min(n, len(ones))], 0xffffffffffffffff)
	}
}

// ipPacket builds an IP packet (version 4 or 6) of protocol proto with a TCP header of thl bytes
// (or a UDP header) and payload, with valid checksums.
func ipPacket(version int, proto byte, thl int, payload []byte, seq uint32, flags byte) []byte {
	iphl := 20
	if version == 6 {
		iphl = 40
	}
	if proto == ProtoUDP {
		thl = 8
	}
	p := make([]byte, iphl+thl+len(payload))
	if version == 4 {
		p[0] = 0x45
		binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
		binary.BigEndian.PutUint16(p[4:], 0x1234)
		p[6] = 0x40 // DF
		p[8] = 64
		p[9] = proto
		copy(p[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
		binary.BigEndian.PutUint16(p[10:], ^naiveSum(p[:20], 0))
	} else {
		p[0] = 0x60
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
		p[6] = proto
		p[7] = 64
		copy(p[8:], bytes.Repeat([]byte{0xfd, 0x01}, 8))
		copy(p[24:], bytes.Repeat([]byte{0xfd, 0x02}, 8))
	}
	th := p[iphl:]
	binary.BigEndian.PutUint16(th, 40000)
	binary.BigEndian.PutUint16(th[2:], 5201)
	csumAt := 6
	if proto == ProtoTCP {
		binary.BigEndian.PutUint32(th[4:], seq)
		binary.BigEndian.PutUint32(th[8:], 777)
		th[12] = byte(thl/4) << 4
		th[13] = flags
		binary.BigEndian.PutUint16(th[14:], 512)
		for i := 20; i < thl; i++ {
			th[i] = 1 // NOP options
		}
		csumAt = 16
	} else {
		binary.BigEndian.PutUint16(th[4:], uint16(8+len(payload)))
	}
	copy(th[thl:], payload)
	binary.BigEndian.PutUint16(th[csumAt:], ^Fold(Sum(th, PseudoSum(p, proto, len(th)))))
	return p
}

// checkPacket fails unless the IP (v4) header and the transport checksums of p verify.
func checkPacket(t *testing.T, p []byte, proto byte) {
	t.Helper()
	iphl := 40
	if p[0]>>4 == 4 {
		iphl = 20
		if naiveSum(p[:20], 0) != 0xffff {
			t.Fatalf("IPv4 header checksum wrong: % x", p[:20])
		}
	}
	l4 := p[iphl:]
	pseudo := PseudoSum(p, proto, len(l4))
	if got := naiveSum(l4, uint32(Fold(pseudo))); got != 0xffff {
		t.Fatalf("transport checksum wrong (sum %#04x)", got)
	}
}

// TestSplitTCP: a TSO super-packet splits into the segments the sender would have sent one by one,
// byte for byte (sequence numbers, flags, IPv4 identification and lengths, checksums).
func TestSplitTCP(t *testing.T) {
	payload := make([]byte, 5000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	const mss = 1368
	for _, version := range []int{4, 6} {
		for _, thl := range []int{20, 32} {
			for _, plen := range []int{mss + 1, 2 * mss, 5000} {
				flags := byte(0x10 | TCPFlagPSH | tcpCWR | tcpFIN)
				super := ipPacket(version, ProtoTCP, thl, payload[:plen], 1000, flags)
				iphl := 20
				gso := GSOTCPv4
				if version == 6 {
					iphl, gso = 40, GSOTCPv6
				}
				// As the kernel hands it over: NEEDS_CSUM, the pseudo-header sum in the field.
				binary.BigEndian.PutUint16(super[iphl+16:], Fold(PseudoSum(super, ProtoTCP, 0)))
				in := make([]byte, HeaderLen+len(super))
				(&Header{Flags: FlagNeedsCsum, GSOType: uint8(gso), HdrLen: uint16(iphl + thl), GSOSize: mss,
					CsumStart: uint16(iphl), CsumOffset: 16}).Encode(in)
				copy(in[HeaderLen:], super)
				bufs := make([][]byte, 8)
				for i := range bufs {
					bufs[i] = make([]byte, 16+iphl+thl+mss)
				}
				sizes := make([]int, 8)
				n, err := Split(in, bufs, sizes, 16)
				if want := (plen + mss - 1) / mss; err != nil || n != want {
					t.Fatalf("v%d thl %d payload %d: %d packets, %v; want %d", version, thl, plen, n, err, want)
				}
				for i := range n {
					seg := payload[i*mss : min((i+1)*mss, plen)]
					f := flags
					if i < n-1 {
						f &^= TCPFlagPSH | tcpFIN
					}
					if i > 0 {
						f &^= tcpCWR
					}
					want := ipPacket(version, ProtoTCP, thl, seg, 1000+uint32(i*mss), f)
					if version == 4 {
						binary.BigEndian.PutUint16(want[4:], 0x1234+uint16(i))
						want[10], want[11] = 0, 0
						binary.BigEndian.PutUint16(want[10:], ^naiveSum(want[:20], 0))
					}
					got := bufs[i][16 : 16+sizes[i]]
					if !bytes.Equal(got, want) {
						t.Fatalf("v%d thl %d payload %d segment %d:\n got % x\nwant % x", version, thl, plen, i, got[:iphl+thl], want[:iphl+thl])
					}
					checkPacket(t, got, ProtoTCP)
				}
			}
		}
	}
}

func TestSplitUDP(t *testing.T) {
	payload := make([]byte, 3000)
	for i := range payload {
		payload[i] = byte(i)
	}
	for _, version := range []int{4, 6} {
		super := ipPacket(version, ProtoUDP, 8, payload, 0, 0)
		iphl := 20
		if version == 6 {
			iphl = 40
		}
		in := make([]byte, HeaderLen+len(super))
		(&Header{Flags: FlagNeedsCsum, GSOType: GSOUDPL4, HdrLen: uint16(iphl + 8), GSOSize: 1000,
			CsumStart: uint16(iphl), CsumOffset: 6}).Encode(in)
		copy(in[HeaderLen:], super)
		bufs := [][]byte{make([]byte, 1100), make([]byte, 1100), make([]byte, 1100)}
		sizes := make([]int, 3)
		n, err := Split(in, bufs, sizes, 10)
		if err != nil || n != 3 {
			t.Fatalf("v%d: %d, %v", version, n, err)
		}
		for i := range n {
			got := bufs[i][10 : 10+sizes[i]]
			if !bytes.Equal(got[iphl+8:], payload[i*1000:(i+1)*1000]) || int(binary.BigEndian.Uint16(got[iphl+4:])) != 1008 {
				t.Fatalf("v%d datagram %d wrong", version, i)
			}
			checkPacket(t, got, ProtoUDP)
		}
	}
}

// TestSplitNoGSO: a single packet is copied; with NEEDS_CSUM its checksum is completed.
func TestSplitNoGSO(t *testing.T) {
	p := ipPacket(4, ProtoTCP, 20, []byte("hello, world"), 5, 0x18)
	want := bytes.Clone(p)
	binary.BigEndian.PutUint16(p[36:], Fold(PseudoSum(p, ProtoTCP, len(p)-20)))
	in := make([]byte, HeaderLen+len(p))
	(&Header{Flags: FlagNeedsCsum, CsumStart: 20, CsumOffset: 16}).Encode(in)
	copy(in[HeaderLen:], p)
	bufs, sizes := [][]byte{make([]byte, 200)}, []int{0}
	if n, err := Split(in, bufs, sizes, 10); n != 1 || err != nil || !bytes.Equal(bufs[0][10:10+sizes[0]], want) {
		t.Fatalf("%d, %v: % x", n, err, bufs[0][10:10+sizes[0]])
	}
}

// TestSplitMalformed: headers that do not describe the packet, and too few buffers, are errors, never
// a panic or a write past a buffer.
func TestSplitMalformed(t *testing.T) {
	good := ipPacket(4, ProtoTCP, 20, make([]byte, 3000), 1, 0x10)
	r := rand.New(rand.NewPCG(3, 4))
	bufs := [][]byte{make([]byte, 1500), make([]byte, 1500)}
	sizes := make([]int, 2)
	for range 20000 {
		in := make([]byte, HeaderLen+r.IntN(len(good)+1))
		h := Header{Flags: uint8(r.IntN(2)), GSOType: []uint8{0, 1, 4, 5, 3}[r.IntN(5)], GSOSize: uint16(r.IntN(2000)),
			CsumStart: uint16(r.IntN(80)), CsumOffset: uint16(r.IntN(40))}
		h.Encode(in)
		copy(in[HeaderLen:], good)
		if len(in) > HeaderLen && r.IntN(4) == 0 {
			in[HeaderLen+r.IntN(len(in)-HeaderLen)] = byte(r.Uint32())
		}
		Split(in, bufs, sizes, 10)
	}
	in := make([]byte, HeaderLen+len(good))
	(&Header{Flags: FlagNeedsCsum, GSOType: GSOTCPv4, GSOSize: 1000, CsumStart: 20, CsumOffset: 16}).Encode(in)
	copy(in[HeaderLen:], good)
	if _, err := Split(in, bufs, sizes, 10); err != ErrTooManySegments {
		t.Fatalf("3 segments into 2 buffers: %v", err)
	}
}

// TestCoalesced: segments appended to the first one make a super-packet whose header fields and
// pseudo-header sum complete, as the kernel completes CHECKSUM_PARTIAL, to the valid packet.
func TestCoalesced(t *testing.T) {
	for _, version := range []int{4, 6} {
		for _, proto := range []byte{ProtoTCP, ProtoUDP} {
			payload := make([]byte, 2500)
			for i := range payload {
				payload[i] = byte(i * 3)
			}
			pkt := ipPacket(version, proto, 20, payload[:1000], 1, 0x10)
			pkt = append(pkt, payload[1000:]...)
			iphl, thl := 20, 20
			if version == 6 {
				iphl = 40
			}
			if proto == ProtoUDP {
				thl = 8
			}
			h := Coalesced(pkt, len(pkt), iphl, thl, 1000, proto == ProtoUDP)
			if h.Flags != FlagNeedsCsum || h.GSOSize != 1000 || int(h.CsumStart) != iphl || int(h.HdrLen) != iphl+thl {
				t.Fatalf("v%d proto %d: header %+v", version, proto, h)
			}
			at := iphl + int(h.CsumOffset)
			binary.BigEndian.PutUint16(pkt[at:], ^Fold(Sum(pkt[iphl:], 0)))
			checkPacket(t, pkt, proto)
		}
	}
}

func BenchmarkSum1420(b *testing.B) {
	buf := make([]byte, 1420)
	b.Run("Sum", func(b *testing.B) {
		b.SetBytes(1420)
		for b.Loop() {
			Sum(buf, 0)
		}
	})
	b.Run("generic", func(b *testing.B) {
		b.SetBytes(1420)
		for b.Loop() {
			sumGeneric(buf, 0)
		}
	})
}

// FuzzSplit: whatever a read returns, Split returns an error or packets that fit their buffers, and
// the segments it cuts from a super-packet carry valid IPv4 header and transport checksums. Seeded
// with super-packets as the kernel hands them over.
func FuzzSplit(f *testing.F) {
	for _, version := range []int{4, 6} {
		for _, proto := range []byte{ProtoTCP, ProtoUDP} {
			p := ipPacket(version, proto, 32, make([]byte, 3000), 7, 0x18)
			iphl, gso := 20, uint8(GSOTCPv4)
			if version == 6 {
				iphl, gso = 40, GSOTCPv6
			}
			csumOffset := uint16(16)
			if proto == ProtoUDP {
				gso, csumOffset = GSOUDPL4, 6
			}
			binary.BigEndian.PutUint16(p[iphl+int(csumOffset):], Fold(PseudoSum(p, proto, 0)))
			in := make([]byte, HeaderLen+len(p))
			(&Header{Flags: FlagNeedsCsum, GSOType: gso, GSOSize: 1200, CsumStart: uint16(iphl), CsumOffset: csumOffset}).Encode(in)
			copy(in[HeaderLen:], p)
			f.Add(in)
		}
	}
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, 1600)
	}
	sizes := make([]int, len(bufs))
	f.Fuzz(func(t *testing.T, in []byte) {
		var h Header
		if len(in) >= HeaderLen {
			h.Decode(in)
		}
		n, err := Split(bytes.Clone(in), bufs, sizes, 10)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with %d packets", err, n)
			}
			return
		}
		for i := range n {
			if sizes[i] > len(bufs[i])-10 {
				t.Fatalf("packet %d: size %d overflows its buffer", i, sizes[i])
			}
		}
		if h.GSOType == GSONone {
			return
		}
		proto := byte(ProtoTCP)
		if h.GSOType == GSOUDPL4 {
			proto = ProtoUDP
		}
		for i := range n {
			p := bufs[i][10 : 10+sizes[i]]
			iphl := int(h.CsumStart)
			if p[0]>>4 == 4 && naiveSum(p[:iphl], 0) != 0xffff {
				t.Fatalf("segment %d: IPv4 header checksum wrong", i)
			}
			if got := naiveSum(p[iphl:], uint32(Fold(PseudoSum(p, proto, len(p)-iphl)))); got != 0xffff {
				t.Fatalf("segment %d: transport checksum wrong", i)
			}
		}
	})
}

// BenchmarkSplit cuts a 64 KiB IPv4 TSO super-packet, as the kernel hands one over for a TCP
// stream through a tunnel of MTU 1420 (32-byte TCP header: timestamps), into its 47 segments.
func BenchmarkSplit(b *testing.B) {
	const gsoSize = 1368
	p := ipPacket(4, ProtoTCP, 32, make([]byte, 47*gsoSize), 7, 0x10)
	binary.BigEndian.PutUint16(p[20+16:], Fold(PseudoSum(p, ProtoTCP, 0)))
	in := make([]byte, HeaderLen+len(p))
	(&Header{Flags: FlagNeedsCsum, GSOType: GSOTCPv4, GSOSize: gsoSize, CsumStart: 20, CsumOffset: 16}).Encode(in)
	copy(in[HeaderLen:], p)
	work := make([]byte, len(in))
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 1600)
	}
	sizes := make([]int, len(bufs))
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		copy(work, in)
		if n, err := Split(work, bufs, sizes, 16); err != nil || n != 47 {
			b.Fatalf("Split: %d packets, %v", n, err)
		}
	}
}

// scatter lays in (a virtio-net header and a packet) out as a readv of the TUN would with the
// iovecs SplitScattered expects for hdrLen and segSize, over the first k buffers of bufs and then
// a spill buffer, and reports whether the spill buffer took some of it.
func scatter(in []byte, bufs [][]byte, offset, hdrLen, segSize, k int) bool {
	in = in[copy(bufs[0][offset-HeaderLen:offset+hdrLen+segSize], in):]
	for i := 1; i < k && len(in) > 0; i++ {
		in = in[copy(bufs[i][offset+hdrLen:offset+hdrLen+segSize], in):]
	}
	return len(in) > 0
}

// TestSplitScattered: where SplitScattered takes a read scattered over the buffers, it leaves
// exactly the packets Split makes of the same read contiguous; where it does not (other header or
// segment sizes than the iovecs expected, too few buffers, a packet without GSO too long for the
// first), it leaves the buffers as the read left them, and Split on the gathered read decides.
func TestSplitScattered(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const offset = 16
	newBufs := func(n int) [][]byte {
		b := make([][]byte, n)
		for i := range b {
			b[i] = make([]byte, 2048)
		}
		return b
	}
	want, got := newBufs(64), newBufs(64)
	wantSizes, gotSizes := make([]int, 64), make([]int, 64)
	taken := 0
	for iter := range 2000 {
		version, proto := 4, byte(ProtoTCP)
		if rng.IntN(2) == 0 {
			version = 6
		}
		if rng.IntN(3) == 0 {
			proto = ProtoUDP
		}
		thl := 20 + 4*rng.IntN(4)
		segSize := 500 + rng.IntN(1000)
		payload := make([]byte, rng.IntN(40*segSize))
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		p := ipPacket(version, proto, thl, payload, rng.Uint32(), 0x18)
		iphl, gso, csumOffset := 20, uint8(GSOTCPv4), 16
		if version == 6 {
			iphl, gso = 40, GSOTCPv6
		}
		if proto == ProtoUDP {
			thl, gso, csumOffset = 8, GSOUDPL4, 6
		}
		h := Header{Flags: FlagNeedsCsum, GSOType: gso, GSOSize: uint16(segSize), CsumStart: uint16(iphl),
			CsumOffset: uint16(csumOffset)}
		if len(payload) <= segSize && rng.IntN(2) == 0 {
			h.GSOType, h.GSOSize = GSONone, 0 // one packet, its checksum to complete
		}
		binary.BigEndian.PutUint16(p[iphl+csumOffset:], Fold(PseudoSum(p, proto, len(p)-iphl)))
		in := make([]byte, HeaderLen+len(p))
		h.Encode(in)
		copy(in[HeaderLen:], p)

		// The iovecs expect these sizes: mostly the packet's, sometimes not.
		hdrLen, expect := iphl+thl, segSize
		switch rng.IntN(6) {
		case 0:
			hdrLen += 4
		case 1:
			expect -= 8
		}
		k := 1 + rng.IntN(50)
		spilled := scatter(in, got, offset, hdrLen, expect, k)
		before := make([][]byte, k)
		for i := range before {
			before[i] = bytes.Clone(got[i])
		}
		wn, werr := Split(bytes.Clone(in), want, wantSizes, offset)
		n, ok, err := SplitScattered(got[:k], gotSizes, offset, hdrLen, expect, len(in))
		if !ok {
			if !spilled && hdrLen == iphl+thl && expect == segSize && werr == nil && wn <= k {
				t.Fatalf("iteration %d: not taken, though laid out as expected (%d segments, %d buffers)", iter, wn, k)
			}
			for i := range before {
				if !bytes.Equal(before[i], got[i]) {
					t.Fatalf("iteration %d: not taken, but buffer %d changed", iter, i)
				}
			}
			continue
		}
		taken++
		if spilled {
			t.Fatalf("iteration %d: taken, but the read spilled past the buffers", iter)
		}
		if (err != nil) != (werr != nil) || n != wn {
			t.Fatalf("iteration %d: %d packets, %v; Split: %d, %v", iter, n, err, wn, werr)
		}
		for i := range n {
			if !bytes.Equal(got[i][offset:offset+gotSizes[i]], want[i][offset:offset+wantSizes[i]]) {
				t.Fatalf("iteration %d: packet %d differs from Split's", iter, i)
			}
		}
	}
	if taken < 500 {
		t.Fatalf("only %d of 2000 reads taken scattered", taken)
	}
}
