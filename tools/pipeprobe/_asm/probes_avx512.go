// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The AVX-512 loops: the instruction mixes of the zmm ChaCha20 lanes (chachaXOR16AVX512: VPADDD,
// VPXORD and VPROLD on 16 lanes a register) and of the IFMA Poly1305 lanes (poly1305IFMA:
// VPMADD52LUQ/HUQ beside the adds, shifts and shuffles of the carries and message loads), in the
// root module's kernels/_asm/chacha. Z15 and Z14 are the second operands, as Y15 and Y14 are above;
// X13 is the chunk the inserts put in.

var zchains = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11}

var (
	addZ step = func(x VecPhysical) int { VPADDD(Z15, x, x); return 1 }
	xorZ step = func(x VecPhysical) int { VPXORD(Z15, x, x); return 1 }
	addQ step = func(x VecPhysical) int { VPADDQ(Z15, x, x); return 1 }
	rolZ      = func(k int) step { return func(x VecPhysical) int { VPROLD(U8(k), x, x); return 1 } }
	// maddZ and maddY accumulate a 52-bit product into x, as every IFMA step of the Poly1305 lanes
	// does into its half-sums: a chain through the accumulator.
	maddZ step = func(x VecPhysical) int { VPMADD52LUQ(Z14, Z15, x); return 1 }
	maddY step = func(x VecPhysical) int { VPMADD52LUQ(Y14, Y15, x); return 1 }
	// insZ puts a 128-bit chunk into x, as the Poly1305 lanes gather their blocks.
	insZ step = func(x VecPhysical) int { VINSERTI32X4(U8(1), X13, x, x); return 1 }
)

// zQuarterRound is quarterRound with one rotation instruction (VPROLD) for every rotation, as the
// zmm lane kernel runs it.
var zQuarterRound = []step{
	addZ, xorZ, rolZ(16), addZ, xorZ, rolZ(12), addZ, xorZ, rolZ(8), addZ, xorZ, rolZ(7),
}

// probesAVX512 generates the AVX-512 loops (AVX-512 F, VL and IFMA), in the order the benchmark
// lists them.
func probesAVX512() {
	loop("latencyVPMADD52LUQ", "runs one chain of dependent zmm VPMADD52LUQs (through the "+
		"accumulator): their latency.", false,
		func(Register) int { return each(zchains[:1], 32, maddZ) })
	for _, k := range []struct {
		name, what string
		cs         []VecPhysical
		s          step
	}{
		{"VPADDDZ", "zmm VPADDD", zchains, addZ},
		{"VPROLDZ", "zmm VPROLD", zchains, rolZ(7)},
		{"VPMADD52LUQZ", "zmm VPMADD52LUQ", zchains, maddZ},
		{"VPMADD52LUQY", "ymm VPMADD52LUQ", chains, maddY},
	} {
		loop("throughput"+k.name, "runs 12 independent chains of "+k.what+": its issue rate.", false,
			func(Register) int { return each(k.cs, 4, k.s) })
	}
	loop("quarterRoundsZ8", "runs the quarter round's sequence with VPROLD on 8 zmm chains in "+
		"lockstep: the zmm lane kernel's two states.", false,
		func(Register) int { return skewed([][]VecPhysical{zchains[:8]}, 0, zQuarterRound) })
	loop("mixZ", "runs the quarter round's instructions in its proportions (an add, an XOR and a "+
		"VPROLD) on 12 zmm chains, four of each kind: the mix without the round's dependences.", false,
		func(Register) int {
			ops := 0
			for range 4 {
				ops += each(zchains[:4], 1, addZ)
				ops += each(zchains[4:8], 1, xorZ)
				ops += each(zchains[8:], 1, rolZ(7))
			}
			return ops
		})
	for _, k := range []struct {
		name, what string
		s          step
	}{
		{"ifmaBesideAddZ", "VPADDQ: the adds of the IFMA Poly1305 lanes' carries", addQ},
		{"ifmaBesideInsertZ", "VINSERTI32X4: the chunk inserts that gather the lanes' blocks", insZ},
	} {
		loop(k.name, "runs 6 chains of zmm VPMADD52LUQ and 6 of "+k.what+", six of each kind "+
			"in turns.", false,
			func(Register) int {
				ops := 0
				for range 4 {
					ops += each(zchains[:6], 1, maddZ)
					ops += each(zchains[6:], 1, k.s)
				}
				return ops
			})
	}
}
