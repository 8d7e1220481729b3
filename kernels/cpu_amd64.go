// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:generate sh -c "cd _asm/cpuid && go run . -out ../../cpuid_amd64.s -pkg kernels"

// cpuid executes CPUID with EAX = leaf and ECX = sub (cpuid_amd64.s).
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// x86Family returns the CPU's vendor and its display family and model (CPUID leaf 1, with the
// extended fields as both vendors define them).
func x86Family() (vendor string, family, model uint32) {
	_, b, c, d := cpuid(0, 0)
	v := [12]byte{}
	for i, w := range [3]uint32{b, d, c} {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	a, _, _, _ := cpuid(1, 0)
	family, model = a>>8&0xf, a>>4&0xf
	if family == 0xf {
		family += a >> 20 & 0xff
	}
	if family >= 6 {
		model |= a >> 16 & 0xf << 4
	}
	return string(v[:]), family, model
}

// hasVAESYMM reports VAES and VPCLMULQDQ, which run on ymm with AVX alone (CPUID leaf 7, ECX bits 9
// and 10). golang.org/x/sys/cpu reports them only on CPUs with AVX-512.
func hasVAESYMM() bool {
	_, _, c, _ := cpuid(7, 0)
	return c&(1<<9) != 0 && c&(1<<10) != 0
}

// ymmLatency2 reports a core whose ymm integer instructions take 2 cycles (AMD Zen 5, family 1Ah;
// tools/pipeprobe measures it): its AVX2 ChaCha20 kernel hides the latency with two groups of
// lanes in flight (chachaXOR16AVX2); 1-cycle cores keep one group in registers
// (chachaXOR16AVX2Regs; impl.chachaAVX2Regs).
var ymmLatency2 = func() bool {
	vendor, family, _ := x86Family()
	return vendor == "AuthenticAMD" && family >= 0x1a
}()

// zmmHalves reports a core that runs each zmm instruction as two ymm halves (AMD Zen 4, the only
// family 19h cores with AVX-512): its 16-lane zmm kernels do the work of two 8-lane ymm ones in
// twice the time, so they repay their fixed cost only on more ops than where zmm runs at full width.
var zmmHalves = func() bool {
	vendor, family, _ := x86Family()
	return vendor == "AuthenticAMD" && family == 0x19 && chachaAVX512
}()

// impl is the kernel-variant registry: where a tier has more than one kernel for the same job, the
// one this CPU runs, chosen once from its features. Each field names the measurement behind its
// choice (the runs are in docs/experiments.md); tests set a field, and restore it, to run each
// variant the CPU has. Which tier runs at all is the dispatch table's choice (dispatch.go).
var impl = struct {
	// polyIFMA: the AVX512 tier's Poly1305, lanes and single messages, in radix 2^44 with IFMA
	// (poly1305IFMAZ/Y, poly1305FinishIFMAZ, poly1305IFMAOne) where the CPU has IFMA, else the
	// radix-2^26 AVX2 kernels: three 44-bit limbs and 52-bit multiplies instead of five limbs and
	// 32-bit ones (BenchmarkPoly1305Kernels runs both on one CPU; no figure was recorded).
	polyIFMA bool
	// polyZMM: the IFMA lane kernel on zmm (poly1305IFMAZ) rather than ymm (poly1305IFMAY, for cores
	// that lower their clock for zmm): 1.75x faster on AMD Zen 5 (BenchmarkPoly1305Kernels).
	polyZMM bool
	// chachaAVX2Regs: the AVX2 ChaCha20 kernels of 1-cycle cores, one group of 8 lanes in registers
	// (chachaXOR16AVX2Regs, chachaXOR8AVX2Regs and the single-message ...Regs kernels), rather than
	// two groups in flight (chachaXOR16AVX2) for 2-cycle cores (ymmLatency2): 16 x 4 KiB 1.7-2.0 ->
	// 2.4-2.5 GB/s on AMD Zen 3 (BenchmarkChaCha20Kernels).
	chachaAVX2Regs bool
	// chachaStitchedMAC: with chachaAVX2Regs, long groups of the AVX2 lanes absorb one group's
	// ciphertext in scalar Poly1305 steps beside another group's stream (chachaXOR16MACAVX2Regs;
	// runLongGroupsStitched) rather than in the vector Poly1305 lanes after their own: 16 lanes x
	// 22 blocks with 88 MAC blocks each 9.44 -> 7.53 us (the stream alone 6.70;
	// BenchmarkChaChaStitchedMAC), Tier AVX2 64 x 1420 B 1.12x faster to seal, 1.11x to open, 64 x
	// 512 B 1.10x and 1.07x, on AMD Zen 4 (the AVX2 kernels, 1-cycle ymm latency).
	chachaStitchedMAC bool
	// chachaStitchedMACZMM: the AVX512 tier's long groups (with IFMA) pipeline their Seals as
	// chachaStitchedMAC does, the chain beside the zmm stream (chachaXOR16MACAVX512) taking lanes
	// 8-15 and the IFMA lanes on ymm lanes 0-7 (poly1305IFMAYLanes8), where one chain keeps up with
	// about half of what the zmm lanes stream. AMD Zen 4, 16 lanes x 19 blocks with 76 MAC blocks
	// each: the stream 3.33 us, with 570 of the MAC blocks beside it 3.38, the IFMA lanes 1.46 for
	// 16 lanes and 0.75 for 8 (BenchmarkChaChaStitchedMACZMM: the stream and IFMA on 16 lanes 4.83
	// us, the chain on 8 with IFMA on the other 8 4.56, medians of 5); 64 x 1420 B Seal against
	// x/crypto 1.57x -> 1.58x, with 64 keys 1.53x -> 1.57x, XChaCha20 1.59x -> 1.66x, QUIC 64 x
	// 1200 B 1.72x -> 1.76x (medians of 3; which Seals, stitchedGroups). Zen 5 and Intel
	// unmeasured.
	chachaStitchedMACZMM bool
	// chachaTinyFused: an op alone (a batch of one, or one of at most laneKernels.fewOps) within
	// chachaTinyMax bytes takes the fused AVX2 kernel (chachaTinyFusedOp) on either SIMD tier, rather
	// than a 4-block pass and the scalar Poly1305 (chachaTinyOp). Its rounds are one row-form
	// state, a chain of dependent steps that only 1-cycle cores run fast. 1 x 64 B against x/crypto
	// (`make bench`): AMD Zen 4 (AVX512 tier) 0.74-0.75x -> 1.02-1.04x, XChaCha20 0.87-0.92x ->
	// 1.09-1.14x; AMD Zen 3 (AVX2 tier) 1.10x. Intel cores take it by their latency, unmeasured.
	chachaTinyFused bool
	// chachaTinyProld: the fused tiny kernel with its rotations by VPROLD (chachaPoly1305TinyAVX512)
	// where the CPU has AVX-512VL: one instruction, and one step of the rounds' chain, where a
	// rotation by 12 or 7 takes three and two. AMD Zen 4, lone ops of 100-192 B through the batch
	// API against x/crypto, 1-3% faster than the AVX2 kernel (Opens of 128-192 B 0.99-1.00x ->
	// 1.01-1.04x), up to 64 B level (docs/experiments.md, 2026-12-04 third session). Intel AVX-512
	// cores take it by their latency, unmeasured.
	chachaTinyProld bool
	// chachaTiny3AVX512: where the fused kernels run a batch's ops (tinyOps), those past block 1
	// (65-192 bytes) run three to a call (chachaPoly1305Tiny3AVX512: six row-form states in the
	// EVEX registers) as those within block 1 do on chachaPoly1305Tiny3AVX2, and two or three of
	// the ops left at the end of a batch, of either size, run in one call of it or of
	// chachaPoly1305Tiny2AVX512, rather than each alone on chachaPoly1305TinyAVX512, whose lone
	// op's rounds leave most of the vector pipes idle. AMD Zen 4, Seals with 8 bytes of AD, the
	// kernels against as many lone calls (BenchmarkChaChaTinyLanesAVX512, medians of 3): three ops
	// of 64 B 364 -> 248 ns, 100 B 455 -> 293, 128 B 471 -> 306, 192 B 528 -> 367; two of 64 B 244
	// -> 188, 100 B 303 -> 220, 192 B 349 -> 266 (docs/experiments.md, 2026-12-07 fourth session).
	// Only the routes with fused tiny kernels run it (Zen 4's); other AVX-512 cores unmeasured.
	chachaTiny3AVX512 bool
	// chachaTiny2AVX2: on AVX2 without AVX-512, the ops of 65-128 bytes that the fused kernels run
	// (tinyOps) run two to a call (chachaPoly1305Tiny2AVX2: three row-form states, each op's
	// blocks 0 and 1 and block 2 of both, in twelve of the sixteen ymm registers), as do two ops
	// left at the end of a batch, rather than each alone on chachaPoly1305TinyAVX2 in two states.
	// AMD Zen 4 (whose ymm latency is Zen 2 and 3's), Seals with 8 bytes of AD, the kernel
	// against two lone calls (BenchmarkChaChaTinyPairAVX2, medians of 3): 64 B 246 -> 195 ns, 100
	// B 312 -> 226, 128 B 320 -> 235; through the batch API with AVX-512 hidden (the route of Zen
	// 2 and 3) against x/crypto, seal / open, 2 x 100 B 1.04x / 1.01x -> 1.32x / 1.29x, 8 x 128 B
	// 1.05x / 1.03x -> 1.35x / 1.35x (docs/experiments.md, 2026-12-07 fourth session). Two
	// messages of 129-192 bytes need four states, which the sixteen registers hold only without
	// the rotations' temporaries.
	chachaTiny2AVX2 bool
	// chachaSmallFused: the longest Seal and Open (zero: none) that an op alone on the AVX512
	// tier's one-op path (chachaOneOp) with a message past block 3 and at most chachaFusedAD
	// bytes of AD takes the fused AVX-512 kernel (chachaPoly1305SmallAVX512: blocks 0 to 2s-1 in
	// row-form states, then the scalar MAC; an Open of more than five blocks runs the MAC beside
	// the rounds of blocks 2 on, a Seal of more than seven the MAC of blocks 1-7 beside the rounds
	// of blocks 8 on) rather than an 8- or 16-lane key-stream pass and the IFMA Poly1305. AMD Zen
	// 4, a 256-byte Seal with 8 bytes of AD alone: 298-305 ns -> 207; against x/crypto called
	// directly, seal / open, 193 B 1.18x / 1.14x, 256-320 B 1.10-1.12x / 1.11x, 384-448 B
	// 1.14-1.15x / 1.08-1.13x, 512-576 B 1.04-1.06x / 0.92-1.01x, 608-704 B 0.99-1.00x / 1.03-1.11x
	// (docs/experiments.md, 2026-12-04 third and fourth sessions); through kernels.Open, one op,
	// Opens of 321-704 B 1.13-1.29x with the MAC beside the rounds, 0.96-1.06x without, and of
	// 705-1088 B 1.04-1.21x (docs/experiments.md, 2026-12-05); Seals of 577-832 B with the MAC
	// beside the second set's rounds, against x/crypto called directly, 0.99-1.04x -> 1.07-1.16x
	// (docs/experiments.md, 2026-12-05 second session): there, to the kernel's own limits
	// (chachaSmallMax, chachaSmallOpenMax). Intel Sapphire Rapids, whose full-width zmm lanes and
	// 24-block passes are faster, to 544 B (Seal) and 576 B (Open): 1 and 4 ops against x/crypto,
	// the one-op path -> the kernel, seal / open, 256 B 0.84-0.88x -> 1.08-1.10x / 1.06-1.10x, 384
	// B 1.02x / 0.96-1.01x -> 1.03x / 1.08-1.11x, 480-544 B 1.01-1.03x / 1.00-1.03x -> 1.02-1.06x /
	// 1.18-1.23x, 576 B Open 1.29-1.30x -> 1.45-1.49x; not Seals of 576 B (1.04-1.06x -> 1.02-1.05x)
	// nor ops of 608 B (1.10-1.11x / 1.22x -> 1.04-1.07x / 1.16x) (docs/experiments.md, 2026-12-07
	// eighth session). Zen 5 unmeasured: its 2-cycle latency makes the row-form chains twice as
	// long.
	chachaSmallFused [2]int
	// chachaBlocksHeads: EncryptBlocks of a ChaCha20 key on AVX-512 CPUs runs fewer than
	// chachaBlocksLanes inputs on the heads kernel (row form, six states a pass; chachaHeadsAVX512,
	// the AVX2 tier's chachaHeadsAVX2 with VPROLD) rather than each through the 4-block kernel: its
	// chains are short enough for 1-cycle cores. AMD Zen 4, per call: 1 input 85 ns against 128-136
	// on the 4-block kernel, and 8 inputs 215 against 620-650 on the lane route of that day
	// (docs/experiments.md, 2026-12-02 Zen 4).
	chachaBlocksHeads bool
	// chachaBlocksLanes: the fewest inputs for which EncryptBlocks of a ChaCha20 key runs one input
	// per zmm lane (chachaHeads16AVX512) on AVX-512 CPUs. AMD Zen 4, the lanes against the heads
	// kernel, ns an input: 4 inputs 46 against 26, 6 31 against 19, 8 23.2 against 23.8, 10 18.6
	// against 21-22, 16 11.5 against 20.1, 64 11.4 against 18.9 (docs/experiments.md, 2026-12-05
	// fourth session). Zen 5 (unmeasured) keeps the 4 of the lane route this kernel replaced there
	// (measured on Zen 3's AVX2 lanes: one input 880 ns through the lanes, 130 through the 4-block
	// kernel, four 209 ns each): the kernel runs the lane kernel's rounds with less around them, so
	// its break-even can only be lower.
	chachaBlocksLanes int
	// chachaFewOpsAVX512: the AVX512 tier's laneKernels.fewOps, the largest batch that runs one op at
	// a time rather than in the 16 zmm lanes: 7 where zmm runs at full width, 11 where it runs in
	// two halves (zmmHalves). AMD Zen 4, 8 x 1420 B: lanes 1060-1180 ns an op, one at a time
	// 600-770; 12 x 1420 B level; 12 x 576 B lanes 390-440 ns, one at a time 560-620
	// (docs/experiments.md, 2026-12-02 Zen 4).
	chachaFewOpsAVX512 int
	// chachaLongAloneAVX512: the AVX512 tier's laneKernels.longAlone, the shortest message that runs
	// on the one-op path in any batch rather than in the 16 zmm lanes: 16 KiB where zmm runs in two
	// halves (zmmHalves), none elsewhere (unmeasured). AMD Zen 4, 16 and 64 ops of one length
	// against x/crypto (BenchmarkChaChaLong, both suites, medians), seal / open, lanes -> one at a
	// time: 8 KiB 1.22-1.32x / 1.24-1.30x -> 1.22x / 1.15-1.17x (the lanes ahead); 16 KiB
	// 1.13-1.15x / 1.14-1.26x -> 1.20-1.36x / 1.17-1.20x; 32 KiB 0.98-1.16x / 1.04-1.08x ->
	// 1.21-1.24x / 1.19-1.26x; 64 KiB 0.96-1.04x / 1.01-1.06x -> 1.22-1.23x / 1.18-1.34x.
	chachaLongAloneAVX512 int
	// chachaSealLongChain: the AVX512 one-op path seals messages of chachaSealLongMin bytes or more
	// in passes of 24 blocks with the MAC of the ciphertext before each pass beside its rounds
	// (chachaSealLong24), where zmm runs in two halves (zmmHalves; elsewhere unmeasured). The
	// figures are beside chachaSealLong24.
	chachaSealLongChain bool
	// chachaShapeGroups: the AVX512 lanes run a chunk of ops of several shapes as long groups of
	// one shape each and the ops those leave one at a time (laneKernels.shapeGroups) on 1-cycle
	// cores, AMD Zen 4 and Intel Sapphire Rapids (Zen 5 unmeasured). The figures are beside
	// chachaChunkState.shapeGroups and the route of cpuAVX512Lat1.
	chachaShapeGroups bool
	// poly26Regs: the radix-2^26 Poly1305 lane kernels of 1-cycle cores, one group of 4 lanes at a
	// time with its accumulators in registers and two blocks per step (poly1305AVX2Regs,
	// poly1305AVX2RegsLanes8), rather than all groups block by block (poly1305AVX2) for 2-cycle
	// cores (ymmLatency2): 16 x 4 KiB 3.4 -> 5.3 GB/s on AMD Zen 3 (BenchmarkPoly1305Kernels).
	poly26Regs bool
	// gcmVAES: the AVX2 tier's AES-GCM chunks on ymm with VAES and VPCLMULQDQ (gcmSealAVX2VAES,
	// gcmOpenAVX2VAES), read with CPUID since x/sys/cpu reports them only with AVX-512, else the
	// AES-NI xmm kernels: 64 x 1420 B AES-128 Seal 1.12x -> 1.66x the standard library, one 1420 B op
	// 0.72x -> 1.60x, on AMD Zen 3 (BenchmarkGCMKernel compares the two kernels,
	// BenchmarkGCMAVX2Variants each against crypto/cipher).
	gcmVAES bool
	// gcmSchoolbook: the AVX512 AES-GCM kernels' chunk loop takes the schoolbook's four GHASH
	// products a block, each power of H loaded once, rather than Karatsuba's three from memory
	// operands (gcmSealAVX512Schoolbook, gcmOpenAVX512Schoolbook), on Intel AVX-512 cores, where a
	// zmm load costs about a third of a vector ALU slot: one op, 16 blocks a chunk, Open 4096 B 246
	// -> 221 ns, 1200 B 79 -> 73 ns; AES-128 64 x 1420 B 2.34x / 2.32x -> 2.51x / 2.48x
	// crypto/cipher (seal / open), QUIC AES-128 64 x 1200 B 2.23x / 2.03x -> 2.37x / 2.19x, on
	// Intel Xeon family 6 model 167 (docs/experiments.md, 2026-12-07 ninth session). AMD Zen 4 runs
	// the carry-less products on the pipes of its AES rounds, which the fourth product would
	// lengthen; Zen 4 and Zen 5 are unmeasured and keep Karatsuba's.
	gcmSchoolbook bool
	// aesBlocksZMM: EncryptBlocks of three or more AES blocks (QUIC's header-protection masks of a
	// batch) on zmm with the round keys in registers (aesEncryptBlocksAVX512) rather than on ymm
	// with the keys as memory operands (and below sixteen blocks on xmm), on Intel AVX-512 cores,
	// whose zmm VAESENC takes four blocks in the slot of a ymm one's two: against crypto/aes a
	// block, 8 blocks 2.32x -> 4.11x, 64 blocks 5.02x -> 5.71x; quic AES-128 64 x 60 B 3.16x /
	// 2.93x -> 3.24x / 3.04x the per-packet way, on Intel Xeon family 6 model 167
	// (docs/experiments.md, 2026-12-07 eleventh session). AMD Zen 4 and Zen 5 are unmeasured and
	// keep ymm.
	aesBlocksZMM bool
}{
	polyIFMA:             chachaAVX512 && cpu.X86.HasAVX512IFMA,
	polyZMM:              true,
	chachaAVX2Regs:       !ymmLatency2,
	chachaStitchedMAC:    !ymmLatency2,
	chachaStitchedMACZMM: zmmHalves,
	poly26Regs:           !ymmLatency2,
	chachaTinyFused:      !ymmLatency2,
	chachaSmallFused: func() [2]int {
		switch {
		case zmmHalves:
			return [2]int{chachaSmallMax, chachaSmallOpenMax}
		case chachaAVX512 && !ymmLatency2:
			return lat1SmallFused
		}
		return [2]int{}
	}(),
	chachaTinyProld:   chachaAVX512,
	chachaTiny3AVX512: chachaAVX512,
	chachaTiny2AVX2:   !ymmLatency2,
	chachaBlocksHeads: !ymmLatency2,
	chachaBlocksLanes: func() int {
		if ymmLatency2 {
			return 4
		}
		return 8
	}(),
	chachaFewOpsAVX512: func() int {
		if zmmHalves {
			return 11
		}
		return chachaFewOps
	}(),
	chachaLongAloneAVX512: func() int {
		if zmmHalves {
			return 16 << 10
		}
		return 0
	}(),
	chachaSealLongChain: zmmHalves && chachaAVX512 && cpu.X86.HasAVX512IFMA,
	chachaShapeGroups:   chachaAVX512 && !ymmLatency2,
	gcmVAES:             gcmAVX2OK && hasVAESYMM(),
	gcmSchoolbook:       gcmAVX512OK && !ymmLatency2 && !zmmHalves,
	aesBlocksZMM:        gcmAVX512OK && !ymmLatency2 && !zmmHalves,
}

// thisCPU is the dispatch table's class of this CPU.
var thisCPU = func() cpuClass {
	vendor, _, _ := x86Family()
	switch {
	case vendor != "AuthenticAMD" && vendor != "GenuineIntel":
		return cpuUnmeasured
	case chachaHasSIMD(AVX512) && gcmHas(AVX512) && zmmHalves:
		return cpuAVX512Halves
	case chachaHasSIMD(AVX512) && gcmHas(AVX512) && !ymmLatency2:
		return cpuAVX512Lat1
	case chachaHasSIMD(AVX512) && gcmHas(AVX512):
		return cpuAVX512
	case chachaHasSIMD(AVX2) && gcmHas(AVX2) && !ymmLatency2:
		return cpuAVX2Lat1
	}
	return cpuUnmeasured
}()

// smallFused reports whether this CPU runs an n-byte Seal or, with open, Open on the fused kernel
// of blocks 4-13 (Open: 4-17) where its path offers it one: n is within impl.chachaSmallFused's
// limit, and the CPU has one.
func smallFused(n int, open bool) bool {
	limit := impl.chachaSmallFused[0]
	if open {
		limit = impl.chachaSmallFused[1]
	}
	return limit > 0 && n <= limit
}
