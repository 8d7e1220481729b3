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

func poly1305AVX2() {
	Implement("poly1305AVX2")
	Attributes(NOSPLIT)
	Doc("poly1305AVX2 is the radix-2^26 counterpart of poly1305IFMAZ: the same lanes and pointers, st in",
		"the layout above.")
	st := Mem{Base: Load(Param("st"), GP64())}
	p := Mem{Base: Load(Param("p"), GP64())}
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	mask := poly26Consts
	at := func(row, g int) Mem { return st.Offset(8 * (row*polyLanes + 4*g)) }

	Comment("The lanes' message addresses.")
	for l := range polyLanes {
		a := GP64()
		MOVQ(p.Offset(polyBase+8*l), a)
		TESTQ(a, a)
		CMOVQEQ(st.Base, a)
		ADDQ(p.Offset(polyOff+8*l), a)
		MOVQ(a, st.Offset(8*(polyRowA26*polyLanes+l)))
	}
	off := GP64()
	XORQ(off, off)

	Label("block")
	for g := range 4 {
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

		Comment("h += m in radix 2^26, the 2^128 bit set: every limb below 2^27 afterwards.")
		var h [5]VecVirtual
		m := YMM()
		limb := func(i int) {
			h[i] = YMM()
			VMOVDQU(at(poly26RowH+i, g), h[i])
			VPADDQ(m, h[i], h[i])
		}
		VPAND(mask, lo, m)
		limb(0)
		VPSRLQ(U8(26), lo, m)
		VPAND(mask, m, m)
		limb(1)
		t := YMM()
		VPSRLQ(U8(52), lo, m)
		VPSLLQ(U8(12), hi, t)
		VPOR(t, m, m)
		VPAND(mask, m, m)
		limb(2)
		VPSRLQ(U8(14), hi, m)
		VPAND(mask, m, m)
		limb(3)
		VPSRLQ(U8(40), hi, m)
		VPOR(mask.Offset(32), m, m)
		limb(4)

		Comment("d = h * r: products of limbs below 2^27 and factors below 2^29, five per sum: < 2^59.")
		var d [5]VecVirtual
		for k := range 5 {
			d[k] = YMM()
			for i := range 5 {
				j := k - i // the r limb; a negative one wraps past 2^130 and takes 5*r[j+5]
				row := poly26RowR + j
				if j < 0 {
					row = poly26RowS + j + 4
				}
				if i == 0 {
					VPMULUDQ(at(row, g), h[i], d[k])
					continue
				}
				VPMULUDQ(at(row, g), h[i], t)
				VPADDQ(t, d[k], d[k])
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
		for i := range 5 {
			VMOVDQU(d[i], at(poly26RowH+i, g))
		}
	}
	ADDQ(stride, off)
	DECQ(n)
	JNZ(LabelRef("block"))
	VZEROUPPER()
	RET()
}
