// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Benchmarks: every suite and workload on every tier in Tiers(), beside the per-packet baseline
// (golang.org/x/crypto/chacha20poly1305 New/NewX, crypto/cipher GCM) on the same data in the same
// run. Names parse as Benchmark{Seal,Open}/<suite>/<workload>/<path>: "default" (the package's Seal
// and Open, measured alternately with the baseline: benchDefault), a tier, or "baseline". `make
// bench` pipes the output through internal/benchtable for ns/packet, GB/s and speed-up tables.
//
// Every benchmark reports B/s over the plaintext bytes of the whole batch (b.SetBytes), allocations,
// and ns/pkt (time per batch divided by its ops), the figure a data plane budgets with.

import (
	"crypto/cipher"
	"math/rand/v2"
	"testing"

	"github.com/wirebatch/wirebatch/internal/benchshape"
	"github.com/wirebatch/wirebatch/kernels"
)

var benchSuites = []kernels.Suite{
	kernels.ChaCha20Poly1305,
	kernels.XChaCha20Poly1305,
	kernels.AES128GCM,
	kernels.AES256GCM,
}

// benchData is one workload's inputs for one suite: keys, oracle AEADs, nonces, plaintexts and
// their ciphertexts. WireGuard transport data has no additional data, so AD is empty.
type benchData struct {
	keys    []*kernels.Key
	oracles []cipher.AEAD
	nonces  [][]byte
	pts     [][]byte
	cts     [][]byte
	bytes   int64
}

func newBenchData(b *testing.B, s kernels.Suite, w benchshape.Workload) *benchData {
	r := rand.New(rand.NewPCG(uint64(s), uint64(len(w.Lens))))
	d := &benchData{}
	for range w.Keys {
		raw := randBytes(r, s.KeySize())
		k, err := kernels.NewKey(s, raw)
		if err != nil {
			b.Fatal(err)
		}
		d.keys = append(d.keys, k)
		d.oracles = append(d.oracles, oracleAEAD(b, s, raw))
	}
	for i, n := range w.Lens {
		nonce, pt := randBytes(r, s.NonceSize()), randBytes(r, n)
		d.nonces = append(d.nonces, nonce)
		d.pts = append(d.pts, pt)
		d.cts = append(d.cts, d.oracles[i%w.Keys].Seal(nil, nonce, pt, nil))
		d.bytes += int64(n)
	}
	return d
}

func BenchmarkSeal(b *testing.B) { benchAEAD(b, false) }
func BenchmarkOpen(b *testing.B) { benchAEAD(b, true) }

func benchAEAD(b *testing.B, open bool) {
	for _, s := range benchSuites {
		b.Run(s.String(), func(b *testing.B) {
			for _, w := range benchshape.Workloads {
				b.Run(w.Name, func(b *testing.B) {
					d := newBenchData(b, s, w)
					b.Run("default", func(b *testing.B) { benchDefault(b, d, open) })
					for _, tier := range kernels.Tiers() {
						b.Run(tier.String(), func(b *testing.B) { benchPath(b, tier.Seal, tier.Open, d, open) })
					}
					b.Run("baseline", func(b *testing.B) { benchBaseline(b, d, open) })
				})
			}
		})
	}
}

// newOps returns the workload as ops for Seal (plaintexts) or Open (ciphertexts), each with a
// destination of its own.
func newOps(d *benchData, open bool) []kernels.Op {
	ops := make([]kernels.Op, len(d.pts))
	for i := range ops {
		ops[i] = kernels.Op{Key: d.keys[i%len(d.keys)], Nonce: d.nonces[i]}
		if open {
			ops[i].Src, ops[i].Dst = d.cts[i], make([]byte, len(d.pts[i]))
		} else {
			ops[i].Src, ops[i].Dst = d.pts[i], make([]byte, len(d.cts[i]))
		}
	}
	return ops
}

// benchPath runs the workload through one tier.
func benchPath(b *testing.B, seal func([]kernels.Op), openOps func([]kernels.Op) int, d *benchData, open bool) {
	ops := newOps(d, open)
	if open && openOps(ops) != 0 {
		b.Fatal("Open of genuine ciphertexts failed")
	}
	b.SetBytes(d.bytes)
	b.ReportAllocs()
	if open {
		for b.Loop() {
			openOps(ops)
		}
	} else {
		for b.Loop() {
			seal(ops)
		}
	}
	reportPerPacket(b, len(ops))
}

// benchDefault runs the default path (kernels.Seal and Open) and the per-packet baseline
// (benchBaseline's loop) alternately on the same workload, in blocks of at least 64 messages each,
// the first of the two alternating, so that both meet the same load of a shared machine. It reports
// the default path's ns/pkt, the baseline's (baseline-ns/pkt) and the ratio of their totals
// (vs-baseline, above 1 where the default path is faster): the figure `make bench` checks.
func benchDefault(b *testing.B, d *benchData, open bool) {
	ops := newOps(d, open)
	if open && kernels.Open(ops) != 0 {
		b.Fatal("Open of genuine ciphertexts failed")
	}
	ours := func() {
		if open {
			kernels.Open(ops)
		} else {
			kernels.Seal(ops)
		}
	}
	base := baselineLoop(b, d, open)
	benchshape.Paired(b, len(ops), ours, base)
}

// baselineLoop returns one pass of the baseline over the workload: the ops one packet at a time
// through the oracle's cipher.AEAD, into preallocated buffers, as a per-packet data plane
// (wireguard-go) does.
func baselineLoop(b *testing.B, d *benchData, open bool) func() {
	dst := make([][]byte, len(d.pts))
	for i := range dst {
		dst[i] = make([]byte, 0, len(d.cts[i]))
	}
	nk := len(d.oracles)
	if open {
		return func() {
			for i, ct := range d.cts {
				if _, err := d.oracles[i%nk].Open(dst[i][:0], d.nonces[i], ct, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return func() {
		for i, pt := range d.pts {
			d.oracles[i%nk].Seal(dst[i][:0], d.nonces[i], pt, nil)
		}
	}
}

// benchBaseline runs the same ops one packet at a time through the oracle's cipher.AEAD, into
// preallocated buffers, as a per-packet data plane (wireguard-go) does.
func benchBaseline(b *testing.B, d *benchData, open bool) {
	base := baselineLoop(b, d, open)
	b.SetBytes(d.bytes)
	b.ReportAllocs()
	for b.Loop() {
		base()
	}
	reportPerPacket(b, len(d.pts))
}

func reportPerPacket(b *testing.B, packets int) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(packets), "ns/pkt")
	}
}
