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

// poly1305AVX2Regs generates poly1305AVX2Regs (all 16 lanes) or, with 2 groups,
// poly1305AVX2RegsLanes8 (lanes 0-7 only): poly1305AVX2's contract for cores whose ymm integer
// instructions take one cycle. Group by group rather than block by block: a group's accumulator
// stays in 5 registers and its 4 message addresses in GPRs for all n blocks, where the block-major
// kernel loads and stores both every block. From 4 blocks on, two blocks per step (RFC 8439 section
// 2.5's Horner evaluation regrouped): h = (h + m1) * r^2 + m2 * r, one carry pass where two single
// blocks take two; r^2 is computed once per group and call, into the frame.
func poly1305AVX2Regs(groups int) {
	name := "poly1305AVX2Regs"
	if groups == 2 {
		name = "poly1305AVX2RegsLanes8"
	}
	Implement(name)
	Attributes(NOSPLIT)
	if groups == 2 {
		Doc(name + " is poly1305AVX2Regs on lanes 0-7 only.")
	} else {
		Doc(name+" is poly1305AVX2 for 1-cycle cores: the same lanes, pointers and table, the",
			"accumulators in registers through the call.")
	}
	st := Mem{Base: Load(Param("st"), GP64())}
	p := Mem{Base: Load(Param("p"), GP64())}
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	r2 := AllocLocal(9 * 32) // the group's r^2 rows: r^2_0..r^2_4, 5*r^2_1..5*r^2_4
	g := GP64()              // 32 times the group: the byte offset of its 4 lanes in a row
	XORQ(g, g)
	row := func(r int) Mem { return Mem{Base: st.Base, Index: g, Scale: 1, Disp: 8 * r * polyLanes} }
	mulR := func(k int) Mem { // r0..r4, 5*r1..5*r4
		if k < 5 {
			return row(poly26RowR + k)
		}
		return row(poly26RowS + k - 5)
	}
	mulR2 := func(k int) Mem { return r2.Offset(32 * k) }

	Label(name + "group")
	Comment("The group's message addresses (a nil base stands for st).")
	var addr [4]GPVirtual
	for i := range addr {
		addr[i] = GP64()
		MOVQ(Mem{Base: p.Base, Index: g, Scale: 1, Disp: polyBase + 8*i}, addr[i])
		TESTQ(addr[i], addr[i])
		CMOVQEQ(st.Base, addr[i])
		ADDQ(Mem{Base: p.Base, Index: g, Scale: 1, Disp: polyOff + 8*i}, addr[i])
	}
	// load returns the lanes' 16-byte blocks at off as their low and high qwords, lanes in order.
	load := func(off GPVirtual) (lo, hi VecVirtual) {
		a, b := YMM(), YMM()
		for j := range 2 {
			for k, v := range []VecVirtual{a, b} {
				m := Mem{Base: addr[2*j+k], Index: off, Scale: 1}
				if j == 0 { // a broadcast, not an xmm load: the allocator must see all of v written
					VBROADCASTI128(m, v)
				} else {
					VINSERTI128(U8(1), m, v, v)
				}
			}
		}
		lo, hi = YMM(), YMM()
		VPUNPCKLQDQ(b, a, lo)
		VPUNPCKHQDQ(b, a, hi)
		return lo, hi
	}
	var h [5]VecVirtual
	for i := range h {
		h[i] = YMM()
	}
	loadH := func() {
		for i := range h {
			VMOVDQU(row(poly26RowH+i), h[i])
		}
	}
	left, off := GP64(), GP64()
	MOVQ(n, left)
	XORQ(off, off)
	CMPQ(left, U8(4))
	JAE(LabelRef(name + "square"))
	loadH()
	JMP(LabelRef(name + "single"))

	Label(name + "square")

	Comment("r^2 from r (limbs below 2^26): limbs below 2^26 + 2^8, 5 times them below 2^29.")
	var rr [5]VecVirtual
	for i := range rr {
		rr[i] = YMM()
		VMOVDQU(mulR(i), rr[i])
	}
	sq := poly26MulReduce(rr, mulR)
	for i := range sq {
		VMOVDQU(sq[i], mulR2(i))
	}
	for i := 1; i < 5; i++ {
		t := YMM()
		VPSLLQ(U8(2), sq[i], t)
		VPADDQ(sq[i], t, t)
		VMOVDQU(t, mulR2(4+i))
	}
	loadH() // after r^2: its registers and the accumulator's would not fit together
	off2, step := GP64(), GP64()
	MOVQ(stride, off2)
	LEAQ(Mem{Base: stride, Index: stride, Scale: 1}, step)

	Label(name + "pair")
	Comment("h = (h + m1) * r^2 + m2 * r. Limbs of h + m1 below 2^27 + 2^11, of m2 below 2^26, of 5*r^2",
		"and 5*r below 2^29: each product below 2^56, the ten of a limb below 2^60.")
	lo, hi := load(off)
	poly26AddMsg(lo, hi, func(i int, m VecVirtual) { VPADDQ(m, h[i], h[i]) })
	var d [5]VecVirtual
	poly26MulAdd(h, mulR2, &d)
	lo, hi = load(off2)
	var m2 [5]VecVirtual
	poly26AddMsg(lo, hi, func(i int, m VecVirtual) { m2[i] = m })
	poly26MulAdd(m2, mulR, &d)
	poly26Carry(d, h)
	ADDQ(step, off)
	ADDQ(step, off2)
	SUBQ(U8(2), left)
	CMPQ(left, U8(2))
	JAE(LabelRef(name + "pair"))
	TESTQ(left, left)
	JZ(LabelRef(name + "store"))

	Label(name + "single")
	Comment("h = (h + m) * r, one block.")
	lo, hi = load(off)
	poly26AddMsg(lo, hi, func(i int, m VecVirtual) { VPADDQ(m, h[i], h[i]) })
	var e [5]VecVirtual
	poly26MulAdd(h, mulR, &e)
	poly26Carry(e, h)
	ADDQ(stride, off)
	DECQ(left)
	JNZ(LabelRef(name + "single"))

	Label(name + "store")
	for i := range h {
		VMOVDQU(h[i], row(poly26RowH+i))
	}
	ADDQ(U8(32), g)
	CMPQ(g, U8(32*groups))
	JB(LabelRef(name + "group"))
	wipeLocal(r2, 9*32, wipeVEX)
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
	var d [5]VecVirtual
	poly26MulAdd(h, mul, &d)
	poly26Carry(d, d)
	return d
}

// poly26MulAdd adds h * r to d, limb by limb without carries (a nil d[k] is set to its sum), for
// the multiplier r at mul(k) as in poly26MulReduce.
func poly26MulAdd(h [5]VecVirtual, mul func(k int) Mem, d *[5]VecVirtual) {
	Comment("d = h * r: the products of weight 2^130 and above wrap around times 5 (2^130 = 5). Each",
		"multiplier row is loaded once, into a register: as memory operands its five uses would be",
		"as many loads, and the loads, not the multiplies, would bound the kernel.")
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
}

// poly26Carry carries the limbs d once around into out (which may be d): limbs below 2^26
// afterwards, except limb 1, which takes limb 0's last carry.
func poly26Carry(d, out [5]VecVirtual) {
	mask := poly26Consts
	Comment("One carry pass, the carry out of limb 4 re-entering limb 0 times 5 (2^130 = 5).")
	c := YMM()
	for k := range 4 {
		VPSRLQ(U8(26), d[k], c)
		VPAND(mask, d[k], out[k])
		VPADDQ(c, d[k+1], d[k+1])
	}
	VPSRLQ(U8(26), d[4], c)
	VPAND(mask, d[4], out[4])
	VPADDQ(c, out[0], out[0])
	VPSLLQ(U8(2), c, c)
	VPADDQ(c, out[0], out[0])
	VPSRLQ(U8(26), out[0], c)
	VPAND(mask, out[0], out[0])
	VPADDQ(c, out[1], out[1])
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
	wipeLocal(mul, 9*32, wipeVEX)
	VZEROUPPER()
	RET()
}
