// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The fused long kernel's first sets: a Seal's first states (blocks 0 to 2*longSealFirst-1), whose
// ciphertext keeps the MAC busy beside the second set's rounds; an Open's (blocks 0 and 1), after
// which its MAC can start at once, the ciphertext being there.
const (
	longSealFirst = 3
	longOpenFirst = 1
)

// chachaPoly1305LongAVX512 is chachaPoly1305SmallAVX512's design for messages of any length past
// block 8: a first set of states with the MAC key, then sets of four row-form states (eight
// blocks) in a loop, each with the MAC beside its rounds, three blocks a double round. A Seal's MAC
// absorbs the ciphertext the sets before wrote. An Open's absorbs the ciphertext one block behind
// the key stream, from block 1 on, and finishes each set's blocks before it writes their plaintext
// (src and dst may be equal), the set's last key-stream block waiting in a register for the next
// set. An Open thus writes its plaintext before the tag is checked, as crypto/cipher's GCM and
// x/crypto's AEADs do; the caller zeroes dst where it fails (failOpen).
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
	at := AllocLocal(8) // the message offset of the set's first block

	stagePaddedAD(adLen, pad, name)
	ok := GP8()
	open := Load(Param("open"), GP8())
	TESTB(open, open)
	JNZ(LabelRef(name + "open"))
	longSeal(name, pad, lens, sk, pad2, end, at, ok)
	Label(name + "open")
	longOpen(name, pad, lens, sk, pad2, end, at, ok)

	Label(name + "wipe")
	wipeAndReturn(sk, ok)
}

// longState is what both directions of the long kernel start from: row 3 of block counter 0, the
// counters' step from one set to the next, and the first set's key-stream blocks in blocks, with
// r in r0, r1 and s in sk.
func longState(first int, loop string, sk Mem, blocks []VecVirtual) (key Mem, row3, eight VecVirtual, r0, r1 GPVirtual) {
	key = Mem{Base: Load(Param("key"), GP64())}
	row3 = nonceRow(Mem{Base: Load(Param("nonce"), GP64())})
	eight = YMM()
	VMOVDQU(rowCounters.Offset(32*4), eight)
	VPSUBD(rowCounters, eight, eight)
	r0, r1 = GP64(), GP64()
	keyStreamAt(0, first, key, row3, sk, r0, r1, blocks, loop, nil)
	return key, row3, eight, r0, r1
}

// longBlocks returns registers for key-stream blocks 1 to 2*first+7, one zmm each.
func longBlocks(first int) []VecVirtual {
	blocks := make([]VecVirtual, 2*first+8)
	for b := 1; b < len(blocks); b++ {
		blocks[b] = ZMM()
	}
	return blocks
}

// longAD starts the MAC: the AD, whole blocks and its padded tail (macAD).
func longAD(r0, r1 GPVirtual, pad, lens Mem, label string) (h0, h1, h2 GPVirtual) {
	ad, adLen := Load(Param("ad"), GP64()), Load(Param("adLen"), GP64())
	return macAD(r0, r1, ad, adLen, pad, lens, label)
}

// longXOR XORs key-stream blocks ks into the message at offset a (a register) of src, to dst, each
// under a byte mask of the message bytes it covers; past n (a > n included) it jumps to done.
func longXOR(a Register, ks []VecVirtual, done string) {
	src, dst := Load(Param("src"), GP64()), Load(Param("dst"), GP64())
	ADDQ(a, src)
	ADDQ(a, dst)
	left := Load(Param("n"), GP64())
	SUBQ(a, left)
	for b, k := range ks {
		CMPQ(left, U32(64*b))
		JLE(LabelRef(done))
		blockMask(left, b+1)
		m := ZMM()
		VMOVDQU8_Z(Mem{Base: src, Disp: 64 * b}, K1, m)
		VPXORD(k, m, m)
		VMOVDQU8(m, K1, Mem{Base: dst, Disp: 64 * b})
	}
}

// longSeal is the kernel's Seal: blocks 0 to 2*longSealFirst-1, their XOR (whole blocks: n > 512),
// then sets of eight blocks with the MAC of the ciphertext before them beside their rounds, and
// the rest of the MAC. It leaves for the kernel's wipe.
func longSeal(kernel string, pad, lens, sk, pad2, end, at Mem, ok GPVirtual) {
	const first = longSealFirst
	name := kernel + "seal"
	blocks := longBlocks(first)
	key, row3, eight, r0, r1 := longState(first, name+"rounds0", sk, blocks)
	{
		src, dst := Load(Param("src"), GP64()), Load(Param("dst"), GP64())
		for b := 1; b < 2*first; b++ {
			m := ZMM()
			VPXORD(Mem{Base: src, Disp: 64 * (b - 1)}, blocks[b], m)
			VMOVDQU64(m, Mem{Base: dst, Disp: 64 * (b - 1)})
		}
	}
	h0, h1, h2 := longAD(r0, r1, pad, lens, name)
	p := Load(Param("dst"), GP64())
	MOVQ(U32(64*(2*first-1)), at)
	hook := macBeside(name+"mac", h0, h1, h2, p, end, r0, r1)

	Label(name + "set")
	Comment("The MAC beside the set's rounds: the ciphertext written so far.")
	{
		a, e := GP64(), Load(Param("dst"), GP64())
		MOVQ(at, a)
		ADDQ(a, e)
		MOVQ(e, end)
	}
	keyStreamAt(first, 4, key, row3, Mem{}, nil, nil, blocks, name+"setrounds", hook)
	{
		a := GP64()
		MOVQ(at, a)
		longXOR(a, blocks[2*first:], name+"setdone")
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

	sealTag(name, kernel+"wipe", h0, h1, h2, p, end, pad2, lens, sk, r0, r1, ok)
}

// longOpen is the long kernel's Open: block 0 and 1's state, then sets of eight blocks, each with
// the MAC of the ciphertext one block behind beside its rounds, the set's blocks finished before
// their plaintext is written and its last block waiting for the next set; then the rest of the MAC
// and the last block's plaintext (written whether the tag matches or not). It leaves for the
// kernel's wipe.
func longOpen(kernel string, pad, lens, sk, pad2, end, at Mem, ok GPVirtual) {
	const first = longOpenFirst
	name := kernel + "open"
	Comment("The ciphertext's partial last block, before the decryption overwrites it.")
	stageTail(Load(Param("src"), GP64()), pad2)
	blocks := longBlocks(first)
	key, row3, eight, r0, r1 := longState(first, name+"rounds0", sk, blocks)
	pending := ZMM() // the key stream's block after the XORed ones
	VMOVDQA64(blocks[1], pending)
	h0, h1, h2 := longAD(r0, r1, pad, lens, name)
	p := Load(Param("src"), GP64())
	MOVQ(U32(0), at)
	hook := macBeside(name+"mac", h0, h1, h2, p, end, r0, r1)

	Label(name + "set")
	Comment("The MAC beside the set's rounds: the pending block and the set's but its last,",
		"its whole blocks.")
	{
		a, whole := GP64(), Load(Param("n"), GP64())
		MOVQ(at, a)
		ANDQ(I8(-16), whole)
		ADDQ(U32(512), a)
		CMPQ(a, whole)
		CMOVQGT(whole, a)
		ADDQ(Load(Param("src"), GP64()), a)
		MOVQ(a, end)
	}
	keyStreamAt(first, 4, key, row3, Mem{}, nil, nil, blocks, name+"setrounds", hook)
	Comment("The MAC blocks the rounds left, before the plaintext overwrites them.")
	macBlocksBelow(name+"catchup", name+"caughtup", h0, h1, h2, p, end, func() (Op, Op) { return r0, r1 })
	{
		a := GP64()
		MOVQ(at, a)
		ks := append([]VecVirtual{pending}, blocks[2*first:2*first+7]...)
		longXOR(a, ks, name+"setdone")
	}
	Label(name + "setdone")
	VMOVDQA64(blocks[2*first+7], pending)
	VPADDD(eight, row3, row3)
	{
		a := GP64()
		MOVQ(at, a)
		ADDQ(U32(512), a)
		MOVQ(a, at)
		ADDQ(U8(64), a) // the key stream runs one block ahead
		CMPQ(Load(Param("n"), GP64()), a)
		JA(LabelRef(name + "set"))
	}

	Comment("What is left of the MAC, the tag, then the pending block's plaintext.")
	wholeBlocksEnd(Load(Param("src"), GP64()), end)
	macFinish(name, h0, h1, h2, p, end, pad2, lens, r0, r1)
	tagOrVerify(name, h0, h1, h2, sk, name+"last", func(GPVirtual) {}, ok)
	Label(name + "last")
	{
		a := GP64()
		MOVQ(at, a)
		longXOR(a, []VecVirtual{pending}, kernel+"wipe")
	}
	JMP(LabelRef(kernel + "wipe"))
}
