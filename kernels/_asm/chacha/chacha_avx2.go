package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ChaCha20 on AVX2: the 16 lanes of chachaXOR16 run as two groups of 8 lanes, one ymm per state word
// (rows[w][8g:8g+8] for group g).
//
// A quarter round (RFC 8439 section 2.1) is a chain of four steps, each two or three dependent
// instructions; on the Zen 5 we tune on, every AVX2 integer instruction has a latency of 2 cycles,
// so a round of one group takes 28 cycles however many of its four quarter rounds run side by
// side, while the vector pipes could issue it in 16. The two groups therefore run their rounds
// interleaved. Their 32 words do not fit in 16 registers, so each group runs a round as two pairs of
// quarter rounds ("halves", avx2Halves) and keeps in registers only the b, c and d words of its
// current pair (6 registers; 2 more for the pair's rotation temporaries or sums). The a words live
// in the table's spill rows: a step that updates a adds b to it as a memory operand and stores the
// sum, and the next read of that a is two steps later, after the store has reached the load.
// The other words move between registers and the spill rows when a group changes pairs; group 1
// runs half a round behind group 0, so that the two groups do not wait for those reloads at the
// same time. Rotations by 16 and 8 are byte shuffles (VPSHUFB, masks in memory), by 12 and 7 two
// shifts and an OR.

// rotMasks holds the VPSHUFB masks that rotate each 32-bit word left by 16 and by 8 bits.
var rotMasks Mem

func rotTables() {
	rotMasks = GLOBL("chachaRotMasks", RODATA|NOPTR)
	for i := range 8 { // rotate by 16: bytes 2, 3, 0, 1 of each word
		DATA(4*i, U32(0x01000302+0x04040404*uint32(i%4)))
	}
	for i := range 8 { // rotate by 8: bytes 3, 0, 1, 2
		DATA(32+4*i, U32(0x02010003+0x04040404*uint32(i%4)))
	}
}

// avx2Group tracks where the state words of one group of 8 lanes live during the rounds: in a
// register (x[w]) or in the group's spill rows of the table (slot(w)).
type avx2Group struct {
	x     [16]VecVirtual
	inReg [16]bool
	slot  func(w int) Mem
}

// keep moves the group's words to registers exactly when they are in words.
func (g *avx2Group) keep(words []int) {
	var want [16]bool
	for _, w := range words {
		want[w] = true
	}
	for w := range 16 {
		if g.inReg[w] && !want[w] {
			VMOVDQU(g.x[w], g.slot(w))
			g.inReg[w] = false
		}
	}
	for _, w := range words {
		if !g.inReg[w] {
			VMOVDQU(g.slot(w), g.x[w])
			g.inReg[w] = true
		}
	}
}

// pairWords returns the words that stay in registers during the quarter rounds on cols: b, c and d.
func pairWords(cols [2][4]int) []int {
	var words []int
	for _, c := range cols {
		words = append(words, c[1], c[2], c[3])
	}
	return words
}

// quarterRoundPairs runs RFC 8439 section 2.1's quarter round on the pair of columns
// avx2Halves[half[j]] of each group gs[j], the chains of all groups interleaved step by step.
func quarterRoundPairs(gs []*avx2Group, half []int) {
	for j, g := range gs {
		g.keep(pairWords(avx2Halves[half[j]]))
	}
	// step: p += q; r ^= p; r <<<= rot. A p in its slot (an a word) is a memory operand: the sum goes
	// to a new register and back to the slot.
	step := func(p, q, r int, rot int) {
		var sum [2][2]VecVirtual
		for j, g := range gs {
			for i, c := range avx2Halves[half[j]] {
				if g.inReg[c[p]] {
					sum[j][i] = g.x[c[p]]
					VPADDD(g.x[c[q]], sum[j][i], sum[j][i])
					continue
				}
				sum[j][i] = YMM()
				VPADDD(g.slot(c[p]), g.x[c[q]], sum[j][i])
			}
		}
		for j, g := range gs {
			for i, c := range avx2Halves[half[j]] {
				VPXOR(sum[j][i], g.x[c[r]], g.x[c[r]])
				if !g.inReg[c[p]] {
					VMOVDQU(sum[j][i], g.slot(c[p]))
				}
			}
		}
		switch rot {
		case 16, 8:
			mask := rotMasks
			if rot == 8 {
				mask = rotMasks.Offset(32)
			}
			for j, g := range gs {
				for _, c := range avx2Halves[half[j]] {
					VPSHUFB(mask, g.x[c[r]], g.x[c[r]])
				}
			}
		default:
			var t [2][2]VecVirtual
			for j, g := range gs {
				for i, c := range avx2Halves[half[j]] {
					t[j][i] = YMM()
					VPSLLD(U8(rot), g.x[c[r]], t[j][i])
				}
			}
			for j, g := range gs {
				for _, c := range avx2Halves[half[j]] {
					VPSRLD(U8(32-rot), g.x[c[r]], g.x[c[r]])
				}
			}
			for j, g := range gs {
				for i, c := range avx2Halves[half[j]] {
					VPOR(t[j][i], g.x[c[r]], g.x[c[r]])
				}
			}
		}
	}
	step(0, 1, 3, 16) // a += b; d ^= a; d <<<= 16
	step(2, 3, 1, 12) // c += d; b ^= c; b <<<= 12
	step(0, 1, 3, 8)  // a += b; d ^= a; d <<<= 8
	step(2, 3, 1, 7)  // c += d; b ^= c; b <<<= 7
}

// avx2Halves are the pairs of quarter rounds of a double round (RFC 8439 section 2.3).
var avx2Halves = [4][2][4]int{
	{{0, 4, 8, 12}, {1, 5, 9, 13}}, {{2, 6, 10, 14}, {3, 7, 11, 15}}, // columns
	{{0, 5, 10, 15}, {1, 6, 11, 12}}, {{2, 7, 8, 13}, {3, 4, 9, 14}}, // diagonals
}

// avx2DoubleRounds runs the ten double rounds (RFC 8439 section 2.3) on the states of the two groups
// gs, in a loop labelled loop, group 1 one pair of quarter rounds behind group 0. On entry and on
// return the words of the last pair, avx2Halves[3], are in registers.
func avx2DoubleRounds(gs []*avx2Group, loop string) {
	Comment("Group 1 runs one pair of quarter rounds behind group 0.")
	quarterRoundPairs(gs[:1], []int{0})
	r := GP32()
	MOVL(U32(9), r)
	Label(loop)
	for h := 1; h <= 4; h++ {
		quarterRoundPairs(gs, []int{h % 4, h - 1})
	}
	DECL(r)
	JNZ(LabelRef(loop))
	for h := 1; h < 4; h++ {
		quarterRoundPairs(gs, []int{h % 4, h - 1})
	}
	quarterRoundPairs(gs[1:], []int{3})
}

func chachaXOR16AVX2() {
	Implement("chachaXOR16AVX2")
	Attributes(NOSPLIT)
	Doc("chachaXOR16AVX2 is chachaXOR16 on AVX2 (same arguments, same result).")
	rows := Mem{Base: Load(Param("tab"), GP64())}
	lanes := Mem{Base: Load(Param("lanes"), GP64())}
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	laneAddresses(rows, lanes)
	off := GP64()
	XORQ(off, off)

	Label("block")
	var gs [2]*avx2Group
	for gi := range gs {
		g := &avx2Group{slot: func(w int) Mem { return rows.Offset(tabSpill + 64*w + 32*gi) }}
		gs[gi] = g
		row := func(w int) Mem { return rows.Offset(64*w + 32*gi) }
		for w := range 16 {
			g.x[w] = YMM()
			VMOVDQU(row(w), g.x[w])
			VMOVDQU(g.x[w], g.slot(w))
		}
		g.keep(pairWords(avx2Halves[3]))
	}
	avx2DoubleRounds(gs[:], "avx2rounds")
	for gi, g := range gs {
		Commentf("Group %d: lanes %d to %d.", gi, 8*gi, 8*gi+7)
		row := func(w int) Mem { return rows.Offset(64*w + 32*gi) }
		Comment("Add the initial state (section 2.3); every word goes to its slot.")
		for w := range 16 {
			if !g.inReg[w] {
				VMOVDQU(g.slot(w), g.x[w])
			}
			VPADDD(row(w), g.x[w], g.x[w])
			VMOVDQU(g.x[w], g.slot(w))
		}
		c := YMM()
		VMOVDQU(row(12), c)
		VPADDD(row(16), c, c)
		VMOVDQU(c, row(12))

		Comment("Transpose words 0-7, then 8-15, of the 8 lanes and XOR them into each lane's block.")
		for h := range 2 {
			word := func(i int) Mem { return g.slot(8*h + i) }
			var t, u [8]VecVirtual
			for k := 0; k < 8; k += 2 {
				a := YMM()
				VMOVDQU(word(k), a)
				t[k], t[k+1] = YMM(), YMM()
				VPUNPCKLDQ(word(k+1), a, t[k])
				VPUNPCKHDQ(word(k+1), a, t[k+1])
			}
			// u[4k+a] holds words 4k..4k+3 of lane a in its low half and of lane 4+a in its high half.
			for k := 0; k < 8; k += 4 {
				for a := range 4 {
					u[k+a] = YMM()
				}
				VPUNPCKLQDQ(t[k+2], t[k], u[k])
				VPUNPCKHQDQ(t[k+2], t[k], u[k+1])
				VPUNPCKLQDQ(t[k+3], t[k+1], u[k+2])
				VPUNPCKHQDQ(t[k+3], t[k+1], u[k+3])
			}
			for a := range 4 {
				lo, hi := YMM(), YMM()
				VPERM2I128(U8(0x20), u[4+a], u[a], lo) // low halves: lane a
				VPERM2I128(U8(0x31), u[4+a], u[a], hi) // high halves: lane 4+a
				xorHalf(rows, 8*gi+a, off, 32*h, lo)
				xorHalf(rows, 8*gi+4+a, off, 32*h, hi)
			}
		}
	}
	ADDQ(stride, off)
	DECQ(n)
	JNZ(LabelRef("block"))
	VZEROUPPER()
	RET()
}

// xorHalf XORs 32 key-stream bytes ks into lane l's block at byte off+at of its addresses.
func xorHalf(tab Mem, l int, off GPVirtual, at int, ks VecVirtual) {
	src, dst := GP64(), GP64()
	MOVQ(tab.Offset(tabSrcAddr+8*l), src)
	MOVQ(tab.Offset(tabDstAddr+8*l), dst)
	VPXOR(Mem{Base: src, Index: off, Scale: 1, Disp: at}, ks, ks)
	VMOVDQU(ks, Mem{Base: dst, Index: off, Scale: 1, Disp: at})
}
