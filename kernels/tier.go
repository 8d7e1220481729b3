package kernels

import "strconv"

// Tier is one implementation level. Tiers lists those this CPU and build run, fastest first.
//
// A tier whose extra features for one suite are missing runs that suite on the next lower tier that
// has them, so Tier.Seal and Tier.Open work for every suite on every listed tier.
type Tier uint8

const (
	Generic Tier = iota // portable Go
	AVX2                // amd64: AVX2 + BMI2 (GCM also needs AES-NI + PCLMULQDQ)
	AVX512              // amd64: AVX-512F/VL/BW (GCM also needs VAES + VPCLMULQDQ; Poly1305 uses IFMA where present)
	NEON                // arm64: ASIMD (GCM also needs AES + PMULL)

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
	case NEON:
		return "NEON"
	}
	return "Tier(" + strconv.Itoa(int(t)) + ")"
}

// tierAvailable is the implementation registry: tierAvailable[t] reports whether this build has code of
// tier t for at least one suite family and this CPU runs it. Families without code for an available
// tier run on the tier's fallback chain (see runsOn).
var tierAvailable = func() (a [numTiers]bool) {
	for t := range numTiers {
		a[t] = t == Generic || chachaHas(t) || gcmHas(t)
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

// fastestFirst orders the tiers by speed, the order Tiers reports.
var fastestFirst = [...]Tier{AVX512, AVX2, NEON, Generic}

// bestTier is the tier Seal, Open and NewAEAD use.
var bestTier = Tiers()[0]

// Tiers lists the tiers this CPU and build run, fastest first. Generic is always last.
func Tiers() []Tier {
	var ts []Tier
	for _, t := range fastestFirst {
		if tierAvailable[t] {
			ts = append(ts, t)
		}
	}
	return ts
}

func (t Tier) mustBeAvailable() {
	if t >= numTiers || !tierAvailable[t] {
		panic("kernels: tier " + t.String() + " is not available on this CPU or build")
	}
}

// Seal runs every op of ops on tier t (see the package-level Seal). It panics if t is not available.
func (t Tier) Seal(ops []Op) {
	t.mustBeAvailable()
	checkOps(ops, false)
	run(t, ops, false)
}

// Open runs every op of ops on tier t (see the package-level Open). It panics if t is not available.
func (t Tier) Open(ops []Op) (failed int) {
	t.mustBeAvailable()
	checkOps(ops, true)
	return run(t, ops, true)
}

// Seal encrypts and authenticates every op on the fastest tier. Misuse (nil or destroyed key, wrong
// nonce size, wrong Dst length, inexact overlap of Dst and Src, AD overlapping Dst) panics before any
// op is processed, like cipher.AEAD.
func Seal(ops []Op) { bestTier.Seal(ops) }

// Open authenticates and decrypts every op on the fastest tier and returns how many failed. A failed op
// has Err set to ErrAuth and its Dst zeroed; a successful one has Err set to nil. Misuse panics as in
// Seal; ciphertext shorter than the tag is a failed Open, not misuse.
func Open(ops []Op) (failed int) { return bestTier.Open(ops) }

// run hands the batch to each suite family. Each family walks the batch and takes only its own ops, so
// a mixed batch is grouped without allocating and every op is processed exactly once.
func run(t Tier, ops []Op, open bool) (failed int) {
	failed = chachaRun(t, ops, open)
	failed += gcmRun(t, ops, open)
	return failed
}
