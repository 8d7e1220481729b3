package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ChaCha20 on AVX2 for cores whose vector integer instructions have a 1-cycle latency (AMD Zen 2, 3
// and 4; Intel since Haswell). There one group of 8 lanes has enough independent work: a quarter
// round (RFC 8439 section 2.1) is a chain of 14 cycles, so its four chains issue 64 instructions in
// that time, more than the pipes take (about 3.2 adds or XORs, 2 shifts and 2 byte shuffles a
// cycle). What costs is memory traffic: the chains of the two-group kernel (chacha_avx2.go), built
// for a 2-cycle latency, store and reload their words every step, which on such a core halves the
// rate of the same instructions (internal/pipeprobe: 3.0 a cycle in registers, 1.9 with its
// spills). Here 15 of a group's 16 words live in registers for the whole ten double rounds; only
// word 0, which is an a word in the column and the diagonal rounds alike, lives in memory, read as
// the memory operand of its chain's additions and stored after each: two loads and two stores per
// round. The one register left is the chains' scratch, for word 0's sums and the shifts of the
// rotations by 12 and 7; register renaming lets consecutive chains reuse it without waiting.

// chachaXOR16AVX2Regs generates chachaXOR16AVX2Regs: chachaXOR16's contract on AVX2, lanes 0-7 and
// then lanes 8-15 of each block with their words in registers.
func chachaXOR16AVX2Regs() {
	name := "chachaXOR16AVX2Regs"
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" is chachaXOR16 on AVX2 (same arguments, same result) for cores with a 1-cycle",
		"vector integer latency: one group of 8 lanes at a time, in registers.")
	rows := Mem{Base: Load(Param("tab"), GP64())}
	lanes := Mem{Base: Load(Param("lanes"), GP64())}
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	laneAddresses(rows, lanes)
	off := GP64()
	XORQ(off, off)

	Label(name + "block")
	slot := func(g, w int) Mem { return rows.Offset(tabSpill + 64*w + 32*g) }
	row := func(g, w int) Mem { return rows.Offset(64*w + 32*g) }
	for g := range 2 {
		Commentf("Group %d: lanes %d to %d.", g, 8*g, 8*g+7)
		var x [16]VecVirtual
		a0 := slot(g, 0)
		t := YMM()
		VMOVDQU(row(g, 0), t)
		VMOVDQU(t, a0)
		for w := 1; w < 16; w++ {
			x[w] = YMM()
			VMOVDQU(row(g, w), x[w])
		}
		regsDoubleRounds(&x, a0, t, name+"rounds"+string(rune('0'+g)))
		Comment("Add the initial state (section 2.3); every word goes to its slot for the transpose.")
		VMOVDQU(a0, t)
		VPADDD(row(g, 0), t, t)
		VMOVDQU(t, a0)
		for w := 1; w < 16; w++ {
			VPADDD(row(g, w), x[w], x[w])
			VMOVDQU(x[w], slot(g, w))
		}
		c := YMM()
		VMOVDQU(row(g, 12), c)
		VPADDD(row(g, 16), c, c)
		VMOVDQU(c, row(g, 12))
		transpose8(func(w int) Op { return slot(g, w) }, func(l, at int, ks VecVirtual) {
			xorHalf(rows, 8*g+l, off, at, ks)
		})
	}
	ADDQ(stride, off)
	DECQ(n)
	JNZ(LabelRef(name + "block"))
	VZEROUPPER()
	RET()
}

// regsDoubleRounds runs the ten double rounds (RFC 8439 section 2.3) on one group: words 1-15 in
// x[1:], word 0 at a0, t the scratch register. Each step of the quarter round is emitted for the
// four chains together, so that consecutive instructions are independent.
func regsDoubleRounds(x *[16]VecVirtual, a0 Mem, t VecVirtual, loop string) {
	Comment("Ten double rounds (RFC 8439 section 2.3).")
	r := GP32()
	MOVL(U32(10), r)
	Label(loop)
	for _, chains := range [2][4][4]int{ // (a, b, c, d) of each chain: columns, then diagonals
		{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}},
		{{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}},
	} {
		for _, rot := range [2][2]int{{16, 12}, {8, 7}} {
			mask := rotMasks
			if rot[0] == 8 {
				mask = rotMasks.Offset(32)
			}
			// a += b; d ^= a; d <<<= 16 or 8. Word 0 is summed into t, stored, and XORed from t.
			for _, c := range chains {
				if c[0] == 0 {
					VPADDD(a0, x[c[1]], t)
				} else {
					VPADDD(x[c[1]], x[c[0]], x[c[0]])
				}
			}
			for _, c := range chains {
				if c[0] == 0 {
					VPXOR(t, x[c[3]], x[c[3]])
					VMOVDQU(t, a0)
				} else {
					VPXOR(x[c[0]], x[c[3]], x[c[3]])
				}
			}
			for _, c := range chains {
				VPSHUFB(mask, x[c[3]], x[c[3]])
			}
			// c += d; b ^= c; b <<<= 12 or 7 (two shifts and an OR through t).
			for _, c := range chains {
				VPADDD(x[c[3]], x[c[2]], x[c[2]])
			}
			for _, c := range chains {
				VPXOR(x[c[2]], x[c[1]], x[c[1]])
			}
			for _, c := range chains {
				VPSLLD(U8(rot[1]), x[c[1]], t)
				VPSRLD(U8(32-rot[1]), x[c[1]], x[c[1]])
				VPOR(t, x[c[1]], x[c[1]])
			}
		}
	}
	DECL(r)
	JNZ(LabelRef(loop))
}
