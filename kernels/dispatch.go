// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"math"
	"slices"
)

// The default path (Seal, Open, NewAEAD) chooses, per suite family and batch, which tier runs the
// batch: the SIMD kernels win by different margins on different microarchitectures and batch
// shapes, and on some they lose to the standard library. So the choice is a small table keyed by
// what the CPU is (cpuClass, from its features, vendor and family), one route per suite family; a
// CPU the table does not know takes the safe choice, the Stdlib tier, wherever the kernels' lead was
// not measured on its class. The measurements behind each entry are in docs/benchmarks.md, with the
// command that reproduces them.

// cpuClass is what the dispatch table knows of a CPU beyond its instruction set.
type cpuClass uint8

const (
	// cpuUnmeasured: no kernel tier of ours was measured against the standard library here (arm64,
	// amd64 without AVX2, other vendors): the Stdlib tier throughout.
	cpuUnmeasured cpuClass = iota
	// cpuAVX512: AMD or Intel with the AVX-512 features of the AVX512 tiers, and no other class of
	// them (AMD Zen 5, whose vector integer instructions have a 2-cycle latency).
	cpuAVX512
	// cpuAVX2Lat1: AVX2 without AVX-512 on a core whose vector integer instructions have a 1-cycle
	// latency (AMD Zen 2 and 3, Intel cores since Haswell).
	cpuAVX2Lat1
	// cpuAVX512Halves: cpuAVX512 on a core that runs each zmm instruction as two ymm halves (AMD Zen
	// 4; zmmHalves).
	cpuAVX512Halves
	// cpuAVX512Lat1: cpuAVX512 on a core whose zmm instructions run at full width and whose vector
	// integer instructions have a 1-cycle latency: Intel (measured on Sapphire Rapids; Ice Lake
	// server, which has the features too, unmeasured).
	cpuAVX512Lat1
	// cpuPortable: a purego build, on any CPU: the standard library's AEADs are portable Go there,
	// as the Generic tier is.
	cpuPortable
)

// route is a family's entry in the dispatch table: batches with at least minOps of the family's ops
// run on tier, smaller ones (and every batch when tier is Stdlib) on Stdlib; of a ChaCha-family
// batch on tier, the lanes take whole groups of 16 and a remainder of at least minOps (unless alone
// sends it op by op), and a smaller remainder runs as the ops of a small batch do (chachaRunRoute).
// In a batch that runs on Stdlib, the ops small enough for tiny's fused one-call kernels (tinyOps:
// the ChaCha family's messages of up to three blocks) run there instead, where tiny is not Stdlib,
// and the ChaCha family's ops that one takes on its tier's one-op path. In a batch of fewer than
// beside of the family's ops that runs on tier, the ChaCha family's ops within block 1 of the key
// stream run on tiny's three-op kernel beside the lanes, and the others tiny's kernels fit there
// too where fewer than 16 of them are in the batch (tinyOps.chooseBeside). Routes travel by
// pointer: copies of them, moved in overlapping 16-byte pieces that each wait for the stores they
// partly overlap to retire, cost a batch of one 1-3% of a 1420-byte op on the standard library
// (docs/experiments.md, 2026-12-03 seventh session).
type route struct {
	tier   Tier
	minOps int
	tiny   Tier
	one    oneOps
	beside int
	// alone, where set, sends the minOps to 15 ChaCha-family ops beyond the lanes' whole groups (a
	// batch's last, or all of a batch of fewer than 16) op by op (runSmall) when each op has a
	// kernel of its own there (tiny's fused kernels fit it, or one takes it and the remainder is at
	// most 14: aloneFaster) or is a ChaCha20 op of fewer than alone bytes (aloneAtMin in a remainder
	// of just minOps ops, the emptiest pass): a partly filled lane pass costs those more than their
	// own kernels or the standard library do. XChaCha20's lanes derive the subkeys faster than
	// x/crypto does op by op, so its ops without a kernel of their own stay in the lanes.
	alone, aloneAtMin int
	// longRest sends such a remainder of long messages op by op (longRemainder).
	longRest longRemainder
	// uniform sends a ChaCha-family batch that would run on Stdlib to the lanes of a SIMD tier
	// where its shape is the lanes' long groups (uniformLanes).
	uniform uniformLanes
	// pipe sends the Seals of a batch that runs on Stdlib, or of a remainder that runs op by op,
	// through a single-message pipeline where there are enough of them (pipeSeals).
	pipe pipeSeals
	// mixed sends op by op the ChaCha-family batches of many shapes that the lanes would run in
	// their segments, whose calls the varied lengths keep short (mixedLanes).
	mixed mixedLanes
	// shapes sends the lanes all the ops they would take of a batch with a remainder past their
	// whole groups, where those ops have more than one shape (message length and AD length,
	// severalShapes): tier's lanes cut them by shape themselves (laneKernels.shapeGroups), where
	// whole groups cut in the batch's order mix the shapes and leave most ops to the remainder. It
	// also keeps for the lanes a batch that mixed.shortMax would run op by op where most of its ops
	// fill groups of their shape (mostGrouped).
	shapes bool
}

// mostGrouped reports whether the nc ChaCha-family ops of ops are all ChaCha20's, of at most
// manyShapes shapes, and seven eighths or more of them would run in long groups of their shape
// (shapeTally.grouped): where a route has shapes, such a batch goes to the lanes though
// mixed.shortMax would run it op by op. It stops at the first shape past manyShapes, so that a
// batch of many lengths, which runs op by op, pays for a short scan only.
func mostGrouped(ops []Op, open bool, nc int) bool {
	var t shapeTally
	for i := range ops {
		op := &ops[i]
		if !op.Key.suite.isChaCha() {
			continue
		}
		if op.Key.suite != ChaCha20Poly1305 {
			return false
		}
		if t.add(shapeOf(op, open)); t.tracked > manyShapes {
			return false
		}
	}
	grouped := 0
	for s := range t.tracked {
		grouped += t.grouped(s)
	}
	return 8*grouped >= 7*nc
}

// severalShapes reports whether the ChaCha-family ops of ops that beside (if not nil) does not
// take have more than one shape.
func severalShapes(ops []Op, beside *tinyOps, open bool) bool {
	first := opShape{n: -1}
	for i := range ops {
		op := &ops[i]
		if !op.Key.suite.isChaCha() || beside.took(op) {
			continue
		}
		switch sh := shapeOf(op, open); {
		case first.n < 0:
			first = sh
		case sh != first:
			return true
		}
	}
	return false
}

// mixedLanes is which ChaCha-family ops that would run in the lanes' segments a route runs op by
// op instead, where the varied lengths would keep the segments' calls short or leave lanes idle: a
// batch whose ChaCha-family ops have two message lengths or more of 65 to shortMax bytes
// (mixedShort) runs as a small batch does (stdRun), and so do the ops the lanes would take where
// they have two shapes (message length and AD length) or more, number fewer than fewOps and would
// fill less than 7/8 of the lanes' blocks (laneFill), or have more than manyShapes shapes and number
// fewer than manyOps or hold a message of at most shortMax bytes or more than longAD bytes of AD
// (scattered). Its zero value takes none.
type mixedLanes struct {
	shortMax, fewOps, manyOps, longAD int
}

// mixedShort reports whether the ChaCha-family ops of ops have two message lengths or more of 65
// to max bytes (mixedLanes.shortMax), and if not, whether they have one message length and one AD
// length.
func mixedShort(ops []Op, open bool, max int) (short, oneShape bool) {
	first, n0, ad0, diff := 0, -1, 0, 0
	for i := range ops {
		op := &ops[i]
		if !op.Key.suite.isChaCha() {
			continue
		}
		n := msgLen(op, open)
		if n0 < 0 {
			n0, ad0 = n, len(op.AD)
		}
		diff |= (n ^ n0) | (len(op.AD) ^ ad0) // | and ^ bind alike in Go
		// One unsigned comparison for 65 <= n <= max: the loop runs over every op of the batch.
		if uint(n-65) > uint(max-65) || n == first {
			continue
		}
		if first != 0 {
			return true, false
		}
		first = n
	}
	return false, diff == 0
}

// opShape is an op's shape as mixedLanes, the lanes' shape groups (shapeTally) and route.shapes
// see it: its message length and its AD length.
type opShape struct{ n, ad int }

// shapeOf returns op's shape; open says whether Src holds the tag.
func shapeOf(op *Op, open bool) opShape { return opShape{msgLen(op, open), len(op.AD)} }

// manyShapes is the count of shapes of the lanes' ops past which mixedLanes.scattered looks at
// their count and lengths.
const manyShapes = 4

// scattered reports whether m runs op by op the ChaCha-family ops of ops that beside (if not nil)
// does not take, the ops the lanes would take.
func (m *mixedLanes) scattered(ops []Op, beside *tinyOps, open bool) bool {
	if m.fewOps == 0 {
		return false
	}
	var shapes [manyShapes + 1]opShape
	var blocks [2 * 16]int // the ops' 64-byte blocks, while they fit: two lane groups
	// The ops, their shapes (at most manyShapes+1), and whether one is short or has long AD.
	lanes, k, odd := 0, 0, false
	for i := range ops {
		op := &ops[i]
		if !op.Key.suite.isChaCha() || beside.took(op) {
			continue
		}
		n, ad := msgLen(op, open), len(op.AD)
		if lanes < len(blocks) {
			blocks[lanes] = max(1, (n+63)/64)
		}
		lanes++
		odd = odd || n <= m.shortMax || ad > m.longAD
		if k <= manyShapes && !slices.Contains(shapes[:k], opShape{n, ad}) {
			shapes[k] = opShape{n, ad}
			k++
		}
	}
	if k > manyShapes && (lanes < m.manyOps || odd) {
		return true
	}
	if k < 2 || lanes >= m.fewOps || lanes > len(blocks) {
		return false
	}
	used, span := laneFill(blocks[:lanes])
	return 8*used < 7*span
}

// laneFill returns how many of the lanes' blocks ops of blocks 64-byte blocks would fill, used, of
// span: the lanes take the longest first, and each group of 16 lasts as long as its longest op.
// It sorts blocks of more than one group.
func laneFill(blocks []int) (used, span int) {
	if len(blocks) <= 16 {
		longest := 0
		for _, b := range blocks {
			used, longest = used+b, max(longest, b)
		}
		return used, 16 * longest
	}
	slices.Sort(blocks)
	slices.Reverse(blocks)
	for i, b := range blocks {
		used += b
		if i%16 == 0 {
			span += 16 * b
		}
	}
	return used, span
}

// pipeSeals is which ChaCha-family Seals of a batch that runs on Stdlib (or of a remainder beside
// the lanes that runs op by op) tier's single-message path runs instead, one after the other as a
// pipeline (chachaSealPipeline), each op's MAC blocks absorbed on the scalar pipes beside the
// rounds of the ops after it: messages of lengths' bytes with at most maxAD bytes of AD, where the
// batch has minOps of them or more. On AVX2 (1-cycle cores) a Seal alone costs its path a pass's
// worth more than in a pipeline; on AVX512 (chachaSealChain24) the chain spares the IFMA lanes
// most of the MACs of all but the last ops. Its zero value takes none.
type pipeSeals struct {
	tier    Tier
	minOps  int
	lengths lengths
	maxAD   int
}

// takes reports whether p takes op, a Seal.
func (p *pipeSeals) takes(op *Op) bool {
	return op.Key.suite.isChaCha() && p.lengths.holds(len(op.Src)) && len(op.AD) <= p.maxAD
}

// runs reports whether the batch ops, Seals, has at least minOps ops that p takes, and so whether
// p runs them.
func (p *pipeSeals) runs(ops []Op) bool {
	if p.minOps == 0 {
		return false
	}
	k := 0
	for i := range ops {
		if p.takes(&ops[i]) {
			if k++; k == p.minOps {
				return true
			}
		}
	}
	return false
}

// uniformLanes is which ChaCha-family batches that a route runs on Stdlib (its tier is Stdlib, or
// the batch has fewer than its minOps ops) run on tier's lanes instead: batches whose ChaCha-family
// ops all have one AD length and one message length, where one of the bounds of the direction (seal
// or open) takes them: at least minOps ops (in lane groups of 8 or 16: a multiple of 8, with at
// least minOps in a last chunk that is not whole) of minLen to maxLen bytes. Each chunk of them
// then runs as the lanes' long groups (runLongGroups): every lane busy, no per-lane bookkeeping
// (a group of 8 on a masked kernel set shares each op out to two lanes: streamGroupSplit). Its zero
// value, tier Generic, takes none.
type uniformLanes struct {
	tier       Tier
	seal, open [2]uniformBound
	// xseal and xopen, where set, are the bounds instead of seal and open for a batch whose
	// ChaCha-family ops are all XChaCha20-Poly1305: x/crypto derives each op's subkey with a
	// portable HChaCha20, the lanes a group's subkeys in one pass, so the lanes lead on more shapes.
	xseal, xopen [2]uniformBound
}

// uniformBound is one bound of uniformLanes; its zero value takes none.
type uniformBound struct{ minOps, minLen, maxLen int }

// takes reports whether u takes the batch ops, of nc ChaCha-family ops.
func (u *uniformLanes) takes(ops []Op, nc int, open bool) bool {
	return u.fits(ops, open, func(b *uniformBound) bool { // the batch fills lane groups as b needs
		return b.minOps > 0 && nc >= b.minOps && nc%8 == 0 && (nc%chachaChunk == 0 || nc%chachaChunk >= b.minOps)
	})
}

// takesEight reports whether u would take 8 ops of the batch ops, whose ChaCha-family ops must all
// have one message length and one AD length: a group of 8 from a remainder that would otherwise run
// op by op (chachaRunRoute).
func (u *uniformLanes) takesEight(ops []Op, open bool) bool {
	return u.fits(ops, open, func(b *uniformBound) bool { return b.minOps > 0 && b.minOps <= 8 })
}

// fits reports whether the ChaCha-family ops of ops all have one message length and one AD length,
// and whether a bound of u for which counts holds takes that length.
func (u *uniformLanes) fits(ops []Op, open bool, counts func(b *uniformBound) bool) bool {
	bounds, xbounds := &u.seal, &u.xseal
	if open {
		bounds, xbounds = &u.open, &u.xopen
	}
	if u.tier == Generic || !counts(&bounds[0]) && !counts(&bounds[1]) && !counts(&xbounds[0]) && !counts(&xbounds[1]) {
		return false
	}
	n, ad, x := -1, 0, true
	for i := range ops {
		op := &ops[i]
		if !op.Key.suite.isChaCha() {
			continue
		}
		x = x && op.Key.suite == XChaCha20Poly1305
		if n < 0 {
			n, ad = msgLen(op, open), len(op.AD)
			// A length that no bound takes ends the scan of the others, which cost a batch of 64 x
			// 64 B on the fused tiny kernels some 1.5% (Intel Xeon family 6 model 167, AVX-512
			// hidden: 1.87x / 1.88x -> 1.90x / 1.91x x/crypto).
			if !boundsTake(bounds, n, counts) && !boundsTake(xbounds, n, counts) {
				return false
			}
		} else if msgLen(op, open) != n || len(op.AD) != ad {
			return false
		}
	}
	if x && *xbounds != ([2]uniformBound{}) {
		bounds = xbounds
	}
	return boundsTake(bounds, n, counts)
}

// boundsTake reports whether a bound of bs for which counts holds takes messages of n bytes.
func boundsTake(bs *[2]uniformBound, n int, counts func(b *uniformBound) bool) bool {
	for i := range bs {
		if b := &bs[i]; counts(b) && n >= b.minLen && n <= b.maxLen {
			return true
		}
	}
	return false
}

// oneOps is which ChaCha-family ops of a batch that runs on Stdlib a SIMD tier's one-op path
// (chachaRunOne) takes instead: messages of sealMin (Seal) or openMin (Open) bytes up to max, but
// for Open none of openGap[0] to openGap[1] bytes, and in a remainder beside the lanes' groups
// (aloneFaster) none below remainderMin; Seals outside remainders and Opens of smallMin to
// smallMax[0] (Seal) or smallMax[1] (Open) bytes, at most smallFusedMax, with at most chachaFusedAD
// bytes of AD (the fused kernel's, where impl.chachaSmallFused); messages of longFused's lengths,
// Seals outside remainders, with at most chachaFusedAD bytes of AD (the fused long kernel's);
// messages of long bytes or more, and any op with adMin bytes of AD or more. Its zero value, tier
// Generic, takes none.
type oneOps struct {
	tier                        Tier
	sealMin, openMin, max, long int
	openGap                     [2]int
	remainderMin                int
	smallMin                    int
	smallMax                    [2]int
	longFused                   lengths
	adMin                       int
}

// lengths is a range of message lengths, min to max bytes; its zero value holds none.
type lengths struct{ min, max int }

// holds reports whether n is in r.
func (r lengths) holds(n int) bool { return r.max > 0 && n >= r.min && n <= r.max }

// takes reports whether o takes op; remainder says op is in a remainder beside the lanes' groups.
func (o *oneOps) takes(op *Op, open, remainder bool) bool {
	if o.tier == Generic {
		return false
	}
	n, low := msgLen(op, open), o.sealMin
	if open {
		low = o.openMin
	}
	if remainder {
		low = max(low, o.remainderMin)
	}
	inGap := open && n >= o.openGap[0] && n <= o.openGap[1]
	return n >= low && n <= o.max && !inGap || o.takesSmall(op, n, open, remainder) ||
		o.takesLong(op, n, open, remainder) || o.long > 0 && n >= o.long || o.adMin > 0 && len(op.AD) >= o.adMin
}

// takesLong reports whether o takes op, of an n-byte message, for the fused long kernel (within
// chachaLongMin to chachaLongMax bytes).
func (o *oneOps) takesLong(op *Op, n int, open, remainder bool) bool {
	r := o.longFused
	return r.min > 0 && (open || !remainder) && n >= max(r.min, chachaLongMin) && n <= min(r.max, chachaLongMax) &&
		len(op.AD) <= chachaFusedAD
}

// takesSmall reports whether o takes op, of an n-byte message, for the fused kernel of blocks 4-13
// (Open: 4-17).
func (o *oneOps) takesSmall(op *Op, n int, open, remainder bool) bool {
	high := o.smallMax[0]
	if open {
		high = o.smallMax[1]
	}
	return o.smallMin > 0 && (open || !remainder) && n >= o.smallMin && n <= min(high, smallFusedMax(open)) &&
		len(op.AD) <= chachaFusedAD
}

// routes is the dispatch table: per CPU class, the ChaCha family's and the AES-GCM family's route,
// each entry beside the measurement that justifies it (the chosen tier's speed against the
// standard library's; the runs are in docs/benchmarks.md).
var routes = [...]struct{ chacha, gcm route }{
	// Nothing measured: the standard library.
	cpuUnmeasured: {route{tier: Stdlib, tiny: Stdlib}, route{tier: Stdlib, tiny: Stdlib}},
	// AMD Zen 5: 64 x 1420 B 2.6-3.0x, 1 op 1.02x or more, both families. docs/benchmarks.md
	cpuAVX512: {route{tier: AVX512, minOps: 1, tiny: Stdlib}, route{tier: AVX512, minOps: 1, tiny: Stdlib}},
	// AMD Zen 3: GCM 1.47-3.36x on every shape, 1 op too. ChaCha: the fused tiny kernels on ops of up
	// to 192 B, 1.45-1.75x on 64 x 64 B (three ops a call), 1.10x on 1 x 64 B; the AVX2 lanes
	// 1.05-1.18x on 64 x 1420 B of one length but below x/crypto on mixed lengths and in the tunnel's
	// batches (TCP CPU per Gbit 1.05-1.10x); the one-message passes 0.7-0.9x. AMD Zen 4 with AVX-512
	// hidden (GODEBUG=cpu.avx512f=off), a core of this class's latency, measures the same shape.
	// CPUs of this class without VAES (AMD Zen 2, Intel before Ice Lake) run GCM on the AES-NI xmm
	// kernels: on Zen 4 with AVX-512 hidden, against crypto/cipher's AES-NI code, 1.6-2.4x at 64 B,
	// 1.10-1.17x at 1420 B and 1.01-1.10x at 16 KiB, every key size (BenchmarkGCMAVX2Variants).
	// Batches of one shape on the AVX2 lanes with the stitched MAC (uniform; Zen 4 with AVX-512
	// hidden, against x/crypto, x/crypto's own through the batch API 0.97-0.99x there): Seals of
	// 32-64 ops of 65-1024 B 1.03-1.30x, of 48-64 ops up to 1420 B 1.02-1.06x (XChaCha20 1.11x;
	// 32 x 1152-1280 B 0.98-1.03x, 32 x 1420 B 0.99x, 32 x 2048 B 0.88-0.93x: not those);
	// Opens of 48-64 ops of 128-768 B 1.05-1.20x (32 x 512 B 0.98x, 48 x 100 B 0.96x, 64 x 896 B
	// 0.94x, 64 x 1420 B 0.93x: not those), and since an Open's block 1 runs in place after its tag
	// here too (lateBlock1), of 32 ops or more of 193-768 B (32 x 512 B 0.97x on x/crypto -> 1.05x,
	// 40 x 512 B 0.97x -> 1.08x; 32 x 160 B 0.97x and 24 x 512 B 1.03x at the minimum: not those).
	// Tunnel batches (at most 30 packets) never qualify.
	// Batches of XChaCha20 alone, where x/crypto derives each subkey in portable Go, on wider bounds
	// (xseal, xopen; Zen 4 with AVX-512 hidden, against x/crypto, 8 bytes of AD, the route before ->
	// the lanes, medians of 3): Seals of 32 ops of 1088-1420 B 0.99x -> 1.06-1.12x; Opens of 32 ops
	// of 100-192 B and 48-64 of 100 B 1.00-1.01x -> 1.11-1.19x, of 48-64 ops of 1088-1344 B 0.99x
	// -> 1.02-1.16x, 64 x 1420 B 0.99x -> 1.01-1.02x (48 x 1420 B level, 0.99x either way); not
	// Opens of 32 ops past 1024 B (32 x 1088 B 0.97x, 32 x 1420 B 0.95x on the lanes).
	// Seals of 1408-1472 B (22-23 blocks) with up to 64 B of AD, four or more in a batch that
	// runs on Stdlib, in the AVX2 single-message pipeline (pipe; Zen 4 with AVX-512 hidden, against
	// x/crypto, no AD and 16 B of it, medians of 3, BenchmarkChaChaRegsPipeline): 4-7 ops 0.98x ->
	// 1.01-1.10x, 8-30 ops 0.98-0.99x -> 1.09-1.13x; with 32-64 B of AD 8 x 1408-1420 B 0.97-0.99x
	// -> 1.07-1.09x; and such batches of one shape that are not XChaCha20's alone there rather than
	// on the lanes (pipeBeforeLanes). Outside that window, forced: 1344-1376 B
	// 0.86-1.09x by count, 1152-1280 B 0.88-1.01x, 1600-2048 B 0.88-0.92x, 2 ops 0.86-0.96x; Opens
	// 0.89-0.96x at 1420 B, their key stream waiting in a buffer for the tag. The pipeline's leads
	// are a quiet host's: while the shared host was busy, its 64 x and 4 x 1420 B Seals read
	// 0.90-0.94x against x/crypto, which behind the batch API reads 0.98-0.99x; kept, as it leads in
	// quiet hours and neither holds 1.00x in busy ones (docs/experiments.md, 2026-12-06 fifteenth
	// session).
	// docs/benchmarks.md
	cpuAVX2Lat1: {
		route{tier: Stdlib, tiny: AVX2, uniform: uniformLanes{tier: AVX2,
			seal:  [2]uniformBound{{minOps: 32, minLen: 65, maxLen: 1024}, {minOps: 48, minLen: 65, maxLen: 1420}},
			open:  [2]uniformBound{{minOps: 48, minLen: 128, maxLen: 768}, {minOps: 32, minLen: 193, maxLen: 768}},
			xseal: [2]uniformBound{{minOps: 32, minLen: 65, maxLen: 1420}},
			xopen: [2]uniformBound{{minOps: 32, minLen: 65, maxLen: 1024}, {minOps: 48, minLen: 65, maxLen: 1420}}},
			pipe: pipeSeals{tier: AVX2, minOps: 4, lengths: lengths{22 * 64, 23 * 64}, maxAD: 64}},
		route{tier: AVX2, minOps: 1, tiny: Stdlib},
	},
	// AMD Zen 4: GCM 1.62-3.86x on every shape. ChaCha: the zmm lanes from 12 ops (at 12 x 1420 B
	// level with one op at a time, at 12 x 576 B 1.3x ahead), 1.18-2.29x on batches of 64. Ops on
	// their own (batches below 12): up to 192 B the fused AVX2 kernels, 1.13-1.18x on 1 x 64 B. The
	// AVX512 one-op path where it beat x/crypto: Seal 1.08-1.16x at 1152-1280 B, 1.2x at 1408 B; Open
	// 1.06-1.15x at 1184-1280 B, 1.14x at 1408 B; 1.0-1.2x from 3 KiB. Below 1152 B, against x/crypto
	// called directly (1 op): Seal 0.95x at 704 B, 1.02-1.04x at 768-800 B, 1.05-1.17x at 832-1120 B;
	// Open 1.00x at 704 B, 1.05-1.10x at 736-960 B, 0.92-0.95x at 976-1088 B (so those stay there),
	// 1.10-1.12x at 1104-1136 B. Through the batch API, 1 / 4 / 11 ops, seal / open: 960 B 0.99x /
	// 0.97x -> 1.12-1.13x / 1.03-1.06x, 1104 B 0.98x / 0.98-0.99x -> 1.05x / 1.06-1.13x. In a
	// remainder of 12-14 ops beside the lanes only from 1153 B (remainderMin): below, 13-14 x 800-1104
	// B ran 0.86-0.98x of the lanes op by op. Elsewhere it lost to the standard library's 0.98x (2500
	// B: 0.91-0.96x / 0.85-0.90x). Messages of 193-704 B with short AD on the fused kernel of blocks
	// 4-11 (impl.chachaSmallFused), 1 and 4 ops, seal / open: 200 B 0.96x / 0.95x -> 1.07-1.10x /
	// 1.03-1.05x, 256-320 B 0.95-0.98x / 0.94-0.96x -> 1.02-1.04x / 1.00-1.02x, 384-448 B (Seal there
	// since 632ad0f) 1.04-1.06x / 0.96-0.97x -> 1.05-1.07x / 0.97-1.00x; 13 x 200-320 B (op by op:
	// alone) 0.92-0.93x -> 0.97-1.04x; 1 and 4 ops, Seals of 449-576 B 0.96-0.98x -> 1.01-1.03x,
	// Opens of 449-704 B 0.96-0.99x -> 0.98-1.11x (smallMax), and since the kernel's Open runs its
	// MAC beside the rounds of blocks 2 on (more than five blocks), 1 and 4 ops, Opens of 321-575
	// B 1.13-1.19x, 576 B 1.04-1.07x (x/crypto has a path of its own there), 577-704 B 1.18-1.29x,
	// and up to 1088 B (chachaSmallOpenMax) 705-832 B 1.18-1.21x (1.02-1.08x on the one-op path),
	// 896-960 B 1.11-1.12x (1.00-1.04x), 961-1024 B 1.12-1.15x (0.96-0.98x on x/crypto), 1088 B
	// 1.04-1.05x (0.97-0.98x); and since its Seal of more than seven blocks runs the MAC of blocks
	// 1-7 beside the rounds of blocks 8 on, Seals up to 832 B (chachaSmallMax), 1 and 4 ops, 577-768
	// B 0.97-0.98x (x/crypto) -> 1.06-1.12x, 769-832 B 1.00-1.04x (the one-op path) -> 1.07-1.09x
	// (896-960 B on the kernel 1.10-1.11x against 1.12-1.16x there: not those). Such Opens in a
	// remainder of 12-14 ops op by op too (Seals not: 14 x 384-512 B 1.11-1.12x in the lanes,
	// 1.02-1.06x op by op): 12-13 x 384-512 B 0.88-0.95x -> 1.11-1.18x,
	// 12 x 900-1088 B 0.86-0.89x -> 1.03-1.11x, 14 x 900-1088 B 0.97-1.01x -> 1.03-1.11x, 30 x 900 B
	// 1.08-1.10x -> 1.16-1.18x. Messages of 1473-3071 B, between the one-op path's ranges, on the
	// fused long kernel (longFused: sets of eight blocks, the MAC beside their rounds), 1 and 4 ops,
	// 1500-3000 B Seal 0.98-0.99x (x/crypto) -> 1.07-1.09x, Open 0.98-0.99x -> 1.09-1.14x; Opens in
	// remainders too, 12-14 x 1500-2048 B 0.91-1.08x -> 1.10-1.12x, 28 x 1500-2048 B 1.06-1.10x ->
	// 1.18-1.23x, and Seals in a remainder of just 12, 12 x 1500-3000 B 0.96-1.00x -> 1.06-1.09x, 28 x
	// 1500-3000 B 1.16-1.20x -> 1.19-1.24x (13 x 1.02-1.10x in the lanes); not Opens of 1089-1472 B,
	// 1.02-1.09x there against 1.05-1.11x on the one-op path. In batches below 48 ops, those within
	// block 1 on the fused three-op kernel beside the lanes: the lanes fill whole groups of 16 such
	// ops only, and leave the rest to their segments. Seal, ns an op: 12 x 64 B 202 -> 103 (the lanes
	// were below x/crypto's 176 there), 20 x 64 B 179 -> 98, 40 x 64 B 122 -> 93, 20 ACKs and 10 x
	// 1420 B 345 -> 271; 48 and 64 x 64 B level or better on the lanes. Messages of 65-192 B beside
	// them too where fewer than 16 are in the batch (more fill lane groups of their own, 16-47 x 192
	// B 1.13-1.39x on the lanes against 0.98-1.05x beside), seal / open: 8 x 150 B and 8 x 1420 B 0.81x
	// / 0.73x -> 1.22x / 1.08x, 10 x 150 B and 20 x 1420 B 0.96x / 0.87x -> 1.32x / 1.19x. A remainder
	// of 12-15 ops (or a batch of 12-15) runs op by op where each op has a kernel of its own (the
	// one-op path: up to 14) or is a ChaCha20 op below 384 B (alone): 12 x 100 B 0.71x / 0.62x -> 1.10x
	// / 1.03x, 28 x 192 B 1.03x / 0.85x -> 1.07x / 1.01x, 12 x 256 B 0.92x / 0.80x -> 0.94x / 0.93x, 12
	// x 1420 B 1.04x / 0.93x -> 1.23x / 1.10x; at 512-1024 B the lanes and x/crypto are level there;
	// XChaCha20 at 256-320 B 0.99-1.28x in the lanes against 0.95x on x/crypto. In a remainder of just
	// 12, ChaCha20 ops below 449 B op by op (aloneAtMin; measured when the fused kernel took 193-448
	// B): 12 x 384-448 B 0.99-1.00x / 0.86-0.88x -> 1.02-1.03x / 0.94-0.97x, 44 x 384-448 B 1.29x /
	// 1.14-1.15x -> 1.34-1.36x / 1.24-1.28x; with 13 or 14 the lanes keep them (op by op 13 x 384-448 B
	// Seal 0.95-0.96x, 14 x 0.89-0.91x of the lanes). Since the fused kernel seals to 576 B, below 577
	// B (Seals; Opens take remainders on their own): 12 x 460 B 0.93-0.96x -> 1.05x, 12 x 512 B
	// 0.97-0.99x -> 1.01-1.02x, 12 x 576 B 0.98-0.99x -> 1.00-1.01x, 44 x 460-576 B 1.23-1.27x ->
	// 1.30-1.32x; since it seals to 832 B, below 833 B: 12 x 600-832 B 0.96-0.99x -> 1.04-1.08x, 28 and
	// 44 x 600-832 B 1.16-1.25x -> 1.19-1.33x (13 and 14 x 600-832 B level either way).
	// Messages of 16 KiB or more run op by op in any batch (impl.chachaLongAloneAVX512). Ops with 768
	// B of AD or more take the one-op path whatever their length, its IFMA MAC ahead of x/crypto's on
	// long AD (x/crypto 0.96-0.99x there through the batch API), seal / open: 64 B + 768 B of AD 1.13x
	// / 1.11x, 700 B + 1 KiB 1.39x / 1.38x, 2 KiB + 2 KiB 1.48x / 1.41x; 64 B + 512 B level, 64 B +
	// 256 B 0.79x. Batches of 8 ops of one shape in the lanes (uniform), each op's key stream in two
	// lanes (streamGroupSplit), where the ops ran one by one: Seals of 641-3071 B and Opens of 577-832
	// B and 1089 B to 16 KiB, 8 B of AD, seal / open, 8 x 1600 B 1.02x / 1.05x -> 1.23x / 1.17x, 8 x
	// 2048 B 1.03x / 1.07x -> 1.24x / 1.25x, 8 x 3000 B 1.06x / 1.01x -> 1.41x / 1.39x, Opens 8 x 4096
	// B 1.18x -> 1.29x, 8 x 8 KiB 1.40x -> 1.45x (Seals of 4 KiB level, of 8 KiB 1.29-1.33x against
	// 1.40-1.70x one by one); since the group's blocks 0 and 1 share a pass (keyBlocksSplit), below
	// 1473 B too: 8 x 641-1300 B 1.05-1.17x / 1.06-1.17x -> 1.16-1.25x / 1.20-1.24x, 8 x 1420 B 1.24x
	// / 1.12x -> 1.30x / 1.18x (not Seals of up to 640 B: 8 x 513-600 B 1.08-1.09x -> 1.11-1.13x, but
	// 12 x 513-600 B 1.05-1.06x -> 1.02-1.03x with 8 of them in the lanes; nor Opens of 513-576 B,
	// 0.90-0.98x of op by op in the lanes, nor of 833-1088 B, level with the fused kernel there). So
	// too 8 ops of a remainder of 8-15 such ops that would run op by op (chachaRunRoute): 12 x 1600 B
	// Seal 0.97x -> 1.10x, 12 x 3000 B 1.01x / 1.03x -> 1.19x / 1.17x, 14 x 3000 B Open 1.03x ->
	// 1.18x, 12-13 x 704-1300 B 1.03-1.20x / 1.02-1.22x -> 1.07-1.21x / 1.09-1.25x, Opens of 24-27 x
	// 577-1300 B 1.21-1.37x -> 1.32-1.45x (12-13 x 577 B and 832 B 1.11-1.14x -> 1.09-1.12x); but not
	// Seals after whole groups, whose last group of 8 would run under the chain half idle: 24 x
	// 1500-3000 B 1.25-1.33x op by op, 1.18-1.23x in the lanes (docs/experiments.md, 2026-12-07 fifth
	// session). Seals of 961-1472 B with up to 64 B of AD, three or more where they would run op by
	// op (a batch below 12, or a remainder beside the lanes), in the AVX512 Seal pipeline (pipe:
	// chachaSealChain24, each op's MAC on the scalar pipes beside the later ops' passes), and so
	// batches of 8-11 of one shape rather than a lane group of 8 (pipeBeforeLanes) and Seals of
	// 12-14 without the group of 8; op by op -> pipelined, 8 B of AD, medians of 3: 3 x 1000-1472 B
	// 1.05-1.29x -> 1.04-1.30x, 4-5 x 1.05-1.26x -> 1.16-1.36x, 7 x 1.06-1.26x -> 1.23-1.38x,
	// 10-11 x 1.06-1.27x -> 1.25-1.41x; 8 x 1000-1472 B in the group of 8 1.23-1.30x -> 1.25-1.38x;
	// 12-14 x 1000-1420 B 1.09-1.25x -> 1.21-1.37x; remainders, 20-28 x 961-1420 B 1.18-1.39x ->
	// 1.29-1.42x, 44 x 1.29-1.41x -> 1.35-1.43x (not 2 ops: 2 x 1200-1472 B 1.08-1.25x -> 1.03-1.19x)
	// (docs/experiments.md, 2026-12-07 sixth session). Batches with ops of two lengths or more of
	// 65-512 B op by op (mixed.shortMax), 64 ops unless said, 8 B of AD, seal / open: lengths at random of 100-200
	// B 0.74x / 0.62x -> 1.14x / 1.04x, four of them 0.81x / 0.76x -> 1.15x / 1.04x, 32 ops of twelve
	// 0.86x / 0.69x -> 1.13x / 1.04x, of 65-300 B 0.79x / 0.75x -> 1.16x / 1.05x, of 65-1500 B 1.00x
	// / 0.94x -> 1.12x / 1.11x, 32 ops 0.74x / 0.74x -> 1.11x / 1.12x, sixteen of them 1.02x / 0.99x
	// -> 1.16x / 1.12x; not IMIX (one length of 65-512 B: 576 B is past it), 1.16x / 1.17x, level
	// with op by op, nor 64 B or 150 B with 1420 B (ChaChaMixed), 1.15-1.44x in the lanes against
	// 1.12-1.37x op by op (docs/experiments.md, 2026-12-06, twenty-second session). Nor did that rule
	// take other batches that the segments ran below x/crypto; op by op, the lanes' ops of more than
	// four shapes in batches below 48 ops, or with a message of up to 512 B or more than 64 B of AD
	// (mixed.manyOps, longAD), 8 B of AD unless said, seal / open: 16 x 513-1400 B at random 0.72x /
	// 0.69x -> 1.09x / 1.10x, 24 x 0.82x / 0.79x -> 1.12x / 1.11x, 32 x 0.96x / 0.94x -> 1.12x /
	// 1.10x; 64 x 1-64 B 1.05x / 1.18x -> 2.00x / 1.96x (XChaCha20 1.52x / 1.48x -> 2.08x / 2.07x);
	// AD at random, 64 x 100 B with 0-64 B 0.90x / 0.77x -> 1.10x / 1.06x, 64 x 1420 B with 0-1024 B
	// 0.99x / 0.91x -> 1.33x / 1.27x, 16 x 300 B 0.76x / 0.70x -> 1.10x / 1.07x; not 64 x 1420 B with
	// 0-64 B, 1.13-1.25x either way, nor 64 ops of 513-1400 B at random (1.11-1.23x either way) or of
	// four to eight lengths (1.30-1.38x in the lanes, 1.11-1.31x op by op). And the lanes' ops of two
	// to four shapes in batches below 32 ops that would fill less than 7/8 of the lanes' blocks
	// (mixed.fewOps, laneFill): 13 x 600-1400 B of four lengths 0.79x / 1.07x -> 1.08x / 1.07x, 16 x
	// 600 B and 1400 B 1.06x / 1.01x -> 1.14x / 1.10x, 12 x 1420 B and one of 1000 B 1.03x / 1.08x ->
	// 1.22x / 1.11x; not a batch of one length and one op of another that fills them (15 x 1420 B and
	// one of 800 B, 30 x 1200 B and one of 700 B: 5-14% faster in the lanes, 1.12-1.27x). The look at
	// the batch's shapes costs uniform batches at most 2% (64 x 64 B Seal 80.9 -> 82.4 ns an op at the
	// minimum; 16 x 100 B and 64 x 1420 B level) (docs/experiments.md, 2026-12-07). Batches of
	// several shapes with a remainder past the lanes' whole groups go to the lanes whole, which cut
	// them by shape (shapes, laneKernels.shapeGroups), where the whole groups in the batch's order
	// held ops of every shape and the remainder ran op by op; seal / open, 8 B of AD, medians of 3
	// (BenchmarkChaChaShapes): 32 x 1200 B + 8 x 300 B 1.21x / 1.14x -> 1.42x / 1.34x, 36 x 1420 B +
	// 4 x 300 B 1.33x / 1.16x -> 1.42x / 1.26x, 30 x 1420 B + 30 x 100 B 1.30x / 1.19x -> 1.38x /
	// 1.29x; not where the ops beside the lanes leave them one shape (24 x 1420 B + 12 x 64 B 1.41x
	// / 1.25x either way) (docs/experiments.md, 2026-12-07 seventh session). So do batches of short
	// messages of a few lengths that mixed.shortMax ran op by op, where seven eighths of them fill
	// groups of their shape (mostGrouped): 32 x 512 B + 32 x 200 B 1.09x / 1.13x -> 1.53x / 1.51x,
	// 16 x 300 B + 16 x 100 B 1.26x / 1.22x -> 1.39x / 1.30x; batches of many lengths stay op by op
	// (64 x 100-200 B and 65-300 B at random level).
	// docs/benchmarks.md
	cpuAVX512Halves: {
		route{tier: AVX512, minOps: 12, tiny: AVX2, one: oneOps{tier: AVX512, sealMin: 12*64 + 1,
			openMin: 11*64 + 1, max: 23 * 64, openGap: [2]int{15*64 + 1, 17 * 64},
			remainderMin: 18*64 + 1, smallMin: 3*64 + 1, smallMax: [2]int{chachaSmallMax, chachaSmallOpenMax},
			longFused: lengths{23*64 + 1, 3<<10 - 1}, long: 3 << 10, adMin: 768}, beside: 48,
			alone: 384, aloneAtMin: 13*64 + 1,
			uniform: uniformLanes{tier: AVX512,
				seal: [2]uniformBound{{minOps: 8, minLen: 10*64 + 1, maxLen: 3<<10 - 1}},
				open: [2]uniformBound{{minOps: 8, minLen: 9*64 + 1, maxLen: 13 * 64}, {minOps: 8, minLen: 17*64 + 1, maxLen: 16<<10 - 1}}},
			mixed:  mixedLanes{shortMax: 512, fewOps: 32, manyOps: 48, longAD: 64},
			pipe:   pipeSeals{tier: AVX512, minOps: 3, lengths: seal24Lengths, maxAD: sealChainMaxAD},
			shapes: true},
		route{tier: AVX512, minOps: 1, tiny: Stdlib},
	},
	// Intel Sapphire Rapids: GCM 2.07-5.26x on make bench's main shapes, as the AVX512 class runs it.
	// ChaCha: what Zen 5's route left below x/crypto were the ops and batches that Zen 4's route
	// takes apart (Intel Xeon family 6 model 167, against x/crypto, 8 B of AD, the AVX512 class's
	// route -> this one, seal / open, medians of 2, BenchmarkChaChaFewOps, ...RandomLengths,
	// ...Mixed, ...Shapes, ...BatchSizes): the zmm lanes from 8 ops, as their fewOps sent smaller
	// batches to the AVX512 one-op path, which now takes every op of such a batch (one) that the
	// fused kernels do not: up to 192 B those two or three to a call (4 x 128 B 1.14x / 1.09x ->
	// 1.31x / 1.29x), 193-544 B (Open: 576 B) the fused AVX-512 kernel (impl.chachaSmallFused: 4 x
	// 256 B 0.84x / 0.84x -> 1.08x / 1.06x). A remainder of fewer than 8 ops past the lanes' whole
	// groups runs op by op too: 20 x 1420 B 1.30x / 1.22x -> 1.73x / 1.56x, 33 x 1420 B 1.38x / 1.29x
	// -> 1.82x / 1.70x, 20 x 448 B 1.32x / 1.21x -> 1.51x / 1.44x, 33 x 100 B 1.38x / 1.37x -> 1.61x
	// / 1.55x; Seals of full-sized packets there in the AVX512 Seal pipeline (7 x 1000 B 1.16x ->
	// 1.27x). So does a remainder (or a batch) of 9-11 messages of 1153 B or more (longRest), which
	// would leave 5-7 of the 16 zmm lanes idle: 9 x 1420 B 1.10x / 1.04x -> 1.46x / 1.28x, 10 x 1420
	// B 1.21x / 1.13x -> 1.47x / 1.29x, 9 x 3000 B 1.04x / 1.00x -> 1.61x / 1.52x, 27 x 3000 B 1.55x
	// / 1.49x -> 1.72x / 1.64x; not 12 (12 x 1200 B Open 1.37x -> 1.20x, 28 x 1420 B 1.68x / 1.60x ->
	// 1.62x / 1.51x), nor shorter ones, whose Opens the lanes run faster. In batches below 48 ops,
	// short ops beside the lanes (beside, as on Zen 4): 8 x 150 B and 8 x 1420 B 1.11x / 0.99x ->
	// 1.52x / 1.41x, 20 x 150 B and 20 x 1420 B 1.30x / 1.17x -> 1.60x / 1.51x. Batches of many short
	// lengths op by op (mixed, as on Zen 4 but the lanes' ops of more than four shapes from 32 ops,
	// where the full-width lanes lead: 32 x 513-1400 B at random 1.24x either way in the lanes,
	// 1.11-1.14x op by op): 16 x 100-200 B at random 0.83x / 0.75x -> 1.36x / 1.29x, 64 x 1.05x /
	// 0.99x -> 1.40x / 1.31x, 16 x 513-1400 B 0.92x / 0.90x -> 1.20x / 1.23x, 64 x 100 B with 0-64 B
	// of AD 1.15x / 1.03x -> 1.41x / 1.34x, at the cost of batches of many lengths that also hold
	// long ones (64 x 65-1500 B Seal 1.30x -> 1.21x, 16 x 1420 B and 48 x 65-1500 B 1.37x / 1.33x ->
	// 1.24x / 1.23x). Batches of a few shapes cut by shape in the lanes (shapes,
	// impl.chachaShapeGroups): 20 x 1420 B and 44 x 64 B 1.38x / 1.24x -> 1.67x / 1.61x, 32 x 512 B
	// and 32 x 200 B 1.54x / 1.48x -> 1.71x / 1.75x, IMIX 1.35x -> 1.49x seal. The main rows (64 x
	// 1420 B, 64 x 64 B, 1, 4 and 8 ops) level (docs/experiments.md, 2026-12-07 eighth session). Zen
	// 4's other choices lose here: its lanes from 12 ops and its remainders of 8-15 op by op (12 x
	// 512 B 1.37x / 1.42x in the lanes, 1.00x / 1.16x op by op; 28 x 448 B 1.67x / 1.57x -> 1.23x /
	// 1.25x), its one-op path by length (1 x 800 B 1.29x / 1.36x on the AVX512 one-op path, 1.03x /
	// 1.18x on Zen 4's), its long messages op by op (64 x 16 KiB 1.68x / 1.71x -> 1.30x / 1.46x) and
	// its long groups' MAC chain beside the zmm stream (64 x 1420 B 1.96x / 1.83x -> 1.81x / 1.64x
	// with all of Zen 4's choices).
	// docs/benchmarks.md
	cpuAVX512Lat1: {
		route{tier: AVX512, minOps: 8, tiny: AVX2, one: oneOps{tier: AVX512, sealMin: 1, openMin: 1, max: math.MaxInt,
			smallMin: 3*64 + 1, smallMax: lat1SmallFused}, beside: 48,
			longRest: longRemainder{minOps: 9, maxOps: 11, minLen: 18*64 + 1},
			mixed:    mixedLanes{shortMax: 512, fewOps: 32, manyOps: 32, longAD: 64},
			pipe:     pipeSeals{tier: AVX512, minOps: 3, lengths: seal24Lengths, maxAD: sealChainMaxAD},
			shapes:   true},
		route{tier: AVX512, minOps: 1, tiny: Stdlib},
	},
	// A purego build: crypto/cipher's AES-GCM is Go's portable code (table-driven AES, GHASH by
	// 4-bit tables), the Generic tier the same crypto/aes block function with a constant-time GHASH
	// that reduces once every four blocks, and less fixed cost an op. AMD Zen 4, one op against
	// crypto/cipher called directly, 13 B of AD: 1.09-1.16x from 16 B to 8 KiB, AES-128 and AES-256,
	// seal and open. The ChaCha family: x/crypto's portable ChaCha20 with our Poly1305
	// (stdChaChaComposed), ahead of the Generic tier's lanes. docs/benchmarks.md
	cpuPortable: {route{tier: Stdlib, tiny: Stdlib}, route{tier: Generic, minOps: 1, tiny: Stdlib}},
}

// chachaRoute and gcmRoute are this CPU's routes; tests set them to run the dispatcher's choices.
var chachaRoute, gcmRoute = routes[thisCPU].chacha, routes[thisCPU].gcm

// longSealLanesAD is the shortest AD with which a Seal that the fused long kernel would take stays
// in the lanes in a remainder of just minOps (aloneFaster): the lanes' vector MAC absorbs the AD
// where the kernel's MAC is one chain. AMD Zen 4, 12 ops against x/crypto, op by op -> in the lanes,
// three rounds each: 1500 B with 320-384 B of AD 1.06x -> 1.08-1.10x, 448 B 1.06x -> 1.11x, 640-767 B
// 1.04-1.07x -> 1.16-1.20x; 2048 B with 320 B 1.05x -> 1.02x, 448 B 1.05x -> 1.07x, 640-767 B
// 1.04-1.05x -> 1.13-1.15x; 3000 B with 384 B 1.07x -> 1.03x, 448 B 1.07x -> 1.06x, 640-767 B 1.06x
// -> 1.09-1.11x (docs/experiments.md, 2026-12-05 fourth session).
const longSealLanesAD = 448

// tierRoute is a forced tier's (Tier.Seal, Tier.Open): on Stdlib no fused kernels and no one-op
// path, every op through the standard library.
var tierRoute = route{tier: Stdlib, tiny: Stdlib}

// aloneFaster reports whether r.alone sends the rest ChaCha-family ops of ops that beside did not
// take, past the first k of them (the lanes' whole groups), op by op. Ops that one takes go only in
// a remainder of up to 14: in a pass with 15 of its 16 lanes filled the lanes keep up with the
// one-op path or beat it (15 x 1200 B 1.24x / 1.25x against 1.10x / 1.06x; 14 x 1420 B 1.17x /
// 1.04x against 1.32x / 1.18x). In a remainder of just minOps, with one lane group in four idle,
// every op that one takes outside remainders goes (AMD Zen 4, 12 x 900-1152 B 0.99-1.02x in the
// lanes, 1.06-1.11x op by op; 44 x 1.25-1.28x -> 1.31-1.36x), but Seals for the fused long kernel
// with longSealLanesAD bytes of AD or more.
func (r *route) aloneFaster(ops []Op, beside *tinyOps, k, rest int, open bool) bool {
	if r.alone == 0 {
		return false
	}
	limit, atMin := r.alone, rest == r.minOps
	if atMin {
		limit = max(limit, r.aloneAtMin)
	}
	q := newTinyOps(r.tiny, open)
	for i := laneCut(ops, beside, k); i < len(ops); i++ {
		op := &ops[i]
		if !op.Key.suite.isChaCha() || beside.took(op) {
			continue
		}
		n := msgLen(op, open)
		longSealAD := atMin && !open && len(op.AD) >= longSealLanesAD && r.one.takesLong(op, n, open, false)
		if _, fits := q.fits(op); fits || rest < 15 && !longSealAD && r.one.takes(op, open, !atMin) {
			continue
		}
		if op.Key.suite != ChaCha20Poly1305 || n >= limit {
			return false
		}
	}
	return true
}

// lat1SmallFused is the longest Seal and Open that the AVX-512 cores of 1-cycle latency with
// full-width zmm (cpuAVX512Lat1) run alone on the fused small kernel (chachaPoly1305SmallAVX512),
// short of its own limits: past them their AVX512 one-op path is faster (the figures beside
// impl.chachaSmallFused).
var lat1SmallFused = [2]int{8*64 + 32, 9 * 64}

// longRemainder is which remainders past the lanes' whole groups (or batches of fewer than 16) a
// route runs op by op, where each op has a one-op path of its own (runSmall): minOps to maxOps
// ChaCha-family ops, every message of minLen bytes or more. A lane pass for fewer ops than its
// lanes costs as much as a full one, which the one-op path repays on long messages. Its zero value
// takes none.
type longRemainder struct{ minOps, maxOps, minLen int }

// takes reports whether l takes the rest ChaCha-family ops of ops that beside did not take, past
// the first k of them.
func (l *longRemainder) takes(ops []Op, beside *tinyOps, k, rest int, open bool) bool {
	if rest < l.minOps || rest > l.maxOps {
		return false
	}
	for i := laneCut(ops, beside, k); i < len(ops); i++ {
		op := &ops[i]
		if !op.Key.suite.isChaCha() || beside.took(op) {
			continue
		}
		if msgLen(op, open) < l.minLen {
			return false
		}
	}
	return true
}

// chachaTier returns the tier that runs the batch ops, of nc ChaCha-family ops: tierFor(nc), or the
// lanes' tier where that is Stdlib and r.uniform takes the batch.
func (r *route) chachaTier(ops []Op, nc int, open bool) Tier {
	if t := r.tierFor(nc); t != Stdlib || !r.uniform.takes(ops, nc, open) || r.pipeBeforeLanes(ops, open) {
		return t
	}
	return r.uniform.tier
}

// pipeBeforeLanes reports whether a batch that r.uniform takes runs on Stdlib instead, for r.pipe
// to seal: Seals that r.pipe runs (pipeSeals.runs), unless all are XChaCha20's, whose lanes derive
// the subkeys a group at a time. AMD Zen 4 with AVX-512 hidden, against x/crypto, the lanes ->
// the pipeline, medians of 3: 64 x 1420 B 1.047x -> 1.077x, with 64 keys 1.024x -> 1.095x, with 8 B
// of AD 48 x 1420 B 1.029x -> 1.090x and 64 x 1420 B 1.043x -> 1.083x, with 32-64 B of AD 64 x 1420
// B 1.046-1.051x -> 1.119-1.120x, 64 x 1408 B level (1.079-1.104x -> 1.098-1.107x); XChaCha20 64 x
// 1420 B 1.118-1.131x on the lanes against 1.100-1.104x (docs/benchmarks.md).
func (r *route) pipeBeforeLanes(ops []Op, open bool) bool {
	if open || !r.pipe.runs(ops) {
		return false
	}
	for i := range ops {
		if ops[i].Key.suite == ChaCha20Poly1305 {
			return true
		}
	}
	return false
}

// offStd reports whether r runs some of a Stdlib batch's ops elsewhere: on its fused tiny kernels,
// its one-op path or its pipeline of Seals. Where it does not, those batches skip the checks for
// them, which cost a 64-byte op several percent (docs/experiments.md, 2026-12-05 sixth session).
func (r *route) offStd() bool { return r.tiny != Stdlib || r.one.tier != Generic || r.pipe.minOps > 0 }

// tierFor returns the tier that runs n of the family's ops.
func (r *route) tierFor(n int) Tier {
	if n < r.minOps {
		return Stdlib
	}
	return r.tier
}
