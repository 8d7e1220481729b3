// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// aesBlocks generates aesEncryptBlocks: AES-ECB over n independent 16-byte blocks (FIPS 197), eight
// at a time on AES-NI so that the rounds of eight blocks overlap, then the rest one at a time. It is
// QUIC's header-protection mask function for the AES suites (RFC 9001 section 5.4.3) over a batch.
func aesBlocks() {
	Implement("aesEncryptBlocks")
	Attributes(NOSPLIT)
	Doc("aesEncryptBlocks encrypts the n 16-byte blocks at src into dst (src and dst may be equal) with",
		"the round keys of tab.")
	Load(Param("tab"), tab)
	Load(Param("dst"), dst)
	Load(Param("src"), src)
	Load(Param("n"), n)
	MOVQ(Mem{Base: tab, Disp: tNR}, nr)
	MOVQ(nr, last)
	SHLQ(U8(6), last)
	ADDQ(tab, last)

	Label("ecb8")
	CMPQ(n, U8(8))
	JB(LabelRef("ecb1"))
	for i, b := range blocks {
		VMOVDQU(Mem{Base: src, Disp: 16 * i}, b)
	}
	aesRounds(blocks)
	for i, b := range blocks {
		VMOVDQU(b, Mem{Base: dst, Disp: 16 * i})
	}
	ADDQ(U8(128), src)
	ADDQ(U8(128), dst)
	SUBQ(U8(8), n)
	JMP(LabelRef("ecb8"))

	Label("ecb1")
	TESTQ(n, n)
	JZ(LabelRef("ecbdone"))
	VMOVDQU(Mem{Base: src}, X0)
	aesRounds([]VecPhysical{X0})
	VMOVDQU(X0, Mem{Base: dst})
	ADDQ(U8(16), src)
	ADDQ(U8(16), dst)
	DECQ(n)
	JMP(LabelRef("ecb1"))

	Label("ecbdone")
	VZEROUPPER()
	RET()
}
