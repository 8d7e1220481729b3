// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package batch provides the packet memory of the data plane: batches of
// fixed packet buffers with room in front for the headers written in place
// and room behind for padding and the AEAD tag, so a packet is never copied
// between reading it from one device and writing it to the other, and a
// bounded pool that recycles the batches, so the memory has a hard ceiling
// and the steady state allocates nothing. The package does no crypto and no
// I/O; the data plane keeps its own per-packet state beside the buffers.
//
// Layout of one buffer (numbers for the 1500-byte MTU path; see the
// constants):
//
//	0          6          16                       16+1500  16+1504  1536
//	| headroom (16)         | IP packet (<= 1500)    | pad    | tag(16) |
//	|          | virtio(10) |
//	| WireGuard header (16) | ciphertext of packet + padding | tag      |
//
// A packet read from the TUN device starts at Headroom; a TUN with
// virtio-net offloads writes its 10-byte header just before. Sealing pads
// the packet, encrypts it in place, appends the tag and writes the WireGuard
// transport header into the headroom; the packet, now starting at byte 0, is
// the UDP payload. In the other direction a datagram is read at byte 0, the
// header is parsed, the packet is opened in place, and it is written to the
// TUN device from Headroom again.
package batch

import (
	"unsafe"

	"github.com/wirebatch/wirebatch/internal/sysio"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// Buffer layout. The WireGuard numbers are from the WireGuard whitepaper
// (J. Donenfeld, NDSS 2017), section 5.4.6, "Subsequent Messages: Transport
// Data Messages".
const (
	// Headroom is the space in front of a packet read from or written to
	// the TUN device, and the offset to pass to tun.Device.Read and Write.
	// It holds the WireGuard transport header once the packet is sealed,
	// and a TUN's virtio-net header (10 bytes) during TUN I/O: the two are
	// never needed at once, and the transport header is the longer.
	Headroom = protocol.TransportHeaderSize

	// MaxPacketLen is the largest IP packet a buffer of the default
	// BufferLen holds: the interface MTU of a 1500-byte Ethernet path.
	// WireGuard's default tunnel MTU on such a path is 1420 (1500 - 40 IPv6 - 8 UDP - 32 WireGuard), but a
	// tunnel interface may be configured up to the path MTU, and 1500 keeps
	// every inbound datagram of a 1500-byte link (at most 1472 bytes of UDP
	// payload over IPv4) within one buffer too.
	MaxPacketLen = 1500

	// Tailroom is the space after a packet of MaxPacketLen bytes: the
	// padding to the next multiple of protocol.PaddingMultiple plus the
	// AEAD tag.
	Tailroom = (MaxPacketLen+protocol.PaddingMultiple-1)/protocol.PaddingMultiple*protocol.PaddingMultiple - MaxPacketLen + kernels.TagSize

	// BufferLen is the size of one packet buffer: 16 + 1500 + 4 + 16 = 1536
	// bytes, exactly the largest sealed datagram (16-byte header, 1504 bytes
	// of padded ciphertext, 16-byte tag) and a multiple of the 64-byte cache
	// line, so every buffer of a batch starts on a line. It is the default
	// of PoolConfig.BufferLen.
	BufferLen = Headroom + MaxPacketLen + Tailroom

	// MaxBufferLen is the largest PoolConfig.BufferLen: room for the largest
	// IP packet (65535 bytes) with the headroom, a block of padding and the
	// tag, rounded up to the cache line.
	MaxBufferLen = (Headroom + 65535 + protocol.PaddingMultiple + kernels.TagSize + 63) &^ 63

	// MaxPackets is the number of packets a batch holds: the data path's
	// batch size, whose home and reasons are sysio.MaxBatch.
	MaxPackets = sysio.MaxBatch
)

// Batch is the memory of MaxPackets packets: one buffer each, slices of one
// allocation. A batch is used by one goroutine at a time, from a Pool's Get
// to its Put; stages hand it on through rings.
type Batch struct {
	pool  *Pool
	state batchState
	buf   [MaxPackets][]byte
}

// BatchBytes is the memory one batch of BufferLen-byte buffers occupies:
// its buffers and the Batch itself. The slices it points to are all inside
// these two blocks.
const BatchBytes = MaxPackets*BufferLen + batchStructBytes

const batchStructBytes = int(unsafe.Sizeof(Batch{}))

// BatchBytesFor is the memory one batch of bufferLen-byte buffers occupies,
// as BatchBytes is for BufferLen: what a Pool counts against MaxBytes per
// batch.
func BatchBytesFor(bufferLen int) int {
	return MaxPackets*bufferLen + batchStructBytes
}

// newBatch returns a batch whose buffers are bufferLen bytes long, a
// multiple of 64 (checked by NewPool).
func newBatch(bufferLen int) *Batch {
	b := new(Batch)
	// One allocation of more than 32 KiB: Go's allocator gives it its own
	// pages, so with bufferLen a multiple of 64 every buffer starts on a
	// cache line.
	storage := make([]byte, MaxPackets*bufferLen)
	for i := range b.buf {
		// Three-index slices: no append or reslice reaches the next buffer.
		b.buf[i] = storage[i*bufferLen : (i+1)*bufferLen : (i+1)*bufferLen]
	}
	return b
}

// Buffers copies the batch's MaxPackets whole buffers to dst, as the
// built-in copy does (as many as fit), and returns how many it copied. The
// caller keeps its own per-packet state in the shape of tun.Device.Read
// (bufs, sizes, offset): dst[i] aliases the batch's i-th buffer until the
// batch goes back to its pool.
func (b *Batch) Buffers(dst [][]byte) int {
	return copy(dst, b.buf[:])
}
