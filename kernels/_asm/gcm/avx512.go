// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// AVX512 registers: Z0-Z3 key stream, Z4-Z7 GHASH input, Z8-Z10 product accumulators (low, high,
// middle; from the text on Z9 is also the lane accumulator, see lanesSteps), Z11-Z13 temporaries,
// X15 the GHASH state Y (upper lanes zero), Z16 the counter blocks of the next chunk (lane i:
// counter+i, in block order; ctrLow the low byte of lane 0's counter), Z17 the byte-reversal mask,
// Z19 the reduction constant, Z18 (hStride) and Z21-Z22 temporaries of the chunk loop's GHASH (the
// text's tail leaves E_K(J0) in Z22, tagJ0), Z23-Z31 and Z20 round keys 0-9 (Seal: Z18 stages
// 10-13), Z14 the last round key, K1 the byte mask of a tail's last zmm, K2 a mask of the AD's
// lanes or of the tail's spare lane.
var (
	ks      = []VecPhysical{Z0, Z1, Z2, Z3}
	gin     = []VecPhysical{Z4, Z5, Z6, Z7}
	rkZ     = []VecPhysical{Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31, Z20}
	rkLastZ = Z14
	// hStride holds the stride power of H lanesSteps multiplies by, over AES rounds 1-9, and in
	// Seal stages AES-192's and AES-256's round keys 10-13 after them (stageRoundKeys).
	hStride = Z18
	// tagJ0 receives E_K(J0) from the text tail's spare lane (j0FromLane).
	tagJ0 = Z22
)

// avx512 generates the AVX512 kernel: one descriptor at a time, 16 blocks (four zmm) per chunk,
// the chunk loop's GHASH with the schoolbook's products or Karatsuba's (see lanesSteps).
func avx512(name string, open, schoolbook bool) {
	Implement(name)
	Attributes(NOSPLIT)
	Load(Param("d"), desc)
	Load(Param("count"), count)
	VBROADCASTI32X4(bswapMask, Z17)
	VBROADCASTI32X4(polyK, Z19)
	MOVQ(I32(-1), ones)

	startDescriptor()
	Comment("Round keys 0-9 and the last in registers: every round of AES-128.")
	defer keepRoundKeys(rkZ, rkLastZ)()
	if !open {
		// One load a round key past the ninth, not one a zmm: AES-256 Seal 64 x 1420 B 2.44x ->
		// 2.59x crypto/cipher on Intel (docs/experiments.md). Open measured 4% slower so with one
		// key (5% faster with 64) and reads them from memory.
		defer stageRoundKeys(hStride)()
	}

	Comment("Additional data: GHASH only.")
	MOVQ(Mem{Base: desc, Disp: dAD}, src)
	MOVQ(Mem{Base: desc, Disp: dADLen}, n)
	Label("ad_chunk")
	CMPQ(n, U32(256))
	JB(LabelRef("ad_tail"))
	for j, g := range gin {
		VMOVDQU64(Mem{Base: src, Disp: 64 * j}, g)
		VPSHUFB(Z17, g, g)
	}
	ghash512(gin, Mem{Base: tab, Disp: hOf(16)}, false)
	reduce512()
	ADDQ(U32(256), src)
	SUBQ(U32(256), n)
	JMP(LabelRef("ad_chunk"))
	Label("ad_tail")
	TESTQ(n, n)
	JZ(LabelRef("text"))
	Comment("An AD tail of up to 64 bytes before a text starts the lanes (adIntoLanes).")
	CMPQ(n, U8(64))
	JA(LabelRef("ad_tail_hashed"))
	CMPQ(Mem{Base: desc, Disp: dN}, U8(0))
	JE(LabelRef("ad_tail_hashed"))
	adIntoLanes()
	JMP(LabelRef("text_lanes_set"))
	Label("ad_tail_hashed")
	tail512(false, false, func(m int) {
		for j := range m {
			loadIn(gin[j], j, m)
			VPSHUFB(Z17, gin[j], gin[j])
		}
		ghash512(gin[:m], Mem{Base: hptr}, false)
	})

	Label("text")
	VPXORQ(Z9, Z9, Z9) // the lane accumulator (see lanesSteps)
	Label("text_lanes_set")
	Comment("Text: counter mode and GHASH of the ciphertext, 16 blocks per chunk.")
	VBROADCASTI32X4(Mem{Base: desc, Disp: dCtr}, Z16)
	VPADDD(ctrInit, Z16, Z16)
	countersToBlockOrder(Z16, Z17)
	MOVQ(Mem{Base: desc, Disp: dSrc}, src)
	MOVQ(Mem{Base: desc, Disp: dDst}, dst)
	MOVQ(Mem{Base: desc, Disp: dN}, n)
	if open {
		// Open hashes the ciphertext it reads: GHASH and AES of a chunk are independent, so the
		// chunk's GHASH runs between its own AES rounds, and the XOR reads the ciphertext again.
		Label("chunk")
		CMPQ(n, U32(256))
		JB(LabelRef("text_tail"))
		counters512(4, true)
		for j := range 4 {
			VMOVDQU64(Mem{Base: src, Disp: 64 * j}, gin[j])
			VPSHUFB(Z17, gin[j], gin[j])
		}
		aesRounds(ks, lanesSteps(true, schoolbook)...)
		for j := range 4 {
			VPXORQ(Mem{Base: src, Disp: 64 * j}, ks[j], ks[j])
			VMOVDQU64(ks[j], Mem{Base: dst, Disp: 64 * j})
		}
		advance512()
		JMP(LabelRef("chunk"))
	} else {
		// Seal hashes the ciphertext it writes: software-pipelined, the GHASH of chunk i-1 (waiting
		// in Z4-Z7) is spread between the AES rounds of chunk i, so neither waits for the other.
		// The last chunk's GHASH runs between the AES rounds of the text's tail where there is one
		// (they are few, so those rounds wait on their own latency), then the lanes' products.
		steps := func() []func() { return lanesSteps(false, schoolbook) }
		pipelinedSeal(U32(256), sealChunk512, steps, func() {
			TESTQ(n, n)
			JNZ(LabelRef("drain_tail"))
			for _, step := range steps() {
				step()
			}
			JMP(LabelRef("text_tail"))
			Label("drain_tail")
			saveCounter()
			tail512(true, false, func(m int) { textTail512(open, m, steps()) })
			JMP(LabelRef("tail_finish"))
		})
	}

	Label("text_tail")
	saveCounter()
	TESTQ(n, n)
	JZ(LabelRef("no_tail"))
	tail512(true, !open, func(m int) { textTail512(open, m, nil) })
	tagFromLane()

	Label("no_tail")
	CMPQ(Mem{Base: desc, Disp: dN}, U8(0))
	JNE(LabelRef("close_lanes"))
	Comment("No text: the length block alone, times H.")
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef("next"))
	VMOVDQU(Mem{Base: desc, Disp: dLens}, X4)
	VPXOR(X15, X4, X4)
	h1 := Mem{Base: tab, Disp: hOf(1)}
	karatsubaProducts(X4, h1, karatsuba(h1), X8, X9, X10)
	for _, step := range reduceSteps(X8, X10, X9, X11, X19, true) {
		step()
	}
	VMOVDQA(X9, X15)
	JMP(LabelRef("finish"))

	Label("close_lanes")
	Comment("Whole chunks only: the lanes, then the length block when there is a tag.")
	tailPowers(true)
	closeLanes()
	lens512(false)
	reduce512()

	finishDescriptors(X17, open)
}

// sealChunk512 encrypts the 256 bytes at src into dst, running the instructions of ghash between
// its AES rounds, and leaves the byte-reversed ciphertext in Z4-Z7 for the next GHASH. The first
// chunk (no ghash) adds the Y before the text to its first block (see lanesSteps).
func sealChunk512(ghash []func()) {
	counters512(4, true)
	aesRounds(ks, ghash...)
	for j := range 4 {
		VPXORQ(Mem{Base: src, Disp: 64 * j}, ks[j], ks[j])
		VMOVDQU64(ks[j], Mem{Base: dst, Disp: 64 * j})
		VPSHUFB(Z17, ks[j], gin[j])
	}
	if ghash == nil {
		VPXORQ(Z15, gin[0], gin[0])
		VPXORQ(Z15, Z15, Z15)
	}
	advance512()
}

// saveCounter stores the next counter block, in the descriptor's byte-reversed form, for the
// op's next piece.
func saveCounter() {
	VPSHUFB(X17, X16, X11)
	VMOVDQU64(X11, Mem{Base: desc, Disp: dCtr})
}

// textTail512 emits the text tail of m zmm (the last under K1) and its GHASH products, added to
// those of the chunk loop's lanes. A tail's few AES rounds wait on their own latency, so other
// work runs between them: for Seal the instructions of drain (the last chunk's GHASH) and the
// lanes' products, or nothing when drain is nil (tail512 then ran closeLanes), for Open the lanes'
// products and the tail's own, whose ciphertext it has.
func textTail512(open bool, m int, drain []func()) {
	counters512(m, false)
	j0IntoLane(ks[m-1])
	if open {
		for j := range m {
			loadIn(gin[j], j, m)
			VPSHUFB(Z17, gin[j], gin[j])
		}
		lensIntoLane(gin[m-1])
		aesRounds(ks[:m], append(closeLanesSteps(), ghash512Steps(gin[:m], Mem{Base: hptr}, true)...)...)
		j0FromLane(ks[m-1])
		for j := range m {
			if j < m-1 {
				VPXORQ(Mem{Base: src, Disp: 64 * j}, ks[j], ks[j])
			} else {
				loadIn(Z11, j, m)
				VPXORQ(Z11, ks[j], ks[j])
			}
			storeOut(ks[j], j, m)
		}
		return
	}
	var pending []func()
	if drain != nil {
		pending = append(drain, closeLanesSteps()...)
	}
	aesRounds(ks[:m], pending...)
	j0FromLane(ks[m-1])
	for j := range m {
		loadIn(gin[j], j, m)
		VPXORQ(gin[j], ks[j], ks[j])
		storeOut(ks[j], j, m)
		if j == m-1 {
			VMOVDQU8_Z(ks[j], K1, ks[j]) // GHASH sees the ciphertext zero-padded
		}
		VPSHUFB(Z17, ks[j], gin[j])
	}
	lensIntoLane(gin[m-1])
	ghash512(gin[:m], Mem{Base: hptr}, true)
}

// j0FromLane copies E_K(J0) from the spare lane of r, under K2 (j0IntoLane), to the low lane of
// tagJ0; without a spare lane K2 selects something else, which tagFromLane then leaves unused.
func j0FromLane(r VecPhysical) {
	VPCOMPRESSQ(r, K2, tagJ0)
}

// advance512 moves src, dst and n past a chunk.
func advance512() {
	ADDQ(U32(256), src)
	ADDQ(U32(256), dst)
	SUBQ(U32(256), n)
}

// counters512 puts the next m zmm of counter blocks, in block order, into ks and with advance moves
// Z16 past them (see countersInOrder).
func counters512(m int, advance bool) {
	countersInOrder(ks[:m], Z16, Z11, Z17, ctrStepBE, ctrStep, advance)
}

// loadIn loads zmm j of a tail of m zmm from src: full, or zero-filled past K1 for the last one.
func loadIn(r VecPhysical, j, m int) {
	if j < m-1 {
		VMOVDQU64(Mem{Base: src, Disp: 64 * j}, r)
	} else {
		VMOVDQU8_Z(Mem{Base: src, Disp: 64 * j}, K1, r)
	}
}

// storeOut stores zmm j of a tail of m zmm to dst: whole, or the bytes under K1 for the last one.
func storeOut(r VecPhysical, j, m int) {
	if j < m-1 {
		VMOVDQU64(r, Mem{Base: dst, Disp: 64 * j})
	} else {
		VMOVDQU8(r, K1, Mem{Base: dst, Disp: 64 * j})
	}
}

// tail512 emits the tail of 1..255 bytes at src (n bytes): it sets K1 to the bytes of the last zmm and
// hptr to the powers of H for nb = ceil(n/16) blocks, then runs body(m) for m = ceil(n/64) zmm. The
// text's tail (text) follows the chunk loop: hptr leaves H^1 to the length block when the
// descriptor has a tag, and body adds its products to those of the loop's lanes, which closing
// multiplies first (closeLanes) and a body that stitches them in leaves to itself.
func tail512(text, closing bool, body func(m int)) {
	LEAQ(Mem{Base: n, Disp: -1}, tmp)
	ANDQ(U8(63), tmp)
	INCQ(tmp)
	BZHIQ(tmp, ones, tmp)
	KMOVQ(tmp, K1)
	tailPowers(text)
	if closing {
		closeLanes()
	}
	LEAQ(Mem{Base: n, Disp: 63}, tmp)
	SHRQ(U8(6), tmp)
	out := label("tail_done")
	cases := make([]string, 5)
	for m := 1; m <= 3; m++ {
		cases[m] = label(fmt.Sprintf("tail%d", m))
		CMPQ(tmp, U8(m))
		JE(LabelRef(cases[m]))
	}
	for m := 4; m >= 1; m-- {
		if m < 4 {
			Label(cases[m])
		}
		body(m)
		if text {
			lens512(true)
		}
		reduce512()
		if m > 1 {
			JMP(LabelRef(out))
		}
	}
	Label(out)
}

// ghash512 multiplies the byte-reversed blocks in regs by the powers of H at h (64 bytes per zmm),
// Y XORed into the first block, and sets Z8-Z10 to the products or, with add, adds them; the
// caller reduces (reduce512).
func ghash512(regs []VecPhysical, h Mem, add bool) {
	for _, step := range ghash512Steps(regs, h, add) {
		step()
	}
}

// ghash512Steps returns ghash512's instructions one by one, for the stitched loops.
func ghash512Steps(regs []VecPhysical, h Mem, add bool) []func() {
	steps := []func(){func() { VPXORQ(Z15, regs[0], regs[0]) }}
	for j, d := range regs {
		steps = append(steps, mulSteps(d, h.Offset(64*j), add || j > 0)...)
	}
	return steps
}

// mulSteps returns the instructions that multiply the four blocks in d by the four powers of H at
// h, Karatsuba's three carry-less products, and set Z8-Z10 (low, high, middle) to them or with add
// add them (through Z11-Z13). Setting, d may be Z9.
func mulSteps(d VecPhysical, h Mem, add bool) []func() {
	if !add {
		return karatsubaSteps(d, h, karatsuba(h), Z8, Z9, Z10)
	}
	return append(karatsubaSteps(d, h, karatsuba(h), Z11, Z12, Z13),
		func() { VPXORQ(Z11, Z8, Z8) },
		func() { VPXORQ(Z12, Z9, Z9) },
		func() { VPXORQ(Z13, Z10, Z10) })
}

// lanesSteps returns, one by one for the stitched loops, the GHASH of a chunk of text in Z4-Z7 into
// the lane accumulator Z9. Lane i of Z9 sums the blocks at positions i mod 4 of the chunks so far,
// Horner's rule with step H^16 on each lane: Z9 = Z9·H^16 + Z4·H^12 + Z5·H^8 + Z6·H^4 + Z7, each
// power in all four lanes, reduced lane by lane. Unlike the aggregated sum (a chunk's blocks times
// H^16..H^1, then one reduction of the lanes' sum), this leaves no lane sum to the chunk: the lanes
// meet once, when closeLanes multiplies lane i by H^(4-i) and what follows. The Y before the text
// (X15) enters the first chunk's first block, and X15 is zero after: with pending here, else the
// caller has done both (Seal's first chunk).
// The products are Karatsuba's three a block, each operand a memory operand, or with schoolbook
// the schoolbook's four, each power loaded once into hStride to serve all four: 8 fewer zmm loads
// and 3 fewer ALU instructions a chunk for 4 more carry-less products. Intel cores take the
// schoolbook's, where a zmm load costs about a third of a vector ALU slot; AMD's the three products
// (impl.gcmSchoolbook). Products are added as they come, in three-way XORs where two are ready;
// the gin registers a chunk has multiplied serve as temporaries.
func lanesSteps(pending, schoolbook bool) []func() {
	xor3 := func(a, b, dst VecPhysical) func() { return func() { VPTERNLOGQ(U8(0x96), a, b, dst) } }
	xor := func(a, dst VecPhysical) func() { return func() { VPXORQ(a, dst, dst) } }
	var steps []func()
	if pending {
		steps = []func(){
			func() { VPXORQ(Z15, gin[0], gin[0]) },
			func() { VPXORQ(Z15, Z15, Z15) },
		}
	}
	if schoolbook {
		steps = append(steps, schoolbookSteps(Z9, 0, Z8, Z10, Z11, Z9)...)
		steps = append(steps, schoolbookSteps(gin[0], 1, Z12, Z21, Z22, Z13)...)
		steps = append(steps, xor3(Z11, Z21, Z10))
		steps = append(steps, schoolbookSteps(gin[1], 2, Z11, Z21, gin[0], gin[1])...)
		steps = append(steps, xor3(Z12, Z11, Z8), xor3(Z13, gin[1], Z9), xor3(Z22, Z21, Z10))
		steps = append(steps, schoolbookSteps(gin[2], 3, Z11, Z12, Z13, gin[2])...)
		// Z7 times H^0 is Z7·y^128 before the reduction's y^-128: it joins the high half.
		steps = append(steps, xor(Z11, Z8), xor3(gin[2], gin[3], Z9), xor3(Z12, Z13, Z10), xor(gin[0], Z10))
		return append(steps, foldSteps(Z8, Z10, Z9, Z11, Z19, true)...)
	}
	products := func(d VecPhysical, s int, lo, hi, mid VecPhysical) []func() {
		h := stridePower(s)
		return karatsubaSteps(d, h, karatsuba(h), lo, hi, mid)
	}
	steps = append(steps, products(Z9, 0, Z8, Z9, Z10)...)
	steps = append(steps, products(gin[0], 1, Z11, Z12, Z13)...)
	steps = append(steps, products(gin[1], 2, Z21, Z22, gin[0])...)
	steps = append(steps, xor3(Z11, Z21, Z8), xor3(Z12, Z22, Z9), xor3(Z13, gin[0], Z10))
	steps = append(steps, products(gin[2], 3, Z11, Z12, Z13)...)
	// Z7 joins the high half as above, and the middle one so that Karatsuba's correction (middle
	// += low + high) leaves it out there.
	steps = append(steps, xor(Z11, Z8), xor3(Z12, gin[3], Z9), xor3(Z13, gin[3], Z10))
	return append(steps, reduceSteps(Z8, Z10, Z9, Z11, Z19, true)...)
}

// schoolbookSteps returns the instructions that multiply the four blocks in d by stride power s
// (stridePower), loaded once into hStride: the low products into lo, the two middle ones into m1 and
// m2, the high ones into hi. d is read before hi is written, so hi may be d.
func schoolbookSteps(d VecPhysical, s int, lo, m1, m2, hi VecPhysical) []func() {
	return []func(){
		func() { VMOVDQU64(stridePower(s), hStride) },
		func() { VPCLMULQDQ(U8(0x00), hStride, d, lo) },
		func() { VPCLMULQDQ(U8(0x01), hStride, d, m1) },
		func() { VPCLMULQDQ(U8(0x10), hStride, d, m2) },
		func() { VPCLMULQDQ(U8(0x11), hStride, d, hi) },
	}
}

// closeLanes sets Z8-Z10 to the products of the lane accumulator Z9 with the four powers of H below
// hptr, H^(nb+4)..H^(nb+1) where hptr holds H^nb for what follows; where Z9 is zero for certain (no
// chunk ran, n being the descriptor's text length, and no AD) it zeroes them instead.
func closeLanes() {
	mul, done := label("lanes_mul"), label("lanes_closed")
	CMPQ(n, Mem{Base: desc, Disp: dN})
	JNE(LabelRef(mul))
	CMPQ(Mem{Base: desc, Disp: dADLen}, U8(0))
	JNE(LabelRef(mul))
	VPXORQ(Z8, Z8, Z8)
	VPXORQ(Z10, Z10, Z10)
	JMP(LabelRef(done))
	Label(mul)
	for _, step := range closeLanesSteps() {
		step()
	}
	Label(done)
}

// closeLanesSteps returns closeLanes' products one by one, for the stitched tails, which run them
// without its test: Z9 is zero where no chunk ran and there is no AD (the text starts it so), and so are the
// products then.
func closeLanesSteps() []func() {
	return mulSteps(Z9, Mem{Base: hptr, Disp: -64}, false)
}

// adIntoLanes starts the lane accumulator Z9 from the AD's last n = 1..64 bytes at src, k =
// ceil(n/16) blocks, with Y (X15) added to the first of them, and zeroes X15, where the AD's tail
// would otherwise take a multiplication and a reduction of its own. The blocks go to lanes 4-k..3,
// zero-padded: the lanes' powers (closeLanes: lane i takes H^(4-i) times the rest) then weigh block
// j, as GHASH does, by H^(k-j) times the powers of the text and the length block after it. The
// load starts 64-16k bytes before src, under a byte mask of the n bytes (masked-out bytes do not
// fault).
func adIntoLanes() {
	LEAQ(Mem{Base: n, Disp: 15}, tmp)
	ANDQ(I8(-16), tmp)
	NEGQ(tmp)
	ADDQ(U8(64), tmp) // 64-16k
	BZHIQ(n, ones, tmp3)
	SHLXQ(tmp, tmp3, tmp3)
	KMOVQ(tmp3, K2)
	SUBQ(tmp, src)
	VMOVDQU8_Z(Mem{Base: src}, K2, Z9)
	VPSHUFB(Z17, Z9, Z9)
	SHRQ(U8(3), tmp) // the first quadword of lane 4-k
	laneMask(tmp)
	VSHUFI64X2(U8(0), Z15, Z15, Z11)
	VPXORQ(Z11, Z9, K2, Z9)
	VPXOR(X15, X15, X15)
}

// lens512 adds the length block times H^1 to the accumulators when the descriptor has a tag, but
// for a text tail (tail) where lensIntoLane has put it among the tail's blocks.
func lens512(tail bool) {
	skip := label("no_lens")
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef(skip))
	if tail {
		textBlocksMod4()
		JNZ(LabelRef(skip)) // lensIntoLane took it
	}
	h1 := Mem{Base: tab, Disp: hOf(1)}
	VMOVDQU(Mem{Base: desc, Disp: dLens}, X11)
	karatsubaProducts(X11, h1, karatsuba(h1), X12, X13, X21) // xmm: zero above, like Z11's lanes 1-3
	VPXORQ(Z12, Z8, Z8)
	VPXORQ(Z13, Z9, Z9)
	VPXORQ(Z21, Z10, Z10)
	Label(skip)
}

// lensIntoLane puts the length block into the spare lane of the text tail's last zmm r (zero past
// the text), where there is one (spareLane), whose power is then H^1. The tail's products take it
// at no further multiplication (lens512 leaves it out).
func lensIntoLane(r VecPhysical) {
	skip := label("lens_no_lane")
	spareLane(skip)
	VBROADCASTI32X4(Mem{Base: desc, Disp: dLens}, Z11)
	VPXORQ(Z11, r, K2, r)
	Label(skip)
}

// j0IntoLane puts the block J0 into the spare lane of the text tail's last zmm of counter blocks r,
// where there is one (spareLane): the tail's AES rounds then encrypt it for the tag beside the text
// (tagFromLane), and the tag does not wait on a chain of rounds of its own after them. A lone Open
// waited on it (AES-128 1 x 1420 B 2.21x -> 2.44x crypto/cipher on Intel); batches hid it.
func j0IntoLane(r VecPhysical) {
	skip := label("j0_no_lane")
	spareLane(skip)
	VBROADCASTI32X4(Mem{Base: desc, Disp: dJ0}, Z11)
	VPSHUFB(Z17, Z11, Z11)
	VMOVDQA64(Z11, K2, r)
	Label(skip)
}

// spareLane sets K2 to the spare lane of the text tail's last zmm when the descriptor has a tag and
// the tail's last zmm has a lane past the text, lane nb mod 4 of nb = ceil(n/16) blocks, and jumps to
// skip otherwise.
func spareLane(skip string) {
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef(skip))
	textBlocksMod4()
	JZ(LabelRef(skip))
	SHLQ(U8(1), tmp) // the lane's first quadword
	laneMask(tmp)
}

// tagFromLane ends a descriptor whose text had a tail (Seal's drained one jumps to tail_finish):
// where the tail's AES rounds encrypted J0 in a spare lane (j0IntoLane), the tag takes E_K(J0)
// from tagJ0 (textTail512); otherwise, and without a tag, finishDescriptors runs as after any
// other text. It ends in a jump either way.
func tagFromLane() {
	Label("tail_finish")
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef("finish"))
	textBlocksMod4()
	JZ(LabelRef("finish"))
	VMOVDQA64(tagJ0.AsX(), X0)
	JMP(LabelRef("tag_ready"))
}

// laneMask sets K2 to the two quadwords of the 128-bit lane whose first quadword is q.
func laneMask(q Register) {
	MOVL(U32(3), tmp3.As32())
	SHLXQ(q, tmp3, tmp3)
	KMOVQ(tmp3, K2)
}

// textBlocksMod4 sets tmp to ceil(n/16) mod 4 and the flags to match (ZF: a multiple of four).
func textBlocksMod4() {
	LEAQ(Mem{Base: n, Disp: 15}, tmp)
	SHRQ(U8(4), tmp)
	ANDQ(U8(3), tmp)
}

// reduce512 reduces the accumulators lane by lane and sums the four lanes into X15.
func reduce512() {
	for _, step := range reduceSteps(Z8, Z10, Z9, Z11, Z19, true) {
		step()
	}
	VEXTRACTI64X4(U8(1), Z9, Y11)
	VPXORQ(Y11, Y9, Y9)
	VEXTRACTI128(U8(1), Y9, X11)
	VPXOR(X11, X9, X15)
}
