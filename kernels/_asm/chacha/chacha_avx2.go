// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ChaCha20 on AVX2: the 16 lanes of chachaXOR16AVX512 run as two groups of 8 lanes, one ymm per state word
// (rows[w][8g:8g+8] for group g).
//
// A quarter round (RFC 8439 section 2.1) is a chain of four steps of two to four dependent
// instructions; on cores whose AVX2 integer instructions have a latency of 2 cycles (AMD Zen 5, the
// cores this kernel is for; see kernels/cpu_amd64.go's ymmLatency2) one round of one group is a
// 28-cycle chain however its four quarter rounds are interleaved, while the vector pipes could
// issue it in 16. Both groups' rounds therefore run together: eight independent chains, group 1 a
// few instructions behind group 0 (avx2GroupSkew). Their 32 words do not fit in 16 registers, so
// only the b words (4-7) stay in registers; every chain holds the value it computed last in one
// more register, and writes each a, c and d word it computes to the word's spill row, from where
// the next step that reads it again takes it as a memory operand. That read is at least two steps
// after the store (10 cycles or more: RFC 8439's step order puts a use of another word in between),
// so it never waits for the store to forward. Rotations by 16 and 8 are byte shuffles (VPSHUFB,
// masks in memory), by 12 and 7 two shifts and an OR. What bounds the kernel is that instruction
// mix on eight chains with its spills: shifts and byte shuffles issue at half the rate of adds and
// XORs, and a third group would add independent chains but leave all 48 words in memory, b too,
// whose traffic costs more than the chains gain (tools/pipeprobe times both with loops of the same
// instructions).

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

// avx2GroupSkew is how many instructions per chain group 1's double rounds trail group 0's in
// program order (avx2DoubleRounds). With the two groups in lockstep, every stretch of the
// instruction stream is one kind of step of all eight chains (eight adds, then eight stores, ...,
// then sixteen shifts), which crowds one kind of pipe while the others idle; skewed, each stretch
// mixes two kinds. Three is the fastest skew of those measured (BenchmarkChaCha20Kernels/AVX2;
// docs/experiments.md). A kernel with scalar steps hooked into its rounds keeps the groups in
// lockstep, which measured faster with the hooks.
const avx2GroupSkew = 3

// avx2DoubleRounds runs the ten double rounds (RFC 8439 section 2.3) on one or two groups, in a
// loop labelled loop. b[g][i] holds word 4+i of group g; slot(g, w) is the spill row of any other
// word. A quarter round is 22 instructions per chain, in two halves of 11: a += b (a to s, the
// chain's one register besides b), its store, d ^= a, d <<<= 16 or 8, its store; c += d, its store,
// b ^= c, and b <<<= 12 or 7 through s. The four chains of a group run interleaved instruction by
// instruction, and without hook group 1 trails group 0 by avx2GroupSkew instructions, across the
// column and diagonal rounds alike (group 1's rounds never read group 0's words). hook, if not nil,
// is called at 8 points of the double round, numbered 0 to 7: after group 0's store of d and after
// its rotation of b in each half, to emit scalar work there.
func avx2DoubleRounds(b [][4]VecVirtual, slot func(g, w int) Mem, loop string, hook func(k int)) {
	Comment("Ten double rounds (RFC 8439 section 2.3).")
	r := GP32()
	MOVL(U32(10), r)
	Label(loop)
	rounds := [2][4][4]int{ // (a, b, c, d) of each chain: columns, then diagonals
		{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}},
		{{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}},
	}
	const steps = 2 * 2 * 11 // per chain and double round
	var s [2][4]VecVirtual
	emit := func(g, j, t int) { // instruction t of chain j of group g
		w := rounds[t/22][j]
		a, bw, c, d := w[0], b[g][w[1]-4], w[2], w[3]
		rot := [2][2]int{{16, 12}, {8, 7}}[t%22/11]
		x := &s[g][j]
		switch t % 11 {
		case 0:
			*x = YMM()
			VPADDD(slot(g, a), bw, *x)
		case 1:
			VMOVDQU(*x, slot(g, a))
		case 2:
			VPXOR(slot(g, d), *x, *x)
		case 3:
			mask := rotMasks
			if rot[0] == 8 {
				mask = rotMasks.Offset(32)
			}
			VPSHUFB(mask, *x, *x)
		case 4:
			VMOVDQU(*x, slot(g, d))
		case 5:
			VPADDD(slot(g, c), *x, *x)
		case 6:
			VMOVDQU(*x, slot(g, c))
		case 7:
			VPXOR(*x, bw, bw)
		case 8:
			VPSLLD(U8(rot[1]), bw, *x)
		case 9:
			VPSRLD(U8(32-rot[1]), bw, bw)
		case 10:
			VPOR(*x, bw, bw)
		}
	}
	skew := 0
	if len(b) == 2 && hook == nil {
		skew = avx2GroupSkew
	}
	k := 0
	for at := range steps + skew {
		for g := range b {
			if t := at - g*skew; t >= 0 && t < steps {
				for j := range 4 {
					emit(g, j, t)
				}
			}
		}
		if hook != nil && at < steps && (at%11 == 4 || at%11 == 10) {
			hook(k)
			k++
		}
	}
	DECL(r)
	JNZ(LabelRef(loop))
}

// chachaXOR16AVX2 generates chachaXOR16AVX2, chachaXOR16AVX512 on AVX2.
func chachaXOR16AVX2() {
	name := "chachaXOR16AVX2"
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name + " is chachaXOR16AVX512 on AVX2 (same arguments, same result).")
	rows, n, stride, off := laneKernelStart()

	Label(name + "block")
	slot := func(g, w int) Mem { return group8Slot(rows, g, w) }
	row := func(g, w int) Mem { return group8Row(rows, g, w) }
	var b [2][4]VecVirtual
	for g := range 2 {
		for w := range 16 {
			if w >= 4 && w < 8 {
				b[g][w-4] = YMM()
				VMOVDQU(row(g, w), b[g][w-4])
				continue
			}
			t := YMM()
			VMOVDQU(row(g, w), t)
			VMOVDQU(t, slot(g, w))
		}
	}
	avx2DoubleRounds(b[:], slot, name+"rounds", nil)
	for g := range 2 {
		Commentf("Group %d: lanes %d to %d.", g, 8*g, 8*g+7)
		Comment("Add the initial state (section 2.3); every word goes to its slot.")
		for w := range 16 {
			x := YMM()
			if w >= 4 && w < 8 {
				x = b[g][w-4]
			} else {
				VMOVDQU(slot(g, w), x)
			}
			VPADDD(row(g, w), x, x)
			VMOVDQU(x, slot(g, w))
		}
		xorGroup8(rows, g, off)
	}
	ADDQ(stride, off)
	DECQ(n)
	JNZ(LabelRef(name + "block"))
	VZEROUPPER()
	RET()
}

// group8Row and group8Slot are the addresses of state word w of lane group g (lanes 8g..8g+7) in the
// lane kernels' table rows: its row (the initial state) and its spill slot.
func group8Row(rows Mem, g, w int) Mem  { return rows.Offset(64*w + 32*g) }
func group8Slot(rows Mem, g, w int) Mem { return rows.Offset(tabSpill + 64*w + 32*g) }

// xorGroup8 ends a pass of lane group g, whose words (the initial state added) wait in their slots:
// it advances the group's block counters by their increments (row 16) and XORs the eight key-stream
// blocks, transposed, into the lanes' messages at off.
func xorGroup8(rows Mem, g int, off GPVirtual) {
	c := YMM()
	VMOVDQU(group8Row(rows, g, 12), c)
	VPADDD(group8Row(rows, g, 16), c, c)
	VMOVDQU(c, group8Row(rows, g, 12))
	transpose8(func(w int) Op { return group8Slot(rows, g, w) }, func(l, at int, ks VecVirtual) {
		xorHalf(rows, 8*g+l, off, at, ks)
	})
}

// macRest ends a one-message MAC kernel (name): it absorbs the MAC blocks its passes left, from p up
// to the address end holds, into h0, h1, h2 (polyBlock64, with r from the mac argument), and stores
// the accumulator in mac's h.
func macRest(name string, p Register, end Mem, h0, h1, h2 GPVirtual) {
	Comment("The blocks the passes left.")
	macBlocksBelow(name+"rest", name+"done", h0, h1, h2, p, end, macArgR)
	h := Mem{Base: Load(Param("mac"), GP64())}
	MOVQ(h0, h.Offset(16))
	MOVQ(h1, h.Offset(24))
	MOVQ(h2, h.Offset(32))
}

// macArgR returns r0 and r1 of the mac argument (poly1305.r0, r1) as memory operands.
func macArgR() (Op, Op) {
	r := Mem{Base: Load(Param("mac"), GP64())}
	return r, r.Offset(8)
}

// macBlockBelow absorbs the 16-byte block at p into h0, h1, h2 (polyBlock64, with the r0, r1 that
// r returns) and advances p, unless p has reached end; skip labels its end.
func macBlockBelow(skip string, h0, h1, h2 GPVirtual, p Register, end Op, r func() (r0, r1 Op)) {
	CMPQ(p, end)
	JAE(LabelRef(skip))
	r0, r1 := r()
	polyBlock64(h0, h1, h2, Mem{Base: p}, r0, r1)
	ADDQ(U8(16), p)
	Label(skip)
}

// macBlocksBelow absorbs the 16-byte blocks from p up to end into h0, h1, h2 (polyBlock64, with
// the r0, r1 that r returns), in a loop labelled loop that leaves for done, which it labels.
func macBlocksBelow(loop, done string, h0, h1, h2 GPVirtual, p Register, end Op, r func() (r0, r1 Op)) {
	Label(loop)
	CMPQ(p, end)
	JAE(LabelRef(done))
	r0, r1 := r()
	polyBlock64(h0, h1, h2, Mem{Base: p}, r0, r1)
	ADDQ(U8(16), p)
	JMP(LabelRef(loop))
	Label(done)
}

// polyBlock64 absorbs the 16-byte block m into the radix-2^64 Poly1305 accumulator h0, h1, h2 with
// the clamped multiplier r0, r1 (in memory or registers): h = (h + m + 2^128) * r, partially reduced mod 2^130-5
// (RFC 8439 section 2.5.1), as poly1305.blocks in kernels/poly1305_generic.go, whose bounds hold
// here. MULX leaves the flags alone, so the four products come first and the additions carry in one
// pass. Clobbers RDX.
func polyBlock64(h0, h1, h2 GPVirtual, m Mem, r0, r1 Op) {
	ADDQ(m, h0)
	ADCQ(m.Offset(8), h1)
	ADCQ(U8(1), h2)

	Comment("t = h * r in four words t0..t3 (h2 <= 7 and r0, r1 < 2^60: every sum fits).")
	t0, t1, t2, t3, x := GP64(), GP64(), GP64(), GP64(), GP64()
	MOVQ(r0, RDX)
	MULXQ(h0, t0, t1) // h0*r0: words 0, 1
	MULXQ(h1, x, t2)  // h1*r0: words 1, 2
	ADDQ(x, t1)
	ADCQ(U8(0), t2)
	MOVQ(r1, RDX)
	MULXQ(h1, x, t3) // h1*r1: words 2, 3
	ADDQ(x, t2)
	ADCQ(U8(0), t3)
	MULXQ(h0, x, h0) // h0*r1: words 1, 2
	ADDQ(x, t1)
	ADCQ(h0, t2)
	ADCQ(U8(0), t3)
	MOVQ(h2, x)
	IMULQ(RDX, x) // h2*r1: word 3
	ADDQ(x, t3)
	IMULQ(r0, h2) // h2*r0: word 2
	ADDQ(h2, t2)
	ADCQ(U8(0), t3)

	Comment("2^130 = 5 mod p: c = t >> 130 comes back as 4c + c; 4c is t2:t3 with bits 0-1 cleared.")
	MOVQ(t2, h2)
	ANDQ(U8(3), h2)
	ANDQ(I8(-4), t2)
	ADDQ(t2, t0)
	ADCQ(t3, t1)
	ADCQ(U8(0), h2)
	SHRQ(U8(2), t3, t2)
	SHRQ(U8(2), t3)
	ADDQ(t2, t0)
	ADCQ(t3, t1)
	ADCQ(U8(0), h2)
	MOVQ(t0, h0)
	MOVQ(t1, h1)
}

// transpose8 turns the state words of 8 lanes, word w at word(w) (a register or memory), into the
// lanes' key-stream blocks and hands each 32-byte half to out: lane l's bytes at..at+31.
func transpose8(word func(w int) Op, out func(l, at int, ks VecVirtual)) {
	Comment("Transpose words 0-7, then 8-15, of the 8 lanes.")
	for h := range 2 {
		var t, u [8]VecVirtual
		for k := 0; k < 8; k += 2 {
			a, ok := word(8*h + k).(VecVirtual)
			if !ok {
				a = YMM()
				VMOVDQU(word(8*h+k), a)
			}
			t[k], t[k+1] = unpackDwords(a, word(8*h+k+1), YMMv)
		}
		// u[4k+a] holds words 4k..4k+3 of lane a in its low half and of lane 4+a in its high half.
		for k := 0; k < 8; k += 4 {
			*(*[4]VecVirtual)(u[k:]) = unpackQwords([4]VecVirtual(t[k:k+4]), YMMv)
		}
		for a := range 4 {
			lo, hi := YMM(), YMM()
			VPERM2I128(U8(0x20), u[4+a], u[a], lo) // low halves: lane a
			VPERM2I128(U8(0x31), u[4+a], u[a], hi) // high halves: lane 4+a
			out(a, 32*h, lo)
			out(4+a, 32*h, hi)
		}
	}
}

// xorHalf XORs 32 key-stream bytes ks into lane l's block at byte off+at of its addresses.
func xorHalf(tab Mem, l int, off GPVirtual, at int, ks VecVirtual) {
	src, dst := GP64(), GP64()
	MOVQ(tab.Offset(tabSrcAddr+8*l), src)
	MOVQ(tab.Offset(tabDstAddr+8*l), dst)
	VPXOR(Mem{Base: src, Index: off, Scale: 1, Disp: at}, ks, ks)
	VMOVDQU(ks, Mem{Base: dst, Index: off, Scale: 1, Disp: at})
}

// chachaOneAVX2 generates the single-message ChaCha20 passes of the AVX2 tier: 8 (one group) or 16
// (two groups) consecutive blocks of one message per pass, one per lane, the state words broadcast
// from st. Their spilled words live in stack slots (12 per group; the b words stay in registers)
// and the lanes' block counters are rebuilt from the counter, which keeps the frame of the two-group
// kernel within what a NOSPLIT function may use. One group's rounds are a chain of dependent steps
// (see the top of the file) that leaves the vector pipes half idle: the 8-block pass is for the
// last blocks of a message.
//
// With mac, the kernel (chachaXOR8OneMACAVX2; the generator can make the 16-block one too) also
// absorbs a run of 16-byte blocks into a radix-2^64 Poly1305 accumulator on the scalar pipes, which
// the rounds leave idle: one block at each of the 8 points of a double round (avx2DoubleRounds'
// hook) while blocks remain, so up to 80 per pass, and the blocks left after the last pass in a
// loop of their own (with n = 0 it is a scalar Poly1305). A single message's MAC is one chain of
// dependent blocks, some 16 cycles each, which the passes hide only in part
// (BenchmarkChaChaOneMACAVX2 times it): that pays where a message's MAC would otherwise run after
// its last pass (chachaStitchedOpAVX2), not against the 8-lane vector MAC of longer messages. The
// accumulator and the block pointer stay in registers, so the pass state (dst, src, n, counter)
// moves to the frame.
func chachaOneAVX2(groups int, mac bool) {
	blocks := 8 * groups
	name := fmt.Sprintf("chachaXOR%dOneAVX2", blocks)
	if mac {
		name = fmt.Sprintf("chachaXOR%dOneMACAVX2", blocks)
	}
	Implement(name)
	Attributes(NOSPLIT)
	if mac {
		Doc(name+fmt.Sprintf(" is chachaXOR%dOneAVX2 (n may also be 0) that also absorbs the", blocks),
			"macBlocks 16-byte blocks at msg into mac's accumulator (poly1305.blocks), stitched into its",
			"rounds. msg must not overlap the bytes the call writes.")
	} else {
		Doc(name+" XORs the n bytes at src with the key stream of state st (RFC 8439 section 2.3)",
			"from block counter st[12] on, into dst (src and dst may be equal). st is not updated. n is a",
			fmt.Sprintf("multiple of %d, 0 < n <= 64 KiB.", 64*blocks))
	}
	slots := AllocLocal(groups * 12 * 32)
	slot := func(g, w int) Mem { // the words other than b (4-7)
		if w >= 8 {
			w -= 4
		}
		return slots.Offset(32 * (12*g + w))
	}

	// The pass state: in registers without mac, in the frame with it (reloaded where used).
	var st Mem
	var ctr Op
	var dstAt, srcAt func() Register
	var step func(k int)
	var dstOp, srcOp, nOp Op // where dst, src and n live between passes
	var h0, h1, h2 GPVirtual
	var p Register
	var end Mem
	if !mac {
		st = Mem{Base: Load(Param("st"), GP64())}
		dst := Load(Param("dst"), GP64())
		src := Load(Param("src"), GP64())
		n := Load(Param("n"), GP64())
		c := GP32()
		MOVL(st.Offset(4*12), c)
		ctr = c
		dstAt = func() Register { return dst }
		srcAt = func() Register { return src }
		dstOp, srcOp, nOp = dst, src, n
	} else {
		// dst, src and n advance in their argument slots; the counter and the end of the MAC
		// blocks take the slots of msg and macBlocks once read, so that the frame stays the
		// slots' (a NOSPLIT frame has at most about 800 bytes).
		dstM, srcM, nM := paramAddr("dst"), paramAddr("src"), paramAddr("n")
		h0, h1, h2, p, end = macStart()
		ctrM := paramAddr("msg") // the counter in its low 32 bits: a 64-bit add keeps them right
		c := GP32()
		MOVL(Mem{Base: Load(Param("st"), GP64())}.Offset(4*12), c)
		MOVQ(c.As64(), ctrM)
		ctr = ctrM
		dstAt = func() Register { r := GP64(); MOVQ(dstM, r); return r }
		srcAt = func() Register { r := GP64(); MOVQ(srcM, r); return r }
		step = func(k int) { macStep(k, fmt.Sprintf("%smac%d", name, k), h0, h1, h2, p, end) }
		dstOp, srcOp, nOp = dstM, srcM, nM
		CMPQ(nM, U8(0))
		JE(LabelRef(name + "rest"))
	}

	Label(name + "pass")
	if mac {
		st = Mem{Base: Load(Param("st"), GP64())}
	}
	b := make([][4]VecVirtual, groups)
	initial := func(g, w int, x VecVirtual) { // word w of group g's initial state
		if w != 12 {
			VPBROADCASTD(st.Offset(4*w), x)
			return
		}
		if r, ok := ctr.(GPVirtual); ok {
			c := XMM()
			MOVD(r, c)
			VPBROADCASTD(c, x)
		} else {
			VPBROADCASTD(ctr, x)
		}
		VPADDD(iota16.Offset(32*g), x, x) // lane l of group g: block 8g+l of the pass
	}
	for g := range groups {
		for w := range 16 {
			if w >= 4 && w < 8 {
				b[g][w-4] = YMM()
				initial(g, w, b[g][w-4])
				continue
			}
			t := YMM()
			initial(g, w, t)
			VMOVDQU(t, slot(g, w))
		}
	}
	avx2DoubleRounds(b, slot, name+"rounds", step)
	if mac {
		st = Mem{Base: Load(Param("st"), GP64())}
	}
	dst, src := dstAt(), srcAt()
	for g := range groups {
		Commentf("Group %d: blocks %d to %d of the pass.", g, 8*g, 8*g+7)
		Comment("Add the initial state (section 2.3): the b words in their registers, the others in",
			"their slots.")
		word := func(w int) Op {
			if w >= 4 && w < 8 {
				return b[g][w-4]
			}
			return slot(g, w)
		}
		for w := range 16 {
			x, in := YMM(), YMM()
			if w >= 4 && w < 8 {
				x = b[g][w-4]
			} else {
				VMOVDQU(slot(g, w), x)
			}
			initial(g, w, in)
			VPADDD(in, x, x)
			if w < 4 || w >= 8 {
				VMOVDQU(x, slot(g, w))
			}
		}
		transpose8(word, func(l, at int, ks VecVirtual) {
			VPXOR(Mem{Base: src, Disp: 64*(8*g+l) + at}, ks, ks)
			VMOVDQU(ks, Mem{Base: dst, Disp: 64*(8*g+l) + at})
		})
	}
	if c, ok := ctr.(GPVirtual); ok {
		ADDL(U32(uint32(blocks)), c)
	} else {
		ADDQ(U32(uint32(blocks)), ctr)
	}
	ADDQ(U32(uint32(64*blocks)), srcOp)
	ADDQ(U32(uint32(64*blocks)), dstOp)
	SUBQ(U32(uint32(64*blocks)), nOp)
	JNZ(LabelRef(name + "pass"))
	wipeLocal(slots, groups*12*32, wipeVEX)
	VZEROUPPER()
	if mac {
		macRest(name, p, end, h0, h1, h2)
	}
	RET()
}

// chachaKS4AVX2 is chachaKS4AVX512 on AVX2: the rows of the state hold two blocks each, one per 128-bit
// half, and two such states (blocks 0-1 and 2-3) go through the rounds side by side; the diagonal
// round is the column round after rotating the words of rows 0, 2 and 3 within their halves.
func chachaKS4AVX2() {
	Implement("chachaKS4AVX2")
	Attributes(NOSPLIT)
	Doc("chachaKS4AVX2 writes the 4 key-stream blocks from block counter st[12] on to out.")
	st := Mem{Base: Load(Param("st"), GP64())}
	out := Mem{Base: Load(Param("out"), GP64())}
	rot16, rot8 := YMM(), YMM()
	VMOVDQU(rotMasks, rot16)
	VMOVDQU(rotMasks.Offset(32), rot8)
	initial := func(s, i int, x VecVirtual) { // row i of state s: blocks 2s and 2s+1
		VBROADCASTI128(st.Offset(16*i), x)
		if i == 3 {
			VPADDD(rowCounters.Offset(32*s), x, x)
		}
	}
	var x [2][4]VecVirtual
	for s := range x {
		for i := range x[s] {
			x[s][i] = YMM()
			initial(s, i, x[s][i])
		}
	}
	rowDoubleRounds(x[:], rot16, rot8, "ks4avx2doubleround", nil)
	for s := range x {
		for i := range x[s] {
			in := YMM()
			initial(s, i, in)
			VPADDD(in, x[s][i], x[s][i])
			VMOVDQU(x[s][i].AsX(), out.Offset(128*s+16*i))
			VEXTRACTI128(U8(1), x[s][i], out.Offset(128*s+64+16*i))
		}
	}
	VZEROUPPER()
	RET()
}

// chachaKS2Scalar computes two ChaCha20 blocks with scalar instructions, one after the other. Where a
// scalar add, XOR or rotate has a latency of 1 cycle against 2 for AVX2 (AMD Zen 5), a round's
// quarter-round chains take less than half as long, so for a message within block 1 two scalar
// blocks cost less than chachaKS4AVX2's four. The blocks run one after the other rather than in
// turns: the out-of-order core overlaps the second block with the first one's tail anyway.
//
// Words 0-7 and 12-15 stay in registers; the c words (8-11) take turns in two registers, the pair a
// half round does not use waiting in stack slots (swapped once per half round, half a round before
// they are needed), which leaves one register for the loop counter.
func chachaKS2Scalar() {
	Implement("chachaKS2Scalar")
	Attributes(NOSPLIT)
	Doc("chachaKS2Scalar writes the 2 key-stream blocks from block counter st[12] on to out (scalar code).")
	slots := AllocLocal(16 * 4)
	slot := func(w int) Mem { return slots.Offset(4 * w) }
	for blk := range 2 {
		var x [16]GPVirtual
		st := Mem{Base: Load(Param("st"), GP64())}
		for _, w := range []int{10, 11} {
			t := GP32()
			MOVL(st.Offset(4*w), t)
			MOVL(t, slot(w))
		}
		for w := range 16 {
			if w == 10 || w == 11 {
				continue
			}
			x[w] = GP32()
			MOVL(st.Offset(4*w), x[w])
		}
		x[10], x[11] = x[8], x[9] // the c pair's registers; see swap
		if blk == 1 {
			INCL(x[12])
		}
		inReg := [2]int{8, 9} // the c words in x[8] and x[9]
		swap := func(in [2]int) {
			for i, w := range inReg {
				MOVL(x[8+i], slot(w))
			}
			for i, w := range in {
				MOVL(slot(w), x[8+i])
			}
			inReg = in
		}
		pair := func(cols [2][4]int) { // RFC 8439 section 2.1 on two columns, interleaved
			reg := func(w int) GPVirtual {
				if w >= 8 && w < 12 && w != inReg[0] {
					return x[9]
				}
				return x[w]
			}
			for _, rot := range [4][4]int{{0, 1, 3, 16}, {2, 3, 1, 12}, {0, 1, 3, 8}, {2, 3, 1, 7}} {
				for _, c := range cols {
					ADDL(reg(c[rot[1]]), reg(c[rot[0]]))
				}
				for _, c := range cols {
					XORL(reg(c[rot[0]]), reg(c[rot[2]]))
				}
				for _, c := range cols {
					ROLL(U8(rot[3]), reg(c[rot[2]]))
				}
			}
		}
		r := GP32()
		MOVL(U32(10), r)
		loop := fmt.Sprintf("ks2doubleround%d", blk)
		Label(loop)
		pair([2][4]int{{0, 4, 8, 12}, {1, 5, 9, 13}})
		swap([2]int{10, 11})
		pair([2][4]int{{2, 6, 10, 14}, {3, 7, 11, 15}})
		pair([2][4]int{{0, 5, 10, 15}, {1, 6, 11, 12}})
		swap([2]int{8, 9})
		pair([2][4]int{{2, 7, 8, 13}, {3, 4, 9, 14}})
		DECL(r)
		JNZ(LabelRef(loop))

		Comment("Add the initial state (section 2.3) on the way out, every word through its slot.")
		for w := range 16 {
			if w != 10 && w != 11 {
				MOVL(x[w], slot(w))
			}
		}
		st = Mem{Base: Load(Param("st"), GP64())}
		out := Mem{Base: Load(Param("out"), GP64())}
		for w := range 16 {
			t := GP32()
			MOVL(slot(w), t)
			ADDL(st.Offset(4*w), t)
			if blk == 1 && w == 12 {
				INCL(t)
			}
			MOVL(t, out.Offset(64*blk+4*w))
		}
	}
	wipeLocal(slots, 16*4, wipeScalar)
	RET()
}

// rowDoubleRounds runs the 10 double rounds (RFC 8439 section 2.3) on states in the row form of
// chachaKS4AVX2, the states side by side: each row holds its word of two blocks, one per 128-bit half.
// The diagonal round is the column round after rotating the words of rows 0, 2 and 3 within their
// halves. rot16 and rot8 are the VPSHUFB masks (rotMasks), in registers or memory; nil for VPROLD
// (AVX-512VL), one instruction of one cycle for every rotation, which shortens each quarter round's
// chain of dependent steps by two cycles. hook, if not nil, is called after each of the double
// round's two quarter rounds and after its first shuffle (points 0 to 2).
func rowDoubleRounds(x [][4]VecVirtual, rot16, rot8 Op, loop string, hook func(k int)) {
	rowDoubleRoundsSkewed(x, rot16, rot8, loop, hook, 0)
}

// rowDoubleRoundsSkewed is rowDoubleRounds with each state's instructions skew steps behind the
// state before it in program order, where a step is a quarter round's add, XOR and rotation of one
// row, or a shuffle of the rows; hook's points are the first state's. Each state is one chain of
// dependent steps, and a core that binds instructions to ports as it issues them (Intel) loses
// cycles on chains in lockstep that skewed ones avoid: three states with skew 1, the fused
// three-op pipeline's 64 x 64 B 1.88x / 1.91x -> 1.93x / 1.94x x/crypto, seal / open, on Intel
// Xeon family 6 model 167 with AVX-512 hidden (docs/experiments.md, 2026-12-08).
func rowDoubleRoundsSkewed(x [][4]VecVirtual, rot16, rot8 Op, loop string, hook func(k int), skew int) {
	rotate := func(r VecVirtual, n int) {
		switch {
		case rot16 == nil:
			VPROLD(U8(n), r, r)
		case n == 16:
			VPSHUFB(rot16, r, r)
		case n == 8:
			VPSHUFB(rot8, r, r)
		default:
			t := YMM()
			VPSLLD(U8(n), r, t)
			VPSRLD(U8(32-n), r, r)
			VPOR(t, r, r)
		}
	}
	xor := func(a, d VecVirtual) { // d ^= a; with VPROLD, EVEX (any of 32 registers)
		if rot16 == nil {
			VPXORD(a, d, d)
		} else {
			VPXOR(a, d, d)
		}
	}
	// steps returns one state's double round, step by step: each quarter round (section 2.1 on the
	// four columns of each block) in four steps, each followed by a shuffle of rows 0, 2 and 3.
	steps := func(st [4]VecVirtual) []func() {
		a, b, c, d := st[0], st[1], st[2], st[3]
		var steps []func()
		for _, shuf := range [2][3]uint8{{0x93, 0x39, 0x4e}, {0x39, 0x93, 0x4e}} {
			for _, rot := range [2][2]int{{16, 12}, {8, 7}} {
				steps = append(steps,
					func() { VPADDD(b, a, a); xor(a, d); rotate(d, rot[0]) },
					func() { VPADDD(d, c, c); xor(c, b); rotate(b, rot[1]) })
			}
			steps = append(steps, func() {
				VPSHUFD(U8(shuf[0]), a, a)
				VPSHUFD(U8(shuf[1]), c, c)
				VPSHUFD(U8(shuf[2]), d, d)
			})
		}
		return steps
	}
	states := make([][]func(), len(x))
	for s := range x {
		states[s] = steps(x[s])
	}
	// The points after the first state's first quarter round, its shuffle, and its second quarter
	// round.
	points := map[int]int{3: 0, 4: 1, 8: 2}
	r := GP32()
	MOVL(U32(10), r)
	Label(loop)
	n := len(states[0])
	for t := range n + skew*(len(x)-1) {
		for s := range x {
			if i := t - s*skew; i >= 0 && i < n {
				if s == 0 && i == 4 {
					Comment("Diagonals to columns, as in chachaKS4AVX512.")
				}
				states[s][i]()
			}
		}
		if k, ok := points[t]; ok && hook != nil {
			hook(k)
		}
	}
	DECL(r)
	JNZ(LabelRef(loop))
}

// hchacha20AVX2 derives XChaCha20 subkeys (draft-irtf-cfrg-xchacha section 2.2): the ChaCha20 rounds
// over states in chachaKS4AVX2's row form, each in the low halves of four ymm registers, and rows 0
// and 3 out without the final addition. The keys and the states stay in registers; nothing secret
// touches the stack. One state's rounds are one chain of dependent steps that leaves most of the
// vector pipes idle, so hchacha20x3AVX2 runs three interleaved, in about 1.4 times one's time (Zen 3).
func hchacha20AVX2(states int) {
	name := "hchacha20AVX2"
	if states > 1 {
		name = fmt.Sprintf("hchacha20x%dAVX2", states)
	}
	Implement(name)
	Attributes(NOSPLIT)
	x := make([][4]VecVirtual, states)
	var out Mem
	if states == 1 {
		Doc(name+" writes the HChaCha20 subkey of key and nonce to out: words 0-3 and 12-15 of the",
			"ChaCha20 state after its 20 rounds.")
		out = Mem{Base: Load(Param("out"), GP64())}
		hchachaState(&x[0], Mem{Base: Load(Param("key"), GP64())}, Mem{Base: Load(Param("nonce"), GP64())})
	} else {
		Doc(name+fmt.Sprintf(" writes the HChaCha20 subkeys of keys[i] and nonces[i] to out[i], i < %d:", states),
			"words 0-3 and 12-15 of each ChaCha20 state after its 20 rounds.")
		out = Mem{Base: Load(Param("out"), GP64())}
		keys, nonces := Load(Param("keys"), GP64()), Load(Param("nonces"), GP64())
		for i := range x {
			key, nonce := GP64(), GP64()
			MOVQ(Mem{Base: keys, Disp: 8 * i}, key)
			MOVQ(Mem{Base: nonces, Disp: 8 * i}, nonce)
			hchachaState(&x[i], Mem{Base: key}, Mem{Base: nonce})
		}
	}
	// The rotation masks in registers where they fit beside the states, else memory operands.
	var rot16, rot8 Op = rotMasks, rotMasks.Offset(32)
	if states == 1 {
		r16, r8 := YMM(), YMM()
		VMOVDQU(rotMasks, r16)
		VMOVDQU(rotMasks.Offset(32), r8)
		rot16, rot8 = r16, r8
	}
	rowDoubleRounds(x, rot16, rot8, name+"doubleround", nil)
	for i := range x {
		VMOVDQU(x[i][0].AsX(), out.Offset(32*i))
		VMOVDQU(x[i][3].AsX(), out.Offset(32*i+16))
	}
	VZEROUPPER()
	RET()
}

// hchachaState loads HChaCha20's initial state of key and nonce into the low halves of x.
func hchachaState(x *[4]VecVirtual, key, nonce Mem) {
	for i := range x {
		x[i] = YMM()
	}
	VMOVDQU(chachaSigma, x[0].AsX())
	VMOVDQU(key, x[1].AsX())
	VMOVDQU(key.Offset(16), x[2].AsX())
	VMOVDQU(nonce, x[3].AsX())
}

// chachaHeads generates chachaHeadsAVX2 (prold false) or chachaHeadsAVX512, which write the first
// 16 bytes of the ChaCha20 blocks of one key (QUIC's ChaCha20 header-protection masks, RFC 9001
// section 5.4.4): words 0-3 of each block, whose state's last row is the input (block counter, then
// nonce). A block's rounds are one chain of dependent steps, so the states run in chachaKS4AVX2's
// row form, two to a register set (one per 128-bit half, at one state's latency), and up to three
// sets interleaved, in about 1.4 times one set's time (Zen 3; hchacha20AVX2). Each pass takes up to
// six inputs: one set for up to two, two for up to four, three for more. A pass short of its sets'
// inputs repeats its last one, whose block is then written twice, the same bytes; a pass reads all
// its inputs before it writes, so out may be in. chachaHeadsAVX512 rotates with AVX-512VL's VPROLD
// (rowDoubleRounds), still on ymm.
func chachaHeads(prold bool) {
	kernel := "chachaHeadsAVX2"
	if prold {
		kernel = "chachaHeadsAVX512"
	}
	Implement(kernel)
	Attributes(NOSPLIT)
	Doc(kernel + " writes the first 16 bytes of the ChaCha20 block of key and in[i] to out[i], i < n.")
	out, key := Load(Param("out"), GP64()), Load(Param("key"), GP64())
	in, n := Load(Param("in"), GP64()), Load(Param("n"), GP64())
	pass := func(sets int) {
		name := fmt.Sprintf("%sx%d", kernel, sets)
		Label(name)
		last := GP64() // the pass's last input, as a byte offset: min(n, 2*sets) - 1, times 16
		MOVQ(n, last)
		DECQ(last)
		SHLQ(U8(4), last)
		offset := func(j int) GPVirtual { // input j's byte offset, clamped to last
			r := GP64()
			MOVQ(U32(16*j), r)
			CMPQ(last, r)
			CMOVQLT(last, r)
			return r
		}
		x := make([][4]VecVirtual, sets)
		for s := range x {
			for i := range x[s] {
				x[s][i] = YMM()
			}
			VBROADCASTI128(chachaSigma, x[s][0])
			VBROADCASTI128(Mem{Base: key}, x[s][1])
			VBROADCASTI128(Mem{Base: key, Disp: 16}, x[s][2])
			VMOVDQU(Mem{Base: in, Index: offset(2 * s), Scale: 1}, x[s][3].AsX())
			VINSERTI128(U8(1), Mem{Base: in, Index: offset(2*s + 1), Scale: 1}, x[s][3], x[s][3])
		}
		// The rotation masks in registers where they fit beside the states, as in hchacha20AVX2.
		var rot16, rot8 Op = rotMasks, rotMasks.Offset(32)
		if prold {
			rot16, rot8 = nil, nil
		} else if sets < 3 {
			r16, r8 := YMM(), YMM()
			VMOVDQU(rotMasks, r16)
			VMOVDQU(rotMasks.Offset(32), r8)
			rot16, rot8 = r16, r8
		}
		rowDoubleRounds(x, rot16, rot8, name+"doubleround", nil)
		Comment("Words 0-3 plus the constants (section 2.3), each half to its output.")
		for s := range x {
			sigma := YMM()
			VBROADCASTI128(chachaSigma, sigma)
			VPADDD(sigma, x[s][0], x[s][0])
			VMOVDQU(x[s][0].AsX(), Mem{Base: out, Index: offset(2 * s), Scale: 1})
			VEXTRACTI128(U8(1), x[s][0], Mem{Base: out, Index: offset(2*s + 1), Scale: 1})
		}
	}
	Comment("n >= 1. Passes of six while more than four remain, then one pass for the rest.")
	Label(kernel + "loop")
	CMPQ(n, U8(4))
	JA(LabelRef(kernel + "x3"))
	CMPQ(n, U8(2))
	JA(LabelRef(kernel + "x2"))
	pass(1)
	JMP(LabelRef(kernel + "done"))
	pass(2)
	JMP(LabelRef(kernel + "done"))
	pass(3)
	ADDQ(U8(6*16), in)
	ADDQ(U8(6*16), out)
	SUBQ(U8(6), n)
	JG(LabelRef(kernel + "loop"))
	Label(kernel + "done")
	VZEROUPPER()
	RET()
}

// xorBytesAVX2 is the single-message paths' XOR of a message with its key stream from a buffer:
// 128 bytes a step on ymm, then 32, 8 and 1. Each step loads its bytes of a before it stores those
// of dst, so dst may equal a (in place); the bytes past n are neither read nor written.
func xorBytesAVX2() {
	Implement("xorBytesAVX2")
	Attributes(NOSPLIT)
	Doc("xorBytesAVX2 writes the n bytes at a XOR the n bytes at b to dst (dst may equal a), 0 <= n <= 64 KiB.")
	dst := Load(Param("dst"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	n := Load(Param("n"), GP64())
	// step emits a loop that XORs size bytes at a time while at least size are left, then falls
	// through to the next step.
	step := func(size int, xor func()) {
		label := fmt.Sprintf("xorBytesAVX2by%d", size)
		Label(label)
		CMPQ(n, U32(uint32(size)))
		JB(LabelRef(label + "done"))
		xor()
		for _, r := range []Register{dst, a, b} {
			ADDQ(U32(uint32(size)), r)
		}
		SUBQ(U32(uint32(size)), n)
		JMP(LabelRef(label))
		Label(label + "done")
	}
	ymm := func(k int) func() {
		return func() {
			y := make([]VecVirtual, k)
			for i := range y {
				y[i] = YMM()
				VMOVDQU(Mem{Base: a, Disp: 32 * i}, y[i])
				VPXOR(Mem{Base: b, Disp: 32 * i}, y[i], y[i])
			}
			for i := range y {
				VMOVDQU(y[i], Mem{Base: dst, Disp: 32 * i})
			}
		}
	}
	step(128, ymm(4))
	step(32, ymm(1))
	step(8, func() {
		w := GP64()
		MOVQ(Mem{Base: a}, w)
		XORQ(Mem{Base: b}, w)
		MOVQ(w, Mem{Base: dst})
	})
	step(1, func() {
		c := GP8()
		MOVB(Mem{Base: a}, c)
		XORB(Mem{Base: b}, c)
		MOVB(c, Mem{Base: dst})
	})
	VZEROUPPER()
	RET()
}
