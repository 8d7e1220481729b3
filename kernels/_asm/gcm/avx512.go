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
// middle), Z11-Z13 temporaries, X15 the GHASH state Y (upper lanes zero), Z16 the counters of the
// next chunk (lane i: counter+i), Z17 the byte-reversal mask, Z18 the counter step, X19 the
// reduction constant, Z21-Z23 the chunk's further counters, Z24-Z31 and Z20 round keys 1-9, Z14 the
// last round key, K1 the byte mask of a tail's last zmm.
var (
	ks      = []VecPhysical{Z0, Z1, Z2, Z3}
	gin     = []VecPhysical{Z4, Z5, Z6, Z7}
	ctrZ    = []VecPhysical{Z16, Z21, Z22, Z23}
	rkZ     = []VecPhysical{Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31, Z20}
	rkLastZ = Z14
)

// avx512 generates the AVX512 kernel: one descriptor at a time, 16 blocks (four zmm) per chunk.
func avx512(name string, open bool) {
	Implement(name)
	Attributes(NOSPLIT)
	Load(Param("d"), desc)
	Load(Param("count"), count)
	VBROADCASTI32X4(bswapMask, Z17)
	VMOVDQU64(ctrAdd4, Z18)
	VMOVDQU64(polyK, X19)
	MOVQ(I32(-1), ones)

	startDescriptor()
	Comment("Round keys 1-9 and the last in registers: every AES-128 round but the first XOR.")
	defer keepRoundKeys(rkZ, rkLastZ)()

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
	ghash512(gin, Mem{Base: tab, Disp: tH + 16}, false)
	ADDQ(U32(256), src)
	SUBQ(U32(256), n)
	JMP(LabelRef("ad_chunk"))
	Label("ad_tail")
	TESTQ(n, n)
	JZ(LabelRef("text"))
	tail512(false, func(m int) {
		for j := range m {
			loadIn(gin[j], j, m)
			VPSHUFB(Z17, gin[j], gin[j])
		}
		ghash512(gin[:m], Mem{Base: hptr}, true)
	})

	Label("text")
	Comment("Text: counter mode and GHASH of the ciphertext, 16 blocks per chunk.")
	VBROADCASTI32X4(Mem{Base: desc, Disp: dCtr}, Z16)
	VPADDD(ctrInit, Z16, Z16)
	MOVQ(Mem{Base: desc, Disp: dSrc}, src)
	MOVQ(Mem{Base: desc, Disp: dDst}, dst)
	MOVQ(Mem{Base: desc, Disp: dN}, n)
	if open {
		// Open hashes the ciphertext it reads: GHASH and AES of a chunk are independent, so the
		// chunk's GHASH runs between its own AES rounds, and the XOR reads the ciphertext again.
		Label("chunk")
		CMPQ(n, U32(256))
		JB(LabelRef("text_tail"))
		counters512(4)
		VPADDD(Z18, Z23, Z16)
		for j := range 4 {
			VMOVDQU64(Mem{Base: src, Disp: 64 * j}, gin[j])
			VPSHUFB(Z17, gin[j], gin[j])
		}
		aesRounds(ks, ghash512Steps(gin, Mem{Base: tab, Disp: tH + 16}, true)...)
		for j := range 4 {
			VPXORQ(Mem{Base: src, Disp: 64 * j}, ks[j], ks[j])
			VMOVDQU64(ks[j], Mem{Base: dst, Disp: 64 * j})
		}
		advance512()
		JMP(LabelRef("chunk"))
	} else {
		// Seal hashes the ciphertext it writes: software-pipelined, the GHASH of chunk i-1 (waiting
		// in Z4-Z7) is spread between the AES rounds of chunk i, so neither waits for the other.
		h := Mem{Base: tab, Disp: tH + 16}
		pipelinedSeal(U32(256), sealChunk512, func() []func() { return ghash512Steps(gin, h, true) },
			func() { ghash512(gin, h, false) })
	}

	Label("text_tail")
	VMOVDQU64(X16, Mem{Base: desc, Disp: dCtr})
	TESTQ(n, n)
	JZ(LabelRef("no_tail"))
	tail512(true, func(m int) {
		counters512(m)
		aesRounds(ks[:m])
		for j := range m {
			loadIn(gin[j], j, m)
			VPXORQ(gin[j], ks[j], ks[j])
			if j < m-1 {
				VMOVDQU64(ks[j], Mem{Base: dst, Disp: 64 * j})
			} else {
				VMOVDQU8(ks[j], K1, Mem{Base: dst, Disp: 64 * j})
			}
			if open {
				VPSHUFB(Z17, gin[j], gin[j])
			} else {
				if j == m-1 {
					VMOVDQU8_Z(ks[j], K1, ks[j]) // GHASH sees the ciphertext zero-padded
				}
				VPSHUFB(Z17, ks[j], gin[j])
			}
		}
		ghash512(gin[:m], Mem{Base: hptr}, true)
	})
	JMP(LabelRef("finish"))

	Label("no_tail")
	Comment("No text tail: the length block alone, times H.")
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef("next"))
	VMOVDQU(Mem{Base: desc, Disp: dLens}, X4)
	VPXOR(X15, X4, X4)
	h1 := Mem{Base: tab, Disp: tH + 16*16}
	VPCLMULQDQ(U8(0x00), h1, X4, X8)
	VPCLMULQDQ(U8(0x11), h1, X4, X9)
	VPSHUFD(U8(0x4e), X4, X10)
	VPXOR(X4, X10, X10)
	VPCLMULQDQ(U8(0x00), karatsuba(h1), X10, X10)
	reduce128()

	finishDescriptors(X17, open)
}

// sealChunk512 encrypts the 256 bytes at src into dst, running the instructions of ghash between
// its AES rounds, and leaves the byte-reversed ciphertext in Z4-Z7 for the next GHASH.
func sealChunk512(ghash []func()) {
	counters512(4)
	VPADDD(Z18, Z23, Z16)
	aesRounds(ks, ghash...)
	for j := range 4 {
		VPXORQ(Mem{Base: src, Disp: 64 * j}, ks[j], ks[j])
		VMOVDQU64(ks[j], Mem{Base: dst, Disp: 64 * j})
		VPSHUFB(Z17, ks[j], gin[j])
	}
	advance512()
}

// advance512 moves src, dst and n past a chunk.
func advance512() {
	ADDQ(U32(256), src)
	ADDQ(U32(256), dst)
	SUBQ(U32(256), n)
}

// counters512 puts the next m zmm of counter blocks, in block order, into ks; Z16 holds the first
// (lane i: counter+i) and Z21-Z23 receive the following ones.
func counters512(m int) {
	for j := 1; j < m; j++ {
		VPADDD(Z18, ctrZ[j-1], ctrZ[j])
	}
	for j := range m {
		VPSHUFB(Z17, ctrZ[j], ks[j])
	}
}

// loadIn loads zmm j of a tail of m zmm from src: full, or zero-filled past K1 for the last one.
func loadIn(r VecPhysical, j, m int) {
	if j < m-1 {
		VMOVDQU64(Mem{Base: src, Disp: 64 * j}, r)
	} else {
		VMOVDQU8_Z(Mem{Base: src, Disp: 64 * j}, K1, r)
	}
}

// tail512 emits the tail of 1..255 bytes at src (n bytes): it sets K1 to the bytes of the last zmm and
// hptr to the powers of H for nb = ceil(n/16) blocks (one further when withLens and the descriptor
// has a tag, for the length block on H^1), then runs body(m) for m = ceil(n/64) zmm.
func tail512(withLens bool, body func(m int)) {
	LEAQ(Mem{Base: n, Disp: -1}, tmp)
	ANDQ(U8(63), tmp)
	INCQ(tmp)
	BZHIQ(tmp, ones, tmp)
	KMOVQ(tmp, K1)
	tailPowers(withLens)
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
		if withLens {
			lens512()
		}
		reduce512()
		if m > 1 {
			JMP(LabelRef(out))
		}
	}
	Label(out)
}

// ghash512 multiplies the byte-reversed blocks in regs by the powers of H at h (64 bytes per zmm),
// Y XORed into the first block, and accumulates into Z8-Z10. Unless more products follow (the caller
// adds them and reduces), it reduces into X15.
func ghash512(regs []VecPhysical, h Mem, more bool) {
	for _, step := range ghash512Steps(regs, h, !more) {
		step()
	}
}

// ghash512Steps returns ghash512's instructions one by one, so that the stitched loop can spread
// them between AES rounds.
func ghash512Steps(regs []VecPhysical, h Mem, reduce bool) []func() {
	steps := []func(){func() { VPXORQ(Z15, regs[0], regs[0]) }}
	for j, d := range regs {
		hm := h.Offset(64 * j)
		km := karatsuba(hm)
		if j == 0 {
			steps = append(steps,
				func() { VPCLMULQDQ(U8(0x00), hm, d, Z8) },
				func() { VPCLMULQDQ(U8(0x11), hm, d, Z9) },
				func() { VPSHUFD(U8(0x4e), d, Z10) },
				func() { VPXORQ(d, Z10, Z10) },
				func() { VPCLMULQDQ(U8(0x00), km, Z10, Z10) })
			continue
		}
		steps = append(steps,
			func() { VPCLMULQDQ(U8(0x00), hm, d, Z11) },
			func() { VPCLMULQDQ(U8(0x11), hm, d, Z12) },
			func() { VPSHUFD(U8(0x4e), d, Z13) },
			func() { VPXORQ(d, Z13, Z13) },
			func() { VPCLMULQDQ(U8(0x00), km, Z13, Z13) },
			func() { VPXORQ(Z11, Z8, Z8) },
			func() { VPXORQ(Z12, Z9, Z9) },
			func() { VPXORQ(Z13, Z10, Z10) })
	}
	if reduce {
		steps = append(steps, reduce512Steps()...)
	}
	return steps
}

// lens512 adds the length block times H^1 to the accumulators when the descriptor has a tag.
func lens512() {
	skip := label("no_lens")
	CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
	JE(LabelRef(skip))
	h1 := Mem{Base: tab, Disp: tH + 16*16}
	VMOVDQU(Mem{Base: desc, Disp: dLens}, X11)
	VPCLMULQDQ(U8(0x00), h1, X11, X12)
	VPXORQ(Z12, Z8, Z8)
	VPCLMULQDQ(U8(0x11), h1, X11, X12)
	VPXORQ(Z12, Z9, Z9)
	VPSHUFD(U8(0x4e), X11, X12)
	VPXOR(X11, X12, X12)
	VPCLMULQDQ(U8(0x00), karatsuba(h1), X12, X12)
	VPXORQ(Z12, Z10, Z10)
	Label(skip)
}

// reduce512 sums the four lanes of the accumulators and reduces into X15.
func reduce512() {
	for _, step := range reduce512Steps() {
		step()
	}
}

// reduce512Steps returns reduce512's instructions one by one (see ghash512Steps).
func reduce512Steps() []func() {
	return append([]func(){
		func() { VPTERNLOGQ(U8(0x96), Z8, Z9, Z10) }, // Karatsuba: middle += low + high
		func() { VPSLLDQ(U8(8), Z10, Z11) },
		func() { VPSRLDQ(U8(8), Z10, Z10) },
		func() { VPXORQ(Z11, Z8, Z8) },
		func() { VPXORQ(Z10, Z9, Z9) },
		func() { VEXTRACTI64X4(U8(1), Z8, Y11) },
		func() { VEXTRACTI64X4(U8(1), Z9, Y12) },
		func() { VPXORQ(Y11, Y8, Y8) },
		func() { VPXORQ(Y12, Y9, Y9) },
		func() { VEXTRACTI128(U8(1), Y8, X11) },
		func() { VEXTRACTI128(U8(1), Y9, X12) },
		func() { VPXOR(X11, X8, X8) },
		func() { VPXOR(X12, X9, X9) },
	}, montgomerySteps(X8, X9, X11, X19)...)
}

// reduce128 folds the middle product X10 into X8:X9 and reduces into X15 (xmm accumulators).
func reduce128() {
	VPXOR(X8, X10, X10) // Karatsuba: middle += low + high
	VPXOR(X9, X10, X10)
	VPSLLDQ(U8(8), X10, X11)
	VPSRLDQ(U8(8), X10, X10)
	VPXOR(X11, X8, X8)
	VPXOR(X10, X9, X9)
	montgomery(X8, X9, X11, X19)
}
