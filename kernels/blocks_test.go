// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"bytes"
	"crypto/aes"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"testing"

	"golang.org/x/crypto/chacha20"

	"github.com/wirebatch/wirebatch/internal/benchshape"
)

// TestEncryptBlocks checks EncryptBlocks, and the portable functions beside it, against crypto/aes
// and x/crypto's chacha20 on batches of every size up to past two lane calls, in place and not, and
// against the header-protection masks of RFC 9001 appendix A.2 (AES) and A.5 (ChaCha20).
func TestEncryptBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, s := range []Suite{AES128GCM, AES192GCM, AES256GCM, ChaCha20Poly1305} {
		raw := make([]byte, s.KeySize())
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		k, _ := NewKey(s, raw)
		want := func(in [16]byte) (out [16]byte) {
			if s.isGCM() {
				b, _ := aes.NewCipher(raw)
				b.Encrypt(out[:], in[:])
				return out
			}
			c, _ := chacha20.NewUnauthenticatedCipher(raw, in[4:])
			c.SetCounter(uint32(in[0]) | uint32(in[1])<<8 | uint32(in[2])<<16 | uint32(in[3])<<24)
			c.XORKeyStream(out[:], out[:])
			return out
		}
		for n := range 40 {
			src := make([][16]byte, n)
			for i := range src {
				for j := range src[i] {
					src[i][j] = byte(rng.Uint32())
				}
			}
			for _, f := range []struct {
				name string
				run  func(dst, src [][16]byte)
			}{
				{"EncryptBlocks", k.EncryptBlocks},
				{"generic", func(dst, src [][16]byte) {
					if s.isGCM() {
						aesBlocksGeneric(k, dst, src)
					} else {
						chachaBlocksGeneric(k, dst, src)
					}
				}},
			} {
				dst := make([][16]byte, n)
				f.run(dst, src)
				inPlace := append([][16]byte(nil), src...)
				f.run(inPlace, inPlace)
				for i := range src {
					if w := want(src[i]); dst[i] != w || inPlace[i] != w {
						t.Fatalf("%v %s, %d blocks: block %d differs", s, f.name, n, i)
					}
				}
			}
		}
	}
	for _, v := range []struct {
		s                  Suite
		key, sample, mask5 string
	}{
		{AES128GCM, "9f50449e04a0e810283a1e9933adedd2", "d1b1c98dd7689fb8ec11d242b123dc9b", "437b9aec36"},
		{ChaCha20Poly1305, "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4",
			"5e5cd55c41f69080575d7999c25a5bfb", "aefefe7d03"},
	} {
		raw, _ := hex.DecodeString(v.key)
		k, _ := NewKey(v.s, raw)
		var in [1][16]byte
		hex.Decode(in[0][:], []byte(v.sample))
		out := make([][16]byte, 1)
		k.EncryptBlocks(out, in[:])
		if got := hex.EncodeToString(out[0][:5]); got != v.mask5 {
			t.Errorf("%v: RFC 9001 mask %s, want %s", v.s, got, v.mask5)
		}
	}
}

// TestEncryptBlocksMisuse: misuse panics with the package's prefix.
func TestEncryptBlocksMisuse(t *testing.T) {
	x, _ := NewKey(XChaCha20Poly1305, make([]byte, 32))
	a, _ := NewKey(AES128GCM, make([]byte, 16))
	d, _ := NewKey(AES128GCM, make([]byte, 16))
	d.Destroy()
	for name, f := range map[string]func(){
		"nil key":        func() { (*Key)(nil).EncryptBlocks(nil, nil) },
		"XChaCha20":      func() { x.EncryptBlocks(nil, nil) },
		"destroyed":      func() { d.EncryptBlocks(nil, nil) },
		"length":         func() { a.EncryptBlocks(make([][16]byte, 1), nil) },
		"zero Key value": func() { new(Key).EncryptBlocks(nil, nil) },
	} {
		func() {
			defer func() {
				if r, ok := recover().(string); !ok || !bytes.HasPrefix([]byte(r), []byte("kernels: ")) {
					t.Errorf("%s: recovered %v, want a kernels: panic", name, r)
				}
			}()
			f()
		}()
	}
}

// BenchmarkEncryptBlocks times EncryptBlocks (QUIC's header-protection masks) on 1 to 64 inputs
// (either side of the AVX512 ChaCha20 lanes' threshold, and passes of chachaHeadsAVX2 short of
// their inputs and full) against the per-input way a QUIC stack computes them, alternately
// (benchshape.Paired): crypto/aes's Encrypt, or a x/crypto chacha20 cipher per sample whose first 5
// bytes of key stream are the mask (RFC 9001 sections 5.4.3 and 5.4.4).
func BenchmarkEncryptBlocks(b *testing.B) {
	for _, s := range []Suite{AES128GCM, ChaCha20Poly1305} {
		raw := make([]byte, s.KeySize())
		k, _ := NewKey(s, raw)
		block, _ := aes.NewCipher(raw[:16])
		for _, n := range []int{1, 2, 3, 4, 5, 8, 16, 24, 64} {
			src, dst := make([][16]byte, n), make([][16]byte, n)
			var mask [16]byte
			base := func() {
				for i := range src {
					if s.isGCM() {
						block.Encrypt(mask[:], src[i][:])
						continue
					}
					c, _ := chacha20.NewUnauthenticatedCipher(raw, src[i][4:])
					c.SetCounter(binary.LittleEndian.Uint32(src[i][:4]))
					mask = [16]byte{}
					c.XORKeyStream(mask[:5], mask[:5])
				}
			}
			b.Run(s.String()+"/"+strconv.Itoa(n), func(b *testing.B) {
				benchshape.Paired(b, n, func() { k.EncryptBlocks(dst, src) }, base)
			})
		}
	}
}
