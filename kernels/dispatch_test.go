// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/wirebatch/wirebatch/internal/benchshape"
	"golang.org/x/crypto/chacha20poly1305"
)

// TestDispatchTable: this CPU's routes name tiers that run here, and the table has a route for
// every class.
func TestDispatchTable(t *testing.T) {
	t.Logf("CPU class %d: ChaCha family %v from %d ops (tiny ops %v, one-op path %+v), AES-GCM %v from %d ops",
		thisCPU, chachaRoute.tier, chachaRoute.minOps, chachaRoute.tiny, chachaRoute.one, gcmRoute.tier, gcmRoute.minOps)
	for c, r := range routes {
		for family, fr := range []route{r.chacha, r.gcm} {
			// The Generic tier only for AES-GCM where the standard library is portable Go too.
			genericOutOfPlace := fr.tier == Generic && (family == 0 || cpuClass(c) != cpuPortable)
			if fr.tier >= numTiers || genericOutOfPlace || fr.tiny >= numTiers || fr.tiny == Generic {
				t.Errorf("class %d routes to %v (tiny %v): the default path takes a kernel tier or Stdlib", c, fr.tier, fr.tiny)
			}
			if o := fr.one.tier; o != Generic && o != AVX2 && o != AVX512 {
				t.Errorf("class %d: one-op path on %v, not a SIMD tier", c, o)
			}
			if u := fr.uniform.tier; u != Generic && (u != AVX2 && u != AVX512 || fr.tier != Stdlib && fr.tier != u) {
				t.Errorf("class %d: uniform batches on %v beside %v, not a SIMD tier beside Stdlib or itself", c, u, fr.tier)
			}
			avx2Pipe := fr.tier == Stdlib && cpuClass(c) == cpuAVX2Lat1
			avx512Pipe := fr.tier == AVX512 && (cpuClass(c) == cpuAVX512Halves || cpuClass(c) == cpuAVX512Lat1)
			if p := fr.pipe; p.minOps > 0 && !(p.tier == AVX2 && avx2Pipe || p.tier == AVX512 && avx512Pipe) {
				t.Errorf("class %d: the Seal pipeline of %v beside %v: the AVX2 one runs beside Stdlib on the AVX2 class, the AVX512 one on Zen 4's", c, p.tier, fr.tier)
			}
			if p := fr.pipe; p.tier == AVX512 && (p.lengths.min < seal24Lengths.min || p.lengths.max > seal24Lengths.max) {
				t.Errorf("class %d: the AVX512 Seal pipeline takes %+v, past its one pass's %+v", c, p.lengths, seal24Lengths)
			}
		}
		if r.gcm.tiny != Stdlib || r.gcm.one != (oneOps{}) || r.gcm.uniform != (uniformLanes{}) || r.gcm.pipe != (pipeSeals{}) {
			t.Errorf("class %d: the AES-GCM family has no tiny kernels, one-op paths, uniform lanes or pipelines", c)
		}
	}
	for _, r := range []route{chachaRoute, gcmRoute} {
		if !tierAvailable[r.tier] || !tierAvailable[r.tiny] || r.one.tier != Generic && !chachaHas(r.one.tier) ||
			r.uniform.tier != Generic && !chachaHas(r.uniform.tier) || r.pipe.minOps > 0 && !chachaHas(r.pipe.tier) {
			t.Errorf("this CPU's route takes %v (tiny %v, one-op path %v, uniform %v), which is not available",
				r.tier, r.tiny, r.one.tier, r.uniform.tier)
		}
	}
}

// TestNoAVX512: where WIREBATCH_NO_AVX512 is set (make amd64-cpus, which runs the tests on emulated
// CPUs without AVX-512), the CPU must be taken for one without it; else that run would check the
// AVX512 class's paths again and not the ones that CPUs without AVX-512 take.
func TestNoAVX512(t *testing.T) {
	if os.Getenv("WIREBATCH_NO_AVX512") == "" {
		t.Skip("WIREBATCH_NO_AVX512 not set")
	}
	if tierAvailable[AVX512] || thisCPU == cpuAVX512 || thisCPU == cpuAVX512Halves || thisCPU == cpuAVX512Lat1 {
		t.Fatalf("the CPU has the AVX512 tier (class %d): make amd64-cpus would not run without AVX-512", thisCPU)
	}
	t.Logf("CPU class %d, tiers %v", thisCPU, Tiers())
}

// TestDispatchPaths runs the default Seal and Open with each route this CPU can take, on mixed
// batches of every size around the routes' thresholds, against the Generic tier.
func TestDispatchPaths(t *testing.T) {
	defer func(c, g route) { chachaRoute, gcmRoute = c, g }(chachaRoute, gcmRoute)
	rng := mrand.New(mrand.NewPCG(5, 6))
	var keys []*Key
	for _, s := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305, AES128GCM, AES192GCM, AES256GCM} {
		raw := make([]byte, s.KeySize())
		rand.Read(raw)
		k, err := NewKey(s, raw)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	for _, tier := range Tiers() {
		for _, minOps := range []int{0, 1, 4, 8} {
			// Tiny ops on every SIMD tier's fused kernels where it has them (tinyOps); batches
			// wholly on Stdlib with each SIMD tier's, as routes{Stdlib, 0, tier} runs them.
			tinies := []Tier{Stdlib}
			switch tier {
			case Generic:
			case Stdlib:
				tinies = Tiers()
				tinies = tinies[:len(tinies)-1]
			default:
				tinies = []Tier{tier}
			}
			for _, tiny := range tinies {
				// With a SIMD tiny tier, also that tier's one-op path for the ChaCha family's
				// messages of 101 (Seal) or 201 (Open) to 1000 bytes but Opens of 400-600, and
				// from 1300 on, of 60 to 300 (Seal) or chachaSmallMax (Open) bytes and of 1001 to
				// 1299 bytes (the fused long kernel on AVX512) with short AD, and ops with 30 bytes
				// of AD or more, as a route's oneOps takes them.
				ones := []oneOps{{}}
				if tiny != Stdlib {
					ones = append(ones, oneOps{tier: tiny, sealMin: 101, openMin: 201, max: 1000,
						openGap: [2]int{400, 600}, smallMin: 60, smallMax: [2]int{300, chachaSmallMax},
						longFused: lengths{1001, 1299}, long: 1300, adMin: 30})
				}
				// On Stdlib with the AVX2 tier's kernels, also the AVX2 single-message pipeline for
				// Seals of 100 to 1600 bytes with up to 40 bytes of AD, from two of them in a batch;
				// on AVX512 with those kernels the AVX512 one (chachaSealChain24) for its lengths.
				pipes := []pipeSeals{{}}
				switch {
				case tier == Stdlib && tiny == AVX2:
					pipes = append(pipes, pipeSeals{tier: AVX2, minOps: 2, lengths: lengths{100, 1600}, maxAD: 40})
				case tier == AVX512 && tiny == AVX512:
					pipes = append(pipes, pipeSeals{tier: AVX512, minOps: 2, lengths: seal24Lengths, maxAD: 40})
				}
				for _, one := range ones {
					for _, pipe := range pipes {
						chachaRoute = route{tier: tier, minOps: minOps, tiny: tiny, one: one, pipe: pipe}
						gcmRoute = route{tier: tier, minOps: minOps, tiny: Stdlib}
						name := fmt.Sprintf("%v/from%d/tiny%v/one%v/pipe%d", tier, minOps, tiny, one.tier, pipe.minOps)
						t.Run(name, func(t *testing.T) {
							for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33} {
								checkDefaultAgainstGeneric(t, keys, n, rng)
							}
						})
					}
				}
			}
		}
	}
	// Ops within block 1 beside the lanes (route.beside) on each SIMD tier with the AVX2 tier's
	// fused kernels, batches below and at the bound, with a remainder above and below minOps.
	if !chachaHas(AVX2) {
		return
	}
	for _, tier := range Tiers() {
		if tier != AVX512 && tier != AVX2 {
			continue
		}
		// With alone 1000 (1500 in a remainder of just minOps), remainders of minOps or more op by
		// op where their ops allow it; the one-op path takes messages of 101-699 bytes in small
		// batches but not in remainders, and Opens of 1001-1299 bytes with short AD in both.
		// With mixed set, batches of many shapes op by op (mixedLanes): the batches below have 20
		// lengths past 1 KiB.
		// On AVX512, also the Seal pipeline for the remainders that go op by op.
		var pipe pipeSeals
		if tier == AVX512 {
			pipe = pipeSeals{tier: AVX512, minOps: 3, lengths: seal24Lengths, maxAD: 64}
		}
		for _, alone := range []int{0, 1000} {
			// Without alone, remainders of 9-11 long messages op by op instead (longRest).
			var longRest longRemainder
			if alone == 0 {
				longRest = longRemainder{minOps: 9, maxOps: 11, minLen: 1153}
			}
			for _, minOps := range []int{1, 12} {
				for _, mixed := range []mixedLanes{{}, {shortMax: 512, fewOps: 32, manyOps: 48, longAD: 64}} {
					chachaRoute = route{tier: tier, minOps: minOps, tiny: AVX2, beside: 40, alone: alone,
						aloneAtMin: alone * 3 / 2, longRest: longRest,
						one: oneOps{tier: tier, sealMin: 101, openMin: 201, max: 1000, remainderMin: 700,
							longFused: lengths{1001, 1299}, long: 1300}, mixed: mixed, pipe: pipe}
					gcmRoute = route{tier: tier, minOps: minOps, tiny: Stdlib}
					t.Run(fmt.Sprintf("%v/from%d/beside40/alone%d/longrest%d/mixed%d", tier, minOps, alone, longRest.maxOps, mixed.fewOps), func(t *testing.T) {
						for _, n := range []int{2, 12, 13, 15, 20, 28, 31, 33, 39, 40, 47} {
							checkDefaultAgainstGeneric(t, keys, n, rng)
						}
						// Batches and remainders of 9-11 messages past 1152 B (longRest).
						for _, n := range []int{9, 11, 27} {
							var lens []int
							for i := range n {
								lens = append(lens, 1153+37*i)
							}
							checkLensAgainstGeneric(t, keys[:2], lens, -1, rng)
						}
						// ChaCha-family ops of 65-192 B beside the lanes where fewer than 16 of
						// them are in the batch, in the lanes where more.
						for _, short := range []int{10, 15, 16, 19} {
							var lens []int
							for i := range 20 {
								lens = append(lens, 1420-i)
								if i < short {
									lens = append(lens, 65+i)
								}
							}
							checkLensAgainstGeneric(t, keys[:2], lens, -1, rng)
							// AD past chachaTinyAD: not beside the lanes, but on the fused
							// kernels where the batch runs on Stdlib.
							checkLensAgainstGeneric(t, keys[:2], lens, 300, rng)
						}
					})
				}
			}
		}
	}
}

// TestAloneFasterLongSealAD: in a remainder of just minOps, ops that the fused long kernel takes go
// op by op, but Seals with longSealLanesAD bytes of AD or more stay in the lanes (routing only; the
// outputs are TestDispatchPaths').
func TestAloneFasterLongSealAD(t *testing.T) {
	r := route{tier: AVX512, minOps: 12, tiny: AVX2, alone: 384, aloneAtMin: 13*64 + 1,
		one: oneOps{tier: AVX512, longFused: lengths{23*64 + 1, 3<<10 - 1}}}
	key, err := NewKey(ChaCha20Poly1305, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		open bool
		ad   int
		want bool
	}{
		{false, 8, true}, {false, longSealLanesAD - 1, true}, {false, longSealLanesAD, false},
		{false, chachaFusedAD, false}, {true, longSealLanesAD, true}, {true, chachaFusedAD, true},
	} {
		ops := make([]Op, r.minOps)
		for i := range ops {
			src := make([]byte, 1500)
			if c.open {
				src = make([]byte, 1500+TagSize)
			}
			ops[i] = Op{Key: key, Src: src, AD: make([]byte, c.ad)}
		}
		if got := r.aloneFaster(ops, nil, 0, len(ops), c.open); got != c.want {
			t.Errorf("12 x 1500 B, open %v, %d B of AD: op by op %v, want %v", c.open, c.ad, got, c.want)
		}
		// Past minOps such Seals are never the one-op path's, whatever their AD.
		if got := r.aloneFaster(append(ops, ops[0]), nil, 0, len(ops)+1, c.open); got != c.open {
			t.Errorf("13 x 1500 B, open %v, %d B of AD: op by op %v, want %v", c.open, c.ad, got, c.open)
		}
	}
}

// TestLongRemainder: a remainder runs op by op for longRemainder only where its count is within
// minOps to maxOps and every message of it (past the lanes' ops, beside the tiny ops) is of minLen
// bytes or more.
func TestLongRemainder(t *testing.T) {
	l := longRemainder{minOps: 9, maxOps: 11, minLen: 1153}
	key, err := NewKey(ChaCha20Poly1305, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n, k int // ops, of which the first k run in the lanes' whole groups
		lens []int
		open bool
		want bool
	}{
		{8, 0, []int{1420}, false, false}, {9, 0, []int{1420}, false, true}, {11, 0, []int{3000}, true, true},
		{12, 0, []int{1420}, false, false}, {9, 0, []int{1152}, false, false}, {9, 0, []int{1153}, false, true},
		{9, 0, []int{1152 + TagSize}, true, false}, {9, 0, []int{1153 + TagSize}, true, true},
		{10, 0, []int{1420, 1000}, false, false}, {27, 16, []int{1420}, false, true}, {28, 16, []int{1420}, false, false},
		{26, 16, append(slices.Repeat([]int{100}, 16), slices.Repeat([]int{1420}, 10)...), false, true},
		{26, 16, []int{1420, 100}, false, false},
	} {
		ops := make([]Op, c.n)
		for i := range ops {
			ops[i] = Op{Key: key, Src: make([]byte, c.lens[i%len(c.lens)])}
		}
		if got := l.takes(ops, nil, c.k, c.n-c.k, c.open); got != c.want {
			t.Errorf("%d ops of %v B past %d, open %v: op by op %v, want %v", c.n, c.lens, c.k, c.open, got, c.want)
		}
	}
}

// TestMixedLanes checks which batches mixedLanes sends op by op where the lanes would take them
// whole: two message lengths or more of 65 to shortMax bytes (Open's less the tag, mixedShort); two
// shapes or more below fewOps ops that fill less than 7/8 of the lanes' blocks; more than
// manyShapes below manyOps, or with a message of at most shortMax bytes or more than longAD bytes of
// AD (scattered).
func TestMixedLanes(t *testing.T) {
	key, err := NewKey(ChaCha20Poly1305, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := NewKey(AES128GCM, make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	m := mixedLanes{shortMax: 512, fewOps: 32, manyOps: 48, longAD: 64}
	// batch returns count ops of lengths cycling through lens with 8 bytes of AD, the last op with
	// lastAD bytes.
	batch := func(open bool, count, lastAD int, lens ...int) []Op {
		ops := make([]Op, count)
		for i := range ops {
			n := lens[i%len(lens)]
			if open {
				n += TagSize
			}
			ops[i] = Op{Key: key, Src: make([]byte, n), AD: make([]byte, 8)}
		}
		ops[count-1].AD = make([]byte, lastAD)
		return ops
	}
	// takes is what chachaRunRoute sends op by op where the lanes would take the whole batch.
	takes := func(ops []Op, open bool) bool {
		short, oneShape := mixedShort(ops, open, m.shortMax)
		if oneShape != (len(ops) == 0 || len(shapesOf(ops, open)) == 1) {
			t.Errorf("mixedShort: one shape %v for %d shapes", oneShape, len(shapesOf(ops, open)))
		}
		return short || !oneShape && m.scattered(ops, nil, open)
	}
	five := []int{600, 800, 1000, 1200, 1400}
	for _, c := range []struct {
		name   string
		count  int
		lastAD int
		lens   []int
		want   bool
	}{
		{"uniform", 16, 8, []int{100}, false},
		{"two lengths of 65-512 B", 64, 8, []int{100, 101}, true},
		{"65 B and 512 B", 64, 8, []int{65, 512}, true},
		{"two of 65-512 B among others", 64, 8, []int{513, 100, 200}, true},
		{"one of 65-512 B among others", 64, 8, []int{64, 100, 1420, 0}, false},
		{"IMIX-like", 64, 8, []int{576, 1500, 64, 200}, false},
		{"two lengths, 16 ops, the lanes 3/4 full", 16, 8, []int{600, 1400}, true},
		{"two lengths, 31 ops, the lanes full", 31, 8, []int{700, 1400}, false},
		{"two lengths, 32 ops, the lanes 3/4 full", 32, 8, []int{600, 600, 1400, 1400, 1400}, false},
		{"one op of its own among 16, the lanes full", 16, 8, append(slices.Repeat([]int{1420}, 15), 800), false},
		{"one op of its own among 13, the lanes 13/16 full", 13, 8, append(slices.Repeat([]int{1420}, 12), 1000), true},
		{"two AD lengths, 16 ops", 16, 0, []int{1420}, false},
		{"two AD lengths, 13 ops", 13, 0, []int{1420}, true},
		{"four lengths, 47 ops", 47, 8, five[:4], false},
		{"five lengths, 47 ops", 47, 8, five, true},
		{"five lengths, 48 ops", 48, 8, five, false},
		{"five lengths within a block, 64 ops", 64, 8, []int{10, 20, 30, 40, 50}, true},
		{"five lengths and 65 B of AD, 48 ops", 48, 65, five, true},
		{"five lengths and 64 B of AD, 48 ops", 48, 64, five, false},
	} {
		for _, open := range []bool{false, true} {
			ops := batch(open, c.count, c.lastAD, c.lens...)
			if got := takes(ops, open); got != c.want {
				t.Errorf("%s, open %v: %v, want %v", c.name, open, got, c.want)
			}
		}
	}
	// Lengths 4 apart with AD of a length that has that bit: two shapes however the lengths' and the
	// ADs' differences are combined (takes checks mixedShort's answer).
	ops := batch(false, 16, 12, 1024, 1028)
	for i := range ops {
		ops[i].AD = make([]byte, 12)
	}
	takes(ops, false)
	// AES-GCM ops do not count, and the zero value takes none.
	ops = append(batch(false, 16, 8, 100, 100), Op{Key: gcm, Src: make([]byte, 200)}, Op{Key: gcm, Src: make([]byte, 300)})
	if takes(ops, false) {
		t.Error("AES-GCM ops counted")
	}
	if (&mixedLanes{}).scattered(batch(false, 16, 8, five...), nil, false) {
		t.Error("the zero mixedLanes took a batch")
	}
}

// shapesOf returns the message and AD lengths of the ChaCha-family ops of ops.
func shapesOf(ops []Op, open bool) map[[2]int]bool {
	shapes := map[[2]int]bool{}
	for i := range ops {
		if op := &ops[i]; op.Key.suite.isChaCha() {
			shapes[[2]int{msgLen(op, open), len(op.AD)}] = true
		}
	}
	return shapes
}

// TestDispatchUniform runs the default Seal and Open on a Stdlib route that sends batches of one
// shape to each SIMD tier's lanes (uniformLanes), on batches around its bounds, against the Generic
// tier, and checks which batches it takes.
func TestDispatchUniform(t *testing.T) {
	defer func(c route) { chachaRoute = c }(chachaRoute)
	rng := mrand.New(mrand.NewPCG(15, 16))
	keys := laneTestKeys(t, rng)               // both ChaCha suites in turn
	xkeys := []*Key{keys[1], keys[3], keys[5]} // XChaCha20-Poly1305 alone
	u := uniformLanes{seal: [2]uniformBound{{minOps: 16, minLen: 65, maxLen: 1152}, {minOps: 48, minLen: 65, maxLen: 1420}},
		open:  [2]uniformBound{{minOps: 24, minLen: 128, maxLen: 768}},
		xseal: [2]uniformBound{{minOps: 24, minLen: 65, maxLen: 1420}},
		xopen: [2]uniformBound{{minOps: 16, minLen: 100, maxLen: 1024}}}
	batch := func(keys []*Key, n, m, ad int) []Op {
		ops := make([]Op, n)
		for i := range ops {
			ops[i] = Op{Key: keys[i%len(keys)], AD: make([]byte, ad), Src: make([]byte, m)}
		}
		return ops
	}
	uniform := func(n, m, ad int) []Op { return batch(keys[:2], n, m, ad) } // both suites
	xuniform := func(n, m, ad int) []Op { return batch(xkeys, n, m, ad) }
	for _, c := range []struct {
		ops        []Op
		seal, open bool
	}{
		{uniform(16, 65, 0), true, false},
		{uniform(24, 128, 5), true, true},
		{uniform(24, 64, 0), false, false},
		{uniform(64, 768, 0), true, true},
		{uniform(64, 769, 0), true, false},
		{uniform(64, 1153, 0), true, false},
		{uniform(40, 1153, 0), false, false}, // the second Seal bound needs 48
		{uniform(48, 1420, 0), true, false},
		{uniform(64, 1421, 0), false, false},
		{uniform(20, 200, 0), false, false}, // not a multiple of 8
		{uniform(72, 200, 0), false, false}, // a last chunk of 8
		{uniform(96, 200, 0), true, true},   // a last chunk of 32
		{append(uniform(31, 200, 0), uniform(1, 201, 0)...), false, false},
		{append(uniform(31, 200, 0), uniform(1, 200, 1)...), false, false},
		// XChaCha20 alone: xseal and xopen instead of seal and open.
		{xuniform(24, 1420, 0), true, false},
		{xuniform(16, 100, 5), false, true},
		{xuniform(16, 99, 0), false, false},
		{xuniform(16, 65, 0), false, false}, // seal's first bound would take it
		{xuniform(24, 1024, 3), true, true},
		{xuniform(24, 1025, 0), true, false},
		{xuniform(64, 1421, 0), false, false},
		{append(xuniform(23, 1420, 0), uniform(1, 1420, 0)...), false, false}, // a ChaCha20 op: seal's bounds
	} {
		// takes reads the message length as Open does, the tag off Src.
		open := make([]Op, len(c.ops))
		for i, op := range c.ops {
			op.Src = make([]byte, len(op.Src)+TagSize)
			open[i] = op
		}
		u.tier = AVX2
		if got := u.takes(c.ops, len(c.ops), false); got != c.seal {
			t.Errorf("%d ops of %d bytes: Seal taken %v, want %v", len(c.ops), len(c.ops[0].Src), got, c.seal)
		}
		if got := u.takes(open, len(open), true); got != c.open {
			t.Errorf("%d ops of %d bytes: Open taken %v, want %v", len(c.ops), len(c.ops[0].Src), got, c.open)
		}
		u.tier = Generic
		if u.takes(c.ops, len(c.ops), false) {
			t.Errorf("the zero uniformLanes takes a batch")
		}
	}
	// With a pipeline of Seals beside the lanes: the Seals it takes, but XChaCha20's alone, go there.
	u.tier = AVX2
	r := route{tier: Stdlib, tiny: Stdlib, uniform: u, pipe: pipeSeals{minOps: 4, lengths: lengths{1408, 1472}, maxAD: 64}}
	for _, c := range []struct {
		ops  []Op
		want Tier
	}{
		{uniform(48, 1420, 0), Stdlib},
		{uniform(48, 1420, 65), AVX2}, // too much AD for the pipeline
		{uniform(48, 1400, 0), AVX2},  // too short
		{xuniform(24, 1420, 0), AVX2}, // XChaCha20 alone
		{append(xuniform(23, 1420, 0), uniform(1, 1420, 0)...), Stdlib},
	} {
		if got := r.chachaTier(c.ops, len(c.ops), false); got != c.want {
			t.Errorf("%d ops of %d bytes, %d B of AD, with a pipeline: Seal on %v, want %v", len(c.ops),
				len(c.ops[0].Src), len(c.ops[0].AD), got, c.want)
		}
	}
	for _, tier := range []Tier{AVX2, AVX512} {
		if !chachaHas(tier) {
			continue
		}
		u.tier = tier
		chachaRoute = route{tier: Stdlib, tiny: Stdlib, uniform: u}
		t.Run(tier.String(), func(t *testing.T) {
			for _, shape := range [][4]int{{16, 65, 0}, {24, 128, 13}, {40, 768, 0}, {32, 1152, 20}, {48, 100, 0}, {48, 1420, 0}, {80, 300, 0}, {96, 500, 7},
				{24, 1420, 0, 1}, {16, 100, 5, 1}, {40, 1024, 16, 1}} { // the last: XChaCha20 alone
				lens := make([]int, shape[0])
				for i := range lens {
					lens[i] = shape[1]
				}
				ks := keys
				if shape[3] == 1 {
					ks = xkeys
				}
				checkLensAgainstGeneric(t, ks, lens, shape[2], rng)
			}
		})
	}
	// A route whose lanes start at 12 ops and that sends batches of 8 of one shape to them all the
	// same, and 8 of a remainder of 8-15 that would run op by op: a group of 8, each op shared out to
	// two lanes on AVX512 (streamGroupSplit).
	for _, tier := range []Tier{AVX2, AVX512} {
		if !chachaHas(tier) {
			continue
		}
		b := uniformBound{minOps: 8, minLen: 100, maxLen: 3000}
		chachaRoute = route{tier: tier, minOps: 12, tiny: AVX2, alone: 384, aloneAtMin: 13*64 + 1,
			one:     oneOps{tier: tier, sealMin: 101, openMin: 201, max: 3000},
			uniform: uniformLanes{tier: tier, seal: [2]uniformBound{b}, open: [2]uniformBound{b}}}
		for _, c := range []struct {
			ops  []Op
			want Tier
		}{
			{uniform(8, 1500, 0), tier},
			{uniform(8, 99, 0), Stdlib},
			{uniform(9, 1500, 0), Stdlib},
			{uniform(16, 1500, 0), tier},
			{append(uniform(7, 1500, 0), uniform(1, 1501, 0)...), Stdlib},
		} {
			if got := chachaRoute.chachaTier(c.ops, len(c.ops), false); got != c.want {
				t.Errorf("%v from 12 ops, uniform from 8: %d ops of %d bytes on %v, want %v", tier, len(c.ops),
					len(c.ops[0].Src), got, c.want)
			}
		}
		t.Run(tier.String()+"/from12/eight", func(t *testing.T) {
			for _, shape := range [][4]int{{8, 100, 0}, {8, 700, 9}, {8, 1420, 0}, {8, 1500, 0}, {8, 1600, 13}, {8, 2049, 7}, {8, 3000, 0},
				{12, 1500, 0}, {13, 1700, 9}, {24, 2000, 0}, {30, 1500, 3}, {8, 1500, 5, 1}} { // the last: XChaCha20 alone
				lens := make([]int, shape[0])
				for i := range lens {
					lens[i] = shape[1]
				}
				ks := keys
				if shape[3] == 1 {
					ks = xkeys
				}
				checkLensAgainstGeneric(t, ks, lens, shape[2], rng)
			}
		})
	}
}

// TestSealChain24: the AVX512 Seal pipeline (chachaSealChain24) against Generic, on batches that
// end its chain in each way: ops running out with the chain in the first op, in a later one or past
// all of them; a message of another length; a seventeenth op; ops the pipeline does not take among
// its own; AD of 0-64 bytes, both suites, in place and apart (checkLensAgainstGeneric).
func TestSealChain24(t *testing.T) {
	if !chachaHas(AVX512) {
		t.Skip("CPU lacks AVX512")
	}
	defer func(c route) { chachaRoute = c }(chachaRoute)
	rng := mrand.New(mrand.NewPCG(17, 18))
	keys := laneTestKeys(t, rng)
	chachaRoute = route{tier: AVX512, minOps: 64, tiny: AVX2,
		pipe: pipeSeals{tier: AVX512, minOps: 2, lengths: seal24Lengths, maxAD: 64}}
	repeat := func(n, m int) []int {
		lens := make([]int, n)
		for i := range lens {
			lens[i] = m
		}
		return lens
	}
	for _, lens := range [][]int{
		repeat(2, 961), repeat(2, 1472), repeat(3, 1420), repeat(5, 1200), repeat(7, 1000),
		repeat(16, 1420), repeat(17, 1100), repeat(33, 977),
		append(repeat(4, 1420), repeat(4, 1300)...),
		{1420, 1000, 1420, 1000, 1472, 961},
		{1420, 64, 1420, 2000, 1420, 500, 1420, 1420},
	} {
		for _, ad := range []int{0, 13, 64, 65, -1} {
			checkLensAgainstGeneric(t, keys, lens, ad, rng)
		}
	}
}

// TestShapeGroups runs the default path on batches of a few shapes, which this CPU's lanes may cut
// into long groups of one shape and ops one at a time (laneKernels.shapeGroups), against the
// Generic tier: shapes' counts around a group's 16 and around shapeGroupMin past it, shapes within a
// block with and without AD, 32 to 64 ops (one chunk) and 80 (two), shuffled so that the batch's
// forgery falls in a group or among the ops left over; under ChaCha20 keys, and under keys of both
// suites (whose XChaCha20 ops keep a chunk in the lanes' segments).
func TestShapeGroups(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(19, 20))
	keys := laneTestKeys(t, rng)
	chacha := []*Key{keys[0], keys[2], keys[4]} // laneTestKeys: ChaCha20 at the even indexes
	// of returns runs of {count, length}.
	of := func(runs ...[2]int) []int {
		var lens []int
		for _, r := range runs {
			for range r[0] {
				lens = append(lens, r[1])
			}
		}
		return lens
	}
	for _, lens := range [][]int{
		of([2]int{37, 64}, [2]int{21, 576}, [2]int{6, 1500}),
		of([2]int{20, 1420}, [2]int{44, 64}),
		of([2]int{16, 1420}, [2]int{16, 576}, [2]int{16, 100}, [2]int{2, 2000}),
		of([2]int{15, 1420}, [2]int{17, 700}, [2]int{32, 64}),
		of([2]int{33, 1200}, [2]int{31, 1420}, [2]int{16, 40}),
		of([2]int{31, 1420}, [2]int{1, 300}),
		of([2]int{28, 1420}, [2]int{13, 576}, [2]int{23, 64}),
		of([2]int{32, 1200}, [2]int{8, 300}), // route.shapes: the lanes take the remainder too
		of([2]int{36, 1420}, [2]int{4, 300}),
		of([2]int{32, 512}, [2]int{32, 200}), // two short lengths, in groups: mostGrouped
		of([2]int{16, 300}, [2]int{12, 100}, [2]int{4, 64}),
	} {
		for _, ad := range []int{0, 8, -1} {
			for _, keys := range [][]*Key{chacha, chacha, keys} {
				rng.Shuffle(len(lens), func(i, j int) { lens[i], lens[j] = lens[j], lens[i] })
				checkLensAgainstGeneric(t, keys, lens, ad, rng)
			}
		}
	}
}

// TestMostGrouped checks which batches of short messages of several lengths go to the lanes on a
// route with shapes: ChaCha20's alone, of at most manyShapes shapes, seven eighths of them in groups.
func TestMostGrouped(t *testing.T) {
	keys := laneTestKeys(t, mrand.New(mrand.NewPCG(21, 22)))
	batch := func(key *Key, runs ...[2]int) []Op { // runs of {count, length}
		var ops []Op
		for _, r := range runs {
			for range r[0] {
				ops = append(ops, Op{Key: key, Src: make([]byte, r[1])})
			}
		}
		return ops
	}
	for _, c := range []struct {
		ops  []Op
		want bool
	}{
		{batch(keys[0], [2]int{32, 512}, [2]int{32, 200}), true},
		{batch(keys[0], [2]int{44, 300}, [2]int{12, 100}, [2]int{8, 64}), true},  // 44 + 12 + 0 of 64
		{batch(keys[0], [2]int{43, 300}, [2]int{13, 100}, [2]int{8, 64}), false}, // 32 + 13 + 0 of 64
		{batch(keys[0], [2]int{16, 300}, [2]int{12, 100}, [2]int{4, 64}), true},  // 16 + 12 + 0 of 32
		{batch(keys[1], [2]int{32, 512}, [2]int{32, 200}), false},                // XChaCha20
		{batch(keys[0], [2]int{12, 100}, [2]int{12, 110}, [2]int{12, 120}, [2]int{12, 130}, [2]int{1, 140}), false},
	} {
		if got := mostGrouped(c.ops, false, len(c.ops)); got != c.want {
			t.Errorf("%d ops of %d and %d bytes...: mostGrouped %v, want %v", len(c.ops), len(c.ops[0].Src),
				len(c.ops[len(c.ops)-1].Src), got, c.want)
		}
	}
}

// checkDefaultAgainstGeneric seals and opens a batch of n ops of random suites and lengths with the
// default path and with the Generic tier; every third op in place, where an op run twice would
// show.
func checkDefaultAgainstGeneric(t *testing.T, keys []*Key, n int, rng *mrand.Rand) {
	t.Helper()
	lens := make([]int, n)
	for i := range lens {
		lens[i] = rng.IntN([]int{65, 193, 1600}[rng.IntN(3)]) // a third within block 1, a third within 3
	}
	checkLensAgainstGeneric(t, keys, lens, -1, rng)
}

// checkLensAgainstGeneric is checkDefaultAgainstGeneric on messages of the given lengths, with adLen
// bytes of AD each (below 0: random lengths).
func checkLensAgainstGeneric(t *testing.T, keys []*Key, lens []int, adLen int, rng *mrand.Rand) {
	t.Helper()
	n := len(lens)
	got, want := make([]Op, n), make([]Op, n)
	for i := range got {
		k := keys[rng.IntN(len(keys))]
		m := lens[i]
		src := make([]byte, m)
		for j := range src {
			src[j] = byte(rng.Uint32())
		}
		nonce := make([]byte, k.suite.NonceSize())
		nonce[0] = byte(i)
		ad := src[:rng.IntN(min(m, 40)+1)]
		if adLen >= 0 {
			ad = make([]byte, adLen)
		}
		want[i] = Op{Key: k, Nonce: nonce, AD: ad, Src: src, Dst: make([]byte, m+TagSize)}
		got[i] = want[i]
		got[i].Dst = make([]byte, m+TagSize)
		if i%3 == 0 { // in place: Src in Dst's buffer, AD apart from it
			got[i].Src, got[i].AD = got[i].Dst[:m], bytes.Clone(got[i].AD)
			copy(got[i].Src, src)
		}
	}
	Seal(got)
	Generic.Seal(want)
	for i := range got {
		if !bytes.Equal(got[i].Dst, want[i].Dst) {
			t.Fatalf("batch of %d: Seal of op %d (%v, %d bytes) differs from Generic", n, i, got[i].Key.suite, len(got[i].Src))
		}
		got[i].Src, got[i].Dst = got[i].Dst, make([]byte, len(got[i].Src))
		if i%3 == 0 {
			got[i].Dst = got[i].Src[:len(got[i].Dst)]
		}
	}
	// One forgery in every batch but those of two, which stay genuine; a batch of one takes
	// runAlone's way.
	forged, wantFailed := -1, 0
	if n != 2 {
		forged, wantFailed = n/2, 1
		got[forged].Src[0] ^= 1
	}
	failed := Open(got)
	for i := range got {
		switch {
		case i == forged && (got[i].Err != ErrAuth || !bytes.Equal(got[i].Dst, make([]byte, len(got[i].Dst)))):
			t.Fatalf("batch of %d: the forged op %d was not rejected with a zeroed Dst", n, i)
		case i != forged && (got[i].Err != nil || !bytes.Equal(got[i].Dst, want[i].Src)):
			t.Fatalf("batch of %d: Open of op %d (%v): err %v or wrong plaintext", n, i, got[i].Key.suite, got[i].Err)
		}
	}
	if failed != wantFailed {
		t.Fatalf("batch of %d: Open reported %d failures, want %d", n, failed, wantFailed)
	}
}

// TestStdlibKeyWiped: Destroy clears the key inside the x/crypto AEADs of the Stdlib tier, which
// then seal as under the all-zero key.
func TestStdlibKeyWiped(t *testing.T) {
	for _, s := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
		raw := make([]byte, 32)
		rand.Read(raw)
		k, _ := NewKey(s, raw)
		std := k.std
		if std == nil {
			t.Skip("this build composes the ChaCha AEAD itself (stdChaChaAEAD): no x/crypto AEAD holds the key")
		}
		k.Destroy()
		zero, _ := chacha20poly1305.New(make([]byte, 32))
		if s == XChaCha20Poly1305 {
			zero, _ = chacha20poly1305.NewX(make([]byte, 32))
		}
		nonce := make([]byte, s.NonceSize())
		if got, want := std.Seal(nil, nonce, []byte("x"), nil), zero.Seal(nil, nonce, []byte("x"), nil); !bytes.Equal(got, want) {
			t.Errorf("%v: the x/crypto AEAD still holds its key after Destroy", s)
		}
		if k.std != nil {
			t.Errorf("%v: Destroy kept the reference to the AEAD", s)
		}
	}
}

// BenchmarkChaChaBeside runs the default Seal on mid-sized ChaCha20 batches with this CPU's route,
// its ops within block 1 beside the lanes where route.beside allows, and with beside unset, ns an
// op: the measurement behind the AMD Zen 4 entry's beside (dispatch.go). Shapes: n x 64 B, and a
// tunnel batch of two ACKs for each 1420-byte packet.
func BenchmarkChaChaBeside(b *testing.B) {
	if chachaRoute.beside == 0 {
		b.Skip("this CPU's route runs no ops beside the lanes")
	}
	key, _ := NewKey(ChaCha20Poly1305, make([]byte, 32))
	batch := func(lens []int, n int) []Op {
		ops := make([]Op, n)
		for i := range ops {
			m := lens[i%len(lens)]
			buf := make([]byte, m+TagSize)
			ops[i] = Op{Key: key, Nonce: make([]byte, 12), Src: buf[:m], Dst: buf}
		}
		return ops
	}
	for _, s := range []struct {
		name string
		ops  []Op
	}{
		{"12x64", batch([]int{64}, 12)}, {"20x64", batch([]int{64}, 20)}, {"30x64", batch([]int{64}, 30)},
		{"40x64", batch([]int{64}, 40)}, {"20x64+10x1420", batch([]int{64, 64, 1420}, 30)},
	} {
		for _, beside := range []int{chachaRoute.beside, 0} {
			b.Run(fmt.Sprintf("%s/beside=%d", s.name, beside), func(b *testing.B) {
				defer func(r route) { chachaRoute = r }(chachaRoute)
				chachaRoute.beside = beside
				for b.Loop() {
					Seal(s.ops)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(s.ops)), "ns/op-each")
			})
		}
	}
}

// BenchmarkFloor runs the default Seal and Open with the routes of CPUs the dispatch table has not
// measured (arm64, amd64 without AVX2, purego: the standard library throughout) on any CPU,
// alternating with crypto/cipher's or x/crypto's AEAD called directly on the same ops
// (benchshape.PairedForced): what the batch API's own checks cost where the standard library is the
// whole path, which stays just below 1.00x by design. Forced here, it is listed in make bench's
// summary of other shapes but not flagged there.
func BenchmarkFloor(b *testing.B) {
	raw := make([]byte, 32)
	for _, s := range []Suite{AES128GCM, ChaCha20Poly1305} {
		key, _ := NewKey(s, raw[:s.KeySize()])
		var std cipher.AEAD
		if s == AES128GCM {
			block, _ := aes.NewCipher(raw[:s.KeySize()])
			std, _ = cipher.NewGCM(block)
		} else {
			std, _ = chacha20poly1305.New(raw)
		}
		for _, shape := range []struct{ count, n int }{{1, 64}, {64, 64}, {1, 1420}} {
			for _, open := range []bool{false, true} {
				seal := make([]Op, shape.count)
				for i := range seal {
					buf := make([]byte, shape.n+TagSize)
					seal[i] = Op{Key: key, Nonce: make([]byte, s.NonceSize()), Src: buf[:shape.n], Dst: buf}
				}
				Seal(seal)
				ops, dir := seal, "Seal"
				if open {
					ops, dir = make([]Op, shape.count), "Open"
					for i, op := range seal {
						ops[i] = Op{Key: key, Nonce: op.Nonce, Src: op.Dst, Dst: make([]byte, shape.n)}
					}
				}
				b.Run(fmt.Sprintf("%v/%dx%d/%s", s, shape.count, shape.n, dir), func(b *testing.B) {
					defer func(c, g route) { chachaRoute, gcmRoute = c, g }(chachaRoute, gcmRoute)
					chachaRoute, gcmRoute = routes[cpuUnmeasured].chacha, routes[cpuUnmeasured].gcm
					dst := make([]byte, 0, shape.n+TagSize)
					benchshape.PairedForced(b, len(ops), func() {
						if open {
							Open(ops)
						} else {
							Seal(ops)
						}
					}, func() {
						for i := range ops {
							if open {
								std.Open(dst, ops[i].Nonce, ops[i].Src, nil)
							} else {
								std.Seal(dst, ops[i].Nonce, ops[i].Src, nil)
							}
						}
					})
				})
			}
		}
	}
}
