// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Whole ChaCha20-Poly1305 ops on messages within block 1 of the key stream, tinyLanes ops a call.
// chachaPoly1305TinyAVX2 runs one such op as one chain of dependent steps: its rounds keep one pipe
// of each kind busy for a cycle in three (Zen 3: a quarter round is a 14-cycle chain), and its
// MAC's blocks depend one on the next. Here the rounds of tinyLanes ops run interleaved, one state
// each in the row form (blocks 0 and 1 in the low and high halves of four ymm registers), in about
// 1.4 times one state's time (Zen 3); the ops' MACs then run one after the other: a scalar
// Poly1305 step is bound by its multiplications there (about 12 cycles a block), so running the
// three chains in lockstep gains nothing (docs/experiments.md, 2026-12-02).
//
// Each op is a chachaTinyLane record (kernels/chacha_tiny_amd64.go) of 64 bytes:
const (
	laneKey   = 0  // *[8]uint32, the ChaCha20 key words
	laneNonce = 8  // *[12]byte
	laneDst   = 16 // *byte
	laneSrc   = 24 // *byte
	laneN     = 32 // int, 0..64 (chachaPoly1305Tiny2AVX2: 0..128; chachaPoly1305TinyNAVX512: 0..192)
	laneAD    = 40 // *byte
	laneADLen = 48 // int, 0..767 (kernels.chachaFusedAD)
	laneTag   = 56 // *[16]byte: Seal writes it, Open checks it
	laneSize  = 64
)

// tinyLanes is how many ops one call takes: three states of four rows fill twelve of the sixteen
// ymm registers, and a fourth would leave the rounds no temporaries.
const tinyLanes = 3

// tinyLaneFrame is one op's stack buffers.
type tinyLaneFrame struct {
	msg  Mem // the message, zero-padded to 64 bytes; Seal: then the ciphertext
	ks   Mem // Open: key-stream block 1
	pad  Mem // the AD's partial last block, zero-padded
	lens Mem // the MAC's lengths block: le64(adLen), le64(n)
	r    Mem // r, clamped (RFC 8439 section 2.5.1)
	sk   Mem // s, the second half of the Poly1305 key (section 2.5)
}

func chachaPoly1305Tiny3AVX2() {
	const name = "chachaPoly1305Tiny3AVX2"
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" seals (open false) or opens the three ops of lanes, each a message of 0 to 64",
		"bytes with 0 to 767 bytes of AD (RFC 8439 section 2.8; block 0 the Poly1305 key). Seal",
		"writes each ciphertext and tag and returns 7. Open compares each computed tag with the one",
		"at the lane's tag in constant time, writes a lane's dst only when they match, and returns",
		"bit i set when lane i's did. src and dst of a lane may be equal. The stack buffers are wiped.")
	var fr [tinyLanes]tinyLaneFrame
	for i := range fr {
		fr[i] = tinyLaneFrame{msg: AllocLocal(64), ks: AllocLocal(64), pad: AllocLocal(16),
			lens: AllocLocal(16), r: AllocLocal(16), sk: AllocLocal(16)}
	}

	Comment("Stage each message and AD's partial last block, zero-padded, and the lengths blocks.")
	zero := YMM()
	VPXOR(zero, zero, zero)
	for i := range fr {
		VMOVDQU(zero, fr[i].msg)
		VMOVDQU(zero, fr[i].msg.Offset(32))
		tinyLaneStage(fmt.Sprintf("%s%d", name, i), i, fr[i], zero)
	}

	Comment("The rounds: blocks 0 and 1 of every op, one state each, interleaved.")
	x := tinyLaneStates(tinyLanes)
	rowDoubleRounds(x, rotMasks, rotMasks.Offset(32), name+"rounds", nil)

	Comment("Add the initial state (section 2.3). Block 0's rows 0 and 1 are the Poly1305 key;",
		"block 1 is the key stream: XORed into the staged message (Seal, bytes past n zeroed for",
		"the MAC's padding) or kept for after the tag has matched (Open).")
	for s := range x {
		tinyLaneFinal(x[s], s, fr[s].r, fr[s].sk)
		tinyLaneBlock1(x[s], s, func(c int) Mem { return fr[s].msg.Offset(32 * c) }, fr[s].ks,
			fmt.Sprintf("%s%d", name, s), nil)
	}

	Comment("Each op's Poly1305 over AD || pad16 || ciphertext || pad16 || lengths (section 2.8),",
		"then its tag: written (Seal), or compared and, on a match, the message decrypted (Open).")
	okAll := GP64()
	XORQ(okAll, okAll)
	for s := range fr {
		tinyLaneMAC(fmt.Sprintf("%s%d", name, s), s, fr[s], okAll, 64)
	}

	Comment("Wipe the key streams, the messages and the MACs' keys from the stack.")
	tinyLaneWipe(fr[:], 64)
	VZEROUPPER()
	Store(okAll.As8(), ReturnIndex(0))
	RET()
}

// tinyLaneStage stages op i of a three-op kernel (or the pair kernel) in its frame fr, whose
// message buffer the caller has zeroed (zero: a zeroed ymm register): the AD's partial last block
// and the lengths block (tinyLaneStageAD), then the message. lbl names the labels.
func tinyLaneStage(lbl string, i int, fr tinyLaneFrame, zero VecVirtual) {
	tinyLaneStageAD(lbl, i, fr.pad, fr.lens, zero.AsX())
	d := GP64()
	LEAQ(fr.msg, d)
	copyBytes(d, tinyLaneField(i, laneSrc), tinyLaneField(i, laneN), lbl+"stage")
}

// tinyLaneStageAD stages op i's AD's partial last block at pad, zero-padded (zero: a zeroed xmm
// register), and its lengths block at lens (le64(adLen), le64(n)). lbl names the labels.
func tinyLaneStageAD(lbl string, i int, pad, lens Mem, zero Register) {
	ptr := tinyLaneField
	VMOVDQU(zero, pad)
	adLen := ptr(i, laneADLen)
	MOVQ(adLen, lens)
	MOVQ(ptr(i, laneN), lens.Offset(8))
	ad, k, d := ptr(i, laneAD), GP64(), GP64()
	MOVQ(adLen, k)
	ANDQ(I32(-16), k)
	ADDQ(k, ad)
	ANDQ(U8(15), adLen)
	LEAQ(pad, d)
	copyBytes(d, ad, adLen, lbl+"adtail")
}

// tinyLaneMAC runs op i's MAC over its frame fr (aeadMAC, the ciphertext staged in fr.msg) and
// settles it (tinyLaneVerdict): Seal copies the staged ciphertext to dst, Open decrypts with the
// key stream in fr.ks (size bytes) where the tag matched; ok gets bit i on success.
func tinyLaneMAC(lbl string, i int, fr tinyLaneFrame, ok GPVirtual, size int) {
	ptr := tinyLaneField
	r0, r1 := GP64(), GP64()
	MOVQ(fr.r, r0)
	MOVQ(fr.r.Offset(8), r1)
	h0, h1, h2 := aeadMAC(r0, r1, ptr(i, laneAD), ptr(i, laneADLen), fr.pad, fr.msg, fr.lens, lbl)
	polyTag(h0, h1, h2, fr.sk)
	msg := func() GPVirtual {
		a := GP64()
		LEAQ(fr.msg, a)
		return a
	}
	tinyLaneVerdict(lbl, i, h0, h1, Mem{Base: ptr(i, laneTag)}, ok,
		func() { copyBytes(ptr(i, laneDst), msg(), ptr(i, laneN), lbl+"sealout") },
		tinyStagedDecrypt(lbl, fr.ks, size, func() GPVirtual { return ptr(i, laneN) }, msg,
			func() GPVirtual { return ptr(i, laneDst) }))
}

// tinyLaneWipe clears the frames fr, whose message and key-stream buffers hold size bytes.
func tinyLaneWipe(fr []tinyLaneFrame, size int) {
	zero := YMM()
	VPXOR(zero, zero, zero)
	for s := range fr {
		for _, m := range []Mem{fr[s].msg, fr[s].ks} {
			for c := range size / 32 {
				VMOVDQU(zero, m.Offset(32*c))
			}
		}
		for _, m := range []Mem{fr[s].pad, fr[s].r, fr[s].sk} {
			VMOVDQU(zero.AsX(), m)
		}
	}
}

// tinyLaneField loads field off of op i's chachaTinyLane from the three-op kernels' lanes argument,
// which it loads at each use: kept in a register, it would leave the MAC steps too few.
func tinyLaneField(i, off int) GPVirtual {
	p := GP64()
	MOVQ(Mem{Base: Load(Param("lanes"), GP64()), Disp: laneSize*i + off}, p)
	return p
}

// tinyLaneStates loads the initial states of the first ops ops of a three-op kernel's (or the pair
// kernel's) lanes in the row form, state s blocks 0 and 1 of op s.
func tinyLaneStates(ops int) [][4]VecVirtual {
	field := tinyLaneField
	x := make([][4]VecVirtual, ops)
	sigma := YMM()
	VBROADCASTI128(chachaSigma, sigma)
	for s := range x {
		key := field(s, laneKey)
		for i := range 4 {
			x[s][i] = YMM()
		}
		VMOVDQA(sigma, x[s][0])
		VBROADCASTI128(Mem{Base: key}, x[s][1])
		VBROADCASTI128(Mem{Base: key, Disp: 16}, x[s][2])
		tinyLaneRow3(field(s, laneNonce), x[s][3])
	}
	return x
}

// tinyLaneFinal adds op i's initial state to its rounds' output x (section 2.3) and stores the
// Poly1305 key of block 0 (section 2.6): r, clamped (section 2.5.1), at r and s at sk.
func tinyLaneFinal(x [4]VecVirtual, i int, r, sk Mem) {
	field := func(off int) GPVirtual { return tinyLaneField(i, off) }
	t := YMM()
	VBROADCASTI128(chachaSigma, t)
	VPADDD(t, x[0], x[0])
	key := field(laneKey)
	VBROADCASTI128(Mem{Base: key}, t)
	VPADDD(t, x[1], x[1])
	VBROADCASTI128(Mem{Base: key, Disp: 16}, t)
	VPADDD(t, x[2], x[2])
	tinyLaneRow3(field(laneNonce), t)
	VPADDD(t, x[3], x[3])
	k := XMM()
	VPAND(polyClamp, x[0].AsX(), k)
	VMOVDQU(k, r)
	VMOVDQU(x[1].AsX(), sk)
}

// tinyLaneBlock1 hands on block 1's key stream of op i, the high halves of x's rows: Seal (the open
// argument false) XORs it into the staged message (of the op's n bytes), whose 32-byte chunk c is
// at msg(c), the bytes past n zeroed for the MAC's padding, then runs sealed (if not nil); Open
// stores it at ks, to decrypt once the tag has matched.
func tinyLaneBlock1(x [4]VecVirtual, i int, msg func(c int) Mem, ks Mem, lbl string, sealed func()) {
	tinyLaneBlock(x, 1, i, 0, msg, ks, lbl, sealed)
}

// tinyLaneBlock is tinyLaneBlock1 for the key-stream block in half h of x's rows (0 low, 1 high),
// the block at byte at of op i's message: msg(c) is that block's 32-byte chunk c.
func tinyLaneBlock(x [4]VecVirtual, h, i, at int, msg func(c int) Mem, ks Mem, lbl string, sealed func()) {
	imm := U8(0x20 + 0x11*h) // half h of each source
	open := Load(Param("open"), GP8())
	TESTB(open, open)
	JNZ(LabelRef(lbl + "keep"))
	for c := range 2 { // bytes 32c..32c+31 of the block: half h of rows 2c and 2c+1
		k := YMM()
		VPERM2I128(imm, x[2*c+1], x[2*c], k)
		nc := tinyLaneField(i, laneN)
		CMPQ(nc, U32(at+32*c))
		JBE(LabelRef(lbl + "xored"))
		VPXOR(msg(c), k, k)
		Comment(fmt.Sprintf("Bytes past n: 32-byte offset max(0, %d-n) into the tail mask.", at+32*c+32))
		off, z, mask := GP64(), GP64(), GP64()
		MOVQ(U32(at+32*c+32), off)
		SUBQ(nc, off)
		XORQ(z, z)
		CMPQ(off, z)
		CMOVQLT(z, off)
		LEAQ(tailMask, mask)
		VPAND(Mem{Base: mask, Index: off, Scale: 1}, k, k)
		VMOVDQU(k, msg(c))
	}
	Label(lbl + "xored")
	if sealed != nil {
		sealed()
	}
	JMP(LabelRef(lbl + "streamed"))
	Label(lbl + "keep")
	for c := range 2 {
		k := YMM()
		VPERM2I128(imm, x[2*c+1], x[2*c], k)
		VMOVDQU(k, ks.Offset(32*c))
	}
	Label(lbl + "streamed")
}

// tinyLaneVerdict settles op i of a three-op kernel from its tag h0:h1 (clobbered) and the tag
// memory tag: Seal writes the tag there, sets bit i of ok and runs sealed (if not nil); Open
// compares it with the tag there in constant time and only where they match sets bit i and runs
// decrypt. lbl names the labels.
func tinyLaneVerdict(lbl string, i int, h0, h1 GPVirtual, tag Mem, ok GPVirtual, sealed, decrypt func()) {
	open := Load(Param("open"), GP8())
	TESTB(open, open)
	JNZ(LabelRef(lbl + "verify"))
	MOVQ(h0, tag)
	MOVQ(h1, tag.Offset(8))
	ORQ(U8(1<<i), ok)
	if sealed != nil {
		sealed()
	}
	JMP(LabelRef(lbl + "done"))

	Label(lbl + "verify")
	XORQ(tag, h0)
	XORQ(tag.Offset(8), h1)
	ORQ(h1, h0)
	JNE(LabelRef(lbl + "done"))
	ORQ(U8(1<<i), ok)
	decrypt()
	Label(lbl + "done")
}

// tinyStagedDecrypt returns tinyLaneVerdict's decrypt for a message staged on the stack: it XORs
// the key stream at ks (size bytes) into the staged message at msg's address (n bytes) and copies
// that to dst. n, msg and dst emit their loads where they are needed; lbl names the labels.
func tinyStagedDecrypt(lbl string, ks Mem, size int, n, msg, dst func() GPVirtual) func() {
	return func() {
		k, m := n(), msg()
		tinyXOR(Mem{Base: m}, ks, k, size, lbl+"open")
		copyBytes(dst(), m, k, lbl+"openout")
	}
}

// tinyLaneRow3 sets row to the last state row of blocks 0 and 1 (section 2.3): block counter 0 and
// the nonce at nonce in the low half, counter 1 and the nonce in the high half. The nonce's bytes
// come in through two loads that need no store to forward to them.
func tinyLaneRow3(nonce GPVirtual, row VecVirtual) {
	nonceRowX(Mem{Base: nonce}, row.AsX())
	VINSERTI128(U8(1), row.AsX(), row, row)
	VPADDD(rowCounters, row, row)
}

// polyTag turns the accumulator h0..h2 into the tag h mod p + s mod 2^128 (section 2.5.1) in h0,
// h1. h < 2p, and h + 5 reaches 2^130 exactly when h >= p, when h - p and h + 5 agree below 2^128:
// it selects h + 5 then, without a branch.
func polyTag(h0, h1, h2 GPVirtual, sk Mem) {
	g0, g1 := GP64(), GP64()
	MOVQ(h0, g0)
	ADDQ(U8(5), g0)
	MOVQ(h1, g1)
	ADCQ(U8(0), g1)
	ADCQ(U8(0), h2)
	SHRQ(U8(2), h2)
	CMOVQNE(g0, h0)
	CMOVQNE(g1, h1)
	ADDQ(sk, h0)
	ADCQ(sk.Offset(8), h1)
}
