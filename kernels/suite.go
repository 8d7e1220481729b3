// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import "strconv"

// Suite names one AEAD construction.
type Suite uint8

const (
	ChaCha20Poly1305  Suite = 1 + iota // RFC 8439, 32-byte key, 12-byte nonce
	XChaCha20Poly1305                  // draft-irtf-cfrg-xchacha: 24-byte nonce through an HChaCha20 subkey
	AES128GCM                          // NIST SP 800-38D with a 96-bit IV, 16-byte key
	AES192GCM                          // 24-byte key
	AES256GCM                          // 32-byte key
)

// TagSize is the length of the authentication tag every suite appends.
const TagSize = 16

// String returns the suite's conventional name.
func (s Suite) String() string {
	switch s {
	case ChaCha20Poly1305:
		return "ChaCha20-Poly1305"
	case XChaCha20Poly1305:
		return "XChaCha20-Poly1305"
	case AES128GCM:
		return "AES-128-GCM"
	case AES192GCM:
		return "AES-192-GCM"
	case AES256GCM:
		return "AES-256-GCM"
	}
	return "Suite(" + strconv.Itoa(int(s)) + ")"
}

// KeySize returns the key length in bytes, or 0 for an unknown suite.
func (s Suite) KeySize() int {
	switch s {
	case ChaCha20Poly1305, XChaCha20Poly1305, AES256GCM:
		return 32
	case AES128GCM:
		return 16
	case AES192GCM:
		return 24
	}
	return 0
}

// NonceSize returns the nonce length in bytes, or 0 for an unknown suite.
func (s Suite) NonceSize() int {
	switch s {
	case ChaCha20Poly1305, AES128GCM, AES192GCM, AES256GCM:
		return 12
	case XChaCha20Poly1305:
		return 24
	}
	return 0
}

// isChaCha reports whether s belongs to the ChaCha20-Poly1305 family.
func (s Suite) isChaCha() bool { return s == ChaCha20Poly1305 || s == XChaCha20Poly1305 }

// isGCM reports whether s belongs to the AES-GCM family.
func (s Suite) isGCM() bool { return s >= AES128GCM && s <= AES256GCM }

// maxPlaintext is the longest message a suite may encrypt under one nonce: RFC 8439 section 2.8 allows
// 2^38-64 bytes (a 32-bit block counter starting at 1); SP 800-38D section 5.2.1.1 allows 2^39-256 bits,
// that is 2^36-32 bytes. On 32-bit platforms the int range is the tighter bound.
func (s Suite) maxPlaintext() uint64 {
	if s.isGCM() {
		return 1<<36 - 32
	}
	return 1<<38 - 64
}
