package kernels

import "encoding/binary"

// Portable Poly1305 (RFC 8439 section 2.5) in radix 2^26, the representation the AVX2 tier uses in its
// 64-bit lanes: the 130-bit accumulator h and the clamped key r are five 26-bit limbs, every limb
// product fits in 64 bits, and 2^130 = 5 (mod p) folds the top of a product back into the bottom.
//
// The AEAD construction (RFC 8439 section 2.8) pads each of its inputs to 16 bytes, so Poly1305 only
// ever sees whole 16-byte blocks here, each with the 2^128 bit set.

const limb26 = 1<<26 - 1

type poly1305 struct {
	// r is the clamped key in radix 2^26; every limb is below 2^26 (clamping clears more).
	r [5]uint32
	// r5 holds 5*r[1..4], the factors of the product terms that wrap past 2^130.
	r5 [5]uint32
	// h is the accumulator. Between blocks each limb is below 2^26 + 2^11 (one carry pass, not a full
	// reduction); adding a message block keeps it below 2^28.
	h [5]uint32
	// s is the second key half, added mod 2^128 at the end.
	s [4]uint32
}

func (p *poly1305) init(key []byte) {
	// Clamping (section 2.5.1): r &= 0x0ffffffc0ffffffc0ffffffc0fffffff, applied to each 26-bit window.
	p.r[0] = binary.LittleEndian.Uint32(key[0:]) & 0x3ffffff
	p.r[1] = binary.LittleEndian.Uint32(key[3:]) >> 2 & 0x3ffff03
	p.r[2] = binary.LittleEndian.Uint32(key[6:]) >> 4 & 0x3ffc0ff
	p.r[3] = binary.LittleEndian.Uint32(key[9:]) >> 6 & 0x3f03fff
	p.r[4] = binary.LittleEndian.Uint32(key[12:]) >> 8 & 0x00fffff
	for i := 1; i < 5; i++ {
		p.r5[i] = 5 * p.r[i]
	}
	for i := range p.s {
		p.s[i] = binary.LittleEndian.Uint32(key[16+4*i:])
	}
	p.h = [5]uint32{}
}

// blocks absorbs msg, whose length is a multiple of 16.
func (p *poly1305) blocks(msg []byte) {
	r0, r1, r2, r3, r4 := uint64(p.r[0]), uint64(p.r[1]), uint64(p.r[2]), uint64(p.r[3]), uint64(p.r[4])
	s1, s2, s3, s4 := uint64(p.r5[1]), uint64(p.r5[2]), uint64(p.r5[3]), uint64(p.r5[4])
	h0, h1, h2, h3, h4 := p.h[0], p.h[1], p.h[2], p.h[3], p.h[4]
	for ; len(msg) >= 16; msg = msg[16:] {
		// h += m, with the 2^128 bit of a whole block in limb 4 (bit 24 = 128 - 104).
		h0 += binary.LittleEndian.Uint32(msg[0:]) & limb26
		h1 += binary.LittleEndian.Uint32(msg[3:]) >> 2 & limb26
		h2 += binary.LittleEndian.Uint32(msg[6:]) >> 4 & limb26
		h3 += binary.LittleEndian.Uint32(msg[9:]) >> 6 & limb26
		h4 += binary.LittleEndian.Uint32(msg[12:])>>8 | 1<<24

		// h *= r mod p. Limbs are < 2^28 and r5 < 2^29, so each sum of five products is < 2^60.
		a0, a1, a2, a3, a4 := uint64(h0), uint64(h1), uint64(h2), uint64(h3), uint64(h4)
		d0 := a0*r0 + a1*s4 + a2*s3 + a3*s2 + a4*s1
		d1 := a0*r1 + a1*r0 + a2*s4 + a3*s3 + a4*s2
		d2 := a0*r2 + a1*r1 + a2*r0 + a3*s4 + a4*s3
		d3 := a0*r3 + a1*r2 + a2*r1 + a3*r0 + a4*s4
		d4 := a0*r4 + a1*r3 + a2*r2 + a3*r1 + a4*r0

		// One carry pass; the carry out of limb 4 re-enters limb 0 times 5.
		d1 += d0 >> 26
		d2 += d1 >> 26
		d3 += d2 >> 26
		d4 += d3 >> 26
		c := d4 >> 26
		h0 = uint32(d0&limb26) + uint32(c*5&limb26)
		h1 = uint32(d1&limb26) + uint32(c*5>>26)
		h2 = uint32(d2 & limb26)
		h3 = uint32(d3 & limb26)
		h4 = uint32(d4 & limb26)
		h1 += h0 >> 26
		h0 &= limb26
	}
	p.h = [5]uint32{h0, h1, h2, h3, h4}
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

// sum writes the tag, (h mod p + s) mod 2^128, to out[:16] and wipes the state. Constant time: the
// final reduction selects with a mask instead of branching.
func (p *poly1305) sum(out []byte) {
	h0, h1, h2, h3, h4 := p.h[0], p.h[1], p.h[2], p.h[3], p.h[4]

	// Two full carry passes leave every limb canonical (< 2^26) except possibly h4 >= 2^26, which
	// means h >= 2^130 > p and the subtraction below is taken.
	for range 2 {
		h2 += h1 >> 26
		h1 &= limb26
		h3 += h2 >> 26
		h2 &= limb26
		h4 += h3 >> 26
		h3 &= limb26
		h0 += (h4 >> 26) * 5
		h4 &= limb26
		h1 += h0 >> 26
		h0 &= limb26
	}
	h2 += h1 >> 26
	h1 &= limb26
	h3 += h2 >> 26
	h2 &= limb26
	h4 += h3 >> 26
	h3 &= limb26

	// g = h + 5 - 2^130 = h - p. If it does not borrow, h >= p and g is the reduced value.
	g0 := h0 + 5
	g1 := h1 + g0>>26
	g0 &= limb26
	g2 := h2 + g1>>26
	g1 &= limb26
	g3 := h3 + g2>>26
	g2 &= limb26
	g4 := h4 + g3>>26 - 1<<26
	g3 &= limb26
	useG := (g4 >> 31) - 1 // all ones when g4 did not go negative
	useH := ^useG
	h0 = h0&useH | g0&useG
	h1 = h1&useH | g1&useG
	h2 = h2&useH | g2&useG
	h3 = h3&useH | g3&useG
	h4 = h4&useH | g4&useG

	// h mod 2^128 as four 32-bit words, plus s with carries.
	w0 := uint64(h0|h1<<26) + uint64(p.s[0])
	w1 := uint64(h1>>6|h2<<20) + uint64(p.s[1]) + w0>>32
	w2 := uint64(h2>>12|h3<<14) + uint64(p.s[2]) + w1>>32
	w3 := uint64(h3>>18|h4<<8) + uint64(p.s[3]) + w2>>32
	binary.LittleEndian.PutUint32(out[0:], uint32(w0))
	binary.LittleEndian.PutUint32(out[4:], uint32(w1))
	binary.LittleEndian.PutUint32(out[8:], uint32(w2))
	binary.LittleEndian.PutUint32(out[12:], uint32(w3))
	*p = poly1305{}
}
