// Command gcm generates kernels/gcm_amd64.s: the AES-GCM kernels of the AVX512 and AVX2 tiers
// (NIST SP 800-38D with 96-bit IVs) and the AES-NI SubWord helper of the key expansion.
//
// Run through go generate in kernels (see gcm_amd64.go). The Go side owns the memory layouts; the
// offsets below mirror gcm_amd64.go's gcmDesc and gcmTable and TestGCMLayout keeps them in step.
//
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
//
// Counters. A counter block is kept byte-reversed, so the 32-bit big-endian counter of inc32
// (section 6.2) is the low dword of its lane and VPADDD wraps it modulo 2^32 without touching the
// nonce; VPSHUFB restores the block order before the AES rounds.
//
// Kernels. Each generated function walks an array of descriptors (gcmDesc) and, per descriptor,
// hashes the AD, runs counter mode and GHASH over the text in chunks, finishes the tail, and computes
// the tag (see gcm_amd64.go for the pipeline and the lane layout). The work of one call is bounded by
// the Go driver; the AVX512 kernels need no stack, the AVX2 ones a 16-byte bounce buffer, wiped
// after use. VZEROUPPER precedes every return.
//
// All branches depend on lengths, round counts and pointers only: no secret-dependent branch or
// memory index (constant time).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// gcmDesc offsets.
const (
	dTab    = 0
	dDst    = 8
	dSrc    = 16
	dN      = 24
	dAD     = 32
	dADLen  = 40
	dTag    = 48
	dLens   = 56
	dY      = 72
	dCtr    = 88
	dJ0     = 104
	descLen = 120
)

// gcmTable offsets: rk[15][64], h[20][16], hk[20][16], nr.
const (
	tRK = 0
	tH  = 960
	tHK = 1280
	tNR = 1600
)

// karatsuba returns the address of the Karatsuba operand (the XOR of the two quadwords) of the power
// of H at h.
func karatsuba(h Mem) Mem { return h.Offset(tHK - tH) }

var (
	bswapMask, ctrInit, ctrAdd4, ctrAdd2, polyK, ctrOne, laneOne, tailMask Mem
)

func main() {
	Package("github.com/wirebatch/wirebatch/kernels")
	ConstraintExpr("gc,!purego")
	constants()

	subWord()
	avx512("gcmSealAVX512", false)
	avx512("gcmOpenAVX512", true)
	avx2("gcmSealAVX2", false, false)
	avx2("gcmOpenAVX2", true, false)
	avx2("gcmSealAVX2VAES", false, true)
	avx2("gcmOpenAVX2VAES", true, true)
	lanes("gcmSealLanesAVX512", false)
	lanes("gcmOpenLanesAVX512", true)
	aesBlocks()
	Generate()
}

func constants() {
	bswapMask = GLOBL("gcmBswap", RODATA|NOPTR)
	DATA(0, U64(0x08090a0b0c0d0e0f))
	DATA(8, U64(0x0001020304050607))

	// Lane i of the first zmm of a chunk holds counter+i.
	ctrInit = GLOBL("gcmCtrInit", RODATA|NOPTR)
	for i := range 8 {
		DATA(8*i, U64(uint64(i/2)*uint64(1-i%2)))
	}
	ctrAdd4 = GLOBL("gcmCtrAdd4", RODATA|NOPTR)
	for i := range 8 {
		DATA(8*i, U64(4*uint64(1-i%2)))
	}
	ctrAdd2 = GLOBL("gcmCtrAdd2", RODATA|NOPTR)
	for i := range 4 {
		DATA(8*i, U64(2*uint64(1-i%2)))
	}
	// Every lane's counter + 1: the lane kernels' step from one packet's block to its next.
	laneOne = GLOBL("gcmLaneOne", RODATA|NOPTR)
	for i := range 8 {
		DATA(8*i, U64(uint64(1-i%2)))
	}
	ctrOne = GLOBL("gcmCtrOne", RODATA|NOPTR)
	DATA(0, U64(1))
	DATA(8, U64(0))

	polyK = GLOBL("gcmPoly", RODATA|NOPTR)
	DATA(0, U64(0xc200000000000000))
	DATA(8, U64(0xc200000000000000))

	// 16 bytes of ones then 16 of zeros: at offset 16-n, a mask keeping the first n bytes of a block.
	tailMask = GLOBL("gcmTailMask", RODATA|NOPTR)
	DATA(0, U64(^uint64(0)))
	DATA(8, U64(^uint64(0)))
	DATA(16, U64(0))
	DATA(24, U64(0))
}

var labels int

// label returns a function-unique label name.
func label(what string) string {
	labels++
	return fmt.Sprintf("%s_%d", what, labels)
}

func subWord() {
	Implement("aesSubWord")
	Attributes(NOSPLIT)
	w := Load(Param("w"), GP32())
	VMOVD(w, X0)
	VPSHUFD(U8(0), X0, X0)
	VPXOR(X1, X1, X1)
	VAESENCLAST(X1, X0, X0)
	VMOVD(X0, w)
	Store(w, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// Register use common to both tiers.
var (
	desc  = RDI // current descriptor
	count = RCX // descriptors left
	tab   = RAX // key table
	last  = RBX // &rk[nr]
	src   = RSI
	dst   = RDX
	n     = R8
	nr    = R12
	hptr  = R10 // powers of H for a tail
	tmp   = R11
	tmp2  = R13
	ones  = R9 // all ones, for BZHI
)

// aesRounds encrypts the blocks in regs (xmm: one block; zmm: four) with the round keys at tab;
// the round count in nr picks 10, 12 or 14 rounds. The independent instructions of other are spread
// over rounds 1-9 (stitching).
func aesRounds(regs []VecPhysical, other ...func()) {
	rk := func(i int) Mem { return Mem{Base: tab, Disp: tRK + 64*i} }
	for _, r := range regs {
		if r.Size() == 64 {
			VPXORQ(rk(0), r, r)
		} else {
			VPXOR(rk(0), r, r)
		}
	}
	round := func(i int) {
		for _, r := range regs {
			VAESENC(rk(i), r, r)
		}
	}
	per := (len(other) + 8) / 9
	for i := 1; i <= 9; i++ {
		round(i)
		for range min(per, len(other)) {
			other[0]()
			other = other[1:]
		}
	}
	done := label("aes_last")
	CMPQ(nr, U8(10))
	JE(LabelRef(done))
	round(10)
	round(11)
	CMPQ(nr, U8(12))
	JE(LabelRef(done))
	round(12)
	round(13)
	Label(done)
	for _, r := range regs {
		VAESENCLAST(Mem{Base: last}, r, r)
	}
}

// AVX512 registers: Z0-Z3 key stream, Z4-Z7 GHASH input, Z8-Z10 product accumulators (low, high,
// middle), Z11-Z14 and Z20 temporaries, X15 the GHASH state Y (upper lanes zero), Z16 the counters of
// the next chunk (lane i: counter+i), Z17 the byte-reversal mask, Z18 the counter step, X19 the
// reduction constant, K1 the byte mask of a tail's last zmm.
var (
	ks   = []VecPhysical{Z0, Z1, Z2, Z3}
	gin  = []VecPhysical{Z4, Z5, Z6, Z7}
	ctrZ = []VecPhysical{Z16, Z21, Z22, Z23}
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

	Label("desc")
	TESTQ(count, count)
	JZ(LabelRef("done"))
	MOVQ(Mem{Base: desc, Disp: dTab}, tab)
	MOVQ(Mem{Base: tab, Disp: tNR}, nr)
	MOVQ(nr, last)
	SHLQ(U8(6), last)
	ADDQ(tab, last)
	VMOVDQU(Mem{Base: desc, Disp: dY}, X15)

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
		// Open hashes the ciphertext it reads: GHASH and AES of a chunk are independent.
		Label("chunk")
		CMPQ(n, U32(256))
		JB(LabelRef("text_tail"))
		counters512(4)
		VPADDD(Z18, Z23, Z16)
		aesRounds(ks)
		for j := range 4 {
			VMOVDQU64(Mem{Base: src, Disp: 64 * j}, gin[j])
			VPXORQ(gin[j], ks[j], ks[j])
			VPSHUFB(Z17, gin[j], gin[j])
			VMOVDQU64(ks[j], Mem{Base: dst, Disp: 64 * j})
		}
		ghash512(gin, Mem{Base: tab, Disp: tH + 16}, false)
		advance512()
		JMP(LabelRef("chunk"))
	} else {
		// Seal hashes the ciphertext it writes: software-pipelined, the GHASH of chunk i-1 (waiting
		// in Z4-Z7) is spread between the AES rounds of chunk i, so neither waits for the other.
		CMPQ(n, U32(256))
		JB(LabelRef("text_tail"))
		sealChunk512(nil)
		Label("chunk")
		CMPQ(n, U32(256))
		JB(LabelRef("drain"))
		sealChunk512(ghash512Steps(gin, Mem{Base: tab, Disp: tH + 16}, true))
		JMP(LabelRef("chunk"))
		Label("drain")
		ghash512(gin, Mem{Base: tab, Disp: tH + 16}, false)
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

// storeTag writes the tag in X0 for Seal, or for Open its difference from the received tag to the
// descriptor's y (see gcmDesc.tag), and moves on to the next descriptor.
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
	VZEROUPPER()
	RET()
}

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
	// hptr = &h[17-nb] or &h[16-nb].
	LEAQ(Mem{Base: n, Disp: 15}, tmp)
	SHRQ(U8(4), tmp)
	SHLQ(U8(4), tmp)
	LEAQ(Mem{Base: tab, Disp: tH + 17*16}, hptr)
	SUBQ(tmp, hptr)
	if withLens {
		skip := label("no_lens")
		CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
		JE(LabelRef(skip))
		SUBQ(U8(16), hptr)
		Label(skip)
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
	VMOVDQU64(Mem{Base: desc, Disp: dLens}, X20)
	VPCLMULQDQ(U8(0x00), h1, X20, X11)
	VPCLMULQDQ(U8(0x11), h1, X20, X12)
	VPSHUFD(U8(0x4e), X20, X13)
	VPXORQ(X20, X13, X13)
	VPCLMULQDQ(U8(0x00), karatsuba(h1), X13, X13)
	VPXORQ(Z11, Z8, Z8)
	VPXORQ(Z12, Z9, Z9)
	VPXORQ(Z13, Z10, Z10)
	Label(skip)
}

// reduce512 sums the four lanes of the accumulators and reduces into X15.
func reduce512() {
	for _, step := range reduce512Steps() {
		step()
	}
}

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

// montgomery reduces the 256-bit product hi:lo to X15 = (hi:lo)·y^-128 mod P' (see the file comment):
// two folds of the low quadword by the constant in k (either quadword), each a quadword swap.
func montgomery(lo, hi, t VecPhysical, k Op) {
	for _, step := range montgomerySteps(lo, hi, t, k) {
		step()
	}
}

func montgomerySteps(lo, hi, t VecPhysical, k Op) []func() {
	return []func(){
		func() { VPCLMULQDQ(U8(0x00), k, lo, t) },
		func() { VPSHUFD(U8(0x4e), lo, lo) },
		func() { VPXOR(t, lo, lo) },
		func() { VPCLMULQDQ(U8(0x00), k, lo, t) },
		func() { VPSHUFD(U8(0x4e), lo, lo) },
		func() { VPXOR(t, lo, lo) },
		func() { VPXOR(lo, hi, X15) },
	}
}

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
// time with a bounce buffer for the last partial block.
func avx2(name string, open, vaes bool) {
	Implement(name)
	Attributes(NOSPLIT)
	buf := AllocLocal(16)
	Load(Param("d"), desc)
	Load(Param("count"), count)
	VBROADCASTI128(bswapMask, Y10)

	Label("desc")
	TESTQ(count, count)
	JZ(LabelRef("done"))
	MOVQ(Mem{Base: desc, Disp: dTab}, tab)
	MOVQ(Mem{Base: tab, Disp: tNR}, nr)
	MOVQ(nr, last)
	SHLQ(U8(6), last)
	ADDQ(tab, last)
	VMOVDQU(Mem{Base: desc, Disp: dY}, X15)
	h8 := Mem{Base: tab, Disp: tH + 9*16} // H^8..H^1

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
	tailAD2(buf)

	Comment("Text: counter mode and GHASH of the ciphertext, 8 blocks per chunk.")
	MOVQ(Mem{Base: desc, Disp: dSrc}, src)
	MOVQ(Mem{Base: desc, Disp: dDst}, dst)
	MOVQ(Mem{Base: desc, Disp: dN}, n)
	if vaes {
		VBROADCASTI128(Mem{Base: desc, Disp: dCtr}, Y8)
		VPADDD(ctrInit, Y8, Y8)
		chunksVAES(open, h8)
	} else {
		VMOVDQU(Mem{Base: desc, Disp: dCtr}, X8)
		chunksAESNI(open, h8)
	}

	Label("text_tail")
	VMOVDQU(X8, Mem{Base: desc, Disp: dCtr})
	TESTQ(n, n)
	JZ(LabelRef("no_tail"))
	tailText2(buf, open, vaes)
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
	accumulate2(X0, Mem{Base: tab, Disp: tH + 16*16})
	reduce2(false)

	finishDescriptors(X10, open)
}

// chunksAESNI emits the AES-NI chunk loop: eight xmm blocks per chunk. Open hashes the ciphertext
// after the AES rounds (the two are independent); Seal is software-pipelined like the wider kernels,
// but with eight xmm of key stream there is no room to keep the previous ciphertext in registers:
// its GHASH reads it back from dst, one block at a time through X9.
func chunksAESNI(open bool, h8 Mem) {
	counters := func() {
		for _, b := range blocks {
			VPSHUFB(X10, X8, b)
			VPADDD(ctrOne, X8, X8)
		}
	}
	if open {
		Label("chunk")
		CMPQ(n, U8(128))
		JB(LabelRef("text_tail"))
		counters()
		aesRounds(blocks)
		for i, b := range blocks {
			VMOVDQU(Mem{Base: src, Disp: 16 * i}, X14)
			VPXOR(X14, b, b)
			VMOVDQU(b, Mem{Base: dst, Disp: 16 * i})
			VPSHUFB(X10, X14, b)
		}
		ghash2(blocks, h8)
		advance2()
		JMP(LabelRef("chunk"))
		return
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
	previous := func() []func() {
		steps := []func(){}
		for i := range blocks {
			steps = append(steps,
				func() { VMOVDQU(Mem{Base: dst, Disp: 16*i - 128}, X9) },
				func() { VPSHUFB(X10, X9, X9) })
			if i == 0 {
				steps = append(steps, func() { VPXOR(X15, X9, X9) })
			}
			steps = append(steps, productSteps(X9, h8.Offset(16*i), i == 0)...)
		}
		return append(steps, reduce2Steps(false)...)
	}
	CMPQ(n, U8(128))
	JB(LabelRef("text_tail"))
	chunk(nil)
	Label("chunk")
	CMPQ(n, U8(128))
	JB(LabelRef("drain"))
	chunk(previous())
	JMP(LabelRef("chunk"))
	Label("drain")
	for _, step := range previous() {
		step()
	}
}

// chunksVAES emits the VAES chunk loop: four ymm of two blocks per chunk; Seal is software-pipelined
// as on AVX512 (the GHASH of the previous chunk, waiting in Y4-Y7, runs between the AES rounds).
func chunksVAES(open bool, h8 Mem) {
	counters := func() {
		for _, k := range ksY {
			VPSHUFB(Y10, Y8, k)
			VPADDD(ctrAdd2, Y8, Y8)
		}
	}
	if open {
		Label("chunk")
		CMPQ(n, U8(128))
		JB(LabelRef("text_tail"))
		counters()
		aesRounds(ksY)
		for j := range ksY {
			VMOVDQU(Mem{Base: src, Disp: 32 * j}, ginY[j])
			VPXOR(ginY[j], ksY[j], ksY[j])
			VMOVDQU(ksY[j], Mem{Base: dst, Disp: 32 * j})
			VPSHUFB(Y10, ginY[j], ginY[j])
		}
		ghash2(ginY, h8)
		advance2()
		JMP(LabelRef("chunk"))
		return
	}
	chunk := func(ghash []func()) {
		counters()
		aesRounds(ksY, ghash...)
		for j := range ksY {
			VPXOR(Mem{Base: src, Disp: 32 * j}, ksY[j], ksY[j])
			VMOVDQU(ksY[j], Mem{Base: dst, Disp: 32 * j})
			VPSHUFB(Y10, ksY[j], ginY[j])
		}
		advance2()
	}
	CMPQ(n, U8(128))
	JB(LabelRef("text_tail"))
	chunk(nil)
	Label("chunk")
	CMPQ(n, U8(128))
	JB(LabelRef("drain"))
	chunk(ghash2Steps(ginY, h8))
	JMP(LabelRef("chunk"))
	Label("drain")
	ghash2(ginY, h8)
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

// ghash2Steps returns ghash2's instructions one by one (see ghash512Steps).
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

// reduce2 folds the middle product into X11:X12 (ymm: then sums the two lanes) and reduces into X15.
func reduce2(ymm bool) {
	for _, step := range reduce2Steps(ymm) {
		step()
	}
}

func reduce2Steps(ymm bool) []func() {
	steps := []func(){
		func() { VPXOR(X11, X13, X13) }, // Karatsuba: middle += low + high
		func() { VPXOR(X12, X13, X13) },
		func() { VPSLLDQ(U8(8), X13, X14) },
		func() { VPSRLDQ(U8(8), X13, X13) },
		func() { VPXOR(X14, X11, X11) },
		func() { VPXOR(X13, X12, X12) },
	}
	if ymm {
		steps = []func(){
			func() { VPXOR(Y11, Y13, Y13) },
			func() { VPXOR(Y12, Y13, Y13) },
			func() { VPSLLDQ(U8(8), Y13, Y14) },
			func() { VPSRLDQ(U8(8), Y13, Y13) },
			func() { VPXOR(Y14, Y11, Y11) },
			func() { VPXOR(Y13, Y12, Y12) },
			func() { VEXTRACTI128(U8(1), Y11, X13) },
			func() { VEXTRACTI128(U8(1), Y12, X14) },
			func() { VPXOR(X13, X11, X11) },
			func() { VPXOR(X14, X12, X12) },
		}
	}
	return append(steps, montgomerySteps(X11, X12, X14, polyK)...)
}

// tailAD2 emits the GHASH of the last 0..127 bytes of AD at src (n bytes): whole blocks one at a
// time, then a partial block zero-padded (section 6.4's 0^v padding) through the bounce buffer buf,
// the products summed and reduced once.
func tailAD2(buf Mem) {
	out := label("tail_out")
	TESTQ(n, n)
	JZ(LabelRef(out))
	tailStart2(false)
	loop, partial, reduce := label("tail_block"), label("tail_partial"), label("tail_reduce")
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
	JZ(LabelRef(reduce))
	loadPartial(buf, X1)
	wipe(buf)
	VPSHUFB(X10, X1, X1)
	accumulate2(X1, Mem{Base: hptr})
	Label(reduce)
	reduce2(false)
	Label(out)
}

// tailStart2 points hptr at the powers of H for the nb = ceil(n/16) blocks of a tail (one further
// when withLens and the descriptor has a tag: the length block then takes H^1), puts Y in X9 to be
// added to the first block and clears the accumulators.
func tailStart2(withLens bool) {
	LEAQ(Mem{Base: n, Disp: 15}, tmp)
	SHRQ(U8(4), tmp)
	SHLQ(U8(4), tmp)
	LEAQ(Mem{Base: tab, Disp: tH + 17*16}, hptr)
	SUBQ(tmp, hptr)
	if withLens {
		skip := label("no_lens")
		CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
		JE(LabelRef(skip))
		SUBQ(U8(16), hptr)
		Label(skip)
	}
	VMOVDQU(X15, X9)
	VPXOR(X11, X11, X11)
	VPXOR(X12, X12, X12)
	VPXOR(X13, X13, X13)
}

// loadPartial loads the last n (1..15) bytes at src into r, zero-padded, through buf.
func loadPartial(buf Mem, r VecPhysical) {
	VPXOR(r, r, r)
	VMOVDQU(r, buf)
	copyBytes(buf, Mem{Base: src})
	VMOVDQU(buf, r)
}

// wipe clears the bounce buffer, which held text or key stream.
func wipe(buf Mem) {
	VPXOR(X14, X14, X14)
	VMOVDQU(X14, buf)
}

// tailText2 emits the text tail of 1..127 bytes (n): the key stream of all its blocks at once (4
// blocks when n <= 64, else 8; VAES: two or four ymm, whose upper lanes go to X4-X7), so that the
// blocks' AES rounds overlap, then each whole block and the partial one (through the bounce buffer
// buf), their products summed with the length block's (when the descriptor has a tag) and reduced
// once.
func tailText2(buf Mem, open, vaes bool) {
	tailStart2(true)
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
			aesRounds(blocks[:m])
			return
		}
		for _, k := range ksY[:m/2] {
			VPSHUFB(Y10, Y8, k)
			VPADDD(ctrAdd2, Y8, Y8)
		}
		aesRounds(ksY[:m/2])
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
	loadPartial(buf, X1)
	VPXOR(X1, X0, X0)
	VMOVDQU(X0, buf)
	copyBytes(Mem{Base: dst}, buf)
	wipe(buf)
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
	accumulate2(X1, Mem{Base: tab, Disp: tH + 16*16})
	Label(skip)
	reduce2(false)
}

// copyBytes copies n (1..15) bytes from from to to, a byte at a time.
func copyBytes(to, from Mem) {
	loop := label("copy")
	XORQ(tmp2, tmp2)
	Label(loop)
	MOVB(from.Idx(tmp2, 1), tmp.As8())
	MOVB(tmp.As8(), to.Idx(tmp2, 1))
	INCQ(tmp2)
	CMPQ(tmp2, n)
	JB(LabelRef(loop))
}
