// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The AVX2 small-packet kernels (VAES and VPCLMULQDQ on ymm): two descriptors at a time, each with at
// most 64 bytes of text and 32 of AD, whose keys have one size. The per-packet kernel spends most of
// a small op on work that serves it alone and waits on its own dependency chain: an xmm of rounds for
// E_K(J0), the text one block at a time through the tail code, five products and a reduction in a
// row. Here a packet's text is two ymm of counter blocks, its GHASH two ymm products (the text, with
// the powers of H its block count selects, so that blocks past the text multiply zero) plus one for
// the AD; the two packets share one ymm for J0, one reduction and one tag store, and their chains
// interleave. J0 and the counter blocks come from the nonce and the length block from the lengths,
// so the Go side fills only pointers and lengths (gcmDesc.nonce).
//
// Memory. The text of Seal is read and that of Open written exactly within its n bytes: whole ymm or
// xmm where they fit, the rest in pieces of 8, 4, 2 and 1 bytes (loadPartial, storePartial). Open
// reads whole blocks, since the tag follows the ciphertext (at most 15 bytes past n), and Seal
// writes whole blocks, the ciphertext zero-padded, since its tag, stored after them, follows the text.

// pairs generates a pair kernel: func(d *gcmDesc, pairs int).
func pairs(name string, open bool) {
	Implement(name)
	Attributes(NOSPLIT)
	Load(Param("d"), desc)
	Load(Param("pairs"), count)
	VBROADCASTI128(bswapMask, Y10)
	field := descField
	tabs := []Register{tab, last} // the two packets' key tables
	nrOff := nr                   // 64·nr: the offset of the last round key

	Label("pair")
	TESTQ(count, count)
	JZ(LabelRef("done"))
	MOVQ(field(0, dTab), tabs[0])
	MOVQ(field(1, dTab), tabs[1])
	MOVQ(Mem{Base: tab, Disp: tNR}, nrOff)
	SHLQ(U8(6), nrOff)

	Comment("Both packets' counter blocks 1-4 in Y0-Y1 and Y2-Y3, each IV with the counter field 2-5",
		"(inc32 of J0, section 7.1 step 3); J0 = IV || 0^31 || 1 of both in Y4 (step 2).")
	for p, x := range []VecPhysical{X4, X5} {
		MOVQ(field(p, dNonce), src)
		VMOVQ(Mem{Base: src}, x)
		VPINSRD(U8(2), Mem{Base: src, Disp: 8}, x, x)
	}
	VINSERTI128(U8(1), X5, Y4, Y4)
	ks := [][]VecPhysical{{Y0, Y1}, {Y2, Y3}}
	for p, perm := range []uint8{0x44, 0xee} {
		VPERMQ(U8(perm), Y4, Y6) // packet p's IV in both lanes
		VPOR(smallCtr, Y6, ks[p][0])
		VPOR(smallCtr.Offset(32), Y6, ks[p][1])
	}
	VPOR(smallJ0, Y4, Y4)
	pairRounds(ks, tabs, nrOff)

	sums := [][]VecPhysical{{X8, X9}, {X11, X12}}
	for p := range 2 {
		pairPacket(open, field, p, tabs[p], ks[p], sums[p])
	}

	Comment("Reduce both packets at once; tags = E_K(J0) XOR GHASH.")
	VINSERTI128(U8(1), X11, Y8, Y8)
	VINSERTI128(U8(1), X12, Y9, Y9)
	VPCLMULQDQ(U8(0x00), polyK, Y8, Y14)
	VPSHUFD(U8(0x4e), Y8, Y8)
	VPXOR(Y14, Y8, Y8)
	VPCLMULQDQ(U8(0x00), polyK, Y8, Y14)
	VPSHUFD(U8(0x4e), Y8, Y8)
	VPXOR(Y14, Y8, Y8)
	VPXOR(Y8, Y9, Y15)
	VPSHUFB(Y10, Y15, Y15)
	VPXOR(Y4, Y15, Y15)
	if open {
		// The received tags XORed in: what is left must be zero (see gcmDesc.tag).
		MOVQ(field(0, dTag), tmp)
		VMOVDQU(Mem{Base: tmp}, X14)
		MOVQ(field(1, dTag), tmp)
		VINSERTI128(U8(1), Mem{Base: tmp}, Y14, Y14)
		VPXOR(Y14, Y15, Y15)
		VMOVDQU(X15, field(0, dY))
		VEXTRACTI128(U8(1), Y15, field(1, dY))
	} else {
		MOVQ(field(0, dTag), tmp)
		VMOVDQU(X15, Mem{Base: tmp})
		MOVQ(field(1, dTag), tmp)
		VEXTRACTI128(U8(1), Y15, Mem{Base: tmp})
	}

	ADDQ(U32(2*descLen), desc)
	DECQ(count)
	JMP(LabelRef("pair"))
	Label("done")
	VZEROUPPER()
	RET()
}

// pairRounds encrypts Y4 (lane p: packet p's J0) and each packet's counter blocks ks[p] with the
// round keys of tabs[p]. Y4's round keys are gathered into Y14, one lane from each table; both
// tables have nr rounds (64·nr in nrOff).
func pairRounds(ks [][]VecPhysical, tabs []Register, nrOff Register) {
	round := func(first bool, rk func(t Register) Mem) {
		VMOVDQU(rk(tabs[0]), Y14)
		VINSERTI128(U8(1), rk(tabs[1]), Y14, Y14)
		for p, regs := range ks {
			for _, r := range regs {
				if first {
					VPXOR(rk(tabs[p]), r, r)
				} else {
					VAESENC(rk(tabs[p]), r, r)
				}
			}
		}
		if first {
			VPXOR(Y14, Y4, Y4)
		} else {
			VAESENC(Y14, Y4, Y4)
		}
	}
	at := func(i int) func(Register) Mem {
		return func(t Register) Mem { return Mem{Base: t, Disp: tRK + 64*i} }
	}
	round(true, at(0))
	for i := 1; i <= 9; i++ {
		round(false, at(i))
	}
	done := label("aes_last")
	CMPQ(nrOff, U32(64*10))
	JE(LabelRef(done))
	round(false, at(10))
	round(false, at(11))
	CMPQ(nrOff, U32(64*12))
	JE(LabelRef(done))
	round(false, at(12))
	round(false, at(13))
	Label(done)
	lastKey := func(t Register) Mem { return Mem{Base: t, Index: nrOff, Scale: 1} }
	VMOVDQU(lastKey(tabs[0]), Y14)
	VINSERTI128(U8(1), lastKey(tabs[1]), Y14, Y14)
	for p, regs := range ks {
		for _, r := range regs {
			VAESENCLAST(lastKey(tabs[p]), r, r)
		}
	}
	VAESENCLAST(Y14, Y4, Y4)
}

// pairPacket runs packet p's text through its key stream ks (blocks 0-1 and 2-3) and leaves its
// GHASH, unreduced, in sum (low and high halves, xmm): the text's blocks times H^(nt+1)..H^2 (nt =
// ceil(n/16)), the AD's above them, the length block times H^1.
func pairPacket(open bool, field func(p, off int) Mem, p int, t Register, ks, sum []VecPhysical) {
	Commentf("Packet %d.", p)
	MOVQ(field(p, dSrc), src)
	MOVQ(field(p, dDst), dst)
	MOVQ(field(p, dN), n)
	// hptr = &H^(nt+1): the power for the text's first block.
	LEAQ(Mem{Base: n, Disp: 15}, tmp)
	ANDQ(I8(-16), tmp)
	LEAQ(Mem{Base: t, Disp: hOf(1)}, hptr)
	SUBQ(tmp, hptr)
	text := []VecPhysical{Y5, Y6}
	textX := []VecPhysical{X5, X6}
	masked := func() {
		LEAQ(lenMask.Offset(64), tmp)
		SUBQ(n, tmp)
		VPAND(Mem{Base: tmp}, Y5, Y5)
		VPAND(Mem{Base: tmp, Disp: 32}, Y6, Y6)
	}
	hashText := func() {
		VPSHUFB(Y10, Y5, Y7)
		for _, step := range productSteps(Y7, Mem{Base: hptr}, true) {
			step()
		}
		VPSHUFB(Y10, Y6, Y7)
		for _, step := range productSteps(Y7, Mem{Base: hptr, Disp: 32}, false) {
			step()
		}
	}
	if open {
		wholeBlocks(func(m Mem, x VecPhysical) { VMOVDQU(m, x) }, Mem{Base: src}, text, textX, true)
		masked()
		hashText()
		VPXOR(ks[0], Y5, Y5)
		VPXOR(ks[1], Y6, Y6)
		storeExact(text, textX)
	} else {
		loadExact(text, textX)
		MOVQ(field(p, dN), n)
		VPXOR(ks[0], Y5, Y5)
		VPXOR(ks[1], Y6, Y6)
		masked()
		wholeBlocks(func(m Mem, x VecPhysical) { VMOVDQU(x, m) }, Mem{Base: dst}, text, textX, false)
		hashText()
	}

	noAD := label("no_ad")
	MOVQ(field(p, dADLen), n)
	TESTQ(n, n)
	JZ(LabelRef(noAD))
	MOVQ(field(p, dAD), src)
	LEAQ(Mem{Base: n, Disp: 15}, tmp)
	ANDQ(I8(-16), tmp)
	SUBQ(tmp, hptr)
	loadExact32(Y7, X7)
	VPSHUFB(Y10, Y7, Y7)
	for _, step := range productSteps(Y7, Mem{Base: hptr}, false) {
		step()
	}
	MOVQ(field(p, dADLen), n)
	Label(noAD)

	Comment("Sum the lanes, add the length block times H^1, fold the middle product.")
	for _, r := range []VecPhysical{Y11, Y12, Y13} {
		VEXTRACTI128(U8(1), r, X14)
		VPXOR(X14, r.AsX(), r.AsX())
	}
	MOVQ(field(p, dN), tmp)
	SHLQ(U8(3), tmp)
	VMOVQ(tmp, X7)
	SHLQ(U8(3), n)
	VPINSRQ(U8(1), n, X7, X7)
	for _, step := range productSteps(X7, Mem{Base: t, Disp: hOf(1)}, false) {
		step()
	}
	VPXOR(X11, X13, X13)
	VPXOR(X12, X13, X13)
	VPSLLDQ(U8(8), X13, X14)
	VPSRLDQ(U8(8), X13, X13)
	VPXOR(X14, X11, sum[0])
	VPXOR(X13, X12, sum[1])
}

// wholeBlocks moves the blocks of an n-byte (R8, 0..64) text between the ymm y (y[0] bytes 0-31,
// y[1] bytes 32-63; x their xmm) and m as whole blocks: 16·ceil(n/16) bytes, which stay within n+16
// bytes from m. load: y[1] is cleared first, and y[0] holds a block even when n is 0.
func wholeBlocks(move func(Mem, VecPhysical), m Mem, y, x []VecPhysical, load bool) {
	small, mid, done := label("blocks_small"), label("blocks_mid"), label("blocks_done")
	if load {
		VPXOR(y[1], y[1], y[1])
	}
	CMPQ(n, U8(16))
	JB(LabelRef(small))
	move(m, y[0])
	CMPQ(n, U8(48))
	JB(LabelRef(mid))
	move(m.Offset(32), y[1])
	JMP(LabelRef(done))
	Label(mid)
	CMPQ(n, U8(32))
	JBE(LabelRef(done))
	move(m.Offset(32), x[1])
	JMP(LabelRef(done))
	Label(small)
	if !load {
		TESTQ(n, n)
		JZ(LabelRef(done))
	}
	move(m, x[0])
	Label(done)
}

// loadExact loads the n (R8, 0..64) bytes at src into y, zero-padded, reading none past them; src
// and n are consumed.
func loadExact(y, x []VecPhysical) {
	lt32, done := label("load_lt32"), label("load_done")
	VPXOR(y[1], y[1], y[1])
	CMPQ(n, U8(32))
	JB(LabelRef(lt32))
	VMOVDQU(Mem{Base: src}, y[0])
	ADDQ(U8(32), src)
	SUBQ(U8(32), n)
	loadExact32(y[1], x[1])
	JMP(LabelRef(done))
	Label(lt32)
	loadExact32(y[0], x[0])
	Label(done)
}

// loadExact32 loads the n (R8, 0..32) bytes at src into y (x its xmm), zero-padded, reading none
// past them; src and n are consumed.
func loadExact32(y, x VecPhysical) {
	lt32, lt16, done := label("load_lt32"), label("load_lt16"), label("load32_done")
	CMPQ(n, U8(32))
	JB(LabelRef(lt32))
	VMOVDQU(Mem{Base: src}, y)
	JMP(LabelRef(done))
	Label(lt32)
	CMPQ(n, U8(16))
	JB(LabelRef(lt16))
	VMOVDQU(Mem{Base: src}, x)
	SUBQ(U8(16), n)
	JZ(LabelRef(done))
	ADDQ(U8(16), src)
	loadPartial(X14)
	VINSERTI128(U8(1), X14, y, y)
	JMP(LabelRef(done))
	Label(lt16)
	VPXOR(y, y, y)
	TESTQ(n, n)
	JZ(LabelRef(done))
	loadPartial(x)
	Label(done)
}

// storeExact stores the first n (R8, 0..64) bytes of y at dst, writing none past them; dst and n
// are consumed.
func storeExact(y, x []VecPhysical) {
	hi, lt32, lt16, done := label("store_hi"), label("store_lt32"), label("store_lt16"), label("store_done")
	CMPQ(n, U8(32))
	JB(LabelRef(lt32))
	VMOVDQU(y[0], Mem{Base: dst})
	CMPQ(n, U8(64))
	JB(LabelRef(hi))
	VMOVDQU(y[1], Mem{Base: dst, Disp: 32})
	JMP(LabelRef(done))
	Label(hi)
	ADDQ(U8(32), dst)
	SUBQ(U8(32), n)
	VMOVDQA(y[1], y[0])
	Label(lt32)
	CMPQ(n, U8(16))
	JB(LabelRef(lt16))
	VMOVDQU(x[0], Mem{Base: dst})
	VEXTRACTI128(U8(1), y[0], x[0])
	ADDQ(U8(16), dst)
	SUBQ(U8(16), n)
	Label(lt16)
	TESTQ(n, n)
	JZ(LabelRef(done))
	storePartial(x[0])
	Label(done)
}
