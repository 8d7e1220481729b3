// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import "strconv"

// Tier is one implementation level. Tiers lists those this CPU and build run.
//
// A tier whose extra features for one suite are missing runs that suite on the next lower tier that
// has them, so Tier.Seal and Tier.Open work for every suite on every listed tier.
type Tier uint8

const (
	Generic Tier = iota // portable Go
	AVX2                // amd64: AVX2 + BMI2 (GCM also needs AES-NI + PCLMULQDQ; VAES + VPCLMULQDQ run it on ymm)
	AVX512              // amd64: AVX-512F/VL/BW (GCM also needs VAES + VPCLMULQDQ; Poly1305 uses IFMA where present)
	Stdlib              // the standard library's AEADs one op at a time: crypto/cipher GCM, x/crypto chacha20poly1305

	numTiers
)

// String returns the tier's name as used in benchmark and test names.
func (t Tier) String() string {
	switch t {
	case Generic:
		return "Generic"
	case AVX2:
		return "AVX2"
	case AVX512:
		return "AVX512"
	case Stdlib:
		return "Stdlib"
	}
	return "Tier(" + strconv.Itoa(int(t)) + ")"
}

// The tier registry. Each suite family reports the tiers it has code for on this CPU and build
// (chachaHas, gcmHas: the features each kernel needs, read once from golang.org/x/sys/cpu and
// CPUID); tierAvailable[t] holds where some family has code of tier t, and a family without code
// for an available tier runs on that tier's fallback chain (runsOn). Which tier the default path
// takes for a batch is the dispatch table's choice (dispatch.go); which kernel variant a tier runs
// where it has several is the variant registry's (impl, cpu_amd64.go). Tests force each tier
// through Tier.Seal and Tier.Open, and each variant through impl's fields. Adding a tier: see the
// package documentation (doc.go).
var tierAvailable = func() (a [numTiers]bool) {
	for t := range numTiers {
		a[t] = t == Generic || t == Stdlib || chachaHas(t) || gcmHas(t)
	}
	return a
}()

// fallback is the next lower tier: the one that runs a family when t has no code for it.
func (t Tier) fallback() Tier {
	if t == AVX512 {
		return AVX2
	}
	return Generic
}

// runsOn returns the first tier on t's fallback chain for which has reports code.
func (t Tier) runsOn(has func(Tier) bool) Tier {
	for t != Generic && !has(t) {
		t = t.fallback()
	}
	return t
}

// kernelTiers orders the SIMD kernel tiers, widest first.
var kernelTiers = [...]Tier{AVX512, AVX2}

// Tiers lists the tiers this CPU and build run: the SIMD kernel tiers widest first, then Stdlib, then
// Generic. Which is fastest depends on the CPU and the batch: the default path (Seal, Open, NewAEAD)
// chooses per batch (dispatch.go).
func Tiers() []Tier {
	var ts []Tier
	for _, t := range kernelTiers {
		if tierAvailable[t] {
			ts = append(ts, t)
		}
	}
	return append(ts, Stdlib, Generic)
}

func (t Tier) mustBeAvailable() {
	if t >= numTiers || !tierAvailable[t] {
		panic("kernels: tier " + t.String() + " is not available on this CPU or build")
	}
}

// Seal runs every op of ops on tier t (see the package-level Seal). It panics if t is not available.
func (t Tier) Seal(ops []Op) {
	t.mustBeAvailable()
	nc, ng := checkOps(ops, false)
	run(t, t, &tierRoute, nc, ng, ops, false)
}

// Open runs every op of ops on tier t (see the package-level Open). It panics if t is not available.
func (t Tier) Open(ops []Op) (failed int) {
	t.mustBeAvailable()
	nc, ng := checkOps(ops, true)
	return run(t, t, &tierRoute, nc, ng, ops, true)
}

// Seal encrypts and authenticates every op on the path this CPU runs fastest for the batch's shape
// (dispatch.go): never slower than the standard library. Misuse (nil or destroyed key, wrong nonce
// size, wrong Dst length, inexact overlap of Dst and Src, AD overlapping Dst) panics before any op is
// processed, like cipher.AEAD.
func Seal(ops []Op) {
	if len(ops) == 1 {
		runAlone(ops, false)
		return
	}
	nc, ng := checkOps(ops, false)
	run(chachaRoute.chachaTier(ops, nc, false), gcmRoute.tierFor(ng), &chachaRoute, nc, ng, ops, false)
}

// Open authenticates and decrypts every op on the path this CPU runs fastest for the batch's shape
// and returns how many failed. A failed op has Err set to ErrAuth and its Dst zeroed; a successful
// one has Err set to nil. Misuse panics as in Seal; ciphertext shorter than the tag is a failed Open,
// not misuse.
func Open(ops []Op) (failed int) {
	if len(ops) == 1 {
		return runAlone(ops, true)
	}
	nc, ng := checkOps(ops, true)
	return run(chachaRoute.chachaTier(ops, nc, true), gcmRoute.tierFor(ng), &chachaRoute, nc, ng, ops, true)
}

// runAlone checks and runs ops, a batch of one op (every NewAEAD call, and a caller that goes packet
// by packet), on its family's route for one op: as a small batch's op on Stdlib (runSmall), or a
// ChaCha-family op on a SIMD tier's one-op path (chachaRunOne); an AES-GCM op on a SIMD tier runs
// as run runs a batch. It returns 1 if the op failed. Going past run's walk over the batch saves
// 2-3% of a 1420-byte op on x/crypto (docs/experiments.md, 2026-12-02 third session), past
// checkOps's loop 1-4 ns of a lone op (2026-12-07 third session).
func runAlone(ops []Op, open bool) (failed int) {
	if n, _ := validPrefix(ops, open); n == 0 {
		checkOp(&ops[0], open)
	}
	op := &ops[0]
	gcm := op.Key.suite.isGCM()
	r := &chachaRoute
	if gcm {
		r = &gcmRoute
	}
	t := r.tierFor(1)
	switch {
	case t == Stdlib:
		return runSmall(r, op, open)
	case gcm:
		return run(Stdlib, t, &chachaRoute, 0, 1, ops, open)
	}
	if one := t.runsOn(chachaHas); one != Generic {
		return chachaRunOne(one, op, open)
	}
	return run(t, Stdlib, &chachaRoute, 1, 0, ops, open)
}

// runSmall runs op as route r runs the ops of a batch on Stdlib: on r.tiny's one-op fused kernel if
// it fits one, on r.one's one-op path if that takes it, else through the standard library. It
// returns 1 if op failed.
func runSmall(r *route, op *Op, open bool) (failed int) {
	if r.offStd() {
		if taken, failed := r.runFusedAlone(op, open); taken {
			return failed
		}
		if r.one.takes(op, open, false) {
			return chachaRunOne(r.one.tier, op, open)
		}
	}
	if stdOp(op, open) {
		return 0
	}
	return 1
}

// run hands the batch to each suite family that has ops in it (nc ChaCha-family ops, ng AES-GCM
// ops), the ChaCha family's on tier chacha and the AES-GCM family's on tier gcm; on Stdlib, the
// ChaCha family's tiny ops on the fused kernels of std.tiny (Stdlib: none) and those std.one takes
// on its tier's one-op path. Each family walks the batch and takes only its own ops, so a mixed
// batch is grouped without allocating and every op is processed exactly once.
func run(chacha, gcm Tier, std *route, nc, ng int, ops []Op, open bool) (failed int) {
	switch {
	case nc == 0:
	case chacha == Stdlib:
		failed = stdRun(ops, open, false, std)
	default:
		failed = chachaRunRoute(chacha, std, nc, ops, open)
	}
	switch {
	case ng == 0:
	case gcm == Stdlib:
		failed += stdRun(ops, open, true, &tierRoute)
	default:
		failed += gcmRun(gcm, ops, open)
	}
	return failed
}

// chachaRunRoute runs the nc ChaCha-family ops of ops on tier t, except where route r sets beside
// and nc is below it: then the ops that r.tiny's fused kernels take beside the lanes run there
// (tinyOps.chooseBeside: those within block 1 of the key stream three to a call, and where fewer
// than 16 others fit, those one to a call) and the lanes take the rest, or, where fewer than
// r.minOps would be left to them, the batch takes the small batches' route (stdRun with r.tiny and
// r.one). The lanes take whole groups of 16 and a remainder of r.minOps ops or more, unless r.alone
// sets that the remainder's ops run faster on their own (route.aloneFaster) or r.longRest takes its
// long messages (longRemainder); a smaller remainder (the last ops of the batch) runs op by op as
// in a small batch (runSmall, and r.pipe's Seal pipeline): the lanes cost as much for a few ops as
// for 16; with r.shapes, not where the lanes' ops have several shapes, which the lanes then cut by
// shape themselves. Of a remainder that runs op by op, the lanes still take 8 where r.uniform takes
// 8 ops of the batch's one shape on tier t: in Opens, and in Seals without a whole group before
// them (whose last group of 8 would carry that group's MAC chain and so run half idle:
// runLongGroupsStitched) that r.pipe does not run. A batch of fewer than r.minOps ops comes here
// only where r.uniform took it (route.chachaTier): the lanes take all of it. A batch of many short
// lengths (route.mixed) takes the small batches' route whole, and so do the ops the lanes would
// take where their shapes would leave the lanes' calls short (mixedLanes.scattered).
func chachaRunRoute(t Tier, r *route, nc int, ops []Op, open bool) (failed int) {
	if nc < r.minOps {
		return chachaRun(t, ops, open, nil)
	}
	oneShape := false // the ChaCha-family ops have one message length and one AD length
	if r.mixed.shortMax > 0 {
		var short bool
		if short, oneShape = mixedShort(ops, open, r.mixed.shortMax); short && !(r.shapes && mostGrouped(ops, open, nc)) {
			return stdRun(ops, open, false, r)
		}
	}
	var beside *tinyOps // the ops on the fused kernels beside the lanes, or nil
	if nc < r.beside {
		q := newTinyOps(r.tiny, open)
		if tiny := q.chooseBeside(ops); tiny > 0 {
			if nc-tiny < r.minOps {
				return stdRun(ops, open, false, r)
			}
			for i := range ops {
				if op := &ops[i]; op.Key.suite.isChaCha() && q.took(op) {
					failed += q.run(ops, i, msgLen(op, open))
				}
			}
			failed += q.flush(ops)
			beside, nc = &q, nc-tiny
		}
	}
	cut, rest := len(ops), nc%16
	if rest > 0 && (rest < r.minOps && nc > rest || r.aloneFaster(ops, beside, nc-rest, rest, open) ||
		r.longRest.takes(ops, beside, nc-rest, rest, open)) &&
		!(r.shapes && !oneShape && severalShapes(ops, beside, open)) {
		k := nc - rest
		if rest >= 8 && (open || k == 0 && !r.pipe.runs(ops)) && beside == nil && r.uniform.tier == t && r.uniform.takesEight(ops, open) {
			k += 8 // a group of 8 of one shape runs in the lanes as fast as 16 (uniformLanes)
		}
		cut = laneCut(ops, beside, k)
	}
	if !oneShape && cut > 0 && r.mixed.scattered(ops[:cut], beside, open) {
		if beside == nil {
			return stdRun(ops, open, false, r) // none has run yet
		}
		cut = 0
	}
	if cut > 0 {
		failed += chachaRun(t, ops[:cut], open, beside)
	}
	// The ops past the cut run as a small batch's do (runSmall), those that fit the fused kernels
	// two or three to a call where they can (tinyOps), and Seals that r.pipe takes in its pipeline
	// where there are enough of them (no op beside the lanes is one of its lengths).
	piped := !open && r.pipe.runs(ops[cut:])
	if piped {
		chachaSealPipeline(ops[cut:], &r.pipe)
	}
	tail := newTinyOps(r.tiny, open)
	for i := cut; i < len(ops); i++ {
		op := &ops[i]
		if !op.Key.suite.isChaCha() || beside.took(op) || piped && r.pipe.takes(op) {
			continue
		}
		if n, ok := tail.fits(op); ok {
			failed += tail.run(ops, i, n)
		} else {
			failed += runSmall(r, op, open)
		}
	}
	return failed + tail.flush(ops)
}

// laneCut returns the index in ops just past the k-th ChaCha-family op that beside did not take.
func laneCut(ops []Op, beside *tinyOps, k int) int {
	if k == 0 {
		return 0
	}
	for i := range ops {
		if op := &ops[i]; op.Key.suite.isChaCha() && !beside.took(op) {
			if k--; k == 0 {
				return i + 1
			}
		}
	}
	return len(ops)
}
