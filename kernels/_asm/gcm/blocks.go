// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// aesBlocks generates aesEncryptBlocks (AES-NI) and aesEncryptBlocksVAES: AES-ECB over n
// independent 16-byte blocks (FIPS 197), eight xmm at a time so that their rounds overlap (VAES: eight
// ymm, sixteen blocks), then the rest one at a time. It is QUIC's header-protection mask function for
// the AES suites (RFC 9001 section 5.4.3) over a batch.
func aesBlocks(name string, vaes bool) {
	ecbStart(name)
	regs := blocks
	if vaes {
		regs = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}
	}
	ecbPass("ecb8", regs, "ecb1")
	ecbOneByOne("ecb1")
	VZEROUPPER()
	RET()
}

// aesBlocksAVX512 generates aesEncryptBlocksAVX512, aesBlocks' function on zmm: eight zmm (32
// blocks) a pass, their rounds overlapping, then one zmm (four blocks) a pass, then one block at a
// time. Round keys 0-9 and the last stay in registers, cleared before the return.
func aesBlocksAVX512(name string) {
	ecbStart(name)
	drop := keepRoundKeys(rkZ, rkLastZ)
	regs := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7}
	ecbPass("ecb32", regs, "ecb4")
	ecbPass("ecb4", regs[:1], "ecb1")
	ecbOneByOne("ecb1")
	Comment("No round key outlives the call in a register: VZEROUPPER would leave Z16-Z31 and the",
		"low halves of Z0-Z15.")
	clearRoundKeys()
	drop()
	VZEROUPPER()
	RET()
}

// ecbStart begins an AES-ECB function: its parameters in tab, dst, src and n, the round count in
// nr and &rk[nr] in last.
func ecbStart(name string) {
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" encrypts the n 16-byte blocks at src into dst (src and dst may be equal) with",
		"the round keys of tab.")
	Load(Param("tab"), tab)
	Load(Param("dst"), dst)
	Load(Param("src"), src)
	Load(Param("n"), n)
	MOVQ(Mem{Base: tab, Disp: tNR}, nr)
	MOVQ(nr, last)
	SHLQ(U8(6), last)
	ADDQ(tab, last)
}

// ecbPass emits the loop at label that encrypts whole passes of the registers in regs (one width)
// while n blocks are left for one, then goes on at next.
func ecbPass(label string, regs []VecPhysical, next string) {
	size := int(regs[0].Size())
	per := len(regs) * size / 16 // blocks per pass
	move := func(from, to Op) {
		if size == 64 {
			VMOVDQU64(from, to)
		} else {
			VMOVDQU(from, to)
		}
	}
	Label(label)
	CMPQ(n, U8(per))
	JB(LabelRef(next))
	for i, r := range regs {
		move(Mem{Base: src, Disp: size * i}, r)
	}
	aesRounds(regs)
	for i, r := range regs {
		move(r, Mem{Base: dst, Disp: size * i})
	}
	ADDQ(U32(16*per), src)
	ADDQ(U32(16*per), dst)
	SUBQ(U8(per), n)
	JMP(LabelRef(label))
}

// ecbOneByOne emits the loop at label that encrypts the n blocks left one at a time (each one's
// rounds overlap the next one's), then falls through.
func ecbOneByOne(label string) {
	done := label + "_done"
	Label(label)
	TESTQ(n, n)
	JZ(LabelRef(done))
	VMOVDQU(Mem{Base: src}, X0)
	aesRounds([]VecPhysical{X0})
	VMOVDQU(X0, Mem{Base: dst})
	ADDQ(U8(16), src)
	ADDQ(U8(16), dst)
	DECQ(n)
	JMP(LabelRef(label))
	Label(done)
}
