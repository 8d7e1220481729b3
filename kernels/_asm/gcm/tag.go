// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// startDescriptor begins the per-descriptor loop of a kernel (finishDescriptors ends it): it returns
// once count is zero, else loads the descriptor's key table into tab, its round count into nr,
// &rk[nr] into last and the GHASH state Y into X15.
func startDescriptor() {
	Label("desc")
	TESTQ(count, count)
	JZ(LabelRef("done"))
	MOVQ(Mem{Base: desc, Disp: dTab}, tab)
	MOVQ(Mem{Base: tab, Disp: tNR}, nr)
	MOVQ(nr, last)
	SHLQ(U8(6), last)
	ADDQ(tab, last)
	VMOVDQU(Mem{Base: desc, Disp: dY}, X15)
}

// finishDescriptors ends the per-descriptor loop of a kernel: when the descriptor asks for a tag
// (dTag != 0) it computes Tag = E_K(J0) XOR GHASH (SP 800-38D section 7.1 step 6) from the GHASH
// accumulator in X15 and stores it (storeTag), then saves the accumulator, moves to the next
// descriptor and, after the last one, returns. bswap holds the byte-reversal mask of the kernel.
func finishDescriptors(bswap VecPhysical, open bool) {
	Label("finish")
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef("next"))
	Comment("Tag = E_K(J0) XOR GHASH (SP 800-38D section 7.1 step 6).")
	VMOVDQU(Mem{Base: desc, Disp: dJ0}, X0)
	VPSHUFB(bswap, X0, X0)
	aesRounds([]VecPhysical{X0})
	Label("tag_ready") // E_K(J0) in X0
	VPSHUFB(bswap, X15, X1)
	VPXOR(X1, X0, X0)
	storeTag(open)

	Label("next")
	VMOVDQU(X15, Mem{Base: desc, Disp: dY})
	Label("advance")
	ADDQ(U8(descLen), desc)
	DECQ(count)
	JMP(LabelRef("desc"))

	Label("done")
	if keyRegs.last != nil {
		Comment("No round key or power of H outlives the call in a register: VZEROUPPER would",
			"leave Z16-Z31 and the low halves of Z0-Z15.")
		clearRoundKeys()
		VPXORQ(hStride, hStride, hStride)
		VPXORQ(tagJ0, tagJ0, tagJ0)
	}
	VZEROUPPER()
	RET()
}

// storeTag writes the tag in X0 for Seal, or for Open its difference from the received tag to the
// descriptor's y (see gcmDesc.tag), and moves on to the next descriptor.
func storeTag(open bool) {
	MOVQ(Mem{Base: desc, Disp: dTag}, tmp)
	if open {
		VPXOR(Mem{Base: tmp}, X0, X0)
		VMOVDQU(X0, Mem{Base: desc, Disp: dY})
	} else {
		VMOVDQU(X0, Mem{Base: tmp})
	}
	JMP(LabelRef("advance"))
}
