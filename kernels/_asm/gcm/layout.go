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

// gcmTable offsets: rk[15][64], h[24][16], stride[4][64], hk[24][16], strideK[4][64], nr. Each
// Karatsuba operand lies tHK-tH bytes after its power (karatsuba).
const (
	tRK      = 0
	tH       = 960
	tStride  = 1344
	tHK      = 1600
	tStrideK = 1984
	tNR      = 2240
	hTop     = 21 // h[i] is H^(hTop-i)
)

// hOf returns the table offset of H^k (0 <= k <= hTop; H^0 is the zero entry after H^1).
func hOf(k int) int { return tH + 16*(hTop-k) }

// stridePower returns the address of H^(16-4s) in all four lanes, s = 0..3: the lane accumulator's
// multipliers (see lanesSteps).
func stridePower(s int) Mem { return Mem{Base: tab, Disp: tStride + 64*s} }

// descField returns the field at offset off of the i-th descriptor from desc.
func descField(i, off int) Mem { return Mem{Base: desc, Disp: descLen*i + off} }

// karatsuba returns the address of the Karatsuba operand (the XOR of the two quadwords) of the power
// of H at h.
func karatsuba(h Mem) Mem { return h.Offset(tHK - tH) }

// tailPowers points hptr at the powers of H for the nb = ceil(n/16) blocks of a tail, H^nb, or with
// withLens, when the descriptor has a tag, at H^(nb+1): the length block then takes H^1.
func tailPowers(withLens bool) {
	LEAQ(Mem{Base: n, Disp: 15}, tmp)
	SHRQ(U8(4), tmp)
	SHLQ(U8(4), tmp)
	LEAQ(Mem{Base: tab, Disp: hOf(0)}, hptr)
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
	ones  = R9  // all ones, for BZHI
	tmp3  = R14 // AVX512 only: ABI0 code may use R14 (the ABI wrapper restores g, as it zeroes X15)
)

// labels counts the labels made so far, to keep each one unique.
var labels int

// label returns a function-unique label name.
func label(what string) string {
	labels++
	return fmt.Sprintf("%s_%d", what, labels)
}
