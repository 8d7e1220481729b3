package dataplane

import (
	"encoding/binary"
	"net"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/internal/sysio"
)

// mmsgBatch implements udpBatch over recvmmsg and sendmmsg issued as raw system calls (sysio.RawSyscall),
// with the messages' headers, iovecs and addresses in arrays allocated once: no allocation per call
// or per datagram (x/net's ReadBatch allocates a *net.UDPAddr per received message). Reads and
// writes may run at once (one reader, writers serialised by UDPConn.wmu).
type mmsgBatch struct {
	rc syscall.RawConn
	v4 bool // an IPv4 socket: sockaddr_in; else sockaddr_in6, IPv4 peers v4-mapped

	r mmsgSide
	w mmsgSide

	rfn func(fd uintptr) bool // made once: a closure made per call to RawConn.Read would be allocated
	wfn func(fd uintptr) bool
}

// mmsgSide is the state of one direction's calls: the messages of the call under way in hdrs[:n],
// their iovecs in iovs, their addresses in names, and the call's result.
type mmsgSide struct {
	hdrs  [mmsgMax]unix.Mmsghdr
	iovs  [mmsgMaxIovecs]unix.Iovec
	names [mmsgMax]unix.RawSockaddrInet6 // large enough for a sockaddr_in too
	addrs [mmsgMax]net.UDPAddr           // the sources handed out by reads
	ips   [mmsgMax][16]byte
	n     int // messages
	niov  int // iovecs
	flags int
	got   int
	err   error
	zones zoneCache // reads: sources' scope ids to zones; writes: destinations' zones to ids
}

// mmsgMax bounds the messages of one call: UDPConn's reads take at most max(MaxBatch, groMessages)
// messages, its writes at most MaxBatch datagrams. mmsgMaxIovecs bounds the iovecs of all of them:
// a write's are its datagrams; a scattered read's (UDPConn.readInto) are the caller's buffers, and
// a large buffer per message.
const (
	mmsgMax       = MaxBatch
	mmsgMaxIovecs = MaxBatch + groMessages
)

func newMmsgBatch(c *net.UDPConn, v4 bool) (*mmsgBatch, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &mmsgBatch{rc: rc, v4: v4}
	b.rfn = func(fd uintptr) bool { return b.r.call(fd, unix.SYS_RECVMMSG) }
	b.wfn = func(fd uintptr) bool { return b.w.call(fd, unix.SYS_SENDMMSG) }
	for i := range b.r.addrs {
		b.r.addrs[i].IP = b.r.ips[i][:]
	}
	return b, nil
}

// call issues the system call over hdrs[:n]; it reports false, so that RawConn waits for the
// socket, only if the call would have blocked.
func (s *mmsgSide) call(fd uintptr, trap uintptr) bool {
	got, e := sysio.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&s.hdrs[0])), uintptr(s.n), uintptr(s.flags))
	if e == unix.EAGAIN {
		return false
	}
	s.got, s.err = int(got), nil
	if e != 0 {
		s.got, s.err = 0, e
	}
	return true
}

// ReadBatch implements udpBatch: it waits for at least one datagram and returns how many messages
// it filled, their sources in ms[i].Addr (valid until the next ReadBatch).
func (b *mmsgBatch) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	s := &b.r
	s.fill(ms, flags)
	for i := range s.n {
		s.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&s.names[i]))
		s.hdrs[i].Hdr.Namelen = unix.SizeofSockaddrInet6
	}
	got, err := s.result(b.rc.Read(b.rfn))
	for i := range got {
		m, h := &ms[i], &s.hdrs[i]
		m.N, m.NN, m.Flags = int(h.Len), int(h.Hdr.Controllen), int(h.Hdr.Flags)
		m.Addr = s.source(i)
	}
	s.clearRefs()
	return got, err
}

// source returns message i's source address from its sockaddr, in addrs[i].
func (s *mmsgSide) source(i int) net.Addr {
	a, sa := &s.addrs[i], &s.names[i]
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		a.IP = s.ips[i][:4]
		copy(a.IP, sa4.Addr[:])
	case unix.AF_INET6:
		a.IP = s.ips[i][:16]
		copy(a.IP, sa.Addr[:])
	default:
		return nil
	}
	// The port sits at the same offset, in network order, in both families' sockaddrs.
	a.Port = int(binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:]))
	a.Zone = ""
	if sa.Family == unix.AF_INET6 && sa.Scope_id != 0 {
		// A link-local source keeps its interface, or a reply to it could not be sent.
		a.Zone = s.zones.name(sa.Scope_id)
	}
	return a
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

// WriteBatch implements udpBatch: it sends ms[i].Buffers (gathered, one datagram or, with a
// UDP_SEGMENT control message in OOB, several) to ms[i].Addr, a *net.UDPAddr, and returns how
// many messages the kernel took.
func (b *mmsgBatch) WriteBatch(ms []ipv4.Message, flags int) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	s := &b.w
	s.fill(ms, flags)
	for i := range s.n {
		if a, ok := ms[i].Addr.(*net.UDPAddr); ok {
			s.hdrs[i].Hdr.Name, s.hdrs[i].Hdr.Namelen = b.putName(&s.names[i], a)
		}
	}
	got, err := s.result(b.rc.Write(b.wfn))
	for i := range got {
		ms[i].N = int(s.hdrs[i].Len)
	}
	s.clearRefs()
	return got, err
}

// fill lays out as many of ms as fit in hdrs and iovs for one call with flags.
func (s *mmsgSide) fill(ms []ipv4.Message, flags int) {
	s.flags = flags
	for i := range ms {
		if !s.add(ms[i].Buffers, ms[i].OOB) {
			return
		}
	}
}

// result returns how many messages the call took, or the error of RawConn's Read or Write (err)
// or of the system call.
func (s *mmsgSide) result(err error) (int, error) {
	if err == nil {
		err = s.err
	}
	if err != nil {
		return 0, err
	}
	return s.got, nil
}

// putName writes a's address into name as the socket's family needs it and returns the header's
// name fields.
func (b *mmsgBatch) putName(name *unix.RawSockaddrInet6, a *net.UDPAddr) (*byte, uint32) {
	if b.v4 {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(name))
		*sa = unix.RawSockaddrInet4{Family: unix.AF_INET}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], uint16(a.Port))
		copy(sa.Addr[:], a.IP.To4())
		return (*byte)(unsafe.Pointer(sa)), unix.SizeofSockaddrInet4
	}
	*name = unix.RawSockaddrInet6{Family: unix.AF_INET6, Scope_id: b.w.zones.index(a.Zone)}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&name.Port))[:], uint16(a.Port))
	copy(name.Addr[:], a.IP.To16())
	return (*byte)(unsafe.Pointer(name)), unix.SizeofSockaddrInet6
}

// add appends a message of the buffers bufs (gathered) and the control buffer oob to hdrs[:n],
// its iovecs to iovs[:niov], and reports false, adding nothing, if either array is full.
func (s *mmsgSide) add(bufs [][]byte, oob []byte) bool {
	if s.n == mmsgMax || s.niov+len(bufs) > mmsgMaxIovecs {
		return false
	}
	h := &s.hdrs[s.n].Hdr
	*h = unix.Msghdr{}
	if len(bufs) > 0 {
		h.Iov = &s.iovs[s.niov]
		h.SetIovlen(len(bufs))
	}
	for _, buf := range bufs {
		v := &s.iovs[s.niov]
		*v = unix.Iovec{}
		if len(buf) > 0 {
			v.Base = &buf[0]
			v.SetLen(len(buf))
		}
		s.niov++
	}
	if len(oob) > 0 {
		h.Control = &oob[0]
		h.SetControllen(len(oob))
	}
	s.n++
	return true
}

// clearRefs drops the headers' and iovecs' references to the callers' buffers, so that they do not
// keep them alive.
func (s *mmsgSide) clearRefs() {
	clear(s.hdrs[:s.n])
	clear(s.iovs[:s.niov])
	s.n, s.niov = 0, 0
}
