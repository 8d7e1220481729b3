// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Two or three whole ChaCha20-Poly1305 ops on messages within blocks 1-3 of the key stream, on
// AVX-512: chachaPoly1305Tiny3AVX2's interleaving for the lengths that chachaPoly1305TinyAVX512
// runs one at a time. A lone op of two or three blocks is one chain of dependent steps, its rounds
// (two row-form states of two blocks) and then its MAC's blocks, with most of the vector pipes
// idle through the rounds; three ops' six states fill them. Six states take 24 ymm registers,
// which only the EVEX encoding's 32 give (VPROLD rotates, and leaves the rounds no temporaries to
// need).
// The key stream goes from the rows to one zmm per block (keyStreamAt's shuffles), and the message
// is read and written with byte masks from its length (blockMask), so nothing past a message is
// touched; the MACs read each op's ciphertext, zero-padded to whole blocks, from a stack buffer
// that the masked stores fill. The key stream stays in registers through the MACs, and an Open
// decrypts from them only once its tag has matched.

// tinyWideFrame is one op's stack buffers in chachaPoly1305TinyNAVX512's kernels.
type tinyWideFrame struct {
	ct   Mem // the ciphertext, zero-padded to whole 64-byte blocks
	pad  Mem // the AD's partial last block, zero-padded
	lens Mem // the MAC's lengths block: le64(adLen), le64(n)
	sk   Mem // s, the second half of the Poly1305 key (RFC 8439 section 2.5)
}

// chachaPoly1305TinyNAVX512 generates chachaPoly1305Tiny3AVX512 (lanes 3) and
// chachaPoly1305Tiny2AVX512 (lanes 2, the first two records of its argument).
func chachaPoly1305TinyNAVX512(lanes int) {
	name := fmt.Sprintf("chachaPoly1305Tiny%dAVX512", lanes)
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" is chachaPoly1305Tiny3AVX2 for messages of 0 to 192 bytes: it seals (open false) or",
		fmt.Sprintf("opens the first %d ops of lanes, each with 0 to 767 bytes of AD (RFC 8439 section", lanes),
		"2.8; block 0 the Poly1305 key). Seal writes each ciphertext and tag and returns a bit set",
		"for each op. Open compares each computed tag with the one at the lane's tag in constant",
		"time, writes a lane's dst only when they match, and returns bit i set when lane i's did. src",
		"and dst of a lane may be equal. Nothing is written past a lane's n bytes of dst; the MAC keys",
		"are wiped from the stack.")
	fr := make([]tinyWideFrame, lanes)
	for i := range fr {
		fr[i] = tinyWideFrame{ct: AllocLocal(chachaTinyMax), pad: AllocLocal(16), lens: AllocLocal(16),
			sk: AllocLocal(16)}
	}
	ptr := tinyLaneField

	Comment("Stage each AD's partial last block, zero-padded, and the lengths blocks.")
	zero := XMM()
	VPXOR(zero, zero, zero)
	for i := range fr {
		tinyLaneStageAD(fmt.Sprintf("%s%d", name, i), i, fr[i].pad, fr[i].lens, zero)
	}

	Comment("The rounds: blocks 0-3 of every op, two states each, interleaved.")
	x := tinyWideStates(lanes)
	rowDoubleRounds(x, nil, nil, name+"rounds", nil)

	Comment("Add the initial state (section 2.3); rows to whole blocks, one zmm each (blocks 1-3",
		"of each op); block 0's rows 0 and 1 are the Poly1305 key: r, clamped (section 2.5.1), kept",
		"in a register, s stored for the tag.")
	sigma := YMM()
	VBROADCASTI32X4(chachaSigma, sigma)
	blocks := make([][]VecVirtual, lanes)
	r := make([]VecVirtual, lanes)
	for i := range fr {
		blocks[i] = []VecVirtual{nil, ZMM(), ZMM(), ZMM()}
		key, nonce := ptr(i, laneKey), ptr(i, laneNonce)
		row3 := nonceRow(Mem{Base: nonce})
		for h := range 2 {
			st := x[2*i+h]
			VPADDD(sigma, st[0], st[0])
			k1, k2, c := YMM(), YMM(), YMM()
			VBROADCASTI32X4(Mem{Base: key}, k1)
			VPADDD(k1, st[1], st[1])
			VBROADCASTI32X4(Mem{Base: key, Disp: 16}, k2)
			VPADDD(k2, st[2], st[2])
			VPADDD(rowCounters.Offset(32*h), row3, c)
			VPADDD(c, st[3], st[3])
			stateBlocks(st, 2*h, blocks[i])
		}
		r[i] = XMM()
		VPANDD(polyClamp, x[2*i][0].AsX(), r[i])
		VMOVDQU32(x[2*i][1].AsX(), fr[i].sk)
	}

	Comment("The ciphertext of each op into its stack buffer, zero-padded: Seal XORs the key stream",
		"into the message and writes dst as well; Open copies the ciphertext.")
	open := Load(Param("open"), GP8())
	TESTB(open, open)
	JNZ(LabelRef(name + "stage"))
	for i := range fr {
		n, src, dst := ptr(i, laneN), ptr(i, laneSrc), ptr(i, laneDst)
		done := fmt.Sprintf("%s%dsealed", name, i)
		messageBlocksFrom(1, 4, n, done, func(b, at int) {
			m := ZMM()
			VMOVDQU8_Z(Mem{Base: src, Disp: at}, K1, m)
			VPXORD(blocks[i][b], m, m)
			VMOVDQU8_Z(m, K1, m) // past n: zero, the MAC input's padding
			VMOVDQU8(m, K1, Mem{Base: dst, Disp: at})
			VMOVDQU64(m, fr[i].ct.Offset(at))
		})
		Label(done)
	}
	JMP(LabelRef(name + "mac"))
	Label(name + "stage")
	for i := range fr {
		n, src := ptr(i, laneN), ptr(i, laneSrc)
		done := fmt.Sprintf("%s%dstaged", name, i)
		messageBlocksFrom(1, 4, n, done, func(b, at int) {
			m := ZMM()
			VMOVDQU8_Z(Mem{Base: src, Disp: at}, K1, m)
			VMOVDQU64(m, fr[i].ct.Offset(at))
		})
		Label(done)
	}

	Label(name + "mac")
	Comment("Each op's Poly1305 over AD || pad16 || ciphertext || pad16 || lengths (section 2.8),",
		"then its tag: written (Seal), or compared and, on a match, the message decrypted (Open).")
	okAll := GP64()
	XORQ(okAll, okAll)
	for i := range fr {
		lbl := fmt.Sprintf("%s%d", name, i)
		r0, r1 := GP64(), GP64()
		VMOVQ(r[i], r0)
		VPEXTRQ(U8(1), r[i], r1)
		h0, h1, h2 := aeadMAC(r0, r1, ptr(i, laneAD), ptr(i, laneADLen), fr[i].pad, fr[i].ct, fr[i].lens, lbl)
		polyTag(h0, h1, h2, fr[i].sk)
		tinyLaneVerdict(lbl, i, h0, h1, Mem{Base: ptr(i, laneTag)}, okAll, nil, func() {
			n, dst := ptr(i, laneN), ptr(i, laneDst)
			messageBlocksFrom(1, 4, n, lbl+"done", func(b, at int) {
				m := ZMM()
				VPXORD(fr[i].ct.Offset(at), blocks[i][b], m)
				VMOVDQU8(m, K1, Mem{Base: dst, Disp: at})
			})
		})
	}

	Comment("Wipe the MACs' keys from the stack; the key stream stayed in registers and the buffers",
		"hold only ciphertext and AD.")
	zero = XMM()
	VPXORD(zero, zero, zero)
	for i := range fr {
		VMOVDQU32(zero, fr[i].sk)
	}
	VZEROUPPER()
	Store(okAll.As8(), ReturnIndex(0))
	RET()
}

// tinyWideStates loads the initial states of the first lanes ops of chachaPoly1305TinyNAVX512's
// kernels in the row form with EVEX moves: states 2i and 2i+1 are blocks 0-1 and 2-3 of op i.
func tinyWideStates(lanes int) [][4]VecVirtual {
	x := make([][4]VecVirtual, 2*lanes)
	sigma := YMM()
	VBROADCASTI32X4(chachaSigma, sigma)
	for i := range lanes {
		key := tinyLaneField(i, laneKey)
		row3 := nonceRow(Mem{Base: tinyLaneField(i, laneNonce)})
		for h := range 2 {
			st := &x[2*i+h]
			for w := range 4 {
				st[w] = YMM()
			}
			VMOVDQA32(sigma, st[0])
			VBROADCASTI32X4(Mem{Base: key}, st[1])
			VBROADCASTI32X4(Mem{Base: key, Disp: 16}, st[2])
			VPADDD(rowCounters.Offset(32*h), row3, st[3])
		}
	}
	return x
}
