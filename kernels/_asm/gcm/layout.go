// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// gcmDesc offsets.
const (
	dTab    = 0
	dDst    = 8
	dSrc    = 16
	dN      = 24
	dADLen  = 32 // after dN: one 16-byte load reads both lengths (the lane kernels' length blocks)
	dAD     = 40
	dTag    = 48
	dLens   = 56
	dY      = 72
	dCtr    = 88
	dJ0     = 104
	dNonce  = 120
	descLen = 128
)

// gcmTable offsets: rk[15][64], h[20][16], hk[20][16], nr.
const (
	tRK = 0
	tH  = 960
	tHK = 1280
	tNR = 1600
)

// descField returns the field at offset off of the i-th descriptor from desc.
func descField(i, off int) Mem { return Mem{Base: desc, Disp: descLen*i + off} }

// karatsuba returns the address of the Karatsuba operand (the XOR of the two quadwords) of the power
// of H at h.
func karatsuba(h Mem) Mem { return h.Offset(tHK - tH) }

// tailPowers points hptr at the powers of H for the nb = ceil(n/16) blocks of a tail, &h[17-nb], or
// with withLens, when the descriptor has a tag, at &h[16-nb]: the length block then takes H^1.
func tailPowers(withLens bool) {
	LEAQ(Mem{Base: n, Disp: 15}, tmp)
	SHRQ(U8(4), tmp)
	SHLQ(U8(4), tmp)
	LEAQ(Mem{Base: tab, Disp: tH + 17*16}, hptr)
	SUBQ(tmp, hptr)
	if withLens {
		skip := label("no_lens")
		CMPQ(Mem{Base: desc, Disp: dTag}, U8(0))
		JE(LabelRef(skip))
		SUBQ(U8(16), hptr)
		Label(skip)
	}
}

// Register use common to both tiers.
var (
	desc  = RDI // current descriptor
	count = RCX // descriptors left
	tab   = RAX // key table
	last  = RBX // &rk[nr]
	src   = RSI
	dst   = RDX
	n     = R8
	nr    = R12
	hptr  = R10 // powers of H for a tail
	tmp   = R11
	tmp2  = R13
	ones  = R9 // all ones, for BZHI
)

// labels counts the labels made so far, to keep each one unique.
var labels int

// label returns a function-unique label name.
func label(what string) string {
	labels++
	return fmt.Sprintf("%s_%d", what, labels)
}
