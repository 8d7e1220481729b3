package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Poly1305 (RFC 8439 section 2.5) with one message per 64-bit lane, in radix 2^44 with AVX-512 IFMA.
//
// A 130-bit value is three limbs v0 + v1*2^44 + v2*2^88. VPMADD52LUQ/HUQ multiply the low 52 bits of
// two limbs and add the low/high 52 bits of the 104-bit product to a 64-bit accumulator, so every limb
// fed to them must stay below 2^52 (the bounds are given at each step).
//
// st (64-byte aligned) holds eight rows of eight lanes: h0, h1, h2 (the accumulators), r0, r1, r2
// (the multiplier, normally the clamped key r) and s1 = 20*r1, s2 = 20*r2. The 20 folds products of
// weight 2^132 back to weight 1, since 2^132 = 4*2^130 = 4*5 (mod 2^130-5).
//
// polyPtrs8 (kernels/chacha_lanes_amd64.go) holds per lane a buffer, the offset of the next 16-byte
// block in it and how far the offset moves per block (see chachaPtrs16 for why offsets; a nil buffer
// stands for st).
const (
	polyRowH    = 0
	polyRowR    = 3
	polyRowS    = 6
	polyBase    = 0
	polyOff     = 8 * 8
	polyStrides = 16 * 8
)

func poly1305IFMA8() {
	Implement("poly1305IFMA8")
	Attributes(NOSPLIT)
	Doc("poly1305IFMA8 absorbs n 16-byte blocks in each of 8 lanes: per block, lane l computes",
		"h = (h + m) * r mod 2^130-5 (the 2^128 bit of m set; h not fully reduced) with m read at",
		"p.base[l]+p.off[l]; p.off[l] then advances by p.stride[l]. n >= 1.")
	st := Mem{Base: Load(Param("st"), GP64())}
	p := Mem{Base: Load(Param("p"), GP64())}
	n := Load(Param("n"), GP64())

	row := func(i int) VecVirtual {
		z := ZMM()
		VMOVDQA64(st.Offset(64*i), z)
		return z
	}
	h0, h1, h2 := row(polyRowH), row(polyRowH+1), row(polyRowH+2)
	r0, r1, r2 := row(polyRowR), row(polyRowR+1), row(polyRowR+2)
	s1, s2 := row(polyRowS), row(polyRowS+1)
	bcast := func(v uint64) VecVirtual {
		g, z := GP64(), ZMM()
		MOVQ(U64(v), g)
		VPBROADCASTQ(g, z)
		return z
	}
	mask44, mask42, bit40 := bcast(1<<44-1), bcast(1<<42-1), bcast(1<<40)
	ptr := make([]GPVirtual, 8)
	for l := range ptr {
		ptr[l] = GP64()
		MOVQ(p.Offset(polyBase+8*l), ptr[l])
		TESTQ(ptr[l], ptr[l])
		CMOVQEQ(st.Base, ptr[l])
		ADDQ(p.Offset(polyOff+8*l), ptr[l])
	}

	Label("block")
	Comment("Load the next block of every lane: a holds lanes 0, 2, 4, 6 and b lanes 1, 3, 5, 7 in",
		"their 128-bit chunks, so the qword unpacks give the low and high halves in lane order.")
	a, b := ZMM(), ZMM()
	VMOVDQU64(Mem{Base: ptr[0]}, a.AsX())
	VMOVDQU64(Mem{Base: ptr[1]}, b.AsX())
	for j := 1; j < 4; j++ {
		VINSERTI32X4(U8(j), Mem{Base: ptr[2*j]}, a, a)
		VINSERTI32X4(U8(j), Mem{Base: ptr[2*j+1]}, b, b)
	}
	lo, hi := ZMM(), ZMM()
	VPUNPCKLQDQ(b, a, lo)
	VPUNPCKHQDQ(b, a, hi)

	Comment("h += m in radix 2^44; the 2^128 bit is bit 40 of limb 2. h < 2^45 + 2^17 afterwards.")
	m := ZMM()
	VPANDQ(mask44, lo, m)
	VPADDQ(m, h0, h0)
	m1 := ZMM()
	VPSRLQ(U8(44), lo, m)
	VPSLLQ(U8(20), hi, m1)
	VPORQ(m1, m, m)
	VPANDQ(mask44, m, m)
	VPADDQ(m, h1, h1)
	VPSRLQ(U8(24), hi, m)
	VPORQ(bit40, m, m)
	VPADDQ(m, h2, h2)

	Comment("d = h * r: the low and high 52-bit halves of the limb products, summed per weight.",
		"Products are below 2^46 * 2^49, so each half-sum is below 3 * 2^52.")
	lo0, lo1, lo2, hi0, hi1, hi2 := ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	for _, z := range []VecVirtual{lo0, lo1, lo2, hi0, hi1, hi2} {
		VPXORQ(z, z, z)
	}
	terms := [3][3][2]VecVirtual{
		{{h0, r0}, {h1, s2}, {h2, s1}}, // weight 1
		{{h0, r1}, {h1, r0}, {h2, s2}}, // weight 2^44
		{{h0, r2}, {h1, r1}, {h2, r0}}, // weight 2^88
	}
	los, his := []VecVirtual{lo0, lo1, lo2}, []VecVirtual{hi0, hi1, hi2}
	for i := range 3 { // interleaved so that each accumulator's chain has other work between its steps
		for w := range 3 {
			VPMADD52LUQ(terms[w][i][1], terms[w][i][0], los[w])
			VPMADD52HUQ(terms[w][i][1], terms[w][i][0], his[w])
		}
	}
	Comment("A high half has weight 2^52 = 2^8 * 2^44 above its limb: shift it by 8 into the next limb;",
		"the one of limb 2 wraps to weight 2^132, which is 20 (that is 4*5: shift by 10, times 5).")
	VPSLLQ(U8(8), hi0, hi0)
	VPADDQ(hi0, lo1, lo1)
	VPSLLQ(U8(8), hi1, hi1)
	VPADDQ(hi1, lo2, lo2)
	VPSLLQ(U8(10), hi2, hi2)
	VPADDQ(hi2, lo0, lo0)
	VPSLLQ(U8(2), hi2, hi2)
	VPADDQ(hi2, lo0, lo0)

	Comment("One carry pass: limbs 0 and 1 below 2^44, limb 2 below 2^42, the carry out of bit 130",
		"re-enters limb 0 times 5 (2^130 = 5), leaving limb 0 below 2^44 + 2^17.")
	c := ZMM()
	VPSRLQ(U8(44), lo0, c)
	VPANDQ(mask44, lo0, lo0)
	VPADDQ(c, lo1, lo1)
	VPSRLQ(U8(44), lo1, c)
	VPANDQ(mask44, lo1, h1)
	VPADDQ(c, lo2, lo2)
	VPSRLQ(U8(42), lo2, c)
	VPANDQ(mask42, lo2, h2)
	VPADDQ(c, lo0, lo0)
	VPSLLQ(U8(2), c, c)
	VPADDQ(c, lo0, h0)

	for l := range ptr {
		ADDQ(p.Offset(polyStrides+8*l), ptr[l])
	}
	DECQ(n)
	JNZ(LabelRef("block"))

	for i, h := range []VecVirtual{h0, h1, h2} {
		VMOVDQA64(h, st.Offset(64*(polyRowH+i)))
	}
	for l := range ptr {
		base := GP64()
		MOVQ(p.Offset(polyBase+8*l), base)
		TESTQ(base, base)
		CMOVQEQ(st.Base, base)
		SUBQ(base, ptr[l])
		MOVQ(ptr[l], p.Offset(polyOff+8*l))
	}
	VZEROUPPER()
	RET()
}
