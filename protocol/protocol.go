// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package protocol holds the constants of the WireGuard protocol that several packages share: the
// message types and sizes and the transport data header (WireGuard paper, section 5.4), and the key
// lifetime limits and timers (section 6.1). Package dataplane builds and parses transport data
// messages with them, package handshake the handshake messages, and package batch sizes its
// buffers' headroom for the transport header.
package protocol

import "time"

// MessageType is the first field of every WireGuard message: a little-endian uint32 whose upper
// three bytes are reserved zero. Its values are the Type constants.
type MessageType uint32

// Message types (sections 5.4.2, 5.4.3, 5.4.7 and 5.4.6). The constants are untyped so that they
// compare with a MessageType and with the first byte of a datagram alike.
const (
	TypeInitiation  = 1 // handshake initiation
	TypeResponse    = 2 // handshake response
	TypeCookieReply = 3 // cookie reply
	TypeTransport   = 4 // transport data
)

// Sizes of the handshake messages: a datagram of one of the handshake types has exactly this length.
const (
	InitiationSize  = 148
	ResponseSize    = 92
	CookieReplySize = 64
)

// Transport data message layout (section 5.4.6):
//
//	type (1 byte, 4) | reserved (3 zero bytes) | receiver index (u32 LE) | counter (u64 LE) | AEAD(padded packet)
const (
	TransportHeaderSize     = 16
	TransportReceiverOffset = 4
	TransportCounterOffset  = 8

	// PaddingMultiple: the plaintext is zero-padded to a multiple of 16 bytes, without exceeding
	// the MTU, to hide packet lengths a little.
	PaddingMultiple = 16
)

// Key lifetime limits and timers (section 6.1, the constants of the paper's table).
const (
	RekeyAfterMessages  uint64 = 1 << 60
	RejectAfterMessages uint64 = 1<<64 - 1<<13 - 1
	RekeyAfterTime             = 120 * time.Second
	RejectAfterTime            = 180 * time.Second
	RekeyAttemptTime           = 90 * time.Second
	RekeyTimeout               = 5 * time.Second
	KeepaliveTimeout           = 10 * time.Second
)
