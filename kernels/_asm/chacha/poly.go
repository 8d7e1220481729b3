// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

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
// polyPtrs16 (kernels/chacha_lanes.go) holds per lane a buffer and the offset of the lane's next
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

// poly1305IFMA generates the kernel with vectors of width lanes (4: ymm, 8: zmm) for lanes 0 to
// lanes-1 (16, or 8 with ymm: half the work of 16 on zmm, still two groups in flight). It absorbs
// two blocks a step, h = (h + m1) * r^2 + m2 * r (RFC 8439 section 2.5's Horner evaluation
// regrouped), with one fold and carry pass where two single steps take two; r^2 is computed per
// group and call, into registers (two groups) or the frame. A call of one block, and the last block
// of an odd count, take a single step.
func poly1305IFMA(width, lanes int) {
	name := fmt.Sprintf("poly1305IFMA%s", map[int]string{4: "Y", 8: "Z"}[width])
	if lanes != polyLanes {
		name += fmt.Sprintf("Lanes%d", lanes)
	}
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+fmt.Sprintf(" absorbs n 16-byte blocks in each of lanes 0 to %d: per block, lane l computes", lanes-1),
		"h = (h + m) * r mod 2^130-5 (the 2^128 bit of m set; h not fully reduced) with m read at",
		"p.base[l]+p.off[l]+k*stride for the k-th block. n >= 1; p.off is not updated.")
	st := Mem{Base: Load(Param("st"), GP64())}
	p := Mem{Base: Load(Param("p"), GP64())}
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	groups := lanes / width
	vec := func() VecVirtual {
		if width == 8 {
			return ZMM()
		}
		return YMM()
	}
	at := func(row, g int) Mem { return st.Offset(8 * (row*polyLanes + g*width)) }
	// The multipliers' rows, r's and r^2's: limbs 0..2, 20*limb 1 and 20*limb 2. r^2 is computed per
	// group and call; with two groups its rows stay in registers, with more in the frame. r's rows
	// come from st, each loaded once for the low and the high product that read it in turn
	// (rowLoads): a zmm memory operand costs its load again with every instruction, and a zmm load
	// an Intel core about a third of a vector ALU slot (docs/experiments.md, 2026-12-07 ninth
	// session).
	inRegs := groups <= 2
	var powers Mem
	sq := make([][5]VecVirtual, groups)
	if !inRegs {
		powers = AllocLocal(groups * 5 * 8 * width)
	}
	sqRows := func(g int) func(k int) Mem {
		return func(k int) Mem { return powers.Offset(8 * width * (5*g + k)) }
	}
	// mulBy returns the operands of r^e (e = 1, 2) for group g.
	mulBy := func(e, g int) func(k int) Op {
		if e == 1 {
			return rowLoads(func(k int) Mem { return at(polyMulRows[k], g) }, vec)
		}
		if inRegs {
			return func(k int) Op { return sq[g][k] }
		}
		return func(k int) Op { return sqRows(g)(k) }
	}
	Comment("The lanes' message addresses.")
	for l := range lanes {
		a := GP64()
		MOVQ(p.Offset(polyBase+8*l), a)
		TESTQ(a, a)
		CMOVQEQ(st.Base, a)
		ADDQ(p.Offset(polyOff+8*l), a)
		MOVQ(a, st.Offset(8*(polyRowA*polyLanes+l)))
	}
	c := polyConstsIn(vec)
	h := make([][3]VecVirtual, groups)
	for g := range h {
		for i := range 3 {
			h[g][i] = vec()
			VMOVDQA64(at(polyRowH+i, g), h[g][i])
		}
	}
	var offs [2]GPVirtual // the offsets of a step's blocks
	for j := range offs {
		offs[j] = GP64()
	}
	XORQ(offs[0], offs[0])
	CMPQ(n, U8(2))
	JB(LabelRef("one"))

	Comment("r^2 per group (polyMulReduce: limbs below 2^44 + 2^17, 2^44 and 2^42, 20 times limbs 1",
		"and 2 below 2^49).")
	for g := range groups {
		var x [3]VecVirtual
		for i := range x {
			x[i] = vec()
			VMOVDQA64(at(polyRowR+i, g), x[i])
		}
		polyMulReduce(x, mulBy(1, g), c, vec)
		if inRegs {
			sq[g] = [5]VecVirtual{x[0], x[1], x[2], times20(x[1], vec), times20(x[2], vec)}
		} else {
			storeMultiplier(x, sqRows(g), vec)
		}
	}
	LEAQ(Mem{Base: offs[0], Index: stride, Scale: 1}, offs[1])
	stride2 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 1}, stride2)

	Label("two")
	for g := range groups {
		Commentf("Group %d: lanes %d to %d, two blocks.", g, g*width, g*width+width-1)
		polyStep(width, 2, mulBy, g, h[g], st, offs[:], c, vec)
	}
	ADDQ(stride2, offs[0])
	ADDQ(stride2, offs[1])
	SUBQ(U8(2), n)
	CMPQ(n, U8(2))
	JAE(LabelRef("two"))
	if inRegs {
		Comment("r^2 leaves the registers: the one-block step takes r.")
		for g := range sq {
			for _, r := range sq[g] {
				VPXORQ(r, r, r)
			}
		}
	}
	TESTQ(n, n)
	JZ(LabelRef("done"))

	Label("one")
	for g := range groups {
		Commentf("Group %d: lanes %d to %d, one block.", g, g*width, g*width+width-1)
		polyStep(width, 1, mulBy, g, h[g], st, offs[:], c, vec)
	}

	Label("done")
	for g := range groups {
		for i := range 3 {
			VMOVDQA64(h[g][i], at(polyRowH+i, g))
		}
	}
	if !inRegs {
		wipeLocal(powers, groups*5*8*width, wipeEVEX)
	}
	VZEROUPPER()
	RET()
}

// polyLoad loads a 16-byte block of every lane of a group (lanes first..first+width-1) at each
// offset of offs from the lanes' addresses, and returns the blocks' low and high 64-bit halves in
// lane order: the loads put the even lanes in one register and the odd ones in another, in their
// 128-bit chunks, so that the qword unpacks give the halves in lane order.
func polyLoad(width int, st Mem, first int, offs []GPVirtual, vec func() VecVirtual) (lo, hi []VecVirtual) {
	even, odd := make([]VecVirtual, len(offs)), make([]VecVirtual, len(offs))
	for b := range offs {
		even[b], odd[b] = vec(), vec()
	}
	for j := range width / 2 {
		for k, v := range [][]VecVirtual{even, odd} {
			addr := GP64()
			MOVQ(st.Offset(8*(polyRowA*polyLanes+first+2*j+k)), addr)
			for b, off := range offs {
				m := Mem{Base: addr, Index: off, Scale: 1}
				if j == 0 { // a broadcast, not an xmm load: the allocator must see all of v written
					VBROADCASTI32X4(m, v[b])
				} else {
					VINSERTI32X4(U8(j), m, v[b], v[b])
				}
			}
		}
	}
	for b := range offs {
		lo, hi = append(lo, vec()), append(hi, vec())
		VPUNPCKLQDQ(odd[b], even[b], lo[b])
		VPUNPCKHQDQ(odd[b], even[b], hi[b])
	}
	return lo, hi
}

// polyStep absorbs k blocks (1 or 2) in each lane of group g, whose accumulator is h: block j at
// offs[j] of the lanes' addresses, h = (h + m_0) * r^k + ... + m_(k-1) * r, with the operands of r^e
// from mulBy(e, g). The second block's products come first: they do not wait for h. With h's limbs
// below 2^44 + 2^17, 2^44 and 2^42 before, those of h + m_0 are below 2^45 + 2^17, 2^45 and 2^43,
// the second block's below 2^44, 2^44 and 2^41, and the multipliers' (20 times limbs 1 and 2) below
// 2^49: at most 6 terms per weight, each half below 2^52 (low) or 2^43 (high), as polyFoldCarry
// wants.
func polyStep(width, k int, mulBy func(e, g int) func(int) Op, g int, h [3]VecVirtual, st Mem,
	offs []GPVirtual, c polyConsts, vec func() VecVirtual) {
	Comment("Load the blocks of every lane: one register holds the even lanes and another the odd ones",
		"in their 128-bit chunks, so the qword unpacks give the blocks' low and high halves in lane order.")
	lo, hi := polyLoad(width, st, g*width, offs[:k], vec)
	var m [3]VecVirtual
	if k == 2 {
		Comment("The second block in radix 2^44, the 2^128 bit set.")
		polySplitMsg(lo[1], hi[1], &m, c, vec)
	}
	polyAddMsg(lo[0], hi[0], h, c, vec)
	los, his := polySums(h[0], vec)
	if k == 2 {
		polyProducts(m, mulBy(1, g), &los, &his)
	}
	Commentf("d = (h + m_0) * r^%d plus the other block's products, per weight.", k)
	polyProducts(h, mulBy(k, g), &los, &his)
	polyFoldCarry(los, his, h, c, vec)
}

// Rows of st the IFMA kernels leave alone, for poly1305FinishIFMAZ: per lane the key s (RFC 8439 section
// 2.5) as two little-endian qwords, the tag an Open expects, and the tag the kernel writes. Behind
// the 15 rows, each lane has a 48-byte scratch block (polyTable in kernels/chacha_lanes.go)
// whose last 16 bytes are the MAC's lengths block.
const (
	polyRowKeyS    = 9
	polyRowWant    = 11
	polyRowTag     = 13
	polyScratch    = 15 * polyLanes * 8
	polyScratchLen = 48
	polyLengths    = 32
)

// poly1305Finish generates poly1305FinishIFMAZ: the tags of all 16 lanes at once, and for Open their
// comparison with the expected tags, in constant time (no branch or address depends on h, s or the
// tags).
func poly1305Finish() {
	Implement("poly1305FinishIFMAZ")
	Attributes(NOSPLIT)
	Doc("poly1305FinishIFMAZ absorbs each lane's lengths block (the last block of the RFC 8439 section 2.8",
		"MAC input, from its scratch block) into its accumulator as the IFMA kernels leave it, and",
		"writes the lane's tag (h mod 2^130-5 + s) mod 2^128 (section 2.5.1) to rows polyRowTag (low",
		"qword) and polyRowTag+1 of st, with s from rows polyRowKeyS. The accumulator rows are not",
		"updated, so lanes whose MAC is not complete go on unharmed. It returns a mask with bit l set",
		"when lane l's tag equals rows polyRowWant: Open's verdict.")
	st := Mem{Base: Load(Param("st"), GP64())}
	at := func(row, g int) Mem { return st.Offset(8 * (row*polyLanes + g*8)) }
	pc := polyConstsIn(ZMMv)
	mask44, mask42 := pc.mask44, pc.mask42
	eq := GP64()
	XORQ(eq, eq)
	for g := range polyLanes / 8 {
		Commentf("Lanes %d to %d.", 8*g, 8*g+7)
		h0, h1, h2, c := ZMM(), ZMM(), ZMM(), ZMM()
		VMOVDQA64(at(polyRowH, g), h0)
		VMOVDQA64(at(polyRowH+1, g), h1)
		VMOVDQA64(at(polyRowH+2, g), h2)
		Comment("The lanes' lengths blocks, as polyLoad loads blocks, then h = (h + m) * r.")
		a, b := ZMM(), ZMM()
		for j := range 4 {
			for k, v := range []VecVirtual{a, b} {
				m := st.Offset(polyScratch + polyScratchLen*(8*g+2*j+k) + polyLengths)
				if j == 0 {
					VBROADCASTI32X4(m, v)
				} else {
					VINSERTI32X4(U8(j), m, v, v)
				}
			}
		}
		lo, hi := ZMM(), ZMM()
		VPUNPCKLQDQ(b, a, lo)
		VPUNPCKHQDQ(b, a, hi)
		hv := [3]VecVirtual{h0, h1, h2}
		polyAddMsg(lo, hi, hv, pc, ZMMv)
		polyMulReduce(hv, func(k int) Op { return at(polyMulRows[k], g) }, pc, ZMMv)
		h0, h1, h2 = hv[0], hv[1], hv[2]
		// carry moves the bits of a above bit k into b and clears them in a.
		carry := func(a, b VecVirtual, k int, m VecVirtual) {
			VPSRLQ(U8(k), a, c)
			VPANDQ(m, a, a)
			VPADDQ(c, b, b)
		}
		Comment("Two carry passes, the carry out of bit 130 re-entering limb 0 times 5, and a third up",
			"to limb 2: h < 2^130 + 2^44 with limbs 0 and 1 below 2^44.")
		for range 2 {
			carry(h0, h1, 44, mask44)
			carry(h1, h2, 44, mask44)
			VPSRLQ(U8(42), h2, c)
			VPANDQ(mask42, h2, h2)
			VPADDQ(c, h0, h0)
			VPSLLQ(U8(2), c, c)
			VPADDQ(c, h0, h0)
		}
		carry(h0, h1, 44, mask44)
		carry(h1, h2, 44, mask44)

		Comment("g = h + 5 reaches 2^130 exactly when h >= p = 2^130-5, and then h mod p = g - 2^130:",
			"select g where bit 130 of g is set (all-ones mask from 0 - that bit), then drop bit 130.")
		g0, g1, g2, sel, t := ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
		five := bcast(5, ZMMv)
		VPADDQ(five, h0, g0)
		VMOVDQA64(h1, g1)
		VMOVDQA64(h2, g2)
		carry(g0, g1, 44, mask44)
		carry(g1, g2, 44, mask44)
		VPSRLQ(U8(42), g2, sel)
		VPXORQ(t, t, t)
		VPSUBQ(sel, t, sel)
		for _, p := range [][2]VecVirtual{{g0, h0}, {g1, h1}, {g2, h2}} {
			VPXORQ(p[0], p[1], t)
			VPANDQ(sel, t, t)
			VPXORQ(t, p[1], p[1])
		}
		VPANDQ(mask42, h2, h2)

		Comment("h + s mod 2^128, with s split into radix-2^44 limbs.")
		slo, shi, s1 := ZMM(), ZMM(), ZMM()
		VMOVDQA64(at(polyRowKeyS, g), slo)
		VMOVDQA64(at(polyRowKeyS+1, g), shi)
		VPSRLQ(U8(44), slo, s1)
		VPSLLQ(U8(20), shi, t)
		VPORQ(t, s1, s1)
		VPANDQ(mask44, s1, s1)
		VPADDQ(s1, h1, h1)
		VPANDQ(mask44, slo, slo)
		VPADDQ(slo, h0, h0)
		VPSRLQ(U8(24), shi, shi)
		VPADDQ(shi, h2, h2)
		carry(h0, h1, 44, mask44)
		carry(h1, h2, 44, mask44)
		lo, hi = ZMM(), ZMM()
		VPSLLQ(U8(44), h1, lo)
		VPORQ(h0, lo, lo)
		VPSRLQ(U8(20), h1, hi)
		VPSLLQ(U8(24), h2, t)
		VPORQ(t, hi, hi)
		VMOVDQA64(lo, at(polyRowTag, g))
		VMOVDQA64(hi, at(polyRowTag+1, g))

		Comment("Lanes whose tag equals the expected one: both qwords' differences zero.")
		VPXORQ(at(polyRowWant, g), lo, lo)
		VPXORQ(at(polyRowWant+1, g), hi, hi)
		VPORQ(hi, lo, lo)
		k := K()
		VPTESTNMQ(lo, lo, k)
		m := GP32()
		KMOVW(k, m)
		if g > 0 {
			SHLL(U8(8*g), m)
		}
		ORQ(m.As64(), eq)
	}
	Store(eq, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// polyMulRows are the rows of r0, r1, r2, 20*r1 and 20*r2 in st.
var polyMulRows = [5]int{polyRowR, polyRowR + 1, polyRowR + 2, polyRowS, polyRowS + 1}

// times20 returns 20x (16x + 4x) in a new register from vec: the multiplier of a limb whose products
// wrap past 2^130 (polyProducts).
func times20(x VecVirtual, vec func() VecVirtual) VecVirtual {
	t, u := vec(), vec()
	VPSLLQ(U8(4), x, t)
	VPSLLQ(U8(2), x, u)
	VPADDQ(u, t, t)
	return t
}

// rowLoads returns mul operands (see polyMulReduce) that load the rows at row into registers, each
// once for the calls that ask for it in a row: polyProducts asks for a row's low and high product
// one after the other. The returned function emits a load where a row is first asked for, so a
// kernel takes a fresh one for each product.
func rowLoads(row func(k int) Mem, vec func() VecVirtual) func(k int) Op {
	last, reg := -1, VecVirtual(nil)
	return func(k int) Op {
		if k != last {
			reg = vec()
			VMOVDQU64(row(k), reg)
			last = k
		}
		return reg
	}
}

// storeMultiplier stores the multiplier x as polyMulReduce's operands read it: limbs 0..2 at
// row(0..2), 20 times limbs 1 and 2 at row(3) and row(4).
func storeMultiplier(x [3]VecVirtual, row func(k int) Mem, vec func() VecVirtual) {
	for i := range x {
		VMOVDQU64(x[i], row(i))
	}
	VMOVDQU64(times20(x[1], vec), row(3))
	VMOVDQU64(times20(x[2], vec), row(4))
}

// polyConsts holds broadcast constants of the radix-2^44 code.
type polyConsts struct{ mask44, mask42, bit40 VecVirtual }

// polyAddMsg adds the blocks whose low and high 64-bit halves are lo and hi to h, with the 2^128 bit
// set (bit 40 of limb 2).
func polyAddMsg(lo, hi VecVirtual, h [3]VecVirtual, c polyConsts, vec func() VecVirtual) {
	Comment("h += m in radix 2^44; the 2^128 bit is bit 40 of limb 2. h < 2^45 + 2^17 afterwards.")
	var m [3]VecVirtual
	polySplitMsg(lo, hi, &m, c, vec)
	for i := range h {
		VPADDQ(m[i], h[i], h[i])
	}
}

// polySplitMsg sets m to the radix-2^44 limbs of the blocks whose low and high 64-bit halves are lo
// and hi, with the 2^128 bit set: below 2^44, 2^44 and 2^41.
func polySplitMsg(lo, hi VecVirtual, m *[3]VecVirtual, c polyConsts, vec func() VecVirtual) {
	for i := range m {
		m[i] = vec()
	}
	VPANDQ(c.mask44, lo, m[0])
	VPSRLQ(U8(44), lo, m[1])
	VPSLLQ(U8(20), hi, m[2])
	VPORQ(m[2], m[1], m[1])
	VPANDQ(c.mask44, m[1], m[1])
	VPSRLQ(U8(24), hi, m[2])
	VPORQ(c.bit40, m[2], m[2])
}

// polyMulReduce sets h = h * x mod 2^130-5, partially reduced, where mul(k) is the operand holding
// x's limb k (k = 0, 1, 2) or 20 times limb 1 or 2 (k = 3, 4).
func polyMulReduce(h [3]VecVirtual, mul func(k int) Op, c polyConsts, vec func() VecVirtual) {
	Comment("d = h * x: the low and high 52-bit halves of the limb products, summed per weight.",
		"With h's limbs below 2^48 and x's (times 20) below 2^50, the low half-sums are below",
		"3 * 2^52 and the high ones below 2^47.")
	los, his := polySums(h[0], vec)
	polyProducts(h, mul, &los, &his)
	polyFoldCarry(los, his, h, c, vec)
}

// polySums returns the six accumulators of a product's low and high half-sums, zeroed from z (a
// register already written, so that the allocator sees no use of them before this).
func polySums(z VecVirtual, vec func() VecVirtual) (los, his [3]VecVirtual) {
	for w := range 3 {
		los[w], his[w] = vec(), vec()
		VPXORQ(z, z, los[w])
		VPXORQ(z, z, his[w])
	}
	return los, his
}

// polyProducts adds to los and his, per weight 2^(44w), the low and high 52-bit halves of the
// products of v's limbs and x's (mul as in polyMulReduce), 20 times limb 1 or 2 of x folding the
// products of weight 2^132 and 2^176 back (2^132 = 20 mod 2^130-5).
func polyProducts(v [3]VecVirtual, mul func(k int) Op, los, his *[3]VecVirtual) {
	terms := [3][3]struct {
		v   VecVirtual
		row int
	}{
		{{v[0], 0}, {v[1], 4}, {v[2], 3}}, // weight 1: v0 x0 + v1 20x2 + v2 20x1
		{{v[0], 1}, {v[1], 0}, {v[2], 4}}, // weight 2^44
		{{v[0], 2}, {v[1], 1}, {v[2], 0}}, // weight 2^88
	}
	for i := range 3 { // interleaved so that each accumulator's chain has other work between its steps
		for w := range 3 {
			VPMADD52LUQ(mul(terms[w][i].row), terms[w][i].v, los[w])
			VPMADD52HUQ(mul(terms[w][i].row), terms[w][i].v, his[w])
		}
	}
}

// polyFoldCarry sets h to the sum the half-sums los and his stand for, partially reduced: limbs 0
// and 1 below 2^44 (limb 0 plus at most 2^17), limb 2 below 2^42. It wants the low half-sums below
// 2^56 and the high ones below 2^46: limb 0 then stays below 2^56 + 2^46 * 5120 < 2^59, and the carry
// out of limb 2 below 2^15, so 5 times it below 2^17.
func polyFoldCarry(los, his, h [3]VecVirtual, c polyConsts, vec func() VecVirtual) {
	mask44, mask42 := c.mask44, c.mask42
	h0, h1, h2 := h[0], h[1], h[2]
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
	cy := vec()
	VPSRLQ(U8(44), lo0, cy)
	VPANDQ(mask44, lo0, lo0)
	VPADDQ(cy, lo1, lo1)
	VPSRLQ(U8(44), lo1, cy)
	VPANDQ(mask44, lo1, h1)
	VPADDQ(cy, lo2, lo2)
	VPSRLQ(U8(42), lo2, cy)
	VPANDQ(mask42, lo2, h2)
	VPADDQ(cy, lo0, lo0)
	VPSLLQ(U8(2), cy, cy)
	VPADDQ(cy, lo0, h0)
}

// The single-message IFMA kernel: one message's blocks shared out to the 8 lanes of a zmm in groups
// of 8, lane j taking block j of a group (in the unpacked order below). One accumulator per lane
// evaluates a chain of dependent multiplications, so two accumulators X and Y take the groups in
// turns (X the even groups, Y the odd ones), each stepping with multiplier r^16, and their chains
// overlap. At the end the owner of the last group multiplies by r^(8-j) in lane j and the other by
// r^(16-j); the sum of all their lanes is then the Horner evaluation of those blocks (RFC 8439
// section 2.5). A message of one group uses X alone. The blocks before and after the whole groups
// (a short AD, the last blocks and the lengths) run k at a time in one multiplication (step in
// poly1305IFMAOne), or on their own where there are only one or two. polyOne
// (kernels/chacha_single_amd64.go) holds rows of 8 qwords at these indexes.
const (
	oneRowH    = 0  // h0, h1, h2 in lane 0, zero in the other lanes
	oneRowR16  = 3  // r^16: limbs 0..2, 20*limb 1, 20*limb 2, broadcast
	oneRowEnd  = 8  // per lane: r^(8-j), the last group's multiplier, same five rows
	oneRowEnd2 = 13 // per lane: r^(16-j), the multiplier of the group before the last
	oneRowR    = 18 // r, broadcast, for a block on its own
)

// polyStepIdx holds, for k = 1..8 blocks absorbed in one step (row k-1, 8 qwords), the lane of the
// final multipliers (oneRowEnd) that each lane takes: the lane of block i, blockLane(i), takes
// r^(k-i), which oneRowEnd holds in lane blockLane(i+8-k). polyStepLanes holds, for the same k, the
// lanes of blocks 0..k-1 (a byte each, at k-1), then the mask of their 2k qwords in memory (a word
// each, at 8+2(k-1)).
var polyStepIdx, polyStepLanes Mem

// blockLane is the lane that block i of a group of 8 lands in after poly1305IFMAOne's unpacks.
func blockLane(i int) int { return 2*(i%4) + i/4 }

func polyStepTables() {
	polyStepIdx = GLOBL("poly1305StepIdx", RODATA|NOPTR)
	for k := 1; k <= 8; k++ {
		for l := range 8 { // lanes of no block take lane 0, zeroed by the mask
			v := 0
			for i := range k {
				if blockLane(i) == l {
					v = blockLane(i + 8 - k)
				}
			}
			DATA(64*(k-1)+8*l, U64(uint64(v)))
		}
	}
	polyStepLanes = GLOBL("poly1305StepLanes", RODATA|NOPTR)
	for k := 1; k <= 8; k++ {
		lanes := 0
		for i := range k {
			lanes |= 1 << blockLane(i)
		}
		DATA(k-1, U8(lanes))
	}
	for k := 1; k <= 8; k++ {
		DATA(8+2*(k-1), U16(1<<(2*k)-1))
	}
}

func poly1305IFMAOne() {
	Implement("poly1305IFMAOne")
	Attributes(NOSPLIT)
	Doc("poly1305IFMAOne absorbs into the accumulator st.h (the 2^128 bit of each block set) the",
		"headN (at most 8) 16-byte blocks at head, then the n blocks at msg, a multiple of 8, eight at",
		"a time across the lanes, then the tailN (at most 9) blocks at tail. Each count may be 0.")
	st := Mem{Base: Load(Param("st"), GP64())}
	row := func(i int) Mem { return st.Offset(64 * i) }
	c := polyConstsIn(ZMMv)
	var x, y [3]VecVirtual
	lane0, one := K(), GP32()
	MOVL(U32(1), one)
	KMOVW(one, lane0)
	for i := range x {
		x[i], y[i] = ZMM(), ZMM()
		VMOVDQU64_Z(row(oneRowH+i), lane0, x[i])
		VPXORQ(y[i], y[i], y[i])
	}
	mulRows := func(first int) func(int) Op { return func(k int) Op { return row(first + k) } }
	sumInto := func(h, from [3]VecVirtual) {
		for i := range h {
			VPADDQ(from[i], h[i], h[i])
		}
	}
	// fold sums x's lanes into lane 0 and zeroes the others: limbs below 16 * (2^44 + 2^17) < 2^49
	// (2^49 + 2^44 with the next block), far within IFMA's 52-bit inputs, and polyMulReduce's sums
	// stay below 2^64.
	fold := func() {
		for i := range x {
			yy, xx, t := YMM(), XMM(), XMM()
			VEXTRACTI64X4(U8(1), x[i], yy)
			VPADDQ(x[i].AsY(), yy, yy)
			VEXTRACTI128(U8(1), yy, xx)
			VPADDQ(yy.AsX(), xx, xx)
			VPSHUFD(U8(0x4e), xx, t)
			VPADDQ(t, xx, t)
			VMOVDQA64_Z(t.AsZ(), lane0, x[i])
		}
	}
	// step absorbs the k blocks at p (1 <= k <= 8, k in a register) in one multiplication: with h in
	// lane 0 and zero elsewhere, lane blockLane(i) takes block i and then r^(k-i) (zero in the lanes
	// of no block), and the lanes' sum is (...((h + m_0) r + m_1) r ... + m_(k-1)) r (RFC 8439
	// section 2.5). A block alone costs a multiplication's whole chain of dependent steps; k blocks
	// this way cost about as much.
	step := func(p, k Register) {
		t, tab, klo, khi, kl := GP64(), GP64(), K(), K(), K()
		Comment("The k blocks' qwords: a mask of 2k bits, the low 8 for blocks 0-3.")
		LEAQ(polyStepLanes, tab)
		MOVWQZX(Mem{Base: tab, Index: k, Scale: 2, Disp: 8 - 2}, t)
		KMOVW(t.As32(), klo)
		KSHIFTRW(U8(8), klo, khi)
		a, b, lo, hi := ZMM(), ZMM(), ZMM(), ZMM()
		VMOVDQU64_Z(Mem{Base: p}, klo, a)
		VMOVDQU64_Z(Mem{Base: p, Disp: 64}, khi, b)
		VPUNPCKLQDQ(b, a, lo)
		VPUNPCKHQDQ(b, a, hi)
		polyAddMsg(lo, hi, x, c, ZMMv)
		Comment("The multipliers r^(k-i) from the final ones, zero in the lanes of no block.")
		idx := ZMM()
		MOVBQZX(Mem{Base: tab, Index: k, Scale: 1, Disp: -1}, t)
		KMOVW(t.As32(), kl)
		MOVQ(k, t)
		SHLQ(U8(6), t)
		LEAQ(polyStepIdx, tab)
		VMOVDQU64(Mem{Base: tab, Index: t, Scale: 1, Disp: -64}, idx)
		var m [5]VecVirtual
		for j := range m {
			m[j] = ZMM()
			VPERMQ_Z(row(oneRowEnd+j), idx, kl, m[j])
		}
		polyMulReduce(x, func(j int) Op { return m[j] }, c, ZMMv)
		fold()
	}
	// single absorbs the block at p on its own: (h + m) r in every lane, of which lane 0 counts.
	// For one block, and for two, that is quicker than a step.
	single := func(p Register) {
		lo, hi := ZMM(), ZMM()
		VPBROADCASTQ(Mem{Base: p}, lo)
		VPBROADCASTQ(Mem{Base: p, Disp: 8}, hi)
		polyAddMsg(lo, hi, x, c, ZMMv)
		polyMulReduce(x, mulRows(oneRowR), c, ZMMv)
	}
	// keepLane0 zeroes x's lanes other than 0, which single leaves holding other products.
	keepLane0 := func() {
		for i := range x {
			VMOVDQA64_Z(x[i], lane0, x[i])
		}
	}
	// blocks absorbs the n blocks at p (n <= 9): one or two on their own, more in one step (nine:
	// one block, then a step of eight). x's lanes other than 0 are zero afterwards.
	blocks := func(p, n Register, label string) {
		TESTQ(n, n)
		JZ(LabelRef(label + "done"))
		CMPQ(n, U32(2))
		JA(LabelRef(label + "step"))
		single(p)
		CMPQ(n, U32(1))
		JE(LabelRef(label + "clean"))
		ADDQ(U32(16), p)
		single(p)
		Label(label + "clean")
		keepLane0()
		JMP(LabelRef(label + "done"))
		Label(label + "step")
		CMPQ(n, U32(8))
		JBE(LabelRef(label + "once"))
		single(p)
		keepLane0()
		ADDQ(U32(16), p)
		MOVQ(U64(8), n)
		Label(label + "once")
		step(p, n)
		Label(label + "done")
	}
	blocks(Load(Param("head"), GP64()), Load(Param("headN"), GP64()), "head")
	msg := Load(Param("msg"), GP64())
	n := Load(Param("n"), GP64())
	TESTQ(n, n)
	JZ(LabelRef("tail"))
	Comment("Blocks 0-3 and 4-7 of a group of 8: after the unpacks lanes 2c and 2c+1 hold blocks c",
		"and 4+c. X's lane 0 starts from h, every other lane of X and Y from 0.")
	load8 := func(h [3]VecVirtual) {
		a, b, lo, hi := ZMM(), ZMM(), ZMM(), ZMM()
		VMOVDQU64(Mem{Base: msg}, a)
		VMOVDQU64(Mem{Base: msg, Disp: 64}, b)
		VPUNPCKLQDQ(b, a, lo)
		VPUNPCKHQDQ(b, a, hi)
		polyAddMsg(lo, hi, h, c, ZMMv)
		ADDQ(U32(128), msg)
		SUBQ(U32(8), n)
	}
	load8(x)
	JZ(LabelRef("lastX"))
	load8(y)
	Comment("Pairs of groups: X and Y each step by r^16 and take the next group.")
	Label("pair")
	CMPQ(n, U32(16))
	JB(LabelRef("last"))
	polyMulReduce(x, mulRows(oneRowR16), c, ZMMv)
	polyMulReduce(y, mulRows(oneRowR16), c, ZMMv)
	load8(x)
	load8(y)
	JMP(LabelRef("pair"))

	Label("last")
	TESTQ(n, n)
	JZ(LabelRef("lastY"))
	Comment("One group more, X's: X holds the last group, Y the one before it.")
	polyMulReduce(x, mulRows(oneRowR16), c, ZMMv)
	load8(x)
	polyMulReduce(x, mulRows(oneRowEnd), c, ZMMv)
	polyMulReduce(y, mulRows(oneRowEnd2), c, ZMMv)
	sumInto(x, y)
	JMP(LabelRef("fold"))

	Label("lastY")
	Comment("Y holds the last group, X the one before it.")
	polyMulReduce(x, mulRows(oneRowEnd2), c, ZMMv)
	polyMulReduce(y, mulRows(oneRowEnd), c, ZMMv)
	sumInto(x, y)
	JMP(LabelRef("fold"))

	Label("lastX")
	polyMulReduce(x, mulRows(oneRowEnd), c, ZMMv)

	Label("fold")
	fold()

	Label("tail")
	blocks(Load(Param("tail"), GP64()), Load(Param("tailN"), GP64()), "tail")

	Comment("Only lane 0: the rows' other lanes stay zero for the next call.")
	for i := range x {
		VMOVQ(x[i].AsX(), row(oneRowH+i))
	}
	VZEROUPPER()
	RET()
}

// poly1305IFMAPowers computes the multipliers poly1305IFMAOne wants, r^1..r^16, in four rounds of
// lane-wise multiplications instead of scalar ones one after another:
//
//	A = r * r                                                  every lane: r^2
//	F = [r^2 r^2 r r 1 1 r r] * [A A A A A A 1 1]              [r^4 r^4 r^3 r^3 r^2 r^2 r r]
//	E = F * [r^4 1 r^4 1 r^4 1 r^4 1] (r^4 is F's lane 0)      [r^8 r^4 r^7 r^3 r^6 r^2 r^5 r]
//	E2 = E * r^8 (E's lane 0)                                  [r^16 r^12 r^15 r^11 r^14 r^10 r^13 r^9]
//
// E and E2 are the final multipliers' rows (lane 2c of E: r^(8-c), lane 2c+1: r^(4-c), matching the
// unpacked block order), E2's lane 0 broadcast is r^16. polyMulReduce's bounds hold throughout: every
// multiplier is r, 1 or its output (limbs below 2^44 + 2^17, 2^44, 2^42).
func poly1305IFMAPowers() {
	Implement("poly1305IFMAPowers")
	Attributes(NOSPLIT)
	Doc("poly1305IFMAPowers writes st's multiplier rows for the clamped r (radix 2^44 limbs): r^16,",
		"the lanes' two sets of final multipliers and r, each as limbs 0..2, 20*limb 1 and 20*limb 2.")
	st := Mem{Base: Load(Param("st"), GP64())}
	rp := Mem{Base: Load(Param("r"), GP64())}
	row := func(i int) Mem { return st.Offset(64 * i) }
	c := polyConstsIn(ZMMv)
	one, zero := bcast(1, ZMMv), ZMM()
	VPXORQ(zero, zero, zero)
	mask := func(m uint16) Register {
		g, k := GP32(), K()
		MOVL(U32(uint32(m)), g)
		KMOVW(g, k)
		return k
	}
	mulOf := func(x [3]VecVirtual) func(int) Op {
		ops := [5]Op{x[0], x[1], x[2], times20(x[1], ZMMv), times20(x[2], ZMMv)}
		return func(k int) Op { return ops[k] }
	}
	store := func(first int, x [3]VecVirtual) {
		storeMultiplier(x, func(k int) Mem { return row(first + k) }, ZMMv)
	}
	copyOf := func(x [3]VecVirtual) (y [3]VecVirtual) {
		for i := range x {
			y[i] = ZMM()
			VMOVDQA64(x[i], y[i])
		}
		return y
	}
	setOne := func(x [3]VecVirtual, k Register) { // the lanes in k become 1
		VMOVDQA64(one, k, x[0])
		VMOVDQA64(zero, k, x[1])
		VMOVDQA64(zero, k, x[2])
	}
	broadcast0 := func(x [3]VecVirtual) (y [3]VecVirtual) {
		for i := range x {
			y[i] = ZMM()
			VPBROADCASTQ(x[i].AsX(), y[i])
		}
		return y
	}

	var r [3]VecVirtual
	for i := range r {
		r[i] = ZMM()
		VPBROADCASTQ(rp.Offset(8*i), r[i])
	}
	store(oneRowR, r)
	Comment("A = r^2 in every lane.")
	a := copyOf(r)
	polyMulReduce(a, func(k int) Op { return row(oneRowR + k) }, c, ZMMv)
	Comment("F = [r^2 r^2 r r 1 1 r r] * [A A A A A A 1 1].")
	f := copyOf(a)
	kR := mask(0xcc)
	for i := range f {
		VMOVDQA64(r[i], kR, f[i])
	}
	setOne(f, mask(0x30))
	m2 := copyOf(a)
	setOne(m2, mask(0xc0))
	polyMulReduce(f, mulOf(m2), c, ZMMv)
	Comment("E = F * [r^4 1 r^4 1 ...]: the final multipliers.")
	m3 := broadcast0(f)
	setOne(m3, mask(0xaa))
	polyMulReduce(f, mulOf(m3), c, ZMMv)
	store(oneRowEnd, f)
	Comment("E2 = E * r^8: the multipliers of the group before the last.")
	polyMulReduce(f, mulOf(broadcast0(f)), c, ZMMv)
	store(oneRowEnd2, f)
	store(oneRowR16, broadcast0(f))
	VZEROUPPER()
	RET()
}

// bcast broadcasts the constant v to every qword of a new register from vec.
func bcast(v uint64, vec func() VecVirtual) VecVirtual {
	g, z := GP64(), vec()
	MOVQ(U64(v), g)
	VPBROADCASTQ(g, z)
	return z
}

// polyConstsIn broadcasts the radix-2^44 constants into new registers from vec.
func polyConstsIn(vec func() VecVirtual) polyConsts {
	return polyConsts{bcast(1<<44-1, vec), bcast(1<<42-1, vec), bcast(1<<40, vec)}
}

// ZMMv allocates a virtual zmm register, as the generic helpers want.
func ZMMv() VecVirtual { return ZMM() }

// YMMv allocates a virtual ymm register, as the generic helpers want.
func YMMv() VecVirtual { return YMM() }
