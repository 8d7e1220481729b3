// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Two whole ChaCha20-Poly1305 ops on messages within blocks 1-2 of the key stream, on AVX2: the
// three-op kernel's interleaving for ops that need three blocks each. Alone, such an op runs two
// row-form states (blocks 0-3), a chain of dependent steps with the vector pipes mostly idle; two
// of them need six blocks, three states, which twelve of the sixteen ymm registers hold with
// room for the rotations' temporaries: state s blocks 0 and 1 of op s, state 2 block 2 of op 0 in
// its low halves and of op 1 in its high halves (each 128-bit half is a block of its own, under
// its own key and nonce). The MACs then run one after the other, as in chachaPoly1305Tiny3AVX2.

// chachaTinyPairMax is the longest message chachaPoly1305Tiny2AVX2 takes: blocks 1 and 2.
const chachaTinyPairMax = 2 * 64

func chachaPoly1305Tiny2AVX2() {
	const name = "chachaPoly1305Tiny2AVX2"
	const ops = 2
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" seals (open false) or opens the first two ops of lanes, each a message of 0 to",
		fmt.Sprintf("%d bytes with 0 to 767 bytes of AD (RFC 8439 section 2.8; block 0 the Poly1305 key).", chachaTinyPairMax),
		"Seal writes each ciphertext and tag and returns 3. Open compares each computed tag with the",
		"one at the lane's tag in constant time, writes a lane's dst only when they match, and returns",
		"bit i set when lane i's did. src and dst of a lane may be equal. The stack buffers are wiped.")
	var fr [ops]tinyLaneFrame
	for i := range fr {
		fr[i] = tinyLaneFrame{msg: AllocLocal(chachaTinyPairMax), ks: AllocLocal(chachaTinyPairMax),
			pad: AllocLocal(16), lens: AllocLocal(16), r: AllocLocal(16), sk: AllocLocal(16)}
	}
	Comment("Stage each message and AD's partial last block, zero-padded, and the lengths blocks.")
	zero := YMM()
	VPXOR(zero, zero, zero)
	for i := range fr {
		for c := range chachaTinyPairMax / 32 {
			VMOVDQU(zero, fr[i].msg.Offset(32*c))
		}
		tinyLaneStage(fmt.Sprintf("%s%d", name, i), i, fr[i], zero)
	}

	Comment("The rounds: blocks 0 and 1 of each op, one state each, and block 2 of both in a third,",
		"interleaved.")
	var third [4]VecVirtual
	for w := range third {
		third[w] = YMM()
		tinyPairRow(w, third[w])
	}
	x := append(tinyLaneStates(ops), third)
	rowDoubleRounds(x, rotMasks, rotMasks.Offset(32), name+"rounds", nil)

	Comment("Add the initial state (section 2.3). Block 0's rows 0 and 1 are the Poly1305 key;",
		"blocks 1 and 2 the key stream: XORed into the staged message (Seal, bytes past n zeroed",
		"for the MAC's padding) or kept for after the tag has matched (Open).")
	for w := range 4 {
		in := YMM()
		tinyPairRow(w, in)
		VPADDD(in, x[ops][w], x[ops][w])
	}
	for s := range fr {
		lbl := fmt.Sprintf("%s%d", name, s)
		tinyLaneFinal(x[s], s, fr[s].r, fr[s].sk)
		tinyLaneBlock1(x[s], s, func(c int) Mem { return fr[s].msg.Offset(32 * c) }, fr[s].ks, lbl+"b1", nil)
		tinyLaneBlock(x[ops], s, s, 64, func(c int) Mem { return fr[s].msg.Offset(64 + 32*c) }, fr[s].ks.Offset(64),
			lbl+"b2", nil)
	}

	Comment("Each op's Poly1305 over AD || pad16 || ciphertext || pad16 || lengths (section 2.8),",
		"then its tag: written (Seal), or compared and, on a match, the message decrypted (Open).")
	okAll := GP64()
	XORQ(okAll, okAll)
	for s := range fr {
		lbl := fmt.Sprintf("%s%d", name, s)
		tinyLaneMAC(lbl, s, fr[s], okAll, chachaTinyPairMax)
	}

	Comment("Wipe the key streams, the messages and the MACs' keys from the stack.")
	tinyLaneWipe(fr[:], chachaTinyPairMax)
	VZEROUPPER()
	Store(okAll.As8(), ReturnIndex(0))
	RET()
}

// tinyPairRow loads row w of the initial state of chachaPoly1305Tiny2AVX2's third row-form state
// into y: block 2 of op 0 in the low half, of op 1 in the high half (section 2.3: the constants,
// each op's key, then block counter 2 and each op's nonce). Row 3 takes one more xmm register.
func tinyPairRow(w int, y VecVirtual) {
	switch w {
	case 0:
		VBROADCASTI128(chachaSigma, y)
	case 1, 2:
		VMOVDQU(Mem{Base: tinyLaneField(0, laneKey), Disp: 16 * (w - 1)}, y.AsX())
		VINSERTI128(U8(1), Mem{Base: tinyLaneField(1, laneKey), Disp: 16 * (w - 1)}, y, y)
	case 3:
		hi, two := XMM(), GP32()
		MOVL(U32(2), two)
		nonceRowX(Mem{Base: tinyLaneField(0, laneNonce)}, y.AsX())
		VPINSRD(U8(0), two, y.AsX(), y.AsX())
		nonceRowX(Mem{Base: tinyLaneField(1, laneNonce)}, hi)
		VPINSRD(U8(0), two, hi, hi)
		VINSERTI128(U8(1), hi, y, y)
	}
}
