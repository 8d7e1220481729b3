// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package quic

import (
	"crypto/subtle"
	"errors"
	"strconv"
	"sync"

	"github.com/wirebatch/wirebatch/kernels"
)

// A Retry packet (RFC 9000 section 17.2.5) has no packet protection but ends with a Retry Integrity
// Tag (RFC 9001 section 5.8; RFC 9369 section 3.3.3 for version 2): the tag of AES-128-GCM under a
// key and nonce that the version fixes, with an empty plaintext and, as associated data, the Retry
// pseudo-packet: the length of the Original Destination Connection ID (the Destination Connection ID
// of the client's first Initial), that connection ID, then the Retry packet up to the tag. The tag
// catches corruption and Retries forged by attackers who did not see the client's Initial; anyone
// who did can compute it, so it authenticates nothing else.

// maxConnIDLen is the longest connection ID of QUIC versions 1 and 2 (RFC 9000 section 17.2).
const maxConnIDLen = 20

// RetryTag returns the Retry Integrity Tag of retry, a Retry packet up to its tag, answering a
// client whose first Initial carried the Destination Connection ID odcid; a server appends it to the
// packet. It returns an error for an unknown version or an odcid longer than 20 bytes.
func RetryTag(v Version, odcid, retry []byte) ([16]byte, error) {
	var tag [16]byte
	key, nonce, ok := retryAEAD(v)
	if !ok {
		return tag, errors.New("quic: unknown version " + strconv.FormatUint(uint64(v), 16))
	}
	if len(odcid) > maxConnIDLen {
		return tag, errors.New("quic: connection ID longer than 20 bytes")
	}
	retryTag(key, &nonce, odcid, retry, &tag)
	return tag, nil
}

// VerifyRetry reports whether packet, a whole Retry packet, ends with the Retry Integrity Tag of
// the bytes before it, for a client whose first Initial carried the Destination Connection ID odcid.
// An unknown version, an odcid longer than 20 bytes or a packet shorter than a tag give false. The
// tags are compared in constant time.
func VerifyRetry(v Version, odcid, packet []byte) bool {
	n := len(packet) - kernels.TagSize
	key, nonce, ok := retryAEAD(v)
	if !ok || len(odcid) > maxConnIDLen || n < 0 {
		return false
	}
	var tag [16]byte
	retryTag(key, &nonce, odcid, packet[:n], &tag)
	return subtle.ConstantTimeCompare(tag[:], packet[n:]) == 1
}

// retryKeyV1 and retryKeyV2 are the versions' Retry integrity keys, made on first use. The keys are
// public constants: nothing to wipe.
var (
	retryKeyV1 = sync.OnceValue(func() *kernels.Key { return newRetryKey(Version1) })
	retryKeyV2 = sync.OnceValue(func() *kernels.Key { return newRetryKey(Version2) })
)

// retryAEAD returns version v's Retry integrity key and nonce, or false for an unknown version.
func retryAEAD(v Version) (key *kernels.Key, nonce [12]byte, ok bool) {
	p, ok := versionParams(v)
	if !ok {
		return nil, nonce, false
	}
	if v == Version2 {
		return retryKeyV2(), p.retryNonce, true
	}
	return retryKeyV1(), p.retryNonce, true
}

func newRetryKey(v Version) *kernels.Key {
	p, _ := versionParams(v)
	k, err := kernels.NewKey(kernels.AES128GCM, p.retryKey[:])
	if err != nil {
		panic("quic: " + err.Error())
	}
	return k
}

// retryScratch holds a tag computation's pseudo-packet and op, pooled so that Retries, which a
// server sends most of while a flood of Initials is what it defends against, allocate nothing.
type retryScratch struct {
	pseudo []byte
	nonce  [12]byte
	tag    [16]byte
	op     [1]kernels.Op
}

var retryScratches = sync.Pool{New: func() any { return new(retryScratch) }}

// maxPooledPseudo is the largest pseudo-packet buffer a scratch goes back to the pool with: a Retry
// packet ends its UDP datagram (RFC 9000 section 12.2), of at most 65527 bytes, and a larger buffer,
// from an oversized input, is left to the garbage collector rather than held by the pool.
const maxPooledPseudo = 1 + maxConnIDLen + 65527

// retryTag writes to tag the Retry Integrity Tag of retry for odcid (at most 20 bytes) under a
// version's key and nonce (retryAEAD).
func retryTag(key *kernels.Key, nonce *[12]byte, odcid, retry []byte, tag *[16]byte) {
	s := retryScratches.Get().(*retryScratch)
	s.pseudo = append(append(append(s.pseudo[:0], byte(len(odcid))), odcid...), retry...)
	s.nonce = *nonce
	op := &s.op[0]
	op.Key, op.Nonce, op.AD, op.Src, op.Dst = key, s.nonce[:], s.pseudo, s.tag[:0], s.tag[:]
	kernels.Seal(s.op[:])
	*tag = s.tag
	if cap(s.pseudo) > maxPooledPseudo {
		s.pseudo = nil
	}
	retryScratches.Put(s)
}
