// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The AVX512 small-packet kernels. A group is four descriptors with at most 64 bytes of text and 64
// of AD each (QUIC's header is AD) and keys of one size; its sixteen counter blocks fill four zmm,
// one per packet (zmm i lane j: packet i's counter block j+1), and its four J0 a fifth (lane i:
// packet i's), so four packets share every AES instruction instead of each spending a zmm and an
// xmm of rounds on its own. A packet's bytes are loaded whole (masked to its length) into a zmm of
// its own, which meets its key stream without any shuffle across lanes. GHASH multiplies each
// packet's AD and text by its own key's powers of H (chosen by the block counts, so that its last
// text block meets H^2 and the length block H^1), sums the products of each packet across its
// lanes into lane i of one zmm (shuffles of 128-bit lanes, laneSum), and reduces all four at once.
//
// Round keys: a key table repeats each round key four times, so its memory operand serves a whole
// zmm: packet i's zmm takes packet i's table. The J0 zmm takes the one table when the four
// descriptors share a key; otherwise each of its round keys is gathered from the four tables into
// one zmm, four loads per round.

// Registers of the lane kernels: Z0 the four J0 (then E_K(J0)), Z1-Z4 the packets' counter blocks
// 1-4 (then their ciphertext or plaintext; once it is stored, Z1-Z3 the length blocks' products
// and Z4-Z8 laneADPacked's), Z5-Z8 the packets' text, Z9-Z12 temporaries, Z20-Z23 the packets'
// byte-reversed ciphertext, Z24-Z31 and Z13-Z16 the product accumulators, Z17 the byte-reversal
// mask, Z18 laneKey, Z19 the reduction constant; K1-K4 the packets' byte masks, K5 an AD's. GP:
// AX, R10, R11, R13 the four key tables, R8 and SI scratch, DX a destination, tag pointer or
// scratch, R12 the round count, BX the last round key's offset or address.
var (
	laneTabs = []Register{RAX, R10, R11, R13}
	laneK    = []Register{K1, K2, K3, K4}
	laneText = []VecPhysical{Z5, Z6, Z7, Z8}
	laneTmp  = []VecPhysical{Z9, Z10, Z11, Z12}
	laneG    = []VecPhysical{Z20, Z21, Z22, Z23}
	laneLo   = []VecPhysical{Z24, Z25, Z26, Z27}
	laneHi   = []VecPhysical{Z28, Z29, Z30, Z31}
	laneMid  = []VecPhysical{Z13, Z14, Z15, Z16}
	// laneKey holds each round key in turn of a group with one key (stageRoundKeys), and a
	// constant or a power of H, loaded once for several instructions, outside the rounds.
	laneKey = Z18
)

// lanes generates a lane kernel: func(d *gcmDesc, groups int), groups of four descriptors.
func lanes(name string, open bool) {
	Implement(name)
	Attributes(NOSPLIT)
	Load(Param("d"), desc)
	Load(Param("groups"), count)
	VBROADCASTI32X4(bswapMask, Z17)
	VBROADCASTI32X4(polyK, Z19)
	MOVQ(I32(-1), ones)
	field := descField

	Label("group")
	TESTQ(count, count)
	JZ(LabelRef("done"))

	Comment("Texts, zero-filled past each packet's length.")
	for i := range 4 {
		MOVQ(field(i, dN), n)
		BZHIQ(n, ones, n)
		KMOVQ(n, laneK[i])
		MOVQ(field(i, dSrc), src)
		VMOVDQU8_Z(Mem{Base: src}, laneK[i], laneText[i])
	}
	if open {
		for i := range 4 {
			VPSHUFB(Z17, laneText[i], laneG[i])
		}
	}

	Comment("The four IVs in Z0 (lane i: packet i's); packet i's counter blocks 1-4 in Z(1+i), its IV",
		"with the counter field 2-5 (inc32 of J0, section 7.1 step 3); then J0 = IV || 0^31 || 1 in",
		"Z0 (section 7.1 step 2).")
	for i := range 4 {
		iv := X9
		if i == 0 {
			iv = X0
		}
		MOVQ(field(i, dNonce), src)
		VMOVQ(Mem{Base: src}, iv)
		VPINSRD(U8(2), Mem{Base: src, Disp: 8}, iv, iv)
		if i > 0 {
			VINSERTI32X4(U8(i), iv, Z0, Z0)
		}
	}
	ctr := []VecPhysical{Z0, Z1, Z2, Z3, Z4}
	VMOVDQU64(smallCtr, laneKey) // free until the rounds: one load for the four ORs
	for i, c := range ctr[1:] {
		VSHUFI64X2(U8(0x55*i), Z0, Z0, c) // packet i's IV in every lane
		VPORQ(laneKey, c, c)
	}
	VPORQ(smallJ0, Z0, Z0)

	for i, t := range laneTabs {
		MOVQ(field(i, dTab), t)
	}
	MOVQ(Mem{Base: tab, Disp: tNR}, nr)
	gather, encrypted := label("gather"), label("encrypted")
	for _, t := range laneTabs[1:] {
		CMPQ(t, tab)
		JNE(LabelRef(gather))
	}
	MOVQ(nr, last)
	SHLQ(U8(6), last)
	ADDQ(tab, last)
	dropStage := stageRoundKeys(laneKey)
	aesRounds(ctr)
	dropStage()
	JMP(LabelRef(encrypted))
	Label(gather)
	aesRoundsPerPacket(Z0, ctr[1:])
	Label(encrypted)

	Comment("Each packet's text XORed with its key stream.")
	for i := range 4 {
		VPXORQ(laneText[i], ctr[i+1], ctr[i+1])
	}
	for i := range 4 {
		MOVQ(field(i, dDst), dst)
		VMOVDQU8(ctr[1+i], laneK[i], Mem{Base: dst})
		if !open {
			VMOVDQU8_Z(ctr[1+i], laneK[i], ctr[1+i]) // GHASH sees the ciphertext zero-padded
			VPSHUFB(Z17, ctr[1+i], laneG[i])
		}
	}

	Comment("GHASH: packet i's blocks times its powers H^(nb+1)..H^2, summed per packet into lane i.")
	for i, t := range laneTabs {
		h := lanePowers(i, t, src, 1) // H^(nb+1)..H^2, loaded once for its two products
		VMOVDQU64(h, laneKey)
		karatsubaProducts(laneG[i], laneKey, karatsuba(h), laneLo[i], laneHi[i], laneMid[i])
	}
	laneAD()

	Comment("The length blocks len(A) || len(C) in bits (register form: the text's in the low",
		"quadword, the AD's in the high one) times each key's H^1, lane i packet i's, into Z1-Z3.")
	h1 := func(t Register) Mem { return Mem{Base: t, Disp: hOf(1)} }
	perKey, gathered := label("lens_per_key"), label("lens_gathered")
	for _, t := range laneTabs[1:] {
		CMPQ(t, tab)
		JNE(LabelRef(perKey))
	}
	VBROADCASTI32X4(h1(tab), Z12) // one key: its H^1 in every lane
	VBROADCASTI32X4(karatsuba(h1(tab)), Z10)
	JMP(LabelRef(gathered))
	Label(perKey)
	VMOVDQU(h1(tab), X12)
	VMOVDQU(karatsuba(h1(tab)), X10)
	for i := 1; i < 4; i++ {
		VINSERTI32X4(U8(i), h1(laneTabs[i]), Z12, Z12)
		VINSERTI32X4(U8(i), karatsuba(h1(laneTabs[i])), Z10, Z10)
	}
	Label(gathered)
	VMOVDQU(field(0, dN), X11)
	for i := 1; i < 4; i++ {
		VINSERTI32X4(U8(i), field(i, dN), Z11, Z11)
	}
	VPSLLQ(U8(3), Z11, Z11)
	karatsubaProducts(Z11, Z12, Z10, Z1, Z2, Z3)
	laneADPacked(Z1, Z2, Z3)

	Comment("Each packet's products summed into lane i with those of Z1-Z3, then reduced, the middle",
		"ones corrected once for all four (Karatsuba's correction is linear); tag = E_K(J0) XOR GHASH.")
	laneSum(laneLo, Z1) // into Z26
	laneSum(laneHi, Z2) // into Z30
	laneSum(laneMid, Z3)
	for _, step := range reduceSteps(Z26, laneMid[2], Z30, Z11, Z19, true) {
		step()
	}
	VPSHUFB(Z17, Z30, Z30)
	VPXORQ(Z0, Z30, Z30)
	if open {
		// The received tags, gathered, XORed in: what is left must be zero (see gcmDesc.tag).
		MOVQ(field(0, dTag), dst)
		VMOVDQU(Mem{Base: dst}, X11)
		for i := 1; i < 4; i++ {
			MOVQ(field(i, dTag), dst)
			VINSERTI32X4(U8(i), Mem{Base: dst}, Z11, Z11)
		}
		VPXORQ(Z11, Z30, Z30)
		for i := range 4 {
			VEXTRACTI32X4(U8(i), Z30, field(i, dY))
		}
	} else {
		for i := range 4 {
			MOVQ(field(i, dTag), dst)
			VEXTRACTI32X4(U8(i), Z30, Mem{Base: dst})
		}
	}

	ADDQ(U32(4*descLen), desc)
	DECQ(count)
	JMP(LabelRef("group"))
	Label("done")
	VPXORQ(laneKey, laneKey, laneKey) // no round key outlives the call (VZEROUPPER leaves Z16-Z31)
	VZEROUPPER()
	RET()
}

// The AD's blocks precede the text's in GHASH's Horner order (SP 800-38D section 7.1 step 5: the
// AD, zero-padded, comes first): packet i's na = ceil(adLen/16) AD blocks meet its powers
// H^(na+nb+1)..H^(nb+2). A group whose ADs all fit one block (QUIC short headers with connection
// IDs of up to 11 bytes) takes them four to a zmm, one packet per lane, in laneADPacked; a group
// with a longer AD takes them a zmm per packet in laneAD; a group without AD skips both.

// laneAD adds to each packet's product accumulators its AD blocks (up to gcmLaneAD bytes, one zmm,
// zero-filled past its length) times its key's powers, when some packet's AD is longer than a
// block.
func laneAD() {
	field := descField
	wide, skip := label("ad_wide"), label("ad_not_wide")
	for i := range 4 {
		CMPQ(field(i, dADLen), U8(16))
		JA(LabelRef(wide))
	}
	JMP(LabelRef(skip))
	Label(wide)
	for i, t := range laneTabs {
		MOVQ(field(i, dADLen), n)
		BZHIQ(n, ones, dst)
		KMOVQ(dst, K5)
		MOVQ(field(i, dAD), src)
		VMOVDQU8_Z(Mem{Base: src}, K5, Z9)
		VPSHUFB(Z17, Z9, Z9)
		// SI = &H^(nb+na+1), na = ceil(adLen/16), nb = ceil(n/16)
		ADDQ(U8(15), n)
		SHRQ(U8(4), n)
		MOVQ(field(i, dN), dst)
		ADDQ(U8(15), dst)
		SHRQ(U8(4), dst)
		ADDQ(dst, n)
		SHLQ(U8(4), n)
		LEAQ(Mem{Base: t, Disp: hOf(1)}, src)
		SUBQ(n, src)
		h := Mem{Base: src}
		karatsubaProducts(Z9, h, karatsuba(h), Z10, Z11, Z12)
		VPXORQ(Z10, laneLo[i], laneLo[i])
		VPXORQ(Z11, laneHi[i], laneHi[i])
		VPXORQ(Z12, laneMid[i], laneMid[i])
	}
	Label(skip)
}

// laneADPacked adds the products of the four packets' AD blocks, lane i packet i's, times H^(nb+2)
// of its key to lo, hi and mid, when every AD fits one block and some packet has one; it takes
// Z4-Z8 and Z11 (free once the text is stored and the length blocks multiplied). Against laneAD it
// spends 9 inserts (three of the blocks, six of powers) on saving 9 carry-less products, 6 shuffles
// and 12 XORs of a zmm each.
func laneADPacked(lo, hi, mid VecPhysical) {
	field := descField
	skip := label("ad_not_packed")
	MOVQ(field(0, dADLen), n)
	for i := 1; i < 4; i++ {
		ORQ(field(i, dADLen), n)
	}
	JZ(LabelRef(skip))
	for i := range 4 {
		CMPQ(field(i, dADLen), U8(16))
		JA(LabelRef(skip))
	}
	for i, t := range laneTabs {
		MOVQ(field(i, dADLen), n)
		BZHIQ(n, ones, dst)
		KMOVQ(dst, K5)
		MOVQ(field(i, dAD), src)
		h := lanePowers(i, t, dst, 2) // H^(nb+2)
		if i == 0 {
			VMOVDQU8_Z(Mem{Base: src}, K5, X4)
			VMOVDQU64(h, X6)
			VMOVDQU64(karatsuba(h), X7)
			continue
		}
		VMOVDQU8_Z(Mem{Base: src}, K5, X5)
		VINSERTI32X4(U8(i), X5, Z4, Z4)
		VINSERTI32X4(U8(i), h, Z6, Z6)
		VINSERTI32X4(U8(i), karatsuba(h), Z7, Z7)
	}
	VPSHUFB(Z17, Z4, Z4)
	karatsubaProducts(Z4, Z6, Z7, Z8, Z11, Z5)
	VPXORQ(Z8, lo, lo)
	VPXORQ(Z11, hi, hi)
	VPXORQ(Z5, mid, mid)
	Label(skip)
}

// lanePowers points r at H^(nb+low) of table t, nb = ceil(n/16) of descriptor i, and returns that
// address.
func lanePowers(i int, t, r Register, low int) Mem {
	MOVQ(descField(i, dN), n)
	ADDQ(U8(15), n)
	SHRQ(U8(4), n)
	SHLQ(U8(4), n)
	LEAQ(Mem{Base: t, Disp: hOf(low)}, r)
	SUBQ(n, r)
	return Mem{Base: r}
}

// aesRoundsPerPacket encrypts pkts[i] with the round keys of the table in laneTabs[i], memory
// operands that serve the whole zmm, and j0, lane i with the round keys of laneTabs[i], gathered
// into Z9 round by round. All four tables have nr rounds.
func aesRoundsPerPacket(j0 VecPhysical, pkts []VecPhysical) {
	// round applies to every register the round key that key addresses in a table, with op:
	// VPXORQ (whitening), VAESENC or VAESENCLAST.
	round := func(key func(t Register) Mem, op func(k Op, x VecPhysical)) {
		VMOVDQU(key(laneTabs[0]), X9)
		for i := 1; i < 4; i++ {
			VINSERTI32X4(U8(i), key(laneTabs[i]), Z9, Z9)
		}
		op(Z9, j0)
		for i, p := range pkts {
			op(key(laneTabs[i]), p)
		}
	}
	roundKey := func(r int) func(Register) Mem {
		return func(t Register) Mem { return Mem{Base: t, Disp: tRK + 64*r} }
	}
	whiten := func(k Op, x VecPhysical) { VPXORQ(k, x, x) }
	enc := func(k Op, x VecPhysical) { VAESENC(k, x, x) }
	round(roundKey(0), whiten)
	for r := 1; r <= 9; r++ {
		round(roundKey(r), enc)
	}
	done := label("aes_last")
	CMPQ(nr, U8(10))
	JE(LabelRef(done))
	round(roundKey(10), enc)
	round(roundKey(11), enc)
	CMPQ(nr, U8(12))
	JE(LabelRef(done))
	round(roundKey(12), enc)
	round(roundKey(13), enc)
	Label(done)
	Comment("The last round key, at offset nr*64 in each table.")
	MOVQ(nr, last)
	SHLQ(U8(6), last)
	round(func(t Register) Mem { return Mem{Base: t, Index: last, Scale: 1, Disp: tRK} },
		func(k Op, x VecPhysical) { VAESENCLAST(k, x, x) })
}

// laneSum leaves in regs[2], lane i, the sum of the four lanes of regs[i] and lane i of extra; the
// other regs and laneTmp are clobbered. It adds the lanes in halves: pairing the low halves of two
// registers with their high halves and adding leaves each register's lanes 0+2 and 1+3, and
// pairing those again leaves the sums, six shuffles where a full 4x4 transpose takes eight.
func laneSum(regs []VecPhysical, extra VecPhysical) {
	t := laneTmp
	for k := 0; k < 4; k += 2 {
		a, b := regs[k], regs[k+1]
		VSHUFI64X2(U8(0x44), b, a, t[k])   // a.l0 a.l1 b.l0 b.l1
		VSHUFI64X2(U8(0xee), b, a, t[k+1]) // a.l2 a.l3 b.l2 b.l3
		VPXORQ(t[k+1], t[k], t[k])         // a.l02 a.l13 b.l02 b.l13
	}
	VSHUFI64X2(U8(0x88), t[2], t[0], regs[2]) // the l02 of regs 0-3
	VSHUFI64X2(U8(0xdd), t[2], t[0], regs[3]) // their l13
	VPTERNLOGQ(U8(0x96), regs[3], extra, regs[2])
}
