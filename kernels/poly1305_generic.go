// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"encoding/binary"
	"math/bits"
)

// Portable Poly1305 (RFC 8439 section 2.5) in radix 2^64: the accumulator h = h0 + h1*2^64 + h2*2^128
// and the clamped key r = r0 + r1*2^64, so a 64x64-bit multiplier does a block in four products. The
// vector tiers keep their own limb layouts (radix 2^44 with IFMA, 2^26 with VPMULUDQ) in the lanes of
// a register; for one message at a time this is the fastest portable form, and the amd64 tiers use it
// for the MAC of short messages, where vector lanes would have nothing to share out.
//
// The AEAD construction (RFC 8439 section 2.8) pads each of its inputs to 16 bytes, so Poly1305 only
// ever sees whole 16-byte blocks here, each with the 2^128 bit set.
//
// Bounds: between blocks h2 <= 5 (h below 2^130 + 2^130/4, partially reduced); adding a block leaves
// h2 <= 7, so h2*r1 fits in 64 bits. Clamping leaves r0, r1 < 2^60, so every sum of two 128-bit
// products below fits in 128 bits. Everything is constant time: no branch or index depends on the
// key or the message (lengths are public).

// chachaXOR8OneMACAVX2 (kernels/_asm/chacha) reads r0 and r1 and updates h at these offsets
// (TestChaChaTableLayout).
type poly1305 struct {
	r0, r1 uint64    // clamped r (section 2.5.1)
	h      [3]uint64 // accumulator
	s0, s1 uint64    // the second key half, added mod 2^128 at the end
}

func (p *poly1305) init(key []byte) {
	p.r0 = binary.LittleEndian.Uint64(key[0:]) & 0x0ffffffc0fffffff
	p.r1 = binary.LittleEndian.Uint64(key[8:]) & 0x0ffffffc0ffffffc
	p.s0 = binary.LittleEndian.Uint64(key[16:])
	p.s1 = binary.LittleEndian.Uint64(key[24:])
	p.h = [3]uint64{}
}

// blocks absorbs msg, whose length is a multiple of 16: h = (h + m + 2^128) * r, partially reduced
// mod 2^130-5.
func (p *poly1305) blocks(msg []byte) {
	r0, r1 := p.r0, p.r1
	h0, h1, h2 := p.h[0], p.h[1], p.h[2]
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
	p.h = [3]uint64{h0, h1, h2}
}

// mulAdd64 returns a*b + c*d as a 128-bit value (hi, lo); the sum must fit.
func mulAdd64(a, b, c, d uint64) (hi, lo uint64) {
	hi, lo = bits.Mul64(a, b)
	h, l := bits.Mul64(c, d)
	var cy uint64
	lo, cy = bits.Add64(lo, l, 0)
	return hi + h + cy, lo
}

// writePadded absorbs b followed by zeros up to a multiple of 16 bytes.
func (p *poly1305) writePadded(b []byte) {
	full := len(b) &^ 15
	p.blocks(b[:full])
	if full < len(b) {
		var last [16]byte
		copy(last[:], b[full:])
		p.blocks(last[:])
	}
}

// aeadTag finishes the MAC of RFC 8439 section 2.8 once the padded AD and ciphertext are absorbed:
// it absorbs the lengths block and returns the tag (sum).
func (p *poly1305) aeadTag(adLen, ctLen int) (tag [TagSize]byte) {
	var lengths [16]byte
	binary.LittleEndian.PutUint64(lengths[0:], uint64(adLen))
	binary.LittleEndian.PutUint64(lengths[8:], uint64(ctLen))
	p.blocks(lengths[:])
	p.sum(tag[:])
	return tag
}

// sum writes the tag, (h mod p + s) mod 2^128, to out[:16] and wipes the state.
func (p *poly1305) sum(out []byte) {
	poly1305Tag((*[TagSize]byte)(out), p.h[0], p.h[1], p.h[2], p.s0, p.s1)
	*p = poly1305{}
}

// poly1305Tag writes the tag (h mod p + s) mod 2^128 (RFC 8439 section 2.5.1) for an accumulator
// h = lo + hi*2^64 + top*2^128 < 2p and s = s0 + s1*2^64; every tier's Poly1305 ends here. h + 5
// reaches 2^130 (top + carry >= 4) exactly when h >= p, and then h - p and h + 5 agree below 2^128,
// which is all the tag keeps. h < 2p, so one subtraction is enough; the choice is a mask, not a
// branch.
func poly1305Tag(out *[TagSize]byte, lo, hi, top, s0, s1 uint64) {
	g0, c := bits.Add64(lo, 5, 0)
	g1, c := bits.Add64(hi, 0, c)
	useG := -((top + c) >> 2) // all ones when h >= p
	lo ^= (lo ^ g0) & useG
	hi ^= (hi ^ g1) & useG
	lo, c = bits.Add64(lo, s0, 0)
	hi, _ = bits.Add64(hi, s1, c)
	binary.LittleEndian.PutUint64(out[0:], lo)
	binary.LittleEndian.PutUint64(out[8:], hi)
}
