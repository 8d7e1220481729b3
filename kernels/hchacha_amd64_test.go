// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestHChaCha20AVX2 checks the AVX2 HChaCha20 kernels with the draft's vector and against the
// portable hchacha20 on random keys and nonces.
func TestHChaCha20AVX2(t *testing.T) {
	if !chachaAVX2 {
		t.Skip("needs AVX2 and BMI2")
	}
	checkHChaChaDraft(t, "hchacha20AVX2", hchacha20AVX2)

	r := rand.New(rand.NewPCG(7, 8))
	var key, ref, out [8]uint32
	nonce := new([16]byte)
	for range 1000 {
		for i := range key {
			key[i] = r.Uint32()
		}
		for i := range nonce {
			nonce[i] = byte(r.Uint32())
		}
		hchacha20AVX2(&out, &key, nonce)
		hchacha20(&ref, &key, nonce[:])
		if out != ref {
			t.Fatalf("hchacha20AVX2(%x, %x) = %x, hchacha20 says %x", key, nonce, out, ref)
		}
	}

	// hchacha20x3AVX2: three different keys and nonces, each state against the portable one.
	var keys [chachaTinyLanes]*[8]uint32
	var nonces [chachaTinyLanes]*[16]byte
	for i := range keys {
		keys[i], nonces[i] = new([8]uint32), new([16]byte)
	}
	var outs [chachaTinyLanes][8]uint32
	for range 1000 {
		for i := range keys {
			for w := range keys[i] {
				keys[i][w] = r.Uint32()
			}
			for b := range nonces[i] {
				nonces[i][b] = byte(r.Uint32())
			}
		}
		hchacha20x3AVX2(&outs, &keys, &nonces)
		for i := range outs {
			hchacha20(&ref, keys[i], nonces[i][:])
			if outs[i] != ref {
				t.Fatalf("hchacha20x3AVX2 state %d (%x, %x) = %x, hchacha20 says %x", i, *keys[i], *nonces[i], outs[i], ref)
			}
		}
	}
}

// BenchmarkHChaCha20 measures the subkey derivation of an XChaCha20-Poly1305 op outside the SIMD
// lanes (chachaOpKey): the portable hchacha20 against the AVX2 kernel.
func BenchmarkHChaCha20(b *testing.B) {
	var key, out [8]uint32
	var nonce [16]byte
	b.Run("Generic", func(b *testing.B) {
		for range b.N {
			hchacha20(&out, &key, nonce[:])
		}
	})
	b.Run("AVX2", func(b *testing.B) {
		if !chachaAVX2 {
			b.Skip("needs AVX2 and BMI2")
		}
		for range b.N {
			hchacha20AVX2(&out, &key, &nonce)
		}
	})
	b.Run("AVX2x3", func(b *testing.B) { // three subkeys a call
		if !chachaAVX2 {
			b.Skip("needs AVX2 and BMI2")
		}
		var outs [chachaTinyLanes][8]uint32
		keys := [chachaTinyLanes]*[8]uint32{&key, &key, &key}
		nonces := [chachaTinyLanes]*[16]byte{&nonce, &nonce, &nonce}
		for range b.N {
			hchacha20x3AVX2(&outs, &keys, &nonces)
		}
	})
}

// TestChaChaHeads checks chachaHeadsAVX2 and, where the AVX512 tier runs, chachaHeadsAVX512
// against the portable block function for every count of inputs through three passes (each pass
// size, and passes short of their inputs), in place and not, and that they write nothing past
// out[n-1].
func TestChaChaHeads(t *testing.T) {
	if !chachaAVX2 {
		t.Skip("needs AVX2 and BMI2")
	}
	kernels := map[string]func(out *[16]byte, key *[8]uint32, in *[16]byte, n int){"AVX2": chachaHeadsAVX2}
	if chachaAVX512 {
		kernels["AVX512"] = chachaHeadsAVX512
	}
	r := rand.New(rand.NewPCG(9, 10))
	k := &Key{}
	for i := range k.chacha {
		k.chacha[i] = r.Uint32()
	}
	for name, heads := range kernels {
		for n := 1; n <= 20; n++ {
			for range 50 {
				src := make([][16]byte, n+1) // src[n] stands guard
				for i := range src {
					for j := range src[i] {
						src[i][j] = byte(r.Uint32())
					}
				}
				want := make([][16]byte, n)
				chachaBlocksGeneric(k, want, src[:n])
				dst := make([][16]byte, n+1)
				dst[n] = [16]byte{0: 0xa5, 15: 0x5a}
				heads(&dst[0], &k.chacha, &src[0], n)
				guard := src[n]
				heads(&src[0], &k.chacha, &src[0], n)
				for i := range n {
					if dst[i] != want[i] || src[i] != want[i] {
						t.Fatalf("%s, %d inputs: block %d = %x (in place %x), want %x", name, n, i, dst[i], src[i], want[i])
					}
				}
				if dst[n] != ([16]byte{0: 0xa5, 15: 0x5a}) || src[n] != guard {
					t.Fatalf("%s, %d inputs: written past the last output", name, n)
				}
			}
		}
	}
}
