// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import (
	"bytes"
	"crypto/cipher"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/crypto/chacha20poly1305"
)

// TestChaChaFusedOps runs the fused one-call kernels (chachaFusedOp: chachaPoly1305TinyAVX2,
// chachaPoly1305TinyAVX512 and chachaPoly1305SmallAVX512) against golang.org/x/crypto/chacha20poly1305
// at every message length each takes and AD lengths around its block boundaries: Seal and Open,
// apart (at every alignment 0..7) and in place, forged tags, ciphertexts and AD rejected with Dst
// zeroed, and no byte written outside Dst.
func TestChaChaFusedOps(t *testing.T) {
	for _, k := range []struct {
		name                       string
		tier                       Tier
		shortest, sealMax, openMax int
		kernel                     fusedKernel
	}{
		{"TinyAVX2", AVX2, 0, chachaTinyMax, chachaTinyMax, fusedTinyAVX2},
		{"TinyAVX512", AVX512, 0, chachaTinyMax, chachaTinyMax, fusedTinyAVX512},
		{"SmallAVX512", AVX512, 0, chachaSmallMax, chachaSmallOpenMax, fusedSmallAVX512},
		{"LongAVX512", AVX512, chachaLongMin, chachaLongMax, chachaLongMax, fusedLongAVX512},
	} {
		t.Run(k.name, func(t *testing.T) {
			if !chachaHas(k.tier) {
				t.Skip("CPU lacks the features")
			}
			testFusedOp(t, k.shortest, k.sealMax, k.openMax, func(op *Op, open bool, n int) bool { return chachaFusedOp(op, open, n, k.kernel) })
		})
	}
}

// TestChaChaFusedVariants runs the few-ops paths of the SIMD tiers with each variant of the fused
// kernels this CPU has (impl.chachaTinyProld, impl.chachaSmallFused), against the Generic tier.
func TestChaChaFusedVariants(t *testing.T) {
	if !chachaHas(AVX512) {
		t.Skip("needs AVX-512")
	}
	defer func(p bool, f [2]int) { impl.chachaTinyProld, impl.chachaSmallFused = p, f }(impl.chachaTinyProld, impl.chachaSmallFused)
	rng := rand.New(rand.NewPCG(23, 24))
	for _, prold := range []bool{false, true} {
		for _, small := range [][2]int{{}, {chachaSmallMax, chachaSmallOpenMax}} {
			impl.chachaTinyProld, impl.chachaSmallFused = prold, small
			for _, tier := range []Tier{AVX512, AVX2} {
				for _, suite := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
					key, _ := NewKey(suite, make([]byte, 32))
					for _, b := range []int{1, 2, 5, 11} {
						checkAgainstGeneric(t, tier, key, b, rng)
					}
				}
			}
		}
	}
}

// testFusedOp is TestChaChaFusedOps for one kernel, run, on messages of shortest up to sealMax
// bytes (Seal) and openMax (Open; openMax >= sealMax: the Opens past sealMax take x/crypto's
// ciphertexts).
func testFusedOp(t *testing.T, shortest, sealMax, openMax int, run func(op *Op, open bool, n int) bool) {
	const guard = 32 // bytes on each side of every buffer
	const guardFill = 0xA5
	// buffer returns n bytes at offset guard+off of a fresh array, all of it guardFill; intact
	// reports whether the guards around such a slice still hold guardFill.
	arrays := map[*byte][]byte{}
	buffer := func(n, off int) []byte {
		a := bytes.Repeat([]byte{guardFill}, guard+off+n+guard)
		b := a[guard+off : guard+off+n]
		arrays[&a[guard+off]] = a
		return b
	}
	intact := func(b []byte, off int) bool {
		a := arrays[&b[:1][0]] // within the capacity: the guard behind b
		for i, c := range a {
			if (i < guard+off || i >= guard+off+len(b)) && c != guardFill {
				return false
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, suite := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
		raw := make([]byte, 32)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		key, err := NewKey(suite, raw)
		if err != nil {
			t.Fatal(err)
		}
		var oracle cipher.AEAD
		if suite == XChaCha20Poly1305 {
			oracle, _ = chacha20poly1305.NewX(raw)
		} else {
			oracle, _ = chacha20poly1305.New(raw)
		}
		for _, adLen := range []int{0, 1, 15, 16, 17, 33, 64, 200, chachaFusedAD} {
			for n := shortest; n <= openMax; n++ {
				off := n % 8
				ad, msg := buffer(adLen, off), buffer(n, off)
				nonce := make([]byte, suite.NonceSize())
				for _, b := range [][]byte{ad, msg, nonce} {
					for i := range b {
						b[i] = byte(rng.Uint32())
					}
				}
				want := oracle.Seal(nil, nonce, msg, ad)
				fail := func(what string) {
					t.Helper()
					t.Fatalf("%v, %d-byte message, %d-byte AD: %s", suite, n, adLen, what)
				}

				sealed, inPlace := buffer(n+TagSize, off), buffer(n+TagSize, off)
				var op Op
				if n <= sealMax {
					op = Op{Key: key, Nonce: nonce, AD: ad, Src: msg, Dst: sealed}
					if !run(&op, false, n) || !bytes.Equal(sealed, want) {
						fail("Seal differs from x/crypto")
					}
					if !intact(sealed, off) || !intact(msg, off) || !intact(ad, off) {
						fail("Seal wrote outside Dst")
					}
					copy(inPlace, msg)
					op = Op{Key: key, Nonce: nonce, AD: ad, Src: inPlace[:n], Dst: inPlace}
					if !run(&op, false, n) || !bytes.Equal(inPlace, want) || !intact(inPlace, off) {
						fail("Seal in place differs from x/crypto or wrote outside Dst")
					}
				} else {
					copy(sealed, want)
					copy(inPlace, want)
				}

				opened := buffer(n, off)
				op = Op{Key: key, Nonce: nonce, AD: ad, Src: sealed, Dst: opened}
				if !run(&op, true, n) || op.Err != nil || !bytes.Equal(opened, msg) || !intact(opened, off) {
					fail("Open failed, or wrong plaintext, or wrote outside Dst")
				}
				op = Op{Key: key, Nonce: nonce, AD: ad, Src: inPlace, Dst: inPlace[:n]}
				if !run(&op, true, n) || !bytes.Equal(inPlace[:n], msg) || !intact(inPlace, off) {
					fail("Open in place failed or wrong plaintext")
				}

				// Forgeries: a flipped bit of the tag, of the ciphertext, of the AD.
				type forgery struct {
					what   string
					ct, ad []byte
				}
				forged := []forgery{{"tag", bytes.Clone(want), ad}}
				forged[0].ct[n+rng.IntN(TagSize)] ^= 1 << rng.IntN(8)
				if n > 0 {
					f := forgery{"ciphertext", bytes.Clone(want), ad}
					f.ct[rng.IntN(n)] ^= 1 << rng.IntN(8)
					forged = append(forged, f)
				}
				if adLen > 0 {
					f := forgery{"AD", want, bytes.Clone(ad)}
					f.ad[rng.IntN(adLen)] ^= 1 << rng.IntN(8)
					forged = append(forged, f)
				}
				for _, f := range forged {
					dst := buffer(n, off)
					op = Op{Key: key, Nonce: nonce, AD: f.ad, Src: f.ct, Dst: dst}
					if run(&op, true, n) || op.Err != ErrAuth || !isZeroBytes(dst) || !intact(dst, off) {
						fail("forged " + f.what + " not rejected with Dst zeroed")
					}
				}
			}
		}
	}
}

func isZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// BenchmarkChaChaTinyAVX2 times chachaPoly1305TinyAVX2 alone (no Go wrapper), Seal and Open, on
// messages of 64, 128 and 192 bytes with no AD (a ChaChaBatch 1x64 op) and with 16 bytes of AD.
func BenchmarkChaChaTinyAVX2(b *testing.B) {
	if !chachaHas(AVX2) {
		b.Skip("needs AVX2")
	}
	var key [8]uint32
	var nonce [12]byte
	var tag [TagSize]byte
	for i := range key {
		key[i] = uint32(i) * 0x01010101
	}
	for _, adLen := range []int{0, 16} {
		for _, n := range []int{64, 128, 192} {
			buf := make([]byte, n)
			ad := make([]byte, adLen)
			chachaPoly1305TinyAVX2(&key, &nonce, &buf[0], &buf[0], n, unsafe.SliceData(ad), adLen, &tag, false)
			for _, open := range []bool{false, true} {
				name := "Seal"
				if open {
					name = "Open"
				}
				b.Run(fmt.Sprintf("%s/%d/ad%d", name, n, adLen), func(b *testing.B) {
					b.SetBytes(int64(n))
					dst := make([]byte, n)
					for b.Loop() {
						chachaPoly1305TinyAVX2(&key, &nonce, &dst[0], &buf[0], n, unsafe.SliceData(ad), adLen, &tag, open)
					}
				})
			}
		}
	}
}

// TestChaChaTinyLanes runs tinyOps's three-op kernels on random triples against
// golang.org/x/crypto/chacha20poly1305: one triple (chachaPoly1305Tiny3AVX2) or up to eight, from
// three on through the pipeline (chachaPoly1305Tiny3PipeAVX2) where every op's AD fits it, so that
// pipelined triples and others mix; each op of its own suite and key, message length (0-64, and in
// a second pass one in four of 65-128 for chachaPoly1305Tiny2AVX2, and on AVX-512 CPUs in a third
// one in four of 65-192 for chachaPoly1305Tiny3AVX512 and chachaPoly1305Tiny2AVX512, in batches of
// any size too, whose leftovers of both queues run two or three to a call) and AD length (0-767,
// mostly within chachaTinyPipeAD), apart or in place; Open with a random subset forged (tag,
// ciphertext or AD), which alone fail, with Dst zeroed, while the others decrypt; no byte written
// outside any Dst.
func TestChaChaTinyLanes(t *testing.T) {
	if !chachaHas(AVX2) || !impl.chachaAVX2Regs {
		t.Skip("needs the AVX2 tier of 1-cycle cores")
	}
	defer func(w3, w2 bool) { impl.chachaTiny3AVX512, impl.chachaTiny2AVX2 = w3, w2 }(impl.chachaTiny3AVX512,
		impl.chachaTiny2AVX2)
	for _, m := range []struct {
		name        string
		wide, pairs bool
		maxLen      int // the longest message
	}{{"within-block-1", false, false, chachaTinyLaneMax}, {"pairs", false, true, chachaTinyPairMax},
		{"triples", true, false, chachaTinyMax}} {
		if m.wide && !chachaAVX512 {
			continue
		}
		impl.chachaTiny3AVX512, impl.chachaTiny2AVX2 = m.wide, m.pairs
		t.Run(m.name, func(t *testing.T) { testChaChaTinyLanes(t, m.maxLen) })
	}
}

// testChaChaTinyLanes is TestChaChaTinyLanes with messages of up to maxLen bytes.
func testChaChaTinyLanes(t *testing.T, maxLen int) {
	past := maxLen > chachaTinyLaneMax
	const guard = 32
	const guardFill = 0x5A
	guarded := func(n int) (buf, all []byte) {
		all = bytes.Repeat([]byte{guardFill}, guard+n+guard)
		return all[guard : guard+n], all
	}
	intact := func(all []byte, n int) bool {
		for i, c := range all {
			if (i < guard || i >= guard+n) && c != guardFill {
				return false
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(23, 24))
	type lane struct {
		oracle      cipher.AEAD
		key         *Key
		nonce, ad   []byte
		msg, sealed []byte
		inPlace     bool
	}
	for iter := range 3000 {
		count := chachaTinyLanes
		switch {
		case past && iter%4 == 3:
			count = 1 + rng.IntN(24) // leftovers of every kind for flush
		case iter%2 == 1:
			count *= 1 + rng.IntN(8)
		}
		ls := make([]lane, count)
		ops := make([]Op, count)
		all := make([][]byte, count)
		for i := range ls {
			l := &ls[i]
			suite := []Suite{ChaCha20Poly1305, XChaCha20Poly1305}[rng.IntN(2)]
			raw := make([]byte, 32)
			for j := range raw {
				raw[j] = byte(rng.Uint32())
			}
			l.key, _ = NewKey(suite, raw)
			if suite == XChaCha20Poly1305 {
				l.oracle, _ = chacha20poly1305.NewX(raw)
			} else {
				l.oracle, _ = chacha20poly1305.New(raw)
			}
			n := rng.IntN(chachaTinyLaneMax + 1)
			if past && rng.IntN(4) == 0 {
				n = chachaTinyLaneMax + 1 + rng.IntN(maxLen-chachaTinyLaneMax)
			}
			adLen := rng.IntN(chachaTinyPipeAD + 17)
			if rng.IntN(8) == 0 {
				adLen = rng.IntN(chachaFusedAD + 1)
			}
			l.nonce, l.ad, l.msg = make([]byte, suite.NonceSize()), make([]byte, adLen), make([]byte, n)
			for _, b := range [][]byte{l.nonce, l.ad, l.msg} {
				for j := range b {
					b[j] = byte(rng.Uint32())
				}
			}
			l.sealed = l.oracle.Seal(nil, l.nonce, l.msg, l.ad)
			l.inPlace = rng.IntN(2) == 0
			dst, a := guarded(n + TagSize)
			src := l.msg
			if l.inPlace {
				copy(dst, l.msg)
				src = dst[:n]
			}
			ops[i], all[i] = Op{Key: l.key, Nonce: l.nonce, AD: l.ad, Src: src, Dst: dst}, a
		}
		runTiny := func(open bool) (failed int) {
			q := newTinyOps(AVX2, open)
			q.planPipeline(ops)
			for i := range ops {
				n, ok := q.fits(&ops[i])
				if !ok {
					t.Fatalf("iteration %d: op %d does not fit", iter, i)
				}
				failed += q.run(ops, i, n)
			}
			if count%chachaTinyLanes == 0 && !past && q.n != 0 {
				t.Fatalf("iteration %d: %d ops left queued after a full call", iter, q.n)
			}
			return failed + q.flush(ops)
		}
		runTiny(false)
		for i, l := range ls {
			if !bytes.Equal(ops[i].Dst, l.sealed) || !intact(all[i], len(ops[i].Dst)) {
				t.Fatalf("iteration %d, lane %d (%v, %d-byte message, %d-byte AD, in place %v): Seal differs from x/crypto or wrote outside Dst",
					iter, i, l.key.suite, len(l.msg), len(l.ad), l.inPlace)
			}
		}

		forged := rng.Uint64() & (1<<count - 1)
		wantFailed := 0
		for i := range ls {
			l := &ls[i]
			n := len(l.msg)
			ct := bytes.Clone(l.sealed)
			ad := l.ad
			if forged>>i&1 == 1 {
				wantFailed++
				switch w := rng.IntN(3); {
				case w == 1 && n > 0:
					ct[rng.IntN(n)] ^= 1 << rng.IntN(8)
				case w == 2 && len(ad) > 0:
					ad = bytes.Clone(ad)
					ad[rng.IntN(len(ad))] ^= 1 << rng.IntN(8)
				default:
					ct[n+rng.IntN(TagSize)] ^= 1 << rng.IntN(8)
				}
			}
			src, a := guarded(n + TagSize)
			copy(src, ct)
			dst := src[:n]
			if !l.inPlace {
				dst, a = guarded(n)
				for j := range dst {
					dst[j] = 0xEE
				}
			}
			ops[i], all[i] = Op{Key: l.key, Nonce: l.nonce, AD: ad, Src: src, Dst: dst}, a
		}
		if failed := runTiny(true); failed != wantFailed {
			t.Fatalf("iteration %d: Open reported %d failures, want %d (forged ops %b)", iter, failed, wantFailed, forged)
		}
		for i, l := range ls {
			op := &ops[i]
			var ok bool
			if forged>>i&1 == 1 {
				ok = op.Err == ErrAuth && isZeroBytes(op.Dst)
			} else {
				ok = op.Err == nil && bytes.Equal(op.Dst, l.msg)
			}
			if !ok || !intact(all[i], len(op.Src)) && l.inPlace || !l.inPlace && !intact(all[i], len(op.Dst)) {
				t.Fatalf("iteration %d, lane %d (forged %v, in place %v): err %v, wrong Dst, or a write outside it",
					iter, i, forged>>i&1 == 1, l.inPlace, op.Err)
			}
		}
	}
}

// BenchmarkChaChaTiny3AVX2 times chachaPoly1305Tiny3AVX2 alone on three 64-byte Seals with no AD, in
// place: against three calls of BenchmarkChaChaTinyAVX2's Seal/64/ad0.
func BenchmarkChaChaTiny3AVX2(b *testing.B) {
	if !chachaHas(AVX2) || !impl.chachaAVX2Regs {
		b.Skip("needs the AVX2 tier of 1-cycle cores")
	}
	var key [8]uint32
	var nonce [12]byte
	var lanes [chachaTinyLanes]chachaTinyLane
	var tags [chachaTinyLanes][TagSize]byte
	for i := range lanes {
		buf := make([]byte, 64)
		lanes[i] = chachaTinyLane{key: &key, nonce: &nonce, dst: &buf[0], src: &buf[0], n: 64, tag: &tags[i]}
	}
	b.SetBytes(chachaTinyLanes * 64)
	for b.Loop() {
		chachaPoly1305Tiny3AVX2(&lanes, false)
	}
}

// BenchmarkChaChaTinyPairAVX2 times chachaPoly1305Tiny2AVX2 alone on two ops of up to two blocks,
// in place with 8 bytes of AD, against two lone calls of chachaPoly1305TinyAVX2 on the same ops
// ("alone").
func BenchmarkChaChaTinyPairAVX2(b *testing.B) {
	if !chachaHas(AVX2) || !impl.chachaAVX2Regs {
		b.Skip("needs the AVX2 tier of 1-cycle cores")
	}
	benchTinyCalls(b, 2, []int{64, 100, 128}, chachaPoly1305Tiny2AVX2, chachaPoly1305TinyAVX2)
}

// BenchmarkChaChaTinyLanesAVX512 times the AVX-512 kernels of two and three ops of up to three
// blocks (chachaPoly1305Tiny2AVX512, chachaPoly1305Tiny3AVX512) alone, in place with 8 bytes of
// AD, against as many lone calls of chachaPoly1305TinyAVX512 on the same ops ("alone").
func BenchmarkChaChaTinyLanesAVX512(b *testing.B) {
	if !chachaAVX512 {
		b.Skip("needs AVX-512")
	}
	lens := []int{64, 100, 128, 192}
	benchTinyCalls(b, 2, lens, chachaPoly1305Tiny2AVX512, chachaPoly1305TinyAVX512)
	benchTinyCalls(b, 3, lens, chachaPoly1305Tiny3AVX512, chachaPoly1305TinyAVX512)
}

// benchTinyCalls times kernel on its first ops ops, each of n bytes for each n of lens, in place
// with 8 bytes of AD, Seal and Open, against as many calls of lone, the one-op kernel, on the same
// ops ("alone").
func benchTinyCalls(b *testing.B, ops int, lens []int, kernel func(*[chachaTinyLanes]chachaTinyLane, bool) uint8,
	lone func(*[8]uint32, *[12]byte, *byte, *byte, int, *byte, int, *[TagSize]byte, bool) bool) {
	var key [8]uint32
	var nonce [12]byte
	var tags [chachaTinyLanes][TagSize]byte
	ad := make([]byte, 8)
	for _, n := range lens {
		var lanes [chachaTinyLanes]chachaTinyLane
		for i := range ops {
			buf := make([]byte, n)
			lanes[i] = chachaTinyLane{key: &key, nonce: &nonce, dst: &buf[0], src: &buf[0], n: n, ad: &ad[0],
				adLen: len(ad), tag: &tags[i]}
		}
		for _, open := range []bool{false, true} {
			name := fmt.Sprintf("Seal/%dx%d", ops, n)
			if open {
				name = fmt.Sprintf("Open/%dx%d", ops, n)
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(ops * n))
				for b.Loop() {
					kernel(&lanes, open)
				}
			})
			b.Run(name+"/alone", func(b *testing.B) {
				b.SetBytes(int64(ops * n))
				for b.Loop() {
					for i := range ops {
						l := &lanes[i]
						lone(l.key, l.nonce, l.dst, l.src, n, l.ad, l.adLen, l.tag, open)
					}
				}
			})
		}
	}
}
