// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// Message sizes and field offsets. Every multi-byte integer is little-endian.
//
//	initiation (148): type(4) sender(4) ephemeral(32) static(32+16) timestamp(12+16) mac1(16) mac2(16)
//	response    (92): type(4) sender(4) receiver(4) ephemeral(32) empty(0+16) mac1(16) mac2(16)
//	cookie      (64): type(4) receiver(4) nonce(24) cookie(16+16)
const (
	tagSize         = kernels.TagSize // Poly1305
	macSize         = 16              // BLAKE2s-128
	timestampSize   = 12              // TAI64N
	cookieSize      = 16
	cookieNonceSize = 24 // XChaCha20

	initSender    = 4
	initEphemeral = 8
	initStatic    = initEphemeral + KeySize                 // 40
	initTimestamp = initStatic + KeySize + tagSize          // 88
	initMAC1      = initTimestamp + timestampSize + tagSize // 116
	initMAC2      = initMAC1 + macSize                      // 132

	respSender    = 4
	respReceiver  = 8
	respEphemeral = 12
	respEmpty     = respEphemeral + KeySize // 44
	respMAC1      = respEmpty + tagSize     // 60
	respMAC2      = respMAC1 + macSize      // 76

	cookieReceiver = 4
	cookieNonce    = 8
	cookieBox      = cookieNonce + cookieNonceSize // 32
)

// Errors returned for rejected input. Every one wraps into a message naming the detail; compare
// with errors.Is. None of them is worth more than a counter to the data plane: the packet is dropped.
var (
	ErrMessageSize       = errors.New("handshake: wrong message length")
	ErrMessageType       = errors.New("handshake: not a handshake message type (1, 2 or 3 with zero reserved bytes)")
	ErrMAC1              = errors.New("handshake: bad mac1")
	ErrMAC2              = errors.New("handshake: missing or bad mac2 while under load (a cookie reply was produced)")
	ErrRateLimited       = errors.New("handshake: rate limited")
	ErrUnknownPeer       = errors.New("handshake: unknown peer")
	ErrUnknownIndex      = errors.New("handshake: unknown receiver index")
	ErrDecrypt           = errors.New("handshake: decryption failed")
	ErrReplayedTimestamp = errors.New("handshake: initiation timestamp not newer than the last accepted one")
	ErrInitiationFlood   = errors.New("handshake: initiation less than 20 ms after the peer's last accepted one")
	ErrInitiationTooSoon = errors.New("handshake: an initiation or response was sent to this peer less than REKEY_TIMEOUT ago")
	ErrPeerExists        = errors.New("handshake: peer already added")
	ErrInvalidPeerKey    = errors.New("handshake: peer public key is of low order or our own")
	ErrNoPrivateKey      = errors.New("handshake: no private key configured")
)

// messageType reads the type field. It is a full uint32 compare, so non-zero reserved bytes make an
// unknown type, as in wireguard-go.
func messageType(msg []byte) protocol.MessageType {
	return protocol.MessageType(binary.LittleEndian.Uint32(msg))
}

// tai64nEpoch is 2^62 + 10: TAI64 labels second 0 of 1970 TAI as 2^62, and TAI ran 10 s ahead of UTC
// in 1970. Leap seconds since then are ignored, as every WireGuard implementation does; only the
// order of timestamps matters (paper section 5.4.2, msg.timestamp).
const tai64nEpoch = 0x400000000000000a

// timestampWhitener clears the low 24 bits of the nanoseconds (about 16.8 ms), so the timestamp does
// not give away a precise clock reading to someone who later learns the keys; wireguard-go does the
// same. Replay protection only needs monotonic order at handshake rate.
const timestampWhitener = 1<<24 - 1

// tai64n returns the 12-byte TAI64N label of t: big-endian seconds then big-endian nanoseconds, so
// that byte-wise comparison is time order.
func tai64n(t time.Time) [timestampSize]byte {
	var ts [timestampSize]byte
	binary.BigEndian.PutUint64(ts[:8], uint64(t.Unix())+tai64nEpoch)
	binary.BigEndian.PutUint32(ts[8:], uint32(t.Nanosecond())&^timestampWhitener)
	return ts
}
