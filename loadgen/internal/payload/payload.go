// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package payload defines the bytes loadgen puts in every UDP datagram: a
// 32-byte header that identifies the packet (run, flow, sequence number),
// carries its send time, and protects itself with a CRC-32C, followed by a
// fixed byte pattern that the receiver compares to detect corrupted bodies.
//
// Layout (big-endian, offsets in bytes):
//
//	0  magic      uint32  "WBLG"
//	4  check      uint32  CRC-32C (Castagnoli) of bytes 8..32
//	8  run        uint32  identifies one send run; 0 marks warm-up traffic
//	12 flow       uint16  flow index (one source port per flow)
//	14 length     uint16  payload length as sent, so truncation is detected
//	16 seq        uint64  per-flow sequence number, from 0
//	24 sendNanos  uint64  CLOCK_MONOTONIC at send, nanoseconds
//	32 body       pattern[32:length]
//
// CLOCK_MONOTONIC is one clock for every network namespace of a host, so a
// receiver on the same host computes one-way latency as its own
// CLOCK_MONOTONIC minus sendNanos.
package payload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// HeaderSize is the smallest valid payload: a header with an empty body.
const HeaderSize = 32

// MaxSize is the largest UDP payload over IPv4 (65535 - 20 - 8).
const MaxSize = 65507

// Magic opens every loadgen payload ("WBLG").
const Magic uint32 = 0x57424c47

// WarmupRun is the run id of warm-up packets, which receivers do not account.
const WarmupRun uint32 = 0

// Header is the decoded header of one payload.
type Header struct {
	Run       uint32
	Flow      uint16
	Length    uint16
	Seq       uint64
	SendNanos int64
}

// ErrCorrupt is returned by Decode for a payload whose header or body does not
// check out; the receiver counts such packets as corrupt.
var ErrCorrupt = errors.New("payload: corrupt")

// castagnoli uses the CPU's CRC32 instruction where there is one (hash/crc32).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// pattern is the body every payload carries: byte i of a payload is pattern[i].
// It is the same for all packets so a sender fills its buffers once and only
// rewrites headers, and a receiver checks a body with one memcmp.
var pattern = func() []byte {
	p := make([]byte, MaxSize)
	// Multiplying by an odd constant visits all 256 byte values before
	// repeating, so shifted or swapped bytes do not match by accident.
	for i := range p {
		p[i] = byte(i*157 + 59)
	}
	return p
}()

// Fill writes the body pattern into p[HeaderSize:]; it panics if p is shorter
// than HeaderSize. A sender calls it once per buffer, then Encode per packet.
func Fill(p []byte) {
	copy(p[HeaderSize:], pattern[HeaderSize:len(p)])
}

// Encode writes h into p[:HeaderSize]. h.Length should be len(p).
// The body is left alone: see Fill.
func Encode(p []byte, h Header) {
	_ = p[HeaderSize-1] // one bounds check for the writes below
	binary.BigEndian.PutUint32(p[0:], Magic)
	binary.BigEndian.PutUint32(p[8:], h.Run)
	binary.BigEndian.PutUint16(p[12:], h.Flow)
	binary.BigEndian.PutUint16(p[14:], h.Length)
	binary.BigEndian.PutUint64(p[16:], h.Seq)
	binary.BigEndian.PutUint64(p[24:], uint64(h.SendNanos))
	binary.BigEndian.PutUint32(p[4:], crc32.Checksum(p[8:HeaderSize], castagnoli))
}

// Decode parses and verifies p. It returns ErrCorrupt when p is too short,
// the magic or checksum is wrong, the length field differs from len(p), or
// the body differs from the pattern.
func Decode(p []byte) (Header, error) {
	if len(p) < HeaderSize || binary.BigEndian.Uint32(p) != Magic {
		return Header{}, ErrCorrupt
	}
	if binary.BigEndian.Uint32(p[4:]) != crc32.Checksum(p[8:HeaderSize], castagnoli) {
		return Header{}, ErrCorrupt
	}
	h := Header{
		Run:       binary.BigEndian.Uint32(p[8:]),
		Flow:      binary.BigEndian.Uint16(p[12:]),
		Length:    binary.BigEndian.Uint16(p[14:]),
		Seq:       binary.BigEndian.Uint64(p[16:]),
		SendNanos: int64(binary.BigEndian.Uint64(p[24:])),
	}
	if int(h.Length) != len(p) || !bytes.Equal(p[HeaderSize:], pattern[HeaderSize:len(p)]) {
		return Header{}, ErrCorrupt
	}
	return h, nil
}
