// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// macPointsAVX512 are the points of xorBlocks' double round (hook: after each add, XOR and rotate
// step of a state's quarter-round set, 8 a state) at which chachaXOR16MACAVX512 absorbs a block:
// every third step, six a double round of two states, as fast as one chain of dependent blocks
// (some 16 cycles each) goes beside rounds that take about 100 cycles. AMD Zen 4, Seals of 64 x
// 1420 B on the AVX512 tier: every third step 26.3 us a batch, every fourth 29.1 (blocks left to
// run alone), every second 28.3 (the chain holds up the rounds), without the pipeline 27.7
// (docs/experiments.md, 2026-12-05 fifth session).
var macPointsAVX512 = [16]bool{0: true, 3: true, 6: true, 9: true, 12: true, 15: true}

// macPoints24 are the points of chachaKS24AVX512's double round (after each add, XOR and rotate
// step of the zmm state's quarter-round set, then the ymm state's, the column round's first) at
// which chachaXOR24MACAVX512 absorbs a block: five, 50 blocks a pass of some 1000 cycles, about as
// many as one chain of dependent blocks (some 16 cycles each) takes without holding up the rounds.
// AMD Zen 4, the pass alone 274 ns; with 40 blocks beside it 283, 60 blocks 318, 80 blocks 422.
// Seals against x/crypto in the pipeline (chachaSealChain24) with four, five and six points:
// 4 x 1420 B 1.26x, 1.30x, 1.29x; 7 x 1420 B 1.31x, 1.37x, 1.34x; 10 x 1420 B 1.35x, 1.41x, 1.35x
// (docs/experiments.md, 2026-12-07 sixth session).
var macPoints24 = [16]bool{0: true, 3: true, 6: true, 10: true, 13: true}

// chachaLanesMACAVX512 generates chachaXOR16MACAVX512: chachaXOR16AVX512 with other messages'
// Poly1305 (RFC 8439 section 2.5) on the scalar pipes beside its rounds, the chain of
// chachaLanesMACAVX2Regs (laneChain). The zmm rounds leave the scalar pipes idle as the AVX2 ones
// do, but run about twice as fast: one chain keeps up with about half of the lanes' MAC blocks.
func chachaLanesMACAVX512() {
	name := "chachaXOR16MACAVX512"
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" is chachaXOR16AVX512 that also absorbs the blocks of mac's lanes beside its rounds;",
		"with n = 0, all that are left.")
	nM, strideM := paramAddr("n"), paramAddr("stride")
	c := startLaneChain()
	hook := func(k int) {
		if macPointsAVX512[k] {
			labels++
			skip := fmt.Sprintf("%smac%d_%d", name, k, labels)
			c.step(skip, skip)
		}
	}

	rows, off := stitchedStreamStart(name, nM)
	Label(name + "two")
	CMPQ(nM, U32(2))
	JBE(LabelRef(name + "last"))
	xorBlocks(rows, off, strideM, 2, false, hook)
	SUBQ(U32(2), nM)
	JMP(LabelRef(name + "two"))
	Label(name + "last")
	JB(LabelRef(name + "one"))
	xorBlocks(rows, off, strideM, 2, true, hook)
	JMP(LabelRef(name + "streamed"))
	Label(name + "one")
	xorBlocks(rows, off, strideM, 1, true, hook)
	Label(name + "streamed")
	VZEROUPPER()
	JMP(LabelRef(name + "save"))

	c.finish(name)
}
