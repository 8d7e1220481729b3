package dataplane

import (
	"encoding/binary"
	"time"
)

// Message types of the WireGuard protocol (WireGuard paper, section 5.4). Types 1-3 belong to the
// handshake and are passed to the Handshaker; type 4 is the transport data message of this package.
const (
	MessageInitiationType  = 1
	MessageResponseType    = 2
	MessageCookieReplyType = 3
	MessageTransportType   = 4
)

// Sizes of the handshake messages (WireGuard paper, sections 5.4.2-5.4.7): a datagram of one of the
// handshake types must have exactly this length.
const (
	MessageInitiationSize  = 148
	MessageResponseSize    = 92
	MessageCookieReplySize = 64
)

// Transport data message layout (WireGuard paper, section 5.4.6):
//
//	type (1 byte, 4) | reserved (3 zero bytes) | receiver index (u32 LE) | counter (u64 LE) | AEAD(padded packet)
//
// The header sits in the headroom before the plaintext and the tag in the tailroom after it, so that
// encapsulation and decapsulation never move the packet.
const (
	HeaderSize = 16 // type, reserved, receiver index, counter
	TagSize    = 16 // the AEAD tag (kernels.TagSize)
	Overhead   = HeaderSize + TagSize

	// MinTransportSize is the shortest transport message: a keepalive, an empty payload and its tag.
	MinTransportSize = Overhead

	// PaddingMultiple: plaintext is zero-padded to a multiple of 16 bytes, without exceeding the
	// MTU, to hide packet lengths a little (WireGuard paper, section 5.4.6).
	PaddingMultiple = 16

	offsetReceiver = 4
	offsetCounter  = 8
)

// Key lifetime limits (WireGuard paper, section 6.1 and 6.2; the constants of the whitepaper's table).
const (
	RekeyAfterMessages  uint64 = 1 << 60
	RejectAfterMessages uint64 = 1<<64 - 1<<13 - 1
	RekeyAfterTime             = 120 * time.Second
	RejectAfterTime            = 180 * time.Second
	KeepaliveTimeout           = 10 * time.Second
	RekeyTimeout               = 5 * time.Second

	// rekeyOnReceiveAge is when an initiator that still receives on its keypair asks for a new
	// handshake, so that it completes before the keypair expires (section 6.2: RejectAfterTime -
	// KeepaliveTimeout - RekeyTimeout).
	rekeyOnReceiveAge = RejectAfterTime - KeepaliveTimeout - RekeyTimeout
)

// paddedLen returns the length of a size-byte plaintext after zero padding: the next multiple of
// PaddingMultiple, but not beyond mtu (section 5.4.6). A packet longer than the MTU (which the TUN
// should not hand us) is rounded up regardless: padding never truncates. mtu <= 0 means no limit.
func paddedLen(size, mtu int) int {
	p := (size + PaddingMultiple - 1) &^ (PaddingMultiple - 1)
	if mtu > 0 && p > mtu {
		p = max(size, mtu)
	}
	return p
}

// putHeader writes a transport header into h (HeaderSize bytes).
func putHeader(h []byte, receiver uint32, counter uint64) {
	_ = h[HeaderSize-1]
	binary.LittleEndian.PutUint32(h[0:4], MessageTransportType) // type 4 and three zero reserved bytes
	binary.LittleEndian.PutUint32(h[offsetReceiver:], receiver)
	binary.LittleEndian.PutUint64(h[offsetCounter:], counter)
}

// headerReceiver and headerCounter read a transport header's fields.
func headerReceiver(h []byte) uint32 { return binary.LittleEndian.Uint32(h[offsetReceiver:]) }
func headerCounter(h []byte) uint64  { return binary.LittleEndian.Uint64(h[offsetCounter:]) }

// putNonce writes the 12-byte AEAD nonce of a transport message: 32 zero bits followed by the
// 64-bit counter, little-endian (section 5.4.6). The AES-GCM suites use the same layout.
func putNonce(n *[12]byte, counter uint64) {
	binary.LittleEndian.PutUint32(n[0:4], 0)
	binary.LittleEndian.PutUint64(n[4:12], counter)
}

// MessageType returns the WireGuard message type of a datagram, or 0 if it is not one: the first byte
// is the type and the three reserved bytes must be zero (the 32-bit little-endian word is the type).
func MessageType(d []byte) uint8 {
	if len(d) < 4 {
		return 0
	}
	t := binary.LittleEndian.Uint32(d)
	if t < MessageInitiationType || t > MessageTransportType {
		return 0
	}
	return uint8(t)
}

// isHandshake reports whether d is a handshake message (types 1-3) of the right length.
func isHandshake(d []byte) bool {
	switch MessageType(d) {
	case MessageInitiationType:
		return len(d) == MessageInitiationSize
	case MessageResponseType:
		return len(d) == MessageResponseSize
	case MessageCookieReplyType:
		return len(d) == MessageCookieReplySize
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
	VerdictKeyExpired                // the keypair is past RejectAfterTime or RejectAfterMessages
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
