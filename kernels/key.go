// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"strconv"
)

// Key is a key expanded once for every tier (ChaCha20 key words; AES round keys and GHASH key).
// It is immutable after NewKey and safe for concurrent use; Destroy wipes it, after which using it
// in an Op panics.
type Key struct {
	_         noCopy
	suite     Suite
	nonceSize int // suite.NonceSize(), 0 in a Key not made by NewKey: validPrefix reads it
	destroyed bool

	// chacha holds the ChaCha20 key as the eight little-endian words of state[4:12] (RFC 8439
	// section 2.3). Used by ChaCha20Poly1305 and XChaCha20Poly1305.
	chacha [8]uint32

	// gcm holds the AES-GCM material; nil for the ChaCha suites.
	gcm *gcmKey

	// std is the standard library's AEAD for this key: the Stdlib tier (stdlib.go).
	std cipher.AEAD
}

// NewKey expands key for suite s. The caller may wipe key afterwards: Key keeps its own copy.
func NewKey(s Suite, key []byte) (*Key, error) {
	if s.KeySize() == 0 {
		return nil, errors.New("kernels: unknown suite " + s.String())
	}
	if len(key) != s.KeySize() {
		return nil, errors.New("kernels: " + s.String() + " takes a " + strconv.Itoa(s.KeySize()) +
			"-byte key, got " + strconv.Itoa(len(key)))
	}
	k := &Key{suite: s, nonceSize: s.NonceSize()}
	var block cipher.Block
	if s.isChaCha() {
		for i := range k.chacha {
			k.chacha[i] = binary.LittleEndian.Uint32(key[4*i:])
		}
	} else {
		g, err := newGCMKey(key)
		if err != nil {
			return nil, err
		}
		k.gcm, block = g, g.block
	}
	std, err := newStdAEAD(s, key, block)
	if err != nil {
		return nil, err
	}
	k.std = std
	return k, nil
}

// Suite returns the suite the key was made for.
func (k *Key) Suite() Suite { return k.suite }

// Destroy wipes the key material the Key holds. It must not race with an operation using the key.
// Destroying twice is harmless.
func (k *Key) Destroy() {
	clear(k.chacha[:])
	if k.gcm != nil {
		k.gcm.destroy()
		k.gcm = nil
	}
	if k.std != nil && k.suite.isChaCha() {
		wipeStdAEAD(k.std)
	}
	k.std = nil
	k.destroyed = true
}

// noCopy makes go vet's copylocks check report a Key copied by value: a copy would share the AES
// tables of the original and keep working on wiped material after the original's Destroy.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
