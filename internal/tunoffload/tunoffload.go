// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package tunoffload does the segmentation and coalescing arithmetic of a Linux TUN device opened
// with IFF_VNET_HDR: the virtio-net header in front of every packet (virtio 1.x spec, section 5.1.6
// "Device Operation"; include/uapi/linux/virtio_net.h), the Internet checksum (RFC 1071) and its
// pseudo-headers (RFC 793 section 3.1, RFC 768, RFC 8200 section 8.1), splitting a TSO/USO
// super-packet the kernel hands over into packets, finishing a super-packet built by appending
// segments, for the kernel to take as one, and which packets a GRO coalesces (gro.go). It
// allocates nothing and does no I/O: package tunvnet reads and writes the TUN with it, and package
// dataplane's Device uses its GRO classification to feed a TUN that coalesces behind its Write.
package tunoffload

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// HeaderLen is the size of struct virtio_net_hdr, which precedes every packet read from or written
// to a TUN with IFF_VNET_HDR.
const HeaderLen = 10

// Header fields (virtio spec 5.1.6; the TUN uses the host's byte order for the 16-bit ones).
const (
	FlagNeedsCsum = 1 // the checksum at CsumStart+CsumOffset holds only the pseudo-header sum

	GSONone  = 0
	GSOTCPv4 = 1
	GSOTCPv6 = 4
	GSOUDPL4 = 5
)

// Header is a decoded virtio_net_hdr.
type Header struct {
	Flags      uint8
	GSOType    uint8
	HdrLen     uint16 // bytes of IP and transport headers
	GSOSize    uint16 // payload bytes of each segment but the last
	CsumStart  uint16 // where the checksummed part starts: the transport header
	CsumOffset uint16 // where, from CsumStart, the checksum field is
}

// Decode reads h from b, which holds at least HeaderLen bytes.
func (h *Header) Decode(b []byte) {
	_ = b[HeaderLen-1]
	h.Flags, h.GSOType = b[0], b[1]
	h.HdrLen = binary.NativeEndian.Uint16(b[2:])
	h.GSOSize = binary.NativeEndian.Uint16(b[4:])
	h.CsumStart = binary.NativeEndian.Uint16(b[6:])
	h.CsumOffset = binary.NativeEndian.Uint16(b[8:])
}

// Encode writes h into b, which holds at least HeaderLen bytes.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderLen-1]
	b[0], b[1] = h.Flags, h.GSOType
	binary.NativeEndian.PutUint16(b[2:], h.HdrLen)
	binary.NativeEndian.PutUint16(b[4:], h.GSOSize)
	binary.NativeEndian.PutUint16(b[6:], h.CsumStart)
	binary.NativeEndian.PutUint16(b[8:], h.CsumOffset)
}

// Sum adds b to the unfolded one's-complement sum initial (RFC 1071 section 4.1, with 64-bit words:
// the end-around carry of each addition goes back into the sum, so a 64-bit sum folds to the same
// 16-bit one). The bytes are taken big-endian: byte 0 is the high byte of the first 16-bit word, and
// an odd last byte is padded with a zero. On amd64 with AVX-512 or AVX2 a vector kernel takes all but
// the last bytes (under 32) of b.
func Sum(b []byte, initial uint64) uint64 {
	b, initial = sumWide(b, initial)
	return sumGeneric(b, initial)
}

// sumGeneric is Sum without the vector kernel.
func sumGeneric(b []byte, initial uint64) uint64 {
	// Loaded in the host's (little-endian) order, the 16-bit words are byte-swapped; a one's
	// complement sum commutes with swapping (RFC 1071 section 2(B)), so the sum is swapped back once
	// at the end. Two independent carry chains of 32 bytes each per round keep two adders busy; the
	// carries out of them are counted and added back at the end (end-around carry).
	s := bits.ReverseBytes64(initial)
	var t, carries uint64
	for len(b) >= 64 {
		var c0, c1 uint64
		s, c0 = bits.Add64(s, binary.LittleEndian.Uint64(b[0:]), 0)
		s, c0 = bits.Add64(s, binary.LittleEndian.Uint64(b[8:]), c0)
		s, c0 = bits.Add64(s, binary.LittleEndian.Uint64(b[16:]), c0)
		s, c0 = bits.Add64(s, binary.LittleEndian.Uint64(b[24:]), c0)
		t, c1 = bits.Add64(t, binary.LittleEndian.Uint64(b[32:]), 0)
		t, c1 = bits.Add64(t, binary.LittleEndian.Uint64(b[40:]), c1)
		t, c1 = bits.Add64(t, binary.LittleEndian.Uint64(b[48:]), c1)
		t, c1 = bits.Add64(t, binary.LittleEndian.Uint64(b[56:]), c1)
		carries += c0 + c1
		b = b[64:]
	}
	for len(b) >= 8 {
		var c uint64
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b), 0)
		carries += c
		b = b[8:]
	}
	var tail uint64
	for i, x := range b { // at most 7 bytes, little-endian like the words above
		tail |= uint64(x) << (8 * i)
	}
	var c uint64
	s, c = bits.Add64(s, tail, 0)
	carries += c
	s, c = bits.Add64(s, t, 0)
	carries += c
	s, c = bits.Add64(s, carries, 0)
	return bits.ReverseBytes64(s + c) // s is small if c is 1: no further carry

}

// Fold folds an unfolded sum to 16 bits (RFC 1071 section 4.1); the checksum field takes ^Fold.
func Fold(s uint64) uint16 {
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return uint16(s)
}

// PseudoSum returns the unfolded sum of the pseudo-header of a TCP or UDP packet of protocol proto
// whose transport header and payload are length bytes, in the IP packet pkt (RFC 793 section 3.1
// and RFC 768 for IPv4; RFC 8200 section 8.1 for IPv6).
func PseudoSum(pkt []byte, proto byte, length int) uint64 {
	if pkt[0]>>4 == 4 {
		// The two addresses as 32-bit words: 2^16 = 1 modulo 2^16-1, so a 32-bit word sums like
		// its two 16-bit halves; three values under 2^32 cannot carry out of 64 bits.
		return uint64(binary.BigEndian.Uint32(pkt[12:])) + uint64(binary.BigEndian.Uint32(pkt[16:])) +
			uint64(proto) + uint64(length)
	}
	return add(Sum(pkt[8:40], 0), uint64(proto)+uint64(length))
}

// add adds x to the unfolded sum s, the carry out of 64 bits back in (end-around carry).
func add(s, x uint64) uint64 {
	s, c := bits.Add64(s, x, 0)
	return s + c // s is at most 2^64-2 if c is 1: no further carry
}

// IPv4HeaderSum returns the unfolded sum of the 20-byte IPv4 header h (no options), as its five
// 32-bit words, which sum like their 16-bit halves (2^16 = 1 modulo 2^16-1).
func IPv4HeaderSum(h []byte) uint64 {
	_ = h[19]
	return uint64(binary.BigEndian.Uint32(h[0:])) + uint64(binary.BigEndian.Uint32(h[4:])) +
		uint64(binary.BigEndian.Uint32(h[8:])) + uint64(binary.BigEndian.Uint32(h[12:])) +
		uint64(binary.BigEndian.Uint32(h[16:]))
}

// ErrMalformed is returned for a super-packet whose header does not describe it.
var ErrMalformed = errors.New("tunoffload: malformed offload packet")

// ErrTooManySegments is returned when a super-packet has more segments than there are buffers.
var ErrTooManySegments = errors.New("tunoffload: more segments than buffers")

// Split turns what one read of the TUN returned, a virtio-net header and a packet, into packets:
// packet i into bufs[i][offset:] with its length in sizes[i]. A packet without GSO is copied as it
// is, its checksum completed if the header asks for it (NEEDS_CSUM: only the pseudo-header sum is in
// the field); a TCP (TSO) or UDP (USO) super-packet is cut into segments of GSOSize payload bytes,
// each with the headers of the first, and its IPv4 total length, identification (incremented per
// segment, as the kernel's GSO does) and header checksum, or IPv6 payload length; TCP sequence
// numbers advance by the payload before, FIN and PSH stay on the last segment only, CWR on the
// first (RFC 3168 section 6.1.2); UDP lengths are set. Every segment gets its full TCP or UDP
// checksum: peers may verify it (wireguard-go and kernel WireGuard peers hand packets on as they
// arrive). in may be modified. It returns the number of packets, or an error and no packets.
func Split(in []byte, bufs [][]byte, sizes []int, offset int) (int, error) {
	if len(in) < HeaderLen || len(bufs) == 0 {
		return 0, ErrMalformed
	}
	var h Header
	h.Decode(in)
	pkt := in[HeaderLen:]
	if h.GSOType == GSONone {
		if offset > len(bufs[0]) || len(pkt) > len(bufs[0])-offset {
			return 0, ErrMalformed
		}
		sizes[0] = copy(bufs[0][offset:], pkt)
		return completeOne(h, bufs[0][offset:offset+sizes[0]])
	}
	sp, err := parseSuper(h, pkt)
	if err != nil {
		return 0, err
	}
	return sp.cut(bufs, sizes, offset, len(pkt)-sp.hl, pkt[sp.hl:])
}

// SplitScattered is Split for a read the TUN scattered over bufs, as a readv puts it when its
// iovecs expect a super-packet of hdrLen bytes of headers and segSize-byte segments: the
// virtio-net header at bufs[0][offset-HeaderLen:offset], the packet from bufs[0][offset:], its
// first segment's payload behind its headers and segment i's payload at bufs[i][offset+hdrLen:]
// for i >= 1. length is the bytes the read returned, header included. A packet without GSO must
// have fit bufs[0]. The payloads stay where they are; only the headers are written. It reports
// false, and leaves bufs as they are, if the packet is not laid out so: one that is not a
// super-packet and does not fit bufs[0][:offset+hdrLen+segSize], a super-packet of other header or
// segment sizes, or one of more segments than bufs. Its errors are Split's.
func SplitScattered(bufs [][]byte, sizes []int, offset, hdrLen, segSize, length int) (int, bool, error) {
	if len(bufs) == 0 || offset < HeaderLen || length < HeaderLen || hdrLen <= 0 || segSize <= 0 ||
		len(bufs[0]) < offset+hdrLen+segSize {
		return 0, false, nil
	}
	var h Header
	h.Decode(bufs[0][offset-HeaderLen:])
	if h.GSOType == GSONone {
		if length > HeaderLen+hdrLen+segSize {
			return 0, false, nil
		}
		sizes[0] = length - HeaderLen
		n, err := completeOne(h, bufs[0][offset:offset+sizes[0]])
		return n, true, err
	}
	sp, err := parseSuper(h, bufs[0][offset:offset+min(hdrLen+segSize, length-HeaderLen)])
	payload := length - HeaderLen - hdrLen
	if err != nil || sp.hl != hdrLen || int(h.GSOSize) != segSize || (payload+segSize-1)/segSize > len(bufs) {
		return 0, false, nil // Split, on the packet gathered, decides
	}
	n, err := sp.cut(bufs, sizes, offset, payload, nil)
	return n, true, err
}

// Layout returns the header and segment sizes of the super-packet in, a virtio-net header and a
// packet as Split takes them, or zeros if in is not one Split would cut.
func Layout(in []byte) (hdrLen, segSize int) {
	if len(in) < HeaderLen {
		return 0, 0
	}
	var h Header
	h.Decode(in)
	if h.GSOType == GSONone {
		return 0, 0
	}
	sp, err := parseSuper(h, in[HeaderLen:])
	if err != nil {
		return 0, 0
	}
	return sp.hl, int(h.GSOSize)
}

// completeOne completes the checksum of the one packet pkt, read with header h without GSO, if h
// asks for it (NEEDS_CSUM), and returns 1, or an error.
func completeOne(h Header, pkt []byte) (int, error) {
	if h.Flags&FlagNeedsCsum != 0 {
		at := int(h.CsumStart) + int(h.CsumOffset)
		if int(h.CsumStart) > len(pkt) || at+2 > len(pkt) {
			return 0, ErrMalformed
		}
		binary.BigEndian.PutUint16(pkt[at:], ^Fold(Sum(pkt[h.CsumStart:], 0)))
	}
	return 1, nil
}

// superPacket is what Split works out from a super-packet's headers.
type superPacket struct {
	h         Header
	head      []byte // the packet's first bytes: its headers, then (some of) its payload
	v4        bool
	proto     byte
	iphl, thl int
	hl        int // iphl + thl
	csumAt    int // the checksum field's offset in the transport header
}

// parseSuper checks the headers at the start of pkt, a super-packet read with header h whose
// payload runs on past the end of pkt (scattered) or not.
func parseSuper(h Header, pkt []byte) (superPacket, error) {
	sp := superPacket{h: h, head: pkt}
	if len(pkt) < 40 || h.GSOSize == 0 {
		return sp, ErrMalformed
	}
	v4, v6 := pkt[0]>>4 == 4, pkt[0]>>4 == 6
	iphl := int(h.CsumStart)
	if (!v4 && !v6) || (v4 && (iphl < 20 || iphl != int(pkt[0]&0x0f)*4)) || (v6 && iphl < 40) || iphl+20 > len(pkt) {
		return sp, ErrMalformed
	}
	switch {
	case h.GSOType == GSOTCPv4 && v4, h.GSOType == GSOTCPv6 && v6:
		sp.proto, sp.thl, sp.csumAt = ProtoTCP, int(pkt[iphl+12]>>4)*4, 16
	case h.GSOType == GSOUDPL4:
		sp.proto, sp.thl, sp.csumAt = ProtoUDP, 8, 6
	default:
		return sp, ErrMalformed
	}
	// The header length is worked out from the headers: the kernel's HdrLen may cover a whole
	// forwarded packet.
	sp.v4, sp.iphl, sp.hl = v4, iphl, iphl+sp.thl
	if sp.thl < 8 || sp.hl >= len(pkt) || (sp.proto == ProtoTCP && sp.thl < 20) {
		return sp, ErrMalformed
	}
	return sp, nil
}

// cut writes the segments of the super-packet, total payload bytes, into bufs[i][offset:] (see
// Split): with payload, copying each segment's payload behind its headers; with payload nil, the
// payloads are in place already (SplitScattered).
func (sp *superPacket) cut(bufs [][]byte, sizes []int, offset, total int, payload []byte) (int, error) {
	h, pkt, iphl, hl := sp.h, sp.head, sp.iphl, sp.hl
	gso := int(h.GSOSize)
	n := (total + gso - 1) / gso
	if n > len(bufs) {
		return 0, ErrTooManySegments
	}
	for i := range n {
		if len(bufs[i]) < offset+hl+gso {
			return 0, ErrMalformed
		}
	}
	seq := binary.BigEndian.Uint32(pkt[iphl+4:])
	id := binary.BigEndian.Uint16(pkt[4:])
	flags := pkt[iphl+13]
	// The pseudo-header without its length, and the transport header without the fields that
	// change per segment (the checksum, and the sequence number and flags or UDP length), are
	// summed once; each segment adds what is its own.
	pseudo := PseudoSum(pkt, sp.proto, 0)
	if sp.v4 {
		clear(pkt[2:6])         // total length and identification, set per segment
		pkt[10], pkt[11] = 0, 0 // recomputed per segment
	}
	if sp.proto == ProtoTCP {
		pkt[iphl+16], pkt[iphl+17] = 0, 0
		pkt[iphl+13] = 0
		clear(pkt[iphl+4 : iphl+8])
	} else {
		pkt[iphl+6], pkt[iphl+7] = 0, 0
		pkt[iphl+4], pkt[iphl+5] = 0, 0
	}
	thSum := Sum(pkt[iphl:hl], pseudo)
	// Likewise the IPv4 header (with its options) without the total length, identification and
	// checksum, zeroed above.
	var ipSum uint64
	if sp.v4 {
		ipSum = Sum(pkt[:iphl], 0)
	}
	// Every segment starts from the headers in pkt. Scattered, the first segment's are those
	// headers, and the segments after it copy them with the first one's own fields in: each
	// segment writes all of those fields of its own anyway.
	header := pkt[:hl]
	for i := range n {
		segLen := min(gso, total-i*gso)
		out := bufs[i][offset : offset+hl+segLen]
		copy(out, header)
		if payload != nil {
			copy(out[hl:], payload[i*gso:i*gso+segLen])
		}
		seg := out[hl:]
		if !sp.v4 {
			binary.BigEndian.PutUint16(out[4:], uint16(len(out)-40))
		} else {
			binary.BigEndian.PutUint16(out[2:], uint16(len(out)))
			binary.BigEndian.PutUint16(out[4:], id+uint16(i))
			binary.BigEndian.PutUint16(out[10:], ^Fold(add(ipSum, uint64(len(out))+uint64(id+uint16(i)))))
		}
		th := out[iphl:]
		// The per-segment transport header fields, added to thSum as the 16-bit words they sit in.
		var own uint64
		l4len := sp.thl + segLen
		if sp.proto == ProtoTCP {
			f := flags
			if i != n-1 {
				f &^= tcpFIN | TCPFlagPSH
			}
			if i != 0 {
				f &^= tcpCWR
			}
			s := seq + uint32(i)*uint32(gso)
			binary.BigEndian.PutUint32(th[4:], s)
			th[13] = f
			// The sequence number as a 32-bit word; the flags are the low byte of the 16-bit word
			// at offset 12, whose high byte (the data offset) is in thSum.
			own = uint64(s) + uint64(f)
		} else {
			binary.BigEndian.PutUint16(th[4:], uint16(l4len))
			own = uint64(l4len)
		}
		sum := ^Fold(add(Sum(seg, add(thSum, own)), uint64(l4len)))
		if sp.proto == ProtoUDP && sum == 0 {
			sum = 0xffff // RFC 768: a computed zero is sent as all ones
		}
		binary.BigEndian.PutUint16(th[sp.csumAt:], sum)
		sizes[i] = len(out)
	}
	return n, nil
}

// Coalesced finishes a super-packet of length bytes for a write to the TUN and returns its
// virtio-net header. The super-packet is built from segments of gsoSize payload bytes (the last may
// be shorter) behind the IP header of iphl bytes and the TCP or UDP header of thl bytes of the first
// segment, first, whose headers are edited in place: the IPv4 total length and header checksum, or
// the IPv6 payload length, the UDP length, and the pseudo-header sum in the transport checksum field
// with NEEDS_CSUM, as a device leaves a packet whose checksum it has not computed (the kernel's
// CHECKSUM_PARTIAL: taken as verified on receive, completed on the way out if the packet is
// forwarded).
func Coalesced(first []byte, length, iphl, thl, gsoSize int, udp bool) Header {
	h := Header{Flags: FlagNeedsCsum, HdrLen: uint16(iphl + thl), GSOSize: uint16(gsoSize), CsumStart: uint16(iphl)}
	proto := byte(ProtoTCP)
	h.CsumOffset = 16
	if udp {
		proto = ProtoUDP
		h.CsumOffset = 6
		h.GSOType = GSOUDPL4
		binary.BigEndian.PutUint16(first[iphl+4:], uint16(length-iphl))
	}
	if first[0]>>4 == 6 {
		if !udp {
			h.GSOType = GSOTCPv6
		}
		binary.BigEndian.PutUint16(first[4:], uint16(length-40))
	} else {
		if !udp {
			h.GSOType = GSOTCPv4
		}
		binary.BigEndian.PutUint16(first[2:], uint16(length))
		first[10], first[11] = 0, 0
		binary.BigEndian.PutUint16(first[10:], ^Fold(Sum(first[:iphl], 0)))
	}
	binary.BigEndian.PutUint16(first[iphl+int(h.CsumOffset):], Fold(PseudoSum(first, proto, length-iphl)))
	return h
}
