// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"crypto/subtle"
	"encoding/binary"
)

// The ChaCha20-Poly1305 family (RFC 8439 section 2.8; XChaCha20 per draft-irtf-cfrg-xchacha section 2.3).
//
// Per op, every tier computes the same steps; the SIMD tiers (amd64: AVX512 and AVX2) run them with
// one op per lane (the shared lane driver, chacha_lanes.go, on the kernels of chacha_amd64.go and the
// generated chacha_amd64.s), or with the lanes sharing one op's blocks when a batch has few ops
// (chacha_single_amd64.go):
//
//	key, nonce := the op's key and nonce, or (XChaCha) HChaCha20(key, nonce[0:16]) and 0^32 || nonce[16:24]
//	block 0 of the key stream     -> the one-time Poly1305 key (r, s)           (section 2.6)
//	blocks 1.. of the key stream  -> XORed into the message                      (section 2.4)
//	Poly1305 over AD || pad16 || ciphertext || pad16 || le64(len AD) || le64(len ciphertext)
//
// Open authenticates the ciphertext before it decrypts anything, so a forged message never has its
// plaintext written; the failed op's Dst is zeroed instead.

// chachaHas reports whether this build has ChaCha-family code of tier t that this CPU runs.
func chachaHas(t Tier) bool { return t == Generic || chachaHasSIMD(t) }

// chachaRun processes the ChaCha-family ops of ops on tier t, but those that beside took (the fused
// kernels', chachaRunRoute; nil: none), and returns how many Opens failed.
func chachaRun(t Tier, ops []Op, open bool, beside *tinyOps) (failed int) {
	if t := t.runsOn(chachaHas); t != Generic {
		return chachaRunSIMD(t, ops, open, beside)
	}
	for i := range ops {
		op := &ops[i]
		if !op.Key.suite.isChaCha() || beside.took(op) {
			continue
		}
		if !chachaOpGeneric(op, open) {
			failed++
		}
	}
	return failed
}

// chachaOpKey returns the ChaCha20 key and nonce words that encrypt op: for XChaCha20 the HChaCha20
// subkey, written to sub, and the last 8 nonce bytes behind four zero bytes. The SIMD tiers (simd)
// derive the subkey on this build's HChaCha20 kernel where the CPU has one, the portable paths with
// the portable function.
func chachaOpKey(op *Op, sub *[8]uint32, simd bool) (key *[8]uint32, nonce [3]uint32) {
	key = &op.Key.chacha
	n := op.Nonce
	if op.Key.suite == XChaCha20Poly1305 {
		if simd {
			hchacha20SIMD(sub, key, (*[16]byte)(n))
		} else {
			hchacha20(sub, key, n[:16])
		}
		return sub, [3]uint32{0, binary.LittleEndian.Uint32(n[16:]), binary.LittleEndian.Uint32(n[20:])}
	}
	return key, [3]uint32{binary.LittleEndian.Uint32(n[0:]), binary.LittleEndian.Uint32(n[4:]), binary.LittleEndian.Uint32(n[8:])}
}

// chachaOpGeneric seals or opens one op with the portable code and reports whether it succeeded.
func chachaOpGeneric(op *Op, open bool) bool {
	if open && len(op.Src) < TagSize {
		failOpen(op)
		return false
	}
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub, false)
	defer clear(sub[:])

	var polyKey [64]byte
	chachaBlock(&polyKey, key, 0, &nonce)
	defer clear(polyKey[:])
	macKey := (*[32]byte)(polyKey[:32])

	if !open {
		n := len(op.Src)
		chachaXOR(op.Dst[:n], op.Src, key, &nonce, 1)
		tag := poly1305AEAD(op.AD, op.Dst[:n], macKey)
		copy(op.Dst[n:], tag[:])
		return true
	}
	n := len(op.Src) - TagSize
	tag := poly1305AEAD(op.AD, op.Src[:n], macKey)
	if subtle.ConstantTimeCompare(tag[:], op.Src[n:]) != 1 {
		failOpen(op)
		return false
	}
	chachaXOR(op.Dst, op.Src[:n], key, &nonce, 1)
	op.Err = nil
	return true
}

// poly1305AEAD returns the RFC 8439 section 2.8 tag under the one-time key: Poly1305 over
// ad || pad16 || ciphertext || pad16 || le64(len ad) || le64(len ciphertext).
func poly1305AEAD(ad, ciphertext []byte, key *[32]byte) (tag [TagSize]byte) {
	var mac poly1305
	mac.init(key[:])
	mac.writePadded(ad)
	mac.writePadded(ciphertext)
	return mac.aeadTag(len(ad), len(ciphertext))
}

// The fused one-call kernels' limits (amd64; the dispatch table names them): chachaTinyMax is the
// longest message chachaPoly1305TinyAVX2 takes (blocks 1-3 of the key stream), chachaSmallMax
// chachaPoly1305SmallAVX512's longest Seal (blocks 1-13) and chachaSmallOpenMax its longest Open
// (blocks 1-17); chachaLongMin and chachaLongMax the shortest and longest message
// chachaPoly1305LongAVX512 takes; chachaFusedAD is the longest AD any of them is given, and
// chachaTinyAD the longest of an op beside the lanes (tinyOps.chooseBeside), which covers a QUIC
// packet header. The upper bounds bound a kernel's work (it is not preemptible).
const (
	chachaTinyMax      = 3 * 64
	chachaSmallMax     = 13 * 64
	chachaSmallOpenMax = 17 * 64
	chachaTinyAD       = 64
	chachaFusedAD      = 767
	chachaLongMin      = 8*64 + 1
	chachaLongMax      = 4 << 10
)

// seal24Lengths are the messages whose Seal takes one 24-block key-stream pass (16 to 23 blocks
// after the Poly1305 key's, 961 to 1472 bytes: full-size packets): chachaSealOne24's, and so the
// AVX512 Seal pipeline's (chachaSealChain24), whose route must not give it others.
var seal24Lengths = lengths{15*64 + 1, 23 * 64}

// sealChainMaxAD is the most AD of a Seal whose MAC the AVX512 Seal chains take
// (chachaSealChain24, chachaSealLong24): the AD goes through the portable Poly1305 first, where the
// IFMA lanes take long AD faster (oneOps.adMin).
const sealChainMaxAD = 64

// smallFusedMax is the longest message chachaPoly1305SmallAVX512 seals or, with open, opens.
func smallFusedMax(open bool) int {
	if open {
		return chachaSmallOpenMax
	}
	return chachaSmallMax
}
