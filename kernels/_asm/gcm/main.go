// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command gcm generates kernels/gcm_amd64.s: the AES-GCM kernels of the AVX512 and AVX2 tiers
// (NIST SP 800-38D with 96-bit IVs), the AES-ECB kernel of QUIC's header protection and the AES-NI
// SubWord helper of the key expansion. Run it through go generate in kernels (see gcm_amd64.go).
//
// A file per kernel family: avx512.go, avx2.go (AES-NI and VAES), lanes.go (AVX512, a packet per
// lane), pairs.go (AVX2 with VAES, small packets two at a time), blocks.go (AES-ECB), keyschedule.go
// (SubWord); what they share: aes.go (the rounds), counters.go (counter blocks in block order),
// ghash.go (the field arithmetic), tag.go (the tag and the walk over descriptors), constants.go (the
// read-only data) and layout.go. The Go side owns the memory layouts; layout.go mirrors
// gcm_amd64.go's gcmDesc and gcmTable and TestGCMLayout keeps them in step.
//
// Counters. A counter block is kept byte-reversed, so the 32-bit big-endian counter of inc32
// (section 6.2) is the low dword of its lane and VPADDD wraps it modulo 2^32 without touching the
// nonce; VPSHUFB restores the block order before the AES rounds. The VAES chunk loops keep theirs in
// block order instead and add to the block's last byte while no carry can leave it
// (countersInOrder, counters.go).
//
// Kernels. Each generated function walks an array of descriptors (gcmDesc) and, per descriptor,
// hashes the AD, runs counter mode and GHASH over the text in chunks, finishes the tail, and computes
// the tag (see gcm_amd64.go for the pipeline and the lane layout). The work of one call is bounded by
// the Go driver; no kernel needs stack (the AVX2 ones move a partial block in pieces of 8, 4, 2
// and 1 bytes rather than through a buffer). VZEROUPPER precedes every return.
//
// All branches depend on lengths, round counts and pointers only: no secret-dependent branch or
// memory index (constant time).
package main

import . "github.com/mmcloughlin/avo/build"

func main() {
	Package("github.com/wirebatch/wirebatch/kernels")
	ConstraintExpr("gc,!purego")
	constants()

	subWord()
	avx512("gcmSealAVX512", false, false)
	avx512("gcmOpenAVX512", true, false)
	avx512("gcmSealAVX512Schoolbook", false, true)
	avx512("gcmOpenAVX512Schoolbook", true, true)
	avx2("gcmSealAVX2", false, false)
	avx2("gcmOpenAVX2", true, false)
	avx2("gcmSealAVX2VAES", false, true)
	avx2("gcmOpenAVX2VAES", true, true)
	lanes("gcmSealLanesAVX512", false)
	lanes("gcmOpenLanesAVX512", true)
	pairs("gcmSealPairsAVX2VAES", false)
	pairs("gcmOpenPairsAVX2VAES", true)
	aesBlocks("aesEncryptBlocks", false)
	aesBlocks("aesEncryptBlocksVAES", true)
	aesBlocksAVX512("aesEncryptBlocksAVX512")
	Generate()
}
