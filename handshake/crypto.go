// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"crypto/hmac"
	"hash"

	"golang.org/x/crypto/blake2s"
	"golang.org/x/crypto/curve25519"

	"github.com/wirebatch/wirebatch/kernels"
)

// The primitives of WireGuard paper section 5.4 ("Protocol & Cryptography"): HASH is BLAKE2s-256,
// MAC is keyed BLAKE2s-128, HMAC is RFC 2104 over BLAKE2s-256, KDFn is HKDF (RFC 5869) built on that
// HMAC, AEAD is ChaCha20-Poly1305 (RFC 8439) and XAEAD is XChaCha20-Poly1305.

const (
	// construction and identifier seed the chaining key and hash (paper section 5.4.2).
	construction = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s"
	identifier   = "WireGuard v1 zx2c4 Jason@zx2c4.com"

	// labelMAC1 and labelCookie prefix the receiver's static public key to derive the MAC1 key and
	// the cookie encryption key (paper section 5.4.4 and 5.4.7).
	labelMAC1   = "mac1----"
	labelCookie = "cookie--"
)

// initialChainKey is C = HASH(CONSTRUCTION) and initialHash is H = HASH(C || IDENTIFIER), the values
// both roles start from before mixing in the responder's static public key (paper section 5.4.2).
var (
	initialChainKey = blake2s.Sum256([]byte(construction))
	initialHash     = hashOf(initialChainKey[:], []byte(identifier))
)

// hashOf is HASH(parts[0] || parts[1] || ...).
func hashOf(parts ...[]byte) [blake2s.Size]byte {
	h, _ := blake2s.New256(nil) // cannot fail without a key
	for _, p := range parts {
		h.Write(p)
	}
	var out [blake2s.Size]byte
	h.Sum(out[:0])
	return out
}

// macOf is MAC(key, data): BLAKE2s keyed with key, 16-byte output. key is 16 bytes (a cookie) or
// 32 bytes (the MAC1 key, the cookie secret), both within BLAKE2s's key limit.
func macOf(key, data []byte) [blake2s.Size128]byte {
	h, err := blake2s.New128(key)
	if err != nil {
		panic("handshake: " + err.Error()) // every caller passes a fixed 16- or 32-byte key
	}
	h.Write(data)
	var out [blake2s.Size128]byte
	h.Sum(out[:0])
	return out
}

func newBLAKE2s256() hash.Hash {
	h, _ := blake2s.New256(nil)
	return h
}

// hmacOf is HMAC-BLAKE2s(key, parts...).
func hmacOf(key []byte, parts ...[]byte) [blake2s.Size]byte {
	m := hmac.New(newBLAKE2s256, key)
	for _, p := range parts {
		m.Write(p)
	}
	var out [blake2s.Size]byte
	m.Sum(out[:0])
	return out
}

// kdf is HKDF with the chaining key as salt: it extracts τ0 = HMAC(key, input) and expands
// τ1 = HMAC(τ0, 0x1), τ2 = HMAC(τ0, τ1 || 0x2), τ3 = HMAC(τ0, τ2 || 0x3) (paper section 5.4, KDFn).
// Only the first n outputs are computed; the others are left zero. The pseudorandom key τ0 is wiped.
func kdf(n int, key, input []byte) (t1, t2, t3 [blake2s.Size]byte) {
	prk := hmacOf(key, input)
	defer clear(prk[:])
	t1 = hmacOf(prk[:], []byte{1})
	if n >= 2 {
		t2 = hmacOf(prk[:], t1[:], []byte{2})
	}
	if n >= 3 {
		t3 = hmacOf(prk[:], t2[:], []byte{3})
	}
	return
}

// zeroNonce is the AEAD nonce of every handshake encryption: each key is used exactly once
// (paper section 5.4.2, "AEAD(k, 0, ...)").
var zeroNonce [12]byte

// sealOnce encrypts plaintext under the one-time key k with nonce 0 and additional data ad, writing
// ciphertext||tag to dst (len(plaintext)+16 bytes). The expanded key is destroyed before returning.
func sealOnce(dst []byte, k *[32]byte, plaintext, ad []byte) {
	key, err := kernels.NewKey(kernels.ChaCha20Poly1305, k[:])
	if err != nil {
		panic(err) // k is a 32-byte array: NewKey cannot reject it
	}
	defer key.Destroy()
	ops := [1]kernels.Op{{Key: key, Nonce: zeroNonce[:], AD: ad, Src: plaintext, Dst: dst}}
	kernels.Seal(ops[:])
}

// openOnce is sealOnce's inverse: it authenticates and decrypts ciphertext (with its tag) into dst
// (len(ciphertext)-16 bytes) and reports whether the tag verified. On failure dst is zeroed.
func openOnce(dst []byte, k *[32]byte, ciphertext, ad []byte) bool {
	key, err := kernels.NewKey(kernels.ChaCha20Poly1305, k[:])
	if err != nil {
		panic(err) // k is a 32-byte array: NewKey cannot reject it
	}
	defer key.Destroy()
	ops := [1]kernels.Op{{Key: key, Nonce: zeroNonce[:], AD: ad, Src: ciphertext, Dst: dst}}
	return kernels.Open(ops[:]) == 0
}

// dh is DH(private, public) (paper section 5.4): X25519. It fails for low-order public keys, whose
// all-zero shared secret would let an attacker fix the key schedule; curve25519.X25519 checks that
// in constant time.
func dh(private *PrivateKey, public []byte) ([32]byte, error) {
	var out [32]byte
	shared, err := curve25519.X25519(private[:], public)
	if err != nil {
		return out, err
	}
	copy(out[:], shared)
	clear(shared)
	return out, nil
}
