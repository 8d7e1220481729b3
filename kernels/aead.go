// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import "crypto/cipher"

// NewAEAD returns a drop-in cipher.AEAD for one message at a time on the default path (the
// dispatch table's choice for a batch of one). It follows
// cipher.AEAD's contract exactly: Seal and Open append to dst, whose spare capacity must not overlap
// the input other than exactly in place, and a failed Open returns ErrAuth with no plaintext.
func NewAEAD(s Suite, key []byte) (cipher.AEAD, error) {
	k, err := NewKey(s, key)
	if err != nil {
		return nil, err
	}
	return &aead{key: k}, nil
}

type aead struct{ key *Key }

func (a *aead) NonceSize() int { return a.key.suite.NonceSize() }
func (a *aead) Overhead() int  { return TagSize }

func (a *aead) Seal(dst, nonce, plaintext, additionalData []byte) []byte {
	ret, out := sliceForAppend(dst, len(plaintext)+TagSize)
	var ops [1]Op
	ops[0].set(a.key, nonce, additionalData, plaintext, out)
	Seal(ops[:])
	return ret
}

func (a *aead) Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	if len(ciphertext) < TagSize {
		if len(nonce) != a.NonceSize() {
			panic("kernels: incorrect nonce length given to " + a.key.suite.String())
		}
		return nil, ErrAuth
	}
	ret, out := sliceForAppend(dst, len(ciphertext)-TagSize)
	var ops [1]Op
	ops[0].set(a.key, nonce, additionalData, ciphertext, out)
	if Open(ops[:]) != 0 {
		return nil, ErrAuth
	}
	return ret, nil
}

// sliceForAppend extends in by n bytes, reusing its capacity when it can, and returns the whole slice
// and the n new bytes.
func sliceForAppend(in []byte, n int) (head, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		head = in[:total]
	} else {
		head = make([]byte, total)
		copy(head, in)
	}
	tail = head[len(in):]
	return
}

// set fills op field by field: a composite literal is built on the stack and copied over in 16-byte
// moves, each of which waits for the two 8-byte stores it spans (about 5% of a 64-byte op).
func (op *Op) set(key *Key, nonce, ad, src, dst []byte) {
	op.Key, op.Nonce, op.AD, op.Src, op.Dst = key, nonce, ad, src, dst
}
