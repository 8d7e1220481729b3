// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"encoding/binary"
	"math/bits"
)

// Portable, constant-time GHASH (NIST SP 800-38D section 6.4): multiplication in GF(2^128) modulo
// x^128 + x^7 + x^2 + x + 1 with no table lookups and no data-dependent branches. Carry-less
// multiplication is built from ordinary integer multiplication with the operands' bits spread out
// so that carries cannot reach a bit that is kept (bmul64).

// ghashElem is a field element in the polynomial basis: bit i of lo is the coefficient of x^i and bit
// i of hi that of x^(64+i). GCM blocks store x^0 in the most significant bit of their first byte
// (SP 800-38D section 6.3), so a block's two big-endian halves are bit-reversed on load and store.
type ghashElem struct{ lo, hi uint64 }

func loadGHASHElem(b []byte) ghashElem {
	return ghashElem{
		lo: bits.Reverse64(binary.BigEndian.Uint64(b[0:])),
		hi: bits.Reverse64(binary.BigEndian.Uint64(b[8:])),
	}
}

func (e ghashElem) store(b []byte) {
	binary.BigEndian.PutUint64(b[0:], bits.Reverse64(e.lo))
	binary.BigEndian.PutUint64(b[8:], bits.Reverse64(e.hi))
}

// ghashAggregate is how many blocks update absorbs with one reduction: the Horner form
// y = (...((y + x1)H + x2)H ...)H regrouped as (y + x1)H^4 + x2 H^3 + x3 H^2 + x4 H (SP 800-38D
// section 6.4). Every step after the multiplications is linear over XOR (Karatsuba's middle term,
// the bit reversal of the high halves, the reduction), so the four products are summed first and
// those steps run once a group; the data's own bit reversal doubles as the high halves' operands.
// AMD Zen 4, purego, the Generic tier against crypto/cipher's portable GCM: 1.00x -> 1.12x at
// 1420 B (docs/experiments.md, 2026-12-06 eighteenth session).
const ghashAggregate = 4

// ghashPower is a power of H with the operands its products need.
type ghashPower struct {
	e          ghashElem
	loXorHi    uint64 // e.lo ^ e.hi, the Karatsuba middle operand
	revLo      uint64 // Reverse64(e.lo)
	revHi      uint64 // Reverse64(e.hi)
	revLoXorHi uint64 // Reverse64(e.lo ^ e.hi)
}

func newGHASHPower(e ghashElem) ghashPower {
	return ghashPower{e: e, loXorHi: e.lo ^ e.hi, revLo: bits.Reverse64(e.lo), revHi: bits.Reverse64(e.hi),
		revLoXorHi: bits.Reverse64(e.lo ^ e.hi)}
}

// ghashKey holds H^1 to H^ghashAggregate (pow[i] is H^(i+1)).
type ghashKey struct {
	pow [ghashAggregate]ghashPower
}

func newGHASHKey(h []byte) ghashKey {
	var k ghashKey
	k.pow[0] = newGHASHPower(loadGHASHElem(h))
	for i := 1; i < ghashAggregate; i++ {
		k.pow[i] = newGHASHPower(k.mul(k.pow[i-1].e))
	}
	return k
}

// ghashSum is a sum of 255-bit products a*p before reduction, as Karatsuba's three 64x64 products
// of each: their low halves (ll, hh, mm) and the low halves of the bit-reversed operands' products
// (llRev, hhRev, mmRev), from which reduce takes the high halves.
type ghashSum struct{ ll, hh, mm, llRev, hhRev, mmRev uint64 }

// add adds a*p; revLo and revHi are a's halves bit-reversed.
func (s *ghashSum) add(a ghashElem, revLo, revHi uint64, p *ghashPower) {
	s.ll ^= bmul64(a.lo, p.e.lo)
	s.hh ^= bmul64(a.hi, p.e.hi)
	s.mm ^= bmul64(a.lo^a.hi, p.loXorHi)
	s.llRev ^= bmul64(revLo, p.revLo)
	s.hhRev ^= bmul64(revHi, p.revHi)
	s.mmRev ^= bmul64(revLo^revHi, p.revLoXorHi)
}

// reduce returns the sum modulo x^128 + x^7 + x^2 + x + 1.
func (s *ghashSum) reduce() ghashElem {
	// The high halves: reversing both operands reverses their 127-bit product, so the low half of
	// the reversed operands' product is the high half reversed and shifted by one.
	ll0, hh0, mm0 := s.ll, s.hh, s.mm
	ll1, hh1, mm1 := bits.Reverse64(s.llRev)>>1, bits.Reverse64(s.hhRev)>>1, bits.Reverse64(s.mmRev)>>1
	mm0 ^= hh0 ^ ll0
	mm1 ^= hh1 ^ ll1
	// The 255-bit product p3:p2:p1:p0.
	p0 := ll0
	p1 := ll1 ^ mm0
	p2 := hh0 ^ mm1
	p3 := hh1

	// Reduce: x^128 = x^7 + x^2 + x + 1, so the upper half U = p3:p2 folds in as U*(x^7+x^2+x+1).
	// U has degree at most 126; its shifted copies reach past x^127 by up to 6 bits (w), which fold in
	// once more and then stay below x^13.
	v0 := p2 ^ p2<<1 ^ p2<<2 ^ p2<<7
	v1 := p3 ^ (p3<<1 | p2>>63) ^ (p3<<2 | p2>>62) ^ (p3<<7 | p2>>57)
	w := p3>>63 ^ p3>>62 ^ p3>>57
	v0 ^= w ^ w<<1 ^ w<<2 ^ w<<7
	return ghashElem{lo: p0 ^ v0, hi: p1 ^ v1}
}

// bmul64 returns the low 64 bits of the carry-less product of x and y, in constant time.
//
// Each operand is split into four parts holding every fourth bit. An integer product of two parts puts
// each result bit's partial products in one column with three unused bits above it; a column below
// bit 60 receives at most 15 partial products, so its count fits in four bits and its carries stay in
// the unused bits, and the columns that can receive 16 all lie at bit 60 or above, where the carry
// leaves the 64-bit word. Masking each sum back to its own bit class keeps exactly the XOR.
func bmul64(x, y uint64) uint64 {
	const m0, m1, m2, m3 = 0x1111111111111111, 0x2222222222222222, 0x4444444444444444, 0x8888888888888888
	x0, x1, x2, x3 := x&m0, x&m1, x&m2, x&m3
	y0, y1, y2, y3 := y&m0, y&m1, y&m2, y&m3
	z0 := x0*y0 ^ x1*y3 ^ x2*y2 ^ x3*y1
	z1 := x0*y1 ^ x1*y0 ^ x2*y3 ^ x3*y2
	z2 := x0*y2 ^ x1*y1 ^ x2*y0 ^ x3*y3
	z3 := x0*y3 ^ x1*y2 ^ x2*y1 ^ x3*y0
	return z0&m0 | z1&m1 | z2&m2 | z3&m3
}

// mul returns a*H.
func (k *ghashKey) mul(a ghashElem) ghashElem {
	var s ghashSum
	s.add(a, bits.Reverse64(a.lo), bits.Reverse64(a.hi), &k.pow[0])
	return s.reduce()
}

// update absorbs whole 16-byte blocks of b into y: y = (y XOR block) * H for each block, in groups
// of ghashAggregate blocks with one reduction each. A block's big-endian halves are its halves in
// this package's order bit-reversed (loadGHASHElem), the operands of the high halves' products.
func (k *ghashKey) update(y *ghashElem, b []byte) {
	for ; len(b) >= 16*ghashAggregate; b = b[16*ghashAggregate:] {
		var s ghashSum
		for i := range ghashAggregate {
			revLo, revHi := binary.BigEndian.Uint64(b[16*i:]), binary.BigEndian.Uint64(b[16*i+8:])
			if i == 0 {
				revLo ^= bits.Reverse64(y.lo)
				revHi ^= bits.Reverse64(y.hi)
			}
			x := ghashElem{lo: bits.Reverse64(revLo), hi: bits.Reverse64(revHi)}
			s.add(x, revLo, revHi, &k.pow[ghashAggregate-1-i])
		}
		*y = s.reduce()
	}
	for ; len(b) >= 16; b = b[16:] {
		x := loadGHASHElem(b)
		*y = k.mul(ghashElem{lo: y.lo ^ x.lo, hi: y.hi ^ x.hi})
	}
}

// updatePadded absorbs b followed by zeros up to a multiple of 16 bytes.
func (k *ghashKey) updatePadded(y *ghashElem, b []byte) {
	full := len(b) &^ 15
	k.update(y, b[:full])
	if full < len(b) {
		var last [16]byte
		copy(last[:], b[full:])
		k.update(y, last[:])
	}
}
