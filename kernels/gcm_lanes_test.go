// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Lane-handling tests of the AES-GCM tiers: every tier against crypto/cipher on batches whose shapes
// hit the kernels' boundaries: lengths around the 16-byte block, the 64-byte zmm, the 128-byte
// (AVX2) and 256-byte (AVX512) chunks; batches of 1..40 mixing AES-128/192/256 and several keys;
// in place and not; AD of every tail length; ops longer than one kernel call.

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
)

// gcmKeys returns n keys cycling through the three AES-GCM suites.
func gcmKeys(tb testing.TB, r *rand.Rand, n int) []*testKey {
	suites := []kernels.Suite{kernels.AES128GCM, kernels.AES192GCM, kernels.AES256GCM}
	ks := make([]*testKey, n)
	for i := range ks {
		s := suites[i%len(suites)]
		ks[i] = newTestKey(tb, s, randBytes(r, s.KeySize()))
	}
	return ks
}

// gcmCase is one op of a lane test with the oracle's answer.
type gcmCase struct {
	k                *testKey
	nonce, ad, pt    []byte
	want             []byte
	inPlace          bool
	srcOff, dstOff   int
	sealDst, openDst []byte
}

// runGCMBatch seals cs on tier t, checks every result against the oracle (and the guard bytes past
// Dst), opens them back and checks the plaintexts.
func runGCMBatch(t *testing.T, tier kernels.Tier, cs []gcmCase) {
	t.Helper()
	ops := make([]kernels.Op, len(cs))
	for i := range cs {
		c := &cs[i]
		c.want = c.k.sealOracle(c.nonce, c.ad, c.pt)
		dst := unaligned(len(c.pt)+kernels.TagSize, c.dstOff)
		src := dst[:len(c.pt)]
		if !c.inPlace {
			src = unaligned(len(c.pt), c.srcOff)
		}
		copy(src, c.pt)
		c.sealDst = dst
		ops[i] = kernels.Op{Key: c.k.key, Nonce: c.nonce, AD: c.ad, Src: src, Dst: dst}
	}
	tier.Seal(ops)
	for i := range cs {
		c := &cs[i]
		if !bytes.Equal(c.sealDst, c.want) || !guardsIntact(c.sealDst) {
			t.Fatalf("%v Seal op %d/%d (%v, %d bytes, AD %d, in place %v): differs at byte %d",
				tier, i, len(cs), c.k.suite, len(c.pt), len(c.ad), c.inPlace, firstDiff(c.sealDst, c.want))
		}
	}
	for i := range cs {
		c := &cs[i]
		src := c.sealDst
		dst := src[:len(c.pt)]
		if !c.inPlace {
			src = placed(c.sealDst, c.srcOff)
			dst = unaligned(len(c.pt), c.dstOff)
		}
		c.openDst = dst
		ops[i] = kernels.Op{Key: c.k.key, Nonce: c.nonce, AD: c.ad, Src: src, Dst: dst, Err: errSentinel}
	}
	if failed := tier.Open(ops); failed != 0 {
		t.Fatalf("%v Open: %d of %d failed", tier, failed, len(cs))
	}
	for i := range cs {
		c := &cs[i]
		if ops[i].Err != nil || !bytes.Equal(c.openDst, c.pt) {
			t.Fatalf("%v Open op %d (%v, %d bytes, AD %d): err %v, differs at byte %d",
				tier, i, c.k.suite, len(c.pt), len(c.ad), ops[i].Err, firstDiff(c.openDst, c.pt))
		}
	}
}

// TestGCMLengths runs every length 0..1100 (every seventh under -short) as batches of one and as
// one mixed batch, with AD lengths cycling through every tail length.
func TestGCMLengths(t *testing.T) {
	r := newRand(t)
	keys := gcmKeys(t, r, 6)
	step := 1
	if testing.Short() {
		step = 7
	}
	for _, tier := range kernels.Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			var batch []gcmCase
			for n := 0; n <= 1100; n += step {
				c := gcmCase{
					k:       keys[n%len(keys)],
					nonce:   randBytes(r, 12),
					ad:      randBytes(r, n%35),
					pt:      randBytes(r, n),
					inPlace: n%2 == 0,
					srcOff:  n % 7,
					dstOff:  n % 5,
				}
				runGCMBatch(t, tier, []gcmCase{c})
				batch = append(batch, c)
			}
			r.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
			runGCMBatch(t, tier, batch)
		})
	}
}

// gcmBoundaries are the lengths next to the kernels' block, register and chunk sizes.
var gcmBoundaries = func() []int {
	var ls []int
	for _, b := range []int{16, 32, 48, 64, 128, 192, 256, 512, 1024, 1420, 1500, 4096} {
		for d := -2; d <= 2; d++ {
			ls = append(ls, b+d)
		}
	}
	return append(ls, 0, 1, 15, 17, 255, 257, 271, 8192, 16383, 16384, 16385, 16400)
}()

// TestGCMBatches runs batches of 1..40 ops (every fifth size under -short) of boundary lengths with
// mixed key sizes and keys, in place and not; the batch sizes cross the kernels' descriptor groups.
func TestGCMBatches(t *testing.T) {
	r := newRand(t)
	keys := gcmKeys(t, r, 9)
	step := 1
	if testing.Short() {
		step = 5
	}
	for _, tier := range kernels.Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			for size := 1; size <= 40; size += step {
				cs := make([]gcmCase, size)
				for i := range cs {
					n := gcmBoundaries[r.IntN(len(gcmBoundaries))]
					if r.IntN(3) == 0 {
						n = r.IntN(1101)
					}
					cs[i] = gcmCase{
						k:       keys[r.IntN(len(keys))],
						nonce:   randBytes(r, 12),
						ad:      randBytes(r, r.IntN(300)),
						pt:      randBytes(r, n),
						inPlace: r.IntN(2) == 0,
						srcOff:  r.IntN(8),
						dstOff:  r.IntN(8),
					}
				}
				runGCMBatch(t, tier, cs)
			}
		})
	}
}

// TestGCMLong covers ops cut into several kernel calls: text and AD beyond one call's bound, alone and
// between short ops.
func TestGCMLong(t *testing.T) {
	r := newRand(t)
	keys := gcmKeys(t, r, 3)
	shapes := []struct{ ad, pt int }{
		{0, 16<<10 + 1}, {0, 40000}, {13, 16 << 10}, {16<<10 + 5, 100}, {40000, 40000}, {16 << 10, 0},
		{16<<10 - 3, 7}, {300, 65536 + 17},
	}
	for _, tier := range kernels.Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			for i, sh := range shapes {
				c := gcmCase{
					k: keys[i%len(keys)], nonce: randBytes(r, 12), ad: randBytes(r, sh.ad), pt: randBytes(r, sh.pt),
					inPlace: i%2 == 1, srcOff: i % 8, dstOff: (i + 3) % 8,
				}
				small := gcmCase{k: keys[(i+1)%len(keys)], nonce: randBytes(r, 12), pt: randBytes(r, 100)}
				runGCMBatch(t, tier, []gcmCase{c})
				runGCMBatch(t, tier, []gcmCase{small, c, small})
			}
		})
	}
}

// TestGCMTamper flips one bit of the tag, ciphertext or AD of one op in a batch: only that op fails,
// its Dst zeroed.
func TestGCMTamper(t *testing.T) {
	r := newRand(t)
	keys := gcmKeys(t, r, 3)
	for _, tier := range kernels.Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			for _, n := range []int{0, 1, 16, 63, 64, 65, 255, 256, 257, 1420} {
				for what := range 3 {
					if what == 1 && n == 0 {
						continue
					}
					const size = 9
					ops := make([]kernels.Op, size)
					for i := range ops {
						k := keys[i%len(keys)]
						nonce, ad, pt := randBytes(r, 12), randBytes(r, 20), randBytes(r, n)
						ops[i] = kernels.Op{Key: k.key, Nonce: nonce, AD: ad, Src: k.sealOracle(nonce, ad, pt),
							Dst: make([]byte, n)}
					}
					bad := r.IntN(size)
					switch what {
					case 0:
						ops[bad].Src[n] ^= 1 << r.IntN(8)
					case 1:
						ops[bad].Src[r.IntN(n)] ^= 1 << r.IntN(8)
					case 2:
						ops[bad].AD[r.IntN(20)] ^= 1 << r.IntN(8)
					}
					if failed := tier.Open(ops); failed != 1 {
						t.Fatalf("%v n=%d tamper %d: %d failed, want 1", tier, n, what, failed)
					}
					for i := range ops {
						if (i == bad) != (ops[i].Err != nil) || i == bad && !isZero(ops[i].Dst) {
							t.Fatalf("%v n=%d tamper %d: op %d err %v", tier, n, what, i, ops[i].Err)
						}
					}
				}
			}
		})
	}
}

// TestGCMSmallLanes runs batches of 1..40 ops with at most 64 bytes of text and no AD, the shape the
// AVX512 tier gives to its lane kernels (four packets per zmm): every length 0..64, one key, several
// keys of one size, and mixed sizes (whose odd ones out take the per-packet kernels), sealing and
// opening, then tampers with one op per batch.
func TestGCMSmallLanes(t *testing.T) {
	r := newRand(t)
	pools := map[string][]*testKey{
		"one key":     gcmKeys(t, r, 1),
		"AES-256":     nil,
		"mixed sizes": gcmKeys(t, r, 7),
	}
	for range 5 {
		k := randBytes(r, 32)
		pools["AES-256"] = append(pools["AES-256"], newTestKey(t, kernels.AES256GCM, k))
	}
	for _, tier := range kernels.Tiers() {
		for name, keys := range pools {
			t.Run(tier.String()+"/"+name, func(t *testing.T) {
				for size := 1; size <= 40; size++ {
					cs := make([]gcmCase, size)
					for i := range cs {
						cs[i] = gcmCase{
							k:       keys[r.IntN(len(keys))],
							nonce:   randBytes(r, 12),
							pt:      randBytes(r, (size*7+i*13)%65),
							inPlace: r.IntN(2) == 0,
							srcOff:  r.IntN(8),
							dstOff:  r.IntN(8),
						}
					}
					runGCMBatch(t, tier, cs)
					openOneTampered(t, tier, cs, r)
				}
			})
		}
	}
}

// TestGCMSmallAD runs batches of 1..40 ops with 0..128 bytes of text and 0..64 of AD, the shapes
// around those the AVX2 tier gives to its pair kernels (at most 64 bytes of text and 32 of AD,
// keys of one size per pair): one key, several keys of one size, and mixed sizes, in place and not,
// sealing and opening, then tampering with one op per batch.
func TestGCMSmallAD(t *testing.T) {
	r := newRand(t)
	pools := map[string][]*testKey{
		"one key":     gcmKeys(t, r, 1),
		"AES-128":     nil,
		"mixed sizes": gcmKeys(t, r, 7),
	}
	for range 5 {
		pools["AES-128"] = append(pools["AES-128"], newTestKey(t, kernels.AES128GCM, randBytes(r, 16)))
	}
	for _, tier := range kernels.Tiers() {
		for name, keys := range pools {
			t.Run(tier.String()+"/"+name, func(t *testing.T) {
				for size := 1; size <= 40; size++ {
					cs := make([]gcmCase, size)
					for i := range cs {
						cs[i] = gcmCase{
							k:       keys[r.IntN(len(keys))],
							nonce:   randBytes(r, 12),
							ad:      randBytes(r, r.IntN(65)),
							pt:      randBytes(r, r.IntN(129)),
							inPlace: r.IntN(2) == 0,
							srcOff:  r.IntN(8),
							dstOff:  r.IntN(8),
						}
						if r.IntN(2) == 0 { // most ops within the pair kernels' bounds
							cs[i].ad, cs[i].pt = cs[i].ad[:len(cs[i].ad)/2], cs[i].pt[:len(cs[i].pt)/2]
						}
					}
					runGCMBatch(t, tier, cs)
					openOneTampered(t, tier, cs, r)
				}
			})
		}
	}
}

// openOneTampered opens the sealed ops of cs (runGCMBatch's want) with one bit of one op flipped:
// exactly that op fails, with its Dst zeroed.
func openOneTampered(t *testing.T, tier kernels.Tier, cs []gcmCase, r *rand.Rand) {
	t.Helper()
	ops := make([]kernels.Op, len(cs))
	for i, c := range cs {
		ops[i] = kernels.Op{Key: c.k.key, Nonce: c.nonce, AD: c.ad, Src: bytes.Clone(c.want), Dst: make([]byte, len(c.pt))}
	}
	bad := r.IntN(len(ops))
	ops[bad].Src[r.IntN(len(ops[bad].Src))] ^= 1 << r.IntN(8)
	if failed := tier.Open(ops); failed != 1 {
		t.Fatalf("%v: %d of %d tampered ops failed, want 1", tier, failed, len(ops))
	}
	for i := range ops {
		if (i == bad) != (ops[i].Err != nil) || i == bad && !isZero(ops[i].Dst) {
			t.Fatalf("%v: op %d of %d (tampered: %v) err %v", tier, i, len(ops), i == bad, ops[i].Err)
		}
	}
}
