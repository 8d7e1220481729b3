// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// AVX2 registers (VEX only, X0-X15 / Y0-Y15): X0-X7 blocks (VAES: Y0-Y3 key stream and Y4-Y7 GHASH
// input, two blocks each), X8 the next counter block (VAES: Y8, lane i counter+i), X9 the GHASH state
// still to be added to a tail's next block, X10 the byte-reversal mask, X11-X13 product accumulators
// (low, high, middle), X14 a temporary, X15 the GHASH state Y.
var (
	blocks = []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7}
	ksY    = []VecPhysical{Y0, Y1, Y2, Y3}
	ginY   = []VecPhysical{Y4, Y5, Y6, Y7}
)

// avx2 generates an AVX2 kernel: one descriptor at a time, 8 blocks per chunk (eight xmm with
// AES-NI, or with vaes four ymm of two blocks: VAES and VPCLMULQDQ on ymm), tails one block at a
// time, the last partial block read and written in pieces of 8, 4, 2 and 1 bytes.
func avx2(name string, open, vaes bool) {
	Implement(name)
	Attributes(NOSPLIT)
	Load(Param("d"), desc)
	Load(Param("count"), count)
	VBROADCASTI128(bswapMask, Y10)

	startDescriptor()
	h8 := Mem{Base: tab, Disp: hOf(8)} // H^8..H^1

	Comment("Additional data: GHASH only.")
	MOVQ(Mem{Base: desc, Disp: dAD}, src)
	MOVQ(Mem{Base: desc, Disp: dADLen}, n)
	Label("ad_chunk")
	CMPQ(n, U8(128))
	JB(LabelRef("ad_tail"))
	in := blocks
	if vaes {
		in = ginY
	}
	for i, b := range in {
		VMOVDQU(Mem{Base: src, Disp: int(b.Size()) * i}, b)
		if vaes {
			VPSHUFB(Y10, b, b)
		} else {
			VPSHUFB(X10, b, b)
		}
	}
	ghash2(in, h8)
	ADDQ(U8(128), src)
	SUBQ(U8(128), n)
	JMP(LabelRef("ad_chunk"))
	Label("ad_tail")
	tailAD2(open, vaes)

	Comment("Text: counter mode and GHASH of the ciphertext, 8 blocks per chunk.")
	textStart(vaes)
	if vaes {
		chunksVAES(open, h8)
	} else {
		chunksAESNI(open, h8)
	}
	if vaes && !open {
		// With a text tail, the last chunk's GHASH runs between the tail's AES rounds, which wait
		// on their own latency (see avx512); its Y then starts the tail's.
		Label("drain_tail")
		VMOVDQU(X8, Mem{Base: desc, Disp: dCtr})
		tailText2(false, true, false, ghash2Steps(ginY, h8))
		JMP(LabelRef("finish"))
	}

	Label("text_tail")
	VMOVDQU(X8, Mem{Base: desc, Disp: dCtr})
	TESTQ(n, n)
	JZ(LabelRef("no_tail"))
	tailText2(open, vaes, false, nil)
	JMP(LabelRef("finish"))

	Label("no_tail")
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef("next"))
	Comment("No text tail: the length block alone, times H.")
	VMOVDQU(Mem{Base: desc, Disp: dLens}, X0)
	VPXOR(X15, X0, X0)
	VPXOR(X9, X9, X9)
	VPXOR(X11, X11, X11)
	VPXOR(X12, X12, X12)
	VPXOR(X13, X13, X13)
	accumulate2(X0, Mem{Base: tab, Disp: hOf(1)})
	reduce2(false)

	finishDescriptors(X10, open)
}

// textStart loads the text's pointers and length and the counter block (VAES: Y8, lane i counter+i).
func textStart(vaes bool) {
	MOVQ(Mem{Base: desc, Disp: dSrc}, src)
	MOVQ(Mem{Base: desc, Disp: dDst}, dst)
	MOVQ(Mem{Base: desc, Disp: dN}, n)
	if vaes {
		VBROADCASTI128(Mem{Base: desc, Disp: dCtr}, Y8)
		VPADDD(ctrInit, Y8, Y8)
	} else {
		VMOVDQU(Mem{Base: desc, Disp: dCtr}, X8)
	}
}

// chunksAESNI emits the AES-NI chunk loop: eight xmm blocks per chunk. Open's GHASH of the chunk's
// ciphertext runs between the chunk's AES rounds; Seal is software-pipelined like the wider kernels.
// With eight xmm of key stream there is no room to keep the ciphertext in registers: the GHASH reads
// it from memory, one block at a time through X9 (Seal: the previous chunk's, back from dst). Nor
// for the round keys: each round's goes through X10 once (stageRoundKeys) rather than being loaded
// again with each of the eight blocks' instructions, and the loop reads the byte-reversal mask from
// memory instead, restoring X10 on the way out.
func chunksAESNI(open bool, h8 Mem) {
	defer stageRoundKeys(X10)()
	counters := func() {
		for _, b := range blocks {
			VPSHUFB(bswapMask, X8, b)
			VPADDD(ctrOne, X8, X8)
		}
	}
	chunk := func(ghash []func()) {
		counters()
		aesRounds(blocks, ghash...)
		for i, b := range blocks {
			VPXOR(Mem{Base: src, Disp: 16 * i}, b, b)
			VMOVDQU(b, Mem{Base: dst, Disp: 16 * i})
		}
		advance2()
	}
	// hashed returns the steps of the GHASH of the chunk of ciphertext at text.
	hashed := func(text Mem) []func() {
		steps := []func(){}
		for i := range blocks {
			steps = append(steps,
				func() { VMOVDQU(text.Offset(16*i), X9) },
				func() { VPSHUFB(bswapMask, X9, X9) })
			if i == 0 {
				steps = append(steps, func() { VPXOR(X15, X9, X9) })
			}
			steps = append(steps, productSteps(X9, h8.Offset(16*i), i == 0)...)
		}
		return append(steps, reduce2Steps(false)...)
	}
	if open {
		Label("chunk")
		CMPQ(n, U8(128))
		JB(LabelRef("chunks_done"))
		chunk(hashed(Mem{Base: src}))
		JMP(LabelRef("chunk"))
	} else {
		previous := Mem{Base: dst, Disp: -128}
		pipelinedSeal(U8(128), chunk, func() []func() { return hashed(previous) }, func() {
			for _, step := range hashed(previous) {
				step()
			}
		})
	}
	Label("chunks_done")
	VMOVDQU(bswapMask, X10)
}

// chunksVAES emits the VAES chunk loop: four ymm of two blocks per chunk; Seal is software-pipelined
// as on AVX512 (the GHASH of the previous chunk, waiting in Y4-Y7, runs between the AES rounds). The
// round keys go through Y10 as in chunksAESNI. The loop keeps Y8's counters in block order
// (countersInOrder, Y14 its temporary), the tail finds them byte-reversed again.
func chunksVAES(open bool, h8 Mem) {
	defer stageRoundKeys(Y10)()
	if !open {
		CMPQ(n, U8(128))
		JB(LabelRef("text_tail")) // no chunk: the counters stay byte-reversed
	}
	countersToBlockOrder(Y8, bswapMask)
	counters := func() { countersInOrder(ksY, Y8, Y14, bswapMask, ctrStepYBE, ctrStepY, true) }
	exit := func() { VPSHUFB(bswapMask, Y8, Y8) }
	if open {
		// The chunk's GHASH runs between its own AES rounds (see avx512).
		Label("chunk")
		CMPQ(n, U8(128))
		JB(LabelRef("chunks_done"))
		counters()
		for j := range ksY {
			VMOVDQU(Mem{Base: src, Disp: 32 * j}, ginY[j])
			VPSHUFB(bswapMask, ginY[j], ginY[j])
		}
		aesRounds(ksY, ghash2Steps(ginY, h8)...)
		for j := range ksY {
			VPXOR(Mem{Base: src, Disp: 32 * j}, ksY[j], ksY[j])
			VMOVDQU(ksY[j], Mem{Base: dst, Disp: 32 * j})
		}
		advance2()
		JMP(LabelRef("chunk"))
		Label("chunks_done")
		exit()
		VBROADCASTI128(bswapMask, Y10)
		return
	}
	chunk := func(ghash []func()) {
		counters()
		aesRounds(ksY, ghash...)
		for j := range ksY {
			VPXOR(Mem{Base: src, Disp: 32 * j}, ksY[j], ksY[j])
			VMOVDQU(ksY[j], Mem{Base: dst, Disp: 32 * j})
			VPSHUFB(bswapMask, ksY[j], ginY[j])
		}
		advance2()
	}
	pipelinedSeal(U8(128), chunk, func() []func() { return ghash2Steps(ginY, h8) }, func() {
		exit()
		VBROADCASTI128(bswapMask, Y10)
		TESTQ(n, n)
		JNZ(LabelRef("drain_tail"))
		ghash2(ginY, h8)
	})
	// The tail continues from the counter in lane 0 of Y8.
	JMP(LabelRef("text_tail"))
}

// advance2 moves src, dst and n past a 128-byte chunk.
func advance2() {
	ADDQ(U8(128), src)
	ADDQ(U8(128), dst)
	SUBQ(U8(128), n)
}

// ghash2 multiplies the byte-reversed blocks in regs (xmm: one block, ymm: two) by the powers of H at
// h, Y XORed into the first, and reduces into X15.
func ghash2(regs []VecPhysical, h Mem) {
	for _, step := range ghash2Steps(regs, h) {
		step()
	}
}

// ghash2Steps returns ghash2's instructions one by one (see lanesSteps).
func ghash2Steps(regs []VecPhysical, h Mem) []func() {
	ymm := regs[0].Size() == 32
	steps := []func(){func() { VPXOR(Y15, regs[0], regs[0]) }}
	if !ymm {
		steps[0] = func() { VPXOR(X15, regs[0], regs[0]) }
	}
	for i, d := range regs {
		steps = append(steps, productSteps(d, h.Offset(int(d.Size())*i), i == 0)...)
	}
	return append(steps, reduce2Steps(ymm)...)
}

// productSteps multiplies the block(s) in d by the power(s) of H at h (Karatsuba) and adds the three
// partial products to the accumulators X11-X13 (ymm: Y11-Y13), or sets them when first.
func productSteps(d VecPhysical, h Mem, first bool) []func() {
	lo, hi, mid, t := VecPhysical(X11), VecPhysical(X12), VecPhysical(X13), VecPhysical(X14)
	if d.Size() == 32 {
		lo, hi, mid, t = Y11, Y12, Y13, Y14
	}
	k := karatsuba(h)
	if first {
		return []func(){
			func() { VPCLMULQDQ(U8(0x00), h, d, lo) },
			func() { VPCLMULQDQ(U8(0x11), h, d, hi) },
			func() { VPSHUFD(U8(0x4e), d, mid) },
			func() { VPXOR(d, mid, mid) },
			func() { VPCLMULQDQ(U8(0x00), k, mid, mid) },
		}
	}
	return []func(){
		func() { VPCLMULQDQ(U8(0x00), h, d, t) },
		func() { VPXOR(t, lo, lo) },
		func() { VPCLMULQDQ(U8(0x11), h, d, t) },
		func() { VPXOR(t, hi, hi) },
		func() { VPSHUFD(U8(0x4e), d, t) },
		func() { VPXOR(d, t, t) },
		func() { VPCLMULQDQ(U8(0x00), k, t, t) },
		func() { VPXOR(t, mid, mid) },
	}
}

// accumulate2 adds X9 (then cleared) to the byte-reversed block d and its product with the power of
// H at h to the accumulators X11-X13.
func accumulate2(d VecPhysical, h Mem) {
	VPXOR(X9, d, d)
	VPXOR(X9, X9, X9)
	for _, step := range productSteps(d, h, false) {
		step()
	}
}

// reduce2 reduces the accumulators X11-X13 (ymm: lane by lane, then sums the two lanes) into X15.
func reduce2(ymm bool) {
	for _, step := range reduce2Steps(ymm) {
		step()
	}
}

// reduce2Steps returns reduce2's instructions one by one (see lanesSteps).
func reduce2Steps(ymm bool) []func() {
	if !ymm {
		steps := reduceSteps(X11, X13, X12, X14, polyK, false)
		return append(steps, func() { VMOVDQA(X12, X15) })
	}
	return append(reduceSteps(Y11, Y13, Y12, Y14, polyK, false),
		func() { VEXTRACTI128(U8(1), Y12, X14) },
		func() { VPXOR(X14, X12, X15) })
}

// tailAD2 emits the GHASH of the last 0..127 bytes of AD at src (n bytes): whole blocks one at a
// time, then a partial block zero-padded (section 6.4's 0^v padding), the products summed and
// reduced once.
//
// A small op's AD and text are both tails: when the descriptor ends the op (it has a tag) and its
// text is 1..127 bytes, the AD blocks take the powers of H above those of the text and the length
// block (at most 8 + 8 + 1 = 17, the table's), their products stay in the accumulators, and the
// text tail follows at once (tailText2 with merged), so the op takes one reduction instead of two
// and the text's products no longer wait for the AD's.
func tailAD2(open, vaes bool) {
	out, separate := label("tail_out"), label("ad_separate")
	TESTQ(n, n)
	JZ(LabelRef(out))
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef(separate))
	MOVQ(Mem{Base: desc, Disp: dN}, tmp)
	TESTQ(tmp, tmp)
	JZ(LabelRef(separate))
	CMPQ(tmp, U8(128))
	JAE(LabelRef(separate))
	Comment("hptr: the powers of H for ceil(n/16) AD blocks above ceil(text/16) text blocks and the length block.")
	ADDQ(U8(15), tmp)
	SHRQ(U8(4), tmp)
	LEAQ(Mem{Base: n, Disp: 15}, tmp2)
	SHRQ(U8(4), tmp2)
	ADDQ(tmp2, tmp)
	SHLQ(U8(4), tmp)
	LEAQ(Mem{Base: tab, Disp: hOf(1)}, hptr)
	SUBQ(tmp, hptr)
	VMOVDQU(X15, X9)
	VPXOR(X11, X11, X11)
	VPXOR(X12, X12, X12)
	VPXOR(X13, X13, X13)
	adBlocks()
	textStart(vaes)
	VMOVDQU(X8, Mem{Base: desc, Disp: dCtr})
	tailText2(open, vaes, true, nil)
	JMP(LabelRef("finish"))

	Label(separate)
	tailStart2(false, false)
	adBlocks()
	reduce2(false)
	Label(out)
}

// adBlocks accumulates the n (1..127) bytes of AD at src, zero-padded, with the powers of H from
// hptr on.
func adBlocks() {
	loop, partial, done := label("tail_block"), label("tail_partial"), label("ad_done")
	Label(loop)
	CMPQ(n, U8(16))
	JB(LabelRef(partial))
	VMOVDQU(Mem{Base: src}, X1)
	VPSHUFB(X10, X1, X1)
	accumulate2(X1, Mem{Base: hptr})
	ADDQ(U8(16), src)
	ADDQ(U8(16), hptr)
	SUBQ(U8(16), n)
	JMP(LabelRef(loop))

	Label(partial)
	TESTQ(n, n)
	JZ(LabelRef(done))
	loadPartial(X1)
	VPSHUFB(X10, X1, X1)
	accumulate2(X1, Mem{Base: hptr})
	Label(done)
}

// tailStart2 points hptr at the powers of H for the nb = ceil(n/16) blocks of a tail (one further
// when withLens and the descriptor has a tag: the length block then takes H^1), puts Y in X9 to be
// added to the first block and clears the accumulators; merged, the accumulators hold the AD's
// products already (tailAD2), which took Y in, and are kept.
func tailStart2(withLens, merged bool) {
	tailPowers(withLens)
	if merged {
		VPXOR(X9, X9, X9)
		return
	}
	for _, step := range tailStart2Steps() {
		step()
	}
}

// tailStart2Steps returns the instructions of tailStart2 that set X9 and clear the accumulators, one
// by one, for a tail whose AES rounds they are stitched into.
func tailStart2Steps() []func() {
	return []func(){
		func() { VMOVDQU(X15, X9) },
		func() { VPXOR(X11, X11, X11) },
		func() { VPXOR(X12, X12, X12) },
		func() { VPXOR(X13, X13, X13) },
	}
}

// loadPartial loads the last n (1..15) bytes at src into r, zero-padded: the pieces of 8, 4, 2 and 1
// bytes that n is made of, each read within the n bytes (no read past them, no bounce buffer whose
// byte stores a vector load would have to wait for). The pieces after the first 8 bytes are
// gathered in tmp from the last one back, so that every shift is a constant.
func loadPartial(r VecPhysical) {
	XORQ(tmp, tmp)
	// A piece of size bytes starts at n with its bit and the smaller ones cleared.
	for _, piece := range []struct {
		size, at int
		load     func(Op, Op)
	}{{1, 14, MOVBQZX}, {2, 12, MOVWQZX}, {4, 8, MOVLQZX}} {
		skip := label("no_piece")
		TESTQ(U32(piece.size), n)
		JZ(LabelRef(skip))
		MOVQ(n, tmp2)
		ANDQ(U32(piece.at), tmp2)
		if piece.size > 1 {
			SHLQ(U8(8*piece.size), tmp)
		}
		piece.load(Mem{Base: src, Index: tmp2, Scale: 1}, tmp2)
		ORQ(tmp2, tmp)
		Label(skip)
	}
	short, out := label("partial_short"), label("partial_loaded")
	TESTQ(U32(8), n)
	JZ(LabelRef(short))
	VMOVQ(Mem{Base: src}, r)
	VPINSRQ(U8(1), tmp, r, r)
	JMP(LabelRef(out))
	Label(short)
	VMOVQ(tmp, r)
	Label(out)
}

// storePartial stores the first n (1..15) bytes of r at dst: pieces of 8, 4, 2 and 1 bytes, none
// past the n bytes.
func storePartial(r VecPhysical) {
	VMOVQ(r, tmp)
	XORQ(tmp2, tmp2)
	eight := label("no_piece")
	TESTQ(U32(8), n)
	JZ(LabelRef(eight))
	MOVQ(tmp, Mem{Base: dst})
	VPEXTRQ(U8(1), r, tmp)
	MOVQ(U32(8), tmp2)
	Label(eight)
	for _, piece := range []struct {
		size  int
		store func(Op, Op)
		part  Register
	}{{4, MOVL, tmp.As32()}, {2, MOVW, tmp.As16()}, {1, MOVB, tmp.As8()}} {
		skip := label("no_piece")
		TESTQ(U32(piece.size), n)
		JZ(LabelRef(skip))
		piece.store(piece.part, Mem{Base: dst, Index: tmp2, Scale: 1})
		if piece.size > 1 {
			SHRQ(U8(8*piece.size), tmp)
			ADDQ(U32(piece.size), tmp2)
		}
		Label(skip)
	}
}

// tailText2 emits the text tail of 1..127 bytes (n): the key stream of all its blocks at once (4
// blocks when n <= 64, else 8; VAES: two or four ymm, whose upper lanes go to X4-X7), so that the
// blocks' AES rounds overlap, then each whole block and the partial one, their products summed with
// the length block's (when the descriptor has a tag) and, merged, the AD's (tailAD2), and reduced
// once. The instructions of drain (Seal's last chunk GHASH, when not nil), then tailStart2's
// instructions past hptr, run between those AES rounds.
func tailText2(open, vaes, merged bool, drain []func()) {
	var pending []func()
	if drain == nil {
		tailStart2(true, merged)
	} else {
		tailPowers(true)
		pending = append(drain, tailStart2Steps()...)
	}
	order := blocks // order[i] holds block i's key stream
	if vaes {
		order = []VecPhysical{X0, X4, X1, X5, X2, X6, X3, X7}
	}
	keyStream := func(m int) {
		if !vaes {
			for _, b := range blocks[:m] {
				VPSHUFB(X10, X8, b)
				VPADDD(ctrOne, X8, X8)
			}
			aesRounds(blocks[:m], pending...)
			return
		}
		for _, k := range ksY[:m/2] {
			VPSHUFB(Y10, Y8, k)
			VPADDD(ctrAdd2, Y8, Y8)
		}
		aesRounds(ksY[:m/2], pending...)
		for j, k := range ksY[:m/2] {
			VEXTRACTI128(U8(1), k, blocks[4+j])
		}
	}
	eight, ready := label("ks8"), label("ks_ready")
	CMPQ(n, U8(64))
	JA(LabelRef(eight))
	keyStream(4)
	JMP(LabelRef(ready))
	Label(eight)
	keyStream(8)
	Label(ready)

	partials := make([]string, 8)
	for i := range partials {
		partials[i] = label("tail_partial")
	}
	partial, reduce := label("tail_partial"), label("tail_reduce")
	for i, k := range order[:7] {
		CMPQ(n, U8(16))
		JB(LabelRef(partials[i]))
		if open {
			VMOVDQU(Mem{Base: src}, X14)
			VPXOR(X14, k, k)
			VMOVDQU(k, Mem{Base: dst})
			VPSHUFB(X10, X14, k)
		} else {
			VPXOR(Mem{Base: src}, k, k)
			VMOVDQU(k, Mem{Base: dst})
			VPSHUFB(X10, k, k)
		}
		accumulate2(k, Mem{Base: hptr})
		ADDQ(U8(16), src)
		ADDQ(U8(16), dst)
		ADDQ(U8(16), hptr)
		SUBQ(U8(16), n)
	}
	// After the seventh whole block only the eighth can remain: its label comes first.
	for i := len(order) - 1; i >= 0; i-- {
		k := order[i]
		Label(partials[i])
		TESTQ(n, n)
		JZ(LabelRef(reduce))
		if k != X0 {
			VMOVDQA(k, X0)
		}
		JMP(LabelRef(partial))
	}

	Label(partial)
	loadPartial(X1)
	VPXOR(X1, X0, X0)
	storePartial(X0)
	if !open {
		// GHASH sees the ciphertext zero-padded: keep its first n bytes.
		LEAQ(tailMask.Offset(16), tmp)
		SUBQ(n, tmp)
		VPAND(Mem{Base: tmp}, X0, X1)
	}
	VPSHUFB(X10, X1, X1)
	accumulate2(X1, Mem{Base: hptr})

	Label(reduce)
	skip := label("no_lens")
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef(skip))
	VMOVDQU(Mem{Base: desc, Disp: dLens}, X1)
	accumulate2(X1, Mem{Base: tab, Disp: hOf(1)})
	Label(skip)
	reduce2(false)
}
