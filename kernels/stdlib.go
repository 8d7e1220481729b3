// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"reflect"
	"unsafe"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
)

// The Stdlib tier: every op through the standard library's AEADs, one at a time: crypto/cipher's GCM
// over crypto/aes, and golang.org/x/crypto/chacha20poly1305 (New and NewX), the Go ecosystem's
// reference implementation of RFC 8439. It is the floor of the default path: where no kernel of this
// CPU was measured to beat them on a batch shape (dispatch.go), the batch runs here, so that adopting
// this package never costs speed. Each Key makes its AEAD once (newStdAEAD), so the steady state
// allocates nothing.

// newStdAEAD returns the standard library's AEAD for suite s and key; nil for the ChaCha family where
// the tier composes it (stdChaChaAEAD).
func newStdAEAD(s Suite, key []byte, block cipher.Block) (cipher.AEAD, error) {
	switch {
	case s.isChaCha() && !stdChaChaAEAD:
		return nil, nil
	case s == ChaCha20Poly1305:
		return chacha20poly1305.New(key)
	case s == XChaCha20Poly1305:
		return chacha20poly1305.NewX(key)
	}
	return cipher.NewGCM(block)
}

// wipeStdAEAD clears the key that a ChaCha-family AEAD of golang.org/x/crypto holds. Those AEADs are
// pointers to a struct of one [32]byte key (x/crypto's chacha20poly1305 and xchacha20poly1305 types)
// and offer no way to wipe it; the layout is checked through reflection before the key is cleared,
// and TestStdlibKeyWiped fails if a new x/crypto changes it. crypto/cipher's GCM holds the AES round
// keys inside crypto/aes, which offers no way to wipe them either: Destroy drops that reference, as
// for the Generic tier's block (gcmKey.destroy).
func wipeStdAEAD(a cipher.AEAD) bool {
	v := reflect.ValueOf(a)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	e := v.Type().Elem()
	if e.Kind() != reflect.Struct || e.NumField() != 1 || e.Field(0).Type != reflect.TypeFor[[32]byte]() {
		return false
	}
	clear((*[32]byte)(unsafe.Pointer(v.Pointer()))[:])
	return true
}

// stdRun processes the ops of ops of one family (the AES-GCM family if gcm, else the ChaCha family)
// through the standard library and returns how many Opens failed; ops small enough for the fused
// kernels of tier r.tiny run there instead (tinyOps; tiny Stdlib: none), ChaCha-family ops that
// r.one takes on its tier's one-op path, and the Seals that r.pipe takes, where the batch has enough
// of them, in the AVX2 single-message pipeline; where r takes none (route.offStd) and for the
// AES-GCM family, which has none of these, the loop is the standard library's calls alone. A failed
// op's Dst is zeroed (the standard library's AEADs clear it too).
func stdRun(ops []Op, open, gcm bool, r *route) (failed int) {
	if gcm || !r.offStd() {
		for i := range ops {
			if op := &ops[i]; op.Key.suite.isGCM() == gcm && !stdOp(op, open) {
				failed++
			}
		}
		return failed
	}
	sealsPiped := !open && r.pipe.runs(ops)
	if sealsPiped {
		chachaSealPipeline(ops, &r.pipe)
	}
	fused := newTinyOps(r.tiny, open)
	fused.planPipeline(ops)
	for i := range ops {
		op := &ops[i]
		if op.Key.suite.isGCM() != gcm || sealsPiped && r.pipe.takes(op) {
			continue
		}
		if n, ok := fused.fits(op); ok {
			failed += fused.run(ops, i, n)
			continue
		}
		if !gcm && r.one.takes(op, open, false) {
			failed += chachaRunOne(r.one.tier, op, open)
			continue
		}
		if !stdOp(op, open) {
			failed++
		}
	}
	return failed + fused.flush(ops)
}

// msgLen is op's message (plaintext) length: its Src, less the tag for Open (negative for an Open
// shorter than the tag).
func msgLen(op *Op, open bool) int {
	if open {
		return len(op.Src) - TagSize
	}
	return len(op.Src)
}

// stdOp seals or opens op with its Key's standard-library AEAD and reports whether it succeeded.
// checkOps (runAlone for a batch of one) has vetted the lengths, so Dst has exactly the room the
// AEAD appends into.
func stdOp(op *Op, open bool) bool {
	a := op.Key.std
	if a == nil {
		return stdChaChaComposed(op, open)
	}
	if !open {
		a.Seal(op.Dst[:0], op.Nonce, op.Src, op.AD)
		return true
	}
	if len(op.Src) < TagSize {
		failOpen(op)
		return false
	}
	if _, err := a.Open(op.Dst[:0], op.Nonce, op.Src, op.AD); err != nil {
		failOpen(op)
		return false
	}
	op.Err = nil
	return true
}

// stdChaChaComposed seals or opens a ChaCha-family op as golang.org/x/crypto's portable
// chacha20poly1305 does (RFC 8439 section 2.8), from the same ChaCha20 (its package chacha20, NEON
// on arm64) and this package's portable Poly1305 (the same radix-2^64 arithmetic as x/crypto's),
// without allocating: block 0, the one-time Poly1305 key, comes from the portable block function,
// since a buffer handed to chacha20.Cipher escapes to the heap. Open authenticates before it
// decrypts.
func stdChaChaComposed(op *Op, open bool) bool {
	if open && len(op.Src) < TagSize {
		failOpen(op)
		return false
	}
	var key [32]byte
	var sub [8]uint32
	var xnonce [12]byte // the nonce words as bytes (XChaCha20: 0^32 || nonce[16:24])
	words, nonce := chachaOpKey(op, &sub, false)
	for i, w := range nonce {
		binary.LittleEndian.PutUint32(xnonce[4*i:], w)
	}
	for i, w := range words {
		binary.LittleEndian.PutUint32(key[4*i:], w)
	}
	var block0 [64]byte
	chachaBlock(&block0, words, 0, &nonce)
	polyKey := (*[32]byte)(block0[:32])
	s, _ := chacha20.NewUnauthenticatedCipher(key[:], xnonce[:])
	s.SetCounter(1)
	n := len(op.Src)
	ok := true
	if open {
		n -= TagSize
		tag := poly1305AEAD(op.AD, op.Src[:n], polyKey)
		if ok = subtle.ConstantTimeCompare(tag[:], op.Src[n:]) == 1; ok {
			s.XORKeyStream(op.Dst, op.Src[:n])
			op.Err = nil
		} else {
			failOpen(op)
		}
	} else {
		s.XORKeyStream(op.Dst[:n], op.Src)
		tag := poly1305AEAD(op.AD, op.Dst[:n], polyKey)
		copy(op.Dst[n:], tag[:])
	}
	*s = chacha20.Cipher{}
	clear(key[:])
	clear(sub[:])
	clear(block0[:])
	return ok
}
