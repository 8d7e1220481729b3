// Package batch provides the packet buffers and batches that the data plane
// moves end to end, and a bounded pool that recycles them.
//
// A Batch holds up to MaxPackets packets, each in its own fixed buffer of
// BufferLen bytes (or of a pool's PoolConfig.BufferLen, for MTUs above 1500)
// with room in front for the headers written in place and
// room behind for padding and the AEAD tag, so a packet is never copied
// between reading it from one device and writing it to the other. The
// batch also carries, built once, the argument shapes of the I/O calls it is
// read into and written from: tun.Device.Read/Write of
// golang.zx2c4.com/wireguard/tun and ReadBatch/WriteBatch of
// golang.org/x/net/ipv4 and ipv6. The package does no crypto and no I/O.
//
// Layout of one buffer (numbers for the 1500-byte MTU path; see the
// constants):
//
//	0          6          16                       16+1500  16+1504  1536
//	| headroom (16)         | IP packet (<= 1500)    | pad    | tag(16) |
//	|          | virtio(10) |
//	| WireGuard header (16) | ciphertext of packet + padding | tag      |
//
// A packet read from the TUN device starts at Headroom: the device writes
// its virtio-net header, when it uses one, into the 10 bytes just before.
// Sealing pads it, encrypts it in place, appends the tag and prepends the
// WireGuard header (Push); the packet, now starting at byte 0, is the UDP
// payload. In the other direction a datagram is read at byte 0, the header
// is parsed and dropped (Pull), the packet is opened in place and trimmed
// (SetSize), and it is written to the TUN device from Headroom again.
package batch

import (
	"fmt"
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/net/ipv4"
)

// Buffer layout. The WireGuard numbers are from the WireGuard whitepaper
// (J. Donenfeld, NDSS 2017), section 5.4.6, "Subsequent Messages: Transport
// Data Messages", and match golang.zx2c4.com/wireguard/device's
// MessageTransportHeaderSize, PaddingMultiple and poly1305.TagSize.
const (
	// TransportHeaderLen is the WireGuard transport data header: message
	// type (1), reserved (3), receiver index (4), counter (8).
	TransportHeaderLen = 16

	// VirtioNetHeaderLen is the virtio_net_hdr a Linux TUN device with
	// IFF_VNET_HDR (offloads on) puts before each packet; wireguard-go's tun
	// package writes and reads it in the offset bytes before the packet
	// (its virtioNetHdrLen).
	VirtioNetHeaderLen = 10

	// Headroom is the space in front of a packet read from or written to
	// the TUN device, and the offset to pass to tun.Device.Read and Write.
	// It holds the WireGuard header once the packet is sealed, and the
	// virtio-net header during TUN I/O (the two are never needed at once).
	Headroom = max(TransportHeaderLen, VirtioNetHeaderLen)

	// MaxPacketLen is the largest IP packet a buffer of the default
	// BufferLen holds: the interface MTU of a 1500-byte Ethernet path. WireGuard's default tunnel MTU on
	// such a path is 1420 (1500 - 40 IPv6 - 8 UDP - 32 WireGuard), but a
	// tunnel interface may be configured up to the path MTU, and 1500 keeps
	// every inbound datagram of a 1500-byte link (at most 1472 bytes of UDP
	// payload over IPv4) within one buffer too.
	MaxPacketLen = 1500

	// PaddingMultiple: WireGuard pads the plaintext with zeros to a multiple
	// of 16 bytes (capped at the MTU) to hide packet lengths.
	PaddingMultiple = 16

	// TagLen is the Poly1305 (or GCM) authentication tag after the
	// ciphertext.
	TagLen = 16

	// Tailroom is the space after a packet of MaxPacketLen bytes: the
	// padding to the next multiple of PaddingMultiple plus the tag.
	Tailroom = (MaxPacketLen+PaddingMultiple-1)/PaddingMultiple*PaddingMultiple - MaxPacketLen + TagLen

	// BufferLen is the size of one packet buffer: 16 + 1500 + 4 + 16 = 1536
	// bytes, exactly the largest sealed datagram (16-byte header, 1504 bytes
	// of padded ciphertext, 16-byte tag) and a multiple of the 64-byte cache
	// line, so every buffer of a batch starts on a line. It is the default
	// of PoolConfig.BufferLen.
	BufferLen = Headroom + MaxPacketLen + Tailroom

	// MaxBufferLen is the largest PoolConfig.BufferLen: room for the largest
	// IP packet (65535 bytes) with the headroom, a block of padding and the
	// tag, rounded up to the cache line.
	MaxBufferLen = (Headroom + 65535 + PaddingMultiple + TagLen + 63) &^ 63

	// MaxPackets is the number of packets a batch holds: wireguard-go's
	// conn.IdealBatchSize, the most packets one sendmmsg/recvmmsg or one
	// offloaded TUN read of its tun package hands over, and eight full loads
	// of the 16 lanes of the widest AEAD kernels.
	MaxPackets = 128
)

// A Verdict is what a stage of the data plane decided about a packet. The
// data plane defines the values; this package only guarantees that a packet
// starts with the zero Verdict each time it enters a batch.
type Verdict uint8

// A PeerID names the peer a packet belongs to. The data plane assigns the
// values (an index into its peer table, for example); 0 is the zero value
// every packet starts with. It is an integer, not a pointer, so that batch
// metadata holds no references for the garbage collector to scan.
type PeerID uint32

// Meta is the per-packet metadata the stages of the data plane pass along
// beside the bytes.
type Meta struct {
	// Endpoint is the remote UDP address: the source of a received datagram,
	// the destination of one to send.
	Endpoint netip.AddrPort
	// Counter is the WireGuard message counter (the AEAD nonce) of the
	// packet.
	Counter uint64
	Peer    PeerID
	Verdict Verdict
}

// Batch is up to MaxPackets packets with their metadata. Packets 0 to Len-1
// are in use. A batch is used by one goroutine at a time; stages hand it on
// through rings. Methods panic, with a "batch:" message, on an index or
// length outside the batch or its buffers: those are programming errors,
// never a property of network input.
type Batch struct {
	n     int
	pool  *Pool
	state batchState

	// Per packet: the buffer, where the packet starts in it and its
	// length. Buffers are slices of one allocation; Filter swaps them
	// between indexes, so buf[i] is not always the i-th buffer of it.
	buf   [MaxPackets][]byte
	start [MaxPackets]int
	size  [MaxPackets]int
	meta  [MaxPackets]Meta

	// Argument shapes for I/O calls, rebuilt in place by the *Args methods.
	tunBufs  [MaxPackets][]byte
	msgs     [MaxPackets]ipv4.Message
	msgBufs  [MaxPackets][]byte // msgs[i].Buffers is msgBufs[i : i+1]
	udpAddrs [MaxPackets]net.UDPAddr
	udpIPs   [MaxPackets][net.IPv6len]byte // udpAddrs[i].IP's storage
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

// New returns an empty batch with buffers of BufferLen bytes, not owned by a
// pool. The data plane takes batches from a Pool; New is for tests and tools.
func New() *Batch { return newBatch(BufferLen) }

// newBatch returns an empty batch whose buffers are bufferLen bytes long, a
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
		b.msgs[i].Buffers = b.msgBufs[i : i+1 : i+1]
	}
	return b
}

// Len returns the number of packets in use.
func (b *Batch) Len() int { return b.n }

// Cap returns MaxPackets.
func (b *Batch) Cap() int { return MaxPackets }

// SetLen sets the number of packets in use to n. Packets that come into use
// are empty, start at Headroom and have zero Meta.
func (b *Batch) SetLen(n int) {
	if n < 0 || n > MaxPackets {
		panic(fmt.Sprintf("batch: SetLen(%d) outside [0, %d]", n, MaxPackets))
	}
	for i := b.n; i < n; i++ {
		b.start[i] = Headroom
		b.size[i] = 0
		b.meta[i] = Meta{}
	}
	b.n = n
}

// Reset empties the batch: SetLen(0).
func (b *Batch) Reset() { b.n = 0 }

// Packet returns the bytes of packet i. Its capacity reaches the end of the
// buffer, so the tailroom can be used by reslicing (the Dst of an in-place
// seal is Packet(i)[:len+TagLen]); SetSize then records the new length.
func (b *Batch) Packet(i int) []byte {
	b.check(i)
	return b.buf[i][b.start[i] : b.start[i]+b.size[i]]
}

// Buffer returns the whole buffer of packet i, headroom and tailroom
// included.
func (b *Batch) Buffer(i int) []byte {
	b.check(i)
	return b.buf[i]
}

// Buffers copies the whole buffers of all MaxPackets packets, in use or not,
// to dst, as the built-in copy does (as many as fit), and returns how many it
// copied. It is for a caller that keeps its own per-packet state in the shape
// of tun.Device.Read (bufs, sizes, offset) and uses the batch only for its
// memory: dst[i] then aliases the batch's i-th buffer until the batch goes
// back to its pool, and the batch's own packet state is left alone.
func (b *Batch) Buffers(dst [][]byte) int {
	return copy(dst, b.buf[:])
}

// Start returns the offset of packet i in its buffer.
func (b *Batch) Start(i int) int {
	b.check(i)
	return b.start[i]
}

// SetSize sets the length of packet i, keeping where it starts, to size
// bytes, which must fit in the buffer. Bytes that come into the packet keep
// whatever the buffer held.
func (b *Batch) SetSize(i, size int) {
	b.check(i)
	if size < 0 || b.start[i]+size > len(b.buf[i]) {
		panic(fmt.Sprintf("batch: packet %d starting at %d cannot be %d bytes long", i, b.start[i], size))
	}
	b.size[i] = size
}

// Push grows packet i by n bytes at the front, into its headroom, and
// returns the grown packet; its first n bytes are the new header to write.
func (b *Batch) Push(i, n int) []byte {
	b.check(i)
	if n < 0 || n > b.start[i] {
		panic(fmt.Sprintf("batch: Push(%d, %d) with %d bytes of headroom", i, n, b.start[i]))
	}
	b.start[i] -= n
	b.size[i] += n
	return b.Packet(i)
}

// Pull removes the first n bytes of packet i, a header that has been
// parsed, and returns them. The caller checks that the packet is at least n
// bytes long: Pull panics otherwise.
func (b *Batch) Pull(i, n int) []byte {
	b.check(i)
	if n < 0 || n > b.size[i] {
		panic(fmt.Sprintf("batch: Pull(%d, %d) from a %d-byte packet", i, n, b.size[i]))
	}
	header := b.buf[i][b.start[i] : b.start[i]+n : b.start[i]+n]
	b.start[i] += n
	b.size[i] -= n
	return header
}

// Meta returns the metadata of packet i, to read and to set.
func (b *Batch) Meta(i int) *Meta {
	b.check(i)
	return &b.meta[i]
}

// Filter keeps the packets for which keep reports true, in their order, as
// packets 0 to Len-1, and returns the new Len. Buffers and metadata move
// with their packets; nothing is copied. keep is called once per packet
// with its index before filtering, in increasing order.
func (b *Batch) Filter(keep func(i int) bool) int {
	kept := 0
	for i := range b.n {
		if !keep(i) {
			continue
		}
		// Indexes at and after i are untouched so far, so i still holds
		// the packet keep just saw.
		if kept != i {
			b.buf[kept], b.buf[i] = b.buf[i], b.buf[kept]
			b.start[kept], b.start[i] = b.start[i], b.start[kept]
			b.size[kept], b.size[i] = b.size[i], b.size[kept]
			b.meta[kept], b.meta[i] = b.meta[i], b.meta[kept]
		}
		kept++
	}
	b.n = kept
	return kept
}

func (b *Batch) check(i int) {
	if uint(i) >= uint(b.n) {
		panic(fmt.Sprintf("batch: packet index %d outside a batch of %d", i, b.n))
	}
}

// TUNReadArgs returns the arguments of a tun.Device.Read into the whole
// batch: every buffer, the sizes slice the device fills, and Headroom as the
// offset. Pass the number of packets read to TUNReadDone:
//
//	bufs, sizes, offset := b.TUNReadArgs()
//	n, err := dev.Read(bufs, sizes, offset)
//	b.TUNReadDone(n)
func (b *Batch) TUNReadArgs() (bufs [][]byte, sizes []int, offset int) {
	for i := range b.tunBufs {
		b.tunBufs[i] = b.buf[i]
		b.size[i] = 0
	}
	return b.tunBufs[:], b.size[:], Headroom
}

// TUNReadDone makes the n packets of a TUN read, at Headroom with the sizes
// the device set, packets 0 to n-1, with zero Meta.
func (b *Batch) TUNReadDone(n int) {
	if n < 0 || n > MaxPackets {
		panic(fmt.Sprintf("batch: TUNReadDone(%d) outside [0, %d]", n, MaxPackets))
	}
	for i := range n {
		if room := len(b.buf[i]) - Headroom; b.size[i] < 0 || b.size[i] > room {
			panic(fmt.Sprintf("batch: TUN read packet %d of %d bytes into a %d-byte buffer", i, b.size[i], room))
		}
		b.start[i] = Headroom
		b.meta[i] = Meta{}
	}
	b.n = n
}

// TUNWriteArgs returns the arguments of a tun.Device.Write of packets 0 to
// Len-1: each buffer up to the end of its packet, and Headroom as the
// offset. tun.Device.Write takes one offset for all packets, so each must
// start at Headroom (as it does after Pull of the transport header from a
// datagram read at 0); TUNWriteArgs panics otherwise.
func (b *Batch) TUNWriteArgs() (bufs [][]byte, offset int) {
	for i := range b.n {
		if b.start[i] != Headroom {
			panic(fmt.Sprintf("batch: TUN write of packet %d starting at %d, not at Headroom", i, b.start[i]))
		}
		b.tunBufs[i] = b.buf[i][:Headroom+b.size[i]]
	}
	return b.tunBufs[:b.n], Headroom
}

// UDPReadArgs returns the messages for an ipv4 or ipv6 PacketConn.ReadBatch
// (ipv4.Message and ipv6.Message are the same type) into the whole batch:
// one per buffer, each receiving at byte 0 of its buffer. Pass the number of
// messages read to UDPReadDone:
//
//	n, err := conn.ReadBatch(b.UDPReadArgs(), 0)
//	b.UDPReadDone(n)
func (b *Batch) UDPReadArgs() []ipv4.Message {
	for i := range b.msgs {
		b.msgBufs[i] = b.buf[i]
		m := &b.msgs[i]
		m.OOB = nil
		m.Addr = nil
		m.N, m.NN, m.Flags = 0, 0, 0
	}
	return b.msgs[:]
}

// UDPReadDone makes the n datagrams of a UDP batch read packets 0 to n-1,
// each starting at byte 0 of its buffer, with its source as Meta.Endpoint
// (the zero AddrPort if the message has no *net.UDPAddr) and the rest of
// Meta zero. An IPv4-mapped IPv6 source (an IPv4 peer seen through a
// dual-stack socket) is unmapped, so a peer has one Endpoint whichever
// socket its datagrams arrive on.
func (b *Batch) UDPReadDone(n int) {
	if n < 0 || n > MaxPackets {
		panic(fmt.Sprintf("batch: UDPReadDone(%d) outside [0, %d]", n, MaxPackets))
	}
	for i := range n {
		m := &b.msgs[i]
		b.start[i] = 0
		b.size[i] = m.N
		b.meta[i] = Meta{}
		if addr, ok := m.Addr.(*net.UDPAddr); ok {
			ap := addr.AddrPort()
			b.meta[i].Endpoint = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	b.n = n
}

// UDPWriteArgs returns the messages for an ipv4 or ipv6 PacketConn.WriteBatch
// of packets 0 to Len-1, each addressed to its Meta.Endpoint (no address, for
// a connected socket, if the Endpoint is the zero AddrPort). The addresses
// are the batch's own *net.UDPAddr values, rewritten on every call.
func (b *Batch) UDPWriteArgs() []ipv4.Message {
	for i := range b.n {
		b.msgBufs[i] = b.Packet(i)
		m := &b.msgs[i]
		m.OOB = nil
		m.N, m.NN, m.Flags = 0, 0, 0
		m.Addr = nil
		if ep := b.meta[i].Endpoint; ep.IsValid() {
			m.Addr = b.udpAddr(i, ep)
		}
	}
	return b.msgs[:b.n]
}

// udpAddr fills the i-th *net.UDPAddr with ep without allocating: the IP
// bytes go to storage in the batch.
func (b *Batch) udpAddr(i int, ep netip.AddrPort) *net.UDPAddr {
	a := &b.udpAddrs[i]
	ip := ep.Addr()
	if ip.Is4() {
		v4 := ip.As4()
		a.IP = append(b.udpIPs[i][:0], v4[:]...)
	} else {
		v6 := ip.As16()
		a.IP = append(b.udpIPs[i][:0], v6[:]...)
	}
	a.Port = int(ep.Port())
	a.Zone = ip.Zone()
	return a
}
