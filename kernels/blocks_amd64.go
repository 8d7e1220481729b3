// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import "unsafe"

// chachaHeadsPerCall bounds the inputs of one call of a heads kernel (chachaHeadsAVX2 about 1.5 us on
// AMD EPYC Zen 3, chachaHeads16AVX512 about 0.75 us on Zen 4): assembly cannot be preempted.
const chachaHeadsPerCall = 64

// chachaSigma is the first row of the ChaCha20 state, the constants (RFC 8439 section 2.3), as one
// 16-byte value.
var chachaSigma = [4]uint32{sigma0, sigma1, sigma2, sigma3}

// aesEncryptBlocks is AES-ECB over n blocks with the round keys of tab (gcm_amd64.s).
//
//go:noescape
func aesEncryptBlocks(tab *gcmTable, dst, src *[16]byte, n int)

// aesEncryptBlocksVAES is aesEncryptBlocks sixteen blocks at a time, on ymm (VAES).
//
//go:noescape
func aesEncryptBlocksVAES(tab *gcmTable, dst, src *[16]byte, n int)

// aesEncryptBlocksAVX512 is aesEncryptBlocks on zmm, 32 blocks a pass, then four, then one at a
// time, with the round keys in registers.
//
//go:noescape
func aesEncryptBlocksAVX512(tab *gcmTable, dst, src *[16]byte, n int)

// aesBlocks is EncryptBlocks for an AES key where the AVX2 AES-GCM kernels run (their round-key
// table), crypto/aes otherwise: on zmm with the round keys in registers where impl.aesBlocksZMM
// says so; elsewhere sixteen blocks a pass on ymm where the CPU has VAES, the rest (and everything
// without VAES) eight xmm blocks a pass with AES-NI, then one at a time. One or two blocks, the
// masks of a packet or two on their own, go straight to the AES-NI kernel: one block 1.42x
// crypto/aes where the general loop gave 1.06x (AMD EPYC Zen 4; docs/experiments.md, 2026-12-06
// sixteenth session); two 1.62x there, 1.32x on zmm (Intel Xeon family 6 model 167).
func aesBlocks(k *Key, dst, src [][16]byte) {
	if !gcmAVX2OK {
		aesBlocksGeneric(k, dst, src)
		return
	}
	tab := k.gcm.asm.tab
	if len(src) <= 2 { // the masks of a packet or two on their own
		aesEncryptBlocks(tab, &dst[0], &src[0], len(src))
		return
	}
	for len(src) > 0 {
		n := min(len(src), maxStreamBlocks) // bounded work per assembly call
		switch {
		case impl.aesBlocksZMM:
			aesEncryptBlocksAVX512(tab, &dst[0], &src[0], n)
		case impl.gcmVAES && n >= 16:
			n &^= 15 // whole ymm passes; the rest below
			aesEncryptBlocksVAES(tab, &dst[0], &src[0], n)
		default:
			aesEncryptBlocks(tab, &dst[0], &src[0], n)
		}
		dst, src = dst[n:], src[n:]
	}
}

// chachaBlocks is EncryptBlocks for a ChaCha20 key: on AVX2, whole states through the rounds, up to
// six a pass (chachaHeadsAVX2: two states per register set, three sets interleaved): an input
// needs only its block's first row, and so it beats the lanes at every batch size (AMD EPYC Zen 3,
// `go test -run '^$' -bench EncryptBlocks/ChaCha ./kernels/` before and after the lanes gave way
// here: 64 inputs 7.5-7.7x x/crypto's chacha20 against 4.2x through the lanes, 16 inputs 5.7-6.1x
// against 3.4-3.7x three states a call). On AVX512, from impl.chachaBlocksLanes inputs on, one
// input per zmm lane (chachaHeads16AVX512); below that the heads kernel with VPROLD
// (chachaHeadsAVX512) on 1-cycle cores (impl.chachaBlocksHeads), elsewhere each input's block
// through the 4-block kernel. The portable block function where there is neither.
func chachaBlocks(k *Key, dst, src [][16]byte) {
	t := AVX512.runsOn(chachaHas)
	heads := chachaHeadsAVX2
	switch {
	case t == Generic:
		chachaBlocksGeneric(k, dst, src)
		return
	case t == AVX512 && len(src) >= impl.chachaBlocksLanes:
		heads = chachaHeads16AVX512
	case t == AVX512 && impl.chachaBlocksHeads:
		heads = chachaHeadsAVX512
	case t == AVX512:
		// The state is written a row (16 bytes) at a time, as the kernel loads it: a load spanning
		// several narrower stores in flight would wait for them to retire. An input is exactly the
		// state's last row, the block counter then the nonce words, little endian (RFC 8439
		// section 2.3).
		var st [16]uint32
		var ks [4 * 64]byte
		*(*[4]uint32)(st[0:4]) = chachaSigma
		*(*[8]uint32)(st[4:12]) = k.chacha
		row3 := (*[16]byte)(unsafe.Pointer(&st[12]))
		for i := range src {
			*row3 = src[i]
			chachaKS4Tier(t, &st, &ks)
			dst[i] = [16]byte(ks[:16])
		}
		clear(st[:])
		clear(ks[:])
		return
	}
	for len(src) > 0 {
		n := min(len(src), chachaHeadsPerCall)
		heads(&dst[0], &k.chacha, &src[0], n)
		dst, src = dst[n:], src[n:]
	}
}
