// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestHChaCha20AVX2 checks the AVX2 HChaCha20 kernel with the draft's vector and against the portable
// hchacha20 on random keys and nonces.
func TestHChaCha20AVX2(t *testing.T) {
	if !chachaAVX2 {
		t.Skip("needs AVX2 and BMI2")
	}
	// draft-irtf-cfrg-xchacha-03 section 2.2.1.
	nonce := (*[16]byte)(refHex("000000090000004a0000000031415927"))
	want := refHex("82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc")
	var out [8]uint32
	hchacha20AVX2(&out, refKeyWords(key00to1f), nonce)
	got := make([]byte, 32)
	for i, w := range out {
		binary.LittleEndian.PutUint32(got[4*i:], w)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("hchacha20AVX2 = %x, want %x", got, want)
	}

	r := rand.New(rand.NewPCG(7, 8))
	var key, ref [8]uint32
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
}
