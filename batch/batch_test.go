// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package batch

import (
	"testing"
	"unsafe"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// sealedLen returns the WireGuard datagram length of a plaintext of n bytes:
// header, plaintext padded to a multiple of 16, tag (whitepaper 5.4.6).
func sealedLen(n int) int {
	return protocol.TransportHeaderSize + (n+protocol.PaddingMultiple-1)/protocol.PaddingMultiple*protocol.PaddingMultiple + kernels.TagSize
}

// virtioNetHeaderLen is the virtio_net_hdr a Linux TUN with offloads puts
// in the headroom before each packet.
const virtioNetHeaderLen = 10

func TestLayout(t *testing.T) {
	if Headroom < virtioNetHeaderLen || Headroom < protocol.TransportHeaderSize {
		t.Errorf("Headroom %d cannot hold the virtio-net (%d) or WireGuard (%d) header", Headroom, virtioNetHeaderLen, protocol.TransportHeaderSize)
	}
	if got := sealedLen(MaxPacketLen); got > BufferLen {
		t.Errorf("a sealed %d-byte packet is %d bytes, more than BufferLen %d", MaxPacketLen, got, BufferLen)
	}
	if BufferLen != 1536 || BufferLen%64 != 0 {
		t.Errorf("BufferLen = %d, want 1536, a multiple of the cache line", BufferLen)
	}
	if BatchBytes < MaxPackets*BufferLen || DefaultMaxBytes/BatchBytes < 1 || BatchBytesFor(BufferLen) != BatchBytes {
		t.Errorf("BatchBytes = %d, BatchBytesFor(BufferLen) = %d", BatchBytes, BatchBytesFor(BufferLen))
	}
	if got := Headroom + sealedLen(65535) - protocol.TransportHeaderSize; got > MaxBufferLen || MaxBufferLen%64 != 0 {
		t.Errorf("MaxBufferLen = %d: not a multiple of 64, or less than the %d bytes the largest IP packet needs", MaxBufferLen, got)
	}
	checkBuffers(t, newBatch(BufferLen), BufferLen)
}

// checkBuffers checks that the MaxPackets buffers of b are
// bufferLen bytes long with no capacity beyond, adjacent in one block, and
// each starts on a cache line.
func checkBuffers(t *testing.T, b *Batch, bufferLen int) {
	t.Helper()
	bufs := make([][]byte, MaxPackets)
	b.Buffers(bufs)
	for i, buf := range bufs {
		if len(buf) != bufferLen || cap(buf) != bufferLen {
			t.Fatalf("buffer %d: len %d cap %d, want %d", i, len(buf), cap(buf), bufferLen)
		}
		if i > 0 && uintptr(unsafe.Pointer(&buf[0]))-uintptr(unsafe.Pointer(&bufs[i-1][0])) != uintptr(bufferLen) {
			t.Fatalf("buffers %d and %d are not adjacent", i-1, i)
		}
		if uintptr(unsafe.Pointer(&buf[0]))%64 != 0 {
			t.Fatalf("buffer %d does not start on a 64-byte cache line", i)
		}
	}
}

// TestBuffers: Buffers hands out every whole buffer, as the built-in copy
// does, and the same memory every time.
func TestBuffers(t *testing.T) {
	b := newBatch(BufferLen)
	all := make([][]byte, MaxPackets+1)
	if n := b.Buffers(all); n != MaxPackets || all[MaxPackets] != nil {
		t.Fatalf("Buffers into %d slots copied %d, want %d", len(all), n, MaxPackets)
	}
	seen := make(map[*byte]bool)
	for i, buf := range all[:MaxPackets] {
		if len(buf) != BufferLen || cap(buf) != BufferLen || seen[&buf[0]] {
			t.Fatalf("buffer %d: len %d cap %d, seen before %v", i, len(buf), cap(buf), seen[&buf[0]])
		}
		seen[&buf[0]] = true
	}
	copy(all[1][Headroom:], "wire")
	few := make([][]byte, 2)
	if n := b.Buffers(few); n != 2 || &few[1][0] != &all[1][0] || string(few[1][Headroom:Headroom+4]) != "wire" {
		t.Fatalf("Buffers into 2 slots copied %d, or another buffer 1", n)
	}
}
