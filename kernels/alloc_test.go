// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// The zero-allocation promise of the hot path (DESIGN.md, Conventions): Seal and Open of a full
// mixed batch, forged ops included, and NewAEAD's Seal and Open given a dst with room, allocate
// nothing on any tier, with or without -tags purego.

import (
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
)

func skipAllocsUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own account")
	}
}

func TestAllocsBatch(t *testing.T) {
	skipAllocsUnderRace(t)
	r := newRand(t)
	keys := keyPool(t, r, 2)
	// 64 ops of every suite, packet sizes, one in eight forged.
	ds := genDiffOps(r, keys, 64, 1500)
	for i := range ds {
		ds[i].k = keys[i%len(keys)]
		ds[i].nonce = randBytes(r, ds[i].k.suite.NonceSize())
		ds[i].want = ds[i].k.sealOracle(ds[i].nonce, ds[i].ad, ds[i].pt)
	}
	seal := sealOps(ds)
	open := make([]kernels.Op, len(ds))
	forged := 0
	for i, d := range ds {
		ct := append([]byte(nil), d.want...)
		if i%8 == 0 {
			ct[len(ct)-1] ^= 1
			forged++
		}
		open[i] = kernels.Op{Key: d.k.key, Nonce: d.nonce, AD: d.ad, Src: ct, Dst: make([]byte, len(d.pt))}
	}
	for _, tier := range kernels.Tiers() {
		if n := testing.AllocsPerRun(20, func() { tier.Seal(seal) }); n != 0 {
			t.Errorf("%v: Seal of a 64-op mixed batch allocates %v times", tier, n)
		}
		var failed int
		if n := testing.AllocsPerRun(20, func() { failed = tier.Open(open) }); n != 0 {
			t.Errorf("%v: Open of a 64-op mixed batch allocates %v times", tier, n)
		}
		if failed != forged {
			t.Errorf("%v: Open failed %d ops, want %d", tier, failed, forged)
		}
	}
	// The package-level entry points too, also on a batch of tiny ops (fused kernels on some CPUs).
	if n := testing.AllocsPerRun(20, func() { kernels.Seal(seal); kernels.Open(open) }); n != 0 {
		t.Errorf("package Seal+Open allocate %v times", n)
	}
	// Batches of other sizes, where some CPUs' routes split a batch between the lanes, the ops
	// beside them and the ops run one at a time.
	for _, size := range []int{1, 5, 12, 15, 20, 30, 47} {
		if n := testing.AllocsPerRun(20, func() { kernels.Seal(seal[:size]); kernels.Open(open[:size]) }); n != 0 {
			t.Errorf("package Seal+Open of %d ops allocate %v times", size, n)
		}
	}
	tiny := sealOps(genDiffOps(r, keys, 64, 64))
	if n := testing.AllocsPerRun(20, func() { kernels.Seal(tiny) }); n != 0 {
		t.Errorf("package Seal of 64 ops of up to 64 bytes allocates %v times", n)
	}
	// A batch of one shape, whose long groups some CPUs pipeline (a Poly1305 chain beside the lanes).
	key, err := kernels.NewKey(kernels.ChaCha20Poly1305, randBytes(r, 32))
	if err != nil {
		t.Fatal(err)
	}
	uniform := make([]kernels.Op, 64)
	for i := range uniform {
		buf := make([]byte, 1420+kernels.TagSize)
		uniform[i] = kernels.Op{Key: key, Nonce: randBytes(r, 12), AD: randBytes(r, 16), Src: buf[:1420], Dst: buf}
	}
	for _, tier := range kernels.Tiers() {
		if n := testing.AllocsPerRun(20, func() { tier.Seal(uniform) }); n != 0 {
			t.Errorf("%v: Seal of 64 x 1420 B allocates %v times", tier, n)
		}
	}
	// Full-size Seals a few to a batch and in a remainder past the lanes, and a long one on its own,
	// which some CPUs run with each op's MAC beside the later passes (pipeSeals, chachaSealLong24),
	// or nine to eleven of them op by op (longRemainder).
	for _, size := range []int{3, 4, 7, 9, 13, 27, 28} {
		if n := testing.AllocsPerRun(20, func() { kernels.Seal(uniform[:size]) }); n != 0 {
			t.Errorf("package Seal of %d x 1420 B allocates %v times", size, n)
		}
	}
	long := make([]byte, 16<<10+kernels.TagSize)
	longOp := []kernels.Op{{Key: key, Nonce: randBytes(r, 12), AD: randBytes(r, 16), Src: long[:16<<10], Dst: long}}
	if n := testing.AllocsPerRun(20, func() { kernels.Seal(longOp) }); n != 0 {
		t.Errorf("package Seal of one 16 KiB op allocates %v times", n)
	}
	// A batch of full-sized and ACK-sized ops, whose shapes some CPUs run in long groups of their
	// own and the ops left over one at a time (laneKernels.shapeGroups); the Opens fail.
	shapes, shapesOpen := make([]kernels.Op, 64), make([]kernels.Op, 64)
	for i := range shapes {
		n := []int{1420, 64, 64}[i%3]
		buf := make([]byte, n+kernels.TagSize)
		shapes[i] = kernels.Op{Key: key, Nonce: randBytes(r, 12), AD: randBytes(r, 8), Src: buf[:n], Dst: buf}
		shapesOpen[i] = kernels.Op{Key: key, Nonce: shapes[i].Nonce, AD: shapes[i].AD, Src: randBytes(r, n+kernels.TagSize),
			Dst: make([]byte, n)}
	}
	if n := testing.AllocsPerRun(20, func() { kernels.Seal(shapes); kernels.Open(shapesOpen) }); n != 0 {
		t.Errorf("package Seal+Open of 64 ops of 1420 and 64 bytes allocate %v times", n)
	}
	// Batches of ChaCha20 ops of 65-192 bytes, which some CPUs run two or three to a fused call,
	// on their own or beside the lanes; the Opens fail (their inputs are not sealed) and are zeroed.
	small, smallOpen := make([]kernels.Op, 47), make([]kernels.Op, 47)
	for i := range small {
		n := 65 + r.IntN(128)
		buf := make([]byte, n+kernels.TagSize)
		small[i] = kernels.Op{Key: key, Nonce: randBytes(r, 12), AD: randBytes(r, 8), Src: buf[:n], Dst: buf}
		smallOpen[i] = kernels.Op{Key: key, Nonce: small[i].Nonce, AD: small[i].AD, Src: randBytes(r, n+kernels.TagSize),
			Dst: make([]byte, n)}
	}
	for _, size := range []int{2, 3, 4, 5, 8, 24, 47} {
		if n := testing.AllocsPerRun(20, func() { kernels.Seal(small[:size]); kernels.Open(smallOpen[:size]) }); n != 0 {
			t.Errorf("package Seal+Open of %d ops of 65-192 bytes allocate %v times", size, n)
		}
	}
}

func TestAllocsAEAD(t *testing.T) {
	skipAllocsUnderRace(t)
	r := newRand(t)
	for _, s := range allSuites {
		a, err := kernels.NewAEAD(s, randBytes(r, s.KeySize()))
		if err != nil {
			t.Fatal(err)
		}
		nonce, ad, pt := randBytes(r, s.NonceSize()), randBytes(r, 13), randBytes(r, 1420)
		ct := a.Seal(nil, nonce, pt, ad)
		forged := append([]byte(nil), ct...)
		forged[0] ^= 1
		dst := make([]byte, 0, len(ct))
		if n := testing.AllocsPerRun(20, func() { a.Seal(dst[:0], nonce, pt, ad) }); n != 0 {
			t.Errorf("%v: AEAD.Seal with a dst of sufficient capacity allocates %v times", s, n)
		}
		if n := testing.AllocsPerRun(20, func() {
			if _, err := a.Open(dst[:0], nonce, ct, ad); err != nil {
				panic(err)
			}
		}); n != 0 {
			t.Errorf("%v: AEAD.Open with a dst of sufficient capacity allocates %v times", s, n)
		}
		if n := testing.AllocsPerRun(20, func() { a.Open(dst[:0], nonce, forged, ad) }); n != 0 {
			t.Errorf("%v: a failed AEAD.Open allocates %v times", s, n)
		}
	}
}
