// Command checksum generates internal/tunoffload's assembly: the Internet checksum's word sum
// (RFC 1071) over AVX2 registers. Run it through go generate in internal/tunoffload.
//
// The one's-complement sum of 16-bit words equals their plain sum taken modulo 2^16-1 (RFC 1071
// section 2(D), deferred carries), so the kernel adds words as integers and leaves folding to the
// caller. Each 32-byte load is split into the low and the high halves of its eight dwords, which are
// added to 32-bit lanes: no carry leaves a lane for 65,536 loads of it, so a call covers at most
// 1 MiB (8,192 iterations of 128 bytes, four loads each into their own accumulator pair, then
// 32-byte loads into the first pair). Loads are little-endian, so each word is byte-swapped; the
// caller swaps the sum back (section 2(B)).
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	Package("github.com/wirebatch/wirebatch/internal/tunoffload")
	ConstraintExpr("!purego")

	Implement("sumAVX2")
	Attributes(NOSPLIT)
	Doc("sumAVX2 returns the sum, as integers, of the little-endian 16-bit words of b. len(b) is a",
		"multiple of 32 and at most 1 MiB.")
	p := Load(Param("b").Base(), GP64())
	n := Load(Param("b").Len(), GP64())

	low := YMM() // 0x0000ffff in each dword
	VPCMPEQD(low, low, low)
	VPSRLD(U8(16), low, low)
	var acc [8]VecVirtual
	for i := range acc {
		acc[i] = YMM()
		VPXOR(acc[i], acc[i], acc[i])
	}

	// add adds the 32 bytes at m to the accumulator pair lo (low halves) and hi (high halves).
	add := func(m Mem, lo, hi VecVirtual) {
		v, t := YMM(), YMM()
		VMOVDQU(m, v)
		VPAND(low, v, t)
		VPADDD(t, lo, lo)
		VPSRLD(U8(16), v, v)
		VPADDD(v, hi, hi)
	}

	Comment("Per 128 bytes: four loads, each word added to the lane of its dword's low or high half.")
	Label("loop")
	CMPQ(n, U32(128))
	JB(LabelRef("tail"))
	for k := range 4 {
		add(Mem{Base: p, Disp: 32 * k}, acc[2*k], acc[2*k+1])
	}
	ADDQ(U32(128), p)
	SUBQ(U32(128), n)
	JMP(LabelRef("loop"))

	Comment("The last 32-byte loads, into the first accumulator pair.")
	Label("tail")
	CMPQ(n, U32(32))
	JB(LabelRef("reduce"))
	add(Mem{Base: p}, acc[0], acc[1])
	ADDQ(U32(32), p)
	SUBQ(U32(32), n)
	JMP(LabelRef("tail"))

	Comment("Widen the 32-bit lanes to 64 bits, add them up and return the sum.")
	Label("reduce")
	lowq := YMM() // 0x00000000ffffffff in each qword
	VPCMPEQD(lowq, lowq, lowq)
	VPSRLQ(U8(32), lowq, lowq)
	total := YMM()
	VPXOR(total, total, total)
	for _, a := range acc {
		t := YMM()
		VPAND(lowq, a, t)
		VPADDQ(t, total, total)
		VPSRLQ(U8(32), a, a)
		VPADDQ(a, total, total)
	}
	half := XMM()
	VEXTRACTI128(U8(1), total, half)
	VPADDQ(total.AsX(), half, half)
	s, t := GP64(), GP64()
	VMOVQ(half, s)
	VPEXTRQ(U8(1), half, t)
	ADDQ(t, s)
	VZEROUPPER()
	Store(s, ReturnIndex(0))
	RET()

	Generate()
}
