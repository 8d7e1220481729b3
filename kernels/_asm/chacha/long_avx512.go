// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// chachaPoly1305LongAVX512 is chachaPoly1305SmallAVX512's design for messages of any length past
// block 8: block 0 and 1's state first (the MAC key), then sets of four row-form states (key-stream
// blocks 8k+2 to 8k+9) in a loop, each with the MAC beside its rounds, three blocks a double round:
// a Seal's MAC absorbs the ciphertext the sets before wrote, an Open's the set's own ciphertext,
// which it finishes before it writes the set's plaintext (src and dst may be equal). An Open thus
// writes its plaintext before the tag is checked, as crypto/cipher's GCM and x/crypto's AEADs do;
// the caller zeroes dst where it fails (failOpen).
func chachaPoly1305LongAVX512() {
	const name = "chachaPoly1305LongAVX512"
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" is chachaPoly1305SmallAVX512 for a message of n > 512 bytes: it seals (open false)",
		"or opens the n-byte message at src with the AD of adLen bytes at ad, to dst (src and dst may",
		"be equal), under ChaCha20 key and nonce (RFC 8439 section 2.8). Seal writes the tag to tag and",
		"reports true. Open compares the tag it computes with the one at tag in constant time and",
		"reports whether they match; it writes dst either way, and the caller zeroes it where they do",
		"not. Of what it puts on the stack only the MAC key's second half is secret, and it is wiped.")
	pad, lens, sk, _, adLen := macBuffers()
	pad2, end := AllocLocal(16), AllocLocal(8)
	at := AllocLocal(8) // the message offset of the set's first block: 64 + 512k

	Comment("Stage the AD's partial last block, zero-padded, and an Open's ciphertext's partial last",
		"block, before the decryption overwrites it.")
	{
		zero := XMM()
		VPXORD(zero, zero, zero)
		VMOVDQU32(zero, pad)
		stageADTail(adLen, pad, name+"adtail")
		TESTB(Load(Param("open"), GP8()), Load(Param("open"), GP8()))
		JZ(LabelRef(name + "keyed"))
		stageTail(Load(Param("src"), GP64()), pad2)
		Label(name + "keyed")
	}

	key := Mem{Base: Load(Param("key"), GP64())}
	row3 := nonceRow(Mem{Base: Load(Param("nonce"), GP64())})
	eight := YMM() // the counters' step from one set to the next
	VMOVDQU(rowCounters.Offset(32*4), eight)
	VPSUBD(rowCounters, eight, eight)
	r0, r1 := GP64(), GP64()
	blocks := make([]VecVirtual, 10) // key-stream blocks 1 to 9, one zmm each
	for b := 1; b < len(blocks); b++ {
		blocks[b] = ZMM()
	}
	keyStreamAt(0, 1, key, row3, sk, r0, r1, blocks, name+"rounds0", nil)
	var h0, h1, h2 GPVirtual
	{
		ad, adLen := Load(Param("ad"), GP64()), Load(Param("adLen"), GP64())
		h0, h1, h2 = macAD(r0, r1, ad, adLen, pad, lens, name)
	}
	Comment("Block 1, whole (n > 512): Seal writes its ciphertext for the first set's MAC; Open absorbs",
		"its ciphertext, then writes its plaintext.")
	p := GP64()
	{
		src, dst := Load(Param("src"), GP64()), Load(Param("dst"), GP64())
		open := Load(Param("open"), GP8())
		TESTB(open, open)
		JNZ(LabelRef(name + "openblock1"))
		m := ZMM()
		VPXORD(Mem{Base: src}, blocks[1], m)
		VMOVDQU64(m, Mem{Base: dst})
		MOVQ(dst, p)
		JMP(LabelRef(name + "sets"))
		Label(name + "openblock1")
		MOVQ(src, p)
		for range 4 {
			polyBlock64(h0, h1, h2, Mem{Base: p}, r0, r1)
			ADDQ(U8(16), p)
		}
		m = ZMM()
		VPXORD(Mem{Base: src}, blocks[1], m)
		VMOVDQU64(m, Mem{Base: Load(Param("dst"), GP64())})
	}
	Label(name + "sets")
	MOVQ(U32(64), at)
	hook := macBeside(name+"mac", h0, h1, h2, p, end, r0, r1)

	Label(name + "set")
	Comment("The MAC's blocks beside this set's rounds: Seal's up to the ciphertext written, Open's",
		"to the set's last whole block.")
	{
		a := GP64()
		MOVQ(at, a)
		open := Load(Param("open"), GP8())
		TESTB(open, open)
		JNZ(LabelRef(name + "openend"))
		e := Load(Param("dst"), GP64())
		ADDQ(a, e)
		MOVQ(e, end)
		JMP(LabelRef(name + "rounds"))
		Label(name + "openend")
		whole := Load(Param("n"), GP64())
		ANDQ(I8(-16), whole)
		ADDQ(U32(512), a)
		CMPQ(a, whole)
		CMOVQGT(whole, a)
		ADDQ(Load(Param("src"), GP64()), a)
		MOVQ(a, end)
	}
	Label(name + "rounds")
	keyStreamAt(1, 4, key, row3, Mem{}, nil, nil, blocks, name+"setrounds", hook)
	Comment("Open: the set's MAC blocks the rounds left, before its plaintext overwrites them.")
	macBlocksBelow(name+"catchup", name+"caughtup", h0, h1, h2, p, end, func() (Op, Op) { return r0, r1 })
	Comment("The set's blocks, each under a byte mask of the message bytes it covers.")
	{
		a := GP64()
		MOVQ(at, a)
		src, dst := Load(Param("src"), GP64()), Load(Param("dst"), GP64())
		ADDQ(a, src)
		ADDQ(a, dst)
		left := Load(Param("n"), GP64())
		SUBQ(a, left)
		for b := range 8 {
			CMPQ(left, U32(64*b))
			JBE(LabelRef(name + "setdone"))
			blockMask(left, b+1)
			m := ZMM()
			VMOVDQU8_Z(Mem{Base: src, Disp: 64 * b}, K1, m)
			VPXORD(blocks[b+2], m, m)
			VMOVDQU8(m, K1, Mem{Base: dst, Disp: 64 * b})
		}
	}
	Label(name + "setdone")
	VPADDD(eight, row3, row3)
	{
		a := GP64()
		MOVQ(at, a)
		ADDQ(U32(512), a)
		MOVQ(a, at)
		CMPQ(Load(Param("n"), GP64()), a)
		JA(LabelRef(name + "set"))
	}

	ok := GP8()
	Comment("Seal: its partial last block from dst; both: what is left of the MAC, the tag.")
	{
		open := Load(Param("open"), GP8())
		TESTB(open, open)
		JNZ(LabelRef(name + "finish"))
		stageTail(Load(Param("dst"), GP64()), pad2)
		Label(name + "finish")
		buf := Load(Param("dst"), GP64())
		TESTB(open, open)
		JZ(LabelRef(name + "finishend"))
		Load(Param("src"), buf)
		Label(name + "finishend")
		wholeBlocksEnd(buf, end)
	}
	macFinish(name, h0, h1, h2, p, end, pad2, lens, r0, r1)
	tagOrVerify(name, h0, h1, h2, sk, name+"wipe", func(GPVirtual) { JMP(LabelRef(name + "wipe")) }, ok)

	Label(name + "wipe")
	Comment("Wipe the MAC's key from the stack; the key stream stayed in registers.")
	{
		zero := XMM()
		VPXORD(zero, zero, zero)
		VMOVDQU32(zero, sk)
	}
	VZEROUPPER()
	Store(ok, ReturnIndex(0))
	RET()
}
