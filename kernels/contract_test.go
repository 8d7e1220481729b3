// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// The cipher.AEAD contract for NewAEAD, in the manner of Go's crypto/internal/cryptotest.TestAEAD
// (written independently): what crypto/cipher documents for AEAD.Seal and AEAD.Open, checked for
// every suite against the oracle at many lengths and alignments.

import (
	"bytes"
	"crypto/cipher"
	"errors"
	"testing"
	"unsafe"

	"github.com/wirebatch/wirebatch/kernels"
)

// contractLengths are the message lengths of the contract suite: empty, around the 16-byte AES/GHASH
// and Poly1305 block, the 64-byte ChaCha20 block, an IMIX-ish 156, a tunnel MTU payload, and around
// 8 KiB strides; then odd ones.
var contractLengths = []int{0, 1, 15, 16, 17, 63, 64, 65, 156, 1420, 8192, 8193, 8208,
	3, 31, 33, 127, 129, 255, 257, 1021, 1421, 4097, 9999}

var contractADLengths = []int{0, 1, 13, 16, 17, 64}

func newContractAEADs(t *testing.T, s kernels.Suite) (cipher.AEAD, cipher.AEAD, []byte) {
	t.Helper()
	key := randBytes(newRand(t), s.KeySize())
	a, err := kernels.NewAEAD(s, key)
	if err != nil {
		t.Fatalf("NewAEAD(%v): %v", s, err)
	}
	return a, oracleAEAD(t, s, key), key
}

func TestAEADContract(t *testing.T) {
	for _, s := range allSuites {
		t.Run(s.String(), func(t *testing.T) {
			a, oracle, _ := newContractAEADs(t, s)
			if a.NonceSize() != s.NonceSize() || a.Overhead() != kernels.TagSize {
				t.Fatalf("NonceSize, Overhead = %d, %d; want %d, %d", a.NonceSize(), a.Overhead(), s.NonceSize(), kernels.TagSize)
			}
			t.Run("RoundTrip", func(t *testing.T) { contractRoundTrip(t, a, oracle) })
			t.Run("AppendToDst", func(t *testing.T) { contractAppend(t, a, oracle) })
			t.Run("InPlace", func(t *testing.T) { contractInPlace(t, a, oracle) })
			t.Run("OverlapPanics", func(t *testing.T) { contractOverlap(t, a) })
			t.Run("Rejects", func(t *testing.T) { contractRejects(t, a, oracle) })
			t.Run("WrongNonceSizePanics", func(t *testing.T) { contractNonceSize(t, a) })
		})
	}
	if _, err := kernels.NewAEAD(kernels.AES128GCM, make([]byte, 32)); err == nil {
		t.Error("NewAEAD with a wrong key size succeeded")
	}
	if _, err := kernels.NewAEAD(0, make([]byte, 32)); err == nil {
		t.Error("NewAEAD with an unknown suite succeeded")
	}
}

// contractRoundTrip: Seal equals the oracle, Open inverts it, neither modifies its inputs, at every
// length, AD length and alignment of plaintext, AD and nonce.
func contractRoundTrip(t *testing.T, a, oracle cipher.AEAD) {
	r := newRand(t)
	for i, n := range contractLengths {
		for j, adLen := range contractADLengths {
			off := (i + j) % 8
			nonce := placed(randBytes(r, a.NonceSize()), (off+1)%8)
			ad := placed(randBytes(r, adLen), (off+2)%8)
			pt := placed(randBytes(r, n), off)
			nonce0, ad0, pt0 := bytes.Clone(nonce), bytes.Clone(ad), bytes.Clone(pt)

			want := oracle.Seal(nil, nonce, pt, ad)
			ct := a.Seal(nil, nonce, pt, ad)
			if !bytes.Equal(ct, want) {
				t.Fatalf("Seal(len %d, AD %d, offset %d) differs from the oracle at byte %d", n, adLen, off, firstDiff(ct, want))
			}
			if !bytes.Equal(nonce, nonce0) || !bytes.Equal(ad, ad0) || !bytes.Equal(pt, pt0) {
				t.Fatalf("Seal(len %d) modified its inputs", n)
			}

			ctIn := placed(ct, (off+3)%8)
			got, err := a.Open(nil, nonce, ctIn, ad)
			if err != nil || !bytes.Equal(got, pt0) {
				t.Fatalf("Open(len %d, AD %d, offset %d) = %v; want the plaintext", n, adLen, off, err)
			}
			if !bytes.Equal(ctIn, ct) || !bytes.Equal(nonce, nonce0) || !bytes.Equal(ad, ad0) {
				t.Fatalf("Open(len %d) modified its inputs", n)
			}
		}
	}
}

// contractAppend: Seal and Open append to dst, keep its contents, and reuse its capacity when it
// suffices (allocating a new array, with dst copied in, when it does not).
func contractAppend(t *testing.T, a, oracle cipher.AEAD) {
	r := newRand(t)
	for i, n := range contractLengths {
		nonce, ad, pt := randBytes(r, a.NonceSize()), randBytes(r, i%20), randBytes(r, n)
		want := oracle.Seal(nil, nonce, pt, ad)
		for _, prefixLen := range []int{0, 1, 7, 16, 33} {
			prefix := randBytes(r, prefixLen)
			for _, spare := range []int{0, len(want) - 1, len(want), len(want) + 9} {
				spare = max(spare, 0)
				buf := make([]byte, prefixLen+spare+guardLen)
				fill(buf, guardByte)
				dst := buf[: prefixLen : prefixLen+spare]
				copy(dst, prefix)

				sealed := a.Seal(dst, nonce, pt, ad)
				checkAppended(t, "Seal", n, prefix, dst, spare >= len(want), sealed, want)
				if !isFilled(buf[prefixLen+spare:], guardByte) {
					t.Fatalf("Seal(len %d) wrote past dst's capacity", n)
				}

				buf2 := make([]byte, prefixLen+spare)
				dst2 := buf2[:prefixLen]
				copy(dst2, prefix)
				opened, err := a.Open(dst2, nonce, want, ad)
				if err != nil {
					t.Fatalf("Open(len %d) with a prefix: %v", n, err)
				}
				checkAppended(t, "Open", n, prefix, dst2, spare >= n, opened, pt)
			}
		}
	}
}

func checkAppended(t *testing.T, op string, n int, prefix, dst []byte, fits bool, got, want []byte) {
	t.Helper()
	if len(got) != len(prefix)+len(want) || !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("%s(len %d) with a %d-byte dst: result is not dst followed by the output", op, n, len(prefix))
	}
	if !bytes.Equal(dst, prefix) {
		t.Fatalf("%s(len %d) changed dst's contents", op, n)
	}
	if cap(got) > 0 && cap(dst) > 0 && fits != (unsafe.SliceData(got) == unsafe.SliceData(dst)) {
		t.Fatalf("%s(len %d), dst cap %d: reused dst's array = %v, want %v", op, n, cap(dst), !fits, fits)
	}
}

// contractInPlace: Seal(pt[:0], nonce, pt, ad) and Open(ct[:0], nonce, ct, ad) with the room the
// output needs, at every alignment.
func contractInPlace(t *testing.T, a, oracle cipher.AEAD) {
	r := newRand(t)
	for i, n := range contractLengths {
		nonce, ad, pt := randBytes(r, a.NonceSize()), randBytes(r, i%20), randBytes(r, n)
		want := oracle.Seal(nil, nonce, pt, ad)
		buf := unaligned(n+kernels.TagSize, i%8)
		copy(buf, pt)
		ct := a.Seal(buf[:0], nonce, buf[:n], ad)
		if !bytes.Equal(ct, want) || unsafe.SliceData(ct) != unsafe.SliceData(buf) {
			t.Fatalf("in-place Seal(len %d) = wrong output or a new array", n)
		}
		got, err := a.Open(ct[:0], nonce, ct, ad)
		if err != nil || !bytes.Equal(got, pt) || unsafe.SliceData(got) != unsafe.SliceData(buf) {
			t.Fatalf("in-place Open(len %d) = %v, or wrong output or a new array", n, err)
		}
		if !guardsIntact(buf) {
			t.Fatalf("in-place Seal or Open (len %d) wrote past the buffer", n)
		}
	}
}

// contractOverlap: output that would overlap the input other than exactly in place must panic
// (cipher.AEAD: "To reuse plaintext's storage for the encrypted output, use plaintext[:0] as dst.
// Otherwise, the remaining capacity of dst must not overlap plaintext"; likewise for Open).
func contractOverlap(t *testing.T, a cipher.AEAD) {
	r := newRand(t)
	nonce := randBytes(r, a.NonceSize())
	for _, n := range []int{1, 16, 17, 64, 1420} {
		for _, shift := range []int{1, 3, 8, n} {
			// Output starting shift bytes after the input's first byte.
			buf := make([]byte, 2*n+2*kernels.TagSize+16)
			pt := buf[:n]
			if shift < n {
				expectPanic(t, "Seal with dst inside plaintext", func() { a.Seal(buf[shift:shift], nonce, pt, nil) })
			}

			ct := a.Seal(nil, nonce, make([]byte, n), nil)
			copy(buf, ct)
			if shift < len(ct) {
				expectPanic(t, "Open with dst inside ciphertext", func() { a.Open(buf[shift:shift], nonce, buf[:len(ct)], nil) })
			}

			// Output starting before the input and running into it: input placed shift bytes on.
			in := buf[shift : shift+n]
			if shift < n+kernels.TagSize {
				expectPanic(t, "Seal with dst running into plaintext", func() { a.Seal(buf[:0], nonce, in, nil) })
			}
			copy(buf[shift:], ct)
			if shift < n {
				expectPanic(t, "Open with dst running into ciphertext", func() { a.Open(buf[:0], nonce, buf[shift:shift+len(ct)], nil) })
			}
		}
	}
}

// contractRejects: any change to the nonce, AD or ciphertext fails Open with ErrAuth, returns no
// plaintext and leaves none in dst's spare capacity; so does a ciphertext shorter than a tag.
func contractRejects(t *testing.T, a, oracle cipher.AEAD) {
	r := newRand(t)
	for i, n := range contractLengths {
		nonce, ad, pt := randBytes(r, a.NonceSize()), randBytes(r, 1+i%20), randBytes(r, n)
		ct := oracle.Seal(nil, nonce, pt, ad)
		check := func(what string, nonce, ct, ad []byte) {
			t.Helper()
			dst := make([]byte, 3, 3+len(ct))
			fill(dst[:cap(dst)], guardByte)
			got, err := a.Open(dst, nonce, ct, ad)
			if err == nil || !errors.Is(err, kernels.ErrAuth) || got != nil {
				t.Fatalf("Open(len %d) with %s = %d bytes, %v; want nil, ErrAuth", n, what, len(got), err)
			}
			if out := dst[3 : 3+max(len(ct)-kernels.TagSize, 0)]; n > 0 && !isZero(out) && !isFilled(out, guardByte) {
				t.Fatalf("Open(len %d) with %s left output in dst's capacity", n, what)
			}
		}
		bad := bytes.Clone(nonce)
		bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
		check("a wrong nonce", bad, ct, ad)
		bad = bytes.Clone(ad)
		bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
		check("a wrong AD", nonce, ct, bad)
		check("a missing AD", nonce, ct, nil)
		bad = bytes.Clone(ct)
		bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
		check("a flipped ciphertext or tag bit", nonce, bad, ad)
		check("a truncated ciphertext", nonce, ct[:len(ct)-1], ad)
		check("an extended ciphertext", nonce, append(bytes.Clone(ct), 0), ad)
	}
	for n := range kernels.TagSize {
		nonce := randBytes(r, a.NonceSize())
		if got, err := a.Open(nil, nonce, make([]byte, n), nil); err == nil || got != nil {
			t.Errorf("Open of a %d-byte ciphertext = %x, %v; want an error", n, got, err)
		}
	}
}

func contractNonceSize(t *testing.T, a cipher.AEAD) {
	for _, n := range []int{0, a.NonceSize() - 1, a.NonceSize() + 1, 36 - a.NonceSize()} {
		nonce := make([]byte, n)
		expectPanic(t, "Seal with a wrong nonce size", func() { a.Seal(nil, nonce, []byte("x"), nil) })
		expectPanic(t, "Open with a wrong nonce size", func() { a.Open(nil, nonce, make([]byte, 40), nil) })
		expectPanic(t, "Open of a short ciphertext with a wrong nonce size", func() { a.Open(nil, nonce, make([]byte, 3), nil) })
	}
}
