// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package quic protects and unprotects batches of QUIC packets: packet protection (RFC 9001
// section 5.3) and header protection (section 5.4) for QUIC version 1 and version 2 (RFC 9369).
//
// QUIC stacks build and send packets in GSO batches of dozens but seal each packet and mask each
// header on its own. Here a batch is one call: the AEAD of every packet goes through the
// multi-packet kernels of package kernels (kernels.Seal and kernels.Open, which pick the fastest
// path this CPU has for the batch), and the header-protection masks of the whole batch come from
// one pass of the block function (kernels.Key.EncryptBlocks: AES-ECB of the samples, or ChaCha20
// blocks, in vector lanes). The output is byte-identical to RFC 9001.
//
// RetryTag and VerifyRetry give a Retry packet's integrity tag (section 5.8): Retry packets carry no
// packet protection.
//
// The package knows nothing of connections, streams, frames or I/O: a Packet is one packet's bytes
// and where its packet number sits. It never parses a long header's Length, and header bits other
// than the header form and the packet-number length pass through opaque.
package quic

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"hash"
	"strconv"

	"github.com/wirebatch/wirebatch/kernels"
)

// Version is a QUIC version number.
type Version uint32

const (
	Version1 Version = 1          // RFC 9000/9001
	Version2 Version = 0x6b3343cf // RFC 9369
)

// Suite is a TLS 1.3 cipher suite as QUIC uses it (RFC 9001 section 5.3).
type Suite uint8

const (
	AES128GCM        Suite = iota // TLS_AES_128_GCM_SHA256
	AES256GCM                     // TLS_AES_256_GCM_SHA384
	ChaCha20Poly1305              // TLS_CHACHA20_POLY1305_SHA256
)

// ErrAuth is the error of a packet that Open could not authenticate, or that is too short for the
// header-protection sample and a tag.
var ErrAuth = errors.New("quic: packet authentication failed")

// params are a version's labels (RFC 9001 section 5.1, RFC 9369 section 3.3.2), Initial salt
// (RFC 9001 section 5.2, RFC 9369 section 3.3.1) and Retry integrity key and nonce (RFC 9001
// section 5.8, RFC 9369 section 3.3.3).
type params struct {
	key, iv, hp, ku string
	salt            [20]byte
	retryKey        [16]byte
	retryNonce      [12]byte
}

func versionParams(v Version) (params, bool) {
	switch v {
	case Version1:
		return params{"quic key", "quic iv", "quic hp", "quic ku", [20]byte{
			0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
			0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a},
			[16]byte{0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e},
			[12]byte{0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb}}, true
	case Version2:
		return params{"quicv2 key", "quicv2 iv", "quicv2 hp", "quicv2 ku", [20]byte{
			0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
			0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9},
			[16]byte{0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92},
			[12]byte{0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a}}, true
	}
	return params{}, false
}

// aead is a suite's AEAD in package kernels, its key length and the hash of its HKDF.
func (s Suite) aead() (suite kernels.Suite, keyLen int, h func() hash.Hash, ok bool) {
	switch s {
	case AES128GCM:
		return kernels.AES128GCM, 16, sha256.New, true
	case AES256GCM:
		return kernels.AES256GCM, 32, sha512.New384, true
	case ChaCha20Poly1305:
		return kernels.ChaCha20Poly1305, 32, sha256.New, true
	}
	return 0, 0, nil, false
}

// Keys are one direction's packet protection keys of one key phase: the AEAD key and IV, the header
// protection key, and the traffic secret the next key phase derives from. They are immutable and
// safe for concurrent use by several goroutines, like a kernels.Key; Destroy wipes them.
type Keys struct {
	version   Version
	suite     Suite
	secret    []byte // the traffic secret, for Next
	iv        [12]byte
	aead      *kernels.Key
	hpRaw     []byte // the header protection key, for Next's copy of it
	hp        *kernels.Key
	destroyed bool
	single    singleScratch // the scratch of batches of one packet (protect.go)
}

// NewKeys derives one direction's packet protection key, IV and header protection key from a
// traffic secret: HKDF-Expand-Label (RFC 8446 section 7.1) with the labels "quic key", "quic iv" and
// "quic hp" ("quicv2 key", "quicv2 iv" and "quicv2 hp" for Version2) and the hash of the suite. The
// Keys keep their own copy of secret. It returns an error for an unknown version or suite, or a
// secret shorter than the suite's hash.
func NewKeys(v Version, s Suite, secret []byte) (*Keys, error) {
	p, ok := versionParams(v)
	if !ok {
		return nil, errors.New("quic: unknown version " + strconv.FormatUint(uint64(v), 16))
	}
	ks, keyLen, h, ok := s.aead()
	if !ok {
		return nil, errors.New("quic: unknown suite " + strconv.Itoa(int(s)))
	}
	if len(secret) < h().Size() {
		return nil, errors.New("quic: the traffic secret is shorter than the suite's hash")
	}
	k := &Keys{version: v, suite: s, secret: append([]byte(nil), secret...)}
	k.single.s = newScratch(1)
	key := expandLabel(h, secret, p.key, keyLen)
	defer clear(key)
	copy(k.iv[:], expandLabel(h, secret, p.iv, 12))
	k.hpRaw = expandLabel(h, secret, p.hp, keyLen)
	var err error
	if k.aead, err = kernels.NewKey(ks, key); err != nil {
		return nil, err
	}
	if k.hp, err = kernels.NewKey(ks, k.hpRaw); err != nil { // AES-ECB or ChaCha20 under hp
		return nil, err
	}
	return k, nil
}

// NewInitialKeys derives the client's and the server's Initial keys (AES-128-GCM) from the client's
// first Destination Connection ID (RFC 9001 section 5.2; RFC 9369 section 3.3.1). It panics for an
// unknown version.
func NewInitialKeys(v Version, dcid []byte) (client, server *Keys) {
	p, ok := versionParams(v)
	if !ok {
		panic("quic: unknown version " + strconv.FormatUint(uint64(v), 16))
	}
	initial, err := hkdf.Extract(sha256.New, dcid, p.salt[:])
	if err != nil {
		panic("quic: " + err.Error())
	}
	defer clear(initial)
	cs := expandLabel(sha256.New, initial, "client in", sha256.Size)
	ss := expandLabel(sha256.New, initial, "server in", sha256.Size)
	defer clear(cs)
	defer clear(ss)
	if client, err = NewKeys(v, AES128GCM, cs); err != nil {
		panic("quic: " + err.Error())
	}
	if server, err = NewKeys(v, AES128GCM, ss); err != nil {
		panic("quic: " + err.Error())
	}
	return client, server
}

// Next returns the keys of the next key phase (RFC 9001 section 6.1): a new secret from
// HKDF-Expand-Label(secret, "quic ku" or "quicv2 ku", "", hash length), and from it a new AEAD key
// and IV; the header protection key is kept (a copy of it, so that destroying either phase leaves
// the other intact).
func (k *Keys) Next() (*Keys, error) {
	k.mustBeLive()
	p, _ := versionParams(k.version)
	_, _, h, _ := k.suite.aead()
	next := expandLabel(h, k.secret, p.ku, h().Size())
	defer clear(next)
	n, err := NewKeys(k.version, k.suite, next)
	if err != nil {
		return nil, err
	}
	copy(n.hpRaw, k.hpRaw)
	hp, err := kernels.NewKey(k.hp.Suite(), k.hpRaw)
	if err != nil {
		return nil, err
	}
	n.hp.Destroy()
	n.hp = hp
	return n, nil
}

// Destroy wipes the keys: the secret, the IV, the AEAD and header protection keys. Using them
// afterwards panics. Destroying twice is harmless.
func (k *Keys) Destroy() {
	clear(k.secret)
	clear(k.iv[:])
	clear(k.hpRaw)
	if k.aead != nil {
		k.aead.Destroy()
	}
	if k.hp != nil {
		k.hp.Destroy()
	}
	k.destroyed = true
}

func (k *Keys) mustBeLive() {
	if k == nil {
		panic("quic: nil Keys")
	}
	if k.destroyed || k.aead == nil {
		panic("quic: use of destroyed or zero Keys")
	}
}

// expandLabel is HKDF-Expand-Label(secret, label, "", length) of TLS 1.3 (RFC 8446 section 7.1):
// HKDF-Expand with the info uint16(length) || uint8(len) || "tls13 " || label || uint8(0).
func expandLabel(h func() hash.Hash, secret []byte, label string, length int) []byte {
	full := "tls13 " + label
	info := string([]byte{byte(length >> 8), byte(length), byte(len(full))}) + full + "\x00"
	out, err := hkdf.Expand(h, secret, info, length)
	if err != nil {
		panic("quic: " + err.Error()) // only for lengths past 255 hash blocks, which no caller asks
	}
	return out
}
