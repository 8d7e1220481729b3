package main

import (
	"fmt"

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
// The kernel runs polyLanes = 16 lanes as independent groups of one vector each (8 lanes per zmm or 4
// per ymm), one group's block after the other: a block's multiply-and-carry chain is about four times
// longer than the time the core needs to issue it, so the groups fill each other's latency.
//
// st (64-byte aligned) holds rows of polyLanes lanes: h0, h1, h2 (the accumulators), r0, r1, r2 (the
// multiplier, normally the clamped key r), s1 = 20*r1, s2 = 20*r2, and a row the kernel fills with the
// lanes' message addresses. The 20 folds products of weight 2^132 back to weight 1, since
// 2^132 = 4*2^130 = 4*5 (mod 2^130-5).
//
// polyPtrs16 (kernels/chacha_lanes_amd64.go) holds per lane a buffer and the offset of the lane's next
// 16-byte block in it; a nil buffer stands for st, behind which the driver keeps the lanes' scratch
// blocks (see chachaPtrs16). All lanes advance by the same stride per block.
const (
	polyLanes = 16
	polyRowH  = 0
	polyRowR  = 3
	polyRowS  = 6
	polyRowA  = 8
	polyBase  = 0
	polyOff   = polyLanes * 8
)

// poly1305IFMA generates the kernel with vectors of width lanes (4: ymm, 8: zmm).
func poly1305IFMA(width int) {
	name := fmt.Sprintf("poly1305IFMA%s", map[int]string{4: "Y", 8: "Z"}[width])
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" absorbs n 16-byte blocks in each of 16 lanes: per block, lane l computes",
		"h = (h + m) * r mod 2^130-5 (the 2^128 bit of m set; h not fully reduced) with m read at",
		"p.base[l]+p.off[l]+k*stride for the k-th block. n >= 1; p.off is not updated.")
	st := Mem{Base: Load(Param("st"), GP64())}
	p := Mem{Base: Load(Param("p"), GP64())}
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	groups := polyLanes / width
	vec := func() VecVirtual {
		if width == 8 {
			return ZMM()
		}
		return YMM()
	}
	at := func(row, g int) Mem { return st.Offset(8 * (row*polyLanes + g*width)) }

	Comment("The lanes' message addresses.")
	for l := range polyLanes {
		a := GP64()
		MOVQ(p.Offset(polyBase+8*l), a)
		TESTQ(a, a)
		CMOVQEQ(st.Base, a)
		ADDQ(p.Offset(polyOff+8*l), a)
		MOVQ(a, st.Offset(8*(polyRowA*polyLanes+l)))
	}
	bcast := func(v uint64) VecVirtual {
		g, z := GP64(), vec()
		MOVQ(U64(v), g)
		VPBROADCASTQ(g, z)
		return z
	}
	mask44, mask42, bit40 := bcast(1<<44-1), bcast(1<<42-1), bcast(1<<40)
	h := make([][3]VecVirtual, groups)
	for g := range h {
		for i := range 3 {
			h[g][i] = vec()
			VMOVDQA64(at(polyRowH+i, g), h[g][i])
		}
	}
	off := GP64()
	XORQ(off, off)

	Label("block")
	for g := range groups {
		Commentf("Group %d: lanes %d to %d.", g, g*width, g*width+width-1)
		polyBlock(width, func(row int) Mem { return at(row, g) }, h[g], st, g*width, off, mask44, mask42, bit40, vec)
	}
	ADDQ(stride, off)
	DECQ(n)
	JNZ(LabelRef("block"))

	for g := range groups {
		for i := range 3 {
			VMOVDQA64(h[g][i], at(polyRowH+i, g))
		}
	}
	VZEROUPPER()
	RET()
}

// polyBlock absorbs one block in each lane of one group: lanes first..first+width-1, whose rows row
// returns and whose accumulator h is.
func polyBlock(width int, row func(int) Mem, h [3]VecVirtual, st Mem, first int, off GPVirtual,
	mask44, mask42, bit40 VecVirtual, vec func() VecVirtual) {
	Comment("Load the next block of every lane: a holds the even lanes and b the odd ones in their",
		"128-bit chunks, so the qword unpacks give the blocks' low and high halves in lane order.")
	a, b := vec(), vec()
	for j := range width / 2 {
		for k, v := range []VecVirtual{a, b} {
			addr := GP64()
			MOVQ(st.Offset(8*(polyRowA*polyLanes+first+2*j+k)), addr)
			m := Mem{Base: addr, Index: off, Scale: 1}
			if j == 0 { // a broadcast, not an xmm load: the allocator must see all of v written
				VBROADCASTI32X4(m, v)
			} else {
				VINSERTI32X4(U8(j), m, v, v)
			}
		}
	}
	lo, hi := vec(), vec()
	VPUNPCKLQDQ(b, a, lo)
	VPUNPCKHQDQ(b, a, hi)

	Comment("h += m in radix 2^44; the 2^128 bit is bit 40 of limb 2. h < 2^45 + 2^17 afterwards.")
	h0, h1, h2 := h[0], h[1], h[2]
	m := vec()
	VPANDQ(mask44, lo, m)
	VPADDQ(m, h0, h0)
	m1 := vec()
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
	var los, his [3]VecVirtual
	for w := range 3 { // zeroed from m, so the allocator sees no use of the accumulators before this
		los[w], his[w] = vec(), vec()
		VPXORQ(m, m, los[w])
		VPXORQ(m, m, his[w])
	}
	terms := [3][3]struct {
		h   VecVirtual
		row int
	}{
		{{h0, polyRowR}, {h1, polyRowS + 1}, {h2, polyRowS}},     // weight 1: h0 r0 + h1 20r2 + h2 20r1
		{{h0, polyRowR + 1}, {h1, polyRowR}, {h2, polyRowS + 1}}, // weight 2^44
		{{h0, polyRowR + 2}, {h1, polyRowR + 1}, {h2, polyRowR}}, // weight 2^88
	}
	for i := range 3 { // interleaved so that each accumulator's chain has other work between its steps
		for w := range 3 {
			VPMADD52LUQ(row(terms[w][i].row), terms[w][i].h, los[w])
			VPMADD52HUQ(row(terms[w][i].row), terms[w][i].h, his[w])
		}
	}
	lo0, lo1, lo2, hi0, hi1, hi2 := los[0], los[1], los[2], his[0], his[1], his[2]
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
	c := vec()
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
}
