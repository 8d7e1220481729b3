// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// aesRounds encrypts the blocks in regs (xmm: one block; zmm: four) with the round keys at tab;
// the round count in nr picks 10, 12 or 14 rounds. The independent instructions of other are spread
// over rounds 1-9 (stitching).
func aesRounds(regs []VecPhysical, other ...func()) {
	rk := func(i int) Mem { return Mem{Base: tab, Disp: tRK + 64*i} }
	for _, r := range regs {
		if r.Size() == 64 {
			VPXORQ(rk(0), r, r)
		} else {
			VPXOR(rk(0), r, r)
		}
	}
	round := func(i int) {
		for _, r := range regs {
			VAESENC(rk(i), r, r)
		}
	}
	per := (len(other) + 8) / 9
	for i := 1; i <= 9; i++ {
		round(i)
		for range min(per, len(other)) {
			other[0]()
			other = other[1:]
		}
	}
	done := label("aes_last")
	CMPQ(nr, U8(10))
	JE(LabelRef(done))
	round(10)
	round(11)
	CMPQ(nr, U8(12))
	JE(LabelRef(done))
	round(12)
	round(13)
	Label(done)
	for _, r := range regs {
		VAESENCLAST(Mem{Base: last}, r, r)
	}
}
