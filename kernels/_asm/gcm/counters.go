// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ctrLow holds, in the chunk loops of the VAES kernels, the low byte of the counter in lane 0 of
// their counter register (countersInOrder).
var ctrLow = tmp2

// countersToBlockOrder turns the byte-reversed counter blocks in ctr into block order for
// countersInOrder and copies the low byte of lane 0's counter (the descriptor's) to ctrLow.
func countersToBlockOrder(ctr VecPhysical, bswap Op) {
	VPSHUFB(bswap, ctr, ctr)
	MOVBQZX(Mem{Base: desc, Disp: dCtr}, ctrLow)
}

// countersInOrder puts the next len(regs) registers of counter blocks, in block order, into regs and
// with advance moves ctr past them (a chunk). ctr holds the first, lane i counter+i, in
// block order, so the counter's low byte is the block's last: the steps (stepBE, see counterSteps)
// are added there, sparing a byte reversal of every register, unless a carry would leave that byte
// up to the last lane the call reaches (in ctr's next value too). ctrLow tells; then, at most twice
// in 16 chunks, the counters take the way through the byte-reversed form (bswap, into t), whose
// dword additions carry (inc32, SP 800-38D section 6.2). With 96-bit nonces the counter starts at
// 2, so the branch depends on the position in the message alone.
func countersInOrder(regs []VecPhysical, ctr, t VecPhysical, bswap Op, stepBE, stepLE Mem, advance bool) {
	size, lanes := int(ctr.Size()), int(ctr.Size())/16
	reach := len(regs)*lanes - 1 // the last counter the call reaches, from lane 0's
	if advance {
		reach += lanes // ctr's last lane after the chunk
	}
	move := func(r VecPhysical) {
		if size == 64 {
			VMOVDQA64(ctr, r)
		} else {
			VMOVDQA(ctr, r)
		}
	}
	carry, done := label("ctr_carry"), label("ctr_done")
	CMPQ(ctrLow, U8(255-reach))
	JA(LabelRef(carry))
	for j, r := range regs {
		if j == 0 {
			move(r)
			continue
		}
		VPADDD(stepBE.Offset(size*(j-1)), ctr, r)
	}
	if advance {
		VPADDD(stepBE.Offset(size*(len(regs)-1)), ctr, ctr)
	}
	JMP(LabelRef(done))
	Label(carry)
	VPSHUFB(bswap, ctr, t)
	for j, r := range regs {
		if j == 0 {
			move(r)
			continue
		}
		VPADDD(stepLE.Offset(size*(j-1)), t, r)
		VPSHUFB(bswap, r, r)
	}
	if advance {
		VPADDD(stepLE.Offset(size*(len(regs)-1)), t, ctr)
		VPSHUFB(bswap, ctr, ctr)
	}
	Label(done)
	if advance {
		ADDQ(U8(len(regs)*lanes), ctrLow)
		MOVBQZX(ctrLow.As8(), ctrLow)
	}
}
