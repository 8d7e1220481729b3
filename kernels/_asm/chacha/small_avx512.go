// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// oneSetStates is the most row-form states of two blocks chachaPoly1305SmallAVX512 runs in one
// set, the whole key stream before the MAC: blocks 1 to 2*oneSetStates-1, oneSetMax bytes. With
// VPROLD the rounds need no register of their own, so the 32 vector registers could hold six.
// Longer messages run their rounds in sets with the MAC beside them (smallSealStates,
// smallOpenStates).
const (
	oneSetStates = 4
	oneSetMax    = (2*oneSetStates - 1) * 64
)

// smallSealStates and smallOpenStates are the most states a Seal and an Open of
// chachaPoly1305SmallAVX512 run (blocks 0 to 13 and 0 to 17), and chachaSmallMax and
// chachaSmallOpenMax the longest messages it seals and opens: past oneSetMax (Open: five blocks)
// its rounds run in sets of at most setStates states, the key stream's blocks kept in zmm registers
// until they are used.
const (
	smallSealStates    = 7
	chachaSmallMax     = (2*smallSealStates - 1) * 64
	smallOpenStates    = 9
	chachaSmallOpenMax = (2*smallOpenStates - 1) * 64
	setStates          = 4
)

// chachaPoly1305SmallAVX512 is chachaPoly1305TinyAVX2's whole op for messages past block 3 and
// within block 13 (Open: block 17), on AVX-512: key-stream blocks 0 to 2s-1 in s interleaved
// row-form states of two blocks (smallKeyStream), the fewest of three to seven (Open: nine) that
// cover the message, rotations by VPROLD, each block then one zmm. A lone message of this size is
// still mostly one chain of dependent steps, the rounds and then the MAC's blocks, which one call
// runs with nothing between them; the one-op path spends a 16-lane pass (or an 8-lane one) on its
// 5-18 blocks and sets up the vector MAC's powers of r on top. The message is read and the result
// written with byte masks (K registers from the length, a public value), so nothing is staged for
// the XOR and nothing is written past n. Up to oneSetMax (Open: five blocks) the rounds run in one
// set and the MAC reads the ciphertext, zero-padded, from a stack buffer that the whole-block
// stores fill (Seal: after the XOR; Open: before it, which waits for the tag). Longer messages run
// the MAC beside later rounds and read the ciphertext in place: an Open beside the rounds of
// blocks 2 on, after those of blocks 0 and 1 (the MAC key); a Seal, whose MAC needs the key
// stream first, blocks 1 to 7's beside the rounds of blocks 8 on.
func chachaPoly1305SmallAVX512() {
	const name = "chachaPoly1305SmallAVX512"
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+fmt.Sprintf(" is chachaPoly1305TinyAVX2 for a message of 0 <= n <= %d bytes (Open: %d): it",
		chachaSmallMax, chachaSmallOpenMax),
		"seals (open false) or opens the n-byte message at src with the AD of adLen bytes at ad, to",
		"dst (src and dst may be equal), under ChaCha20 key and nonce (RFC 8439 section 2.8). Seal writes the",
		"tag to tag and reports true. Open compares the tag it computes with the one at tag in",
		"constant time and reports whether they match; it writes dst only when they do. Of what it",
		"puts on the stack only the MAC key's second half is secret, and it is wiped.")
	ct := AllocLocal(oneSetMax) // one set's: the ciphertext, zero-padded to whole blocks
	pad, lens, sk, n, adLen := macBuffers()
	// The sets': the ciphertext's partial last block, zero-padded, and the end of the blocks the
	// MAC may absorb.
	pad2, end := AllocLocal(16), AllocLocal(8)

	stagePaddedAD(adLen, pad, name)

	key := Mem{Base: Load(Param("key"), GP64())}
	nonce := Mem{Base: Load(Param("nonce"), GP64())}
	r0, r1 := GP64(), GP64()                        // clamped r, straight from the registers of the rounds
	blocks := make([]VecVirtual, smallOpenStates*2) // key-stream blocks 1 on, one zmm each
	for b := 1; b < len(blocks); b++ {
		blocks[b] = ZMM()
	}
	ok := GP8() // the result
	open := Load(Param("open"), GP8())
	TESTB(open, open)
	JNZ(LabelRef(name + "opensize"))
	CMPQ(n, U32(oneSetMax))
	JA(LabelRef(name + "seal"))
	JMP(LabelRef(name + "keystream"))
	Label(name + "opensize")
	CMPQ(n, U32((2*3-1)*64)) // past three states' blocks
	JA(LabelRef(name + "open"))

	Label(name + "keystream")
	Comment("The key stream: blocks 0 to 2s-1 in s states, the fewest that cover the message.")
	for states := 3; states <= oneSetStates; states++ {
		next := fmt.Sprintf("%sstates%d", name, states+1)
		if states < oneSetStates {
			CMPQ(n, U32((2*states-1)*64))
			JA(LabelRef(next))
		}
		smallKeyStream(0, states, key, nonce, sk, r0, r1, blocks, fmt.Sprintf("%srounds%d", name, states), nil)
		if states < oneSetStates {
			JMP(LabelRef(name + "keyed"))
			Label(next)
		}
	}
	Label(name + "keyed")

	Comment("The message block by block, each under a byte mask of its first n-64(b-1) bytes.")
	src := Load(Param("src"), GP64())
	open = Load(Param("open"), GP8())
	TESTB(open, open)
	JNZ(LabelRef(name + "openblocks"))
	{
		dst := Load(Param("dst"), GP64())
		messageBlocks(n, name+"sealdone", func(b, at int) {
			m := ZMM()
			VMOVDQU8_Z(Mem{Base: src, Disp: at}, K1, m)
			VPXORD(blocks[b], m, m)
			VMOVDQU8_Z(m, K1, m) // past n: zero, the MAC input's padding
			VMOVDQU8(m, K1, Mem{Base: dst, Disp: at})
			VMOVDQU64(m, ct.Offset(at))
		})
		Label(name + "sealdone")
		JMP(LabelRef(name + "authenticate"))
	}
	Label(name + "openblocks")
	stageCiphertext(src, Load(Param("n"), GP64()), ct, name+"authenticate")

	Label(name + "authenticate")
	{
		h0, h1, h2 := aeadMAC(r0, r1, Load(Param("ad"), GP64()), Load(Param("adLen"), GP64()), pad, ct, lens, name)
		tagOrVerify(name, h0, h1, h2, sk, name+"wipe", func(GPVirtual) { JMP(LabelRef(name + "wipe")) }, ok)
	}
	Label(name + "decrypt")
	Comment("Decrypt from the staged ciphertext.")
	{
		n := Load(Param("n"), GP64())
		dst := Load(Param("dst"), GP64())
		messageBlocks(n, name+"wipe", func(b, at int) {
			m := ZMM()
			VPXORD(ct.Offset(at), blocks[b], m)
			VMOVDQU8(m, K1, Mem{Base: dst, Disp: at})
		})
	}

	Label(name + "wipe")
	Comment("The stack buffer holds only ciphertext.")
	wipeAndReturn(sk, ok)

	Label(name + "open")
	Comment("Open of more than five blocks: the MAC reads only the ciphertext, which is there before",
		"the key stream, so block 0 (the MAC key) comes first, with block 1, in one state, and the",
		"MAC runs beside the rounds of the states of blocks 2 on, three blocks a double round, where",
		"it would wait for all of them. Below six blocks the MAC is shorter than those rounds, which",
		"then come to more than the wait. The MAC reads the ciphertext's whole blocks in place and",
		"its partial last block from pad2, zero-padded; the decryption reads it in place too, each",
		"block before it writes that block (src and dst may be equal).")
	stageTail(Load(Param("src"), GP64()), pad2)
	smallKeyStream(0, 1, key, nonce, sk, r0, r1, blocks, name+"openrounds1", nil)
	var h0, h1, h2 GPVirtual
	{
		ad, adLen := Load(Param("ad"), GP64()), Load(Param("adLen"), GP64())
		h0, h1, h2 = macAD(r0, r1, ad, adLen, pad, lens, name+"open")
	}
	p := Load(Param("src"), GP64())
	wholeBlocksEnd(p, end)
	hook := macBeside(name+"openmac", h0, h1, h2, p, end, r0, r1)
	// keyStream runs the states of blocks 2 on for s states in all, in sets of at most setStates
	// after block 0 and 1's.
	keyStream := func(states int) {
		for first := 1; first < states; first += setStates {
			k := min(setStates, states-first)
			smallKeyStream(first, k, key, nonce, Mem{}, nil, nil, blocks,
				fmt.Sprintf("%sopenrounds%d_%d", name, states, first), hook)
		}
	}
	for states := 4; states <= smallOpenStates; states++ {
		next := fmt.Sprintf("%sopenstates%d", name, states+1)
		if states < smallOpenStates {
			CMPQ(Load(Param("n"), GP64()), U32((2*states-1)*64))
			JA(LabelRef(next))
		}
		keyStream(states)
		if states < smallOpenStates {
			JMP(LabelRef(name + "openkeyed"))
			Label(next)
		}
	}
	Label(name + "openkeyed")
	macFinish(name+"open", h0, h1, h2, p, end, pad2, lens, r0, r1)
	tagOrVerify(name+"open", h0, h1, h2, sk, name+"wipe", func(GPVirtual) {}, ok)
	Comment("Decrypt in place of the ciphertext, block by block.")
	{
		n := Load(Param("n"), GP64())
		src := Load(Param("src"), GP64())
		dst := Load(Param("dst"), GP64())
		messageBlocksFrom(1, 2*smallOpenStates, n, name+"wipe", func(b, at int) {
			m := ZMM()
			VMOVDQU8_Z(Mem{Base: src, Disp: at}, K1, m)
			VPXORD(blocks[b], m, m)
			VMOVDQU8(m, K1, Mem{Base: dst, Disp: at})
		})
	}
	JMP(LabelRef(name + "wipe"))

	Label(name + "seal")
	Comment("Seal of more than oneSetMax bytes: the MAC reads the ciphertext, which comes only with",
		"the key stream, so the rounds run in two sets, blocks 0 to 7 (the MAC key and the",
		"message's first 448 bytes) and then the rest, with the MAC of blocks 1 to 7's ciphertext",
		"beside the second set's rounds, three blocks a double round, where it would wait for all",
		"of them. It reads the ciphertext in place, its partial last block from pad2, zero-padded.")
	smallKeyStream(0, setStates, key, nonce, sk, r0, r1, blocks, name+"sealrounds", nil)
	{
		src, dst := Load(Param("src"), GP64()), Load(Param("dst"), GP64())
		for b := 1; b < 2*setStates; b++ { // whole blocks: n > oneSetMax >= 7*64
			m := ZMM()
			VPXORD(Mem{Base: src, Disp: 64 * (b - 1)}, blocks[b], m)
			VMOVDQU64(m, Mem{Base: dst, Disp: 64 * (b - 1)})
		}
	}
	{
		ad, adLen := Load(Param("ad"), GP64()), Load(Param("adLen"), GP64())
		h0, h1, h2 = macAD(r0, r1, ad, adLen, pad, lens, name+"seal")
	}
	p = Load(Param("dst"), GP64())
	{
		e := GP64()
		LEAQ(Mem{Base: p, Disp: 64 * (2*setStates - 1)}, e)
		MOVQ(e, end)
	}
	hook = macBeside(name+"sealmac", h0, h1, h2, p, end, r0, r1)
	for states := setStates + 1; states <= smallSealStates; states++ {
		next := fmt.Sprintf("%ssealstates%d", name, states+1)
		if states < smallSealStates {
			CMPQ(Load(Param("n"), GP64()), U32((2*states-1)*64))
			JA(LabelRef(next))
		}
		smallKeyStream(setStates, states-setStates, key, nonce, Mem{}, nil, nil, blocks,
			fmt.Sprintf("%ssealrounds%d", name, states), hook)
		if states < smallSealStates {
			JMP(LabelRef(name + "sealkeyed"))
			Label(next)
		}
	}
	Label(name + "sealkeyed")
	{
		n := Load(Param("n"), GP64())
		src, dst := Load(Param("src"), GP64()), Load(Param("dst"), GP64())
		messageBlocksFrom(2*setStates, 2*smallSealStates, n, name+"sealxored", func(b, at int) {
			m := ZMM()
			VMOVDQU8_Z(Mem{Base: src, Disp: at}, K1, m)
			VPXORD(blocks[b], m, m)
			VMOVDQU8(m, K1, Mem{Base: dst, Disp: at})
		})
		Label(name + "sealxored")
	}
	sealTag(name+"seal", name+"wipe", h0, h1, h2, p, end, pad2, lens, sk, r0, r1, ok)
}

// sealTag ends a fused AVX-512 kernel's Seal once its ciphertext is written: the ciphertext's
// partial last block staged from dst to pad2, the MAC blocks the rounds left from p on
// (macFinish), the tag stored at the tag parameter, ok set; then it jumps to wipe.
func sealTag(label, wipe string, h0, h1, h2 GPVirtual, p Register, end, pad2, lens, sk Mem, r0, r1, ok GPVirtual) {
	Comment("The ciphertext's partial last block, what is left of the MAC, the tag.")
	{
		dst := Load(Param("dst"), GP64())
		stageTail(dst, pad2)
		wholeBlocksEnd(dst, end)
	}
	macFinish(label, h0, h1, h2, p, end, pad2, lens, r0, r1)
	polyTag(h0, h1, h2, sk)
	tag := Mem{Base: Load(Param("tag"), GP64())}
	MOVQ(h0, tag)
	MOVQ(h1, tag.Offset(8))
	MOVB(U8(1), ok)
	JMP(LabelRef(wipe))
}

// stagePaddedAD copies the AD's partial last block to pad, zero-padded (stageADTail).
func stagePaddedAD(adLen Register, pad Mem, name string) {
	Comment("Stage the AD's partial last block, zero-padded.")
	zero := XMM()
	VPXORD(zero, zero, zero)
	VMOVDQU32(zero, pad)
	stageADTail(adLen, pad, name+"adtail")
}

// wipeAndReturn ends a fused AVX-512 kernel: it wipes s, the MAC key's second half, from sk (the
// key stream stays in registers), and returns ok.
func wipeAndReturn(sk Mem, ok GPVirtual) {
	Comment("Wipe the MAC's key from the stack; the key stream stayed in registers.")
	zero := XMM()
	VPXORD(zero, zero, zero)
	VMOVDQU32(zero, sk)
	VZEROUPPER()
	Store(ok, ReturnIndex(0))
	RET()
}

// stageTail copies the partial last block of the n-byte message at buf (the n mod 16 bytes past
// its whole blocks) to pad2, zero-padded.
func stageTail(buf Register, pad2 Mem) {
	n := Load(Param("n"), GP64())
	cnt, at := GP64(), GP64()
	MOVQ(n, cnt)
	ANDQ(U8(15), cnt)
	MOVQ(n, at)
	ANDQ(I8(-16), at)
	byteMask(cnt)
	tail := XMM()
	VMOVDQU8_Z(Mem{Base: buf, Index: at, Scale: 1}, K1, tail)
	VMOVDQU64(tail, pad2)
}

// wholeBlocksEnd stores in end the end of the whole blocks of the n-byte message at buf.
func wholeBlocksEnd(buf Register, end Mem) {
	e := Load(Param("n"), GP64())
	ANDQ(I8(-16), e)
	ADDQ(buf, e)
	MOVQ(e, end)
}

// macBeside returns the hook of the rounds (rowDoubleRounds') that absorbs the block at p into h0,
// h1, h2 at each of its points, unless p has reached end.
func macBeside(label string, h0, h1, h2 GPVirtual, p Register, end Mem, r0, r1 GPVirtual) func(k int) {
	r := func() (Op, Op) { return r0, r1 }
	return func(int) {
		labels++
		macBlockBelow(fmt.Sprintf("%s%d", label, labels), h0, h1, h2, p, end, r)
	}
}

// macFinish absorbs the message's whole blocks from p up to end that the rounds left, its partial
// last block from pad2, zero-padded, if it has one, then the lengths block.
func macFinish(label string, h0, h1, h2 GPVirtual, p Register, end, pad2, lens Mem, r0, r1 GPVirtual) {
	Comment("The ciphertext's whole blocks the rounds left, its padded tail, then the lengths block.")
	r := func() (Op, Op) { return r0, r1 }
	macBlocksBelow(label+"rest", label+"tail", h0, h1, h2, p, end, r)
	TESTQ(U32(15), Load(Param("n"), GP64()))
	JZ(LabelRef(label + "lens"))
	polyBlock64(h0, h1, h2, pad2, r0, r1)
	Label(label + "lens")
	polyBlock64(h0, h1, h2, lens, r0, r1)
}

// stageCiphertext copies the n-byte ciphertext at src to ct, zero-padded to whole blocks (the MAC
// input, and the decryption's source), and jumps to done.
func stageCiphertext(src, n Register, ct Mem, done string) {
	messageBlocks(n, done, func(b, at int) {
		m := ZMM()
		VMOVDQU8_Z(Mem{Base: src, Disp: at}, K1, m)
		VMOVDQU64(m, ct.Offset(at))
	})
	JMP(LabelRef(done))
}

// messageBlocks runs body(b, at) for key-stream blocks b = 1 to 2*oneSetStates-1 while the n-byte
// message reaches them (at: the message offset of block b, 64(b-1)), with K1 the bytes of the block
// it covers (blockMask); past the message's last block it jumps to done.
func messageBlocks(n Register, done string, body func(b, at int)) {
	messageBlocksFrom(1, 2*oneSetStates, n, done, body)
}

// messageBlocksFrom is messageBlocks for key-stream blocks first to last-1.
func messageBlocksFrom(first, last int, n Register, done string, body func(b, at int)) {
	for b := first; b < last; b++ {
		CMPQ(n, U32(64*(b-1)))
		JBE(LabelRef(done))
		blockMask(n, b)
		body(b, 64*(b-1))
	}
}

// blockMask sets K1 to the bytes of key-stream block b that the n-byte message covers: its first
// min(n-64(b-1), 64), for n > 64(b-1). n is public.
func blockMask(n Register, b int) {
	cnt, full := GP64(), GP64()
	MOVQ(n, cnt)
	SUBQ(U32(64*(b-1)), cnt)
	MOVQ(U32(64), full)
	CMPQ(cnt, full)
	CMOVQGT(full, cnt)
	byteMask(cnt)
}

// byteMask sets K1 to the first cnt bytes (cnt <= 64, public; a count of 64 keeps all 64 bits),
// clobbering cnt.
func byteMask(cnt GPVirtual) {
	ones := GP64()
	MOVQ(I32(-1), ones)
	BZHIQ(cnt, ones, cnt)
	KMOVQ(cnt, K1)
}

// smallKeyStream computes key-stream blocks 2*first to 2*(first+states)-1 in the row form
// (rowStates, VPROLD) and puts them, but block 0, into blocks, one zmm each; with first = 0 it
// leaves r in r0, r1 and s in sk. Zen 4 runs a zmm instruction as two ymm halves, so ymm states do
// the same work as zmm ones, and each message runs no more of them than its blocks need.
func smallKeyStream(first, states int, key, nonce, sk Mem, r0, r1 GPVirtual, blocks []VecVirtual, loop string, hook func(k int)) {
	keyStreamAt(first, states, key, nonceRow(nonce), sk, r0, r1, blocks, loop, hook)
}

// nonceRowX sets x to row 3 of the state of block counter 0 with the nonce at nonce (section 2.3),
// through two loads that need no store to forward to them.
func nonceRowX(nonce Mem, x Register) {
	VMOVQ(nonce, x)
	VPINSRD(U8(2), nonce.Offset(8), x, x)
	VPSLLDQ(U8(4), x, x)
}

// nonceRow returns row 3 of the state of block counter 0 (section 2.3: the counter, then the nonce)
// in both 128-bit halves of a ymm register.
func nonceRow(nonce Mem) VecVirtual {
	row3x := XMM()
	nonceRowX(nonce, row3x)
	row3 := YMM()
	VSHUFI32X4(U8(0), row3x.AsY(), row3x.AsY(), row3)
	return row3
}

// keyStreamAt is smallKeyStream with row 3 given (nonceRow, its counters advanced by a multiple of
// two for later blocks).
func keyStreamAt(first, states int, key Mem, row3 VecVirtual, sk Mem, r0, r1 GPVirtual, blocks []VecVirtual, loop string, hook func(k int)) {
	x := rowStatesFrom(first, states, key, row3, sk, r0, r1, true, true, loop, hook)
	Comment("Rows to whole blocks: half h of rows 0 and 1, then of rows 2 and 3.")
	for s := range x {
		stateBlocks(x[s], 2*(first+s), blocks)
	}
}

// stateBlocks puts the blocks of the row-form state st, blocks b and b+1 (the low and high halves
// of its rows), into blocks[b] and blocks[b+1], one zmm each; block 0, the Poly1305 key, stays.
func stateBlocks(st [4]VecVirtual, b int, blocks []VecVirtual) {
	for h := range 2 {
		if b+h == 0 {
			continue
		}
		imm := U8(h | h<<1) // half h of the first source, then of the second
		lo, hi := YMM(), YMM()
		VSHUFI64X2(imm, st[1], st[0], lo)
		VSHUFI64X2(imm, st[3], st[2], hi)
		VINSERTI64X4(U8(1), hi, lo.AsZ(), blocks[b+h])
	}
}
