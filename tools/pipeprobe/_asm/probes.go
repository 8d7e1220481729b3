// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// calibrate generates the clock: a chain of dependent scalar ADDs, one cycle each.
func calibrate() {
	TEXT("calibrate", NOSPLIT, "func(n int)")
	Doc("calibrate runs n iterations of 32 dependent scalar ADDs: one cycle each, the clock.")
	n := Load(Param("n"), GP64())
	x := GP64()
	XORQ(x, x)
	Label("calibrateloop")
	for range 32 {
		ADDQ(n, x)
	}
	DECQ(n)
	JNZ(LabelRef("calibrateloop"))
	RET()
}

// quarterRound is the instruction sequence of one ChaCha20 quarter round (RFC 8439 section 2.1) as
// one chain: each step reads what the step before it wrote, as a += b, d ^= a, d <<<= 16, c += d,
// ... do through a, d, c and b in turn.
var quarterRound = []step{add, xor, shufb, add, xor, rot(12), add, xor, shufb, add, xor, rot(7)}

// spilledStep emits step t (0 to 11) of the quarter round on chain k's register x as the AVX2
// kernel does with words kept in memory, the chain's words at spill+128k (a, b, c, d, 32 bytes
// each): a += b, d ^= a and c += d take a, d and c as memory operands and store what they computed
// back (d after its rotation); with bSpilled, b ^= c does too and b is stored after its rotation,
// else b stays in its register as in the kernel. It returns the vector ALU instructions emitted.
func spilledStep(t int, x VecPhysical, spill Register, k int, bSpilled bool) int {
	word := func(w int) Mem { return Mem{Base: spill, Disp: 128*k + 32*w} }
	const a, b, c, d = 0, 1, 2, 3
	switch t % 6 {
	case 0:
		VPADDD(word(a), x, x)
		VMOVDQU(x, word(a))
	case 1:
		VPXOR(word(d), x, x)
	case 2:
		VPSHUFB(Y14, x, x)
		VMOVDQU(x, word(d))
	case 3:
		VPADDD(word(c), x, x)
		VMOVDQU(x, word(c))
	case 4:
		if bSpilled {
			VPXOR(word(b), x, x)
		} else {
			VPXOR(Y15, x, x)
		}
	case 5:
		n := rot([2]int{12, 7}[t/6])(x) // the first half's rotation, then the second's
		if bSpilled {
			VMOVDQU(x, word(b))
		}
		return n
	}
	return 1
}

// spilledLoop generates func name(n int, spill *[2048]byte): n iterations of the quarter round on
// the chains of sets, set k skew*k steps off the first, with spilledStep's memory traffic.
func spilledLoop(name, doc string, sets [][]VecPhysical, skew int, bSpilled bool) {
	loop(name, doc, true, func(spill Register) int {
		ops := 0
		for t := range 12 {
			chain := 0
			for k, cs := range sets {
				for _, x := range cs {
					ops += spilledStep((t+k*skew)%12, x, spill, chain, bSpilled)
					chain++
				}
			}
		}
		return ops
	})
}

// probes generates the loops of vector instructions, in the order the benchmark lists them.
func probes() {
	one := chains[:1]
	loop("latencyVPADDD", "runs one chain of dependent VPADDDs: their latency.", false,
		func(Register) int { return each(one, 32, add) })
	loop("latencyShiftShuffle", "runs one chain of dependent VPSLLDs and VPSHUFBs in turn.", false,
		func(Register) int { return each(one, 16, sll, shufb) })
	for _, k := range []struct {
		name string
		s    step
	}{{"VPADDD", add}, {"VPXOR", xor}, {"VPSLLD", sll}, {"VPSHUFB", shufb}, {"VPMULUDQ", mul}} {
		loop("throughput"+k.name, "runs 12 independent chains of "+k.name+": its issue rate.", false,
			func(Register) int { return each(chains, 4, k.s) })
	}
	loop("throughputShiftShuffle", "runs 12 independent chains of VPSLLD and VPSHUFB in turn.", false,
		func(Register) int { return each(chains, 2, sll, shufb) })
	loop("quarterRounds4", "runs the quarter round's sequence on 4 chains in lockstep: one group of 8 "+
		"lanes, as the kernel for 1-cycle cores keeps in registers.", false,
		func(Register) int { return skewed([][]VecPhysical{chains[:4]}, 0, quarterRound) })
	loop("quarterRounds6", "runs the quarter round's sequence on 6 chains in lockstep: what lies "+
		"between one group in registers and two.", false,
		func(Register) int { return skewed([][]VecPhysical{chains[:6]}, 0, quarterRound) })
	loop("quarterRounds8", "runs the quarter round's sequence on 8 chains in lockstep: the AVX2 "+
		"kernel's two groups of four chains without avx2GroupSkew.", false,
		func(Register) int { return skewed([][]VecPhysical{chains[:8]}, 0, quarterRound) })
	loop("quarterRounds8Skewed", "is quarterRounds8 with chains 4-7 three steps off chains 0-3, as the "+
		"kernel's group 1 trails group 0.", false,
		func(Register) int { return skewed([][]VecPhysical{chains[:4], chains[4:8]}, 3, quarterRound) })
	loop("quarterRounds12Skewed", "runs the quarter round's sequence on 12 chains in three sets of four, "+
		"each three steps off the one before: one more group than 16 ymm registers leave room for.", false,
		func(Register) int {
			return skewed([][]VecPhysical{chains[:4], chains[4:8], chains[8:]}, 3, quarterRound)
		})
	spilledLoop("quarterRounds8Spilled", "is quarterRounds8Skewed with the AVX2 kernel's memory "+
		"traffic: a, c and d as memory operands and stored, b in its register.",
		[][]VecPhysical{chains[:4], chains[4:8]}, 3, false)
	spilledLoop("quarterRounds12Spilled", "is quarterRounds12Skewed with every word in memory, as 12 "+
		"chains need (48 words for 16 registers): b stored and read back too.",
		[][]VecPhysical{chains[:4], chains[4:8], chains[8:]}, 3, true)
}
