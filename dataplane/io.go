package dataplane

import "net/netip"

// TUN is the packet side of a Device: what it needs of golang.zx2c4.com/wireguard/tun.Device, which
// satisfies it. Package tuntest has an in-memory double. A TUN that exposes its file (File() *os.File)
// and whose file is a Linux TUN with virtio-net headers (as tun.CreateTUN's is where the kernel offers
// offloads) is read and written through that file instead, the Device splitting and coalescing
// super-packets itself (vnetTUN); then only BatchSize and Close are called.
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
