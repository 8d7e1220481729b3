// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import (
	"encoding/binary"
	"unsafe"
)

// chachaBlocksLanes is the fewest inputs for which chachaBlocks sets up the lanes on AVX512: setting
// up the lane tables costs several 4-block passes, which it repays only when this many inputs share
// it.
const chachaBlocksLanes = 4

// chachaHeadsPerCall bounds the inputs of one chachaHeadsAVX2 call (about 1.5 us on AMD EPYC Zen 3):
// assembly cannot be preempted.
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

// aesBlocks is EncryptBlocks for an AES key: AES-NI eight blocks at a time (VAES: sixteen) where
// the AVX2 AES-GCM kernels run (their round-key table), crypto/aes otherwise.
func aesBlocks(k *Key, dst, src [][16]byte) {
	if !gcmAVX2OK {
		aesBlocksGeneric(k, dst, src)
		return
	}
	ecb := aesEncryptBlocks
	if impl.gcmVAES {
		ecb = aesEncryptBlocksVAES
	}
	for len(src) > 0 {
		n := min(len(src), maxStreamBlocks) // bounded work per assembly call
		ecb(k.gcm.asm.tab, &dst[0], &src[0], n)
		dst, src = dst[n:], src[n:]
	}
}

// chachaBlocks is EncryptBlocks for a ChaCha20 key. On AVX2, whole states through the rounds, up to
// six a pass (chachaHeadsAVX2: two states per register set, three sets interleaved): an input
// needs only its block's first row, and so it beats the lanes at every batch size (AMD EPYC Zen 3,
// `go test -run '^$' -bench EncryptBlocks/ChaCha ./kernels/` before and after the lanes gave way
// here: 64 inputs 7.5-7.7x x/crypto's chacha20 against 4.2x through the lanes, 16 inputs 5.7-6.1x
// against 3.4-3.7x three states a call). On AVX512 the same on 1-cycle cores
// (impl.chachaBlocksHeads), with VPROLD for the rotations (chachaHeadsAVX512); elsewhere one block
// per lane of the lane kernel, sixteen inputs per call, or below chachaBlocksLanes inputs, where
// setting up the lane tables costs more than it saves, each the 4-block kernel (its first block).
// The portable block function where there is neither.
func chachaBlocks(k *Key, dst, src [][16]byte) {
	t := AVX512.runsOn(chachaHas)
	if t == Generic {
		chachaBlocksGeneric(k, dst, src)
		return
	}
	if t == AVX2 || impl.chachaBlocksHeads {
		for len(src) > 0 {
			n := min(len(src), chachaHeadsPerCall)
			if t == AVX512 {
				chachaHeadsAVX512(&dst[0], &k.chacha, &src[0], n)
			} else {
				chachaHeadsAVX2(&dst[0], &k.chacha, &src[0], n)
			}
			dst, src = dst[n:], src[n:]
		}
		return
	}
	if len(src) < chachaBlocksLanes {
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
	var s streamLanes
	lk := chachaLaneKernels(t)
	tab := s.start(lk)
	for l := range 16 {
		s.onScratch(l)
		tab.rows[16][l] = 1
		for w := range 8 {
			tab.rows[4+w][l] = k.chacha[w]
		}
	}
	for len(src) > 0 {
		n := min(len(src), 16)
		for l := range n {
			tab.rows[12][l] = binary.LittleEndian.Uint32(src[l][0:])
			tab.rows[13][l] = binary.LittleEndian.Uint32(src[l][4:])
			tab.rows[14][l] = binary.LittleEndian.Uint32(src[l][8:])
			tab.rows[15][l] = binary.LittleEndian.Uint32(src[l][12:])
		}
		tab.scratch = [16][128]byte{}
		streamKernel(lk, tab, &s.ptrs, 1, 64, n > 8)
		for l := range n {
			copy(dst[l][:], tab.scratch[l][:16])
		}
		dst, src = dst[n:], src[n:]
	}
	*tab = streamTable{}
}
