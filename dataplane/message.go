// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"encoding/binary"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// Overhead is what a transport data message adds to its padded plaintext: the header in front
// (protocol.TransportHeaderSize) and the AEAD tag behind it (kernels.TagSize). A keepalive, an
// empty payload, is the shortest transport message: Overhead bytes.
const Overhead = protocol.TransportHeaderSize + kernels.TagSize

// rekeyOnReceiveAge is when an initiator that still receives on its keypair asks for a new
// handshake, so that it completes before the keypair expires (WireGuard paper, section 6.2:
// protocol.RejectAfterTime - protocol.KeepaliveTimeout - protocol.RekeyTimeout).
const rekeyOnReceiveAge = protocol.RejectAfterTime - protocol.KeepaliveTimeout - protocol.RekeyTimeout

// paddedLen returns the length of a size-byte plaintext after zero padding: the next multiple of
// protocol.PaddingMultiple, but not beyond mtu (section 5.4.6). A packet longer than the MTU (which the TUN
// should not hand us) is rounded up regardless: padding never truncates. mtu <= 0 means no limit.
func paddedLen(size, mtu int) int {
	p := (size + protocol.PaddingMultiple - 1) &^ (protocol.PaddingMultiple - 1)
	if mtu > 0 && p > mtu {
		p = max(size, mtu)
	}
	return p
}

// putHeader writes a transport header into h (protocol.TransportHeaderSize bytes).
func putHeader(h []byte, receiver uint32, counter uint64) {
	_ = h[protocol.TransportHeaderSize-1]
	binary.LittleEndian.PutUint32(h[0:4], protocol.TypeTransport) // type 4 and three zero reserved bytes
	binary.LittleEndian.PutUint32(h[protocol.TransportReceiverOffset:], receiver)
	binary.LittleEndian.PutUint64(h[protocol.TransportCounterOffset:], counter)
}

// headerReceiver and headerCounter read a transport header's fields.
func headerReceiver(h []byte) uint32 {
	return binary.LittleEndian.Uint32(h[protocol.TransportReceiverOffset:])
}
func headerCounter(h []byte) uint64 {
	return binary.LittleEndian.Uint64(h[protocol.TransportCounterOffset:])
}

// putNonce writes the 12-byte AEAD nonce of a transport message: 32 zero bits followed by the
// 64-bit counter, little-endian (section 5.4.6). The AES-GCM suites use the same layout.
func putNonce(n *[12]byte, counter uint64) {
	binary.LittleEndian.PutUint32(n[0:4], 0)
	binary.LittleEndian.PutUint64(n[4:12], counter)
}

// setOp makes op the AEAD op of a transport message's payload (no additional data, section 5.4.6)
// field by field: a composite literal assigned to it is built on the stack and copied over in
// 16-byte moves, each of which waits for the two 8-byte stores it spans.
func setOp(op *kernels.Op, key *kernels.Key, nonce, src, dst []byte) {
	op.Key, op.Nonce, op.AD, op.Src, op.Dst, op.Err = key, nonce, nil, src, dst, nil
}

// MessageType returns the WireGuard message type of a datagram, or 0 if it is not one: the first byte
// is the type and the three reserved bytes must be zero (the 32-bit little-endian word is the type).
func MessageType(d []byte) uint8 {
	if len(d) < 4 {
		return 0
	}
	t := binary.LittleEndian.Uint32(d)
	if t < protocol.TypeInitiation || t > protocol.TypeTransport {
		return 0
	}
	return uint8(t)
}

// isHandshake reports whether d is a handshake message (types 1-3) of the right length.
func isHandshake(d []byte) bool {
	switch MessageType(d) {
	case protocol.TypeInitiation:
		return len(d) == protocol.InitiationSize
	case protocol.TypeResponse:
		return len(d) == protocol.ResponseSize
	case protocol.TypeCookieReply:
		return len(d) == protocol.CookieReplySize
	}
	return false
}

// Verdict is what a stage decided for one packet. Every packet of a batch gets one, and every
// verdict but VerdictOK is a drop counted for the peer (when known) and for the PeerSet.
type Verdict uint8

const (
	VerdictOK         Verdict = iota // sealed / opened, checked and ready to send / deliver
	VerdictNoRoute                   // encrypt: no allowed IP matches the destination, or the peer has no endpoint
	VerdictNoKey                     // encrypt: the peer has no current keypair; decrypt: unknown receiver index
	VerdictKeyExpired                // the keypair is past protocol.RejectAfterTime or protocol.RejectAfterMessages
	VerdictAuthFailed                // decrypt: the AEAD tag did not verify
	VerdictReplay                    // decrypt: counter already seen or older than the replay window
	VerdictBadSource                 // decrypt: inner source address not among the sending peer's allowed IPs
	VerdictMalformed                 // not a well-formed IP packet / transport message, or no room in the buffer
	NumVerdicts
)

var verdictNames = [NumVerdicts]string{"ok", "no route", "no key", "key expired", "auth failed", "replay", "bad source", "malformed"}

func (v Verdict) String() string {
	if v < NumVerdicts {
		return verdictNames[v]
	}
	return "Verdict(?)"
}
