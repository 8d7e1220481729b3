// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import "encoding/binary"

// EncryptBlocks applies k's block function to every src[i] and writes the result to dst[i] (dst and
// src may be the same slice): for the AES-GCM suites the AES block cipher under the key (FIPS 197,
// ECB); for ChaCha20Poly1305 the first 16 bytes of the ChaCha20 key-stream block (RFC 8439 section
// 2.3) whose block counter is src[i][0:4], little endian, and whose nonce is src[i][4:16]. These are
// QUIC's header-protection mask functions (RFC 9001 sections 5.4.3 and 5.4.4), computed here for a
// whole batch on the SIMD kernels where this CPU has them. Constant time for ChaCha20, and for AES
// where the CPU has AES instructions (crypto/aes's portable block function, used without them, is
// table based). It panics if k is nil or
// destroyed, if k is an XChaCha20Poly1305 key, or if len(dst) != len(src).
func (k *Key) EncryptBlocks(dst, src [][16]byte) {
	switch {
	case k == nil:
		panic("kernels: nil key")
	case k.suite.KeySize() == 0:
		panic("kernels: Key not made by NewKey")
	case k.destroyed:
		panic("kernels: use of destroyed key")
	case k.suite == XChaCha20Poly1305:
		panic("kernels: EncryptBlocks needs an AES-GCM or a ChaCha20Poly1305 key")
	case len(dst) != len(src):
		panic("kernels: EncryptBlocks needs as many destination blocks as source blocks")
	}
	if len(src) == 0 {
		return
	}
	if k.suite.isGCM() {
		aesBlocks(k, dst, src)
	} else {
		chachaBlocks(k, dst, src)
	}
}

// aesBlocksGeneric is EncryptBlocks for an AES key on crypto/aes's block function.
func aesBlocksGeneric(k *Key, dst, src [][16]byte) {
	for i := range src {
		k.gcm.block.Encrypt(dst[i][:], src[i][:])
	}
}

// chachaBlocksGeneric is EncryptBlocks for a ChaCha20 key on the portable block function.
func chachaBlocksGeneric(k *Key, dst, src [][16]byte) {
	var block [64]byte
	for i := range src {
		counter, nonce := chachaCounterNonce(&src[i])
		chachaBlock(&block, &k.chacha, counter, &nonce)
		copy(dst[i][:], block[:16])
	}
	clear(block[:])
}

// chachaCounterNonce splits a block-function input into the block counter (little endian) and the
// nonce words (RFC 8439 section 2.3).
func chachaCounterNonce(in *[16]byte) (uint32, [3]uint32) {
	return binary.LittleEndian.Uint32(in[0:]), [3]uint32{binary.LittleEndian.Uint32(in[4:]),
		binary.LittleEndian.Uint32(in[8:]), binary.LittleEndian.Uint32(in[12:])}
}
