// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"unsafe"
)

// The few-ops path: with fewer ops than lanes, one op per lane would leave most lanes idle, so the
// ops run one at a time (chachaOneOp), the lanes sharing out the blocks of each message, without
// lane tables.
//
// On AVX512:
//
//	ChaCha20   chachaXOR16OneAVX512 broadcasts the message's state to 16 lanes, lane j running block 16k+j,
//	           and masks the last partial block; the first pass (block 0 for the Poly1305 key and
//	           the first blocks) is chachaKS24AVX512 (24 blocks, two states in flight) or a 16-, 8- or
//	           4-block key-stream pass, whichever covers the message.
//	Poly1305   poly1305IFMAOne: 8 lanes on the message's groups of 8 blocks, lane j taking block j
//	           of a group; two accumulators take the groups in turns, each stepping by r^16, so
//	           that their chains of dependent multiplications overlap, and end with r^(8-j) (the
//	           last group's) or r^(16-j), so that the lanes' sum is the Horner evaluation of those
//	           blocks (RFC 8439 section 2.5); the blocks before and after the groups (the AD's
//	           rest, the last blocks, the lengths) go in as one multiplication, block i of k with
//	           r^(k-i) in its lane, or one at a time where there are one or two.
//	           poly1305IFMAPowers makes r^2..r^16 in four rounds of lane-wise IFMA
//	           multiplications: as a chain of dependent scalar multiplications the powers would
//	           take a large share of a packet-sized MAC.
//
// On AVX2:
//
//	ChaCha20   chachaXOR16OneAVX2: 16 lanes on one message, lane j running block 16k+j, whole passes
//	           in place, then one pass of chachaXOR8OneAVX2 (8 lanes) if 8 whole blocks are left;
//	           the first pass (blocks 0-15, 0-7, or chachaKS4AVX2's 0-3) and the last blocks go
//	           through a key-stream buffer. A tiny op within block 1 takes chachaKS2Scalar (scalar).
//	Poly1305   MACs over 2 KiB: poly1305AVX2Eight, 8 lanes on the message's blocks in radix 2^26,
//	           lane j absorbing blocks 8k+j with multiplier r^8; the portable Poly1305 adds the
//	           lanes into its accumulator in Horner order (poly1305OneAVX2). Shorter MACs take the
//	           portable Poly1305 alone.
//	Stitched   a message of 16 to 23 blocks (961 to 1472 bytes: full-size WireGuard packets) takes
//	           chachaStitchedOpAVX2 instead: the second pass runs the MAC's first blocks as scalar
//	           code inside its rounds (chachaXOR8OneMACAVX2), which the vector rounds leave the
//	           scalar pipes for, so the MAC's chain of dependent blocks starts during the second pass
//	           instead of after it.
//
// On both, a message within blocks 1-3 with a short MAC input takes chachaTinyOp, and short MACs the
// portable radix-2^64 Poly1305 (poly1305AEAD). On 1-cycle cores (impl.chachaTinyFused) a message
// within blocks 1-3 with AD of up to chachaFusedAD bytes takes chachaTinyFusedOp instead, on either
// tier: the whole op in one call of chachaPoly1305TinyAVX2; a message within impl.chachaSmallFused's
// limits (blocks 4-13 at most, an Open's 4-17) with such AD takes chachaPoly1305SmallAVX512 on AVX512
// (chachaFusedOp), and one of the lengths that this CPU's route gives the fused long kernel
// (oneOps.takesLong) chachaPoly1305LongAVX512.
//
// chachaFewOps is the largest batch (or last chunk of a batch) that takes this path: up to there it
// costs less than one op per lane (for 1420-byte messages, 16 lanes run 24 blocks each however few
// of them are busy). Cores that run zmm in two halves take more on AVX512
// (impl.chachaFewOpsAVX512).
const chachaFewOps = 7

// chachaShortMAC is the longest AD plus ciphertext whose tag chachaOneOp computes with the scalar
// Poly1305 (poly1305AEAD): for a few blocks it beats setting up the vector lanes.
const chachaShortMAC = 64

// chachaScalarMACAVX2 is the longest AD plus ciphertext whose tag chachaOneOp computes with the scalar
// Poly1305 on the AVX2 tier (and AVX512 without IFMA): poly1305OneAVX2 has a fixed cost (r^8, and
// combining its lanes one block at a time) that its lower cost per block repays only on longer MAC
// inputs.
const chachaScalarMACAVX2 = 2 << 10

// chachaZeros is the source of pure key stream: the single-message passes XOR it into a buffer. Never
// written.
var chachaZeros [1024]byte

// oneOpScratch is a lone op's key-stream buffer and IFMA Poly1305 state. It comes from a pool
// rather than the stack: Go zeroes a stack array on every call, and for these 3 KiB that cost a
// lone 1200-1420-byte Open about a tenth of its time on AMD Zen 4 (docs/experiments.md,
// 2026-12-03). Whoever writes to a scratch wipes what it wrote (key stream, the powers of r, the
// accumulator) before putting it back, so a scratch from the pool is all zero, as poly1305One's
// rows must start.
type oneOpScratch struct {
	ks   [24 * 64]byte
	poly polyOne
}

var oneOpScratches = sync.Pool{New: func() any { return new(oneOpScratch) }}

// chachaOneOp seals or opens op on its own on SIMD tier t (AVX512 or AVX2) and reports whether it
// succeeded. Open authenticates before it decrypts, like every path.
func chachaOneOp(op *Op, open bool, t Tier) bool {
	n := msgLen(op, open)
	if impl.chachaTinyFused && n <= chachaTinyMax && len(op.AD) <= chachaFusedAD {
		return chachaTinyFusedOp(op, open, n)
	}
	if t == AVX512 && smallFused(n, open) && len(op.AD) <= chachaFusedAD {
		return chachaFusedOp(op, open, n, fusedSmallAVX512)
	}
	if t == AVX512 && chachaRoute.one.takesLong(op, n, open, false) {
		return chachaFusedOp(op, open, n, fusedLongAVX512)
	}
	if 64+n <= 4*64 && len(op.AD)+n <= chachaShortMAC {
		return chachaTinyOp(op, open, n, t)
	}
	if t == AVX2 && impl.chachaAVX2Regs && (!open || n <= chachaRegsOpenMax) {
		return chachaOneOpRegs(op, open, n)
	}
	if t == AVX2 && n > 15*64 && n <= 23*64 {
		return chachaStitchedOpAVX2(op, open, n)
	}
	if t == AVX512 && !open && seal24Lengths.holds(n) {
		return chachaSealOne24(op, n)
	}
	if t == AVX512 && !open && impl.chachaSealLongChain && n >= chachaSealLongMin && len(op.AD) <= sealChainMaxAD {
		return chachaSealLong24(op, n)
	}
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub, true)
	chachaInit(&st, key, 0, &nonce)
	src, dst := op.Src[:n], op.Dst[:n]

	// Block 0 (the Poly1305 key) and the key stream of the first bytes in one pass: blocks 0-23
	// when that covers the message (AVX512: two states in flight), else 0-15 (or 0-7 or 0-3 when
	// the message ends there).
	// A message of up to three blocks gets a small buffer: wiping the large one would cost about as
	// much as its key stream.
	sc := oneOpScratches.Get().(*oneOpScratch)
	var ks []byte
	first := 16 * 64
	if 64+n <= 4*64 {
		var small [4 * 64]byte
		ks, first = small[:], len(small)
		chachaKS4Tier(t, &st, &small)
	} else {
		large := &sc.ks
		ks = large[:]
		if t == AVX512 && n > first-64 && n <= len(large)-64 {
			first = len(large)
			chachaKS24AVX512(&st, large)
		} else {
			chachaKeyStream(t, &st, large[:min(64+n, first)])
		}
	}
	var polyKey [32]byte
	copy(polyKey[:], ks[:32])

	mac := func(ct []byte) [TagSize]byte { return chachaOneMAC(t, op.AD, ct, &polyKey, &sc.poly) }
	ok := true
	if open {
		tag := mac(src)
		ok = chachaFinishTag(op, n, true, &tag)
	}
	if ok {
		m := min(n, first-64)
		xorStream(dst[:m], src[:m], ks[64:64+m])
		st[12] = uint32(first / 64)
		for off := m; off < n; {
			// Whole passes of 16 blocks (on AVX2 then one of 8), then the last blocks through the
			// key stream.
			k := min(n-off, maxStreamBlocks*64)
			switch {
			case k >= 16*64 && t == AVX512:
				k &^= 16*64 - 1
				chachaXOR16OneAVX512(&st, &dst[off], &src[off], k)
			case k >= 16*64 && impl.chachaAVX2Regs:
				k &^= 16*64 - 1
				chachaXOR16OneAVX2Regs(&st, &dst[off], &src[off], k)
			case k >= 16*64:
				k &^= 16*64 - 1
				chachaXOR16OneAVX2(&st, &dst[off], &src[off], k)
			case k >= 8*64 && t == AVX2 && impl.chachaAVX2Regs:
				k = 8 * 64
				chachaXOR8OneAVX2Regs(&st, &dst[off], &src[off], k)
			case k >= 8*64 && t == AVX2:
				k = 8 * 64
				chachaXOR8OneAVX2(&st, &dst[off], &src[off], k)
			default:
				chachaKeyStream(t, &st, ks[:n-off])
				xorStream(dst[off:], src[off:], ks[:n-off])
				k = n - off
			}
			st[12] += uint32(k / 64)
			off += k
		}
	}
	if !open {
		tag := mac(dst)
		chachaFinishTag(op, n, false, &tag)
	}
	clear(ks)
	oneOpScratches.Put(sc)
	clear(st[:])
	clear(sub[:])
	clear(polyKey[:])
	return ok
}

// chachaOneMAC returns the RFC 8439 section 2.8 tag of ad and ct under the one-time key polyKey with
// tier t's single-message Poly1305: the portable one for short MAC inputs (and on AVX2 up to
// chachaScalarMACAVX2), else the IFMA lanes (state in st, all zero) or AVX2's eight radix-2^26
// lanes.
func chachaOneMAC(t Tier, ad, ct []byte, polyKey *[32]byte, st *polyOne) [TagSize]byte {
	if len(ad)+len(ct) <= chachaShortMAC {
		return poly1305AEAD(ad, ct, polyKey)
	}
	if t == AVX512 && impl.polyIFMA {
		return poly1305One(ad, ct, len(ad), len(ct), polyKey, st)
	}
	if len(ad)+len(ct) <= chachaScalarMACAVX2 {
		return poly1305AEAD(ad, ct, polyKey)
	}
	return poly1305OneAVX2(ad, ct, polyKey)
}

// chachaSealOne24 is chachaOneOp's Seal on AVX512 for a message of 16 to 23 blocks (961 to 1472
// bytes: full-size WireGuard packets): one chachaXOR24AVX512 pass XORs blocks 1-15 of the key stream
// straight into Dst and leaves the Poly1305 key and blocks 16-23 in a buffer of 9 blocks, instead of
// all 24 blocks going through one (zeroed, written, read back and wiped).
func chachaSealOne24(op *Op, n int) bool {
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub, true)
	chachaInit(&st, key, 0, &nonce)
	sc := oneOpScratches.Get().(*oneOpScratch)
	ks := (*[9 * 64]byte)(sc.ks[:]) // block 0: the Poly1305 key (section 2.6); blocks 16-23 of the key stream
	src, dst := op.Src[:n], op.Dst[:n]
	chachaXOR24AVX512(&st, ks, &dst[0], &src[0])
	xorStream(dst[15*64:], src[15*64:], ks[64:])
	tag := chachaOneMAC(AVX512, op.AD, dst, (*[32]byte)(ks[:32]), &sc.poly)
	chachaFinishTag(op, n, false, &tag)
	clear(ks[:])
	oneOpScratches.Put(sc)
	clear(st[:])
	clear(sub[:])
	return true
}

// chachaSealPipeline seals the ops of ops that p takes, in order, as one pipeline of p's tier: the
// AVX2 single-message path of 1-cycle cores (chachaSealPipelineAVX2) or AVX512's
// (chachaSealChain24).
func chachaSealPipeline(ops []Op, p *pipeSeals) {
	if p.tier == AVX512 {
		chachaSealChain24(ops, p)
		return
	}
	chachaSealPipelineAVX2(ops, p)
}

// chachaSealChain24 seals the ops of ops that p takes (Seals of 961 to 1472 bytes), in order, as
// chachaSealOne24 does, but with the MACs of the ops before each op on the scalar pipes beside
// its pass (chachaXOR24MACAVX512): one chain of dependent blocks that goes from one op's
// ciphertext to the next op's, while the zmm and ymm rounds leave those pipes idle. A pass carries
// some 50 blocks that way at little cost to its rounds, of a full-size packet's 90. What the chain
// has not reached when the ops run out (or before a message of another length, or a seventeenth
// op) closeSealChain finishes.
func chachaSealChain24(ops []Op, p *pipeSeals) {
	sc := sealChainScratches.Get().(*sealChainScratch)
	m := &sc.chain
	var lanes [len(laneMAC{}.mac)]int // the op in each of m's lanes
	for i := range ops {
		op := &ops[i]
		if !p.takes(op) {
			continue
		}
		n := len(op.Src)
		if m.lanes == len(lanes) || m.lanes > 0 && m.size != uintptr(n&^15) {
			closeSealChain(ops, &lanes, sc)
		}
		var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
		var sub [8]uint32
		key, nonce := chachaOpKey(op, &sub, true)
		chachaInit(&st, key, 0, &nonce)
		src, dst := op.Src[:n], op.Dst[:n]
		chachaXOR24MACAVX512(&st, &sc.ks, &dst[0], &src[0], m)
		xorStream(dst[15*64:], src[15*64:], sc.ks[64:])
		j := m.lanes
		m.mac[j].init(sc.ks[:32])
		m.mac[j].writePadded(op.AD)
		m.msg[j] = unsafe.Pointer(&dst[0])
		m.size = uintptr(n &^ 15)
		m.lanes++
		lanes[j] = i
		clear(st[:])
		clear(sub[:])
	}
	closeSealChain(ops, &lanes, sc)
	clear(sc.ks[:])
	sealChainScratches.Put(sc)
}

// sealChainScratch is chachaSealChain24's key-stream buffer (block 0, the Poly1305 key of RFC 8439
// section 2.6, then blocks 16-23), IFMA Poly1305 state and chain, pooled and wiped as oneOpScratch
// is. Not a part of oneOpScratch: at 4 KiB that would sit at the start of a page, where a lone op's
// key-stream stores ran some 25% slower, meeting the message's loads at the same offsets within
// pages (AMD Zen 4).
type sealChainScratch struct {
	ks    [9 * 64]byte
	poly  polyOne
	chain laneMAC
}

var sealChainScratches = sync.Pool{New: func() any { return new(sealChainScratch) }}

// sealChainRestMax is the most whole blocks left of a chained op's MAC that closeSealChain absorbs
// with the portable Poly1305 rather than the IFMA lanes, whose set-up costs about as much.
const sealChainRestMax = 16

// closeSealChain finishes the MACs of sc.chain's lanes (ops[lanes[j]] in lane j), writes their
// tags and empties the chain.
func closeSealChain(ops []Op, lanes *[len(laneMAC{}.mac)]int, sc *sealChainScratch) {
	m := &sc.chain
	for j := range m.lanes {
		op := &ops[lanes[j]]
		n := len(op.Src)
		done := 0 // whole bytes the chain absorbed
		switch {
		case j < m.lane:
			done = n &^ 15
		case j == m.lane:
			done = int(m.done)
		}
		tag := chainTag(m, &sc.poly, j, op, op.Dst[:n], done)
		chachaFinishTag(op, n, false, &tag)
	}
	*m = laneMAC{} // the pointers into the ops, and the last lane's r
}

// chainTag finishes the MAC of chain m's lane j, op's with ciphertext ct, of which the chain has
// absorbed done bytes, and returns its tag: the rest on the IFMA lanes (state in poly, all zero)
// from the chain's accumulator, or, for up to sealChainRestMax whole blocks, with the portable
// Poly1305. It wipes the lane's poly1305.
func chainTag(m *laneMAC, poly *polyOne, j int, op *Op, ct []byte, done int) [TagSize]byte {
	mac := &m.mac[j]
	if (len(ct)-done)/16 <= sealChainRestMax || !impl.polyIFMA {
		mac.writePadded(ct[done:])
		return mac.aeadTag(len(op.AD), len(ct))
	}
	// The lanes go on from the chain's accumulator (h < 2^131: the top limb in radix 2^44 below
	// 2^43, within poly1305IFMAOne's bounds), under the same r and s.
	h := mac.h
	poly[oneRowH][0] = h[0] & mask44
	poly[oneRowH+1][0] = (h[0]>>44 | h[1]<<20) & mask44
	poly[oneRowH+2][0] = h[1]>>24 | h[2]<<40
	var key [32]byte // r (clamping it again changes nothing), then s
	binary.LittleEndian.PutUint64(key[0:], mac.r0)
	binary.LittleEndian.PutUint64(key[8:], mac.r1)
	binary.LittleEndian.PutUint64(key[16:], mac.s0)
	binary.LittleEndian.PutUint64(key[24:], mac.s1)
	*mac = poly1305{}
	tag := poly1305One(nil, ct[done:], len(op.AD), len(ct), &key, poly)
	clear(key[:])
	return tag
}

// chachaSealLongMin is the shortest message chachaSealLong24 takes: its first pass and two more
// that carry the chain. With one (3008-4031 B) it was level with the passes of 16 blocks and the
// MAC after them (3072 B 1.085x -> 1.073x against x/crypto), with two or more ahead (below).
const chachaSealLongMin = 63 * 64

// chachaSealLong24 is chachaOneOp's Seal on AVX512 for a message of chachaSealLongMin bytes or more
// (impl.chachaSealLongChain): the key stream in passes of 24 blocks, as chachaSealOne24's, each
// after the first with the MAC of the ciphertext that the passes before wrote on the scalar pipes
// beside its rounds (chachaXOR24MACAVX512, its chain of one lane: this op), some 50 of its 96
// blocks; the last blocks in one pass of as many; the rest of the MAC on the IFMA lanes from the
// chain's accumulator (chainTag). Lone Seals where the one-op path took them with passes of 16
// blocks and the MAC after them, against x/crypto, 8 B of AD, medians of 3 (AMD Zen 4): 4096 B
// 1.12x -> 1.16x, 6000 B 1.20x -> 1.26x, 8 KiB 1.23x -> 1.24x, 16 KiB 1.22x -> 1.31x, 64 KiB
// 1.21x -> 1.34x; four of 16 KiB 1.21x -> 1.30x (docs/benchmarks.md).
func chachaSealLong24(op *Op, n int) bool {
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub, true)
	chachaInit(&st, key, 0, &nonce)
	sc := sealChainScratches.Get().(*sealChainScratch)
	m := &sc.chain
	src, dst := op.Src[:n], op.Dst[:n]
	// Blocks 0-23: the Poly1305 key (section 2.6), then the message's bytes 0 to 23*64.
	chachaXOR24AVX512(&st, &sc.ks, &dst[0], &src[0])
	xorStream(dst[15*64:23*64], src[15*64:23*64], sc.ks[64:])
	m.mac[0].init(sc.ks[:32])
	m.mac[0].writePadded(op.AD)
	m.msg[0] = unsafe.Pointer(&dst[0])
	m.lanes = 1
	// Blocks 24k to 24k+23, from the message's byte `written` (block 24k's) on, while the message
	// has 16 blocks left: block 24k and blocks 24k+16 to 24k+23 (those the message has) come back
	// in sc.ks, blocks 24k+1 to 24k+15 go straight into dst. The chain reads only ciphertext written
	// before the pass. Fewer blocks left go in one pass of as many (chachaXOR16OneAVX512's 9-15,
	// or a key stream of up to 8 through sc.ks).
	written := 23 * 64
	for ; written+16*64 <= n; written = min(n, written+24*64) {
		st[12] = uint32(written/64 + 1)
		m.size = uintptr(written)
		at := written + 64
		chachaXOR24MACAVX512(&st, &sc.ks, &dst[at], &src[at], m)
		xorStream(dst[written:at], src[written:at], sc.ks[:64])
		end := min(n, at+23*64)
		xorStream(dst[at+15*64:end], src[at+15*64:end], sc.ks[64:])
	}
	if rest := n - written; rest > 0 {
		st[12] = uint32(written/64 + 1)
		if rest > 8*64 {
			chachaXOR16OneAVX512(&st, &dst[written], &src[written], rest)
		} else {
			chachaKeyStream(AVX512, &st, sc.ks[:rest])
			xorStream(dst[written:], src[written:], sc.ks[:rest])
		}
	}
	tag := chainTag(m, &sc.poly, 0, op, dst, int(m.done))
	chachaFinishTag(op, n, false, &tag)
	*m = laneMAC{}
	clear(sc.ks[:])
	sealChainScratches.Put(sc)
	clear(st[:])
	clear(sub[:])
	return true
}

// chachaStitchedOpAVX2 is chachaOneOp on AVX2 for a message of 16 to 23 blocks (blocks 1-23 of the
// key stream). The first pass (chachaXOR16OneAVX2) gives the Poly1305 key and blocks 1-15; the
// second (chachaXOR8OneMACAVX2, blocks 16-23) runs the MAC's first blocks on the scalar pipes during
// its rounds: for Seal the ciphertext the first pass's key stream made, for Open up to 80 blocks of
// the ciphertext, which Open authenticates before it decrypts, as everywhere. The key stream goes
// to a buffer, so no plaintext reaches Dst before the tag is checked.
func chachaStitchedOpAVX2(op *Op, open bool, n int) bool {
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub, true)
	chachaInit(&st, key, 0, &nonce)
	sc := oneOpScratches.Get().(*oneOpScratch)
	ks := &sc.ks // block 0: the Poly1305 key (section 2.6); blocks 1-23: the key stream
	chachaXOR16OneAVX2(&st, &ks[0], &chachaZeros[0], 16*64)
	var mac poly1305
	mac.init(ks[:32])
	mac.writePadded(op.AD)
	src, dst := op.Src[:n], op.Dst[:n]
	ct, macBlocks := src, min(n/16, 80)
	if !open {
		xorStream(dst[:15*64], src[:15*64], ks[64:16*64])
		ct, macBlocks = dst, 15*64/16
	}
	st[12] = 16
	chachaXOR8OneMACAVX2(&st, &ks[16*64], &chachaZeros[0], 8*64, &mac, &ct[0], macBlocks)
	if !open {
		xorStream(dst[15*64:], src[15*64:], ks[16*64:])
	}
	rest := ct[16*macBlocks:]
	if whole := len(rest) / 16; whole > 0 {
		chachaXOR8OneMACAVX2(&st, nil, nil, 0, &mac, &rest[0], whole)
		rest = rest[16*whole:]
	}
	mac.writePadded(rest)
	tag := mac.aeadTag(len(op.AD), n)
	ok := chachaFinishTag(op, n, open, &tag)
	if open && ok {
		xorStream(dst, src, ks[64:64+n])
	}
	clear(ks[:])
	oneOpScratches.Put(sc)
	clear(st[:])
	clear(sub[:])
	return ok
}

// chachaTinyOp is chachaOneOp for an n-byte message within blocks 1-3 whose MAC input is short
// (chachaShortMAC): one four-block pass gives the Poly1305 key and all the key stream, and the
// scalar Poly1305 reads the key where the pass left it, sparing an op this small the general path's
// buffers and closure.
func chachaTinyOp(op *Op, open bool, n int, t Tier) bool {
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub, true)
	chachaInit(&st, key, 0, &nonce)
	var ks [4 * 64]byte // block 0: the Poly1305 key (section 2.6); blocks 1-3: the key stream
	if t == AVX2 && n <= 64 && !impl.chachaAVX2Regs {
		chachaKS2Scalar(&st, (*[2 * 64]byte)(ks[:2*64])) // scalar: shorter chains than 2-cycle AVX2's
	} else {
		chachaKS4Tier(t, &st, &ks)
	}
	polyKey := (*[32]byte)(ks[:32])
	src, dst := op.Src[:n], op.Dst[:n]
	ok := true
	if open {
		tag := poly1305Short(op.AD, src, polyKey)
		if ok = chachaFinishTag(op, n, true, &tag); ok {
			xorTiny(dst, src, ks[64:])
		}
	} else {
		xorTiny(dst, src, ks[64:])
		tag := poly1305Short(op.AD, dst, polyKey)
		copy(op.Dst[n:], tag[:])
	}
	clear(ks[:])
	clear(st[:])
	clear(sub[:])
	return ok
}

// chachaTinyFusedOp is chachaOneOp on 1-cycle cores (impl.chachaTinyFused) for a message of at most
// chachaTinyMax bytes with at most chachaFusedAD bytes of AD: the whole op is one call of
// chachaPoly1305TinyAVX2 (chachaPoly1305TinyAVX512 where impl.chachaTinyProld), which writes Dst
// only once the tag has verified.
func chachaTinyFusedOp(op *Op, open bool, n int) bool {
	return chachaFusedOp(op, open, n, tinyFusedKernel())
}

// tinyFusedKernel is the fused kernel of blocks 1-3 this CPU runs: with VPROLD where it has
// AVX-512VL (impl.chachaTinyProld).
func tinyFusedKernel() fusedKernel {
	if impl.chachaTinyProld {
		return fusedTinyAVX512
	}
	return fusedTinyAVX2
}

// fusedKernel names a fused one-call kernel.
type fusedKernel uint8

const (
	fusedTinyAVX2    fusedKernel = iota // chachaPoly1305TinyAVX2
	fusedTinyAVX512                     // chachaPoly1305TinyAVX512
	fusedSmallAVX512                    // chachaPoly1305SmallAVX512
	fusedLongAVX512                     // chachaPoly1305LongAVX512
)

// chachaFusedOp runs op, n bytes of message and at most chachaFusedAD bytes of AD, in one call of
// the fused kernel k.
func chachaFusedOp(op *Op, open bool, n int, k fusedKernel) bool {
	var sub [8]uint32
	var xnonce [12]byte
	key, nonce := &op.Key.chacha, (*[12]byte)(op.Nonce)
	if op.Key.suite == XChaCha20Poly1305 {
		// The subkey and the nonce words of chachaOpKey; ChaCha20's nonce goes to the kernel as the
		// caller's bytes, which its loads need not wait for this function's stores to reach.
		var words [3]uint32
		key, words = chachaOpKey(op, &sub, true)
		binary.LittleEndian.PutUint32(xnonce[4:], words[1])
		binary.LittleEndian.PutUint32(xnonce[8:], words[2])
		nonce = &xnonce
	}
	tagAt := op.Dst // Seal writes the tag after the ciphertext; Open reads it after the ciphertext
	if open {
		tagAt = op.Src
	}
	tag := (*[TagSize]byte)(tagAt[n:])
	dst, src, ad := unsafe.SliceData(op.Dst), unsafe.SliceData(op.Src), unsafe.SliceData(op.AD)
	var ok bool
	switch k {
	case fusedSmallAVX512:
		ok = chachaPoly1305SmallAVX512(key, nonce, dst, src, n, ad, len(op.AD), tag, open)
	case fusedLongAVX512:
		ok = chachaPoly1305LongAVX512(key, nonce, dst, src, n, ad, len(op.AD), tag, open)
	case fusedTinyAVX512:
		ok = chachaPoly1305TinyAVX512(key, nonce, dst, src, n, ad, len(op.AD), tag, open)
	default:
		ok = chachaPoly1305TinyAVX2(key, nonce, dst, src, n, ad, len(op.AD), tag, open)
	}
	clear(sub[:])
	if !open {
		return true
	}
	if !ok {
		failOpen(op)
		return false
	}
	op.Err = nil
	return true
}

// poly1305Short returns the RFC 8439 section 2.8 tag of ad and ct under key for a short MAC input:
// on the AVX2 tier of 1-cycle cores the ciphertext's whole blocks run in the scalar MULX loop of
// chachaXOR8OneMACAVX2Regs (faster per block there than the portable Poly1305), the rest in the
// portable Poly1305; elsewhere all of it in the portable one.
func poly1305Short(ad, ct []byte, key *[32]byte) [TagSize]byte {
	whole := len(ct) / 16
	if !impl.chachaAVX2Regs || whole == 0 {
		return poly1305AEAD(ad, ct, key)
	}
	var mac poly1305
	var st [16]uint32 // read by the kernel, not used with n = 0
	mac.init(key[:])
	mac.writePadded(ad)
	chachaXOR8OneMACAVX2Regs(&st, nil, nil, 0, &mac, &ct[0], whole)
	mac.writePadded(ct[16*whole:])
	return mac.aeadTag(len(ad), len(ct))
}

// xorTiny writes src XOR ks[:len(src)] to dst: xorKeyBlock's word XORs for a message within one
// block, which is most tiny ops.
func xorTiny(dst, src, ks []byte) {
	if len(src) <= 64 {
		xorKeyBlock(dst, src, (*[64]byte)(ks[:64]))
		return
	}
	xorStream(dst, src, ks[:len(src)])
}

// xorStream writes src XOR ks[:len(src)] to dst[:len(src)] (dst and src equal or apart): the
// single-message paths' XOR of a message with key stream from a buffer, on ymm (xorBytesAVX2), in
// about half of subtle.XORBytes's time for a packet, whose 16-byte steps it replaces (AMD Zen 4,
// 1200 bytes in place: 23-25 ns against 42-47 ns).
func xorStream(dst, src, ks []byte) {
	n := len(src)
	if n == 0 {
		return
	}
	_, _ = dst[n-1], ks[n-1]
	xorBytesAVX2(&dst[0], &src[0], &ks[0], n)
}

// chachaKS4Tier writes the 4 key-stream blocks from block counter st[12] on to out with tier t's
// kernel.
func chachaKS4Tier(t Tier, st *[16]uint32, out *[4 * 64]byte) {
	if t == AVX512 {
		chachaKS4AVX512(st, out)
	} else {
		chachaKS4AVX2(st, out)
	}
}

// chachaKeyStream writes the key stream from block counter st[12] on to out (at most 16 blocks),
// with the narrowest kernel of tier t that covers it; on AVX2 out must have room for the 8 or 16
// blocks of a pass when it is longer than 4 blocks.
func chachaKeyStream(t Tier, st *[16]uint32, out []byte) {
	switch {
	case len(out) <= 4*64:
		chachaKS4Tier(t, st, (*[4 * 64]byte)(out[:4*64:4*64]))
	case t == AVX2 && len(out) <= 8*64 && impl.chachaAVX2Regs:
		chachaXOR8OneAVX2Regs(st, &out[:8*64][0], &chachaZeros[0], 8*64)
	case t == AVX2 && len(out) <= 8*64:
		chachaXOR8OneAVX2(st, &out[:8*64][0], &chachaZeros[0], 8*64)
	case t == AVX2 && impl.chachaAVX2Regs:
		chachaXOR16OneAVX2Regs(st, &out[:16*64][0], &chachaZeros[0], 16*64)
	case t == AVX2:
		chachaXOR16OneAVX2(st, &out[:16*64][0], &chachaZeros[0], 16*64)
	case len(out) <= 8*64:
		chachaKS8AVX512(st, (*[8 * 64]byte)(out[:8*64:8*64]))
	default:
		chachaXOR16OneAVX512(st, &out[0], &chachaZeros[0], 16*64)
	}
}

// polyOne is poly1305IFMAOne's state: rows of eight qwords, at the generator's row numbers below.
type polyOne [23][8]uint64

const (
	oneRowH        = 0  // the accumulator: limbs 0..2 in lane 0, zero in the other lanes
	polyOneRowR16  = 3  // r^16: limbs 0..2, 20*limb 1, 20*limb 2, in every lane
	polyOneRowEnd  = 8  // per lane, the last group's multiplier: r^(8-c) in lane 2c, r^(4-c) in 2c+1
	polyOneRowEnd2 = 13 // per lane, the multiplier of the group before: r^(16-c), r^(12-c)
	polyOneRowR    = 18 // r in every lane, for a block on its own
)

// poly1305One returns the RFC 8439 section 2.8 tag of ad and ct under key with poly1305IFMAOne: one
// message, the lanes sharing its blocks, their state in st (wiped on return). The AD's and the
// ciphertext's whole groups of 8 blocks run in the lanes; the rest of the AD (padded) goes in as
// the head of the ciphertext's first call, the rest of the ciphertext (padded) and the lengths
// block, of adLen and ctLen bytes, as the tail of its last, each in one multiplication where it has
// three blocks or more: one at a time, each block would cost a multiplication's whole chain of
// dependent steps (docs/experiments.md, 2026-12-03). st is all zero on entry, or holds in its
// accumulator (lane 0 of rows oneRowH to oneRowH+2) the MAC of the blocks before ad and ct, which
// then continues it (chainTag).
func poly1305One(ad, ct []byte, adLen, ctLen int, key *[32]byte, st *polyOne) (tag [TagSize]byte) {
	r := poly1305R44(key)
	poly1305IFMAPowers(st, &r)
	for whole := ad[:len(ad)&^127]; len(whole) > 0; {
		n := min(len(whole)/16, maxPolyBlocks)
		poly1305IFMAOne(st, nil, 0, &whole[0], n, nil, 0)
		whole = whole[16*n:]
	}
	var head [8 * 16]byte // the rest of the AD, padded
	rest := ad[len(ad)&^127:]
	copy(head[:], rest)
	headAt, headN := &head[0], (len(rest)+15)/16
	var last [9 * 16]byte // the rest of the ciphertext, padded, then the lengths block
	tailN := (copy(last[:], ct[len(ct)&^127:]) + 15) / 16
	binary.LittleEndian.PutUint64(last[16*tailN:], uint64(adLen))
	binary.LittleEndian.PutUint64(last[16*tailN+8:], uint64(ctLen))
	tailN++
	whole := ct[:len(ct)&^127]
	for {
		n := min(len(whole)/16, maxPolyBlocks)
		var msg *byte
		if n > 0 {
			msg = &whole[0]
		}
		whole = whole[16*n:]
		if len(whole) > 0 { // more calls to come: the tail goes with the last
			poly1305IFMAOne(st, headAt, headN, msg, n, nil, 0)
			headN = 0
			continue
		}
		poly1305IFMAOne(st, headAt, headN, msg, n, &last[0], tailN)
		break
	}
	poly1305Finish44(&tag, st[oneRowH][0], st[oneRowH+1][0], st[oneRowH+2][0], binary.LittleEndian.Uint64(key[16:]),
		binary.LittleEndian.Uint64(key[24:]))
	clear(st[:])
	return tag
}

// polyOne26 is poly1305AVX2Eight's state; the generator (_asm/chacha) hard-codes its layout.
type polyOne26 struct {
	h  [5][8]uint64 // out: the lanes' accumulators in radix 2^26, limb i of lane l in h[i][l]
	h0 [5]uint64    // in: lane 0's starting accumulator
	r8 [9]uint64    // in: the multiplier r^8, its 5 limbs, then 5 times limbs 1-4
}

// poly1305OneAVX2 returns the RFC 8439 section 2.8 tag of ad and ct under key on the AVX2 tier. The
// AD and the ciphertext's last blocks run in the portable Poly1305; up to 64 KiB at a time, the
// ciphertext's groups of 8 blocks before the last whole group run in poly1305AVX2Eight's 8 lanes,
// lane 0 starting from the portable accumulator. Lane j then holds the Horner evaluation in r^8 of
// blocks j, 8+j, ... except the last group's, so that adding lane j to the accumulator before the
// last group's block j, one block at a time with multiplier r, makes the sum come out as the Horner
// evaluation in r of all the blocks (section 2.5): the lanes need no power of r but r^8.
func poly1305OneAVX2(ad, ct []byte, key *[32]byte) (tag [TagSize]byte) {
	var mac poly1305
	mac.init(key[:])
	mac.writePadded(ad)
	ctLen := len(ct)
	if len(ct) >= 2*128 {
		var st polyOne26
		r := poly1305R44(key)
		r2 := poly1305Mul44(r, r)
		r4 := poly1305Mul44(r2, r2)
		r8 := to26(poly1305Mul44(r4, r4))
		copy(st.r8[:5], r8[:])
		for i := 1; i < 5; i++ {
			st.r8[4+i] = 5 * r8[i]
		}
		for len(ct) >= 2*128 {
			groups := min(len(ct)/128-1, maxPolyBlocks/8)
			// Lane 0 starts from the accumulator: h < 6*2^128, so limb 4 stays below 2^27.
			h := mac.h
			st.h0 = [5]uint64{h[0] & limb26, h[0] >> 26 & limb26, (h[0]>>52 | h[1]<<12) & limb26,
				h[1] >> 14 & limb26, h[1]>>40 | h[2]<<24}
			mac.h = [3]uint64{}
			poly1305AVX2Eight(&st, &ct[0], groups)
			last := ct[128*groups:]
			for j := range 8 {
				l := 4*(j/4) + [4]int{0, 2, 1, 3}[j%4] // the lane of block j
				v := from26([5]uint64{st.h[0][l], st.h[1][l], st.h[2][l], st.h[3][l], st.h[4][l]})
				mac.add130(v[0]|v[1]<<44, v[1]>>20|v[2]<<24, v[2]>>40)
				mac.blocks(last[16*j : 16*j+16])
			}
			ct = last[128:]
		}
		st = polyOne26{}
	}
	mac.writePadded(ct)
	return mac.aeadTag(len(ad), ctLen)
}

// add130 adds v = v0 + v1*2^64 + v2*2^128 (below 2^131) to the accumulator. Between blocks h2 <= 5,
// so h2 stays below 16 and the next block's h2*r1 and h2*r0 (r0, r1 < 2^60) below 2^64. Constant
// time.
func (p *poly1305) add130(v0, v1, v2 uint64) {
	var c uint64
	p.h[0], c = bits.Add64(p.h[0], v0, 0)
	p.h[1], c = bits.Add64(p.h[1], v1, c)
	p.h[2] += v2 + c
}

// from26 converts an accumulator in radix 2^26 with limbs below 2^26 except limb 1 (< 2^26 + 2^11),
// as the radix-2^26 kernels leave it, to what poly1305Finish44 takes: carry the limbs, then regroup
// the bits.
func from26(w [5]uint64) [3]uint64 {
	w0, w1, w2, w3, w4 := carry26(w[0], w[1], w[2], w[3], w[4])
	return [3]uint64{(w0 | w1<<26) & mask44, (w1>>18 | w2<<8 | w3<<34) & mask44, w3>>10 | w4<<16}
}

// to26 converts x (radix 2^44, limbs below 2^45) to radix 2^26 with limbs below 2^26, except limb 0
// (< 2^26 + 2^18), after folding the bits above 2^130 back (times 5).
func to26(x [3]uint64) [5]uint64 {
	x1 := x[1] + x[0]>>44
	x0 := x[0] & mask44
	x2 := x[2] + x1>>44
	x1 &= mask44
	x0 += x2 >> 42 * 5
	x2 &= 1<<42 - 1
	x1 += x0 >> 44
	x0 &= mask44
	x2 += x1 >> 44
	x1 &= mask44
	return [5]uint64{x0 & limb26, (x0>>26 | x1<<18) & limb26, x1 >> 8 & limb26, (x1>>34 | x2<<10) & limb26, x2 >> 16}
}

// poly1305Mul44 returns a*b mod 2^130-5 in radix 2^44, not fully reduced: for limbs below 2^45 it
// returns limbs below 2^44, 2^44 + 1 and 2^42 + 1. As in the kernels, products of weight 2^132 fold
// back times 20 (2^132 = 4*5 mod 2^130-5). Constant time.
func poly1305Mul44(a, b [3]uint64) [3]uint64 {
	s1, s2 := 20*b[1], 20*b[2]
	// Each sum of three products of a limb below 2^45 and one below 2^50 is below 2^97.
	d0h, d0l := mulSum3(a[0], b[0], a[1], s2, a[2], s1)
	d1h, d1l := mulSum3(a[0], b[1], a[1], b[0], a[2], s2)
	d2h, d2l := mulSum3(a[0], b[2], a[1], b[1], a[2], b[0])

	var cy uint64
	c := d0l>>44 | d0h<<20 // < 2^53
	d1l, cy = bits.Add64(d1l, c, 0)
	d1h += cy
	c = d1l>>44 | d1h<<20
	d2l, cy = bits.Add64(d2l, c, 0)
	d2h += cy
	c = d2l>>42 | d2h<<22 // < 2^56: the part of weight 2^130 and above
	h0 := d0l&mask44 + c*5
	h1 := d1l&mask44 + h0>>44
	h2 := d2l&(1<<42-1) + h1>>44
	return [3]uint64{h0 & mask44, h1 & mask44, h2}
}

// mulSum3 returns x0*y0 + x1*y1 + x2*y2 as a 128-bit value (hi, lo); the sum must fit.
func mulSum3(x0, y0, x1, y1, x2, y2 uint64) (hi, lo uint64) {
	hi, lo = bits.Mul64(x0, y0)
	h, l := bits.Mul64(x1, y1)
	var c uint64
	lo, c = bits.Add64(lo, l, 0)
	hi += h + c
	h, l = bits.Mul64(x2, y2)
	lo, c = bits.Add64(lo, l, 0)
	hi += h + c
	return hi, lo
}
