// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// isa is what a kernel's instructions differ in between AVX2 and AVX-512.
type isa struct {
	name  string
	width int                           // bytes per register
	vec   func() VecVirtual             // a virtual register of that width
	ones  func(VecVirtual)              // sets every bit
	zero  func(VecVirtual)              // clears every bit
	and   func(a, b, dst Op)            // bitwise and
	load  func(m Mem, dst Op)           // unaligned load
	half  func(v VecVirtual) VecVirtual // adds v's upper half to its lower: the sum, in a register of half the width
}

var avx2 = isa{
	name:  "sumAVX2",
	width: 32,
	vec:   func() VecVirtual { return YMM() },
	ones:  func(v VecVirtual) { VPCMPEQD(v, v, v) },
	zero:  func(v VecVirtual) { VPXOR(v, v, v) },
	and:   func(a, b, dst Op) { VPAND(a, b, dst) },
	load:  func(m Mem, dst Op) { VMOVDQU(m, dst) },
	half: func(v VecVirtual) VecVirtual {
		h := XMM()
		VEXTRACTI128(U8(1), v, h)
		VPADDQ(v.AsX(), h, h)
		return h
	},
}

var avx512 = isa{
	name:  "sumAVX512",
	width: 64,
	vec:   func() VecVirtual { return ZMM() },
	ones:  func(v VecVirtual) { VPTERNLOGD(U8(0xff), v, v, v) },
	zero:  func(v VecVirtual) { VPXORQ(v, v, v) },
	and:   func(a, b, dst Op) { VPANDD(a, b, dst) },
	load:  func(m Mem, dst Op) { VMOVDQU64(m, dst) },
	half: func(v VecVirtual) VecVirtual {
		h := YMM()
		VEXTRACTI64X4(U8(1), v, h)
		VPADDQ(v.AsY(), h, h)
		return avx2.half(h)
	},
}

// sumKernel emits k.name. The one's-complement sum of 16-bit words equals their plain sum taken
// modulo 2^16-1 (RFC 1071 section 2(D), deferred carries), so the kernel adds words as integers and
// leaves folding to the caller. Each load (32 bytes, or 64 with AVX-512) is split into the low and
// the high halves of its dwords, which are added to 32-bit lanes: no carry leaves a lane for 65,536
// loads of it, so a call covers at most 1 MiB (iterations of four loads, each into its own
// accumulator pair, then single loads into the first pair). Loads are little-endian, so each word is
// byte-swapped; the caller swaps the sum back (section 2(B)).
func sumKernel(k isa) {
	w := k.width
	Implement(k.name)
	Attributes(NOSPLIT)
	Doc(fmt.Sprintf("%s returns the sum, as integers, of the little-endian 16-bit words of b. len(b) is a", k.name),
		fmt.Sprintf("multiple of %d and at most 1 MiB.", w))
	p := Load(Param("b").Base(), GP64())
	n := Load(Param("b").Len(), GP64())

	low := k.vec() // 0x0000ffff in each dword
	k.ones(low)
	VPSRLD(U8(16), low, low)
	var acc [8]VecVirtual
	for i := range acc {
		acc[i] = k.vec()
		k.zero(acc[i])
	}

	// add adds the w bytes at m to the accumulator pair lo (low halves) and hi (high halves).
	add := func(m Mem, lo, hi VecVirtual) {
		v, t := k.vec(), k.vec()
		k.load(m, v)
		k.and(low, v, t)
		VPADDD(t, lo, lo)
		VPSRLD(U8(16), v, v)
		VPADDD(v, hi, hi)
	}

	Comment(fmt.Sprintf("Per %d bytes: four loads, each word added to the lane of its dword's low or high half.", 4*w))
	Label("loop")
	CMPQ(n, U32(4*w))
	JB(LabelRef("tail"))
	for i := range 4 {
		add(Mem{Base: p, Disp: w * i}, acc[2*i], acc[2*i+1])
	}
	ADDQ(U32(4*w), p)
	SUBQ(U32(4*w), n)
	JMP(LabelRef("loop"))

	Comment(fmt.Sprintf("The last %d-byte loads, into the first accumulator pair.", w))
	Label("tail")
	CMPQ(n, U32(w))
	JB(LabelRef("reduce"))
	add(Mem{Base: p}, acc[0], acc[1])
	ADDQ(U32(w), p)
	SUBQ(U32(w), n)
	JMP(LabelRef("tail"))

	Comment("Widen the 32-bit lanes to 64 bits, add them up and return the sum.")
	Label("reduce")
	lowq := k.vec() // 0x00000000ffffffff in each qword
	k.ones(lowq)
	VPSRLQ(U8(32), lowq, lowq)
	total := k.vec()
	k.zero(total)
	for _, a := range acc {
		t := k.vec()
		k.and(lowq, a, t)
		VPADDQ(t, total, total)
		VPSRLQ(U8(32), a, a)
		VPADDQ(a, total, total)
	}
	h := k.half(total)
	s, t := GP64(), GP64()
	VMOVQ(h, s)
	VPEXTRQ(U8(1), h, t)
	ADDQ(t, s)
	VZEROUPPER()
	Store(s, ReturnIndex(0))
	RET()
}
