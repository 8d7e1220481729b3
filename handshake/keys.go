// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"

	"golang.org/x/crypto/curve25519"
)

// KeySize is the size of every key in the protocol: Curve25519 private and public keys and the
// optional preshared key (WireGuard paper section 5.4).
const KeySize = 32

// PrivateKey is a Curve25519 private key (a static identity, paper section 5.4.1).
type PrivateKey [KeySize]byte

// PublicKey is a Curve25519 public key; peers are named by theirs.
type PublicKey [KeySize]byte

// PresharedKey is the optional symmetric key Q mixed into the handshake (the "psk2" of
// Noise_IKpsk2, paper section 5.4.3). The zero key means none, as in wireguard-go and wg(8).
type PresharedKey [KeySize]byte

// GeneratePrivateKey returns a new random, clamped private key, as `wg genkey` does.
func GeneratePrivateKey() (PrivateKey, error) {
	var k PrivateKey
	if _, err := rand.Read(k[:]); err != nil {
		return PrivateKey{}, err
	}
	k.clamp()
	return k, nil
}

// GeneratePresharedKey returns a new random preshared key, as `wg genpsk` does.
func GeneratePresharedKey() (PresharedKey, error) {
	var k PresharedKey
	_, err := rand.Read(k[:])
	return k, err
}

// clamp applies the Curve25519 scalar clamping of RFC 7748 section 5: clear the three low bits
// (a multiple of the cofactor 8), clear bit 255 and set bit 254. X25519 clamps internally anyway;
// storing the clamped form keeps generated keys identical to `wg genkey`'s output.
func (k *PrivateKey) clamp() {
	k[0] &= 248
	k[31] = (k[31] & 127) | 64
}

// Clamped returns k clamped (RFC 7748 section 5), the zero key unchanged: the form in which a
// WireGuard interface stores and reports a private key it was given (wg(8) showconf prints it so).
func (k PrivateKey) Clamped() PrivateKey {
	if !k.IsZero() {
		k.clamp()
	}
	return k
}

// PublicKey returns the public key of k, as `wg pubkey` prints it.
func (k PrivateKey) PublicKey() PublicKey {
	var pub PublicKey
	out, err := curve25519.X25519(k[:], curve25519.Basepoint)
	if err != nil {
		// The base point has prime order, so a zero result is impossible for any scalar.
		panic("handshake: X25519 with the base point failed: " + err.Error())
	}
	copy(pub[:], out)
	return pub
}

// IsZero reports whether k is all zero (no key configured), in constant time.
func (k PrivateKey) IsZero() bool { return isZero(k[:]) }

// IsZero reports whether k is all zero (no preshared key), in constant time.
func (k PresharedKey) IsZero() bool { return isZero(k[:]) }

func isZero(b []byte) bool {
	var zero [KeySize]byte
	return subtle.ConstantTimeCompare(b, zero[:len(b)]) == 1
}

// String returns the key in base64, the format of `wg genkey` and wg-quick configs.
func (k PrivateKey) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// String returns the key in base64, the format of `wg pubkey` and wg-quick configs.
func (k PublicKey) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// String returns the key in base64, the format of `wg genpsk` and wg-quick configs.
func (k PresharedKey) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// ErrKeyEncoding reports a key that is not 32 bytes in standard padded base64.
var ErrKeyEncoding = errors.New("handshake: key must be 32 bytes in base64 (44 characters)")

// ParsePrivateKey decodes a base64 private key as written by `wg genkey`. An unclamped key is
// accepted and kept as given (X25519 clamps when using it), like wg(8) does.
func ParsePrivateKey(s string) (PrivateKey, error) {
	var k PrivateKey
	err := decodeKey(k[:], s)
	return k, err
}

// ParsePublicKey decodes a base64 public key as written by `wg pubkey`.
func ParsePublicKey(s string) (PublicKey, error) {
	var k PublicKey
	err := decodeKey(k[:], s)
	return k, err
}

// ParsePresharedKey decodes a base64 preshared key as written by `wg genpsk`.
func ParsePresharedKey(s string) (PresharedKey, error) {
	var k PresharedKey
	err := decodeKey(k[:], s)
	return k, err
}

func decodeKey(dst []byte, s string) error {
	if len(s) != base64.StdEncoding.EncodedLen(KeySize) {
		return fmt.Errorf("%w: got %d characters", ErrKeyEncoding, len(s))
	}
	// 44 characters decode to at most 33 bytes; Strict rejects non-zero padding bits, so a
	// valid encoding yields exactly 32.
	var buf [KeySize + 1]byte
	defer clear(buf[:])
	n, err := base64.StdEncoding.Strict().Decode(buf[:], []byte(s))
	if err != nil || n != KeySize {
		return fmt.Errorf("%w: not valid base64 of 32 bytes", ErrKeyEncoding) // never echo the input: it may be a private key
	}
	copy(dst, buf[:KeySize])
	return nil
}
