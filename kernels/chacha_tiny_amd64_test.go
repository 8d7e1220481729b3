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

// TestChaChaTinyAVX2 runs chachaTinyOpAVX2 (one call of chachaPoly1305TinyAVX2) against
// golang.org/x/crypto/chacha20poly1305 at every message length it takes and AD lengths around its
// block boundaries: Seal and Open, apart (at every alignment 0..7) and in place, forged tags,
// ciphertexts and AD rejected with Dst zeroed, and no byte written outside Dst.
func TestChaChaTinyAVX2(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
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
		for _, adLen := range []int{0, 1, 15, 16, 17, 33, 64} {
			for n := 0; n <= chachaTinyMax; n++ {
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

				sealed := buffer(n+TagSize, off)
				op := Op{Key: key, Nonce: nonce, AD: ad, Src: msg, Dst: sealed}
				if !chachaTinyOpAVX2(&op, false, n) || !bytes.Equal(sealed, want) {
					fail("Seal differs from x/crypto")
				}
				if !intact(sealed, off) || !intact(msg, off) || !intact(ad, off) {
					fail("Seal wrote outside Dst")
				}
				inPlace := buffer(n+TagSize, off)
				copy(inPlace, msg)
				op = Op{Key: key, Nonce: nonce, AD: ad, Src: inPlace[:n], Dst: inPlace}
				if !chachaTinyOpAVX2(&op, false, n) || !bytes.Equal(inPlace, want) || !intact(inPlace, off) {
					fail("Seal in place differs from x/crypto or wrote outside Dst")
				}

				opened := buffer(n, off)
				op = Op{Key: key, Nonce: nonce, AD: ad, Src: sealed, Dst: opened}
				if !chachaTinyOpAVX2(&op, true, n) || op.Err != nil || !bytes.Equal(opened, msg) || !intact(opened, off) {
					fail("Open failed, or wrong plaintext, or wrote outside Dst")
				}
				op = Op{Key: key, Nonce: nonce, AD: ad, Src: inPlace, Dst: inPlace[:n]}
				if !chachaTinyOpAVX2(&op, true, n) || !bytes.Equal(inPlace[:n], msg) || !intact(inPlace, off) {
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
					if chachaTinyOpAVX2(&op, true, n) || op.Err != ErrAuth || !isZeroBytes(dst) || !intact(dst, off) {
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
