package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ChaCha20 on AVX2: the 16 lanes of chachaXOR16 run as two groups of 8 lanes, one ymm per state word
// (rows[w][8g:8g+8] for group g). AVX2 has 16 vector registers: the 16 state words and the temporary
// that a rotation by 12 or 7 needs do not fit, so one state word at a time waits in a stack slot.

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

// avx2State tracks where each state word of one group lives: in a register or in its stack slot.
type avx2State struct {
	reg   [16]VecVirtual
	inMem [16]bool
	slots Mem
}

// ensure makes the words of need available in registers, with at most 15 words in registers in all
// (leaving one for a rotation's temporary), by moving other words to their stack slots.
func (s *avx2State) ensure(need ...int) {
	want := map[int]bool{}
	for _, w := range need {
		want[w] = true
	}
	inRegs := 0
	for w := range 16 {
		if !s.inMem[w] {
			inRegs++
		}
	}
	missing := 0
	for _, w := range need {
		if s.inMem[w] {
			missing++
		}
	}
	for w := 15; w >= 0 && inRegs+missing > 15; w-- {
		if !s.inMem[w] && !want[w] {
			VMOVDQU(s.reg[w], s.slots.Offset(32*w))
			s.inMem[w] = true
			inRegs--
		}
	}
	for _, w := range need {
		if s.inMem[w] {
			s.reg[w] = YMM()
			VMOVDQU(s.slots.Offset(32*w), s.reg[w])
			s.inMem[w] = false
		}
	}
}

// quarterRounds4 runs the four quarter rounds (RFC 8439 section 2.1) of a column or diagonal round,
// interleaved step by step so that four independent chains are in flight. Each step needs at most
// eight words; the sixteenth word, when a step needs it, trades places with one the step does not
// need. The temporaries of the rotations by 12 and 7 share a register in turn: the core renames it,
// so the four rotations still run in parallel.
func (s *avx2State) quarterRounds4(cols [4][4]int) {
	x := &s.reg
	step := func(a, b, d int, rot int) {
		var need []int
		for _, c := range cols {
			need = append(need, c[a], c[b])
		}
		s.ensure(need...)
		for _, c := range cols {
			VPADDD(x[c[b]], x[c[a]], x[c[a]])
		}
		need = need[:0]
		for _, c := range cols {
			need = append(need, c[a], c[d])
		}
		s.ensure(need...)
		for _, c := range cols {
			VPXOR(x[c[a]], x[c[d]], x[c[d]])
		}
		for _, c := range cols {
			y := x[c[d]]
			switch rot {
			case 16:
				VPSHUFB(rotMasks, y, y)
			case 8:
				VPSHUFB(rotMasks.Offset(32), y, y)
			default:
				t := YMM()
				VPSLLD(U8(rot), y, t)
				VPSRLD(U8(32-rot), y, y)
				VPOR(t, y, y)
			}
		}
	}
	step(0, 1, 3, 16)
	step(2, 3, 1, 12)
	step(0, 1, 3, 8)
	step(2, 3, 1, 7)
}

func chachaXOR16AVX2() {
	Implement("chachaXOR16AVX2")
	Attributes(NOSPLIT)
	Doc("chachaXOR16AVX2 is chachaXOR16 on AVX2 (same arguments, same result).")
	rows := Mem{Base: Load(Param("tab"), GP64())}
	lanes := Mem{Base: Load(Param("lanes"), GP64())}
	n := Load(Param("n"), GP64())
	stride := Load(Param("stride"), GP64())
	slots := AllocLocal(16 * 32)
	laneAddresses(rows, lanes)
	off := GP64()
	XORQ(off, off)

	Label("block")
	for g := range 2 {
		Commentf("Group %d: lanes %d to %d.", g, 8*g, 8*g+7)
		row := func(w int) Mem { return rows.Offset(64*w + 32*g) }
		s := &avx2State{slots: slots}
		for w := range 16 {
			if w < 15 {
				s.reg[w] = YMM()
				VMOVDQU(row(w), s.reg[w])
				continue
			}
			t := YMM()
			VMOVDQU(row(w), t)
			VMOVDQU(t, slots.Offset(32*w))
			s.inMem[w] = true
		}
		Comment("Ten double rounds, unrolled: where each word lives changes from round to round.")
		for range 10 {
			s.quarterRounds4([4][4]int{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}})
			s.quarterRounds4([4][4]int{{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}})
		}
		Comment("Add the initial state (section 2.3); every word goes to its slot.")
		for w := range 16 {
			s.ensure(w)
			VPADDD(row(w), s.reg[w], s.reg[w])
			VMOVDQU(s.reg[w], slots.Offset(32*w))
			s.inMem[w] = true
		}
		c := YMM()
		VMOVDQU(row(12), c)
		VPADDD(row(16), c, c)
		VMOVDQU(c, row(12))

		Comment("Transpose words 0-7, then 8-15, of the 8 lanes and XOR them into each lane's block.")
		for h := range 2 {
			word := func(i int) Mem { return slots.Offset(32 * (8*h + i)) }
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
				xorHalf(rows, 8*g+a, off, 32*h, lo)
				xorHalf(rows, 8*g+4+a, off, 32*h, hi)
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
