package kernels_test

// Benchmarks: every suite and workload on every tier in Tiers(), beside the per-packet baseline
// (golang.org/x/crypto/chacha20poly1305 New/NewX, crypto/cipher GCM) on the same data in the same
// run. Names parse as Benchmark{Seal,Open}/<suite>/<workload>/<tier or "baseline">; `make bench`
// pipes the output through internal/benchtable for a ns/packet, GB/s and speed-up table.
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
					b.Run("default", func(b *testing.B) { benchPath(b, kernels.Seal, kernels.Open, d, open) })
					for _, tier := range kernels.Tiers() {
						b.Run(tier.String(), func(b *testing.B) { benchPath(b, tier.Seal, tier.Open, d, open) })
					}
					b.Run("baseline", func(b *testing.B) { benchBaseline(b, d, open) })
				})
			}
		})
	}
}

// benchPath runs the workload through one path: the default (kernels.Seal and Open) or a tier's.
func benchPath(b *testing.B, seal func([]kernels.Op), openOps func([]kernels.Op) int, d *benchData, open bool) {
	ops := make([]kernels.Op, len(d.pts))
	for i := range ops {
		ops[i] = kernels.Op{Key: d.keys[i%len(d.keys)], Nonce: d.nonces[i]}
		if open {
			ops[i].Src, ops[i].Dst = d.cts[i], make([]byte, len(d.pts[i]))
		} else {
			ops[i].Src, ops[i].Dst = d.pts[i], make([]byte, len(d.cts[i]))
		}
	}
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

// benchBaseline runs the same ops one packet at a time through the oracle's cipher.AEAD, into
// preallocated buffers, as a per-packet data plane (wireguard-go) does.
func benchBaseline(b *testing.B, d *benchData, open bool) {
	dst := make([][]byte, len(d.pts))
	for i := range dst {
		dst[i] = make([]byte, 0, len(d.cts[i]))
	}
	nk := len(d.oracles)
	b.SetBytes(d.bytes)
	b.ReportAllocs()
	if open {
		for b.Loop() {
			for i, ct := range d.cts {
				if _, err := d.oracles[i%nk].Open(dst[i][:0], d.nonces[i], ct, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	} else {
		for b.Loop() {
			for i, pt := range d.pts {
				d.oracles[i%nk].Seal(dst[i][:0], d.nonces[i], pt, nil)
			}
		}
	}
	reportPerPacket(b, len(d.pts))
}

func reportPerPacket(b *testing.B, packets int) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(packets), "ns/pkt")
	}
}
