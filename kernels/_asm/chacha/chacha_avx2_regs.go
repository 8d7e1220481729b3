// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ChaCha20 on AVX2 for cores whose vector integer instructions have a 1-cycle latency (AMD Zen 2, 3
// and 4; Intel since Haswell): one group of 8 lanes at a time, in registers. 15 of a group's 16
// words live in registers for the whole ten double rounds; only word 0, an a word in the column and
// the diagonal rounds alike, lives in memory, read as the memory operand of its chain's additions
// and stored after each: two loads and two stores per round. The one register left is the chains'
// scratch, for word 0's sums and the shifts of the rotations by 12 and 7; register renaming lets
// consecutive chains reuse it without waiting. The groups of a call run one after the other.
//
// What bounds these kernels is the group's four quarter-round chains (RFC 8439 section 2.1): all
// four rotate at the same steps, where the two pipes that take shifts and byte shuffles hold each
// step up, so the rounds issue about 2.3-2.5 instructions a cycle, tools/pipeprobe's quarterRounds4
// rate (eight chains, quarterRounds8: about 3.3). A second group's chains would need its 16 words
// too, and the spills that 16 ymm registers then force cost about what the chains gain
// (quarterRounds8Spilled, about 2.2-2.5: the two-group kernels of chacha_avx2.go, built for a
// 2-cycle latency). Word 0 in memory costs nothing measurable: a build with every word in a
// register ran at the same speed (docs/experiments.md, 2026-12-03 fifth session and 2026-12-06
// thirteenth session).
//
// The rounds leave the scalar pipes idle. The single-message MAC kernel runs the message's Poly1305
// chain there, at three of the eight points of a double round (regsDoubleRounds' hook). The lane
// kernels do not: a block of another message's MAC stitched into their rounds slows them by more
// than the vector Poly1305 across lanes spends on a lane-block (docs/experiments.md).

// regsDoubleRounds runs the ten double rounds (RFC 8439 section 2.3) on one group: words 1-15 in
// x[1:], word 0 at a0, t the scratch register. The four chains of each round run interleaved step
// by step, in lockstep: each step is emitted for the four chains together, so consecutive
// instructions are independent, and a step that uses t (word 0's sum, a rotation by 12 or 7) is
// emitted whole, so t never holds two values at once. (Skewing the chains, as the two-group kernel
// skews its groups, would be wrong across the column/diagonal boundary, where the diagonal round
// reads other chains' words, and is slower within a half round.) hook, if not nil, is called at
// 8 points of the double round, numbered 0 to 7: after the rotations of d and of b in each half of
// the column and of the diagonal round.
func regsDoubleRounds(x *[16]VecVirtual, a0 Mem, t VecVirtual, loop string, hook func(k int)) {
	Comment("Ten double rounds (RFC 8439 section 2.3).")
	r := GP32()
	MOVL(U32(10), r)
	Label(loop)
	rounds := [2][4][4]int{ // (a, b, c, d) of each chain: columns, then diagonals
		{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}},
		{{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}},
	}
	const steps = 24         // per chain and double round: 6 per quarter of the quarter round
	emit := func(j, u int) { // step u of chain j
		c := rounds[u/12][j]
		a, b, cw, d := c[0], x[c[1]], x[c[2]], x[c[3]]
		rot := [2][2]int{{16, 12}, {8, 7}}[u%12/6]
		switch u % 6 {
		case 0: // a += b (word 0: into t, then d ^= a and the store)
			if a == 0 {
				VPADDD(a0, b, t)
				VPXOR(t, d, d)
				VMOVDQU(t, a0)
			} else {
				VPADDD(b, x[a], x[a])
			}
		case 1: // d ^= a
			if a != 0 {
				VPXOR(x[a], d, d)
			}
		case 2: // d <<<= 16 or 8
			mask := rotMasks
			if rot[0] == 8 {
				mask = rotMasks.Offset(32)
			}
			VPSHUFB(mask, d, d)
		case 3: // c += d
			VPADDD(d, cw, cw)
		case 4: // b ^= c
			VPXOR(cw, b, b)
		case 5: // b <<<= 12 or 7
			VPSLLD(U8(rot[1]), b, t)
			VPSRLD(U8(32-rot[1]), b, b)
			VPOR(t, b, b)
		}
	}
	k := 0
	for u := range steps {
		for j := range 4 {
			emit(j, u)
		}
		if u%3 == 2 { // the chains have rotated d or b
			if hook != nil {
				hook(k)
			}
			k++
		}
	}
	DECL(r)
	JNZ(LabelRef(loop))
}

// chachaLanesAVX2Regs generates the lane kernels: chachaXOR16AVX2Regs (chachaXOR16AVX512's contract on
// AVX2, lanes 0-7 and then 8-15 of each block) and chachaXOR8AVX2Regs (lanes 0-7 only, for calls
// whose lanes 8-15 are idle).
func chachaLanesAVX2Regs(groups int) {
	name := fmt.Sprintf("chachaXOR%dAVX2Regs", 8*groups)
	Implement(name)
	Attributes(NOSPLIT)
	if groups == 2 {
		Doc(name+" is chachaXOR16AVX512 on AVX2 (same arguments, same result, but no byte masks: every",
			"block is whole) for cores with a 1-cycle vector integer latency: one group of 8 lanes at a",
			"time, in registers.")
	} else {
		Doc(name + " is chachaXOR16AVX2Regs on lanes 0-7 only.")
	}
	rows, n, stride, off := laneKernelStart()

	Label(name + "block")
	lastApart(name, rows, n, off, groups)
	for g := range groups {
		regsGroup(rows, g, fmt.Sprintf("%srounds%d", name, g), nil)
		xorGroup8(rows, g, off)
	}
	ADDQ(stride, off)
	DECQ(n)
	JNZ(LabelRef(name + "block"))
	VZEROUPPER()
	RET()
}

// lastApart emits, at the top of a lane kernel's block loop (name's), the move of a call's last
// block to the lanes' last addresses (chachaPtrs16.lastSrc and lastDst, where hasLast and lastDst[l]
// are set) for the kernels without byte masks: before the last block (n, the blocks left, at 1),
// lane l's address rows become lastSrc[l] and lastDst[l] less the offset off that the block adds.
// The rows are the kernel's own, filled at each call's start. groups is 1 for lanes 0-7 only.
func lastApart(name string, rows Mem, n, off Op, groups int) {
	done := name + "lastdone"
	CMPQ(n, U8(1))
	JNE(LabelRef(done))
	lanes := Mem{Base: Load(Param("lanes"), GP64())}
	CMPQ(lanes.Offset(ptrsHasLast), U8(0))
	JE(LabelRef(done))
	Comment("The call's last block: the lanes with last addresses move there.")
	for l := range 8 * groups {
		skip := fmt.Sprintf("%slast%d", name, l)
		a := GP64()
		MOVQ(lanes.Offset(ptrsLastDst+8*l), a)
		TESTQ(a, a)
		JE(LabelRef(skip))
		SUBQ(off, a)
		MOVQ(a, rows.Offset(tabDstAddr+8*l))
		MOVQ(lanes.Offset(ptrsLastSrc+8*l), a)
		SUBQ(off, a)
		MOVQ(a, rows.Offset(tabSrcAddr+8*l))
		Label(skip)
	}
	Label(done)
}

// regsGroup runs the rounds of lane group g (lanes 8g to 8g+7) from its rows of tab at rows, hook
// as regsDoubleRounds', and leaves its words, the initial state added, in the group's slots for
// the transpose (xorGroup8).
func regsGroup(rows Mem, g int, loop string, hook func(k int)) {
	Commentf("Group %d: lanes %d to %d.", g, 8*g, 8*g+7)
	var x [16]VecVirtual
	a0 := group8Slot(rows, g, 0)
	t := YMM()
	VMOVDQU(group8Row(rows, g, 0), t)
	VMOVDQU(t, a0)
	for w := 1; w < 16; w++ {
		x[w] = YMM()
		VMOVDQU(group8Row(rows, g, w), x[w])
	}
	regsDoubleRounds(&x, a0, t, loop, hook)
	Comment("Add the initial state (section 2.3); every word goes to its slot for the transpose.")
	VMOVDQU(a0, t)
	VPADDD(group8Row(rows, g, 0), t, t)
	VMOVDQU(t, a0)
	for w := 1; w < 16; w++ {
		VPADDD(group8Row(rows, g, w), x[w], x[w])
		VMOVDQU(x[w], group8Slot(rows, g, w))
	}
}

// macStart begins a single-message MAC kernel's Poly1305 (RFC 8439 section 2.5): it loads the
// accumulator of mac (poly1305.h, after r0 and r1) into h0, h1 and h2 and msg into p, and stores
// the end of the macBlocks 16-byte blocks at msg in the argument slot of macBlocks, end, which the
// MAC steps (macStep) and macRest compare p against.
func macStart() (h0, h1, h2 GPVirtual, p Register, end Mem) {
	h := Mem{Base: Load(Param("mac"), GP64())}
	h0, h1, h2 = GP64(), GP64(), GP64()
	MOVQ(h.Offset(16), h0)
	MOVQ(h.Offset(24), h1)
	MOVQ(h.Offset(32), h2)
	p = Load(Param("msg"), GP64())
	e := Load(Param("macBlocks"), GP64())
	SHLQ(U8(4), e)
	ADDQ(p, e)
	end = paramAddr("macBlocks")
	MOVQ(e, end)
	return h0, h1, h2, p, end
}

// macStep emits MAC step k of a pass: the block at p absorbed into h0, h1, h2 (polyBlock64, with r
// from the mac argument) and p advanced, unless p has reached end; skip labels its end.
func macStep(k int, skip string, h0, h1, h2 GPVirtual, p Register, end Mem) {
	Commentf("MAC step %d: one block while blocks remain.", k)
	macBlockBelow(skip, h0, h1, h2, p, end, macArgR)
}

// paramAddr returns the address of the argument name in the caller's frame.
func paramAddr(name string) Mem {
	a, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return a.Addr
}

// macPoints are the points of a double round (regsDoubleRounds' hook) at which the single-message
// MAC kernel absorbs a block: its MAC is one chain of dependent blocks, some 19 cycles each on these
// cores, so about three fit in a double round (some 57 cycles); more stall the rounds behind the
// chain.
var macPoints = [8]bool{0: true, 3: true, 5: true}

func chachaOneAVX2Regs(groups int, mac bool) {
	blocks := 8 * groups
	name := fmt.Sprintf("chachaXOR%dOneAVX2Regs", blocks)
	if mac {
		name = fmt.Sprintf("chachaXOR%dOneMACAVX2Regs", blocks)
	}
	Implement(name)
	Attributes(NOSPLIT)
	if mac {
		Doc(name + fmt.Sprintf(" is chachaXOR%dOneMACAVX2 for cores with a 1-cycle vector latency.", blocks))
	} else {
		Doc(name+fmt.Sprintf(" is chachaXOR%dOneAVX2 for cores with a 1-cycle vector latency:", blocks),
			"the state in registers.")
	}
	slots := AllocLocal(16 * 32) // the words of a group for the transpose; word 0 during the rounds
	slot := func(w int) Mem { return slots.Offset(32 * w) }

	// The pass state lives in the frame (dst, src and n advance in their argument slots, the block
	// counter in a slot of its own, its low 32 bits the counter), so that the MAC steps have the
	// general registers.
	dstM, srcM, nM := paramAddr("dst"), paramAddr("src"), paramAddr("n")
	var h0, h1, h2 GPVirtual
	var p Register
	var end Mem
	var step func(k int)
	ctr := AllocLocal(8)
	c := GP32()
	MOVL(Mem{Base: Load(Param("st"), GP64())}.Offset(4*12), c)
	MOVQ(c.As64(), ctr)
	if mac {
		h0, h1, h2, p, end = macStart()
		step = func(k int) {
			if !macPoints[k] {
				return
			}
			labels++
			macStep(k, fmt.Sprintf("%smac%d_%d", name, k, labels), h0, h1, h2, p, end)
		}
		CMPQ(nM, U8(0))
		JE(LabelRef(name + "rest"))
	}

	Label(name + "pass")
	for g := range groups {
		Commentf("Group %d: blocks %d to %d of the pass.", g, 8*g, 8*g+7)
		initial := func(w int, x VecVirtual) { // word w of the group's initial state
			if w != 12 {
				VPBROADCASTD(Mem{Base: Load(Param("st"), GP64())}.Offset(4*w), x)
				return
			}
			VPBROADCASTD(ctr, x)
			VPADDD(iota16.Offset(32*g), x, x) // lane l: block 8g+l of the pass
		}
		var x [16]VecVirtual
		t := YMM()
		initial(0, t)
		VMOVDQU(t, slot(0))
		for w := 1; w < 16; w++ {
			x[w] = YMM()
			initial(w, x[w])
		}
		regsDoubleRounds(&x, slot(0), t, fmt.Sprintf("%srounds%d", name, g), step)
		Comment("Add the initial state (section 2.3); every word goes to its slot for the transpose.")
		for w := range 16 {
			in := YMM()
			initial(w, in)
			if w == 0 {
				VPADDD(slot(0), in, in)
				VMOVDQU(in, slot(0))
				continue
			}
			VPADDD(in, x[w], x[w])
			VMOVDQU(x[w], slot(w))
		}
		dst, src := GP64(), GP64()
		MOVQ(dstM, dst)
		MOVQ(srcM, src)
		transpose8(func(w int) Op { return slot(w) }, func(l, at int, ks VecVirtual) {
			VPXOR(Mem{Base: src, Disp: 64*(8*g+l) + at}, ks, ks)
			VMOVDQU(ks, Mem{Base: dst, Disp: 64*(8*g+l) + at})
		})
	}
	ADDQ(U32(uint32(blocks)), ctr)
	ADDQ(U32(uint32(64*blocks)), srcM)
	ADDQ(U32(uint32(64*blocks)), dstM)
	SUBQ(U32(uint32(64*blocks)), nM)
	JNZ(LabelRef(name + "pass"))
	wipeLocal(slots, 16*32, wipeVEX)
	VZEROUPPER()
	if mac {
		macRest(name, p, end, h0, h1, h2)
	}
	RET()
}
