//go:build gc && !purego

package kernels

import (
	"encoding/binary"
	"math/bits"
)

// Scalar Poly1305 (RFC 8439 section 2.5) in radix 2^64, for the MAC of a short message on its own
// (chachaOneOp): a 64x64-bit multiplier does a block in four products, where the 16-byte blocks of a
// few-block message give the vector kernels nothing to share out.
//
// h is h0 + h1*2^64 + h2*2^128 with h2 <= 5 between blocks (below 2^130 + 2^130/4, not fully
// reduced); adding a block leaves h2 <= 7, so h2*r fits in 64 bits. The clamped r = r0 + r1*2^64 has
// r0, r1 < 2^60, so every sum of two 128-bit products below fits in 128 bits.

// poly1305Short returns the RFC 8439 section 2.8 tag of ad and ct under the one-time key. Constant
// time in the key and the message (the lengths are public).
func poly1305Short(ad, ct []byte, key *[32]byte) (tag [TagSize]byte) {
	r0 := binary.LittleEndian.Uint64(key[0:]) & 0x0ffffffc0fffffff
	r1 := binary.LittleEndian.Uint64(key[8:]) & 0x0ffffffc0ffffffc
	var h [3]uint64
	var last [16]byte
	padded := func(b []byte) { // b, then its last partial block zero padded
		full := len(b) &^ 15
		poly1305Blocks64(&h, r0, r1, b[:full])
		if full < len(b) {
			clear(last[:])
			copy(last[:], b[full:])
			poly1305Blocks64(&h, r0, r1, last[:])
		}
	}
	padded(ad)
	padded(ct)
	binary.LittleEndian.PutUint64(last[0:], uint64(len(ad)))
	binary.LittleEndian.PutUint64(last[8:], uint64(len(ct)))
	poly1305Blocks64(&h, r0, r1, last[:])

	// h mod p: h + 5 reaches 2^130 (h2 + carry >= 4) exactly when h >= p, and then h - p and h + 5
	// agree below 2^128, which is all the tag keeps. h < 2p, so one subtraction is enough.
	g0, c := bits.Add64(h[0], 5, 0)
	g1, c := bits.Add64(h[1], 0, c)
	useG := -((h[2] + c) >> 2) // all ones when h >= p
	lo := h[0] ^ (h[0]^g0)&useG
	hi := h[1] ^ (h[1]^g1)&useG
	lo, c = bits.Add64(lo, binary.LittleEndian.Uint64(key[16:]), 0)
	hi, _ = bits.Add64(hi, binary.LittleEndian.Uint64(key[24:]), c)
	binary.LittleEndian.PutUint64(tag[0:], lo)
	binary.LittleEndian.PutUint64(tag[8:], hi)
	clear(h[:])
	clear(last[:])
	return tag
}

// poly1305Blocks64 absorbs msg, whose length is a multiple of 16, into h: h = (h + m + 2^128) * r,
// partially reduced mod 2^130-5.
func poly1305Blocks64(h *[3]uint64, r0, r1 uint64, msg []byte) {
	h0, h1, h2 := h[0], h[1], h[2]
	for ; len(msg) >= 16; msg = msg[16:] {
		var c uint64
		h0, c = bits.Add64(h0, binary.LittleEndian.Uint64(msg[0:]), 0)
		h1, c = bits.Add64(h1, binary.LittleEndian.Uint64(msg[8:]), c)
		h2 += c + 1

		// t = h * r in four 64-bit words: t0 + t1*2^64 + t2*2^128 + t3*2^192.
		m0h, m0l := bits.Mul64(h0, r0)
		m1h, m1l := mulAdd64(h0, r1, h1, r0)
		m2h, m2l := mulAdd64(h1, r1, h2, r0)
		m3 := h2 * r1
		t0 := m0l
		t1, c := bits.Add64(m0h, m1l, 0)
		t2, c := bits.Add64(m1h, m2l, c)
		t3 := m2h + m3 + c

		// 2^130 = 5 mod p: the part of t at and above 2^130, c = t >> 130, comes back as 4c + c.
		// 4c is t2:t3 with the low two bits cleared.
		h0, h1, h2 = t0, t1, t2&3
		h0, c = bits.Add64(h0, t2&^3, 0)
		h1, c = bits.Add64(h1, t3, c)
		h2 += c
		h0, c = bits.Add64(h0, t2>>2|t3<<62, 0)
		h1, c = bits.Add64(h1, t3>>2, c)
		h2 += c
	}
	h[0], h[1], h[2] = h0, h1, h2
}

// mulAdd64 returns a*b + c*d as a 128-bit value (hi, lo); the sum must fit.
func mulAdd64(a, b, c, d uint64) (hi, lo uint64) {
	hi, lo = bits.Mul64(a, b)
	h, l := bits.Mul64(c, d)
	var cy uint64
	lo, cy = bits.Add64(lo, l, 0)
	return hi + h + cy, lo
}
