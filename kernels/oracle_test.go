// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Random differential tests: the default path and every tier in Tiers() against crypto/cipher's GCM
// and golang.org/x/crypto/chacha20poly1305 (the oracle) and against the Generic tier, on mixed batches
// shaped like a data plane's: all suites and several keys in one call, packet-sized messages with
// a tail of GSO-sized ones, in place and not, at every alignment. Open must take the results back,
// reject every tampered op with its Dst zeroed, and count exactly those.

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
)

// diffOp is one generated operation with the oracle's answer.
type diffOp struct {
	k       *testKey
	nonce   []byte
	ad      []byte
	pt      []byte
	want    []byte // oracle ciphertext||tag
	inPlace bool
	offs    [4]int // alignment of Nonce, AD, Src, Dst inside their buffers
}

func genDiffOps(r *rand.Rand, keys []*testKey, n, maxLen int) []diffOp {
	ops := make([]diffOp, n)
	for i := range ops {
		k := keys[r.IntN(len(keys))]
		d := diffOp{
			k:       k,
			nonce:   randBytes(r, k.suite.NonceSize()),
			ad:      randBytes(r, r.IntN(65)),
			pt:      randBytes(r, packetLen(r, maxLen)),
			inPlace: r.IntN(2) == 0,
		}
		for j := range d.offs {
			d.offs[j] = r.IntN(8)
		}
		d.want = k.sealOracle(d.nonce, d.ad, d.pt)
		ops[i] = d
	}
	return ops
}

// sealOps lays out ds as Seal ops: inputs copied to unaligned buffers, Dst pre-filled with the guard
// pattern (or, in place, the plaintext followed by it).
func sealOps(ds []diffOp) []kernels.Op {
	ops := make([]kernels.Op, len(ds))
	for i, d := range ds {
		op := kernels.Op{Key: d.k.key, Nonce: placed(d.nonce, d.offs[0]), AD: placed(d.ad, d.offs[1])}
		if d.inPlace {
			buf := unaligned(len(d.pt)+kernels.TagSize, d.offs[2])
			copy(buf, d.pt)
			op.Src, op.Dst = buf[:len(d.pt)], buf
		} else {
			op.Src = placed(d.pt, d.offs[2])
			op.Dst = unaligned(len(d.pt)+kernels.TagSize, d.offs[3])
		}
		ops[i] = op
	}
	return ops
}

// checkSeal seals ds on path and compares every op with the oracle; it returns the ops.
func checkSeal(t *testing.T, path batchPath, ds []diffOp) []kernels.Op {
	t.Helper()
	ops := sealOps(ds)
	path.Seal(ops)
	for i, d := range ds {
		op := &ops[i]
		if !bytes.Equal(op.Dst, d.want) {
			t.Errorf("%v Seal op %d/%d (%v, len %d, AD %d, in place %v, offsets %v): output differs from the oracle at byte %d",
				path, i, len(ds), d.k.suite, len(d.pt), len(d.ad), d.inPlace, d.offs, firstDiff(op.Dst, d.want))
		}
		if !guardsIntact(op.Dst) {
			t.Errorf("%v Seal op %d (%v, len %d): wrote past the end of Dst", path, i, d.k.suite, len(d.pt))
		}
		if !bytes.Equal(op.Nonce, d.nonce) || !bytes.Equal(op.AD, d.ad) || (!d.inPlace && !bytes.Equal(op.Src, d.pt)) {
			t.Errorf("%v Seal op %d (%v): modified its Nonce, AD or Src", path, i, d.k.suite)
		}
	}
	return ops
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Tampering applied to an op before Open.
const (
	tamperNone = iota
	tamperCiphertext
	tamperTag
	tamperNonce
	tamperAD
	tamperShort // ciphertext shorter than a tag
	numTamper
)

var tamperNames = [numTamper]string{"none", "ciphertext", "tag", "nonce", "AD", "short"}

// checkOpen opens the oracle's ciphertexts of ds on path, about a third of them tampered with, and
// checks the results, the failure count and that no rejected op releases plaintext.
func checkOpen(t *testing.T, path batchPath, ds []diffOp, r *rand.Rand) {
	t.Helper()
	ops := make([]kernels.Op, len(ds))
	tamper := make([]int, len(ds))
	wantFailed := 0
	for i, d := range ds {
		nonce, ad, ct := bytes.Clone(d.nonce), bytes.Clone(d.ad), bytes.Clone(d.want)
		if r.IntN(3) == 0 {
			tamper[i] = 1 + r.IntN(numTamper-1)
		}
		switch tamper[i] {
		case tamperCiphertext, tamperTag:
			pos := len(d.pt) + r.IntN(kernels.TagSize)
			if tamper[i] == tamperCiphertext && len(d.pt) > 0 {
				pos = r.IntN(len(d.pt))
			} else {
				tamper[i] = tamperTag
			}
			ct[pos] ^= 1 << r.IntN(8)
		case tamperNonce:
			nonce[r.IntN(len(nonce))] ^= 1 << r.IntN(8)
		case tamperAD:
			if len(ad) == 0 || r.IntN(4) == 0 {
				ad = append(ad, 0) // a longer AD must fail too: the lengths are authenticated
			} else {
				ad[r.IntN(len(ad))] ^= 1 << r.IntN(8)
			}
		case tamperShort:
			ct = ct[:r.IntN(kernels.TagSize)]
		}
		if tamper[i] != tamperNone {
			wantFailed++
		}

		op := kernels.Op{Key: d.k.key, Nonce: placed(nonce, d.offs[0]), AD: placed(ad, d.offs[1]), Err: errSentinel}
		switch {
		case tamper[i] == tamperShort:
			// Dst's length is free when Src cannot hold a tag; it must come back zeroed.
			op.Src = placed(ct, d.offs[2])
			op.Dst = unaligned(r.IntN(3), d.offs[3])
		case d.inPlace:
			op.Src = placed(ct, d.offs[2])
			op.Dst = op.Src[:len(ct)-kernels.TagSize]
		default:
			op.Src = placed(ct, d.offs[2])
			op.Dst = unaligned(len(ct)-kernels.TagSize, d.offs[3])
		}
		ops[i] = op
	}

	if failed := path.Open(ops); failed != wantFailed {
		t.Errorf("%v Open of %d ops: failed = %d, want %d", path, len(ops), failed, wantFailed)
	}
	for i, d := range ds {
		op := &ops[i]
		what := func() string { return tamperNames[tamper[i]] }
		if tamper[i] != tamperNone {
			if op.Err != kernels.ErrAuth || !isZero(op.Dst) {
				t.Errorf("%v Open op %d (%v, len %d, tampered %s): Err = %v, Dst zeroed = %v; want ErrAuth and zeroes",
					path, i, d.k.suite, len(d.pt), what(), op.Err, isZero(op.Dst))
			}
			continue
		}
		if op.Err != nil || !bytes.Equal(op.Dst, d.pt) {
			t.Errorf("%v Open op %d (%v, len %d, AD %d, in place %v, offsets %v): Err = %v, plaintext differs at byte %d",
				path, i, d.k.suite, len(d.pt), len(d.ad), d.inPlace, d.offs, op.Err, firstDiff(op.Dst, d.pt))
		}
		if !d.inPlace && (!guardsIntact(op.Dst) || !bytes.Equal(op.Src, d.want)) {
			t.Errorf("%v Open op %d (%v, len %d): wrote past Dst or modified Src", path, i, d.k.suite, len(d.pt))
		}
	}
}

func TestDifferential(t *testing.T) {
	// Rounds of up to 64 ops averaging ~3.5 KB: about 20 MB per path in a normal run (0.3 s on Generic).
	rounds, maxLen := scaled(200), 66000
	if raceEnabled || testing.Short() {
		maxLen = 20000
	}
	for _, path := range batchPaths() {
		t.Run(path.String(), func(t *testing.T) {
			r := newRand(t)
			keys := keyPool(t, r, 3)
			for range rounds {
				ds := genDiffOps(r, keys, 1+r.IntN(64), maxLen)
				got := checkSeal(t, path, ds)
				if path != kernels.Generic {
					// The same batch on the Generic tier: beside an oracle mismatch above, this
					// tells a bug of the SIMD kernels or the routes from one shared with the
					// portable code.
					ref := sealOps(ds)
					kernels.Generic.Seal(ref)
					for i := range ref {
						if !bytes.Equal(got[i].Dst, ref[i].Dst) {
							t.Errorf("%v and Generic differ on op %d (%v, len %d)", path, i, ds[i].k.suite, len(ds[i].pt))
						}
					}
				}
				checkOpen(t, path, ds, r)
				if t.Failed() {
					return
				}
			}
		})
	}
}

// TestBatchShapes sweeps what SIMD tiers and the default path's routes special-case: batch sizes
// around lane counts (8, 16) and their multiples and around the routes' bounds (12 and 48 ops on
// Zen 4, kernels/dispatch.go), equal lengths in every lane, and lengths at each block boundary
// (16-byte GHASH and AES blocks, 64-byte ChaCha20 blocks, multi-block strides) mixed in one batch.
func TestBatchShapes(t *testing.T) {
	var boundary []int
	for n := 0; n <= 130; n++ {
		boundary = append(boundary, n)
	}
	for _, b := range []int{192, 256, 320, 384, 448, 512, 1024, 2048, 4096} {
		boundary = append(boundary, b-17, b-16, b-15, b-1, b, b+1, b+15, b+16, b+17)
	}
	for _, path := range batchPaths() {
		t.Run(path.String(), func(t *testing.T) {
			r := newRand(t)
			keys := keyPool(t, r, 2)
			for _, s := range allSuites {
				// One suite, one key, n equal lengths: the "all lanes busy, no retire" path.
				for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 15, 16, 17, 24, 31, 32, 33, 47, 48, 49, 64, 65, 100} {
					k := newTestKey(t, s, randBytes(r, s.KeySize()))
					ds := make([]diffOp, n)
					length := []int{0, 1, 64, 100, 1420}[n%5]
					for i := range ds {
						ds[i] = diffOp{k: k, nonce: randBytes(r, s.NonceSize()), ad: randBytes(r, 13), pt: randBytes(r, length)}
						ds[i].want = k.sealOracle(ds[i].nonce, ds[i].ad, ds[i].pt)
					}
					checkSeal(t, path, ds)
					checkOpen(t, path, ds, r)
				}
			}
			// Every boundary length of every suite in one shuffled batch.
			var ds []diffOp
			for _, k := range keys {
				for _, n := range boundary {
					d := diffOp{k: k, nonce: randBytes(r, k.suite.NonceSize()), ad: randBytes(r, r.IntN(33)), pt: randBytes(r, n), inPlace: n%2 == 0}
					d.offs = [4]int{n % 8, (n + 1) % 8, (n + 2) % 8, (n + 3) % 8}
					d.want = k.sealOracle(d.nonce, d.ad, d.pt)
					ds = append(ds, d)
				}
			}
			r.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
			checkSeal(t, path, ds)
			checkOpen(t, path, ds, r)
		})
	}
}

// TestConcurrentKeys uses the same Keys from several goroutines at once: Key is documented as
// immutable and safe for concurrent use, which the race detector checks here.
func TestConcurrentKeys(t *testing.T) {
	r := newRand(t)
	keys := keyPool(t, r, 1)
	const workers = 4
	batches := make([][]diffOp, workers)
	for w := range batches {
		batches[w] = genDiffOps(r, keys, 32, 1500)
	}
	for _, path := range batchPaths() {
		var wg sync.WaitGroup
		outs := make([][]kernels.Op, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range scaled(8) {
					ops := sealOps(batches[w])
					path.Seal(ops)
					outs[w] = ops
				}
			}()
		}
		wg.Wait()
		for w, ops := range outs {
			for i := range ops {
				if !bytes.Equal(ops[i].Dst, batches[w][i].want) {
					t.Errorf("%v: concurrent Seal, worker %d op %d differs from the oracle", path, w, i)
				}
			}
		}
	}
}

// TestSharedInputs: ops only read Nonce, AD and Src, so one batch may point many ops at the same
// input memory (a broadcast sealed under every peer's key). Every op must still match the oracle.
func TestSharedInputs(t *testing.T) {
	r := newRand(t)
	keys := keyPool(t, r, 4)
	nonce, ad, pt := randBytes(r, 24), randBytes(r, 29), randBytes(r, 1000)
	for _, path := range batchPaths() {
		var ops []kernels.Op
		var want [][]byte
		for i, k := range keys {
			n := 1000 - 37*i // a different length over the same bytes for each op
			ops = append(ops, kernels.Op{Key: k.key, Nonce: nonce[:k.suite.NonceSize()], AD: ad, Src: pt[:n], Dst: make([]byte, n+kernels.TagSize)})
			want = append(want, k.sealOracle(nonce[:k.suite.NonceSize()], ad, pt[:n]))
		}
		path.Seal(ops)
		for i := range ops {
			if !bytes.Equal(ops[i].Dst, want[i]) {
				t.Errorf("%v: op %d of a batch sharing its inputs differs from the oracle", path, i)
			}
		}
		// And Open: every op reads the same ciphertext, only the op with the matching key and length succeeds.
		ct := want[0]
		open := make([]kernels.Op, len(keys))
		for i, k := range keys {
			open[i] = kernels.Op{Key: k.key, Nonce: nonce[:k.suite.NonceSize()], AD: ad, Src: ct, Dst: make([]byte, len(ct)-kernels.TagSize)}
		}
		if failed := path.Open(open); failed != len(keys)-1 || open[0].Err != nil || !bytes.Equal(open[0].Dst, pt) {
			t.Errorf("%v: Open of one shared ciphertext under %d keys: %d failed, first op %v; want %d and nil", path, len(keys), failed, open[0].Err, len(keys)-1)
		}
	}
}

// TestLongOps: messages far longer than a packet, which SIMD drivers split into bounded assembly
// calls (DESIGN.md: assembly is not preemptible), next to short ops in the same batch.
func TestLongOps(t *testing.T) {
	long := 1<<20 + 13
	if raceEnabled || testing.Short() {
		long = 1<<18 + 13
	}
	r := newRand(t)
	keys := keyPool(t, r, 1)
	var ds []diffOp
	for i, k := range keys {
		for _, n := range []int{long, 100, long - 64*i - 1, 0} {
			d := diffOp{k: k, nonce: randBytes(r, k.suite.NonceSize()), ad: randBytes(r, 7), pt: randBytes(r, n), inPlace: i%2 == 0}
			d.offs = [4]int{i, i + 1, i + 2, i + 3}
			d.want = k.sealOracle(d.nonce, d.ad, d.pt)
			ds = append(ds, d)
		}
	}
	for _, path := range batchPaths() {
		checkSeal(t, path, ds)
		checkOpen(t, path, ds, r)
	}
}
