// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// AES-GCM throughput of every tier side by side with crypto/cipher (the baseline, one message per
// call as a data plane would use it) in the same run. Names: BenchmarkGCM/<workload>/<impl>/<dir>;
// ns/pkt is the time per message.

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/kernels"
)

// gcmWorkload is a batch shape: message sizes (cycled over the batch), key size and key count.
type gcmWorkload struct {
	name  string
	suite kernels.Suite
	sizes []int
	ops   int
	keys  int
}

// imix is the simple IMIX (64, 576 and 1500 bytes in 7:4:1), shuffled over 12 messages.
var imix = []int{64, 576, 64, 1500, 64, 576, 64, 64, 576, 64, 576, 64}

var gcmWorkloads = []gcmWorkload{
	{"64x1420/AES-128", kernels.AES128GCM, []int{1420}, 64, 1},
	{"64x1420/AES-256", kernels.AES256GCM, []int{1420}, 64, 1},
	{"64x1420/AES-128/64keys", kernels.AES128GCM, []int{1420}, 64, 64},
	{"64x64/AES-128", kernels.AES128GCM, []int{64}, 64, 1},
	{"IMIX64/AES-128", kernels.AES128GCM, imix, 64, 1},
	{"1x1420/AES-128", kernels.AES128GCM, []int{1420}, 1, 1},
	{"1x64/AES-128", kernels.AES128GCM, []int{64}, 1, 1},
}

// gcmBatch is a prepared batch: Seal ops and the matching Open ops.
type gcmBenchBatch struct {
	seal, open []kernels.Op
	std        []cipher.AEAD
	bytes      int
}

func newGCMBenchBatch(b *testing.B, w gcmWorkload) *gcmBenchBatch {
	r := newRand(b)
	keys := make([]*kernels.Key, w.keys)
	std := make([]cipher.AEAD, w.keys)
	for i := range keys {
		raw := randBytes(r, w.suite.KeySize())
		k, err := kernels.NewKey(w.suite, raw)
		if err != nil {
			b.Fatal(err)
		}
		blk, _ := aes.NewCipher(raw)
		g, _ := cipher.NewGCM(blk)
		keys[i], std[i] = k, g
	}
	bb := &gcmBenchBatch{seal: make([]kernels.Op, w.ops), open: make([]kernels.Op, w.ops)}
	for i := range bb.seal {
		n := w.sizes[i%len(w.sizes)]
		k := keys[i%len(keys)]
		nonce := randBytes(r, 12)
		pt := randBytes(r, n)
		ct := make([]byte, n+kernels.TagSize)
		bb.seal[i] = kernels.Op{Key: k, Nonce: nonce, Src: pt, Dst: ct}
		bb.open[i] = kernels.Op{Key: k, Nonce: nonce, Src: ct, Dst: make([]byte, n)}
		bb.std = append(bb.std, std[i%len(std)])
		bb.bytes += n
	}
	kernels.Generic.Seal(bb.seal)
	return bb
}

func BenchmarkGCM(b *testing.B) {
	for _, w := range gcmWorkloads {
		b.Run(w.name, func(b *testing.B) {
			bb := newGCMBenchBatch(b, w)
			report := func(b *testing.B) {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(bb.seal)), "ns/pkt")
			}
			for _, dir := range []string{"seal", "open"} {
				b.Run("stdlib/"+dir, func(b *testing.B) {
					b.SetBytes(int64(bb.bytes))
					b.ReportAllocs()
					for b.Loop() {
						for i := range bb.seal {
							s, o := &bb.seal[i], &bb.open[i]
							if dir == "seal" {
								bb.std[i].Seal(s.Dst[:0], s.Nonce, s.Src, nil)
							} else if _, err := bb.std[i].Open(o.Dst[:0], o.Nonce, o.Src, nil); err != nil {
								b.Fatal(err)
							}
						}
					}
					report(b)
				})
				for _, tier := range kernels.Tiers() {
					b.Run(tier.String()+"/"+dir, func(b *testing.B) {
						b.SetBytes(int64(bb.bytes))
						b.ReportAllocs()
						for b.Loop() {
							if dir == "seal" {
								tier.Seal(bb.seal)
							} else if tier.Open(bb.open) != 0 {
								b.Fatal("Open failed")
							}
						}
						report(b)
					})
				}
			}
		})
	}
}

// BenchmarkGCMPaired runs crypto/cipher and a tier alternately on the same batch (repeated to at least
// 64 messages, so that the clock's resolution does not matter), one sample each per iteration, and
// reports the minimum time per message of each and their ratio (speedup): on a
// shared machine the minima of interleaved samples are far steadier than the means of separate
// benchmarks, which other processes inflate unevenly. Run with a fixed count, e.g.
// -bench GCMPaired -benchtime=2000x.
func BenchmarkGCMPaired(b *testing.B) {
	for _, w := range gcmWorkloads {
		bb := newGCMBenchBatch(b, w)
		for _, tier := range kernels.Tiers() {
			if tier == kernels.Generic {
				continue
			}
			for _, dir := range []string{"seal", "open"} {
				b.Run(w.name+"/"+tier.String()+"/"+dir, func(b *testing.B) {
					std := func() {
						for i := range bb.seal {
							s, o := &bb.seal[i], &bb.open[i]
							if dir == "seal" {
								bb.std[i].Seal(s.Dst[:0], s.Nonce, s.Src, nil)
							} else if _, err := bb.std[i].Open(o.Dst[:0], o.Nonce, o.Src, nil); err != nil {
								b.Fatal(err)
							}
						}
					}
					ours := func() {
						if dir == "seal" {
							tier.Seal(bb.seal)
						} else if tier.Open(bb.open) != 0 {
							b.Fatal("Open failed")
						}
					}
					reps := (64 + len(bb.seal) - 1) / len(bb.seal)
					minStd, minOurs := time.Duration(1<<62), time.Duration(1<<62)
					for b.Loop() {
						t0 := time.Now()
						for range reps {
							std()
						}
						t1 := time.Now()
						for range reps {
							ours()
						}
						t2 := time.Now()
						minStd, minOurs = min(minStd, t1.Sub(t0)), min(minOurs, t2.Sub(t1))
					}
					n := float64(reps * len(bb.seal))
					b.ReportMetric(float64(minStd.Nanoseconds())/n, "stdlib-ns/pkt")
					b.ReportMetric(float64(minOurs.Nanoseconds())/n, "ns/pkt")
					b.ReportMetric(float64(minStd)/float64(minOurs), "x-stdlib")
				})
			}
		}
	}
}

// BenchmarkGCMSmallBatches runs the default path on batches of two to five AES-GCM ops with 13 bytes
// of AD (a TLS record header's length), alternating with crypto/cipher on the same ops
// (benchshape.Paired): batches below a small-op lane group run op by op, where what the batch
// bookkeeping costs weighs most.
func BenchmarkGCMSmallBatches(b *testing.B) {
	for _, s := range []kernels.Suite{kernels.AES128GCM, kernels.AES256GCM} {
		raw := make([]byte, s.KeySize())
		key, _ := kernels.NewKey(s, raw)
		block, _ := aes.NewCipher(raw)
		aead, _ := cipher.NewGCM(block)
		for _, n := range []int{16, 64, 512, 1420} {
			for _, count := range []int{2, 3, 5} {
				seal, open := sealedOps(key, count, n, 13)
				pairedSealOpen(b, fmt.Sprintf("%v/%dx%d", s, count, n), seal, open, aead)
			}
		}
	}
}
