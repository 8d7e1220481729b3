// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build cgo && amd64

package ipsecmb

// Interop: intel-ipsec-mb and every tier of package kernels seal the same bytes and open each other's
// output, for every suite both support, at lengths around block and lane boundaries and in batches
// of mixed lengths and keys. Benchmarks: the kernels benchmarks' workloads (internal/benchshape) on
// both, in the same run, named Benchmark{Seal,Open}/<suite>/<workload>/<path>, where the path is
// "default" (package kernels' Seal and Open timed alternately with intel-ipsec-mb, as `make bench`
// times them against the standard library), a tier, or "baseline" (intel-ipsec-mb alone), so that
// `go run ../../internal/benchtable` prints the default path's speed-up over intel-ipsec-mb and
// flags the shapes where the library is faster.

import (
	"bytes"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"testing"

	"github.com/wirebatch/wirebatch/internal/benchshape"
	"github.com/wirebatch/wirebatch/kernels"
)

var suites = []struct {
	ours  kernels.Suite
	their Suite
}{
	{kernels.ChaCha20Poly1305, ChaCha20Poly1305},
	{kernels.AES128GCM, AES128GCM},
	{kernels.AES256GCM, AES256GCM},
}

func newMgr(tb testing.TB) *Mgr {
	tb.Helper()
	g, err := NewMgr()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(g.Close)
	return g
}

// batchData is one batch's keys, nonces and plaintexts; key i%len(keys) seals packet i.
type batchData struct {
	raw    [][]byte
	keys   []*kernels.Key
	nonces [][]byte
	pts    [][]byte
}

func newBatchData(tb testing.TB, s kernels.Suite, lens []int, nkeys int, rng *mrand.Rand) *batchData {
	tb.Helper()
	d := &batchData{}
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for range nkeys {
		raw := fill(s.KeySize())
		k, err := kernels.NewKey(s, raw)
		if err != nil {
			tb.Fatal(err)
		}
		d.raw, d.keys = append(d.raw, raw), append(d.keys, k)
	}
	for _, n := range lens {
		d.nonces = append(d.nonces, fill(s.NonceSize()))
		d.pts = append(d.pts, fill(n))
	}
	return d
}

func TestInterop(t *testing.T) {
	g := newMgr(t)
	t.Logf("intel-ipsec-mb runs its %s code", g.Arch)
	rng := mrand.New(mrand.NewPCG(1, 2))
	var lens []int
	for _, b := range []int{0, 16, 64, 256, 1024, 1420, 2048, 16384} {
		for d := -1; d <= 1; d++ {
			if b+d >= 0 {
				lens = append(lens, b+d)
			}
		}
	}
	mixed := make([]int, 70)
	for i := range mixed {
		mixed[i] = rng.IntN(1600)
	}
	for _, s := range suites {
		for _, tier := range kernels.Tiers() {
			for _, batch := range [][]int{lens, mixed, {1420}, {64, 1420, 0, 576}} {
				name := fmt.Sprintf("%v/%v/%d-ops", s.ours, tier, len(batch))
				t.Run(name, func(t *testing.T) { checkInterop(t, g, s.ours, s.their, tier, newBatchData(t, s.ours, batch, 3, rng)) })
			}
		}
	}
}

// checkInterop seals d with intel-ipsec-mb and with tier, which must agree byte for byte, opens each
// one's output with the other, and checks that a flipped tag bit fails our Open.
func checkInterop(t *testing.T, g *Mgr, ours kernels.Suite, their Suite, tier kernels.Tier, d *batchData) {
	theirs, err := g.NewBatch(their, d.raw, d.nonces, d.pts)
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Free()
	if err := theirs.Seal(); err != nil {
		t.Fatal(err)
	}
	ops := make([]kernels.Op, len(d.pts))
	for i, pt := range d.pts {
		ops[i] = kernels.Op{Key: d.keys[i%len(d.keys)], Nonce: d.nonces[i], Src: pt, Dst: make([]byte, len(pt)+kernels.TagSize)}
	}
	tier.Seal(ops)
	cts := make([][]byte, len(ops))
	for i, op := range ops {
		want := append(theirs.Output(i), theirs.Tag(i)...)
		if !bytes.Equal(op.Dst, want) {
			t.Fatalf("packet %d (%d bytes): our ciphertext and tag differ from intel-ipsec-mb's", i, len(d.pts[i]))
		}
		cts[i] = want
	}

	// Ours opens theirs; a flipped tag bit fails.
	for i := range ops {
		ops[i] = kernels.Op{Key: d.keys[i%len(d.keys)], Nonce: d.nonces[i], Src: cts[i], Dst: make([]byte, len(d.pts[i]))}
	}
	if failed := tier.Open(ops); failed != 0 {
		t.Fatalf("our Open of intel-ipsec-mb's output: %d of %d failed", failed, len(ops))
	}
	for i, op := range ops {
		if !bytes.Equal(op.Dst, d.pts[i]) {
			t.Fatalf("packet %d: our Open of intel-ipsec-mb's output gave the wrong plaintext", i)
		}
	}
	forged := bytes.Clone(cts[0])
	forged[len(forged)-1] ^= 0x80
	op := []kernels.Op{{Key: d.keys[0], Nonce: d.nonces[0], Src: forged, Dst: make([]byte, len(d.pts[0]))}}
	if tier.Open(op) != 1 {
		t.Fatal("our Open accepted a forged tag")
	}

	// Theirs opens ours: it computes the tag over our ciphertext and deciphers it.
	bodies := make([][]byte, len(cts))
	for i, ct := range cts {
		bodies[i] = ct[:len(ct)-kernels.TagSize]
	}
	back, err := g.NewBatch(their, d.raw, d.nonces, bodies)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Free()
	if err := back.Open(); err != nil {
		t.Fatal(err)
	}
	for i := range cts {
		if !bytes.Equal(back.Tag(i), cts[i][len(bodies[i]):]) || !bytes.Equal(back.Output(i), d.pts[i]) {
			t.Fatalf("packet %d: intel-ipsec-mb's Open of our output: tag or plaintext differs", i)
		}
	}
}

func BenchmarkSeal(b *testing.B) { bench(b, false) }
func BenchmarkOpen(b *testing.B) { bench(b, true) }

func bench(b *testing.B, open bool) {
	g := newMgr(b)
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		b.Fatal(err)
	}
	for _, s := range suites {
		b.Run(s.ours.String(), func(b *testing.B) {
			for _, w := range benchshape.Workloads {
				b.Run(w.Name, func(b *testing.B) {
					d := newBatchData(b, s.ours, w.Lens, w.Keys, mrand.New(mrand.NewChaCha8(seed)))
					var bytes int64
					for _, pt := range d.pts {
						bytes += int64(len(pt))
					}
					b.Run("default", func(b *testing.B) { benchDefault(b, g, s.their, d, open) })
					for _, tier := range kernels.Tiers() {
						b.Run(tier.String(), func(b *testing.B) { benchOurs(b, tier, d, bytes, open) })
					}
					b.Run("baseline", func(b *testing.B) { benchTheirs(b, g, s.their, d, bytes, open) })
				})
			}
		})
	}
}

// ourOps returns the batch as ops for seal, or for open (sealed with seal first), each with
// preallocated buffers, as the kernels benchmarks have them; run is one pass of the direction.
func ourOps(b *testing.B, seal func([]kernels.Op), openOps func([]kernels.Op) int, d *batchData, open bool) (run func()) {
	ops := make([]kernels.Op, len(d.pts))
	for i, pt := range d.pts {
		ops[i] = kernels.Op{Key: d.keys[i%len(d.keys)], Nonce: d.nonces[i], Src: pt, Dst: make([]byte, len(pt)+kernels.TagSize)}
	}
	if !open {
		return func() { seal(ops) }
	}
	seal(ops)
	for i := range ops {
		ops[i].Src, ops[i].Dst = ops[i].Dst, make([]byte, len(d.pts[i]))
	}
	if openOps(ops) != 0 {
		b.Fatal("Open of genuine ciphertexts failed")
	}
	return func() { openOps(ops) }
}

// theirBatch returns one pass of the batch through intel-ipsec-mb: one cgo call, the packets in C
// memory (freed when b ends).
func theirBatch(b *testing.B, g *Mgr, s Suite, d *batchData, open bool) (run func()) {
	batch, err := g.NewBatch(s, d.raw, d.nonces, d.pts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(batch.Free)
	pass := batch.Seal
	if open {
		pass = batch.Open // over the plaintexts as ciphertexts: the same work, tags not compared
	}
	return func() {
		if err := pass(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDefault times the default path and intel-ipsec-mb alternately on the same batch
// (benchshape.Paired), so that a noisy neighbour slows both alike.
func benchDefault(b *testing.B, g *Mgr, s Suite, d *batchData, open bool) {
	ours := ourOps(b, kernels.Seal, kernels.Open, d, open)
	benchshape.Paired(b, len(d.pts), ours, theirBatch(b, g, s, d, open))
}

// benchOurs runs the batch through tier.
func benchOurs(b *testing.B, tier kernels.Tier, d *batchData, bytes int64, open bool) {
	run := ourOps(b, tier.Seal, tier.Open, d, open)
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
	reportPerPacket(b, len(d.pts))
}

// benchTheirs runs the batch through intel-ipsec-mb alone.
func benchTheirs(b *testing.B, g *Mgr, s Suite, d *batchData, bytes int64, open bool) {
	run := theirBatch(b, g, s, d, open)
	b.SetBytes(bytes)
	for b.Loop() {
		run()
	}
	reportPerPacket(b, len(d.pts))
}

func reportPerPacket(b *testing.B, packets int) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(packets), "ns/pkt")
	}
}
