// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// The portable lane kernels: the contracts of the lane driver's kernel set (laneKernels in
// chacha_lanes.go) in Go, one lane after the other. They are the reference implementation: every
// build's tests run the driver on them against the Generic tier, and on amd64 each assembly lane
// kernel is compared with them on random tables. They compute what the generated kernels compute,
// word for word (including the Poly1305 accumulators' unreduced limbs), so that a comparison can be
// exact; they read and write only the rows and bytes the contracts name, never the rows the assembly
// keeps for itself (streamTable.addr and spill, the address rows of the Poly1305 tables).

// laneAddr returns the address of byte off of lane buffer base, where a nil base stands for the table.
func laneAddr(base, table unsafe.Pointer, off uintptr) unsafe.Pointer {
	if base == nil {
		base = table
	}
	return unsafe.Add(base, off)
}

// chachaLanesGeneric runs n ChaCha20 blocks (RFC 8439 section 2.3) in each of the 16 lanes of tab,
// lanes 0-7 only unless upper: the k-th block of lane l XORs its key-stream block into the 64 bytes at
// lanes.src[l]+lanes.off[l]+k*stride and writes them to lanes.dst[l]+lanes.off[l]+k*stride (src and
// dst may be equal), the last one (k = n-1) only the bytes of mask tab.mask[l] (bit i: byte i); each
// block advances the lane's block counter tab.rows[12][l] by tab.rows[16][l]. Where lanes.hasLast
// and lanes.lastDst[l] are set, the last block reads lanes.lastSrc[l] and writes lastDst[l]
// instead. n >= 1. This is the contract of amd64's chachaXOR16AVX512, chachaXOR16AVX2 and
// chachaXOR16AVX2Regs (the AVX2 kernels are only ever called with whole-block masks and no last
// addresses); chachaXOR8AVX2Regs is the one with !upper.
func chachaLanesGeneric(tab *streamTable, lanes *chachaPtrs16, n, stride int, upper bool) {
	nl := 16
	if !upper {
		nl = 8
	}
	var in, x [16]uint32
	var ks [64]byte
	for l := range nl {
		for w := range in {
			in[w] = tab.rows[w][l]
		}
		for k := range n {
			x = in
			chachaRounds(&x)
			for w := range x {
				binary.LittleEndian.PutUint32(ks[4*w:], x[w]+in[w])
			}
			off := lanes.off[l] + uintptr(k*stride)
			src := laneAddr(lanes.src[l], unsafe.Pointer(tab), off)
			dst := laneAddr(lanes.dst[l], unsafe.Pointer(tab), off)
			if k == n-1 && lanes.hasLast != 0 && lanes.lastDst[l] != nil {
				src, dst = lanes.lastSrc[l], lanes.lastDst[l]
			}
			if mask := tab.mask[l]; k < n-1 || mask == ^uint64(0) {
				xorKeyBlock((*[64]byte)(dst)[:], (*[64]byte)(src)[:], &ks)
			} else {
				// Bytes outside the mask may lie beyond the buffer: not even read.
				for i := range 64 {
					if mask>>i&1 != 0 {
						*(*byte)(unsafe.Add(dst, i)) = *(*byte)(unsafe.Add(src, i)) ^ ks[i]
					}
				}
			}
			in[12] += tab.rows[16][l]
		}
		tab.rows[12][l] = in[12]
	}
	clear(in[:])
	clear(x[:])
	clear(ks[:])
}

// poly1305Lanes26Generic absorbs n 16-byte blocks in each of the 16 lanes of st (lanes 0-7 only unless
// upper), in radix 2^26: per block, lane l computes h = (h + m) * r mod 2^130-5 (the 2^128 bit of m
// set; h not fully reduced) with m read at p.base[l]+p.off[l]+k*stride for the k-th block. st holds
// per lane h0..h4 in rows 0-4, r0..r4 in rows 5-9 and 5*r1..5*r4 in rows 10-13, limbs below 2^26
// (limb 1 of h below 2^26 + 2^11) before and after. n >= 1. This is the contract of amd64's
// poly1305AVX2 (upper) and poly1305AVX2Lanes8 (!upper), step for step.
func poly1305Lanes26Generic(st *[15][16]uint64, p *polyPtrs16, n, stride int, upper bool) {
	nl := 16
	if !upper {
		nl = 8
	}
	// mul is VPMULUDQ's product: the low 32 bits of each operand.
	mul := func(a, b uint64) uint64 { return uint64(uint32(a)) * uint64(uint32(b)) }
	for l := range nl {
		h0, h1, h2, h3, h4 := st[0][l], st[1][l], st[2][l], st[3][l], st[4][l]
		r0, r1, r2, r3, r4 := st[5][l], st[6][l], st[7][l], st[8][l], st[9][l]
		s1, s2, s3, s4 := st[10][l], st[11][l], st[12][l], st[13][l]
		for k := range n {
			m := (*[16]byte)(laneAddr(p.base[l], unsafe.Pointer(st), p.off[l]+uintptr(k*stride)))
			lo, hi := binary.LittleEndian.Uint64(m[0:]), binary.LittleEndian.Uint64(m[8:])
			h0 += lo & limb26
			h1 += lo >> 26 & limb26
			h2 += (lo>>52 | hi<<12) & limb26
			h3 += hi >> 14 & limb26
			h4 += hi>>40 | 1<<24
			// d = h * r; the products of weight 2^130 and above wrap around times 5 (2^130 = 5).
			d0 := mul(h0, r0) + mul(h1, s4) + mul(h2, s3) + mul(h3, s2) + mul(h4, s1)
			d1 := mul(h0, r1) + mul(h1, r0) + mul(h2, s4) + mul(h3, s3) + mul(h4, s2)
			d2 := mul(h0, r2) + mul(h1, r1) + mul(h2, r0) + mul(h3, s4) + mul(h4, s3)
			d3 := mul(h0, r3) + mul(h1, r2) + mul(h2, r1) + mul(h3, r0) + mul(h4, s4)
			d4 := mul(h0, r4) + mul(h1, r3) + mul(h2, r2) + mul(h3, r1) + mul(h4, r0)
			// One carry pass, limb 4's carry re-entering limb 0 times 5, then limb 0's into limb 1.
			d1 += d0 >> 26
			d0 &= limb26
			d2 += d1 >> 26
			d1 &= limb26
			d3 += d2 >> 26
			d2 &= limb26
			d4 += d3 >> 26
			d3 &= limb26
			c := d4 >> 26
			d4 &= limb26
			d0 += c + c<<2
			d1 += d0 >> 26
			d0 &= limb26
			h0, h1, h2, h3, h4 = d0, d1, d2, d3, d4
		}
		st[0][l], st[1][l], st[2][l], st[3][l], st[4][l] = h0, h1, h2, h3, h4
	}
}

// poly1305Lanes44Generic is poly1305Lanes26Generic in radix 2^44, on all 16 lanes: st holds per lane
// h0..h2 in rows 0-2 (below 2^44 + 2^17, 2^44 and 2^42 before and after), r0..r2 in rows 3-5 and
// 20*r1, 20*r2 in rows 6 and 7. This is the contract of amd64's IFMA kernels poly1305IFMAZ and
// poly1305IFMAY, which leave the same value mod 2^130-5 within the same bounds (they take two blocks
// a step).
func poly1305Lanes44Generic(st *[15][16]uint64, p *polyPtrs16, n, stride int) {
	for l := range 16 {
		h := [3]uint64{st[0][l], st[1][l], st[2][l]}
		for k := range n {
			m := (*[16]byte)(laneAddr(p.base[l], unsafe.Pointer(st), p.off[l]+uintptr(k*stride)))
			h = poly1305Block44(h, m, st, l)
		}
		st[0][l], st[1][l], st[2][l] = h[0], h[1], h[2]
	}
}

// poly1305Block44 returns (h + m) * r mod 2^130-5 for lane l of st (see poly1305Lanes44Generic), the
// 2^128 bit of m set, as the IFMA kernels compute it: VPMADD52LUQ and VPMADD52HUQ sums of the low
// and high 52-bit halves of the limb products, the high halves moved up a limb (times 2^8, limb 2's
// wrapping to weight 2^132 = 20), then one carry pass.
func poly1305Block44(h [3]uint64, m *[16]byte, st *[15][16]uint64, l int) [3]uint64 {
	const mask52 = 1<<52 - 1
	lo, hi := binary.LittleEndian.Uint64(m[0:]), binary.LittleEndian.Uint64(m[8:])
	h0 := h[0] + lo&mask44
	h1 := h[1] + (lo>>44|hi<<20)&mask44
	h2 := h[2] + (hi>>24 | 1<<40)
	r0, r1, r2, s1, s2 := st[3][l], st[4][l], st[5][l], st[6][l], st[7][l]
	var los, his [3]uint64
	madd := func(w int, a, b uint64) {
		ph, pl := bits.Mul64(a&mask52, b&mask52)
		los[w] += pl & mask52
		his[w] += ph<<12 | pl>>52
	}
	madd(0, h0, r0)
	madd(0, h1, s2)
	madd(0, h2, s1)
	madd(1, h0, r1)
	madd(1, h1, r0)
	madd(1, h2, s2)
	madd(2, h0, r2)
	madd(2, h1, r1)
	madd(2, h2, r0)
	lo0, lo1, lo2 := los[0], los[1]+his[0]<<8, los[2]+his[1]<<8
	lo0 += his[2]<<10 + his[2]<<12
	lo1 += lo0 >> 44
	lo0 &= mask44
	lo2 += lo1 >> 44
	lo1 &= mask44
	c := lo2 >> 42
	lo2 &= 1<<42 - 1
	lo0 += c + c<<2
	return [3]uint64{lo0, lo1, lo2}
}

// poly1305FinishLanes44Generic absorbs each lane's lengths block (bytes 32-47 of its scratch block in
// the polyTable st heads) into its radix-2^44 accumulator, and writes the lane's tag (h mod 2^130-5 +
// s) mod 2^128 (RFC 8439 section 2.5.1) to rows polyRowTag (low qword) and polyRowTag+1 of st, with s
// from rows polyRowKeyS. The accumulator rows are not updated. It returns a mask with bit l set when
// lane l's tag equals rows polyRowWant. Constant time. This is the contract of amd64's
// poly1305FinishIFMAZ.
func poly1305FinishLanes44Generic(st *[15][16]uint64) (eq int) {
	tab := (*polyTable)(unsafe.Pointer(st))
	var tag [TagSize]byte
	for l := range 16 {
		h := poly1305Block44([3]uint64{st[0][l], st[1][l], st[2][l]}, (*[16]byte)(tab.scratch[l][32:]), st, l)
		poly1305Finish44(&tag, h[0], h[1], h[2], st[polyRowKeyS][l], st[polyRowKeyS+1][l])
		t0, t1 := binary.LittleEndian.Uint64(tag[0:]), binary.LittleEndian.Uint64(tag[8:])
		st[polyRowTag][l], st[polyRowTag+1][l] = t0, t1
		d := (t0 ^ st[polyRowWant][l]) | (t1 ^ st[polyRowWant+1][l])
		eq |= int(1^(d|-d)>>63) << l
	}
	clear(tag[:])
	return eq
}
