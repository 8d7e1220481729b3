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

// UDP is the datagram side of a Device. NewUDP opens a real socket; package udptest has an in-memory
// double. ReadBatch is called from one goroutine; WriteBatch from several (the pipeline and the
// control plane's SendHandshake / SendKeepalive), so it must be safe for concurrent use.
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
