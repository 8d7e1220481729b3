// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// The read-only data of the kernels, set by constants.
var (
	bswapMask, ctrInit, ctrStep, ctrStepBE, ctrStepY, ctrStepYBE, ctrAdd2, polyK, ctrOne, tailMask, smallJ0, smallCtr, lenMask Mem
)

// constants generates the read-only data: the byte-reversal mask, the counter steps (see Counters in
// main.go), the reduction constant (ghash.go) and the mask of a partial block.
func constants() {
	bswapMask = GLOBL("gcmBswap", RODATA|NOPTR) // twice: the ymm chunk loops read it whole
	for i := range 2 {
		DATA(16*i, U64(0x08090a0b0c0d0e0f))
		DATA(16*i+8, U64(0x0001020304050607))
	}

	// Lane i of the first zmm of a chunk holds counter+i.
	ctrInit = GLOBL("gcmCtrInit", RODATA|NOPTR)
	for i := range 8 {
		DATA(8*i, U64(uint64(i/2)*uint64(1-i%2)))
	}
	// The steps of a chunk's counter registers (countersInOrder): register j, every lane, (j+1)
	// times the register's lanes, from the first register of a chunk to the others and, the last,
	// to the next chunk; four zmm, four ymm. The BE tables hold them for counter blocks in block
	// order, in the block's last byte (the counter's low byte).
	ctrStep, ctrStepBE = counterSteps("gcmCtrStep", 4)
	ctrStepY, ctrStepYBE = counterSteps("gcmCtrStepY", 2)
	ctrAdd2 = GLOBL("gcmCtrAdd2", RODATA|NOPTR)
	for i := range 4 {
		DATA(8*i, U64(2*uint64(1-i%2)))
	}
	ctrOne = GLOBL("gcmCtrOne", RODATA|NOPTR)
	DATA(0, U64(1))
	DATA(8, U64(0))

	polyK = GLOBL("gcmPoly", RODATA|NOPTR)
	for i := range 4 {
		DATA(8*i, U64(0xc200000000000000))
	}

	// The small-op kernels' J0 (section 7.1 step 2): the counter field 1, big endian, in the last
	// byte of every lane (the pair kernels read two lanes, the lane kernels four).
	smallJ0 = GLOBL("gcmSmallJ0", RODATA|NOPTR)
	for i := range 8 {
		DATA(8*i, U64(uint64(i%2)<<56))
	}
	// Their counter fields 2-5, big endian, in the last byte of lanes 0-3: ORed into an IV they
	// give counter blocks 1-4 (J0's counter is 1 and the fourth block's 5: no carry). A zmm of the
	// lane kernels, two ymm of the pair kernels.
	smallCtr = GLOBL("gcmSmallCtr", RODATA|NOPTR)
	for i := range 8 {
		DATA(8*i, U64(uint64(i/2+2)<<56*uint64(i%2)))
	}

	// 16 bytes of ones then 16 of zeros: at offset 16-n, a mask keeping the first n bytes of a block.
	tailMask = GLOBL("gcmTailMask", RODATA|NOPTR)
	DATA(0, U64(^uint64(0)))
	DATA(8, U64(^uint64(0)))
	DATA(16, U64(0))
	DATA(24, U64(0))

	// 64 bytes of ones then 64 of zeros: at offset 64-n, the mask of a text's first n bytes.
	lenMask = GLOBL("gcmLenMask", RODATA|NOPTR)
	for i := range 16 {
		DATA(8*i, U64(^uint64(0)*uint64(1-i/8)))
	}
}

// counterSteps generates the step tables of four registers of the given lanes (see constants), in
// byte-reversed form (the low quadword of a lane) and in block order (BE: the top byte of the high
// quadword).
func counterSteps(name string, lanes int) (le, be Mem) {
	le = GLOBL(name, RODATA|NOPTR)
	for i := range 4 * 2 * lanes {
		step := uint64(lanes * (i/(2*lanes) + 1))
		DATA(8*i, U64(step*uint64(1-i%2)))
	}
	be = GLOBL(name+"BE", RODATA|NOPTR)
	for i := range 4 * 2 * lanes {
		step := uint64(lanes * (i/(2*lanes) + 1))
		DATA(8*i, U64(step<<56*uint64(i%2)))
	}
	return le, be
}
