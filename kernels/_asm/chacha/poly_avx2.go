// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Poly1305 on AVX2 (RFC 8439 section 2.5): the 16 lanes of the IFMA kernels, as four groups of four
// 64-bit lanes, in radix 2^26 with VPMULUDQ (32x32->64-bit products), the representation of
// kernels/poly1305_generic.go. st holds rows of 16 lanes: h0..h4, r0..r4, 5*r1..5*r4 and the lanes'
// message addresses (row polyRowA26). With 16 registers the accumulators live in st between blocks.
const (
	poly26RowH = 0
	poly26RowR = 5
	poly26RowS = 10 // 5*r1 .. 5*r4
	polyRowA26 = 14
)

var poly26Consts Mem

func poly26Tables() {
	poly26Consts = GLOBL("poly1305Consts26", RODATA|NOPTR)
	for i := range 4 {
		DATA(8*i, U64(1<<26-1)) // the limb mask
	}
	for i := range 4 {
		DATA(32+8*i, U64(1<<24)) // the 2^128 bit of a block: bit 24 of limb 4
	}
}

// poly1305AVX2 generates poly1305AVX2 (all 16 lanes) or, with 2 groups, poly1305AVX2Lanes8 (lanes
// 0-7 only, for calls whose lanes 8-15 are idle).
func poly1305AVX2(groups int) {
	name := "poly1305AVX2"
	if groups == 2 {
		name = "poly1305AVX2Lanes8"
	}
	Implement(name)
	Attributes(NOSPLIT)
	if groups == 2 {
		Doc(name + " is poly1305AVX2 on lanes 0-7 only.")
	} else {
		Doc(name+" is the radix-2^26 counterpart of poly1305IFMAZ: the same lanes and pointers, st in",
			"the layout above.")
	}
	st := Mem{Base: Load(Param("st"), GP64())}
	p := Mem{Base: Load(Param("p"), GP64())}
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	at := func(row, g int) Mem { return st.Offset(8 * (row*polyLanes + 4*g)) }

	Comment("The lanes' message addresses.")
	for l := range 4 * groups {
		a := GP64()
		MOVQ(p.Offset(polyBase+8*l), a)
		TESTQ(a, a)
		CMOVQEQ(st.Base, a)
		ADDQ(p.Offset(polyOff+8*l), a)
		MOVQ(a, st.Offset(8*(polyRowA26*polyLanes+l)))
	}
	off := GP64()
	XORQ(off, off)

	Label(name + "block")
	for g := range groups {
		Commentf("Group %d: lanes %d to %d.", g, 4*g, 4*g+3)
		a, b := YMM(), YMM()
		for j := range 2 {
			for k, v := range []VecVirtual{a, b} {
				addr := GP64()
				MOVQ(st.Offset(8*(polyRowA26*polyLanes+4*g+2*j+k)), addr)
				m := Mem{Base: addr, Index: off, Scale: 1}
				if j == 0 { // a broadcast, not an xmm load: the allocator must see all of v written
					VBROADCASTI128(m, v)
				} else {
					VINSERTI128(U8(1), m, v, v)
				}
			}
		}
		lo, hi := YMM(), YMM()
		VPUNPCKLQDQ(b, a, lo)
		VPUNPCKHQDQ(b, a, hi)

		var h [5]VecVirtual
		poly26AddMsg(lo, hi, func(i int, m VecVirtual) {
			h[i] = YMM()
			VMOVDQU(at(poly26RowH+i, g), h[i])
			VPADDQ(m, h[i], h[i])
		})
		d := poly26MulReduce(h, func(k int) Mem {
			if k < 5 {
				return at(poly26RowR+k, g)
			}
			return at(poly26RowS+k-5, g)
		})
		for i := range 5 {
			VMOVDQU(d[i], at(poly26RowH+i, g))
		}
	}
	ADDQ(stride, off)
	DECQ(n)
	JNZ(LabelRef(name + "block"))
	VZEROUPPER()
	RET()
}

// poly26AddMsg splits the 16-byte blocks whose low and high qwords lo and hi hold into radix-2^26
// limbs, sets the 2^128 bit and hands limb i to add.
func poly26AddMsg(lo, hi VecVirtual, add func(i int, m VecVirtual)) {
	mask := poly26Consts
	Comment("h += m in radix 2^26, the 2^128 bit set: every limb below 2^27 afterwards (h's limbs",
		"below 2^26 + 2^11 before).")
	m, t := YMM(), YMM()
	VPAND(mask, lo, m)
	add(0, m)
	m = YMM()
	VPSRLQ(U8(26), lo, m)
	VPAND(mask, m, m)
	add(1, m)
	m = YMM()
	VPSRLQ(U8(52), lo, m)
	VPSLLQ(U8(12), hi, t)
	VPOR(t, m, m)
	VPAND(mask, m, m)
	add(2, m)
	m = YMM()
	VPSRLQ(U8(14), hi, m)
	VPAND(mask, m, m)
	add(3, m)
	m = YMM()
	VPSRLQ(U8(40), hi, m)
	VPOR(mask.Offset(32), m, m)
	add(4, m)
}

// poly26MulReduce returns h * r mod 2^130-5 after one carry pass, for the multiplier r at mul(k):
// r0..r4 for k = 0..4, then 5*r1..5*r4. With limbs of h below 2^30 and of 5*r below 2^29, each of
// the five products of a sum is below 2^59, the sum below 2^62; after the carry pass every limb is
// below 2^26 except limb 1 (below 2^26 + 2^11 for limbs of h below 2^27).
func poly26MulReduce(h [5]VecVirtual, mul func(k int) Mem) [5]VecVirtual {
	mask := poly26Consts
	Comment("d = h * r: the products of weight 2^130 and above wrap around times 5 (2^130 = 5). Each",
		"multiplier row is loaded once, into a register: as memory operands its five uses would be",
		"as many loads, and the loads, not the multiplies, would bound the kernel.")
	var d [5]VecVirtual
	t, m := YMM(), YMM()
	product := func(i, k int) { // d[k] += h[i] * m
		if d[k] == nil {
			d[k] = YMM()
			VPMULUDQ(m, h[i], d[k])
			return
		}
		VPMULUDQ(m, h[i], t)
		VPADDQ(t, d[k], d[k])
	}
	for j := range 5 {
		VMOVDQU(mul(j), m) // r_j: h[i] * r_j has weight 2^(26(i+j))
		for i := 0; i+j < 5; i++ {
			product(i, i+j)
		}
		if j == 0 {
			continue
		}
		VMOVDQU(mul(4+j), m) // 5*r_j, for the products that wrap past 2^130
		for i := 5 - j; i < 5; i++ {
			product(i, i+j-5)
		}
	}
	Comment("One carry pass, the carry out of limb 4 re-entering limb 0 times 5 (2^130 = 5).")
	c := YMM()
	for k := range 4 {
		VPSRLQ(U8(26), d[k], c)
		VPAND(mask, d[k], d[k])
		VPADDQ(c, d[k+1], d[k+1])
	}
	VPSRLQ(U8(26), d[4], c)
	VPAND(mask, d[4], d[4])
	VPADDQ(c, d[0], d[0])
	VPSLLQ(U8(2), c, c)
	VPADDQ(c, d[0], d[0])
	VPSRLQ(U8(26), d[0], c)
	VPAND(mask, d[0], d[0])
	VPADDQ(c, d[1], d[1])
	return d
}

// poly1305AVX2Eight's state (polyOne26 in kernels/chacha_single_amd64.go): the 8 lanes' accumulators
// (5 rows of 8 qwords), lane 0's starting accumulator (5 qwords) and the multiplier r^8 (r0..r4,
// 5*r1..5*r4).
const (
	oneH  = 0
	oneH0 = 5 * 64
	oneR8 = oneH0 + 5*8
)

// poly1305AVX2Eight is the single-message Poly1305 kernel of the AVX2 tier: 8 lanes as two ymm groups
// of 4, each lane a Horner evaluation in r^8 of every eighth block (RFC 8439 section 2.5); the driver
// combines the lanes. A group loads blocks 4g..4g+3 of each 8 with two ymm loads, whose qword unpacks
// leave blocks 4g, 4g+2, 4g+1, 4g+3 in its lanes. The kernel builds its rows from the driver's
// scalars itself: vector loads of rows the driver has just written qword by qword would wait for
// those stores to reach the cache (no store-to-load forwarding from several stores to one load).
func poly1305AVX2Eight() {
	Implement("poly1305AVX2Eight")
	Attributes(NOSPLIT)
	Doc("poly1305AVX2Eight absorbs n groups of 8 16-byte blocks at msg into 8 lanes, lane 0 starting",
		"from st.h0 and the others from 0: per group, h = (h + m) * st.r8 (the 2^128 bit of m set; h not",
		"fully reduced), lane 4g+i taking block 4g+[0 2 1 3][i]. The lanes' accumulators end in st.h.",
		"n >= 1.")
	st := Mem{Base: Load(Param("st"), GP64())}
	msg := Load(Param("msg"), GP64())
	n := Load(Param("n"), GP64())
	h := func(i, g int) Mem { return st.Offset(oneH + 64*i + 32*g) }
	mul := AllocLocal(9 * 32)
	for i := range 5 {
		x, z := XMM(), YMM()
		VMOVQ(st.Offset(oneH0+8*i), x) // zero-extended: lanes 1-3 start from 0
		VMOVDQU(x.AsY(), h(i, 0))
		VPXOR(z, z, z)
		VMOVDQU(z, h(i, 1))
	}
	for k := range 9 {
		y := YMM()
		VPBROADCASTQ(st.Offset(oneR8+8*k), y)
		VMOVDQU(y, mul.Offset(32*k))
	}
	Label("eight26")
	for g := range 2 {
		Commentf("Group %d: blocks %d to %d of the 8.", g, 4*g, 4*g+3)
		a, b, lo, hi := YMM(), YMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: msg, Disp: 64 * g}, a)
		VMOVDQU(Mem{Base: msg, Disp: 64*g + 32}, b)
		VPUNPCKLQDQ(b, a, lo)
		VPUNPCKHQDQ(b, a, hi)
		var acc [5]VecVirtual
		poly26AddMsg(lo, hi, func(i int, m VecVirtual) {
			acc[i] = YMM()
			VMOVDQU(h(i, g), acc[i])
			VPADDQ(m, acc[i], acc[i])
		})
		d := poly26MulReduce(acc, func(k int) Mem { return mul.Offset(32 * k) })
		for i := range d {
			VMOVDQU(d[i], h(i, g))
		}
	}
	ADDQ(U32(128), msg)
	DECQ(n)
	JNZ(LabelRef("eight26"))
	VZEROUPPER()
	RET()
}
