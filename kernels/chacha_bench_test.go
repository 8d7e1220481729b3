// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// ChaCha-family benchmarks of the workloads the SIMD tiers are tuned for, each beside
// golang.org/x/crypto/chacha20poly1305 doing the same work one message at a time in the same run.

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/wirebatch/wirebatch/internal/benchshape"
	"github.com/wirebatch/wirebatch/kernels"
)

// chachaWorkload is a batch shape: message lengths (cycled) and batch size.
type chachaWorkload struct {
	name string
	ops  int
	lens []int
	keys int
}

var chachaWorkloads = []chachaWorkload{
	{"64x1420", 64, []int{1420}, 1},
	{"64x1420-64keys", 64, []int{1420}, 64},
	{"64x64", 64, []int{64}, 1},
	// IMIX 7:4:1 of 64, 576 and 1500 bytes, interleaved as traffic would be.
	{"IMIX64", 64, []int{64, 576, 64, 64, 1500, 64, 576, 64, 64, 576, 64, 576}, 1},
	{"1x1420", 1, []int{1420}, 1},
	{"1x64", 1, []int{64}, 1},
	{"4x1420", 4, []int{1420}, 1},
	{"8x1420", 8, []int{1420}, 1},
	{"1x16384", 1, []int{16384}, 1},
}

func BenchmarkChaChaBatch(b *testing.B) {
	for _, w := range chachaWorkloads {
		total := 0
		for i := range w.ops {
			total += w.lens[i%len(w.lens)]
		}
		keyBytes := make([][]byte, w.keys)
		keys := make([]*kernels.Key, w.keys)
		for i := range keys {
			keyBytes[i] = make([]byte, 32)
			keyBytes[i][0] = byte(i)
			keys[i], _ = kernels.NewKey(kernels.ChaCha20Poly1305, keyBytes[i])
		}
		nonce := make([]byte, 12)
		ops := make([]kernels.Op, w.ops)
		for i := range ops {
			n := w.lens[i%len(w.lens)]
			buf := make([]byte, n+kernels.TagSize)
			ops[i] = kernels.Op{Key: keys[i%w.keys], Nonce: nonce, Src: buf[:n], Dst: buf}
		}
		for _, tier := range kernels.Tiers() {
			b.Run(fmt.Sprintf("%s/Seal/%v", w.name, tier), func(b *testing.B) {
				b.SetBytes(int64(total))
				b.ReportAllocs()
				for b.Loop() {
					tier.Seal(ops)
				}
			})
		}
		sealed := make([]kernels.Op, w.ops)
		for i := range ops {
			n := w.lens[i%len(w.lens)]
			buf := make([]byte, n+kernels.TagSize)
			kernels.Tiers()[0].Seal([]kernels.Op{{Key: ops[i].Key, Nonce: nonce, Src: buf[:n], Dst: buf}})
			sealed[i] = kernels.Op{Key: ops[i].Key, Nonce: nonce, Src: buf, Dst: make([]byte, n)}
		}
		for _, tier := range kernels.Tiers() {
			b.Run(fmt.Sprintf("%s/Open/%v", w.name, tier), func(b *testing.B) {
				b.SetBytes(int64(total))
				b.ReportAllocs()
				for b.Loop() {
					if tier.Open(sealed) != 0 {
						b.Fatal("open failed")
					}
				}
			})
		}
		aeads := make([]interface {
			Seal(dst, nonce, plaintext, ad []byte) []byte
			Open(dst, nonce, ciphertext, ad []byte) ([]byte, error)
		}, w.keys)
		for i := range aeads {
			aeads[i], _ = chacha20poly1305.New(keyBytes[i])
		}
		b.Run(w.name+"/Seal/xcrypto", func(b *testing.B) {
			b.SetBytes(int64(total))
			b.ReportAllocs()
			for b.Loop() {
				for i := range ops {
					aeads[i%w.keys].Seal(ops[i].Dst[:0], nonce, ops[i].Src, nil)
				}
			}
		})
		b.Run(w.name+"/Open/xcrypto", func(b *testing.B) {
			b.SetBytes(int64(total))
			b.ReportAllocs()
			for b.Loop() {
				for i := range sealed {
					if _, err := aeads[i%w.keys].Open(sealed[i].Dst[:0], nonce, sealed[i].Src, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkChaChaNone measures what the ChaCha family costs a batch that holds none of its ops: a
// batch of one AES-128-GCM op, on every tier, beside crypto/cipher sealing the same message.
func BenchmarkChaChaNone(b *testing.B) {
	raw := make([]byte, 16)
	key, _ := kernels.NewKey(kernels.AES128GCM, raw)
	nonce := make([]byte, 12)
	buf := make([]byte, 64+kernels.TagSize)
	ops := []kernels.Op{{Key: key, Nonce: nonce, Src: buf[:64], Dst: buf}}
	for _, tier := range kernels.Tiers() {
		b.Run("1x64/Seal/"+tier.String(), func(b *testing.B) {
			b.SetBytes(64)
			b.ReportAllocs()
			for b.Loop() {
				tier.Seal(ops)
			}
		})
	}
	block, _ := aes.NewCipher(raw)
	gcm, _ := cipher.NewGCM(block)
	b.Run("1x64/Seal/stdlib", func(b *testing.B) {
		b.SetBytes(64)
		b.ReportAllocs()
		for b.Loop() {
			gcm.Seal(buf[:0], nonce, buf[:64], nil)
		}
	})
}

// BenchmarkChaChaLengths runs the default path on 64 ChaCha20-Poly1305 ops of one message length
// with 8 bytes of AD, alternating with x/crypto on the same ops (benchshape.Paired), at lengths
// either side of where the default path changes kernel on some CPUs: within block 1 (64 B), within
// blocks 1-3 (192 B) and past them.
func BenchmarkChaChaLengths(b *testing.B) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	for _, n := range []int{16, 64, 65, 128, 192, 193, 256, 512} {
		ops := make([]kernels.Op, 64)
		for i := range ops {
			ops[i] = kernels.Op{Key: key, Nonce: make([]byte, 12), AD: make([]byte, 8),
				Src: make([]byte, n), Dst: make([]byte, n+kernels.TagSize)}
		}
		b.Run(fmt.Sprintf("%d/Seal", n), func(b *testing.B) { pairedWithAEAD(b, ops, aead, false) })
	}
}

// BenchmarkChaChaLong runs the default path on batches of long messages of one length (8 bytes of
// AD), alternating with x/crypto on the same ops (benchshape.Paired): where 16 messages streamed
// side by side in the lanes outgrow the caches, and the one-op path takes them instead on some
// CPUs (laneKernels.longAlone).
func BenchmarkChaChaLong(b *testing.B) {
	raw := make([]byte, 32)
	for _, s := range []kernels.Suite{kernels.ChaCha20Poly1305, kernels.XChaCha20Poly1305} {
		key, _ := kernels.NewKey(s, raw)
		aead, _ := chacha20poly1305.New(raw)
		if s == kernels.XChaCha20Poly1305 {
			aead, _ = chacha20poly1305.NewX(raw)
		}
		for _, n := range []int{8 << 10, 16 << 10, 32 << 10, 64 << 10} {
			for _, count := range []int{16, 64} {
				seal, open := sealedOps(key, count, n, 8)
				pairedSealOpen(b, fmt.Sprintf("%v/%dx%d", s, count, n), seal, open, aead)
			}
		}
	}
}

// BenchmarkChaChaLongAD runs the default path on batches of 1 and 4 ops with long AD, alternating
// with x/crypto on the same ops (benchshape.Paired): batches this small run op by op, and where the
// MAC input is mostly AD some CPUs' one-op paths (oneOps.adMin) beat x/crypto's scalar MAC.
func BenchmarkChaChaLongAD(b *testing.B) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	for _, ad := range []int{256, 768, 2048} {
		for _, n := range []int{64, 700, 2048} {
			for _, count := range []int{1, 4} {
				seal, open := sealedOps(key, count, n, ad)
				pairedSealOpen(b, fmt.Sprintf("%dx%d+%dAD", count, n, ad), seal, open, aead)
			}
		}
	}
}

// BenchmarkChaChaRemainderAD runs the default path on batches of 12 ChaCha20-Poly1305 ops of 1500
// and 3000 bytes with 256 and 512 bytes of AD, alternating with x/crypto on the same ops
// (benchshape.Paired): a remainder of just minOps that some CPUs run op by op on the fused long
// kernel, whose Seals with longer AD stay in the lanes (longSealLanesAD).
func BenchmarkChaChaRemainderAD(b *testing.B) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	for _, ad := range []int{256, 512} {
		for _, n := range []int{1500, 3000} {
			seal, open := sealedOps(key, 12, n, ad)
			pairedSealOpen(b, fmt.Sprintf("12x%d+%dAD", n, ad), seal, open, aead)
		}
	}
}

// BenchmarkChaChaFewOps runs the default path on batches of 1 and 4 ChaCha20-Poly1305 ops of
// 128-1104 bytes (8 bytes of AD), alternating with x/crypto on the same ops (benchshape.Paired):
// batches this small run op by op, where some CPUs' fused kernels and one-op paths (chachaOneOp;
// oneOps.sealMin, openMin and smallMin) beat x/crypto below a full-sized packet.
func BenchmarkChaChaFewOps(b *testing.B) {
	pairedBatches(b, []int{1, 4}, []int{128, 256, 384, 640, 800, 960, 1104, 2048})
}

// BenchmarkChaChaEight runs the default path on batches of 8 and 12 ChaCha20-Poly1305 ops of one
// length from a mid-sized message to past a full-sized packet (8 bytes of AD), alternating with
// x/crypto on the same ops (benchshape.Paired): too few to fill the lanes one op a lane, which some
// CPUs run with each op's key stream in two lanes (uniformLanes) rather than op by op.
func BenchmarkChaChaEight(b *testing.B) {
	pairedBatches(b, []int{8, 12}, []int{704, 1200, 1600, 2048, 3000, 4096})
}

// BenchmarkChaChaSealChain runs the default path on batches of 3 to 13 ChaCha20-Poly1305 ops of a
// full-size packet's length and on lone long messages (8 bytes of AD), alternating with x/crypto on
// the same ops (benchshape.Paired): the Seals that some CPUs run with each op's MAC beside the key
// stream of the ops (or the passes) after it (pipeSeals, chachaSealLong24); their Opens run op by
// op.
func BenchmarkChaChaSealChain(b *testing.B) {
	pairedBatches(b, []int{3, 4, 7, 10, 13}, []int{1000, 1420})
	pairedBatches(b, []int{1}, []int{4096, 16 << 10, 64 << 10})
}

// BenchmarkChaChaUniform runs the default path on batches of 32 and 64 ChaCha20-Poly1305 ops of one
// length (8 bytes of AD), alternating with x/crypto on the same ops (benchshape.Paired): the shapes
// that some CPUs send to the lanes' long groups where the rest of their batches run on the standard
// library (uniformLanes).
func BenchmarkChaChaUniform(b *testing.B) {
	pairedBatches(b, []int{32, 64}, []int{128, 512, 1024})
}

// BenchmarkChaChaPipeline runs the default path on batches of two to four lane groups of long
// ChaCha20-Poly1305 messages (8 bytes of AD), alternating with x/crypto on the same ops
// (benchshape.Paired): where some CPUs pipeline the groups, one group's MAC beside another's stream
// (stitchedGroups).
func BenchmarkChaChaPipeline(b *testing.B) {
	pairedBatches(b, []int{32, 48, 64}, []int{1152, 1420, 4096})
}

// BenchmarkChaChaRegsPipeline runs the default path's Seal on batches of 4 to 30 ChaCha20-Poly1305
// ops of one length around a full-size packet's, without AD and with 16 bytes of it, alternating
// with x/crypto on the same ops (benchshape.Paired): the shapes that CPUs without AVX-512 seal in
// the AVX2 single-message pipeline (pipeSeals) or just outside it.
func BenchmarkChaChaRegsPipeline(b *testing.B) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	for _, ad := range []int{0, 16} {
		for _, n := range []int{1344, 1376, 1408, 1420, 1472, 1600} {
			for _, count := range []int{4, 8, 12, 30} {
				seal, _ := sealedOps(key, count, n, ad)
				b.Run(fmt.Sprintf("ad%d/%dx%d", ad, count, n), func(b *testing.B) { pairedWithAEAD(b, seal, aead, false) })
			}
		}
	}
}

// BenchmarkChaChaBatchSizes runs the default path on ChaCha20-Poly1305 batches of sizes that are not
// multiples of the 16 lanes, alternating with x/crypto on the same ops (benchshape.Paired): the
// lanes cost as much for a few ops as for 16, so what a batch leaves beyond its whole groups
// decides how it fares.
func BenchmarkChaChaBatchSizes(b *testing.B) {
	pairedBatches(b, []int{12, 16, 20, 24, 28, 33, 40, 47}, []int{100, 448, 512, 1420})
}

// BenchmarkChaChaRandomLengths runs the default path on ChaCha20-Poly1305 batches of lengths drawn
// at random from a range (8 bytes of AD), alternating with x/crypto on the same ops
// (benchshape.Paired): batches of many lengths, which the lanes can run only in their segments.
func BenchmarkChaChaRandomLengths(b *testing.B) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	for _, c := range []struct{ count, min, max int }{
		{16, 100, 200}, {64, 100, 200}, {64, 65, 300}, {32, 65, 1500}, {64, 65, 1500}, {64, 1000, 1500},
		{16, 513, 1400}, {32, 513, 1400}, {64, 1, 64},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		lens := make([]int, c.count)
		for i := range lens {
			lens[i] = c.min + rng.IntN(c.max-c.min+1)
		}
		seal, open := sealedOpsOf(key, lens, 8)
		pairedSealOpen(b, fmt.Sprintf("%dx%d-%d", c.count, c.min, c.max), seal, open, aead)
	}
}

// BenchmarkChaChaShapes runs the default path on ChaCha20-Poly1305 batches of a few shapes, 8 bytes
// of AD, in an order shuffled as traffic would be, alternating with x/crypto on the same ops
// (benchshape.Paired): IMIX, full-sized packets with ACK-sized or small ones among them as a
// tunnel's batches hold them, a GSO batch whose last packet is shorter, short messages of two
// lengths, and shapes that fill groups beside ops of random lengths. The measurement behind
// laneKernels.shapeGroups, shapeGroupMin, route.shapes and mostGrouped.
func BenchmarkChaChaShapes(b *testing.B) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	rng := rand.New(rand.NewPCG(5, 6))
	of := func(runs ...[2]int) []int { // runs of {count, length}; length 0: random, 65-1500 B
		var lens []int
		for _, r := range runs {
			for range r[0] {
				n := r[1]
				if n == 0 {
					n = 65 + rng.IntN(1436)
				}
				lens = append(lens, n)
			}
		}
		rng.Shuffle(len(lens), func(i, j int) { lens[i], lens[j] = lens[j], lens[i] })
		return lens
	}
	for _, c := range []struct {
		name string
		lens []int
	}{
		{"imix64", benchshape.IMIX64()},
		{"20x1420+44x64", of([2]int{20, 1420}, [2]int{44, 64})},
		{"48x1420+16x64", of([2]int{48, 1420}, [2]int{16, 64})},
		{"30x1420+30x100", of([2]int{30, 1420}, [2]int{30, 100})},
		{"16x1420+16x576+16x64", of([2]int{16, 1420}, [2]int{16, 576}, [2]int{16, 64})},
		{"16x1420+48x65-1500", of([2]int{16, 1420}, [2]int{48, 0})},
		{"63x1420+1x300", of([2]int{63, 1420}, [2]int{1, 300})},
		{"31x1420+1x300", of([2]int{31, 1420}, [2]int{1, 300})},
		{"63x1200+1x500", of([2]int{63, 1200}, [2]int{1, 500})},
		{"32x1200+8x300", of([2]int{32, 1200}, [2]int{8, 300})},
		{"36x1420+4x300", of([2]int{36, 1420}, [2]int{4, 300})},
		{"32x512+32x200", of([2]int{32, 512}, [2]int{32, 200})},
		{"16x300+16x100", of([2]int{16, 300}, [2]int{16, 100})},
		{"48x200+16x65-1500", of([2]int{48, 200}, [2]int{16, 0})},
	} {
		seal, open := sealedOpsOf(key, c.lens, 8)
		pairedSealOpen(b, c.name, seal, open, aead)
	}
}

// BenchmarkChaChaRandomAD runs the default path on ChaCha20-Poly1305 batches of one message length
// with AD of lengths drawn at random, alternating with x/crypto on the same ops (benchshape.Paired):
// as with many message lengths, the lanes can run them only in their segments.
func BenchmarkChaChaRandomAD(b *testing.B) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	for _, c := range []struct{ count, n, maxAD int }{{64, 100, 64}, {64, 1420, 64}, {64, 1420, 1024}, {16, 300, 1024}} {
		rng := rand.New(rand.NewPCG(3, 4))
		lens := make([]int, c.count)
		for i := range lens {
			lens[i] = c.n
		}
		seal, open := sealedOpsOf(key, lens, 0)
		for i := range seal {
			seal[i].AD = make([]byte, rng.IntN(c.maxAD+1))
			open[i].AD = seal[i].AD
		}
		kernels.Seal(seal)
		pairedSealOpen(b, fmt.Sprintf("%dx%d+0-%dAD", c.count, c.n, c.maxAD), seal, open, aead)
	}
}

// pairedBatches runs pairedSealOpen on ChaCha20-Poly1305 batches of each count of ops of each
// length of lens, with 8 bytes of AD, as the sub-benchmarks <count>x<length>/Seal and /Open.
func pairedBatches(b *testing.B, counts, lens []int) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	for _, n := range lens {
		for _, count := range counts {
			seal, open := sealedOps(key, count, n, 8)
			pairedSealOpen(b, fmt.Sprintf("%dx%d", count, n), seal, open, aead)
		}
	}
}

// BenchmarkChaChaMixed runs the default path on ChaCha20-Poly1305 batches of short and 1420-byte
// messages interleaved, as a tunnel's batches hold ACKs among full packets, alternating with
// x/crypto on the same ops (benchshape.Paired): a short message that shares a lane group with long
// ones holds its lane for their whole pass.
func BenchmarkChaChaMixed(b *testing.B) {
	raw := make([]byte, 32)
	key, _ := kernels.NewKey(kernels.ChaCha20Poly1305, raw)
	aead, _ := chacha20poly1305.New(raw)
	for _, short := range []int{64, 150} {
		for _, mix := range [][2]int{{8, 8}, {5, 25}, {10, 20}, {15, 15}, {20, 20}} {
			lens := make([]int, mix[0]+mix[1])
			for i := range lens {
				lens[i] = 1420
				if i*mix[0]/len(lens) != (i+1)*mix[0]/len(lens) {
					lens[i] = short
				}
			}
			seal, open := sealedOpsOf(key, lens, 0)
			pairedSealOpen(b, fmt.Sprintf("%dx%d+%dx1420", mix[0], short, mix[1]), seal, open, aead)
		}
	}
}

// sealedOps returns count ops sealing n-byte messages with ad bytes of AD under key, nonces differing
// in their first byte, and the ops opening what those seal, sealed already.
func sealedOps(key *kernels.Key, count, n, ad int) (seal, open []kernels.Op) {
	lens := make([]int, count)
	for i := range lens {
		lens[i] = n
	}
	return sealedOpsOf(key, lens, ad)
}

// sealedOpsOf is sealedOps with a message of each length of lens.
func sealedOpsOf(key *kernels.Key, lens []int, ad int) (seal, open []kernels.Op) {
	seal, open = make([]kernels.Op, len(lens)), make([]kernels.Op, len(lens))
	for i, n := range lens {
		nonce, ct := make([]byte, key.Suite().NonceSize()), make([]byte, n+kernels.TagSize)
		nonce[0] = byte(i)
		seal[i] = kernels.Op{Key: key, Nonce: nonce, AD: make([]byte, ad), Src: make([]byte, n), Dst: ct}
		open[i] = kernels.Op{Key: key, Nonce: nonce, AD: seal[i].AD, Src: ct, Dst: make([]byte, n)}
	}
	kernels.Seal(seal)
	return seal, open
}

// pairedSealOpen runs pairedWithAEAD on seal and on open as the sub-benchmarks name/Seal and
// name/Open.
func pairedSealOpen(b *testing.B, name string, seal, open []kernels.Op, aead cipher.AEAD) {
	b.Run(name+"/Seal", func(b *testing.B) { pairedWithAEAD(b, seal, aead, false) })
	b.Run(name+"/Open", func(b *testing.B) { pairedWithAEAD(b, open, aead, true) })
}

// pairedWithAEAD times the default path's Seal (or Open) of ops against aead's, one op at a time on
// the same ops, alternating (benchshape.Paired).
func pairedWithAEAD(b *testing.B, ops []kernels.Op, aead cipher.AEAD, open bool) {
	if !open {
		benchshape.Paired(b, len(ops), func() { kernels.Seal(ops) }, func() {
			for i := range ops {
				aead.Seal(ops[i].Dst[:0], ops[i].Nonce, ops[i].Src, ops[i].AD)
			}
		})
		return
	}
	benchshape.Paired(b, len(ops), func() {
		if kernels.Open(ops) != 0 {
			b.Fatal("Open failed")
		}
	}, func() {
		for i := range ops {
			if _, err := aead.Open(ops[i].Dst[:0], ops[i].Nonce, ops[i].Src, ops[i].AD); err != nil {
				b.Fatal(err)
			}
		}
	})
}
