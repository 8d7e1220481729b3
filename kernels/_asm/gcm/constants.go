// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// The read-only data of the kernels, set by constants.
var (
	bswapMask, ctrInit, ctrStep, ctrStepBE, ctrAdd2, polyK, ctrOne, tailMask, smallJ0, smallCtr, lenMask Mem
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
	// Every lane of zmm j: 4(j+1), the counter steps of a chunk's second to fourth zmm and, the
	// last, from one chunk to the next.
	ctrStep = GLOBL("gcmCtrStep", RODATA|NOPTR)
	for i := range 32 {
		DATA(8*i, U64(4*uint64(i/8+1)*uint64(1-i%2)))
	}
	// The same steps for counter blocks in block order (big endian): added to the block's last
	// byte, which holds the counter's low byte, as long as no carry leaves it (counters512).
	ctrStepBE = GLOBL("gcmCtrStepBE", RODATA|NOPTR)
	for i := range 32 {
		DATA(8*i, U64(4*uint64(i/8+1)<<56*uint64(i%2)))
	}
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
