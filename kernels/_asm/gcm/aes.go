// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// keyRegs holds, while a kernel that keeps round keys in registers is generated, the registers of
// round keys 0 to len(keyRegs.rounds)-1 and of the last round key (keepRoundKeys); aesRounds reads
// the others from the table. A VAESENC with a memory operand pays for its load again on every
// block, which the AES units' port feels (docs/experiments.md, 2026-12-02 seventh session).
var keyRegs struct {
	rounds []VecPhysical
	last   VecPhysical
	stage  VecPhysical // see stageRoundKeys
}

// keepRoundKeys loads round keys 0 to len(rounds)-1 and the last one (at last) of the table at tab
// into registers and has aesRounds use them until the returned function is called. A kernel calls
// it at every descriptor, whose key may differ from the last one's, and clears the registers
// before it returns (clearRoundKeys).
func keepRoundKeys(rounds []VecPhysical, lastKey VecPhysical) (drop func()) {
	for i, r := range rounds {
		VMOVDQU64(Mem{Base: tab, Disp: tRK + 64*i}, r)
	}
	VMOVDQU64(Mem{Base: last}, lastKey)
	keyRegs.rounds, keyRegs.last = rounds, lastKey
	return func() { keyRegs.rounds, keyRegs.last = nil, nil }
}

// clearRoundKeys zeroes the registers keepRoundKeys filled, so that no round key outlives the
// call: VZEROUPPER would leave Z16-Z31 and the low halves of Z0-Z15.
func clearRoundKeys() {
	for _, r := range keyRegs.rounds {
		VPXORQ(r, r, r)
	}
	VPXORQ(keyRegs.last, keyRegs.last, keyRegs.last)
}

// stageRoundKeys has aesRounds load each round key not kept in a register (keepRoundKeys) from the
// table once into stage and apply it to every block from there, until the returned function is
// called: for a kernel with no registers to keep those keys in but one to spare, one load a round
// rather than one with every block's instruction (the AES-NI chunks' eight, the AVX512 chunks'
// four).
func stageRoundKeys(stage VecPhysical) (drop func()) {
	keyRegs.stage = stage
	return func() { keyRegs.stage = nil }
}

// sized returns key register k at the width of block register r.
func sized(k, r VecPhysical) Op {
	switch r.Size() {
	case 16:
		return k.AsX()
	case 32:
		return k.AsY()
	}
	return k
}

// aesRounds encrypts the blocks in regs (xmm: one block; zmm: four) with the round keys at tab (or
// in keyRegs); the round count in nr picks 10, 12 or 14 rounds. The independent instructions of
// other are spread over rounds 1-9 (stitching).
func aesRounds(regs []VecPhysical, other ...func()) {
	rk := func(i int, r VecPhysical) Op {
		if i < len(keyRegs.rounds) {
			return sized(keyRegs.rounds[i], r)
		}
		if keyRegs.stage != nil {
			return sized(keyRegs.stage, r)
		}
		return Mem{Base: tab, Disp: tRK + 64*i}
	}
	stage := func(key Mem, kept bool) { // kept: the key is in a register of keyRegs already
		switch s := keyRegs.stage; {
		case s == nil || kept:
		case s.Size() == 64:
			VMOVDQU64(key, s)
		default:
			VMOVDQU(key, s)
		}
	}
	stage(Mem{Base: tab, Disp: tRK}, len(keyRegs.rounds) > 0)
	for _, r := range regs {
		k := rk(0, r)
		if high, ok := k.(VecPhysical); r.Size() == 64 || ok && high.PhysicalIndex() >= 16 {
			VPXORQ(k, r, r) // EVEX: zmm, or a key register only EVEX can name
		} else {
			VPXOR(k, r, r)
		}
	}
	round := func(i int) {
		stage(Mem{Base: tab, Disp: tRK + 64*i}, i < len(keyRegs.rounds))
		for _, r := range regs {
			VAESENC(rk(i, r), r, r)
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
	stage(Mem{Base: last}, keyRegs.last != nil)
	for _, r := range regs {
		switch {
		case keyRegs.last != nil:
			VAESENCLAST(sized(keyRegs.last, r), r, r)
		case keyRegs.stage != nil:
			VAESENCLAST(sized(keyRegs.stage, r), r, r)
		default:
			VAESENCLAST(Mem{Base: last}, r, r)
		}
	}
}
