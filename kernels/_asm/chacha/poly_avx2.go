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
	JNZ(LabelRef("block"))
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
	Comment("d = h * r: the products of weight 2^130 and above wrap around times 5 (2^130 = 5).")
	var d [5]VecVirtual
	t := YMM()
	for k := range 5 {
		d[k] = YMM()
		for i := range 5 {
			j := k - i // the r limb; a negative one wraps past 2^130 and takes 5*r[j+5]
			row := j
			if j < 0 {
				row = j + 9
			}
			if i == 0 {
				VPMULUDQ(mul(row), h[i], d[k])
				continue
			}
			VPMULUDQ(mul(row), h[i], t)
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
	return d
}

// Rows of poly1305AVX2One's state (polyOne26 in kernels/chacha_single_amd64.go), 8 qwords each: the
// lanes' accumulators, then three multipliers of 9 rows (r0..r4, 5*r1..5*r4): r^8, each lane's
// last multiplier, and r.
const (
	one26RowH   = 0
	one26RowR8  = 5
	one26RowEnd = 14
	one26RowR   = 23
)

// poly1305AVX2One is poly1305IFMAOne in radix 2^26 on AVX2: 8 lanes as two ymm groups of 4, the
// accumulators in registers. A group loads blocks 4g..4g+3 of each 8 with two ymm loads, whose qword
// unpacks leave blocks 4g, 4g+2, 4g+1, 4g+3 in its lanes: the driver sets the lanes' last multipliers
// to match.
func poly1305AVX2One() {
	Implement("poly1305AVX2One")
	Attributes(NOSPLIT)
	Doc("poly1305AVX2One absorbs the n 16-byte blocks at msg into the accumulator st.h (the 2^128 bit",
		"of each block set): eight blocks at a time across the lanes while at least eight are left, then",
		"one at a time. n >= 1.")
	st := Mem{Base: Load(Param("st"), GP64())}
	msg := Load(Param("msg"), GP64())
	n := Load(Param("n"), GP64())
	at := func(row, g int) Mem { return st.Offset(64*row + 32*g) }
	mulRows := func(first, g int) func(int) Mem { return func(k int) Mem { return at(first+k, g) } }
	// The accumulators wait in their rows between blocks: both groups' in registers would leave too
	// few for the products.
	var h [2][5]VecVirtual
	addTo := func(g int) func(int, VecVirtual) {
		return func(i int, m VecVirtual) {
			h[g][i] = YMM()
			VMOVDQU(at(one26RowH+i, g), h[g][i])
			VPADDQ(m, h[g][i], h[g][i])
		}
	}
	mulReduce := func(first, g int) {
		d := poly26MulReduce(h[g], mulRows(first, g))
		for i := range d {
			VMOVDQU(d[i], at(one26RowH+i, g))
		}
	}

	CMPQ(n, U32(8))
	JB(LabelRef("one26"))
	Comment("Eight blocks across the lanes; lane 0 starts from h, the others from 0. The last eight",
		"take the lanes' last multipliers.")
	eight := func(mul int) {
		for g := range h {
			a, b, lo, hi := YMM(), YMM(), YMM(), YMM()
			VMOVDQU(Mem{Base: msg, Disp: 64 * g}, a)
			VMOVDQU(Mem{Base: msg, Disp: 64*g + 32}, b)
			VPUNPCKLQDQ(b, a, lo)
			VPUNPCKHQDQ(b, a, hi)
			poly26AddMsg(lo, hi, addTo(g))
			mulReduce(mul, g)
		}
		ADDQ(U32(128), msg)
		SUBQ(U32(8), n)
	}
	Label("eight26")
	CMPQ(n, U32(16))
	JB(LabelRef("last26"))
	eight(one26RowR8)
	JMP(LabelRef("eight26"))
	Label("last26")
	eight(one26RowEnd)
	Comment("Sum the lanes into lane 0: limbs below 8 * (2^26 + 2^11) < 2^30, fine for the multiplier.",
		"Lanes 1-3 of the rows hold garbage until the end, which zeroes them.")
	for i := range 5 {
		y, x, t := YMM(), XMM(), XMM()
		VMOVDQU(at(one26RowH+i, 0), y)
		VPADDQ(at(one26RowH+i, 1), y, y)
		VEXTRACTI128(U8(1), y, x)
		VPADDQ(y.AsX(), x, x)
		VPSHUFD(U8(0x4e), x, t)
		VPADDQ(t, x, x)
		VMOVDQU(x.AsY(), at(one26RowH+i, 0))
	}

	Label("one26")
	TESTQ(n, n)
	JZ(LabelRef("store26"))
	Label("single26")
	lo, hi := YMM(), YMM()
	VPBROADCASTQ(Mem{Base: msg}, lo)
	VPBROADCASTQ(Mem{Base: msg, Disp: 8}, hi)
	poly26AddMsg(lo, hi, addTo(0))
	mulReduce(one26RowR, 0)
	ADDQ(U32(16), msg)
	DECQ(n)
	JNZ(LabelRef("single26"))

	Label("store26")
	Comment("Only lane 0: the rows' other lanes go back to zero for the next call.")
	for i := range 5 {
		x, z := XMM(), YMM()
		VMOVQ(at(one26RowH+i, 0), x)
		VPXOR(z, z, z)
		VMOVDQU(z, at(one26RowH+i, 1))
		VMOVDQU(x.AsY(), at(one26RowH+i, 0))
	}
	VZEROUPPER()
	RET()
}
