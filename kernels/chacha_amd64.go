// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:generate sh -c "cd _asm/chacha && go run . -out ../../chacha_amd64.s -pkg kernels"

// CPU features of the ChaCha-family SIMD tiers, read once. The AVX2 tier is AVX2 + BMI2 like every
// AVX2 tier (the kernels need only AVX2). The AVX512 tier needs F for the zmm ChaCha20 lanes (VPROLD,
// VSHUFI32X4) and VL and BW as every AVX512 tier does; its Poly1305 uses IFMA where present
// (impl.polyIFMA) and the AVX2 kernels otherwise.
var (
	chachaAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasBMI2
	chachaAVX512 = chachaAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW
)

// chachaLaneKernels returns SIMD tier t's lane kernel set (see laneKernels): AVX512 masks its
// stream kernel's last blocks and, with IFMA, runs Poly1305 in radix 2^44; AVX2 (and AVX512 without
// IFMA) runs Poly1305 in radix 2^26. AVX512's stream kernels and AVX2's register ones take a call's
// last block at addresses of its own.
func chachaLaneKernels(t Tier) laneKernels {
	k := laneKernels{simd: t, masked: t == AVX512, radix44: t == AVX512 && impl.polyIFMA, fewOps: chachaFewOps}
	k.lastApart = t == AVX512 || t == AVX2 && impl.chachaAVX2Regs
	k.stitchedMAC = t == AVX2 && impl.chachaAVX2Regs && impl.chachaStitchedMAC
	if t == AVX512 {
		k.fewOps, k.longAlone = impl.chachaFewOpsAVX512, impl.chachaLongAloneAVX512
		k.shapeGroups = impl.chachaShapeGroups
		if k.radix44 && impl.chachaStitchedMACZMM {
			k.stitchedMAC, k.vectorLanes = true, 8
		}
	}
	return k
}

// The lane kernel set of amd64 (see laneKernels). On AVX2 the kernels run lanes 0-7 only when upper is
// false.
func streamKernel(k laneKernels, tab *streamTable, lanes *chachaPtrs16, n, stride int, upper bool) {
	switch {
	case k.simd == AVX512:
		chachaXOR16AVX512(tab, lanes, n, stride)
	case k.simd == Generic:
		chachaLanesGeneric(tab, lanes, n, stride, upper)
	case impl.chachaAVX2Regs && upper:
		chachaXOR16AVX2Regs(tab, lanes, n, stride)
	case impl.chachaAVX2Regs:
		chachaXOR8AVX2Regs(tab, lanes, n, stride)
	default:
		chachaXOR16AVX2(tab, lanes, n, stride)
	}
}

func streamMACKernel(k laneKernels, tab *streamTable, lanes *chachaPtrs16, n, stride int, upper bool, mac *laneMAC) {
	switch {
	case k.simd == Generic:
		streamMACGeneric(tab, lanes, n, stride, upper, mac)
	case k.simd == AVX512:
		chachaXOR16MACAVX512(tab, lanes, n, stride, mac)
	case upper:
		chachaXOR16MACAVX2Regs(tab, lanes, n, stride, mac)
	default:
		chachaXOR8MACAVX2Regs(tab, lanes, n, stride, mac)
	}
}

func polyKernel(k laneKernels, st *[15][16]uint64, p *polyPtrs16, n, stride int, upper bool) {
	switch {
	case k.simd == Generic && k.radix44:
		poly1305Lanes44Generic(st, p, n, stride)
	case k.simd == Generic:
		poly1305Lanes26Generic(st, p, n, stride, upper)
	case !k.radix44 && impl.poly26Regs && upper:
		poly1305AVX2Regs(st, p, n, stride)
	case !k.radix44 && impl.poly26Regs:
		poly1305AVX2RegsLanes8(st, p, n, stride)
	case !k.radix44 && upper:
		poly1305AVX2(st, p, n, stride)
	case !k.radix44:
		poly1305AVX2Lanes8(st, p, n, stride)
	case !upper:
		poly1305IFMAYLanes8(st, p, n, stride)
	case impl.polyZMM:
		poly1305IFMAZ(st, p, n, stride)
	default:
		poly1305IFMAY(st, p, n, stride)
	}
}

func polyFinishKernel(k laneKernels, st *[15][16]uint64) (eq int) {
	if k.simd == Generic {
		return poly1305FinishLanes44Generic(st)
	}
	return poly1305FinishIFMAZ(st)
}

func laneOneOp(t Tier, op *Op, open bool) bool {
	if t == Generic {
		return chachaOpGeneric(op, open)
	}
	return chachaOneOp(op, open, t)
}

// chachaHasSIMD reports whether this build has ChaCha-family code of SIMD tier t that this CPU runs.
func chachaHasSIMD(t Tier) bool {
	return t == AVX512 && chachaAVX512 || t == AVX2 && chachaAVX2
}

// chachaRunSIMD processes the ChaCha-family ops of ops but those beside took on SIMD tier t (one
// chachaHasSIMD reports).
func chachaRunSIMD(t Tier, ops []Op, open bool, beside *tinyOps) (failed int) {
	return chachaRunLanes(chachaLaneKernels(t), ops, open, beside)
}

// chachaRunOne is chachaRunSIMD for a batch of one ChaCha-family op: the one-op path, where the lane
// driver sends a batch this small (laneKernels.fewOps), without the driver's walk over the batch or
// its kernel set: building one to pass on cost a lone op about 10 ns, its copy waiting for the stores
// that made it (AMD Zen 4).
func chachaRunOne(t Tier, op *Op, open bool) (failed int) {
	return laneRunOne(t, op, open)
}

//go:noescape
func chachaXOR16AVX512(tab *streamTable, lanes *chachaPtrs16, n, stride int)

//go:noescape
func chachaXOR16AVX2(tab *streamTable, lanes *chachaPtrs16, n, stride int)

// chachaXOR16OneAVX2, chachaXOR8OneAVX2 and chachaKS4AVX2 are the single-message ChaCha20 kernels of
// the AVX2 tier.
//
//go:noescape
func chachaXOR16OneAVX2(st *[16]uint32, dst, src *byte, n int)

//go:noescape
func chachaXOR8OneAVX2(st *[16]uint32, dst, src *byte, n int)

// chachaXOR8OneMACAVX2 is chachaXOR8OneAVX2 (n may also be 0) that also absorbs the macBlocks 16-byte
// blocks at msg into mac's accumulator, as mac.blocks would, on the scalar pipes during its rounds;
// msg must not overlap what it writes.
//
//go:noescape
func chachaXOR8OneMACAVX2(st *[16]uint32, dst, src *byte, n int, mac *poly1305, msg *byte, macBlocks int)

// chachaKS2Scalar writes the key stream of 2 consecutive blocks from counter st[12], with scalar code.
//
//go:noescape
func chachaKS2Scalar(st *[16]uint32, out *[2 * 64]byte)

//go:noescape
func chachaKS4AVX2(st *[16]uint32, out *[4 * 64]byte)

// hchacha20AVX2 is hchacha20 on AVX2: one state through the rounds in four registers.
//
//go:noescape
func hchacha20AVX2(out *[8]uint32, key *[8]uint32, nonce *[16]byte)

// chachaHeadsAVX2 writes the first 16 bytes of the ChaCha20 block of key and in[i] to out[i], i < n
// (n >= 1): RFC 8439 section 2.3's block function with the counter and nonce of in[i], for QUIC's
// header-protection masks (EncryptBlocks). Two states per register set, up to three sets at once; it
// reads a pass's inputs before it writes, so out may be in.
//
//go:noescape
func chachaHeadsAVX2(out *[16]byte, key *[8]uint32, in *[16]byte, n int)

// chachaHeadsAVX512 is chachaHeadsAVX2 with AVX-512VL's VPROLD for the rotations (still ymm), for
// the AVX512 tier.
//
//go:noescape
func chachaHeadsAVX512(out *[16]byte, key *[8]uint32, in *[16]byte, n int)

// chachaHeads16AVX512 is chachaHeadsAVX2 on zmm, one input per 32-bit lane, sixteen a pass; a pass
// of fewer reads and writes only its inputs' bytes.
//
//go:noescape
func chachaHeads16AVX512(out *[16]byte, key *[8]uint32, in *[16]byte, n int)

// hchacha20SIMD is hchacha20 (draft-irtf-cfrg-xchacha section 2.2) through the AVX2 kernel where the
// AVX2 tier runs.
func hchacha20SIMD(out, key *[8]uint32, nonce *[16]byte) {
	if chachaAVX2 {
		hchacha20AVX2(out, key, nonce)
		return
	}
	hchacha20(out, key, nonce[:])
}

// chachaPoly1305TinyAVX2 is a whole op on a message of at most 3 blocks (chachaTinyMax bytes) in one
// call: Seal (open false) writes the ciphertext to dst and the tag to tag; Open checks the tag at
// tag and writes the plaintext to dst only if it matches, and reports whether it did. key and nonce
// are the ChaCha20 key words and nonce bytes (XChaCha20's subkey and nonce for that suite); ad may be nil when adLen is
// 0, src and dst when n is 0.
//
//go:noescape
func chachaPoly1305TinyAVX2(key *[8]uint32, nonce *[12]byte, dst, src *byte, n int, ad *byte, adLen int, tag *[TagSize]byte, open bool) bool

// chachaPoly1305TinyAVX512 is chachaPoly1305TinyAVX2 with its rotations by VPROLD (AVX-512VL).
//
//go:noescape
func chachaPoly1305TinyAVX512(key *[8]uint32, nonce *[12]byte, dst, src *byte, n int, ad *byte, adLen int, tag *[TagSize]byte, open bool) bool

// chachaPoly1305SmallAVX512 is chachaPoly1305TinyAVX2 for a message of up to 13 blocks
// (chachaSmallMax bytes; Open: 17, chachaSmallOpenMax), on AVX-512 (AVX512F, VL, BW): the key
// stream's blocks 0 to 2s-1 in s row-form states of two blocks, the fewest of three to seven (Open:
// to nine) that cover the message, rotations by VPROLD.
//
//go:noescape
func chachaPoly1305SmallAVX512(key *[8]uint32, nonce *[12]byte, dst, src *byte, n int, ad *byte, adLen int, tag *[TagSize]byte, open bool) bool

// chachaPoly1305LongAVX512 is chachaPoly1305SmallAVX512's design for a message of more than 512
// bytes: after block 0 and 1's state, sets of four states (eight blocks) in a loop, each with the
// MAC beside its rounds. Open writes dst before the tag is checked; the caller zeroes it where the
// tag does not match.
//
//go:noescape
func chachaPoly1305LongAVX512(key *[8]uint32, nonce *[12]byte, dst, src *byte, n int, ad *byte, adLen int, tag *[TagSize]byte, open bool) bool

// xorBytesAVX2 writes the n bytes at a XOR the n bytes at b to dst (dst may equal a): the
// single-message paths' XOR of a message with key stream from a buffer, on ymm.
//
//go:noescape
func xorBytesAVX2(dst, a, b *byte, n int)

//go:noescape
func chachaXOR16OneAVX512(st *[16]uint32, dst, src *byte, n int)

// chachaKS8AVX512 and chachaKS4AVX512 write the key stream of 8 or 4 consecutive blocks from counter st[12].
//
//go:noescape
func chachaKS8AVX512(st *[16]uint32, out *[8 * 64]byte)

//go:noescape
func chachaKS4AVX512(st *[16]uint32, out *[4 * 64]byte)

// chachaKS24AVX512 writes the key stream of 24 consecutive blocks from counter st[12], two states at once.
//
//go:noescape
func chachaKS24AVX512(st *[16]uint32, out *[24 * 64]byte)

// chachaXOR24AVX512 is chachaKS24AVX512 that XORs blocks 1-15 into the 960 bytes at src, to dst (src and dst may
// be equal), and writes block 0 then blocks 16-23 to out.
//
//go:noescape
func chachaXOR24AVX512(st *[16]uint32, out *[9 * 64]byte, dst, src *byte)

// poly1305IFMAZ and poly1305IFMAY are the same kernel on zmm (two groups of 8 lanes) and on ymm (four
// groups of 4 lanes); poly1305IFMAYLanes8 is poly1305IFMAY on lanes 0-7 only.
//
//go:noescape
func poly1305IFMAZ(st *[15][16]uint64, p *polyPtrs16, n, stride int)

//go:noescape
func poly1305IFMAY(st *[15][16]uint64, p *polyPtrs16, n, stride int)

//go:noescape
func poly1305IFMAYLanes8(st *[15][16]uint64, p *polyPtrs16, n, stride int)

// poly1305IFMAOne absorbs into st.h headN (at most 8) blocks at head, n blocks of one message (a
// multiple of 8) eight lanes at a time, and tailN (at most 9) blocks at tail; the head's and the
// tail's blocks in one multiplication, or one at a time where there are one or two.
//
//go:noescape
func poly1305IFMAOne(st *polyOne, head *byte, headN int, msg *byte, n int, tail *byte, tailN int)

// poly1305IFMAPowers writes st's multiplier rows for r (radix-2^44 limbs): r^16, the lanes' two
// sets of final multipliers (polyOneRowEnd, polyOneRowEnd2) in the unpacked block order, and r.
//
//go:noescape
func poly1305IFMAPowers(st *polyOne, r *[3]uint64)

// poly1305FinishIFMAZ finishes the tags of the 16 lanes of an IFMA table (see polyTable) and returns the
// mask of the lanes whose tag equals the expected one.
//
//go:noescape
func poly1305FinishIFMAZ(st *[15][16]uint64) (eq int)

// poly1305AVX2Eight absorbs n groups of 8 blocks of one message into the 8 lanes of st, lane by lane.
//
//go:noescape
func poly1305AVX2Eight(st *polyOne26, msg *byte, n int)

// poly1305AVX2 is the radix-2^26 kernel of the AVX2 tier (and of an AVX512 CPU without IFMA).
//
//go:noescape
func poly1305AVX2(st *[15][16]uint64, p *polyPtrs16, n, stride int)

//go:noescape
func poly1305AVX2Lanes8(st *[15][16]uint64, p *polyPtrs16, n, stride int)

//go:noescape
func chachaXOR16AVX2Regs(tab *streamTable, lanes *chachaPtrs16, n, stride int)

//go:noescape
func chachaXOR8AVX2Regs(tab *streamTable, lanes *chachaPtrs16, n, stride int)

// chachaXOR8OneAVX2Regs, chachaXOR16OneAVX2Regs and chachaXOR8OneMACAVX2Regs are the single-message
// kernels of 1-cycle cores: the contracts of chachaXOR8OneAVX2, chachaXOR16OneAVX2 and
// chachaXOR8OneMACAVX2.
//
//go:noescape
func chachaXOR8OneAVX2Regs(st *[16]uint32, dst, src *byte, n int)

//go:noescape
func chachaXOR16OneAVX2Regs(st *[16]uint32, dst, src *byte, n int)

//go:noescape
func chachaXOR8OneMACAVX2Regs(st *[16]uint32, dst, src *byte, n int, mac *poly1305, msg *byte, macBlocks int)

// poly1305AVX2Regs and poly1305AVX2RegsLanes8 are poly1305AVX2 and poly1305AVX2Lanes8 for 1-cycle
// cores (impl.poly26Regs).
//
//go:noescape
func poly1305AVX2Regs(st *[15][16]uint64, p *polyPtrs16, n, stride int)

//go:noescape
func poly1305AVX2RegsLanes8(st *[15][16]uint64, p *polyPtrs16, n, stride int)

// chachaXOR16MACAVX2Regs, chachaXOR8MACAVX2Regs and chachaXOR16MACAVX512 are chachaXOR16AVX2Regs,
// chachaXOR8AVX2Regs and chachaXOR16AVX512 that also absorb mac's blocks, some beside their rounds
// (n >= 1) or all that are left (n = 0, when tab and lanes are not read): streamMACGeneric's
// contract.
//
//go:noescape
func chachaXOR16MACAVX2Regs(tab *streamTable, lanes *chachaPtrs16, n, stride int, mac *laneMAC)

//go:noescape
func chachaXOR16MACAVX512(tab *streamTable, lanes *chachaPtrs16, n, stride int, mac *laneMAC)

//go:noescape
func chachaXOR8MACAVX2Regs(tab *streamTable, lanes *chachaPtrs16, n, stride int, mac *laneMAC)

// chachaXOR24MACAVX512 is chachaXOR24AVX512 that absorbs blocks of mac's lanes beside its rounds.
//
//go:noescape
func chachaXOR24MACAVX512(st *[16]uint32, out *[9 * 64]byte, dst, src *byte, mac *laneMAC)
