// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

// The message layer on Linux: recvmmsg and sendmmsg over mmsghdr arrays made once, with the
// sources and destinations as raw sockaddrs kept per message and the offloads' control messages in
// a buffer per message, so that no call allocates (x/net's ReadBatch allocates a *net.UDPAddr per
// received message, and x/sys's control-message parser allocates too).
//
// A Conn's calls are raw system calls (sysio.RawSyscall, which says why) on its non-blocking
// socket. A BlockingConn's calls block in the kernel, so they are ordinary system calls: the
// runtime must be able to hand the P of a blocked call to other work.

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/internal/sysio"
)

// controlSpace is the room for the control data of one message: a UDP_SEGMENT control message,
// a 16-bit segment size, on send, and a UDP_GRO one, a 32-bit segment size, on receive
// (unix.CmsgSpace(4) is 24 bytes on 64-bit Linux and 16 on 32-bit).
const controlSpace = 32

// mmsgs lays out the messages of one recvmmsg or sendmmsg call: their headers in hdrs[:n], their
// iovecs in iovs[:niov], a sockaddr and control data per message. The arrays grow to the largest
// batch laid out and are then reused.
type mmsgs struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // large enough for a sockaddr_in too
	oob   []byte                  // controlSpace bytes per message, 8-byte aligned as cmsghdrs need
	n     int
	niov  int
	zones zoneCache // receive: sources' scope ids to zones; send: destinations' zones to ids

	// The result of a raw call made through RawConn, whose callback cannot return it.
	got int
	err error
}

// reserve makes room for msgs messages of iovs iovecs in all.
func (s *mmsgs) reserve(msgs, iovs int) {
	if len(s.hdrs) < msgs {
		s.hdrs = make([]unix.Mmsghdr, msgs)
		s.names = make([]unix.RawSockaddrInet6, msgs)
		s.oob = make([]byte, msgs*controlSpace)
	}
	if len(s.iovs) < iovs {
		s.iovs = make([]unix.Iovec, iovs)
	}
}

// fill lays out ms for one call. A send (send true) takes each message's destination, if any, and
// Segment; v4 says the socket is an IPv4 one, whose destinations are sockaddr_ins. A receive gives
// each message room for its source and its UDP_GRO control message.
func (s *mmsgs) fill(ms []Message, send, v4 bool) {
	niov := 0
	for i := range ms {
		niov += len(ms[i].Buffers)
	}
	s.reserve(len(ms), niov)
	s.n, s.niov = len(ms), 0
	for i := range ms {
		m := &ms[i]
		s.hdrs[i] = unix.Mmsghdr{}
		h := &s.hdrs[i].Hdr
		if len(m.Buffers) > 0 {
			h.Iov = &s.iovs[s.niov]
			h.SetIovlen(len(m.Buffers))
		}
		for _, buf := range m.Buffers {
			v := &s.iovs[s.niov]
			*v = unix.Iovec{}
			if len(buf) > 0 {
				v.Base = &buf[0]
				v.SetLen(len(buf))
			}
			s.niov++
		}
		oob := s.oob[i*controlSpace : (i+1)*controlSpace]
		switch {
		case !send:
			s.names[i].Family = 0
			h.Name, h.Namelen = (*byte)(unsafe.Pointer(&s.names[i])), unix.SizeofSockaddrInet6
			h.Control = &oob[0]
			h.SetControllen(len(oob))
		case m.Segment > 0:
			oob = putSegment(oob, m.Segment)
			h.Control = &oob[0]
			h.SetControllen(len(oob))
		}
		if send && m.Addr.IsValid() {
			h.Name, h.Namelen = s.putName(&s.names[i], m.Addr, v4)
		}
	}
}

// done records the result of a call that took the first got messages of ms, the ones fill laid
// out: each one's length and, for a receive, its source and segment size. It drops the iovecs'
// references to the callers' buffers, so that they do not keep them alive.
func (s *mmsgs) done(ms []Message, got int, send bool) {
	for i := range got {
		m, h := &ms[i], &s.hdrs[i]
		m.N = int(h.Len)
		if !send {
			m.Addr = s.source(i)
			oob := s.oob[i*controlSpace : (i+1)*controlSpace]
			m.Segment = groSegment(oob[:min(len(oob), int(h.Hdr.Controllen))])
		}
	}
	clear(s.iovs[:s.niov])
	s.n, s.niov = 0, 0
}

// rawCall issues trap over hdrs[:n] as a raw system call and keeps the result in got and err. It
// reports false, so that RawConn waits for the socket, only if the call would have blocked.
func (s *mmsgs) rawCall(fd uintptr, trap uintptr) bool {
	got, e := sysio.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&s.hdrs[0])), uintptr(s.n), 0)
	if e == unix.EAGAIN {
		return false
	}
	s.got, s.err = int(got), nil
	if e != 0 {
		s.got, s.err = 0, e
	}
	return true
}

// result returns how many messages a raw call took, or the error of RawConn's Read or Write (err)
// or of the system call.
func (s *mmsgs) result(err error) (int, error) {
	if err == nil {
		err = s.err
	}
	if err != nil {
		return 0, err
	}
	return s.got, nil
}

// blockingCall issues trap over hdrs, with flags, as an ordinary system call that may block, again
// if a signal interrupted it, and returns how many messages it took.
func blockingCall(fd int, trap uintptr, hdrs []unix.Mmsghdr, flags int) (int, error) {
	for {
		n, _, e := unix.Syscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), uintptr(flags), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// putName writes dst into name as the socket's family wants it and returns the header's name
// fields: a sockaddr_in on an IPv4 socket (v4), else a sockaddr_in6, IPv4 v4-mapped for a
// dual-stack socket and a zone as its scope id. An IPv6 destination on an IPv4 socket gets a
// sockaddr_in6, which the kernel refuses for that message alone.
func (s *mmsgs) putName(name *unix.RawSockaddrInet6, dst netip.AddrPort, v4 bool) (*byte, uint32) {
	if a := dst.Addr().Unmap(); v4 && a.Is4() {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(name))
		*sa = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.As4()}
		putPort(&sa.Port, dst.Port())
		return (*byte)(unsafe.Pointer(sa)), unix.SizeofSockaddrInet4
	}
	a := dst.Addr()
	*name = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: a.As16(), Scope_id: s.zones.index(a.Zone())}
	putPort(&name.Port, dst.Port())
	return (*byte)(unsafe.Pointer(name)), unix.SizeofSockaddrInet6
}

// source returns the source of received message i from its sockaddr: IPv4 unmapped, a link-local
// IPv6 one with its interface as its zone, or the zero AddrPort for another family.
func (s *mmsgs) source(i int) netip.AddrPort {
	sa := &s.names[i]
	// The port sits at the same offset, in network order, in both families' sockaddrs.
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	case unix.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			// A link-local source keeps its interface, or a reply to it could not be sent.
			a = a.WithZone(s.zones.name(sa.Scope_id))
		}
		return netip.AddrPortFrom(a.Unmap(), port)
	}
	return netip.AddrPort{}
}

// putPort writes port into a sockaddr's port field, in network order.
func putPort(field *uint16, port uint16) {
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(field))[:], port)
}

// zoneCache turns IPv6 zones into interface indexes (sockaddr_in6.sin6_scope_id) and back,
// remembering the last one each way: link-local peers are few and on few interfaces, so the data
// path does not look an interface up, or allocate a name, per datagram.
type zoneCache struct {
	zone string
	id   uint32
}

// index returns the interface index of zone: a number, or an interface name; 0 for none or one
// that does not exist (the send then fails for that datagram alone).
func (z *zoneCache) index(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if zone != z.zone {
		z.zone, z.id = zone, 0
		if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
			z.id = uint32(n)
		} else if ifi, err := net.InterfaceByName(zone); err == nil {
			z.id = uint32(ifi.Index)
		}
	}
	return z.id
}

// name returns the zone of interface index i, as its number (a zone netip and the kernel accept).
func (z *zoneCache) name(i uint32) string {
	if i != z.id || z.zone == "" {
		z.zone, z.id = strconv.FormatUint(uint64(i), 10), i
	}
	return z.zone
}

// batchIO is a Conn's message layer: recvmmsg and sendmmsg as raw system calls on its socket. One
// reader and one writer (Conn serialises its writers) may call at once: each direction has its
// own arrays.
type batchIO struct {
	rc syscall.RawConn
	v4 bool // an IPv4 socket: sockaddr_in; else sockaddr_in6, IPv4 peers v4-mapped
	r  mmsgs
	w  mmsgs

	rfn func(fd uintptr) bool // made once: a closure made per call to RawConn.Read would be allocated
	wfn func(fd uintptr) bool
}

// newBatchIO returns the message layer of c, with room for reads of up to msgs messages of iovs
// iovecs and writes of up to msgs datagrams, so that a Conn's calls never grow the arrays.
func newBatchIO(c *net.UDPConn, v4 bool, msgs, iovs int) (*batchIO, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &batchIO{rc: rc, v4: v4}
	b.r.reserve(msgs, iovs)
	b.w.reserve(msgs, msgs)
	b.rfn = func(fd uintptr) bool { return b.r.rawCall(fd, unix.SYS_RECVMMSG) }
	b.wfn = func(fd uintptr) bool { return b.w.rawCall(fd, unix.SYS_SENDMMSG) }
	return b, nil
}

// read waits for at least one datagram and returns how many messages of ms it filled.
func (b *batchIO) read(ms []Message) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	b.r.fill(ms, false, b.v4)
	got, err := b.r.result(b.rc.Read(b.rfn))
	b.r.done(ms, got, false)
	return got, err
}

// write sends ms and returns how many messages the kernel took, which may be fewer than all (the
// caller sends the rest again), or an error if it refused the first one.
func (b *batchIO) write(ms []Message) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	b.w.fill(ms, true, b.v4)
	got, err := b.w.result(b.rc.Write(b.wfn))
	b.w.done(ms, got, true)
	return got, err
}
