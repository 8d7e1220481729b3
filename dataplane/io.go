// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import "net/netip"

// TUN is the packet side of a Device: what it needs of golang.zx2c4.com/wireguard/tun.Device, which
// satisfies it. Package tuntest has an in-memory double. NewDevice reads and writes a Linux TUN with
// virtio-net headers (as tun.CreateTUN opens it where the kernel offers offloads) through package
// tunvnet, which does the offloads without copies (see tunvnet.New); a TUN may also have the
// optional fast paths TUNTryReader and TUNGROWriter below.
type TUN interface {
	// Read reads up to len(bufs) packets, packet i into bufs[i][offset:], its length in sizes[i],
	// blocking until at least one is available. The offset leaves headroom the device may use.
	Read(bufs [][]byte, sizes []int, offset int) (n int, err error)
	// Write writes packet bufs[i][offset:] for every i; it may use the headroom before offset and
	// the capacity after the packet.
	Write(bufs [][]byte, offset int) (int, error)
	// BatchSize is the most packets one Read or Write should carry.
	BatchSize() int
	// Close makes blocked and later calls return an error.
	Close() error
}

// TUNTryReader is an optional fast path of a TUN's reads. A TUN read returns one packet unless the
// kernel handed over a super-packet, so at high rates of small or UDP packets one Read would make a
// batch of one, each paying the pipeline's hand-offs and a send of its own; the Device therefore
// tops a batch up with more reads while packets wait. Given TryRead, it calls it after each Read
// while the buffers left can take a super-packet. Without it, a TUN that exposes its file
// (File() *os.File, as tun.Device does) is polled, and read again while the poll finds a packet
// (two system calls per read where TryRead takes one); any other TUN is read once per batch.
type TUNTryReader interface {
	// TryRead is Read without the wait: it reads the packets that wait, if any, and returns 0 and
	// nil at once if none does.
	TryRead(bufs [][]byte, sizes []int, offset int) (n int, err error)
}

// TUNGROWriter is an optional fast path of a TUN's writes, for a TUN that coalesces the packets of
// a write into super-packets itself (a receive offload, GRO) where they lie: in place, using the
// headroom before offset and needing no capacity after the packets (tunvnet's, which gathers each
// super-packet with one writev). The Device hands it its batches as they are and counts the writes
// it reports failed. Without it, the Device moves the first packet of each flow of a batch into a
// 64 KiB buffer, so that a TUN that coalesces by appending to a packet's buffer (tun.Device on
// Linux) can, writes the batch with Write, and counts a failed Write once.
type TUNGROWriter interface {
	// WriteGRO is Write that returns how many writes to the device failed (a super-packet is one
	// write) and the first error.
	WriteGRO(bufs [][]byte, offset int) (failed int, err error)
}

// UDP is the datagram side of a Device. Package udp (github.com/wirebatch/wirebatch/udp) has the
// real socket, udp.Conn, which also has both optional fast paths below; package udptest an
// in-memory double. ReadBatch is called from one goroutine; WriteBatch from several (the pipeline
// and the control plane's SendHandshake / SendKeepalive), so it must be safe for concurrent use.
type UDP interface {
	// ReadBatch receives up to len(bufs) datagrams, datagram i into bufs[i] (truncated to its
	// length), its size in sizes[i] and its source in srcs[i], blocking until at least one arrives.
	ReadBatch(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (n int, err error)
	// WriteBatch sends datagram bufs[i] to dsts[i] for every i, best effort, as UDP is.
	WriteBatch(bufs [][]byte, dsts []netip.AddrPort) error
	// BatchSize is the most datagrams one call should carry.
	BatchSize() int
	// Close makes blocked and later calls return an error.
	Close() error
}

// UDPBufferReader is an optional fast path of a UDP's reads. The Device reads into the whole
// buffers of its packet pool, where the decrypt stage works in place; given ReadBuffers, it lets
// the UDP put datagrams straight into them (with GRO, the kernel scatters a coalesced message over
// them) and hand them over in the order they filled, with no copy. Without it, the Device calls
// ReadBatch with views of the same buffers at the same offset, which suits a UDP that receives a
// datagram per buffer.
type UDPBufferReader interface {
	// ReadBuffers is ReadBatch into bufs[i][offset:]: datagram i lands there (truncated to the
	// room), its size in sizes[i], its source in srcs[i]; the offset is headroom the Device keeps.
	// It may permute the entries of bufs (swapping slice headers, never moving bytes), so that the
	// buffers holding datagrams come first, in the datagrams' order; on return bufs holds the
	// buffers it was given, each whole.
	ReadBuffers(bufs [][]byte, offset int, sizes []int, srcs []netip.AddrPort) (n int, err error)
}

// UDPSendReporter is an optional fast path of a UDP's writes: with it, a datagram the socket
// refuses (an unreachable endpoint) is counted on its peer (Stats.TxErrors, and the Device's
// WriteErrors once per datagram). Without it, the Device calls WriteBatch and counts an error once
// per batch in WriteErrors, on no peer. Either way the Device sends a batch once: going on past a
// refused datagram to the rest of the batch is the UDP's part.
type UDPSendReporter interface {
	// WriteBatchReport is WriteBatch that also sets refused[i], for every i < len(bufs), to
	// whether datagram i did not go out, and returns how many did not and the first error.
	WriteBatchReport(bufs [][]byte, dsts []netip.AddrPort, refused []bool) (nrefused int, err error)
}
