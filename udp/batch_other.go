// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !linux

package udp

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// xnetBatch is what ipv4.PacketConn and ipv6.PacketConn have in common (their Message types are
// aliases of one type).
type xnetBatch interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// batchIO is a Conn's message layer without Linux's recvmmsg and sendmmsg: golang.org/x/net's
// batch calls, which move a datagram per system call here and allocate a *net.UDPAddr per
// datagram received. Message.Segment is not supported: reads report 0, and a Conn never sets it.
// One reader and one writer may call at once: each direction has its own messages.
type batchIO struct {
	batch xnetBatch
	v4    bool
	r, w  []ipv4.Message
	addrs []net.UDPAddr // the writes' destinations
	ips   [][16]byte
}

// newBatchIO returns the message layer of c for batches of up to msgs messages (x/net lays out
// the iovecs itself, so iovs does not matter here).
func newBatchIO(c *net.UDPConn, v4 bool, msgs, iovs int) (*batchIO, error) {
	b := &batchIO{v4: v4, r: make([]ipv4.Message, msgs), w: make([]ipv4.Message, msgs)}
	b.addrs, b.ips = make([]net.UDPAddr, msgs), make([][16]byte, msgs)
	if v4 {
		b.batch = ipv4.NewPacketConn(c)
	} else {
		b.batch = ipv6.NewPacketConn(c)
	}
	return b, nil
}

// read waits for at least one datagram and returns how many messages of ms it filled.
func (b *batchIO) read(ms []Message) (int, error) {
	xs := b.r[:len(ms)]
	for i := range ms {
		xs[i].Buffers = ms[i].Buffers
	}
	got, err := b.batch.ReadBatch(xs, 0)
	for i := range got {
		ms[i].N, ms[i].Segment, ms[i].Addr = xs[i].N, 0, netip.AddrPort{}
		if a, ok := xs[i].Addr.(*net.UDPAddr); ok {
			ap := a.AddrPort()
			ms[i].Addr = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	clear(xs)
	return got, err
}

// write sends ms and returns how many messages were sent, which may be fewer than all (the caller
// sends the rest again), or an error if the first one failed.
func (b *batchIO) write(ms []Message) (int, error) {
	xs := b.w[:len(ms)]
	for i := range ms {
		xs[i].Buffers = ms[i].Buffers
		a, ip := &b.addrs[i], ms[i].Addr.Addr()
		if b.v4 {
			a.IP = b.ips[i][:4]
			ip4 := ip.Unmap().As4()
			copy(a.IP, ip4[:])
		} else {
			a.IP = b.ips[i][:16]
			ip16 := ip.As16() // IPv4 as v4-mapped, for the dual-stack socket
			copy(a.IP, ip16[:])
		}
		a.Port, a.Zone = int(ms[i].Addr.Port()), ip.Zone()
		xs[i].Addr = a
	}
	got, err := b.batch.WriteBatch(xs, 0)
	for i := range got {
		ms[i].N = xs[i].N
	}
	clear(xs)
	return got, err
}

// isGSOError reports false: without UDP_SEGMENT no send fails for its sake.
func isGSOError(err error) bool { return false }

// configure asks for buffers of size bytes, which the system may cap silently; there are no
// offloads to turn on.
func configure(c *net.UDPConn, size int) (gso, gro bool) {
	c.SetReadBuffer(size)
	c.SetWriteBuffer(size)
	return false, false
}
