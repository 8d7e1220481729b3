// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Field arithmetic. GHASH blocks are loaded byte-reversed, which puts the coefficient of x^i at
// register bit 127-i: the reflected representation R(a) = y^127·a(1/y). A carry-less product of
// R(a) and R(b·x^-1) (the key table holds powers of H times x^-1) is R(a·b)·y^128 modulo the reflected
// polynomial P'(y) = y^128 + y^127 + y^126 + y^121 + 1, so the 256-bit product is reduced by
// multiplying with y^-128: twice, the low 64 bits L are cancelled by adding L·P' (P' is 1 modulo y^64)
// and the value shifted down 64 bits, that is T' = T>>64 XOR L·(y^64 + y^63 + y^62 + y^57). The
// 64-bit constant 0xC200000000000000 is y^63 + y^62 + y^57; the y^64 term is a quadword swap.
// Products are Karatsuba's: a·b = a1b1·y^128 + ((a0+a1)(b0+b1) + a0b0 + a1b1)·y^64 + a0b0 with
// three carry-less multiplications; the key table holds b0+b1 for every power, and the middle
// correction is applied once to the sum. Summing products before reducing (aggregated reduction)
// lets 16 (AVX512) or 8 (AVX2) blocks share one reduction: GHASH's Y_n = sum X_i·H^(n-i+1) (SP
// 800-38D section 6.4).

// pipelinedSeal emits Seal's software-pipelined chunk loop: the first chunk on its own, then each
// next one with the GHASH of the one before spread between its AES rounds (the instructions steps
// returns), and the last one's GHASH after the loop (drain). A chunk is chunkBytes, an immediate;
// fewer bytes left go to text_tail.
func pipelinedSeal(chunkBytes Op, chunk func(ghash []func()), steps func() []func(), drain func()) {
	CMPQ(n, chunkBytes)
	JB(LabelRef("text_tail"))
	chunk(nil)
	Label("chunk")
	CMPQ(n, chunkBytes)
	JB(LabelRef("drain"))
	chunk(steps())
	JMP(LabelRef("chunk"))
	Label("drain")
	drain()
}

// reduceSteps returns the instructions that reduce lo + mid·y^64 + hi·y^128 into hi, each 128-bit
// lane on its own (any width), mid being Karatsuba's middle product before its correction: two
// folds (see above), the first cancelling lo's low quadword into the quadwords above it, the second
// the middle's. The middle product is never split into halves. t is a temporary and k holds the
// reduction constant in either quadword of every lane. With avx512 the three-way XORs are
// VPTERNLOGQ (seven instructions), else pairs of VPXOR (ten).
func reduceSteps(lo, mid, hi, t VecPhysical, k Op, avx512 bool) []func() {
	// Karatsuba's correction: middle += low + high.
	return append(xorTwoSteps(lo, hi, mid, avx512), foldSteps(lo, mid, hi, t, k, avx512)...)
}

// foldSteps returns reduceSteps' two folds, for a middle product already corrected (the
// schoolbook's, or Karatsuba's after middle += low + high).
func foldSteps(lo, mid, hi, t VecPhysical, k Op, avx512 bool) []func() {
	steps := []func(){
		func() { VPCLMULQDQ(U8(0x00), k, lo, t) },
		func() { VPSHUFD(U8(0x4e), lo, lo) },
	}
	steps = append(steps, xorTwoSteps(t, lo, mid, avx512)...)
	steps = append(steps,
		func() { VPCLMULQDQ(U8(0x00), k, mid, t) },
		func() { VPSHUFD(U8(0x4e), mid, mid) })
	return append(steps, xorTwoSteps(t, mid, hi, avx512)...)
}

// xorTwoSteps returns the instructions that add a and b to dst: one VPTERNLOGQ with avx512, else
// two VPXOR.
func xorTwoSteps(a, b, dst VecPhysical, avx512 bool) []func() {
	if avx512 {
		return []func(){func() { VPTERNLOGQ(U8(0x96), a, b, dst) }}
	}
	return []func(){func() { VPXOR(a, dst, dst) }, func() { VPXOR(b, dst, dst) }}
}

// karatsubaProducts multiplies the blocks in g by the powers of H in h, whose Karatsuba operands
// (the XOR of each power's halves) are in hk: the low products into lo, the high ones into hi and
// the middle ones, not yet corrected by lo and hi (reduceSteps does that), into mid. AVX-512 (any
// width, any of the 32 registers).
func karatsubaProducts(g VecPhysical, h, hk Op, lo, hi, mid VecPhysical) {
	for _, step := range karatsubaSteps(g, h, hk, lo, hi, mid) {
		step()
	}
}

// karatsubaSteps returns karatsubaProducts' instructions one by one, for the stitched loops. g is
// read before hi is written, so g may be hi.
func karatsubaSteps(g VecPhysical, h, hk Op, lo, hi, mid VecPhysical) []func() {
	return []func(){
		func() { VPSHUFD(U8(0x4e), g, mid) },
		func() { VPXORQ(g, mid, mid) },
		func() { VPCLMULQDQ(U8(0x00), h, g, lo) },
		func() { VPCLMULQDQ(U8(0x00), hk, mid, mid) },
		func() { VPCLMULQDQ(U8(0x11), h, g, hi) },
	}
}
