// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"crypto/subtle"
	"encoding/binary"
	"math/bits"
)

// Portable ChaCha20 and HChaCha20 (RFC 8439 section 2; draft-irtf-cfrg-xchacha section 2.2). The SIMD
// tiers compute exactly these rounds with one op's state word per vector lane.

// The four state constants, "expand 32-byte k" read as little-endian words (RFC 8439 section 2.3).
const (
	sigma0 = 0x61707865
	sigma1 = 0x3320646e
	sigma2 = 0x79622d32
	sigma3 = 0x6b206574
)

// quarterRound is RFC 8439 section 2.1. It has no data-dependent branches or lookups.
func quarterRound(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	a += b
	d = bits.RotateLeft32(d^a, 16)
	c += d
	b = bits.RotateLeft32(b^c, 12)
	a += b
	d = bits.RotateLeft32(d^a, 8)
	c += d
	b = bits.RotateLeft32(b^c, 7)
	return a, b, c, d
}

// chachaRounds applies the 20 rounds (10 column rounds interleaved with 10 diagonal rounds) to s.
// The words live in locals during the rounds, which the compiler keeps in registers; indexing s
// itself would load and store a word of memory at every step.
func chachaRounds(s *[16]uint32) {
	x0, x1, x2, x3, x4, x5, x6, x7 := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
	x8, x9, x10, x11, x12, x13, x14, x15 := s[8], s[9], s[10], s[11], s[12], s[13], s[14], s[15]
	for range 10 {
		x0, x4, x8, x12 = quarterRound(x0, x4, x8, x12)
		x1, x5, x9, x13 = quarterRound(x1, x5, x9, x13)
		x2, x6, x10, x14 = quarterRound(x2, x6, x10, x14)
		x3, x7, x11, x15 = quarterRound(x3, x7, x11, x15)
		x0, x5, x10, x15 = quarterRound(x0, x5, x10, x15)
		x1, x6, x11, x12 = quarterRound(x1, x6, x11, x12)
		x2, x7, x8, x13 = quarterRound(x2, x7, x8, x13)
		x3, x4, x9, x14 = quarterRound(x3, x4, x9, x14)
	}
	s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] = x0, x1, x2, x3, x4, x5, x6, x7
	s[8], s[9], s[10], s[11], s[12], s[13], s[14], s[15] = x8, x9, x10, x11, x12, x13, x14, x15
}

// chachaInit lays out the initial state of RFC 8439 section 2.3: constants, key, counter, nonce.
func chachaInit(s *[16]uint32, key *[8]uint32, counter uint32, nonce *[3]uint32) {
	s[0], s[1], s[2], s[3] = sigma0, sigma1, sigma2, sigma3
	copy(s[4:12], key[:])
	s[12] = counter
	s[13], s[14], s[15] = nonce[0], nonce[1], nonce[2]
}

// chachaBlock writes key-stream block number counter to out (RFC 8439 section 2.3.1).
// The final addition takes the input words from the arguments again: a copy of the initial state to
// add back cost the portable block some 12% (docs/experiments.md, 2026-12-05 sixth session).
func chachaBlock(out *[64]byte, key *[8]uint32, counter uint32, nonce *[3]uint32) {
	var s [16]uint32
	chachaInit(&s, key, counter, nonce)
	chachaRounds(&s)
	binary.LittleEndian.PutUint32(out[0:], s[0]+sigma0)
	binary.LittleEndian.PutUint32(out[4:], s[1]+sigma1)
	binary.LittleEndian.PutUint32(out[8:], s[2]+sigma2)
	binary.LittleEndian.PutUint32(out[12:], s[3]+sigma3)
	for i, k := range key {
		binary.LittleEndian.PutUint32(out[16+4*i:], s[4+i]+k)
	}
	binary.LittleEndian.PutUint32(out[48:], s[12]+counter)
	for i, n := range nonce {
		binary.LittleEndian.PutUint32(out[52+4*i:], s[13+i]+n)
	}
	clear(s[:])
}

// chachaXOR XORs src with the key stream starting at block counter into dst (len(dst) == len(src);
// dst may be src). RFC 8439 section 2.4.
func chachaXOR(dst, src []byte, key *[8]uint32, nonce *[3]uint32, counter uint32) {
	var ks [64]byte
	for len(src) > 0 {
		chachaBlock(&ks, key, counter, nonce)
		n := subtle.XORBytes(dst, src, ks[:])
		dst, src = dst[n:], src[n:]
		counter++
	}
	clear(ks[:])
}

// hchacha20 derives the XChaCha20 subkey from key and the first 16 nonce bytes: the ChaCha20 rounds
// over constants, key and nonce, keeping words 0..3 and 12..15 without the final addition
// (draft-irtf-cfrg-xchacha section 2.2).
func hchacha20(out, key *[8]uint32, nonce16 []byte) {
	var s [16]uint32
	s[0], s[1], s[2], s[3] = sigma0, sigma1, sigma2, sigma3
	copy(s[4:12], key[:])
	for i := range 4 {
		s[12+i] = binary.LittleEndian.Uint32(nonce16[4*i:])
	}
	chachaRounds(&s)
	copy(out[0:4], s[0:4])
	copy(out[4:8], s[12:16])
	clear(s[:])
}
