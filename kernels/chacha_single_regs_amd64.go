// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import "crypto/subtle"

// The single-message path of the AVX2 tier on cores with a 1-cycle vector latency
// (chachaAVX2Regs): passes of 8 consecutive blocks with the state in registers
// (chachaXOR8OneAVX2Regs), the message's Poly1305 chain run on the scalar pipes inside the passes
// (chachaXOR8OneMACAVX2Regs, up to chachaRegsMACPerPass blocks a pass), and what the passes could
// not take in the same kernel's scalar loop.
//
// Seal: the first pass gives the Poly1305 key (block 0, RFC 8439 section 2.6) and the key stream of
// the first 448 bytes; every later pass encrypts the next 512 bytes while it absorbs ciphertext
// that the passes before it wrote. Open authenticates before it decrypts: a message of up to
// chachaRegsOpenMax bytes keeps its whole key stream in a buffer, the passes absorbing the
// ciphertext as they make it, and is decrypted from the buffer once its tag verified; a longer one
// is authenticated first (chachaOneMAC) and decrypted by 16-block passes after.

// chachaRegsMACPerPass is the most MAC blocks one 8-block pass absorbs within its rounds (three of
// its double rounds' eight points: _asm/chacha macPoints).
const chachaRegsMACPerPass = 30

// chachaRegsOpenMax is the longest message whose Open keeps its key stream in a buffer (23 blocks
// after block 0: a full-size WireGuard packet).
const chachaRegsOpenMax = 23 * 64

// chachaOneOpRegs seals or opens op (n bytes of message, more than 3 blocks' worth or a long MAC
// input) on the AVX2 tier's kernels for 1-cycle cores and reports whether it succeeded.
func chachaOneOpRegs(op *Op, open bool, n int) bool {
	if open && n > chachaRegsOpenMax {
		return chachaOneOp(op, open, AVX2)
	}
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub)
	chachaInit(&st, key, 0, &nonce)
	var ks [24 * 64]byte // Seal: one pass's key stream; Open: the message's (block 0 first)
	chachaXOR8OneAVX2Regs(&st, &ks[0], &chachaZeros[0], 8*64)
	var mac poly1305
	mac.init(ks[:32])
	mac.writePadded(op.AD)
	src, dst := op.Src[:n], op.Dst[:n]
	ct := src // what the MAC reads
	if !open {
		ct = dst
	}
	done := 0            // ciphertext bytes absorbed (whole blocks)
	ready := min(n, 448) // ciphertext bytes that exist: Seal writes them pass by pass
	if !open {
		subtle.XORBytes(dst[:ready], src[:ready], ks[64:])
	} else {
		ready = n
	}
	for off := 448; off < n; off += 8 * 64 {
		st[12] = uint32(off/64 + 1)
		k := min(n-off, 8*64)
		blocks := min((ready-done)/16, chachaRegsMACPerPass)
		var msg *byte
		if blocks > 0 {
			msg = &ct[done]
		}
		switch {
		case open:
			chachaXOR8OneMACAVX2Regs(&st, &ks[off+64], &chachaZeros[0], 8*64, &mac, msg, blocks)
		case k == 8*64:
			chachaXOR8OneMACAVX2Regs(&st, &dst[off], &src[off], 8*64, &mac, msg, blocks)
		default: // the last blocks, through the buffer
			chachaXOR8OneMACAVX2Regs(&st, &ks[0], &chachaZeros[0], 8*64, &mac, msg, blocks)
			subtle.XORBytes(dst[off:], src[off:], ks[:k])
		}
		done += 16 * blocks
		if !open {
			ready = off + k
		}
	}
	for whole := (n - done) / 16; whole > 0; {
		b := min(whole, maxPolyBlocks)
		chachaXOR8OneMACAVX2Regs(&st, nil, nil, 0, &mac, &ct[done], b)
		done += 16 * b
		whole -= b
	}
	mac.writePadded(ct[done:])
	tag := mac.aeadTag(len(op.AD), n)
	ok := chachaFinishTag(op, n, open, &tag)
	if open && ok {
		subtle.XORBytes(dst, src, ks[64:64+n])
	}
	clear(ks[:])
	clear(st[:])
	clear(sub[:])
	mac = poly1305{}
	return ok
}
