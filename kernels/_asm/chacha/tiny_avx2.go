// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// A whole ChaCha20-Poly1305 op (RFC 8439 section 2.8) on a message within blocks 1-3 of the key
// stream, in one call: at that size the op is one chain of dependent steps (the rounds, then the
// MAC's blocks), and what it costs beyond the chain is call boundaries and the buffers between them.
//
// The key stream runs in the row form of chachaKS4AVX2, one ymm per row of two blocks: blocks 0-1
// for a message within block 1, blocks 0-3 (two states interleaved) otherwise. One state is not
// only half the work: on Zen 3 two states in turns take some 30 ns longer (their shifts and
// shuffles share two pipes), so a message within block 1 does not run blocks 2-3. r goes from the
// rounds' registers to the MAC's (a trip through the stack would put a store-to-load forwarding on
// the chain). Seal XORs the key stream into the staged message straight from the registers, so the
// ciphertext the MAC reads is one store away from the rounds, and no key stream is left to wipe;
// Open, which authenticates first, keeps the key stream in a stack buffer for the XOR after the
// tag has matched. The MAC runs on the scalar pipes in radix 2^64 (polyBlock64).
//
// The message is staged in a zero-padded stack buffer before the rounds: the MAC reads its padded
// last block from there, and the staging's narrow stores (a partial block) have retired by the
// time the MAC's wide loads read them, where forwarding from them would stall. The AD's partial
// last block is staged the same way.

// chachaSigma holds the four constant words of the ChaCha20 state (section 2.3), "expand 32-byte k".
var chachaSigma Mem

// tailMask holds 32 bytes 0xff then 32 bytes 0x00: the 32 bytes at 32-k keep the first k bytes of a
// chunk.
var tailMask Mem

// polyClamp is the mask that clamps r (RFC 8439 section 2.5.1).
var polyClamp Mem

func tinyTables() {
	polyClamp = GLOBL("poly1305Clamp", RODATA|NOPTR)
	DATA(0, U64(0x0ffffffc0fffffff))
	DATA(8, U64(0x0ffffffc0ffffffc))
	chachaSigma = GLOBL("chachaSigma", RODATA|NOPTR)
	for i, w := range []uint32{0x61707865, 0x3320646e, 0x79622d32, 0x6b206574} {
		DATA(4*i, U32(w))
	}
	tailMask = GLOBL("chachaTailMask", RODATA|NOPTR)
	for i := range 16 { // the assembler takes the entries in order
		DATA(4*i, U32(^uint32(0)*uint32(1-i/8)))
	}
}

// chachaTinyMax is the longest message chachaPoly1305TinyAVX2 takes: blocks 1-3.
const chachaTinyMax = 3 * 64

// chachaPoly1305Tiny generates chachaPoly1305TinyAVX2, or with prold chachaPoly1305TinyAVX512: the
// same op with its rotations by VPROLD (AVX-512VL) instead of byte shuffles and shift pairs, one
// instruction and one step of the rounds' chain where a rotation by 12 or 7 took three and two.
func chachaPoly1305Tiny(prold bool) {
	name := "chachaPoly1305TinyAVX2"
	if prold {
		name = "chachaPoly1305TinyAVX512"
	}
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" seals (open false) or opens the n-byte message at src (0 <= n <= 192) with the AD",
		"of adLen bytes at ad, to dst (src and dst may be equal), under ChaCha20 key and nonce",
		"(RFC 8439 section 2.8; block 0 the Poly1305 key). Seal writes the tag to tag and reports",
		"true. Open compares the tag it computes with the one at tag in constant time and reports",
		"whether they match; it writes dst only when they do. The stack buffers are wiped.")
	msg := AllocLocal(chachaTinyMax) // the message, zero-padded; after the XOR the ciphertext
	ks := AllocLocal(chachaTinyMax)  // key-stream blocks 1-3
	pad, lens, sk, n, adLen := macBuffers()

	Comment("Stage the message and the AD's partial last block, zero-padded.")
	zero := YMM()
	VPXOR(zero, zero, zero)
	for i := range chachaTinyMax / 32 {
		VMOVDQU(zero, msg.Offset(32*i))
	}
	VMOVDQU(zero.AsX(), pad)
	{
		src, d, k := Load(Param("src"), GP64()), GP64(), GP64()
		LEAQ(msg, d)
		MOVQ(n, k)
		copyBytes(d, src, k, name+"stage")
		stageADTail(adLen, pad, name+"adtail")
	}

	Comment("The key stream: blocks 0-1, or 0-3 when the message goes past block 1.")
	key := Mem{Base: Load(Param("key"), GP64())}
	nonce := Mem{Base: Load(Param("nonce"), GP64())}
	row3 := YMM() // counter 0 and the nonce, in both halves
	VMOVQ(nonce, row3.AsX())
	VPINSRD(U8(2), nonce.Offset(8), row3.AsX(), row3.AsX())
	VPSLLDQ(U8(4), row3.AsX(), row3.AsX())
	VINSERTI128(U8(1), row3.AsX(), row3, row3)
	open := Load(Param("open"), GP8())
	r0, r1 := GP64(), GP64() // clamped r, straight from the registers of the rounds
	CMPQ(n, U8(64))
	JA(LabelRef(name + "four"))
	TESTB(open, open)
	JNZ(LabelRef(name + "twoopen"))
	tinyKeyStream(1, key, row3, sk, r0, r1, tinyOut{prold: prold, msg: msg, n: n}, name+"rounds2seal")
	JMP(LabelRef(name + "sealout"))
	Label(name + "twoopen")
	tinyKeyStream(1, key, row3, sk, r0, r1, tinyOut{prold: prold, ks: ks}, name+"rounds2open")
	JMP(LabelRef(name + "authenticate"))
	Label(name + "four")
	TESTB(open, open)
	JNZ(LabelRef(name + "fouropen"))
	tinyKeyStream(2, key, row3, sk, r0, r1, tinyOut{prold: prold, msg: msg, n: n}, name+"rounds4seal")
	JMP(LabelRef(name + "sealout"))
	Label(name + "fouropen")
	tinyKeyStream(2, key, row3, sk, r0, r1, tinyOut{prold: prold, ks: ks}, name+"rounds4open")
	JMP(LabelRef(name + "authenticate"))

	Label(name + "sealout")
	{
		n := Load(Param("n"), GP64())
		d, s := Load(Param("dst"), GP64()), GP64()
		LEAQ(msg, s)
		copyBytes(d, s, n, name+"sealcopy")
	}

	Label(name + "authenticate")
	ok := authenticate(name, r0, r1, pad, msg, lens, sk, name+"wipe", func(ok GPVirtual) {
		Comment("Seal: only the MAC's key is left to wipe; the ciphertext replaced the message and the",
			"key stream stayed in registers.")
		zero := YMM()
		VPXOR(zero, zero, zero)
		VMOVDQU(zero.AsX(), sk)
		VZEROUPPER()
		Store(ok, ReturnIndex(0))
		RET()
	})
	n = Load(Param("n"), GP64())
	tinyXOR(msg, ks, n, chachaTinyMax, name+"open")
	{
		d, s := Load(Param("dst"), GP64()), GP64()
		LEAQ(msg, s)
		copyBytes(d, s, n, name+"openout")
	}

	Label(name + "wipe")
	Comment("Wipe the key stream, the message and the MAC's key from the stack.")
	zero = YMM()
	VPXOR(zero, zero, zero)
	for i := range chachaTinyMax / 32 {
		VMOVDQU(zero, msg.Offset(32*i))
		VMOVDQU(zero, ks.Offset(32*i))
	}
	VMOVDQU(zero.AsX(), pad)
	VMOVDQU(zero.AsX(), sk)
	VZEROUPPER()
	Store(ok, ReturnIndex(0))
	RET()
}

// macBuffers allocates the stack buffers a fused kernel's MAC needs: pad, the AD's partial last
// block (stageADTail); lens, the lengths block le64(adLen) || le64(n), which it fills; and sk for s,
// the second half of the Poly1305 key (section 2.5). It returns them with the n and adLen
// parameters loaded.
func macBuffers() (pad, lens, sk Mem, n, adLen Register) {
	pad, lens, sk = AllocLocal(16), AllocLocal(16), AllocLocal(16)
	n = Load(Param("n"), GP64())
	adLen = Load(Param("adLen"), GP64())
	MOVQ(adLen, lens)
	MOVQ(n, lens.Offset(8))
	return pad, lens, sk, n, adLen
}

// stageADTail copies the AD's partial last block (the last adLen mod 16 bytes at the ad parameter)
// to pad, which the caller has zeroed: the MAC reads it there zero-padded (aeadMAC).
func stageADTail(adLen Register, pad Mem, label string) {
	ad, k, d := Load(Param("ad"), GP64()), GP64(), GP64()
	MOVQ(adLen, k)
	ANDQ(I32(-16), k)
	ADDQ(k, ad)
	MOVQ(adLen, k)
	ANDQ(U8(15), k)
	LEAQ(pad, d)
	copyBytes(d, ad, k, label)
}

// authenticate emits the MAC over the op's AD and the ciphertext staged in buf (aeadMAC) and its tag
// (polyTag), and returns the register of the kernel's result. Seal stores the tag at the tag
// parameter, sets ok and runs sealed, which must leave the kernel; Open compares the tag with the
// one at the tag parameter in constant time, sets ok to whether they match and jumps to mismatch
// unless they do, falling through to the decryption where they do.
func authenticate(name string, r0, r1 GPVirtual, pad, buf, lens, sk Mem, mismatch string, sealed func(ok GPVirtual)) GPVirtual {
	Comment("Poly1305 over AD || pad16 || ciphertext || pad16 || lengths (section 2.8).")
	h0, h1, h2 := aeadMAC(r0, r1, Load(Param("ad"), GP64()), Load(Param("adLen"), GP64()), pad, buf, lens, name)
	ok := GP8()
	tagOrVerify(name, h0, h1, h2, sk, mismatch, sealed, ok)
	return ok
}

// tagOrVerify finishes authenticate from the accumulator h0, h1, h2 of the whole MAC input, the
// result in ok.
func tagOrVerify(name string, h0, h1, h2 GPVirtual, sk Mem, mismatch string, sealed func(ok GPVirtual), ok GPVirtual) {
	Comment("The tag: h mod p + s mod 2^128 (section 2.5.1).")
	polyTag(h0, h1, h2, sk)
	tag := Mem{Base: Load(Param("tag"), GP64())}
	open := Load(Param("open"), GP8())
	TESTB(open, open)
	JNZ(LabelRef(name + "verify"))
	MOVQ(h0, tag)
	MOVQ(h1, tag.Offset(8))
	MOVB(U8(1), ok)
	sealed(ok)

	Label(name + "verify")
	Comment("Open: compare in constant time; decrypt only on a match.")
	XORQ(tag, h0)
	XORQ(tag.Offset(8), h1)
	ORQ(h1, h0)
	SETEQ(ok)
	JNE(LabelRef(mismatch))
}

// aeadMAC runs Poly1305 (radix 2^64, polyBlock64) over AD || pad16 || ciphertext || pad16 ||
// lengths (RFC 8439 section 2.8) with the clamped r0, r1 and returns the accumulator: the AD's whole
// blocks from ad (adLen bytes; both consumed), its partial last block from pad, the ciphertext's
// ceil(n/16) blocks from msg and the lengths block from lens (le64(adLen), le64(n)).
func aeadMAC(r0, r1 Op, ad, adLen Register, pad, msg, lens Mem, label string) (h0, h1, h2 GPVirtual) {
	h0, h1, h2 = macAD(r0, r1, ad, adLen, pad, lens, label)
	polyLoop := func(p, blocks Register, label string) {
		TESTQ(blocks, blocks)
		JZ(LabelRef(label + "done"))
		Label(label)
		polyBlock64(h0, h1, h2, Mem{Base: p}, r0, r1)
		ADDQ(U8(16), p)
		DECQ(blocks)
		JNZ(LabelRef(label))
		Label(label + "done")
	}
	LEAQ(msg, ad)
	MOVQ(lens.Offset(8), adLen)
	ADDQ(U8(15), adLen)
	SHRQ(U8(4), adLen)
	polyLoop(ad, adLen, label+"ct")
	polyBlock64(h0, h1, h2, lens, r0, r1)
	return h0, h1, h2
}

// macAD starts aeadMAC: a zero accumulator, then the AD's whole blocks from ad (adLen bytes; both
// consumed) and its partial last block from pad (lens holds le64(adLen)).
func macAD(r0, r1 Op, ad, adLen Register, pad, lens Mem, label string) (h0, h1, h2 GPVirtual) {
	h0, h1, h2 = GP64(), GP64(), GP64()
	XORQ(h0, h0)
	XORQ(h1, h1)
	XORQ(h2, h2)
	SHRQ(U8(4), adLen)
	TESTQ(adLen, adLen)
	JZ(LabelRef(label + "addone"))
	Label(label + "ad")
	polyBlock64(h0, h1, h2, Mem{Base: ad}, r0, r1)
	ADDQ(U8(16), ad)
	DECQ(adLen)
	JNZ(LabelRef(label + "ad"))
	Label(label + "addone")
	TESTQ(U32(15), lens)
	JZ(LabelRef(label + "adpadded"))
	polyBlock64(h0, h1, h2, pad, r0, r1)
	Label(label + "adpadded")
	return h0, h1, h2
}

// tinyOut says where tinyKeyStream puts key-stream blocks 1 on: for Open, to the buffer ks; for
// Seal, XORed into the first n bytes of the staged message msg, the bytes of the last 32-byte chunk
// past n zeroed (the MAC input's padding), which spares Seal a round trip through memory.
type tinyOut struct {
	ks    Mem
	msg   Mem
	n     Register
	prold bool // rotate with VPROLD (chachaPoly1305TinyAVX512)
}

// tinyKeyStream computes key-stream blocks 0 to 2*states-1 in the row form (rowStates) and hands
// blocks 1 on to out in 32-byte chunks, leaving r in r0, r1 and s in sk.
func tinyKeyStream(states int, key Mem, row3 VecVirtual, sk Mem, r0, r1 GPVirtual, out tinyOut, loop string) {
	x := rowStates(states, key, row3, sk, r0, r1, out.prold, false, loop)
	var mask GPVirtual
	if out.n != nil {
		mask = GP64()
		LEAQ(tailMask, mask)
	}
	for s := range x {
		for _, half := range []int{0, 1} {
			blk := 2*s + half
			if blk == 0 {
				continue
			}
			imm := U8(0x20) // the low halves: block 2s
			if half == 1 {
				imm = U8(0x31)
			}
			for c := range 2 { // bytes 32c..32c+31 of the block: rows 2c and 2c+1
				t := YMM()
				VPERM2I128(imm, x[s][2*c+1], x[s][2*c], t)
				at := 64*(blk-1) + 32*c
				if out.n == nil {
					VMOVDQU(t, out.ks.Offset(at))
					continue
				}
				CMPQ(out.n, U32(at))
				JBE(LabelRef(loop + "done"))
				VPXOR(out.msg.Offset(at), t, t)
				Comment(fmt.Sprintf("Bytes past n: 32-byte offset max(0, %d-n) into the tail mask.", at+32))
				off, z := GP64(), GP64()
				MOVQ(U32(at+32), off)
				SUBQ(out.n, off)
				XORQ(z, z)
				CMPQ(off, z)
				CMOVQLT(z, off)
				VPAND(Mem{Base: mask, Index: off, Scale: 1}, t, t)
				VMOVDQU(t, out.msg.Offset(at))
			}
		}
	}
	if out.n != nil {
		Label(loop + "done")
	}
}

// rowStates computes key-stream blocks 0 to 2*states-1 in the row form (chachaKS4AVX2): state s
// holds blocks 2s and 2s+1 in the low and high halves of its four ymm rows (row3: counter 0 and the
// nonce in both halves), rotations by VPROLD where prold. Of block 0's first 32 bytes, the Poly1305
// key (section 2.6), it leaves r clamped (section 2.5.1) in r0, r1 and writes s to sk. evex takes
// the EVEX forms of its moves, for kernels whose registers run past 15; the AVX2 kernel keeps VEX.
func rowStates(states int, key Mem, row3 VecVirtual, sk Mem, r0, r1 GPVirtual, prold, evex bool, loop string) [][4]VecVirtual {
	return rowStatesFrom(0, states, key, row3, sk, r0, r1, prold, evex, loop, nil)
}

// rowStatesFrom is rowStates for states first to first+states-1 (blocks 2*first on), hook as
// rowDoubleRounds'; only state 0 gives the Poly1305 key, so with first > 0 r0, r1 and sk are not
// touched (and may be nil).
func rowStatesFrom(first, states int, key Mem, row3 VecVirtual, sk Mem, r0, r1 GPVirtual, prold, evex bool,
	loop string, hook func(k int)) [][4]VecVirtual {
	broadcast := func(m Mem, y VecVirtual) { VBROADCASTI128(m, y) }
	move := func(a, b Op) { VMOVDQA(a, b) }
	and := func(a, b, c Op) { VPAND(a, b, c) }
	store := func(a, b Op) { VMOVDQU(a, b) }
	if evex {
		broadcast = func(m Mem, y VecVirtual) { VBROADCASTI32X4(m, y) }
		move = func(a, b Op) { VMOVDQA32(a, b) }
		and = func(a, b, c Op) { VPANDD(a, b, c) }
		store = func(a, b Op) { VMOVDQU32(a, b) }
	}
	var in [3]VecVirtual
	for i := range in {
		in[i] = YMM()
	}
	broadcast(chachaSigma, in[0])
	broadcast(key, in[1])
	broadcast(key.Offset(16), in[2])
	x := make([][4]VecVirtual, states)
	for s := range x {
		for i := range 4 {
			x[s][i] = YMM()
			if i < 3 {
				move(in[i], x[s][i])
			} else {
				VPADDD(rowCounters.Offset(32*(first+s)), row3, x[s][i])
			}
		}
	}
	if prold {
		rowDoubleRounds(x, nil, nil, loop, hook)
	} else {
		rowDoubleRounds(x, rotMasks, rotMasks.Offset(32), loop, hook)
	}
	Comment("Add the initial state (section 2.3); block 0's rows 0 and 1 are the Poly1305 key.")
	for s := range x {
		for i := range 4 {
			if i < 3 {
				VPADDD(in[i], x[s][i], x[s][i])
			} else {
				c := YMM()
				VPADDD(rowCounters.Offset(32*(first+s)), row3, c)
				VPADDD(c, x[s][i], x[s][i])
			}
		}
	}
	if first > 0 {
		return x
	}
	r := XMM()
	and(polyClamp, x[0][0].AsX(), r)
	VMOVQ(r, r0)
	VPEXTRQ(U8(1), r, r1)
	store(x[0][1].AsX(), sk)
	return x
}

// tinyXOR XORs the key stream at ks into the first n bytes of the message at msg, in 32-byte chunks;
// the buffers hold size bytes.
func tinyXOR(msg, ks Mem, n Register, size int, label string) {
	for c := range size / 32 {
		CMPQ(n, U32(32*c))
		JBE(LabelRef(label + "done"))
		v := YMM()
		VMOVDQU(msg.Offset(32*c), v)
		VPXOR(ks.Offset(32*c), v, v)
		VMOVDQU(v, msg.Offset(32*c))
	}
	Label(label + "done")
}

// copyBytes copies k bytes from src to dst, clobbering all three registers: 32 bytes at a time
// while more than 32 are left, then the last 32 as one move that may overlap the one before;
// below 32 bytes, two moves of the largest power of two not above k, one at each end, which may
// overlap (a byte, then a 2-byte move, below 4). Below 32 bytes that is two moves where one move
// per set bit of k took up to five, each behind a branch: the fused three-op pipeline's 64 x 64 B
// 1.88x / 1.90x -> 1.91x / 1.95x x/crypto, seal / open (Intel Xeon family 6 model 167, AVX-512
// hidden). Every load and store stays within the k bytes; the branches depend on k, a public
// length, only.
func copyBytes(dst, src, k Register, label string) {
	done := label + "done"
	end := func(r Register, w int) Mem { return Mem{Base: r, Index: k, Scale: 1, Disp: -w} }
	below := func(w int) string { return fmt.Sprintf("%sbelow%d", label, w) }
	CMPQ(k, U8(32))
	JB(LabelRef(below(32)))
	Label(label + "loop")
	CMPQ(k, U8(32))
	JBE(LabelRef(label + "last"))
	y := YMM()
	VMOVDQU(Mem{Base: src}, y)
	VMOVDQU(y, Mem{Base: dst})
	ADDQ(U8(32), src)
	ADDQ(U8(32), dst)
	SUBQ(U8(32), k)
	JMP(LabelRef(label + "loop"))
	Label(label + "last")
	y = YMM()
	VMOVDQU(end(src, 32), y)
	VMOVDQU(y, end(dst, 32))
	JMP(LabelRef(done))
	for _, w := range []int{16, 8, 4} {
		Label(below(2 * w))
		CMPQ(k, U8(w))
		JB(LabelRef(below(w)))
		var head, tail Register
		switch w {
		case 16:
			head, tail = XMM(), XMM()
			VMOVDQU(Mem{Base: src}, head)
			VMOVDQU(end(src, w), tail)
			VMOVDQU(head, Mem{Base: dst})
			VMOVDQU(tail, end(dst, w))
		case 8:
			head, tail = GP64(), GP64()
			MOVQ(Mem{Base: src}, head)
			MOVQ(end(src, w), tail)
			MOVQ(head, Mem{Base: dst})
			MOVQ(tail, end(dst, w))
		case 4:
			head, tail = GP32(), GP32()
			MOVL(Mem{Base: src}, head)
			MOVL(end(src, w), tail)
			MOVL(head, Mem{Base: dst})
			MOVL(tail, end(dst, w))
		}
		JMP(LabelRef(done))
	}
	Label(below(4))
	TESTQ(k, k)
	JZ(LabelRef(done))
	b := GP8()
	MOVB(Mem{Base: src}, b)
	MOVB(b, Mem{Base: dst})
	CMPQ(k, U8(2))
	JB(LabelRef(done))
	w := GP16()
	MOVW(end(src, 2), w)
	MOVW(w, end(dst, 2))
	Label(done)
}
